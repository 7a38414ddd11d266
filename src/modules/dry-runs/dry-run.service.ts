/**
 * Owns the dry-run records: create (resolve the configuration and the executions, record,
 * start `dry_run:<id>` on Temporal, or leave the start to the reconciler while Temporal is
 * down), read and list. Every query is scoped by organization
 * and by the workflow in the path; another organization's workflow, execution or dry run
 * is a 404. Dry runs emit no webhook event: nothing here or in their sink records one.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError, invalid, notFound } from '../../errors';
import { offsetOf, type Page } from '../../http/pagination';
import { parseInput } from '../../http/validation';
import { z } from '../../http/zod';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { dispatchStart } from '../starts/durable-start';
import { JOBS } from '../starts/job-starts';
import { dateFilter } from '../metrics/execution-metrics';
import { classifyWorkflowIssue, WorkflowConfiguration } from '../workflows/workflow.schemas';
import type { RunDiff } from './dry-run.diff';
import { type DryRunFilter, type DryRunIn, MAX_DRY_RUN_EXECUTIONS } from './dry-run.schemas';
import type { Config } from '../../config';
import { temporalUiLink } from '../../temporal-ui';
import { dryRunWorkflowId } from '../../../temporal/dry-runs.shared';

interface DryRunRow {
  id: string;
  workflow_id: string;
  revision: string;
  configuration: WorkflowConfiguration;
  status: 'pending' | 'running' | 'completed' | 'failed';
  error_message: string | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  executions: number;
  completed: number;
  diverged: number;
}

/** The executions list's date rules, with the field named where it sits in this body. */
function filterDates(f: DryRunFilter): { from?: Date; to?: Date } {
  try {
    return dateFilter(f.start_date, f.end_date);
  } catch (err) {
    if (err instanceof DomainError && err.extra.field) throw new DomainError(err.kind, err.code, err.message, { ...err.extra, field: `filter.${err.extra.field}` });
    throw err;
  }
}

const dryRunNotFound = () => notFound('DRY_RUN_NOT_FOUND', 'Dry run');
const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const errorOf = (type: string | null, message: string | null) => (type || message ? { type, message } : null);

/** The dry run with its item counters, in one statement. */
const DRY_RUN_SELECT = `
  select d.id, d.workflow_id, d.revision, d.configuration, d.status, d.error_message, d.created_at, d.started_at, d.completed_at,
         (select count(*)::int from dry_run_items i where i.dry_run_id = d.id) as executions,
         (select count(*)::int from dry_run_items i where i.dry_run_id = d.id and i.status <> 'pending') as completed,
         (select count(*)::int from dry_run_items i where i.dry_run_id = d.id and (i.diff->>'identical') = 'false') as diverged
    from dry_runs d`;

function toDryRunOut(r: DryRunRow, config: Pick<Config, 'TEMPORAL_UI_URL' | 'TEMPORAL_NAMESPACE'>) {
  return {
    id: r.id,
    ...temporalUiLink(config, dryRunWorkflowId(r.id)),
    workflow_id: r.workflow_id,
    status: r.status,
    revision: r.revision === 'draft' ? ('draft' as const) : Number(r.revision),
    executions: r.executions,
    completed: r.completed,
    diverged: r.diverged,
    error: r.error_message,
    created_at: new Date(r.created_at).toISOString(),
    started_at: iso(r.started_at),
    completed_at: iso(r.completed_at),
  };
}

export class DryRunService {
  constructor(private readonly services: Services) {}

  private em(): EntityManager {
    return this.services.orm.em.fork() as EntityManager;
  }

