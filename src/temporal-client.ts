/**
 * Owns the API process's connection to Temporal: a `Client` built on a connection whose
 * connect cannot hang forever, and the never-throwing reachability probe `/readyz` calls.
 */
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { clientTracingOptions } from './telemetry/temporal';

export interface TemporalClientOptions {
  address: string;
  namespace: string;
  /** How long the initial connect may take before failing; default 5 s. */
  connectTimeoutMs?: number;
}

export interface TemporalClient {
  client: Client;
  connection: Connection;
  close(): Promise<void>;
}

/**
 * The SDK's gRPC retries, made safe to close under: the retry interceptor schedules each
 * retry on a timer it never cancels, and a retry that fires after `close()` throws from
 * that timer (an uncaught exception). A closing connection retries no more and `close()`
 * waits out the retries already scheduled (at most the SDK's 5 s maximum interval).
 */
function closableRetries() {
  const defaults = defaultGrpcRetryOptions();
  let closing = false;
  let lastRetryAt = 0;
  return {
    interceptor: makeGrpcRetryInterceptor({
      retryableDecider: (attempt, status) => !closing && defaults.retryableDecider(attempt, status),
      delayFunction: (attempt, status) => {
        const delay = defaults.delayFunction(attempt, status);
        lastRetryAt = Math.max(lastRetryAt, Date.now() + delay);
        return delay;
      },
    }),
    async drain() {
      closing = true;
      const wait = lastRetryAt - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait + 50));
    },
  };
}

function connectionOptions(opts: TemporalClientOptions, retries: ReturnType<typeof closableRetries>) {
  return {
    address: opts.address,
    // The SDK default is 10 s; a start that cannot reach Temporal should say so sooner.
    connectTimeout: opts.connectTimeoutMs ?? 5_000,
    // grpc-js backs reconnects off up to 120 s; capping it lets `/readyz` turn green again
    // within seconds of Temporal coming back instead of minutes.
    channelArgs: { 'grpc.max_reconnect_backoff_ms': 2_000, 'grpc.initial_reconnect_backoff_ms': 200 },
    interceptors: [retries.interceptor],
  };
}

const wrap = (connection: Connection, namespace: string, retries: ReturnType<typeof closableRetries>): TemporalClient => ({
  client: new Client({ connection, namespace, ...clientTracingOptions() }),
  connection,
  close: async () => {
    await retries.drain();
    await connection.close();
  },
});

export async function createTemporalClient(opts: TemporalClientOptions): Promise<TemporalClient> {
  const retries = closableRetries();
  return wrap(await Connection.connect(connectionOptions(opts, retries)), opts.namespace, retries);
}

/** A client that connects on first use: for an API that must start while Temporal is away. */
export function createLazyTemporalClient(opts: TemporalClientOptions): TemporalClient {
  const retries = closableRetries();
  return wrap(Connection.lazy(connectionOptions(opts, retries)), opts.namespace, retries);
}

/**
 * True when the server answers `GetSystemInfo` within `timeoutMs`. Never throws: a probe
 * that throws or hangs would turn a Temporal outage into a stuck or crashing `/readyz`.
 */
export async function isTemporalReachable(connection: Connection, timeoutMs = 1_000): Promise<boolean> {
  try {
    await connection.withDeadline(Date.now() + timeoutMs, () => connection.workflowService.getSystemInfo({}));
    return true;
  } catch {
    return false;
  }
}

/** Whether a Temporal server answers at `address` right now: connect, probe, close; never throws. */
export async function temporalAnswersAt(address: string): Promise<boolean> {
  try {
    const probe = await createTemporalClient({ address, namespace: 'default', connectTimeoutMs: 1500 });
    const ok = await isTemporalReachable(probe.connection);
    await probe.close();
    return ok;
  } catch {
    return false;
  }
}
