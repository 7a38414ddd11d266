/**
 * Owns where a webhook may point: HTTPS URLs only, and never at loopback, private,
 * link-local, CGNAT, cloud-metadata, multicast, documentation or any other IANA
 * special-purpose address (IPv4 and IPv6 registries), nor IPv4-mapped/translated forms,
 * unless the deployment allows private networks.
 *
 * Creation checks the URL's form and its literal host only (an address literal, `localhost`
 * and metadata names) and never resolves DNS: a receiver that goes live tomorrow, or a name
 * only the worker's split DNS knows, is a valid endpoint. The guard that matters runs at
 * connect time on the address actually dialled (`guardedLookup`, and the sender's check of
 * literal addresses), so DNS changes cannot smuggle a request to an internal service; a name
 * that does not resolve then is a failed, retried attempt whose log row says why.
 */
import dns from 'node:dns';
import net from 'node:net';

// Two lists: a BlockList matches IPv4 addresses against IPv6 rules through their mapped
// form, so one list holding ::ffff:0:0/96 would refuse every IPv4 address.
// Sources: https://www.iana.org/assignments/iana-ipv4-special-registry and
// https://www.iana.org/assignments/iana-ipv6-special-registry (every entry, globally
// reachable or not: none is a place a customer's webhook receiver lives).
const blocked4 = new net.BlockList();
const blocked6 = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // CGNAT (also Alibaba metadata 100.100.100.200)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (AWS/GCP/Azure metadata 169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.31.196.0', 24], // AS112-v4
  ['192.52.193.0', 24], // AMT
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['192.175.48.0', 24], // direct delegation AS112
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved + broadcast
] as const) {
  blocked4.addSubnet(prefix, bits, 'ipv4');
}
for (const [prefix, bits] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // IPv4-compatible (deprecated)
  ['::ffff:0:0', 96], // IPv4-mapped
  ['64:ff9b::', 96], // NAT64 (embeds an IPv4 address)
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['100:0:0:1::', 64], // dummy IPv6 prefix
  ['2001::', 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID, AMT, AS112, ...)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4 (embeds an IPv4 address)
  ['2620:4f:8000::', 48], // direct delegation AS112
  ['3fff::', 20], // documentation
  ['5f00::', 16], // segment routing (SRv6) SIDs
  ['fc00::', 7], // unique local (also AWS metadata fd00:ec2::254)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  blocked6.addSubnet(prefix, bits, 'ipv6');
}

/** Hostnames refused without resolving them. */
const BLOCKED_NAMES = /(^|\.)(localhost|localdomain|internal|local)$/i;
const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'instance-data']);

export function isForbiddenAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return blocked4.check(address, 'ipv4');
  if (family === 6) return blocked6.check(address, 'ipv6');
  return true; // not an address at all: refuse rather than guess
}

export class ForbiddenTargetError extends Error {
  readonly code = 'ERR_WEBHOOK_FORBIDDEN_TARGET';
  constructor(readonly host: string, readonly address?: string) {
    super(address ? `target ${host} resolves to a forbidden address (${address})` : `target ${host} is a forbidden address`);
    this.name = 'ForbiddenTargetError';
  }
}

export type UrlProblem = { kind: 'invalid' | 'forbidden'; message: string };

const stripBrackets = (host: string) => host.replace(/^\[|\]$/g, '');

/** The creation-time check: syntax and literal host, no network. Returns the normalized URL or a problem. */
export function checkUrlSyntax(raw: string, allowPrivate: boolean): { url: URL } | UrlProblem {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { kind: 'invalid', message: 'url must be an absolute HTTPS URL' };
  }
  if (url.protocol !== 'https:') return { kind: 'invalid', message: 'url must use https' };
  if (url.username || url.password) return { kind: 'invalid', message: 'url must not contain credentials' };
  if (url.hash) return { kind: 'invalid', message: 'url must not contain a fragment' };
  const host = stripBrackets(url.hostname);
  if (!host) return { kind: 'invalid', message: 'url must name a host' };
  if (!allowPrivate) {
    if (net.isIP(host) && isForbiddenAddress(host)) return { kind: 'forbidden', message: `url points at a forbidden address (${host})` };
    if (BLOCKED_NAMES.test(host) || METADATA_NAMES.has(host.toLowerCase())) {
      return { kind: 'forbidden', message: `url points at a forbidden host (${host})` };
    }
  }
  return { url };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `net.connect` lookup that refuses forbidden addresses: the check runs on the address
 * the socket will actually dial, so a name re-pointed at 127.0.0.1 after creation is
 * still refused. Any forbidden answer refuses the whole name (no mixed-answer rebinding).
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      if (!allowPrivate) {
        const bad = addresses.find((a) => isForbiddenAddress(a.address));
        if (bad) return callback(new ForbiddenTargetError(hostname, bad.address) as unknown as NodeJS.ErrnoException, []);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}