  /** The configuration the dry run runs: the body's draft, the workflow's latest, or a saved revision. */
  private async resolveConfiguration(em: EntityManager, wf: { id: string; configuration: unknown }, body: DryRunIn): Promise<WorkflowConfiguration> {
    if (body.revision !== 'draft') {
      if (body.configuration) throw invalid('configuration is only accepted with revision "draft"', 'configuration');
      const [rev] = await em.execute<Array<{ configuration: WorkflowConfiguration }>>(
        'select configuration from workflow_revisions where workflow_id = ? and revision = ?',
        [wf.id, body.revision],
      );
      if (!rev) throw notFound('REVISION_NOT_FOUND', `Revision ${body.revision} of this workflow`, 'revision');
      return rev.configuration;
    }
    if (body.configuration) return body.configuration;
    if (!wf.configuration) {
      throw invalid('The workflow has no configuration yet; pass the draft as `configuration`', 'configuration', 'INVALID_WORKFLOW_CONFIG');
    }
    // Stored configurations were valid when written; rules may have tightened since (as on activate).
    return parseInput(z.object({ configuration: WorkflowConfiguration }), { configuration: wf.configuration }, classifyWorkflowIssue).configuration;
  }

  /** Named executions must be this organization's (404) and this workflow's (400); duplicates count once. */
  private async namedExecutions(em: EntityManager, organizationId: string, workflowId: string, ids: string[]): Promise<string[]> {
    const unique = [...new Set(ids)];
    const rows = await em.execute<Array<{ id: string; workflow_id: string }>>(
      'select id, workflow_id from executions where organization_id = ? and id = any(array(select jsonb_array_elements_text(?::jsonb)))',
      [organizationId, JSON.stringify(unique)],
    );
    const found = new Map(rows.map((r) => [r.id, r.workflow_id]));
    const missing = unique.find((id) => !found.has(id));
    if (missing) throw notFound('EXECUTION_NOT_FOUND', `Execution ${missing}`, 'execution_ids');
    const foreign = unique.find((id) => found.get(id) !== workflowId);
    if (foreign) throw invalid(`Execution ${foreign} belongs to another workflow`, 'execution_ids');
    return unique;
  }

  private async matchingExecutions(em: EntityManager, organizationId: string, workflowId: string, f: DryRunFilter): Promise<string[]> {
    const clauses = ['organization_id = ?', 'workflow_id = ?'];
    const params: unknown[] = [organizationId, workflowId];
    const add = (clause: string, value: unknown) => {
      clauses.push(clause);
      params.push(value);
    };
    if (f.status) add('status = ?', f.status);
    if (f.trigger_id) add('trigger_id = ?', f.trigger_id);
    const { from, to } = filterDates(f);
    if (from) add('started_at >= ?', from);
    if (to) add('started_at < ?', to);
    const rows = await em.execute<Array<{ id: string }>>(
      `select id from executions where ${clauses.join(' and ')} order by started_at desc, id desc limit ?`,
      [...params, MAX_DRY_RUN_EXECUTIONS],
    );
    if (rows.length === 0) throw invalid('No execution of this workflow matches the filter', 'filter');
    return rows.map((r) => r.id);
  }

  async create(organizationId: string, workflowId: string, body: DryRunIn) {
    const em = this.em();
    const [wf] = await em.execute<Array<{ id: string; configuration: unknown }>>(
      'select id, configuration from workflows where id = ? and organization_id = ? and deleted_at is null',
      [workflowId, organizationId],
    );
    if (!wf) throw notFound('WORKFLOW_NOT_FOUND', 'Workflow');
    if ((body.execution_ids === undefined) === (body.filter === undefined)) {
      throw invalid('Give either execution_ids or filter', body.execution_ids ? 'filter' : 'execution_ids');
    }
    const configuration = await this.resolveConfiguration(em, wf, body);
    const executionIds = body.execution_ids
      ? await this.namedExecutions(em, organizationId, workflowId, body.execution_ids)
      : await this.matchingExecutions(em, organizationId, workflowId, body.filter!);

    const id = newId('dryRun');
    await em.transactional(async (tx) => {
      await tx.execute(
        `insert into dry_runs (id, organization_id, workflow_id, revision, configuration, status) values (?, ?, ?, ?, ?::jsonb, 'pending')`,
        [id, organizationId, workflowId, String(body.revision), JSON.stringify(configuration)],
      );
      await tx.execute(
        `insert into dry_run_items (dry_run_id, execution_id, position, status)
         select ?, ids.id, ids.position - 1, 'pending' from jsonb_array_elements_text(?::jsonb) with ordinality as ids(id, position)`,
        [id, JSON.stringify(executionIds)],
      );
    });
    await dispatchStart(this.services, JOBS.dryRun, { id, organization_id: organizationId, workflow_id: workflowId });
    return await this.detail(organizationId, workflowId, id);
  }

