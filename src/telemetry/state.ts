/**
 * Whether this process traces, and how to flush its spans. Set once when the SDK starts
 * (preload.ts, before the service's modules load); read by the logger and the Temporal
 * wiring, which add nothing at all while tracing is off. Kept apart from tracing.ts so
 * that reading it loads no SDK.
 */
let on = false;
let shutdown: (() => Promise<void>) | undefined;

export const tracingOn = (): boolean => on;

export function markTracingOn(): void {
  on = true;
}

export function setTracingShutdown(fn: () => Promise<void>): void {
  shutdown = fn;
}

/** Exports the spans still buffered and stops the SDK; a no-op when tracing is off. Never throws. */
export async function stopTracing(): Promise<void> {
  await shutdown?.().catch(() => undefined);
}
