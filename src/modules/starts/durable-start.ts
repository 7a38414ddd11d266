/**
 * Owns starting Temporal work durably, the one dual write between PostgreSQL and Temporal
 * that executions, exports, reports, replays and dry runs share:
 *
 * 1. the owner commits its row first (its status active, `temporal_started_at` null), never
 *    starting the workflow inside the transaction: a Temporal outage delays the work
 *    instead of refusing it;
 * 2. after the commit, `dispatchStart` starts the workflow, whose id is derived from the
 *    row's id, and stamps `temporal_started_at`;
 * 3. if the process dies between 1 and 2, or Temporal is unreachable, the row stays
 *    unstamped and the worker's reconciler (`reconcileStarts`, run for every kind by
 *    src/reconciler.ts) starts it later.
 *
 * A second start of the same id (a racing reconciler, a retry after a crash) never makes a
 * second run: the reuse policy is REJECT_DUPLICATE for every kind, and "already started" counts
 * as confirmed. Each kind registers its table, workflow type, id scheme and conflict policy
 * (`StartKind`); executions are registered by executions/execution.starter.ts, the other
 * jobs by starts/job-starts.ts.
 */
import type { Priority, SearchAttributePair } from '@temporalio/common';
import { TypedSearchAttributes } from '@temporalio/common';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { SqlRunner } from '../../db/hot-query';
import { BACKLOG_HELD, type Admission } from '../../fair-limiter';
import type { Services } from '../../services';
import { boundedTemporalCall, RECONCILE_TEMPORAL_TIMEOUT_MS } from '../../temporal-calls';
import type { WorkflowMetadata } from '../../temporal-metadata';
import { serviceMetricsFor } from '../../telemetry/service-metrics';

/** What a kind's start passes to Temporal besides its type, id, queue and policies. */
export interface StartOptions extends WorkflowMetadata {
  args: unknown[];
  searchAttributes: SearchAttributePair[];
  memo?: Record<string, unknown>;
  /** The organization's fair share of the task queue (temporal/fairness.shared.ts). */
  priority: Priority;
}

/** One kind of durably started work; `S` is what one start needs. */
export interface StartKind<S> {
  /** The owner's table (its module writes the rows; this module stamps `temporal_started_at` on its behalf). */
  table: 'executions' | 'exports' | 'reports' | 'replays' | 'dry_runs' | 'webhook_recoveries' | 'messages' | 'debounce_bursts';
  workflowType: string;
  /** The workflow id scheme (docs/architecture.md, "Workflow ids"), from the row's id. */
  workflowId: (id: string) => string;
  /**
   * A start of an id whose run is still open: USE_EXISTING answers with that run, FAIL
   * refuses (counted as confirmed all the same). Either way there is one run.
   */
  conflictPolicy: 'USE_EXISTING' | 'FAIL';
  /** The row id of a start. */
  idOf: (start: S) => string;
  options: (start: S, services: Services) => StartOptions;
  /**
   * The reconciler's claim of ONE row committed active but never confirmed started, older
   * than the grace, oldest first among the organizations served least this round: a single
   * statement (built with `claimOneSql`) that sets the row's lease and returns it. Bindings:
   * lease in ms, grace in ms, ids to leave out, organizations served this round.
   */
  claimSql: string;
  /**
   * A claimed row, as the start it stands for (the workflow's input is rebuilt from committed
   * rows only). `admission.backlogged`: the pass has already taken BACKLOG_HELD rows of this
   * organization, whose starts were cut off in numbers (a flood), so its run may yield to
   * others' as the API's starts of a flood do.
   */
  fromRow: (row: never, services: Services, admission: Admission) => S;
  /** Runs just before the Temporal call (the crash tests stop a process there). */
  beforeStart?: (services: Services) => void;
}

/**
 * The Temporal start options of a committed row: its kind's id scheme, queue and policies.
 * Also what an update-with-start passes (the voice hook starts a call's execution so).
 */
export function workflowStartOptions<S>(services: Services, kind: StartKind<S>, start: S) {
  const { args, searchAttributes, ...rest } = kind.options(start, services);
  return {
    taskQueue: services.config.TEMPORAL_TASK_QUEUE,
    workflowId: kind.workflowId(kind.idOf(start)),
    args,
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    workflowIdConflictPolicy: kind.conflictPolicy,
    typedSearchAttributes: new TypedSearchAttributes(searchAttributes),
    ...rest,
  };
}

/**
 * Starts the workflow of a committed row and stamps it: on `em` (the reconciler's
 * connection, whose claim holds the row), with `stamp` (a batch of stamps), or on a fresh
 * connection. Never throws for a Temporal outage (nor waits on one longer than
 * TEMPORAL_CALL_TIMEOUT_MS): the row stays unstamped and the reconciler starts it later.
 * Returns whether the start is confirmed.
 */
