/**
 * Address rules for every outgoing request (source fetches, live checks, webhook deliveries): {@link isPrivateAddress}
 * classifies one address, {@link resolveReachable} resolves a host and applies the rule, and {@link unreachableMessage}
 * is the one text a refusal shows.
 */
import net from 'node:net';
import { BUSY, HostResolver, MAX_WAITING } from './hosts.js';

/**
 * Refused ranges (CIDR). IPv4: unspecified, private, CGNAT, loopback, link-local (cloud metadata), private, IETF
 * protocol assignments, TEST-NET-1, 6to4 relay anycast, private, benchmarking, TEST-NET-2, TEST-NET-3, multicast,
 * reserved (with broadcast 255.255.255.255).
 */
const BLOCKED_V4 = ['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12',
  '192.0.0.0/24', '192.0.2.0/24', '192.88.99.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24',
  '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4'];
/**
 * IPv6: unspecified, loopback and deprecated IPv4-compatible (::/96), local-use NAT64, discard-only, documentation,
 * unique local, link-local, site-local (deprecated), multicast. Embedded IPv4 is checked by {@link embeddedIpv4}.
 */
const BLOCKED_V6 = ['::/96', '64:ff9b:1::/48', '100::/64', '2001:db8::/32', 'fc00::/7', 'fe80::/10', 'fec0::/10',
  'ff00::/8'];

const BLOCKED = new net.BlockList();
for (const [list, type] of [[BLOCKED_V4, 'ipv4'], [BLOCKED_V6, 'ipv6']] as const) {
  for (const cidr of list) BLOCKED.addSubnet(cidr.split('/')[0], Number(cidr.split('/')[1]), type);
}

/** The 16 bytes of a valid IPv6 address (zone removed), or undefined. */
function ipv6Bytes(ip: string): number[] | undefined {
  if (!net.isIPv6(ip)) return undefined;
  let s = ip;
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const parts = dotted[1].split('.').map(Number);
    tail.push((parts[0] << 8) | parts[1], (parts[2] << 8) | parts[3]);
    s = s.slice(0, -dotted[1].length);
    if (s.endsWith(':') && !s.endsWith('::')) s = s.slice(0, -1);
  }
  const [head, rest] = s.includes('::') ? s.split('::') : [s, undefined];
  const words = (x: string): number[] => (x === '' ? [] : x.split(':').map((w) => parseInt(w, 16)));
  const a = words(head);
  const c = rest === undefined ? [] : words(rest);
  const fill = 8 - a.length - c.length - tail.length;
  const all = [...a, ...new Array<number>(rest === undefined ? 0 : fill).fill(0), ...c, ...tail];
  if (all.length !== 8) return undefined;
  return all.flatMap((w) => [w >> 8, w & 0xff]);
}

const v4String = (b: number[]): string => b.join('.');

/**
 * The IPv4 address embedded in an IPv6 address by IPv4-mapped (`::ffff:0:0/96`), NAT64 (`64:ff9b::/96`), 6to4
 * (`2002::/16`) or Teredo (`2001::/32`, client address inverted).
 */
function embeddedIpv4(bytes: number[]): string | undefined {
  const zero = (from: number, to: number): boolean => bytes.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return v4String(bytes.slice(12));
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(4, 12)) {
    return v4String(bytes.slice(12));
  }
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return v4String(bytes.slice(2, 6));
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && zero(2, 4)) return v4String(bytes.slice(12).map((x) => x ^ 0xff));
  return undefined;
}

/**
 * True when `ip` must not be fetched from without `SOURCE_FETCH_ALLOW_PRIVATE` (docs/sources.md#refused-addresses): the
 * ranges above, and IPv6 forms embedding such an IPv4 address (mapped, NAT64, 6to4, Teredo). Accepts dotted quads and
 * IPv6 (brackets and a `%zone` allowed); anything that is not an IP address is refused too (true).
 */
