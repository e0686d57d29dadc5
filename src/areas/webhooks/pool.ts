/**
 * The delivery worker's keep-alive connection pools (src/areas/webhooks/http1.ts,
 * docs/decisions.md#deliveries-pipelined-on-kept-alive-connections): one per endpoint and URL,
 * which chooses the connection a request goes on — behind others when pipelining has room, idle,
 * or new — and keeps the bounds of connections in use, per endpoint and over every pool of the
 * thread, with a wait for a freed connection past them.
 */
import type { ResolvedAddress } from '../../ingest/fetch/addresses.js';
import type { Connection } from './http1.js';

const withIdle = new Set<ConnectionPool>();
let sweeper: NodeJS.Timeout | null = null;

/** Connections in use (awaiting an answer) over every pool of this thread, and their bound (`WEBHOOK_CONCURRENCY`). */
let inUseAll = 0;
let inUseLimit = Infinity;
/** Pools with exchanges waiting for a connection (a bound was reached). */
const waitingPools = new Set<ConnectionPool>();
let serveScheduled = false;

/** Sets the bound of connections in use at once over every pool of this thread (`WEBHOOK_CONCURRENCY`). */
export function setConnectionLimit(n: number): void { inUseLimit = n; }
/** Connections in use over every pool of this thread (tests). */
export function connectionsInUse(): number { return inUseAll; }

/** Once the current turn's bookkeeping is done, the waiting exchanges of every pool take what was freed. */
export function serveSoon(): void {
  if (serveScheduled || waitingPools.size === 0) return;
  serveScheduled = true;
  queueMicrotask(() => {
    serveScheduled = false;
    for (const p of waitingPools) if (p.serve()) waitingPools.delete(p);
  });
}

/**
 * What {@link ConnectionPool.take} gives: a connection to use (`behind` others or not), `open` a
 * new one, or `wait`; a waiting exchange is given `closed` when its pool gives it back unmade.
 */
export type Taken = { c: Connection; behind: boolean } | 'open' | 'wait' | 'closed';

/** The attempt was given back unmade: its pool was closed, or its endpoint answered 410 Gone, while it waited for a connection. */
export class NotSentError extends Error {}

/**
 * The keep-alive connections of one endpoint and URL. A connection is used again only when the
 * address it is connected to is among those the host check returned for this attempt
 * (docs/api.md#webhook-endpoint-urls), and an idle one only within its idle time; a sweep every
 * second closes the ones past it. Its bounds: at most {@link limit} of its connections in use
 * (awaiting answers) at once, and `WEBHOOK_CONCURRENCY` over every pool; past them a request
 * goes behind others on a connection that has room, or waits for one to be freed
 * (docs/decisions.md#deliveries-pipelined-on-kept-alive-connections).
 */
export class ConnectionPool {
  private readonly idle: Connection[] = [];
  /** Connections awaiting answers that have answered before: a request may go behind those awaited. */
  private readonly carrying = new Set<Connection>();
  /** Its connections in use (awaiting an answer). */
  private inUse = 0;
  /** Exchanges waiting for a connection, in order. */
  private readonly waiting: Array<{ addresses: readonly ResolvedAddress[]; alone: boolean; resume: (t: Taken) => void }> = [];
  private closedPool = false;

  /**
   * @param depth the most requests awaiting their answers on one connection
   *   (`WEBHOOK_PIPELINE_DEPTH`; 1: one at a time, no pipelining).
   * @param limit its connections in use at once (`WEBHOOK_CONCURRENCY_PER_ENDPOINT`).
   */
  constructor(public depth = 1, readonly limit = Infinity) {}

  /**
   * Where one more request to one of `addresses` goes, chosen so that a burst leaves in few
   * writes while a slow receiver still gets its connections in parallel: behind the requests of
   * a connection being written to in this turn that has room (fewer than {@link depth} answers
   * awaited); else an idle connection (the stale ones met on the way are closed) or a new one
   * (`open`: open it, then {@link adopt} it), while the bounds of connections in use allow; else
   * behind the requests of any connection with room; else `wait` ({@link wait}). `alone`: never
   * behind others (a request made again after its connection ended).
   */
  take(addresses: readonly ResolvedAddress[], now: number, alone = false): Taken {
    const corked = alone ? undefined : this.behind(addresses, true);
    if (corked !== undefined) return { c: corked, behind: true };
    if (this.underBounds) {
      while (this.idle.length > 0) {
        const c = this.idle.pop()!;
        if (c.closed || now - c.idleSince > c.idleMs || !addresses.some((a) => a.address === c.remote)) { c.destroy(); continue; }
        return { c, behind: false };
      }
      return 'open';
    }
    const older = alone ? undefined : this.behind(addresses, false);
    return older === undefined ? 'wait' : { c: older, behind: true };
  }

