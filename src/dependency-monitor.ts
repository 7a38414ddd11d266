/**
 * Owns what a process knows about its dependencies' outages: the first failure that shows
 * one is unavailable logs it ONCE (not once per request or attempt), a probe then checks it
 * every second and logs its recovery with the outage's length. Callers that can do without
 * a dependency (a Temporal start the reconciler can make later) ask `isDown` and skip it
 * instead of waiting on it again.
 */
import type { Logger } from './logger';
import type { Dependency } from './failures';

const PROBE_INTERVAL_MS = 1_000;
const PROBE_TIMEOUT_MS = 1_000;

type Probe = () => Promise<unknown>;

export class DependencyMonitor {
  private readonly down = new Map<Dependency, { since: number; timer: NodeJS.Timeout }>();
  private closed = false;

  constructor(
    private readonly logger: Logger,
    private readonly probes: Record<Dependency, Probe>,
  ) {}

  isDown(dep: Dependency): boolean {
    return this.down.has(dep);
  }

  /** Marks `dep` unavailable (logging only the first report of an outage) and starts probing it. */
  reportDown(dep: Dependency, err: unknown): void {
    if (this.closed || this.down.has(dep)) return;
    this.logger.error({ dependency: dep, err: err instanceof Error ? err.message : String(err) }, `${dep} unavailable`);
    const since = Date.now();
    const timer = setInterval(() => void this.probe(dep), PROBE_INTERVAL_MS);
    timer.unref();
    this.down.set(dep, { since, timer });
  }

  private async probe(dep: Dependency): Promise<void> {
    const state = this.down.get(dep);
    if (!state) return;
    const ok = await Promise.race([
      this.probes[dep]().then(
        (v) => v !== false,
        () => false,
      ),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), PROBE_TIMEOUT_MS).unref()),
    ]);
    if (!ok || this.down.get(dep) !== state) return;
    clearInterval(state.timer);
    this.down.delete(dep);
    this.logger.info({ dependency: dep, down_ms: Date.now() - state.since }, `${dep} recovered`);
  }

  close(): void {
    this.closed = true;
    for (const { timer } of this.down.values()) clearInterval(timer);
    this.down.clear();
  }
}
