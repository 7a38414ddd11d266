/**
 * One UPDATE of the executions gathered within a window, instead of one round trip (and one
 * commit flush) per execution: for writes that nothing waits on but a background task,
 * stamping confirmed Temporal starts (start-stamps.ts) and giving back the leases of dropped
 * starts (queued-start-leases.ts). The statement takes the ids as
 * `$1::text[]`; a failed batch is logged, not thrown, since whatever it would have written
 * the reconciler writes later. `add()` resolves when its batch is written, so a background
 * task awaiting it is drained at shutdown with the batch.
 */
import { type HotPool, hotQuery } from '../../db/hot-query';
import type { Logger } from '../../logger';

export class ExecutionIdBatch {
  private ids: string[] = [];
  private batch: Promise<void> | undefined;

  constructor(
    private readonly pool: HotPool,
    private readonly logger: Logger,
    private readonly statement: { name: string; text: string },
    private readonly opts: { windowMs: number; onFailure: string },
  ) {}

  add(id: string): Promise<void> {
    this.ids.push(id);
    this.batch ??= new Promise<void>((resolve) => setTimeout(resolve, this.opts.windowMs)).then(() => this.write());
    return this.batch;
  }

  private async write(): Promise<void> {
    const ids = this.ids;
    this.ids = [];
    this.batch = undefined;
    await hotQuery(this.pool, this.statement, [ids]).catch((err: unknown) => this.logger.warn({ err, executions: ids.length }, this.opts.onFailure));
  }
}