export function isPrivateAddress(ip: string): boolean {
  let s = ip.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (net.isIPv4(s)) return BLOCKED.check(s, 'ipv4');
  const bytes = ipv6Bytes(s);
  if (!bytes) return true;
  if (BLOCKED.check(s, 'ipv6')) return true;
  const v4 = embeddedIpv4(bytes);
  return v4 !== undefined && BLOCKED.check(v4, 'ipv4');
}

/** One resolved address of a host, as `dns.lookup` gives it. */
export interface ResolvedAddress { address: string; family: number }

/** The one text for a host that does not resolve or is refused: no error tells whether an internal name exists. */
export function unreachableMessage(url: string): string {
  return `the host of ${url} cannot be reached from this server`;
}

/** This thread's resolver of host names (docs/sources.md#name-resolution). */
const hosts = new HostResolver();

/**
 * Resolves `host` (a name or an IP address, brackets allowed) through `resolver` (docs/sources.md#name-resolution) and
 * checks every address with {@link isPrivateAddress} unless `allowPrivate`.
 * @returns every address (the connection uses them: no second lookup), or `undefined` when the host does not resolve,
 *   is refused (one answer for both) or the resolver's queue is full. Never throws.
 */
export async function resolveReachable(host: string, allowPrivate: boolean, resolver: HostResolver =
  hosts): Promise<ResolvedAddress[] | undefined> {
  const found = await reachableOrBusy(host, allowPrivate, resolver);
  return found === BUSY ? undefined : found;
}

/**
 * {@link resolveReachable}, telling a full resolver queue apart: {@link BUSY} when the name would have to wait behind
 * {@link MAX_WAITING} others (nothing was asked; see {@link busyMessage}). Never throws.
 */
export async function reachableOrBusy(
  host: string, allowPrivate: boolean, resolver: HostResolver = hosts,
): Promise<ResolvedAddress[] | undefined | typeof BUSY> {
  const h = unbracket(host);
  const now = reachableKnown(h, allowPrivate, resolver);
  if (now !== null) return now;
  const found = await resolver.lookup(h);
  return found === BUSY ? BUSY : checked(found, allowPrivate);
}

/** The text of a request refused because too many host names wait to be resolved (docs/sources.md#name-resolution). */
export function busyMessage(url: string): string {
  return `the host name of ${url} was not resolved: `
    + `more than ${MAX_WAITING} host names are waiting to be resolved; try again later`;
}

/**
 * {@link resolveReachable}'s answer when no lookup is needed (an IP address, or a name whose answer is kept), else
 * null: a delivery to a host seen a moment ago makes no promise.
 */
export function reachableKnown(host: string, allowPrivate: boolean, resolver: HostResolver =
  hosts): ResolvedAddress[] | undefined | null {
  const h = unbracket(host);
  const family = net.isIP(h);
  if (family !== 0) return checked([{ address: h, family }], allowPrivate);
  const kept = resolver.known(h.toLowerCase());
  return kept === undefined ? null : checked(kept, allowPrivate);
}

const unbracket = (host: string): string => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** `addresses`, or undefined when there are none or one is refused (unless `allowPrivate`). */
function checked(addresses: ResolvedAddress[], allowPrivate: boolean): ResolvedAddress[] | undefined {
  if (addresses.length === 0) return undefined;
  if (!allowPrivate && addresses.some((a) => isPrivateAddress(a.address))) return undefined;
  return addresses;
}

type LookupCallback = (err: Error | null, address: string | readonly ResolvedAddress[], family?: number) => void;

/**
 * A `lookup` for `net.connect`/`http.request` answering with already-checked addresses only, so the name is not
 * resolved twice (docs/sources.md#fetching; webhook deliveries too, docs/api.md#webhook-endpoint-urls).
 */
export function fixedLookup(addresses: readonly ResolvedAddress[]) {
  return (_host: string, options: { all?: boolean; family?: number | string }, cb: LookupCallback): void => {
    if (options.all) return cb(null, addresses);
    const want = options.family === 6 || options.family === 'IPv6' ? 6 : options.family === 4 ||
      options.family === 'IPv4' ? 4 : 0;
    const a = addresses.find((x) => want === 0 || x.family === want) ?? addresses[0];
    cb(null, a.address, a.family);
  };
}
