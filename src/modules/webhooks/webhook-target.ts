/**
 * Owns where a webhook may point: HTTPS URLs only, and never at loopback, private,
 * link-local, CGNAT, cloud-metadata, multicast/reserved or IPv4-mapped addresses (unless
 * the deployment allows private networks). The address rules are checked twice: when the
 * webhook is created (literal IPs and what the name resolves to then) and at connect time
 * on the address actually dialled (`guardedLookup`), so DNS changes cannot smuggle a
 * request to an internal service.
 */
import dns from 'node:dns';
import net from 'node:net';

// Two lists: a BlockList matches IPv4 addresses against IPv6 rules through their mapped
// form, so one list holding ::ffff:0:0/96 would refuse every IPv4 address.
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
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
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

export type UrlProblem = { kind: 'invalid' | 'forbidden' | 'unresolvable'; message: string };

const stripBrackets = (host: string) => host.replace(/^\[|\]$/g, '');

/** Syntax and literal-address checks, no network: returns the normalized URL or a problem. */
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

/** Creation-time check: syntax, literal address, and every address the name resolves to now. */
export async function checkWebhookUrl(raw: string, allowPrivate: boolean, timeoutMs = 3000): Promise<{ url: URL } | UrlProblem> {
  const syntax = checkUrlSyntax(raw, allowPrivate);
  if (!('url' in syntax)) return syntax;
  const host = stripBrackets(syntax.url.hostname);
  if (net.isIP(host)) return syntax;
  let addresses: dns.LookupAddress[];
  try {
    addresses = await Promise.race([
      dns.promises.lookup(host, { all: true }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('DNS lookup timed out')), timeoutMs).unref()),
    ]);
  } catch (err) {
    return { kind: 'unresolvable', message: `url host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  if (!allowPrivate) {
    const bad = addresses.find((a) => isForbiddenAddress(a.address));
    if (bad) return { kind: 'forbidden', message: `url host ${host} resolves to a forbidden address (${bad.address})` };
  }
  return syntax;
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
