/**
 * Tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT, as in this jest process): the Temporal
 * client, the worker and the workflow bundle get no tracing options at all, and the logger
 * adds no trace fields, so the service runs exactly the code it runs without tracing.
 */
import { Writable } from 'node:stream';
import { tracingOn } from '../../src/telemetry/state';
import { clientTracingOptions, workerTracingOptions, workflowTracingModules } from '../../src/telemetry/temporal';
import { createLogger } from '../../src/logger';

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
});
