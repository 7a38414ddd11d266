/**
 * The pino mixin of a process that traces: every log line written inside a span carries
 * that span's `trace_id` and `span_id`, so a log line leads to its trace and back.
 * The logger installs it only when tracing is on.
 */
import { trace } from '@opentelemetry/api';

export function traceLogFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
