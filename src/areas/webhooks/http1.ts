/**
 * The delivery worker's HTTP/1.1 client (docs/decisions.md#a-lean-http-client-for-deliveries):
 * one `POST` per attempt, written as ready bytes on a kept-alive `node:net` or `node:tls`
 * connection, and an answer read only as far as a delivery needs — the status line and the
 * headers that frame the body — then drained to its end so the connection can carry the next
 * attempt.
 *
 * What it does not do, by design: follow redirects, send anything but one request at a time on
 * a connection (no pipelining), decode the body (it is thrown away), or accept an upgrade. The
 * framing rules are those of RFC 9112 §6.3 for a response to a POST: 1xx interim answers are
 * skipped; 204 and 304 have no body; `Transfer-Encoding` whose last coding is `chunked` is read
 * as chunks (any other coding: until the connection closes); else `Content-Length`; else until
 * the connection closes. An answer framed by the close, or one with both `Transfer-Encoding`
 * and `Content-Length` (a sign of response splitting), never goes back to the pool.
 */
import net from 'node:net';
import tls from 'node:tls';
import { fixedLookup, type ResolvedAddress } from '../../ingest/fetch/addresses.js';

/** The most bytes an answer's status line and headers (and, apart, its chunked trailers) may take. */
export const MAX_HEAD_BYTES = 16 * 1024;
/** The longest chunk-size line (size, extensions) read. */
const MAX_CHUNK_LINE = 1024;
/**
 * How long an idle connection is kept, ms: below the 5 s keep-alive timeout of Node's own
 * server (and most others), so that this side closes first and an attempt rarely meets a
 * connection the receiver is closing. A shorter `Keep-Alive: timeout=N` from the receiver wins.
 */
export const IDLE_MS = 4000;

/** The answer is not HTTP/1.x as this client reads it; `message` says what was wrong. */
export class AnswerError extends Error {}

/** An answer's status line and headers (names lower-cased; repeated fields joined by `, `, but for `retry-after`: the first). */
export interface AnswerHead {
  status: number;
  /** The reason phrase, control characters removed, at most 200 characters. */
  reason: string;
  headers: Map<string, string>;
}

type State = 'head' | 'fixed' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'until-close' | 'done';

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: ([^]*))?$/;

/**
 * Reads one answer from the bytes of a connection, fed as they come ({@link feed}, {@link end}).
 * `head` is set once the final (non-1xx) status line and headers are read; `state` is `done`
 * once the body has ended. `keepAlive` tells whether the connection may carry another request.
 * Errors: `feed` and `end` throw {@link AnswerError} on anything malformed, too large, or cut off.
 */
export class AnswerReader {
  state: State = 'head';
  head: AnswerHead | null = null;
  keepAlive = false;
  private lines: string[] = [];
  private partial: Buffer | null = null;
  private headBytes = 0;
  private remaining = 0;

  /** Takes the next bytes of the connection. */
  feed(data: Buffer): void {
    let at = 0;
    while (at < data.length) {
      switch (this.state) {
        case 'head':
        case 'trailers':
        case 'chunk-size':
        case 'chunk-end':
          at = this.line(data, at);
          break;
        case 'fixed':
        case 'chunk-data': {
          const n = Math.min(this.remaining, data.length - at);
          this.remaining -= n;
          at += n;
          if (this.remaining === 0) this.state = this.state === 'fixed' ? 'done' : 'chunk-end';
          break;
        }
        case 'until-close':
          return;
        case 'done':
          throw new AnswerError('the endpoint sent bytes after its answer');
      }
    }
  }

  /** The connection closed (its read side ended): the end of an answer framed by the close, else an error. */
  end(): void {
    if (this.state === 'until-close') { this.state = 'done'; return; }
    if (this.state !== 'done') throw new AnswerError(this.head ? 'the connection closed before the answer\'s body ended' : 'the connection closed before an answer came');
  }

