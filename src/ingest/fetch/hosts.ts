/**
 * Host names to addresses for every outgoing request (docs/sources.md#name-resolution): DNS
 * asked directly (c-ares, `dns.Resolver`), answers kept for their TTL, and the system's resolver
 * (`getaddrinfo`) asked only for a name DNS says it does not know, one such name at a time.
 *
 * Why not `dns.lookup` for every name: `getaddrinfo` blocks one thread of libuv's threadpool until
 * it returns — the same four threads that run the logs' `write` and `fdatasync`. A name whose
 * servers never answer (anyone can set that up for an endpoint URL) held a thread for the
 * resolver's whole timeout per attempt; a few such attempts at once left durable writes of every
 * workspace waiting behind them. DNS queries made by c-ares are non-blocking sockets on the event
 * loop and take no thread. The system resolver is asked only for names DNS says it does not
 * know (or when no DNS server can be reached), one at a time per resolver — one resolver per
 * thread making requests (the API thread, the delivery worker) — so at most two threads are ever
 * held by it.
 */
import dns from 'node:dns';
import type { ResolvedAddress } from './addresses.js';

/** The shortest and longest time a DNS answer is kept, ms (its TTL, clamped). */
export const MIN_KEEP_MS = 1_000;
export const MAX_KEEP_MS = 60_000;
/** How long an answer of the system resolver (which gives no TTL) is kept, ms. */
export const SYSTEM_KEEP_MS = 5_000;
/** How long "no address" is kept, ms: a name failing every attempt of a busy endpoint is asked this often at most. */
export const NO_ADDRESS_KEEP_MS = 2_000;
/** System lookups that may wait for the running one; a name coming when this many wait gets no address. */
export const MAX_SYSTEM_WAITING = 64;
/** The DNS errors after which the system resolver is asked: not in DNS, or no DNS server to ask. */
const FALLBACK_CODES = new Set<string>([dns.NOTFOUND, dns.NODATA, dns.CONNREFUSED]);
/** The most names kept; the oldest answer goes first when one more comes. */
export const MAX_NAMES = 1_000;

/** The part of `dns.promises.Resolver` used here. */
export interface DnsQueries {
  resolve4(host: string, options: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>;
  resolve6(host: string, options: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>;
}

/** The system resolver, as `dns.promises.lookup(host, { all: true, verbatim: true })` answers. */
export type SystemLookup = (host: string) => Promise<ResolvedAddress[]>;

/** Options of {@link HostResolver}; each defaults to the real thing. */
export interface HostResolverOptions {
  /** DNS queries (default: a `dns.promises.Resolver` on the system's servers, 2 s a try, 2 tries). */
  dns?: DnsQueries;
  /** The system resolver, asked when DNS does not know a name (or no DNS server answers the connection). */
  system?: SystemLookup;
  /** Monotonic clock, ms (default `performance.now`). */
  now?: () => number;
}

const systemLookup: SystemLookup = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

/**
 * Resolves host names (docs/sources.md#name-resolution). One per thread: the delivery worker has
 * its own, with its own answers kept.
 */
export class HostResolver {
  private readonly dns: DnsQueries;
  private readonly system: SystemLookup;
  private readonly now: () => number;
  /** Answers kept: addresses and until when (clock ms), oldest first (a Map keeps insertion order). */
  private readonly kept = new Map<string, { addresses: ResolvedAddress[]; until: number }>();
  /** Names being resolved: one question per name at a time, whoever asks. */
  private readonly asking = new Map<string, Promise<ResolvedAddress[]>>();
  /** System lookups waiting for the one running. */
  private systemQueue: Array<() => void> = [];
  private systemBusy = false;

  constructor(opts: HostResolverOptions = {}) {
    this.dns = opts.dns ?? new dns.promises.Resolver({ timeout: 2000, tries: 2 });
    this.system = opts.system ?? systemLookup;
    this.now = opts.now ?? (() => performance.now());
  }

  /**
   * The addresses of host name `host` (not an IP address: callers take those as they are), IPv4
   * first; an empty array when it does not resolve (kept {@link NO_ADDRESS_KEEP_MS}). Never throws.
   */
  async resolve(host: string): Promise<ResolvedAddress[]> {
    const key = host.toLowerCase();
    const have = this.known(key);
    if (have !== undefined) return have;
    let pending = this.asking.get(key);
    if (pending === undefined) {
      pending = this.ask(key).finally(() => this.asking.delete(key));
      this.asking.set(key, pending);
    }
    return pending;
  }

  /** The addresses kept for `host` (lower-case) while their time lasts (empty: none), undefined when a question must be asked. */
  known(host: string): ResolvedAddress[] | undefined {
    const have = this.kept.get(host);
    if (have === undefined) return undefined;
    if (have.until > this.now()) return have.addresses;
    this.kept.delete(host);
    return undefined;
  }

  /** Answers kept (tests). */
  get size(): number { return this.kept.size; }

  private async ask(host: string): Promise<ResolvedAddress[]> {
    const [v4, v6] = await Promise.allSettled([this.dns.resolve4(host, { ttl: true }), this.dns.resolve6(host, { ttl: true })]);
    const addresses: ResolvedAddress[] = [];
    let ttl = Infinity;
    for (const [r, family] of [[v4, 4], [v6, 6]] as const) {
      if (r.status !== 'fulfilled') continue;
      for (const a of r.value) { addresses.push({ address: a.address, family }); ttl = Math.min(ttl, a.ttl); }
    }
    if (addresses.length > 0) {
      this.keep(host, addresses, Math.min(MAX_KEEP_MS, Math.max(MIN_KEEP_MS, ttl * 1000)));
      return addresses;
    }
    // No address from DNS. Only a definite "not in DNS" (no such name, no records) or no DNS
    // server at all may still be a name of the hosts file or of a search domain; a server that
    // timed out, failed (SERVFAIL) or refused would be asked again by the system resolver, which
    // holds a thread as long (docs/sources.md#name-resolution).
    const notInDns = [v4, v6].every((r) => r.status === 'rejected' && FALLBACK_CODES.has((r.reason as NodeJS.ErrnoException).code ?? ''));
    const found = notInDns && this.systemQueue.length < MAX_SYSTEM_WAITING ? await this.oneAtATime(() => this.system(host).catch(() => [])) : [];
    this.keep(host, found, found.length > 0 ? SYSTEM_KEEP_MS : NO_ADDRESS_KEEP_MS);
    return found;
  }

  private keep(host: string, addresses: ResolvedAddress[], forMs: number): void {
    if (this.kept.size >= MAX_NAMES) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(host, { addresses, until: this.now() + forMs });
  }

  /** Runs `f` when no other system lookup is running: at most one threadpool thread is ever held by them. */
  private async oneAtATime<T>(f: () => Promise<T>): Promise<T> {
    if (this.systemBusy) await new Promise<void>((go) => this.systemQueue.push(go));
    this.systemBusy = true;
    try { return await f(); } finally {
      const next = this.systemQueue.shift();
      if (next !== undefined) next(); else this.systemBusy = false;
    }
  }
}
