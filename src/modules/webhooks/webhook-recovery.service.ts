/**
 * Owns webhook recoveries on the API side: create (validate the window, snapshot the
 * webhook's events of it into `webhook_recovery_items` with the recovery row in one
 * transaction, then start its workflow through the jobs' durable start) and read progress.
 * Scoped to the caller's organization: another organization's webhook or recovery is a 404.
 *
 * Which events a recovery covers: the organization's events of a type the webhook
 * subscribes to, created in [since, until) and not before the webhook, already dispatched
 * (an undispatched event is still on its way). With `status: "failed"`, only those whose
 * last attempt to this webhook failed, or that were never attempted (sent while the webhook
 * was disabled).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { invalid, notFound, unprocessable } from '../../errors';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { temporalUiLink } from '../../temporal-ui';
import { dispatchStart } from '../starts/durable-start';
import { JOBS } from '../starts/job-starts';
import { webhookRecoveryWorkflowId } from '../../../temporal/webhook-recoveries.shared';
import type { RecoverIn, RecoveryOut } from './webhook.schemas';
import type { z } from '../../http/zod';

interface RecoveryRow {
  id: string;
  organization_id: string;
  webhook_id: string;
  since: Date;
  until: Date;
  status_filter: 'failed' | null;
  status: 'running' | 'completed';
  matched: number;
  created_at: Date;
  completed_at: Date | null;
}

interface Counts {
  started: number;
  skipped: number;
  pending: number;
  delivered: number;
  failed: number;
}

const webhookNotFound = () => notFound('WEBHOOK_NOT_FOUND', 'Webhook');
const invalidRange = (message: string, field: string) => invalid(message, field, 'INVALID_DATE_RANGE');

/** Clients' clocks run a little ahead of ours: an `until` this far in the future is read as now. */
const CLOCK_SKEW_MS = 60_000;

/**
 * The snapshot: one insert-select. `$status_failed` keeps events whose latest attempt
 * (webhook_logs_event_idx) failed, or that have none.
 */
const SNAPSHOT = `
  insert into webhook_recovery_items (recovery_id, event_id, event_created_at)
  select ?, e.id, e.created_at
    from events e
   where e.organization_id = ? and e.type in (select jsonb_array_elements_text(?::jsonb))
     and e.created_at >= greatest(?::timestamptz, ?::timestamptz) and e.created_at < ?::timestamptz
     and e.dispatched_at is not null
     and (not ?::boolean or coalesce((select l.status from webhook_logs l where l.webhook_id = ? and l.event_id = e.id
                                        order by l.attempt desc, l.delivered_at desc limit 1), 'failed') = 'failed')`;

export class WebhookRecoveryService {
  constructor(private readonly services: Services) {}

  private em(): EntityManager {
    return this.services.orm.em.fork() as EntityManager;
  }

  async create(organizationId: string, webhookId: string, body: z.output<typeof RecoverIn>): Promise<z.output<typeof RecoveryOut>> {
    const em = this.em();
    const [hook] = await em.execute<Array<{ id: string; active: boolean; events: string[]; created_at: Date }>>(
      'select id, active, events, created_at from webhooks where id = ? and organization_id = ?',
      [webhookId, organizationId],
    );
    if (!hook) throw webhookNotFound();
    if (!hook.active) throw unprocessable('WEBHOOK_VALIDATION_FAILED', 'The webhook is inactive; activate it before recovering');

    const now = Date.now();
    const since = new Date(body.since);
    const until = body.until === undefined ? new Date(now) : new Date(body.until);
    if (until.getTime() > now + CLOCK_SKEW_MS) throw invalidRange('until must not be in the future', 'until');
    if (since >= until) throw invalidRange('since must be before until', 'since');
    const oldest = now - this.services.config.EVENT_RETENTION_DAYS * 86_400_000;
    if (since.getTime() < oldest) {
      throw invalidRange(`since must be within the last ${this.services.config.EVENT_RETENTION_DAYS} days: older events are no longer stored`, 'since');
    }

    const id = newId('webhookRecovery');
    await em.transactional(async (tx) => {
      const t = tx as EntityManager;
      const statusFilter = body.status ?? null;
      await t.execute(
        `insert into webhook_recoveries (id, organization_id, webhook_id, since, until, status_filter, matched) values (?, ?, ?, ?, ?, ?, 0)`,
        [id, organizationId, webhookId, since, until, statusFilter],
      );
      await t.execute(SNAPSHOT, [id, organizationId, JSON.stringify(hook.events), since, hook.created_at, until, statusFilter === 'failed', webhookId]);
      await t.execute(`update webhook_recoveries set matched = (select count(*) from webhook_recovery_items where recovery_id = ?) where id = ?`, [id, id]);
    });
    await this.startWorkflow({ id, organization_id: organizationId, webhook_id: webhookId });
    return await this.get(organizationId, webhookId, id);
  }

  /**
   * The one place recoveries use the durable start (starts/durable-start.ts): committed
   * first, started after; a Temporal outage leaves the start to the worker's reconciler
   * (JOBS.webhookRecovery in starts/job-starts.ts).
   */
  private startWorkflow(row: { id: string; organization_id: string; webhook_id: string }): Promise<boolean> {
    return dispatchStart(this.services, JOBS.webhookRecovery, row);
  }

  async get(organizationId: string, webhookId: string, recoveryId: string): Promise<z.output<typeof RecoveryOut>> {
    const em = this.em();
    const [row] = await em.execute<RecoveryRow[]>(
      'select * from webhook_recoveries where id = ? and webhook_id = ? and organization_id = ?',
      [recoveryId, webhookId, organizationId],
    );
    if (!row) {
      const [hook] = await em.execute('select 1 from webhooks where id = ? and organization_id = ?', [webhookId, organizationId]);
      throw hook ? notFound('WEBHOOK_RECOVERY_NOT_FOUND', 'Webhook recovery') : webhookNotFound();
    }
    // Delivered / failed: the outcome of the started deliveries so far, from the delivery log
    // since the recovery was created (a success wins over failures before it).
    const [c] = await em.execute<Counts[]>(
      `select count(*) filter (where i.outcome = 'started')::int as started,
              count(*) filter (where i.outcome = 'skipped')::int as skipped,
              count(*) filter (where i.outcome is null)::int as pending,
              count(*) filter (where i.outcome = 'started' and l.status = 'success')::int as delivered,
              count(*) filter (where i.outcome = 'started' and l.status = 'failed')::int as failed
         from webhook_recovery_items i
         left join lateral (
           select l.status from webhook_logs l
            where l.webhook_id = ? and l.event_id = i.event_id and l.delivered_at >= ?
            order by (l.status = 'success') desc limit 1
         ) l on true
        where i.recovery_id = ?`,
      [webhookId, row.created_at, recoveryId],
    );
    return {
      id: row.id,
      webhook_id: row.webhook_id,
      ...temporalUiLink(this.services.config, webhookRecoveryWorkflowId(row.id)),
      status: row.status,
      window: { since: new Date(row.since).toISOString(), until: new Date(row.until).toISOString(), status: row.status_filter },
      matched: row.matched,
      ...(c ?? { started: 0, skipped: 0, pending: 0, delivered: 0, failed: 0 }),
      created_at: new Date(row.created_at).toISOString(),
      completed_at: row.completed_at ? new Date(row.completed_at).toISOString() : null,
    };
  }
}
