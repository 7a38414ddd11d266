/**
 * Starts tracing when OTEL_EXPORTER_OTLP_ENDPOINT is set (and OTEL_SDK_DISABLED is not
 * "true"); otherwise does nothing and loads nothing. It must run before koa, pg, ioredis
 * and undici are first required, since the instrumentations patch them as they load:
 * src/main.ts imports it first, and any other entry point can preload it with
 * `node --require tsx/cjs --require ./src/telemetry/preload.ts …`.
 */
import { markTracingOn } from './state';

if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT && process.env.OTEL_SDK_DISABLED !== 'true') {
  // Required lazily so that a process without tracing never loads the SDK.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require('./tracing') as typeof import('./tracing')).startTracing();
  markTracingOn();
}
