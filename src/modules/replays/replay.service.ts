/**
 * Owns the replay records: create (count the matches, record, start `replay:<id>` on
 * Temporal, or leave the start to the reconciler while Temporal is down), read, list and cancel. Every query is scoped by organization; another
 * organization's replay, workflow, trigger or execution is a 404.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { conflict, notFound } from '../../errors';
import { offsetOf, type Page } from '../../http/pagination';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { recordEvent } from '../events/outbox';
import { dispatchStart } from '../starts/durable-start';
import type { HeldClaim } from '../../http/idempotency';
import { JOBS } from '../starts/job-starts';
import { replayWorkflowId } from '../../../temporal/replays.shared';
import { matchingExecutionsSql } from './replay.filter';
import type { ReplayFilter } from './replay.schemas';
import type { Config } from '../../config';
import { temporalUiLink } from '../../temporal-ui';

interface ReplayRow {
  id: string;
  organization_id: string;
  filter: ReplayFilter;
  rate_per_second: number;
  revision: string;
  status: 'running' | 'completed' | 'cancelled';
  matched: number;
  created_at: Date;
  completed_at: Date | null;
}
interface Counts {
  started: number;
  skipped: number;
  failed: number;
}

const replayNotFound = () => notFound('REPLAY_NOT_FOUND', 'Replay');
const NO_COUNTS: Counts = { started: 0, skipped: 0, failed: 0 };

function toReplayOut(r: ReplayRow, c: Counts, config: Pick<Config, 'TEMPORAL_UI_URL' | 'TEMPORAL_NAMESPACE'>) {
  const { execution_ids, ...filter } = r.filter;
  return {
    id: r.id,
    ...temporalUiLink(config, replayWorkflowId(r.id)),
    status: r.status,
    filter: { ...filter, ...(execution_ids ? { execution_ids_count: execution_ids.length } : {}) },
    rate_per_second: r.rate_per_second,
    revision: r.revision,
    matched: r.matched,
    ...c,
    created_at: new Date(r.created_at).toISOString(),
    completed_at: r.completed_at ? new Date(r.completed_at).toISOString() : null,
  };
}

/** started / skipped / failed per replay, from its items (one row per processed execution). */
export async function replayCounts(em: EntityManager, replayIds: string[]): Promise<Map<string, Counts>> {
  const rows = await em.execute<Array<{ replay_id: string } & Counts>>(
    `select replay_id,
            count(*) filter (where outcome = 'started')::int as started,
            count(*) filter (where outcome = 'skipped')::int as skipped,
            count(*) filter (where outcome = 'failed')::int as failed
       from replay_items where replay_id in (select jsonb_array_elements_text(?::jsonb)) group by replay_id`,
    [JSON.stringify(replayIds)],
  );
  return new Map(rows.map(({ replay_id, ...c }) => [replay_id, c]));
}

/** Ends a running replay (completed by its workflow, cancelled by the API) with its `replay.completed` event. */
export async function endReplay(em: EntityManager, replayId: string, status: 'completed' | 'cancelled', organizationId?: string): Promise<boolean> {
  return await em.transactional(async (tx) => {
    const t = tx as EntityManager;
    const [row] = await t.execute<ReplayRow[]>(
      `update replays set status = ?, completed_at = now()
        where id = ? and status = 'running' ${organizationId ? 'and organization_id = ?' : ''} returning *`,
      organizationId ? [status, replayId, organizationId] : [status, replayId],
    );
    if (!row) return false;
    const c = (await replayCounts(t, [row.id])).get(row.id) ?? NO_COUNTS;
    recordEvent(t, {
      organizationId: row.organization_id,
      type: 'replay.completed',
      data: { replay_id: row.id, status, matched: row.matched, ...c },
    });
    return true;
  });
}

export class ReplayService {
  constructor(private readonly services: Services) {}

  private em(): EntityManager {
    return this.services.orm.em.fork() as EntityManager;
  }

