/**
 * Owns which senders may speak for the client in `X-Forwarded-*` headers (TRUST_PROXY).
 * Anyone can send `X-Forwarded-For`; only a proxy of our own deployment may be believed,
 * or a script rotates the header and escapes every per-IP limit. The setting names the
 * proxies: a hop count (`1`: the peer is our proxy, believe the last entry it appended)
 * or their addresses and CIDR ranges (plus `loopback`, `linklocal`, `uniquelocal`).
 * Default: trust none, and the peer's socket address is the client.
 *
 * The client address is found the way Express's proxy-addr finds it: walk the chain from
 * the socket peer leftwards through `X-Forwarded-For` while the hop is trusted; the first
 * untrusted hop is the client. Node's own BlockList matches the addresses.
 */
import { BlockList, isIP } from 'node:net';

export type ProxyTrust = { kind: 'none' } | { kind: 'hops'; hops: number } | { kind: 'addresses'; list: BlockList };

/** The names proxy-addr (and so Express) understands, with their ranges. */
const NAMED_RANGES: Record<string, string[]> = {
  loopback: ['127.0.0.1/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** `::ffff:10.0.0.1` (an IPv4 peer on a dual-stack socket) is 10.0.0.1. */
export const plainAddress = (address: string) => (address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address);

/** Parses TRUST_PROXY; throws an Error saying what is wrong with it. */
export function parseTrustProxy(raw: string): ProxyTrust {
  const value = raw.trim().toLowerCase();
  if (value === '' || value === 'false' || value === 'none' || value === '0') return { kind: 'none' };
  if (value === 'true' || value === '*') {
    throw new Error('trusting every sender lets any client choose its own address; name the proxy hops (a number) or their addresses');
  }
  if (/^\d+$/.test(value)) return { kind: 'hops', hops: Number(value) };
  const list = new BlockList();
  for (const entry of value.split(',').map((e) => e.trim()).filter(Boolean)) {
    for (const range of NAMED_RANGES[entry] ?? [entry]) {
      const [address, prefix, extra] = range.split('/');
      const family = isIP(address ?? '');
      const bits = family === 4 ? 32 : 128;
      if (!family || extra !== undefined || (prefix !== undefined && !(/^\d+$/.test(prefix) && Number(prefix) <= bits))) {
        throw new Error(`"${entry}" is not an IP address, a CIDR range, loopback, linklocal or uniquelocal`);
      }
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (prefix === undefined) list.addAddress(address!, type);
      else list.addSubnet(address!, Number(prefix), type);
    }
  }
  return { kind: 'addresses', list };
}

function trusted(trust: ProxyTrust, address: string, hop: number): boolean {
  if (trust.kind === 'none') return false;
  if (trust.kind === 'hops') return hop < trust.hops;
  const family = isIP(address);
  return family !== 0 && trust.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether the socket peer is one of our proxies, so that its X-Forwarded-* headers count. */
export function trustsPeer(trust: ProxyTrust, peer: string): boolean {
  return trusted(trust, plainAddress(peer), 0);
}

/** The client's address: the first hop, walking from the socket peer through X-Forwarded-For, that is not a trusted proxy. */
export function clientAddress(trust: ProxyTrust, peer: string, forwardedFor: string | undefined): string {
  const hops = [peer, ...(forwardedFor ?? '').split(',').map((a) => a.trim()).filter(Boolean).reverse()].map(plainAddress);
  let i = 0;
  while (i < hops.length - 1 && trusted(trust, hops[i]!, i)) i++;
  return hops[i]!.slice(0, 64);
}
