/**
 * Who the client is, for the limits kept per client address (docs/security.md#client-address): IPv4 as itself,
 * IPv4-mapped IPv6 as its IPv4, other IPv6 by its /64 (one subscriber holds a /64). Behind trusted proxies
 * (`TRUST_PROXY`) the client is the rightmost `X-Forwarded-For` entry that is not itself a trusted proxy; entries left
 * of it were written by the client and are not believed.
 */
import { BlockList, isIP } from 'node:net';
import { parseCidr } from '../core/config.js';
import type { IncomingMessage } from 'node:http';

/** The counting key of an IP address (see the module comment); `unknown` for a value that is not one. */
export function addressKey(ip: string | undefined): string {
  if (ip === undefined) return 'unknown';
  const family = isIP(ip);
  if (family === 4) return ip;
  if (family !== 6) return 'unknown';
  const g = ipv6Groups(ip);
  // ::ffff:a.b.c.d (written either way): the IPv4 client of a dual-stack listener.
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
  }
  return `${g[0].toString(16)}:${g[1].toString(16)}:${g[2].toString(16)}:${g[3].toString(16)}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (zone id dropped, embedded IPv4 converted). */
export function ipv6Groups(ip: string): number[] {
  const zone = ip.indexOf('%');
  const text = zone === -1 ? ip : ip.slice(0, zone);
  const parse = (part: string): number[] => {
    if (part === '') return [];
    const out: number[] = [];
    for (const p of part.split(':')) {
      if (p.includes('.')) {
        const [a, b, c, d] = p.split('.').map(Number);
        out.push((a << 8) | b, (c << 8) | d);
      } else out.push(parseInt(p, 16));
    }
    return out;
  };
  const gap = text.indexOf('::');
  if (gap === -1) return parse(text);
  const head = parse(text.slice(0, gap));
  const tail = parse(text.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** Resolves the client address of a request, trusting `X-Forwarded-For` only from the configured proxies. */
export class ClientAddresses {
  private readonly proxies: BlockList | null;

  /** `trustProxy`: IP addresses and CIDR ranges, as validated by {@link parseCidr} (config). */
  constructor(trustProxy: readonly string[]) {
    if (trustProxy.length === 0) { this.proxies = null; return; }
    this.proxies = new BlockList();
    for (const entry of trustProxy) {
      const c = parseCidr(entry);
      if (!c) throw new Error(`not an IP address or CIDR range: ${entry}`);
      this.proxies.addSubnet(c.address, c.prefix, c.family);
    }
  }

  /** Whether `ip` (a valid IP address) is one of the trusted reverse proxies. */
  trusts(ip: string): boolean {
    if (this.proxies === null) return false;
    const family = isIP(ip);
    return family !== 0 && this.proxies.check(ip, family === 4 ? 'ipv4' : 'ipv6');
  }

  /**
   * The client's IP: the peer, or, when the peer is a trusted proxy, the rightmost `X-Forwarded-For` entry that is not
   * one (the leftmost when all are). A missing header or any entry not a bare IP address falls back to the peer.
   */
  clientIp(req: IncomingMessage): string | undefined {
    const peer = req.socket.remoteAddress;
    if (this.proxies === null || peer === undefined || !this.trusts(peer)) return peer;
    const header = req.headers['x-forwarded-for'];
    if (typeof header !== 'string' || header === '') return peer;
    const hops = header.split(',');
    let client: string | undefined;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i].trim();
      if (isIP(hop) === 0) return peer;
      client = hop;
      if (!this.trusts(hop)) break;
    }
    return client ?? peer;
  }

  /** The counting key ({@link addressKey}) of the request's client. */
  clientKey(req: IncomingMessage): string {
    return addressKey(this.clientIp(req));
  }
}
