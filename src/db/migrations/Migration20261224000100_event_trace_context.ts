import { Migration } from '@mikro-orm/migrations';

/**
 * The W3C `traceparent` of the span that recorded an event (null while tracing is off), so
 * that the webhook delivery, which runs later in its own trace, links back to the
 * conversation or request that caused it (docs/observability.md). Nullable without a
 * default: adding it rewrites nothing.
 */
export class Migration20261224000100_event_trace_context extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table events add column trace_context text');
  }
}
