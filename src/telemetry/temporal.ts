/**
 * Temporal's official OpenTelemetry interceptors, wired in only when this process traces
 * (state.ts): with tracing off these return nothing and load nothing, so the client, the
 * worker and the workflow bundle are exactly what they are without tracing.
 * - client: `StartWorkflow:<type>` spans, and the context written into the start's headers;
 * - worker: `RunActivity:<type>` spans, children of the workflow's `StartActivity` span;
 * - workflow bundle: `RunWorkflow:<type>` / `StartActivity:<type>` spans made inside the
 *   sandbox and handed out through the `exporter` sink to our span processor.
 */
import type { ClientInterceptors } from '@temporalio/client';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type * as TemporalOtel from '@temporalio/interceptors-opentelemetry';
import { tracingOn } from './state';

// Required lazily: a process without tracing never loads the interceptors or the SDK.
/* eslint-disable @typescript-eslint/no-require-imports */
const otel = () => require('@temporalio/interceptors-opentelemetry') as typeof TemporalOtel;
const pipeline = () => (require('./tracing') as typeof import('./tracing')).tracingPipeline();
/* eslint-enable @typescript-eslint/no-require-imports */

/** The bundle's workflow interceptor modules: none without tracing. */
export function workflowTracingModules(): string[] {
  return tracingOn() ? [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')] : [];
}

/** Options for `new Client(…)`: the tracing interceptor when on, nothing otherwise. */
export function clientTracingOptions(): { interceptors?: ClientInterceptors } {
  if (!tracingOn()) return {};
  return { interceptors: { workflow: [new (otel().OpenTelemetryWorkflowClientInterceptor)()] } };
}

/**
 * Options for `Worker.create`: activity interceptors, the workflow interceptor modules (used
 * when the worker bundles itself; a prebuilt bundle must have been built with them, see
 * `bundleWorkflows`) and the sink the sandbox exports its spans through.
 */
export function workerTracingOptions(): { interceptors?: WorkerInterceptors; sinks?: InjectedSinks<TemporalOtel.OpenTelemetrySinks> } {
  const p = tracingOn() ? pipeline() : undefined;
  if (!p) return {};
  const o = otel();
  return {
    interceptors: {
      client: { workflow: [new o.OpenTelemetryWorkflowClientInterceptor()] },
      activity: [(ctx) => ({ inbound: new o.OpenTelemetryActivityInboundInterceptor(ctx), outbound: new o.OpenTelemetryActivityOutboundInterceptor(ctx) })],
      workflowModules: workflowTracingModules(),
    },
    sinks: { exporter: o.makeWorkflowExporter(p.spanProcessor, p.resource) },
  };
}