export async function dispatchStart<S>(
  services: Services,
  kind: StartKind<S>,
  start: S,
  opts: { em?: SqlRunner; timeoutMs?: number; stamp?: (id: string) => Promise<void> } = {},
): Promise<boolean> {
  kind.beforeStart?.(services);
  const id = kind.idOf(start);
  const started = await boundedTemporalCall(
    services,
    () => services.temporal.client.workflow.start(kind.workflowType, workflowStartOptions(services, kind, start)),
    // Already started (by us earlier, or by a racing reconciler): that run is the one.
    (err) => err instanceof WorkflowExecutionAlreadyStartedError,
    opts.timeoutMs,
    // Names the row in the log line of a cut-off start, e.g. `execution_id` (ids only).
    { [`${kind.table.replace(/s$/, '')}_id`]: id },
  );
  if (!started) return false;
  serviceMetricsFor(services.metrics.registry).starts.inc({ kind: kind.table });
  if (opts.stamp) await opts.stamp(id);
  else {
    const em = opts.em ?? services.orm.em.fork();
    await em.execute(`update ${kind.table} set temporal_started_at = now() where id = ? and temporal_started_at is null`, [id]);
  }
  return true;
}

/**
 * How long a reconciler's claim on a row keeps other processes off it: longer than the
 * Temporal call it makes (RECONCILE_TEMPORAL_TIMEOUT_MS) and the stamp after it. A process
 * that dies holding a claim delays that row's start by at most this.
 */
export const START_CLAIM_LEASE_MS = RECONCILE_TEMPORAL_TIMEOUT_MS + 20_000;

/**
 * The claim statement of a kind's table: leases the oldest row matching `unstarted` (a
 * condition on the table's columns whose one binding is the grace in ms) that nobody holds,
 * of an organization not served yet this round if there is one, and returns it. The row
 * lock of `for update skip locked` lasts this statement only, so no lock is ever held across
 * a Temporal call. Bindings: lease ms, grace ms, ids to leave out, organizations served
 * (both comma-separated: the query builder would spread an array into a list).
 */
export function claimOneSql(table: StartKind<unknown>['table'], unstarted: string, oldestFirst: string): string {
  return `update ${table} set start_claimed_until = now() + (? * interval '1 millisecond')
     where id = (select id from ${table}
                  where ${unstarted}
                    and (start_claimed_until is null or start_claimed_until < now())
                    and id <> all(string_to_array(?, ','))
                  order by organization_id = any(string_to_array(?, ',')), ${oldestFirst}
                  limit 1
                  for update skip locked)
     returning *`;
}

/**
 * Starts every row of `kind` committed active whose start was never confirmed and that is
 * older than `graceMs` (so it does not race the API's own attempt), up to `batch` rows,
 * taking the organizations in turn (round-robin, each one's oldest first): one
 * organization's backlog of unstarted rows (a flood whose starts were cut off) does not
 * hold up another's (docs/performance.md, section `fairness`).
 * Each row is claimed by a statement of its own (committed at once), then started with no
 * transaction open, then stamped: a slow or hung Temporal call holds up that row only, and
 * other processes' passes claim the rows after it meanwhile. A start that fails gives its
 * claim back and is not tried again this pass. Returns how many starts it confirmed.
 */
export async function reconcileStarts<S>(
  services: Services,
  kind: StartKind<S>,
  opts: { graceMs: number; batch?: number; timeoutMs?: number },
): Promise<number> {
  const em = services.orm.em.fork();
  const tried: string[] = [];
  // The organizations served this round; when the claim comes back to one of them, every
  // organization with rows waiting has had its turn, and a new round begins.
  let served: string[] = [];
  // Rows claimed per organization this pass: from its (BACKLOG_HELD + 1)th on, it is backlogged.
  const claimed = new Map<string, number>();
  let confirmed = 0;
  while (tried.length < (opts.batch ?? 100)) {
    const [row] = await em.execute<Array<{ id: string; organization_id: string }>>(kind.claimSql, [START_CLAIM_LEASE_MS, opts.graceMs, tried.join(','), served.join(',')]);
    if (!row) break;
    tried.push(row.id);
    served = served.includes(row.organization_id) ? [row.organization_id] : [...served, row.organization_id];
    const held = (claimed.get(row.organization_id) ?? 0) + 1;
    claimed.set(row.organization_id, held);
    const start = kind.fromRow(row as never, services, { backlogged: held > BACKLOG_HELD });
    if (await dispatchStart(services, kind, start, { em, timeoutMs: opts.timeoutMs ?? RECONCILE_TEMPORAL_TIMEOUT_MS })) confirmed++;
    else await releaseStartClaim(em, kind.table, row.id);
  }
  return confirmed;
}

/** Gives a claim back after a failed start, so the next pass (any process's) retries it instead of waiting out the lease. */
export async function releaseStartClaim(em: SqlRunner, table: StartKind<unknown>['table'], id: string): Promise<void> {
  await em.execute(`update ${table} set start_claimed_until = null where id = ? and temporal_started_at is null`, [id]);
}
