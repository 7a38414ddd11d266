/**
 * Owns how an activity failure becomes a Temporal failure: the retry decision every
 * activity makes from `classifyError` (src/failures.ts) and its attempt info, instead of a
 * per-workflow `maximumAttempts` that cannot tell our database from a provider.
 *
 * - Our infrastructure unavailable (PostgreSQL, Redis): retryable, with backoff, for
 *   `ACTIVITY_INFRA_RETRY_HOURS` since the activity was first scheduled; then final with
 *   type `DependencyUnavailable`. While it waits the activity counts in the
 *   `activities_waiting_on_dependency` gauge.
 * - Anything else (a provider, an unexpected error): the caller's bounded budget of
 *   attempts, then final with the caller's type (`ExecutionApiError` for executions).
 *
 * Workflows give these activities an unlimited retry policy and let this module decide;
 * already-final ApplicationFailures (validation, not running) pass through untouched.
 * Not imported by workflow code (it reads the activity Context and prom-client).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { Counter, Gauge, type Registry } from 'prom-client';
import { classifyError, type Endpoints } from '../src/failures';
import { FailureTypes } from './failure-types';

export interface ProviderBudget {
  /** Attempts a provider (or unexpected) error may take before it is final. */
  maximumAttempts: number;
  initialIntervalMs: number;
  maximumIntervalMs: number;
  /** Type of the final failure. */
  finalType: string;
}

/**
 * Backoff while our own infrastructure is away: 200 ms doubling up to 5 s, so a recovery is
 * noticed within seconds (an hour of outage costs an activity about 720 cheap attempts).
 */
const INFRA_INITIAL_MS = 200;
const INFRA_MAX_MS = 5_000;
/** An entry not refreshed for this long belongs to an activity that moved to another worker or ended elsewhere. */
const STALE_MS = 120_000;

const backoff = (n: number, initial: number, max: number) => Math.min(initial * 2 ** Math.max(0, n - 1), max);

interface WaitEntry {
  /** Set while the activity's last attempt failed on this dependency. */
  waitingOn: string | undefined;
  /** Attempts of this activity (in this process) that failed on infrastructure. */
  infraAttempts: number;
  touched: number;
}

/**
 * The activities of this process that are waiting out an outage, by workflow + activity
 * id. Counts infrastructure attempts so a provider's budget is not spent on our outage
 * (a retry that lands on another worker starts that count afresh, erring on the short side).
 */
export class DependencyWaits {
  private readonly entries = new Map<string, WaitEntry>();

  /** Called once per attempt that failed on `dependency` (the attempts counter). */
  constructor(private readonly onAttempt: (dependency: string) => void = () => undefined) {}

  waiting(key: string, dependency: string): WaitEntry {
    this.onAttempt(dependency);
    const e = this.entries.get(key) ?? { waitingOn: undefined, infraAttempts: 0, touched: 0 };
    e.waitingOn = dependency;
    e.infraAttempts++;
    e.touched = Date.now();
    this.entries.set(key, e);
    return e;
  }

  /** The activity is no longer waiting (it got past the dependency); its count stays until it ends. */
  resumed(key: string): WaitEntry | undefined {
    const e = this.entries.get(key);
    if (e) {
      e.waitingOn = undefined;
      e.touched = Date.now();
    }
    return e;
  }

  ended(key: string): void {
    this.entries.delete(key);
  }

  counts(): Map<string, number> {
    const now = Date.now();
    const out = new Map<string, number>();
    for (const [key, e] of this.entries) {
      if (now - e.touched > STALE_MS) {
        this.entries.delete(key);
        continue;
      }
      if (e.waitingOn) out.set(e.waitingOn, (out.get(e.waitingOn) ?? 0) + 1);
    }
    return out;
  }
}

const GAUGE = 'activities_waiting_on_dependency';
const perRegistry = new WeakMap<Registry, DependencyWaits>();

