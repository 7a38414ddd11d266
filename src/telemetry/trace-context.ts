/**
 * A span's context carried across a database row: an event records the W3C `traceparent`
 * of the span that wrote it (the request or the activity of a conversation), and the webhook
 * dispatcher, which starts the delivery later in a trace of its own (deliveries are
 * asynchronous by design), links its span to it. Both are no-ops while tracing is off: no
 * propagator is registered then, so nothing is recorded and nothing is linked.
 */
import { context, type Link, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/** The active span's `traceparent`, or null (tracing off, or no span active). */
export function activeTraceparent(): string | null {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** A span link to the span a stored `traceparent` names; none when it is null or unreadable. */
export function linksTo(traceparent: string | null): Link[] {
  if (!traceparent) return [];
  const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
  return linked && trace.isSpanContextValid(linked) ? [{ context: linked }] : [];
}

/**
 * Runs `fn` in the root span of a new trace linked to the span `traceparent` names (the
 * recorded cause of asynchronous work), so the work's own spans (a Temporal start, the run it
 * starts) form that trace. Without a usable `traceparent`, `fn` runs as it is.
 */
export async function inLinkedTrace<T>(name: string, traceparent: string | null, fn: () => Promise<T>): Promise<T> {
  const links = linksTo(traceparent);
  if (links.length === 0) return await fn();
  return await trace.getTracer('workflow-automation').startActiveSpan(name, { kind: SpanKind.PRODUCER, root: true, links }, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}