  /** Reads up to one line ending at LF (CR before it dropped) from `data` at `at`; returns where reading stopped. */
  private line(data: Buffer, at: number): number {
    const lf = data.indexOf(0x0a, at);
    const limit = this.state === 'chunk-size' || this.state === 'chunk-end' ? MAX_CHUNK_LINE : MAX_HEAD_BYTES;
    const take = (lf === -1 ? data.length : lf + 1) - at;
    this.headBytes += take;
    if (this.headBytes > limit) throw new AnswerError(this.state === 'head' ? `the answer's status line and headers exceed ${MAX_HEAD_BYTES} bytes` : this.state === 'trailers' ? `the answer's trailers exceed ${MAX_HEAD_BYTES} bytes` : 'a chunk-size line is too long');
    if (lf === -1) {
      const rest = data.subarray(at);
      this.partial = this.partial === null ? Buffer.from(rest) : Buffer.concat([this.partial, rest]);
      return data.length;
    }
    let bytes = data.subarray(at, lf);
    if (this.partial !== null) { bytes = Buffer.concat([this.partial, bytes]); this.partial = null; }
    if (bytes.length > 0 && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, bytes.length - 1);
    this.onLine(bytes.toString('latin1'));
    return lf + 1;
  }

  private onLine(text: string): void {
    switch (this.state) {
      case 'head':
        if (text === '') {
          if (this.lines.length === 0) return; // empty lines before the status line are ignored (RFC 9112 §2.2)
          this.onHead();
        } else this.lines.push(text);
        return;
      case 'chunk-size': {
        const m = /^([0-9A-Fa-f]{1,15})[ \t]*(?:;.*)?$/.exec(text);
        if (!m) throw new AnswerError('a chunk-size line is not valid');
        this.remaining = parseInt(m[1], 16);
        this.headBytes = 0;
        this.state = this.remaining === 0 ? 'trailers' : 'chunk-data';
        return;
      }
      case 'chunk-end':
        if (text !== '') throw new AnswerError('a chunk does not end where its size says');
        this.headBytes = 0;
        this.state = 'chunk-size';
        return;
      case 'trailers':
        if (text === '') this.state = 'done';
        return;
    }
  }

  /** The status line and headers are read: decide the framing of what follows (RFC 9112 §6.3). */
  private onHead(): void {
    const [first, ...fields] = this.lines;
    this.lines = [];
    this.headBytes = 0;
    const m = STATUS_LINE.exec(first);
    if (!m) throw new AnswerError('the status line is not HTTP/1.0 or HTTP/1.1');
    const status = Number(m[2]);
    if (status < 100 || status > 599) throw new AnswerError(`the status ${m[2]} is not an HTTP status`);
    const headers = new Map<string, string>();
    let lengths: string[] | null = null;
    for (const f of fields) {
      if (f[0] === ' ' || f[0] === '\t') throw new AnswerError('a header is folded over lines (obsolete line folding)');
      const colon = f.indexOf(':');
      const name = colon > 0 ? f.slice(0, colon).toLowerCase() : '';
      if (!TOKEN.test(name)) throw new AnswerError('a header line is not a name and a value');
      const value = f.slice(colon + 1).trim();
      if (name === 'content-length') (lengths ??= []).push(...value.split(',').map((v) => v.trim()));
      const had = headers.get(name);
      // Retry-After may hold a comma (an HTTP date): a repeat is ignored, as Node's client does.
      if (had === undefined) headers.set(name, value);
      else if (name !== 'retry-after') headers.set(name, `${had}, ${value}`);
    }
    if (status < 200) {
      if (status === 101) throw new AnswerError('the endpoint switched protocols, which was not asked for');
      return; // an interim answer (100 Continue, 103 Early Hints…): the final one follows
    }
    const version = Number(m[1]);
    this.head = { status, reason: (m[3] ?? '').replace(/[\x00-\x1f\x7f]/g, '').slice(0, 200), headers };
    const connection = (headers.get('connection') ?? '').toLowerCase().split(',').map((t) => t.trim());
    this.keepAlive = version === 1 ? !connection.includes('close') : connection.includes('keep-alive');
    const te = headers.get('transfer-encoding');
    if (status === 204 || status === 304) { this.state = 'done'; return; }
    if (te !== undefined) {
      if (lengths !== null) this.keepAlive = false;
      const codings = te.toLowerCase().split(',').map((t) => t.trim());
      if (codings[codings.length - 1] === 'chunked') { this.state = 'chunk-size'; return; }
      this.state = 'until-close';
      this.keepAlive = false;
      return;
    }
    if (lengths !== null) {
      if (!lengths.every((v) => /^\d{1,15}$/.test(v)) || new Set(lengths.map(Number)).size !== 1) throw new AnswerError('the Content-Length is not one number');
      this.remaining = Number(lengths[0]);
      this.state = this.remaining === 0 ? 'done' : 'fixed';
      return;
    }
    this.state = 'until-close';
    this.keepAlive = false;
  }
}

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
