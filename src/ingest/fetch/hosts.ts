/**
 * Host names to addresses for every outgoing request (docs/sources.md#name-resolution): `dns.lookup` (so `/etc/hosts`
 * and `nsswitch.conf` apply), every address, answers kept briefly. `getaddrinfo` holds one of libuv's four threadpool
 * threads — the ones that write and `fdatasync` the logs — so lookups run on a queue of their own:
 * {@link MAX_RUNNING} at a time per resolver, at most {@link MAX_WAITING} waiting, one more refused.
 */
import dns from 'node:dns';
import type { ResolvedAddress } from './addresses.js';

/** Lookups one resolver runs at once (each holds a threadpool thread while it runs). */
export const MAX_RUNNING = 1;
/** Lookups that may wait for a running one; a name coming when this many wait is refused ({@link BUSY}). */
export const MAX_WAITING = 64;
/** How long an answer with addresses is kept, ms (`getaddrinfo` gives no TTL). */
export const KEEP_MS = 5_000;
/** How long "no address" is kept, ms: a name failing every attempt of a busy endpoint is asked this often at most. */
export const NO_ADDRESS_KEEP_MS = 2_000;
/** The most names kept; the oldest answer goes first when one more comes. */
export const MAX_NAMES = 1_000;
/** What {@link HostResolver.lookup} answers when its queue is full: nothing was asked. */
export const BUSY = 'busy' as const;

/** The system resolver, as `dns.promises.lookup(host, { all: true, verbatim: true })` answers (it may reject). */
export type SystemLookup = (host: string) => Promise<ResolvedAddress[]>;

/** Options of {@link HostResolver}: the system resolver and a monotonic clock in ms (default `performance.now`). */
export interface HostResolverOptions { lookup?: SystemLookup; now?: () => number }

// Looked up at each call (not bound once) so that a test may observe `dns.promises.lookup`.
const systemLookup: SystemLookup = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

/** Resolves host names (docs/sources.md#name-resolution); one per thread, with its own queue and answers kept. */
export class HostResolver {
  private readonly system: SystemLookup;
  private readonly now: () => number;
  /** Answers kept: addresses and until when (clock ms), oldest first (a Map keeps insertion order). */
  private readonly kept = new Map<string, { addresses: ResolvedAddress[]; until: number }>();
  /** Names being resolved: one question per name at a time, whoever asks. */
  private readonly asking = new Map<string, Promise<ResolvedAddress[]>>();
  /** Lookups waiting for a running one to finish, first come first served. */
  private readonly waiting: Array<() => void> = [];
  private running = 0;

  constructor(opts: HostResolverOptions = {}) {
    this.system = opts.lookup ?? systemLookup;
    this.now = opts.now ?? (() => performance.now());
  }

  /**
   * The addresses of host name `host` (not an IP address: callers take those as they are), IPv4 first; an empty array
   * when it does not resolve (kept {@link NO_ADDRESS_KEEP_MS}) or when the queue is full (not kept). Never throws.
   */
  async resolve(host: string): Promise<ResolvedAddress[]> {
    const found = await this.lookup(host);
    return found === BUSY ? [] : found;
  }

  /**
   * {@link resolve}, telling a full queue apart: {@link BUSY} when {@link MAX_WAITING} lookups already wait and this
   * name is neither kept nor being asked. Never throws.
   */
  lookup(host: string): Promise<ResolvedAddress[] | typeof BUSY> {
    const key = host.toLowerCase();
    const have = this.known(key);
    if (have !== undefined) return Promise.resolve(have);
    let pending = this.asking.get(key);
    if (pending === undefined) {
      if (this.running >= MAX_RUNNING && this.waiting.length >= MAX_WAITING) return Promise.resolve(BUSY);
      pending = this.ask(key).finally(() => this.asking.delete(key));
      this.asking.set(key, pending);
    }
    return pending;
  }

  /** The addresses kept for `host` (lower-case) while their time lasts (empty: none), else undefined. */
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
    if (this.running >= MAX_RUNNING) await new Promise<void>((go) => this.waiting.push(go));
    else this.running++;
    let found: ResolvedAddress[];
    try { found = ordered(await this.system(host)); } catch { found = []; } finally {
      // The slot passes to the first waiting lookup, or is given back.
      const next = this.waiting.shift();
      if (next !== undefined) next(); else this.running--;
    }
    this.keep(host, found, found.length > 0 ? KEEP_MS : NO_ADDRESS_KEEP_MS);
    return found;
  }

  private keep(host: string, addresses: ResolvedAddress[], forMs: number): void {
    if (this.kept.size >= MAX_NAMES) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(host, { addresses, until: this.now() + forMs });
  }
}

/** `addresses` without repeats, IPv4 first, each family in the resolver's order. */
function ordered(addresses: ResolvedAddress[]): ResolvedAddress[] {
  const seen = new Set<string>();
  const out: ResolvedAddress[] = [];
  for (const family of [4, 6]) {
    for (const a of addresses) {
      if (a.family !== family || seen.has(a.address)) continue;
      seen.add(a.address);
      out.push({ address: a.address, family });
    }
  }
  return out;
}
