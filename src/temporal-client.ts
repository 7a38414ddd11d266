/**
 * Owns the API process's connection to Temporal: a `Client` built on a connection whose
 * connect cannot hang forever, and the never-throwing reachability probe `/readyz` calls.
 */
import { Client, Connection } from '@temporalio/client';

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

export async function createTemporalClient(opts: TemporalClientOptions): Promise<TemporalClient> {
  const connection = await Connection.connect({
    address: opts.address,
    // The SDK default is 10 s; a start that cannot reach Temporal should say so sooner.
    connectTimeout: opts.connectTimeoutMs ?? 5_000,
    // grpc-js backs reconnects off up to 120 s; capping it lets `/readyz` turn green again
    // within seconds of Temporal coming back instead of minutes.
    channelArgs: { 'grpc.max_reconnect_backoff_ms': 2_000, 'grpc.initial_reconnect_backoff_ms': 200 },
  });
  const client = new Client({ connection, namespace: opts.namespace });
  return { client, connection, close: () => connection.close() };
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
