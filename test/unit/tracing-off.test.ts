/**
 * Tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT, as in this jest process): the Temporal
 * client, the worker and the workflow bundle get no tracing options at all, and the logger
 * adds no trace fields, so the service runs exactly the code it runs without tracing. Events
 * record no trace context, and a delivery starts in no span of its own.
 */
import { Writable } from 'node:stream';
import { tracingOn } from '../../src/telemetry/state';
import { clientTracingOptions, workerTracingOptions, workflowTracingModules } from '../../src/telemetry/temporal';
import { createLogger } from '../../src/logger';
import { activeTraceparent, inLinkedTrace, linksTo } from '../../src/telemetry/trace-context';
import { trace } from '@opentelemetry/api';

describe('tracing off', () => {
  it('adds nothing to the Temporal client, the worker, the bundle or the log lines', () => {
    expect(process.env.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(tracingOn()).toBe(false);
    expect(clientTracingOptions()).toEqual({});
    expect(workerTracingOptions()).toEqual({});
    expect(workflowTracingModules()).toEqual([]);

    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) });
    createLogger('info', sink).info('hello');
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line.msg).toBe('hello');
    expect(line).not.toHaveProperty('trace_id');
    expect(line).not.toHaveProperty('span_id');
  });

  it('records no trace context and links nothing', async () => {
    expect(activeTraceparent()).toBeNull();
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    // Without a registered propagator a stored traceparent reads as nothing.
    expect(linksTo(traceparent)).toEqual([]);
    expect(await inLinkedTrace('deliver workflow.completed', traceparent, async () => trace.getActiveSpan())).toBeUndefined();
  });
});
