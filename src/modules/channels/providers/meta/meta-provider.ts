/**
 * The send rules shared by Meta's providers (whatsapp_cloud, instagram): Graph's answers as
 * provider failures, the connection check (GET the Graph node), and the 24-hour window's
 * refusal. Each provider's own folder says what it sends and to which node.
 */
import type { ChannelConnection } from '../../channel.entity';
import type { ChannelSend, ProviderCall, ProviderFailure, ProviderTestResult, SendWindow } from '../../channel-provider';
import { fetchGraphNode, type GraphCall, GraphError } from './meta-graph';

/** A Graph call with the connection's access token. */
export const graphCallOf = (call: ProviderCall): GraphCall => ({
  baseUrl: call.config.META_GRAPH_API_URL,
  accessToken: call.secret('access_token') ?? '',
  timeoutMs: call.config.CHANNEL_PROVIDER_TIMEOUT_MS,
});

/** A Graph error as a provider failure: a refused token (401, code 190) marks the connection. */
export function mapGraphError(err: unknown, connection: ChannelConnection): ProviderFailure | undefined {
  if (!(err instanceof GraphError)) return undefined;
  if (err.kind === 'unauthorized') {
    return { kind: 'unauthorized', status: err.status, message: `Meta refused the access token of ${connection.id}: ${err.message}` };
  }
  return { kind: err.kind, status: err.status, message: err.message };
}

/** `GET {graph}/{node}`: the stored token can read the connection's phone number, page or account (`baseUrl`: another Graph host). */
export async function testGraphNode(call: ProviderCall, node: string, baseUrl?: string): Promise<ProviderTestResult> {
  try {
    await fetchGraphNode({ ...graphCallOf(call), ...(baseUrl ? { baseUrl } : {}) }, node);
    return { ok: true, status_code: 200, error_message: null };
  } catch (err) {
    if (!(err instanceof GraphError)) throw err;
    return { ok: false, status_code: err.status, error_message: err.message, unauthorized: err.kind === 'unauthorized' };
  }
}

/** Outside the 24-hour window only what `allowedOutside` accepts (a template on WhatsApp) may go. */
export function windowRefusal(msg: ChannelSend, window: SendWindow, allowedOutside: boolean, remedy: string): string | null {
  if (window.open || allowedOutside) return null;
  return window.last
    ? `the customer's last message was more than 24 hours ago (${window.last.toISOString()}); ${remedy}`
    : `the customer never wrote on this connection; ${remedy}`;
}