  /** Every id the filter names must be this organization's (nothing is recorded otherwise). */
  private async requireReferences(em: EntityManager, organizationId: string, f: ReplayFilter): Promise<void> {
    const exists = async (sql: string, id: string) => (await em.execute(sql, [id, organizationId])).length > 0;
    if (f.workflow_id && !(await exists('select 1 from workflows where id = ? and organization_id = ?', f.workflow_id))) {
      throw notFound('WORKFLOW_NOT_FOUND', 'Workflow', 'filter.workflow_id');
    }
    if (f.trigger_id && !(await exists('select 1 from triggers where id = ? and organization_id = ?', f.trigger_id))) {
      throw notFound('TRIGGER_NOT_FOUND', 'Trigger', 'filter.trigger_id');
    }
    if (f.execution_ids) {
      const [missing] = await em.execute<Array<{ id: string }>>(
        `select ids.id from jsonb_array_elements_text(?::jsonb) as ids(id)
          where not exists (select 1 from executions e where e.id = ids.id and e.organization_id = ?) limit 1`,
        [JSON.stringify(f.execution_ids), organizationId],
      );
      if (missing) throw notFound('EXECUTION_NOT_FOUND', `Execution ${missing.id}`, 'filter.execution_ids');
    }
  }

  /** `claim`: the request's `Idempotency-Key` claim; the replay's id is its recovery point, committed with the replay. */
  async create(organizationId: string, body: { filter: ReplayFilter; rate_per_second: number; revision: string }, claim?: HeldClaim) {
    const em = this.em();
    await this.requireReferences(em, organizationId, body.filter);
    const id = newId('replay');
    await em.transactional(async (tx) => {
      const t = tx as EntityManager;
      // The transaction's now(): executions started later (the retries among them) never match.
      const [{ cutoff }] = (await t.execute<Array<{ cutoff: string }>>('select now()::text as cutoff')) as [{ cutoff: string }];
      const m = matchingExecutionsSql(organizationId, cutoff, body.filter);
      const [{ n }] = (await t.execute<Array<{ n: number }>>(`select count(*)::int as n from executions e where ${m.where}`, m.params)) as [{ n: number }];
      await t.execute(
        `insert into replays (id, organization_id, filter, rate_per_second, revision, status, matched, cutoff, created_at)
         values (?, ?, ?::jsonb, ?, ?, 'running', ?, ?::timestamptz, ?::timestamptz)`,
        [id, organizationId, JSON.stringify(body.filter), body.rate_per_second, body.revision, n, cutoff, cutoff],
      );
      await claim?.recordIn(t, { replay_id: id });
    });
    await dispatchStart(this.services, JOBS.replay, { id, organization_id: organizationId, rate_per_second: body.rate_per_second });
    return await this.detail(organizationId, id);
  }

  private async row(em: EntityManager, organizationId: string, id: string): Promise<ReplayRow> {
    const [row] = await em.execute<ReplayRow[]>('select * from replays where id = ? and organization_id = ?', [id, organizationId]);
    if (!row) throw replayNotFound();
    return row;
  }

  async detail(organizationId: string, id: string) {
    const em = this.em();
    const row = await this.row(em, organizationId, id);
    const counts = (await replayCounts(em, [id])).get(id) ?? NO_COUNTS;
    const failures = await em.execute<Array<{ execution_id: string; code: string; message: string }>>(
      `select execution_id, reason_code as code, reason_message as message from replay_items
        where replay_id = ? and outcome = 'failed' order by execution_id limit 100`,
      [id],
    );
    return { ...toReplayOut(row, counts, this.services.config), failures };
  }

  async list(organizationId: string, filter: { status?: string }, page: Page) {
    const em = this.em();
    const where = `organization_id = ?${filter.status ? ' and status = ?' : ''}`;
    const params = filter.status ? [organizationId, filter.status] : [organizationId];
    const rows = await em.execute<ReplayRow[]>(`select * from replays where ${where} order by created_at desc, id desc limit ? offset ?`, [
      ...params,
      page.limit,
      offsetOf(page),
    ]);
    const [{ total }] = (await em.execute<Array<{ total: number }>>(`select count(*)::int as total from replays where ${where}`, params)) as [
      { total: number },
    ];
    const counts = await replayCounts(em, rows.map((r) => r.id));
    return { items: rows.map((r) => toReplayOut(r, counts.get(r.id) ?? NO_COUNTS, this.services.config)), total };
  }

  /** Records the cancel (with its event), then cancels the workflow; a lost Temporal cancel is harmless: the next batch sees the status. */
  async cancel(organizationId: string, id: string) {
    const em = this.em();
    await this.row(em, organizationId, id);
    if (!(await endReplay(em, id, 'cancelled', organizationId))) throw conflict('REPLAY_NOT_RUNNING', `Replay ${id} is not running`);
    await this.services.temporal.client.workflow
      .getHandle(replayWorkflowId(id))
      .cancel()
      .catch((err: unknown) => this.services.logger.warn({ err, replayId: id }, 'replay cancel not delivered to Temporal; its next batch stops it'));
    return await this.detail(organizationId, id);
  }
}
