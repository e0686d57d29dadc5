/**
 * The delivery worker's HTTP/1.1 client (docs/decisions.md#a-lean-http-client-for-deliveries):
 * one `POST` per attempt, written as ready bytes on a kept-alive `node:net` or `node:tls`
 * connection, and an answer read only as far as a delivery needs — the status line and the
 * headers that frame the body — then drained to its end so the connection can carry the next
 * attempt.
 *
 * What it does not do, by design: follow redirects, send anything but one request at a time on
 * a connection (no pipelining), decode the body (it is thrown away), or accept an upgrade. The
 * answer is read by {@link AnswerReader} (src/areas/webhooks/answer.ts, RFC 9112 §6.3 framing).
 * An answer framed by the close, or one with both `Transfer-Encoding` and `Content-Length` (a
 * sign of response splitting), never goes back to the pool.
 */
import net from 'node:net';
import tls from 'node:tls';
import { fixedLookup, type ResolvedAddress } from '../../ingest/fetch/addresses.js';
import { AnswerReader, TOKEN, type AnswerHead } from './answer.js';

/**
 * How long an idle connection is kept, ms: below the 5 s keep-alive timeout of Node's own
 * server (and most others), so that this side closes first and an attempt rarely meets a
 * connection the receiver is closing. A shorter `Keep-Alive: timeout=N` from the receiver wins.
 */
export const IDLE_MS = 4000;

/** A connection to an endpoint, with the exchange using it (null while it is idle). */
export class Connection {
  /** When it last went idle (`performance.now()` ms), and how long it may stay so. */
  idleSince = 0;
  idleMs = IDLE_MS;
  closed = false;
  /** The exchange reading this connection; null while idle. */
  user: { data(b: Buffer): void; end(err: Error | null): void } | null = null;

  /** The connection's socket: set once, by {@link open}, right after the connection is made. */
  socket!: net.Socket;

  /** Attaches `socket`, whose bytes come to {@link received} (`onread`, see {@link READ_BUFFER}). */
  attach(socket: net.Socket): this {
    this.socket = socket;
    socket.on('end', () => this.finish(null));
    socket.on('error', (e) => this.finish(e));
    socket.on('close', () => this.finish(null));
    return this;
  }

  /** Bytes read (a view of {@link READ_BUFFER}, valid until this returns): the exchange's, or a reason to close. */
  received(b: Buffer): void {
    if (this.user !== null) this.user.data(b); else this.destroy();
  }

  /** The address it is connected to (undefined before it is). */
  get remote(): string | undefined { return this.socket.remoteAddress; }

  destroy(): void {
    this.closed = true;
    this.socket.destroy();
  }

  private finish(err: Error | null): void {
    this.closed = true;
    const u = this.user;
    this.user = null;
    u?.end(err);
    if (!this.socket.destroyed) this.socket.destroy();
  }
}

const withIdle = new Set<ConnectionPool>();
let sweeper: NodeJS.Timeout | null = null;

/**
 * The idle keep-alive connections of one endpoint and URL. A connection is taken again only
 * when the address it is connected to is among those the host check returned for this attempt
 * (docs/api.md#webhook-endpoint-urls), and only within its idle time; a sweep every second
 * closes the ones past it.
 */
export class ConnectionPool {
  private readonly idle: Connection[] = [];
  private closedPool = false;

  /** An idle connection to one of `addresses`, or undefined; the others met on the way are closed. */
  take(addresses: readonly ResolvedAddress[], now: number): Connection | undefined {
    while (this.idle.length > 0) {
      const c = this.idle.pop()!;
      if (c.closed || now - c.idleSince > c.idleMs || !addresses.some((a) => a.address === c.remote)) { c.destroy(); continue; }
      return c;
    }
    return undefined;
  }

