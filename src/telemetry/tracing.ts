/**
 * The OpenTelemetry SDK of a process that traces (started by preload.ts, only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set). Configured by the standard OTEL_* variables:
 * the endpoint, OTEL_EXPORTER_OTLP_PROTOCOL (`http/protobuf`, the default, or `http/json`),
 * OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER
 * (and _ARG), OTEL_PROPAGATORS, OTEL_BSP_*. Spans leave through one BatchSpanProcessor and
 * RedactingSpanExporter (redact.ts); the Temporal worker hands the workflow spans that
 * come out of the sandbox to the same processor (temporal.ts).
 *
 * Versions: @temporalio/interceptors-opentelemetry 1.24 is built on OpenTelemetry JS 1.x
 * (sdk-trace-base ^1.25): the workflow spans it rebuilds carry `parentSpanId` and
 * `instrumentationLibrary`, which a 2.x exporter no longer reads (it reads
 * `parentSpanContext` and `instrumentationScope`), so they would arrive without parents.
 * The SDK here is therefore the last 1.x line (sdk-node 0.57, sdk-trace-base 1.30), with
 * the pg, ioredis, undici and http instrumentations of the same line. Only the Koa
 * instrumentation is newer (0.55): the 1.x line's stops at Koa 2 and we run Koa 3. It
 * talks to the SDK through @opentelemetry/api only, like every instrumentation.
 * test/telemetry/tracing.test.ts proves the parent links end to end.
 */
import type { IncomingMessage } from 'node:http';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter as OTLPJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResourcesSync, envDetectorSync, hostDetectorSync, processDetectorSync, Resource } from '@opentelemetry/resources';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KoaInstrumentation } from '@opentelemetry/instrumentation-koa';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { RedactingSpanExporter } from './redact';
import { setTracingShutdown } from './state';

/** Probes and scrapes answer every few seconds: a trace each would bury the real ones. */
const UNTRACED_PATHS = /^\/(healthz|readyz|metrics)(\/|\?|$)/;

export interface TracingPipeline {
  /** Where every span goes: the Temporal sink hands the workflow spans to it too. */
  spanProcessor: SpanProcessor;
  resource: Resource;
}

let pipeline: TracingPipeline | undefined;

/** The running pipeline; undefined when this process does not trace. */
export const tracingPipeline = (): TracingPipeline | undefined => pipeline;

function otlpExporter(): SpanExporter {
  const protocol = (process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? process.env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf').trim();
  if (protocol === 'http/json') return new OTLPJsonTraceExporter();
  if (protocol === 'http/protobuf') return new OTLPProtoTraceExporter();
  throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: use http/protobuf or http/json`);
}

/** `workflow-automation-api` / `-worker` from the role main.ts runs; OTEL_SERVICE_NAME wins. */
function serviceName(): string {
  const role = process.argv[2];
  return role === 'api' || role === 'worker' ? `workflow-automation-${role}` : 'workflow-automation';
}

export function startTracing(): TracingPipeline {
  if (pipeline) return pipeline;
  // This service exports traces only; the SDK would otherwise default logs to OTLP too.
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': serviceName() }))
    .merge(detectResourcesSync({ detectors: [processDetectorSync, hostDetectorSync, envDetectorSync] }));
  const spanProcessor = new BatchSpanProcessor(new RedactingSpanExporter(otlpExporter()));
  const sdk = new NodeSDK({
    resource,
    autoDetectResources: false,
    spanProcessors: [spanProcessor],
    instrumentations: [
      // The server span of each request; it extracts an inbound `traceparent`.
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req: IncomingMessage) => UNTRACED_PATHS.test(req.url ?? ''),
        // Outbound HTTP of our own goes through undici (below); this would only add the
        // S3 SDK's calls, and only inside a trace.
        requireParentforOutgoingSpans: true,
      }),
      // A span per Koa middleware (request context, OAuth, body and input guard, routing):
      // where a request's time went before and around its handler. The route name comes
      // from koa-route.ts, since our prefix router hides @koa/router from this instrumentation.
      new KoaInstrumentation(),
      // Inside a trace only: the outbox dispatcher and the reconcilers poll many times a second.
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
      // The command name only: keys and arguments can carry ids and limits' inputs.
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
      // Channel-provider calls (fetch) and webhook deliveries (undici.request); injects `traceparent`.
      new UndiciInstrumentation({ requireParentforSpans: true }),
    ],
  });
  sdk.start();
  pipeline = { spanProcessor, resource };
  setTracingShutdown(() => sdk.shutdown());
  return pipeline;
}