  /**
   * True when a request would have to {@link wait}: no connection has room behind the answers it
   * awaits and the bounds of connections in use are reached (the worker then keeps the attempt
   * queued, where a 410 Gone or a drop can still give it back unmade).
   */
  get full(): boolean {
    return !this.underBounds && this.behind(null, false) === undefined;
  }

  /** Fewer connections in use than its bound and than the bound over every pool. */
  private get underBounds(): boolean { return this.inUse < this.limit && inUseAll < inUseLimit; }

  /** Gives back the exchanges waiting for a connection, unmade ({@link NotSentError}). */
  cancelWaiting(): void {
    for (const w of this.waiting.splice(0)) w.resume('closed');
  }

  /** `resume` is called with a {@link take} of the same arguments once one gives more than `wait` (in order of waiting). */
  wait(addresses: readonly ResolvedAddress[], alone: boolean, resume: (t: Taken) => void): void {
    this.waiting.push({ addresses, alone, resume });
    waitingPools.add(this);
  }

  /** Gives the waiting exchanges what is free now, in order; true when none waits any more. */
  serve(): boolean {
    while (this.waiting.length > 0) {
      const w = this.waiting[0];
      const t = this.take(w.addresses, performance.now(), w.alone);
      if (t === 'wait') return false;
      this.waiting.shift();
      w.resume(t);
    }
    return true;
  }

  /**
   * A connection awaiting answers with room for one more request, to one of `addresses` (null:
   * to any); `corked`: only one written to in this turn.
   */
  private behind(addresses: readonly ResolvedAddress[] | null, corked: boolean): Connection | undefined {
    if (this.depth <= 1) return undefined;
    for (const c of this.carrying) {
      if (c.closed || c.users.length === 0) { this.carrying.delete(c); continue; }
      if ((!corked || c.corked) && c.users.length < this.depth && (addresses === null || addresses.some((a) => a.address === c.remote))) return c;
    }
    return undefined;
  }

  /** `c`, just opened or taken for a request of this pool, is counted by its bounds while in use. */
  adopt(c: Connection): void { c.pool = this; }

  /** One of its connections went in use (+1) or stopped being so (-1). */
  counted(n: 1 | -1): void {
    this.inUse += n;
    inUseAll += n;
  }

  /** `c` awaits an answer: once it has answered before, requests may go behind it. */
  answering(c: Connection): void {
    if (this.depth > 1 && c.answered > 0 && !this.closedPool && !c.closed) this.carrying.add(c);
  }

  /** No request goes behind another from now on (the receiver left one unanswered). */
  noPipelining(): void {
    this.depth = 1;
    this.carrying.clear();
  }

  /** Gives back `c`, every answer it awaited read to the end; closed at once when the pool is. */
  give(c: Connection, now: number): void {
    this.carrying.delete(c);
    if (this.closedPool || c.closed) { c.destroy(); return; }
    c.idleSince = now;
    this.idle.push(c);
    withIdle.add(this);
    sweeper ??= setInterval(sweep, 1000).unref();
  }

  /** Closes the connections idle past their time; true while some stay. */
  sweep(now: number): boolean {
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const c = this.idle[i];
      if (c.closed || now - c.idleSince > c.idleMs) { c.destroy(); this.idle.splice(i, 1); }
    }
    return this.idle.length > 0;
  }

  /** Closes every idle connection; connections given back later are closed too. */
  close(): void {
    this.closedPool = true;
    this.carrying.clear();
    this.cancelWaiting();
    for (const c of this.idle.splice(0)) c.destroy();
    withIdle.delete(this);
  }

  /** Idle connections held (tests). */
  get size(): number { return this.idle.length; }
}

function sweep(): void {
  const now = performance.now();
  for (const p of withIdle) if (!p.sweep(now)) withIdle.delete(p);
  if (withIdle.size === 0 && sweeper !== null) { clearInterval(sweeper); sweeper = null; }
}