  /** Gives back `c`, its answer read to the end; closed at once when the pool is. */
  give(c: Connection, now: number): void {
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

/** Where an exchange goes: the URL, the addresses its host check returned, and extra trusted CAs (tests). */
export interface Target {
  url: URL;
  addresses: readonly ResolvedAddress[];
  ca?: string | Buffer;
}

/**
 * How long a connection may stay idle after `head`, ms: {@link IDLE_MS}, or less when the
 * receiver's `Keep-Alive: timeout=N` says it closes sooner — then a second before it does, as
 * Node's own agent allows.
 */
function keptFor(head: AnswerHead): number {
  const hint = /(?:^|[,;])\s*timeout\s*=\s*(\d{1,6})/i.exec(head.headers.get('keep-alive') ?? '');
  return hint === null ? IDLE_MS : Math.min(IDLE_MS, Number(hint[1]) * 1000 - 1000);
}

/** No answer within the time given (the connection was closed). */
export class TimeoutError extends Error {}

/**
 * The bytes of `POST url` with `headers` (plus `Host` and `Content-Length`) and `body`;
 * `fixed`, header lines the caller made once and checked with {@link headerLines}, go after
 * `headers`.
 * @throws Error when a header name is not a token or a value holds CR, LF or NUL.
 */
export function requestBytes(url: URL, headers: Record<string, string>, body: string | Uint8Array, fixed = ''): Buffer {
  let head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n${headerLines(headers)}${fixed}`;
  const size = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength;
  head += `content-length: ${size}\r\n\r\n`;
  const bytes = Buffer.allocUnsafe(Buffer.byteLength(head, 'latin1') + size);
  const at = bytes.write(head, 0, 'latin1');
  if (typeof body === 'string') bytes.write(body, at, 'utf8'); else bytes.set(body, at);
  return bytes;
}

/**
 * `headers` as request header lines, each ending in CRLF.
 * @throws Error when a header name is not a token or a value holds CR, LF or NUL.
 */
export function headerLines(headers: Record<string, string>): string {
  let lines = '';
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (!TOKEN.test(name) || /[\r\n\0]/.test(value)) throw new Error(`the header ${JSON.stringify(name)} cannot be sent`);
    lines += `${name}: ${value}\r\n`;
  }
  return lines;
}

/**
 * The buffer every connection of this thread reads into, through the socket's `onread` (a
 * documented option of `net.connect` and `tls.connect`) instead of `'data'` events: no buffer
 * allocated per read and no stream machinery (docs/decisions.md#a-lean-http-client-for-deliveries).
 * One serves all: a read is handed to its exchange's {@link AnswerReader} at once, which copies
 * the little it keeps (a line split across reads).
 */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/** A new connection to `t`, going to the checked addresses only (DNS is not asked again). */
function open(t: Target): Connection {
  const host = t.url.hostname.startsWith('[') ? t.url.hostname.slice(1, -1) : t.url.hostname;
  const secure = t.url.protocol === 'https:';
  const port = Number(t.url.port) || (secure ? 443 : 80);
  const lookup = fixedLookup(t.addresses);
  const c = new Connection();
  const onread: net.OnReadOpts = { buffer: READ_BUFFER, callback: (n) => { c.received(READ_BUFFER.subarray(0, n)); return true; } };
  // `onread` is a socket option tls.connect passes on (Node's types leave it out of its options).
  const tlsOptions: tls.ConnectionOptions & { onread: net.OnReadOpts } = { host, port, lookup: lookup as unknown as net.LookupFunction, servername: net.isIP(host) ? undefined : host, ca: t.ca, ALPNProtocols: ['http/1.1'], onread };
  const socket = secure
    ? tls.connect(tlsOptions)
    : net.connect({ host, port, lookup: lookup as unknown as net.LookupFunction, onread });
  socket.setNoDelay(true);
  return c.attach(socket);
}

/**
 * Sends `request` (from {@link requestBytes}) to `t` — on an idle connection of `pool` when one
 * to a checked address is there, else on a new one — and resolves with the answer's head. The
 * body is then drained in the background, and the connection goes back to `pool` (or is closed:
 * no pool, not keep-alive, framed by the close). One timer of `timeoutMs` covers connecting,
 * sending, the head and the drain. A reused connection that closes before any byte of an
 * answer (the receiver closed it while idle) is replaced by a new one, once.
 * @throws TimeoutError when no head came in time; AnswerError on a malformed answer; the
 *   socket's error (with its `code`, e.g. ECONNREFUSED, or a TLS certificate error) otherwise.
 */
export function exchange(pool: ConnectionPool | null, t: Target, request: Buffer, timeoutMs: number): Promise<AnswerHead> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let current: Connection | null = null;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      current?.destroy();
      if (!settled) { settled = true; reject(new TimeoutError()); }
    }, timeoutMs);
    const fail = (e: Error): void => {
      clearTimeout(timer);
      if (!settled) { settled = true; reject(e); }
    };
    const run = (c: Connection, reused: boolean): void => {
      current = c;
      const reader = new AnswerReader();
      let got = false;
      const done = (): void => {
        c.user = null;
        clearTimeout(timer);
        const idleMs = keptFor(reader.head!);
        if (pool === null || !reader.keepAlive || idleMs <= 0) { c.destroy(); return; }
        c.idleMs = idleMs;
        pool.give(c, performance.now());
      };
      c.user = {
        data: (b) => {
          got = true;
          let error: Error | null = null;
          try { reader.feed(b); } catch (e) { error = e as Error; }
          // The outcome is the head's, even when what follows it is malformed.
          if (!settled && reader.head !== null) { settled = true; resolve(reader.head); }
          if (error !== null) { c.user = null; c.destroy(); fail(error); return; }
          if (reader.state === 'done') done();
        },
        end: (err) => {
          if (timedOut) return;
          if (err === null) {
            try { reader.end(); } catch (e) { err = e as Error; }
          }
          if (err === null) {
            clearTimeout(timer);
            if (!settled && reader.head !== null) { settled = true; resolve(reader.head); }
            return;
          }
          if (reused && !got) { start(null); return; }
          fail(err);
        },
      };
      c.socket.write(request);
    };
    const start = (idle: Connection | null | undefined): void => {
      if (idle) { run(idle, true); return; }
      let c: Connection;
      try { c = open(t); } catch (e) { fail(e as Error); return; }
      run(c, false);
    };
    start(pool?.take(t.addresses, performance.now()));
  });
}