  private async requireWorkflow(em: EntityManager, organizationId: string, workflowId: string): Promise<void> {
    // Dry runs of a deleted workflow stay readable, as its executions do.
    const rows = await em.execute('select 1 from workflows where id = ? and organization_id = ?', [workflowId, organizationId]);
    if (rows.length === 0) throw notFound('WORKFLOW_NOT_FOUND', 'Workflow');
  }

  async detail(organizationId: string, workflowId: string, id: string) {
    const em = this.em();
    await this.requireWorkflow(em, organizationId, workflowId);
    const [row] = await em.execute<DryRunRow[]>(`${DRY_RUN_SELECT} where d.id = ? and d.organization_id = ? and d.workflow_id = ?`, [
      id,
      organizationId,
      workflowId,
    ]);
    if (!row) throw dryRunNotFound();
    const items = await em.execute<
      Array<{
        execution_id: string;
        status: 'pending' | 'success' | 'failed' | 'waiting_for_input';
        output: Record<string, unknown> | null;
        error_type: string | null;
        error_message: string | null;
        diff: RunDiff | null;
        e_status: 'running' | 'success' | 'failed' | 'cancelled';
        e_revision: number;
        e_output: Record<string, unknown> | null;
        e_error_type: string | null;
        e_error_message: string | null;
      }>
    >(
      `select i.execution_id, i.status, i.output, i.error_type, i.error_message, i.diff,
              e.status as e_status, e.revision as e_revision, e.output as e_output, e.error_type as e_error_type, e.error_message as e_error_message
         from dry_run_items i join executions e on e.id = i.execution_id
        where i.dry_run_id = ? order by i.position`,
      [id],
    );
    const replies = await em.execute<Array<{ execution_id: string; id: string; text: string }>>(
      `select m.execution_id, m.id, m.text from messages m
        where m.execution_id in (select execution_id from dry_run_items where dry_run_id = ?)
          and m.direction = 'inbound' and m.reply_to_wait is not null
        order by m.created_at, m.id`,
      [id],
    );
    const repliesOf = (executionId: string) => replies.filter((r) => r.execution_id === executionId).map((r) => ({ message_id: r.id, text: r.text }));
    return {
      ...toDryRunOut(row, this.services.config),
      configuration: row.configuration,
      items: items.map((i) => ({
        execution_id: i.execution_id,
        status: i.status,
        output: i.output,
        error: errorOf(i.error_type, i.error_message),
        original: { status: i.e_status, revision: i.e_revision, output: i.e_output, error: errorOf(i.e_error_type, i.e_error_message) },
        replies: repliesOf(i.execution_id),
        diff: i.diff,
      })),
    };
  }

  async list(organizationId: string, workflowId: string, filter: { status?: string }, page: Page) {
    const em = this.em();
    await this.requireWorkflow(em, organizationId, workflowId);
    const where = `d.organization_id = ? and d.workflow_id = ?${filter.status ? ' and d.status = ?' : ''}`;
    const params = filter.status ? [organizationId, workflowId, filter.status] : [organizationId, workflowId];
    const rows = await em.execute<DryRunRow[]>(`${DRY_RUN_SELECT} where ${where} order by d.created_at desc, d.id desc limit ? offset ?`, [
      ...params,
      page.limit,
      offsetOf(page),
    ]);
    const [{ total }] = (await em.execute<Array<{ total: number }>>(`select count(*)::int as total from dry_runs d where ${where}`, params)) as [
      { total: number },
    ];
    return { items: rows.map((r) => toDryRunOut(r, this.services.config)), total };
  }
}