/** The process's waits, with their gauge and attempts counter registered once on `registry` (the one /metrics serves). */
export function dependencyWaitsFor(registry: Registry): DependencyWaits {
  let waits = perRegistry.get(registry);
  if (waits) return waits;
  // Local activities' attempts are not in Temporal's pending activities: this is where an
  // operator sees that they keep retrying through an outage.
  const attempts = new Counter({
    name: 'activity_dependency_failed_attempts_total',
    help: 'Activity attempts (task-queue and local) that failed because one of our dependencies (postgres, redis) was unavailable, each retried',
    labelNames: ['dependency'],
    registers: [registry],
  });
  const created = new DependencyWaits((dependency) => attempts.inc({ dependency }));
  waits = created;
  perRegistry.set(registry, created);
  new Gauge({
    name: GAUGE,
    help: 'Activities whose last attempt failed because one of our dependencies (postgres, redis) is unavailable, waiting to retry',
    labelNames: ['dependency'],
    registers: [registry],
    collect() {
      this.reset();
      for (const dep of ['postgres', 'redis']) this.set({ dependency: dep }, 0);
      for (const [dep, n] of created.counts()) this.set({ dependency: dep }, n);
    },
  });
  return waits;
}

export interface FailurePolicy {
  waits: DependencyWaits;
  endpoints: Endpoints;
  /** How long infrastructure errors are retried, from the activity's first scheduling; Infinity = forever. */
  infraRetryMs: number;
}

/**
 * Runs an activity body and turns its failure into the Temporal failure this module's
 * rules call for. `budget` undefined = only infrastructure errors are expected; anything
 * else is retried forever too (the completion write, which must happen).
 */
export async function runWithFailurePolicy<T>(policy: FailurePolicy, budget: ProviderBudget | undefined, body: () => Promise<T>): Promise<T> {
  const info = Context.current().info;
  const key = `${info.workflowExecution?.workflowId ?? ''}/${info.activityId}`;
  try {
    const result = await body();
    policy.waits.ended(key);
    return result;
  } catch (err) {
    if (err instanceof ApplicationFailure && err.nonRetryable) {
      policy.waits.ended(key);
      throw err;
    }
    const c = classifyError(err, policy.endpoints);
    if (c.kind === 'infrastructure') {
      const waitedMs = Date.now() - info.scheduledTimestampMs;
      if (waitedMs >= policy.infraRetryMs) {
        policy.waits.ended(key);
        throw ApplicationFailure.create({
          type: FailureTypes.dependencyUnavailable,
          message: `${c.dependency} unavailable for ${Math.round(waitedMs / 1000)} s: ${c.message}`,
          nonRetryable: true,
        });
      }
      const entry = policy.waits.waiting(key, c.dependency);
      throw ApplicationFailure.create({
        type: FailureTypes.dependencyUnavailable,
        message: `${c.dependency} unavailable (attempt ${info.attempt}), retrying: ${c.message}`,
        nextRetryDelay: backoff(entry.infraAttempts, INFRA_INITIAL_MS, INFRA_MAX_MS),
        // Expected during an outage: logged at DEBUG by the worker, not as an error per attempt.
        category: ApplicationFailureCategory.BENIGN,
      });
    }
    const entry = policy.waits.resumed(key);
    if (!budget) {
      throw ApplicationFailure.create({ type: FailureTypes.retryable, message: c.message, nextRetryDelay: backoff(info.attempt, INFRA_INITIAL_MS, INFRA_MAX_MS) });
    }
    const ownAttempts = info.attempt - (entry?.infraAttempts ?? 0);
    if (ownAttempts >= budget.maximumAttempts) {
      policy.waits.ended(key);
      throw ApplicationFailure.create({ type: budget.finalType, message: c.message, nonRetryable: true, cause: err instanceof Error ? err : undefined });
    }
    throw ApplicationFailure.create({
      type: FailureTypes.retryable,
      message: c.message,
      nextRetryDelay: backoff(ownAttempts, budget.initialIntervalMs, budget.maximumIntervalMs),
    });
  }
}
