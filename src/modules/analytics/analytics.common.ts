/**
 * Owns what the analytics read paths share: the period as answered, and the workflow a
 * question is about (live, of the organization, else 404) with its nodes in path order.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../errors';
import type { Period } from '../metrics/analytics-metrics';
import { resolvePeriod } from '../metrics/execution-metrics';
import { Workflow } from '../workflows/workflow.entity';

export const periodOut = (p: Period) => ({ start_date: p.start.toISOString(), end_date: p.end.toISOString() });

export async function requireWorkflow(em: EntityManager, organizationId: string, id: string): Promise<Workflow> {
  const wf = await em.findOne(Workflow, { id, organizationId, deletedAt: null });
  if (!wf) throw notFound('WORKFLOW_NOT_FOUND', 'Workflow');
  return wf;
}

/**
 * The period of a question about one workflow, for handlers that look the workflow up
 * alongside their reads: a bad period still answers 404 first when the workflow is unknown,
 * as when the lookup came first.
 */
export async function workflowPeriod(em: EntityManager, organizationId: string, workflowId: string, start?: string, end?: string): Promise<Period> {
  try {
    return resolvePeriod(start, end);
  } catch (err) {
    await requireWorkflow(em, organizationId, workflowId);
    throw err;
  }
}

/** Node ids in path order from nodes[0]. */
export function nodePathOrder(wf: Workflow): string[] {
  const nodes = wf.configuration?.nodes ?? [];
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const order: string[] = [];
  for (let n = nodes[0]; n && !order.includes(n.id); n = n.next ? byId.get(n.next) : undefined) order.push(n.id);
  for (const n of nodes) if (!order.includes(n.id)) order.push(n.id);
  return order;
}
