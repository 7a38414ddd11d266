/**
 * Stamps `temporal_started_at` of confirmed Temporal starts in batches: one UPDATE for the
 * starts confirmed within `windowMs`, instead of one round trip (and one commit flush) per
 * execution. Used for the starts of inbound messages, which nothing waits on; the stamp
 * only tells the reconciler that a start is confirmed.
 *
 * A stamp lost (the process dies inside the window, PostgreSQL is away) costs nothing but
 * a repeated start: the reconciler starts every unstamped running execution past its grace
 * period, the workflow-id policies make that start return the existing run, and it stamps
 * the row itself. `stamp()` resolves when its batch is written, so a background task
 * awaiting it is drained at shutdown with the batch.
 */
import { type HotPool, hotQuery } from '../../db/hot-query';
import type { Logger } from '../../logger';

const STAMP = {
  name: 'executions-stamp-started',
  text: 'update executions set temporal_started_at = now() where id = any($1::text[]) and temporal_started_at is null',
};

export class StartStamps {
  private ids: string[] = [];
  private batch: Promise<void> | undefined;

  constructor(
    private readonly pool: HotPool,
    private readonly logger: Logger,
    private readonly windowMs = 200,
  ) {}

  stamp(executionId: string): Promise<void> {
    this.ids.push(executionId);
    this.batch ??= new Promise<void>((resolve) => setTimeout(resolve, this.windowMs)).then(() => this.write());
    return this.batch;
  }

  private async write(): Promise<void> {
    const ids = this.ids;
    this.ids = [];
    this.batch = undefined;
    await hotQuery(this.pool, STAMP, [ids]).catch((err: unknown) =>
      this.logger.warn({ err, executions: ids.length }, 'could not stamp confirmed starts; the reconciler will'),
    );
  }
}
