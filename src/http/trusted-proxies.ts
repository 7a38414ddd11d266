/**
 * Applies TRUST_PROXY (parsed by src/proxy-trust.ts) to each request: X-Forwarded-* count
 * only from a peer that is one of our proxies.
 */
import type { Context, Next } from 'koa';
import { clientAddress, plainAddress, type ProxyTrust, trustsPeer } from '../proxy-trust';

const FORWARDED_HEADERS = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'forwarded'];

/**
 * Koa (and the OAuth server inside it) believe X-Forwarded-* once `proxy` is on: this
 * drops them from a peer that is not one of our proxies, and sets `ctx.ip` to the client
 * the trusted chain names (Koa's own choice would be the leftmost entry, which the client writes).
 */
export function forwardedByTrustedProxies(trust: ProxyTrust) {
  return (ctx: Context, next: Next) => {
    const peer = ctx.req.socket.remoteAddress ?? '';
    if (!trustsPeer(trust, peer)) {
      for (const name of FORWARDED_HEADERS) delete ctx.req.headers[name];
      ctx.request.ip = plainAddress(peer);
    } else {
      ctx.request.ip = clientAddress(trust, peer, ctx.get('x-forwarded-for') || undefined);
    }
    return next();
  };
}
