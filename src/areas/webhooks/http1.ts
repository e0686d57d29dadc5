/**
 * The delivery worker's HTTP/1.1 client (docs/decisions.md#a-lean-http-client-for-deliveries):
 * `POST`s written as ready bytes on kept-alive `node:net` or `node:tls` connections, and each
 * answer read only as far as a delivery needs — the status line and the headers that frame the
 * body — then drained to its end so the connection can carry the next one.
 *
 * Pipelining (RFC 9112 §9.3.2, docs/decisions.md#deliveries-pipelined-on-kept-alive-connections):
 * once a connection has answered a request and stayed open, further requests may be written on
 * it before the answers to those before them came, up to the pool's depth
 * (`WEBHOOK_PIPELINE_DEPTH`); the answers come in the order of the requests, so each exchange
 * reads its own after the one before it ended. Requests written in one turn of the event loop
 * leave in one system call. A request's time limit starts once the answers before it are read
 * (it is then the receiver's to answer). A request that got no byte of its answer when its
 * connection ended — the receiver closed it, or another answer on it failed — is made again,
 * once, alone on an idle or a new connection within the pool's bounds (deliveries are at least
 * once, and receivers tell them apart by `webhook-id`); a pool whose receiver leaves a request written behind another unanswered until
 * its time limit sends one at a time from then on.
 *
 * What it does not do, by design: follow redirects, decode the body (it is thrown away), or
 * accept an upgrade. The answer is read by {@link AnswerReader} (src/areas/webhooks/answer.ts,
 * RFC 9112 §6.3 framing). An answer framed by the close, or one with both `Transfer-Encoding`
 * and `Content-Length` (a sign of response splitting), never lets its connection be used again.
 */
import net from 'node:net';
import tls from 'node:tls';
import { fixedLookup, type ResolvedAddress } from '../../ingest/fetch/addresses.js';
import { AnswerReader, TOKEN, type AnswerHead } from './answer.js';
import { NotSentError, serveSoon, type ConnectionPool, type Taken } from './pool.js';

/**
 * How long an idle connection is kept, ms: below the 5 s keep-alive timeout of Node's own
 * server (and most others), so that this side closes first and an attempt rarely meets a
 * connection the receiver is closing. A shorter `Keep-Alive: timeout=N` from the receiver wins.
 */
export const IDLE_MS = 4000;

/**
 * What an exchange gives its connection: `data` takes the bytes read (a view valid until it
 * returns) and says how many were its answer's, or -1 once it closed the connection; `atHead`
 * is told the answers before its own were read (it is next); `end` is told the connection ended
 * (null: its read side closed cleanly).
 */
export interface ConnectionUser { data(b: Buffer): number; atHead(): void; end(err: Error | null): void }

/**
 * A connection to an endpoint, with the exchanges waiting for their answers on it in the order
 * their requests were written: an HTTP/1.1 server answers in that order (RFC 9112 §9.3.2), so
 * bytes read go to the first, and what is left of them once its answer ended to the next.
 */
export class Connection {
  /** When it last went idle (`performance.now()` ms), and how long it may stay so. */
  idleSince = 0;
  idleMs = IDLE_MS;
  closed = false;
  /** Answers read to their end on it, the connection kept alive: a request goes behind others only after one. */
  answered = 0;
  /** The exchanges whose answers are awaited, oldest first; empty while idle. */
  readonly users: ConnectionUser[] = [];
  /** The pool whose bounds count it while it is in use (awaits an answer). */
  pool: ConnectionPool | null = null;
  /** True from a {@link send} to the end of the turn: a request written now leaves with those. */
  corked = false;

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

  /** Bytes read (a view of {@link READ_BUFFER}, valid until this returns): the exchanges', in turn, or a reason to close. */
  received(b: Buffer): void {
    let at = 0;
    while (at < b.length && !this.closed) {
      const u = this.users[0];
      // Bytes no request asked for: the connection cannot be trusted to frame another answer.
      if (u === undefined) { this.destroy(); return; }
      const n = u.data(at === 0 ? b : b.subarray(at));
      if (n < 0) return;
      at += n;
    }
  }

  /**
   * Writes `bytes`, the request of `u`, which waits for its answer after those before it. The
   * requests written in one turn of the event loop leave together (the socket is corked until
   * the turn's next tick): one system call for all of them.
   */
  send(u: ConnectionUser, bytes: Buffer): void {
    if (this.users.length === 0) this.pool?.counted(+1);
    this.users.push(u);
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(uncork, this);
    }
    this.socket.write(bytes);
  }

  /** `u` is done with the connection (its answer ended, or it failed): the next one is at the head. */
  leave(u: ConnectionUser): void {
    const i = this.users.indexOf(u);
    if (i < 0) return;
    this.users.splice(i, 1);
    if (this.users.length === 0) this.pool?.counted(-1);
    else if (i === 0 && !this.closed) this.users[0].atHead();
    serveSoon();
  }

  /** The address it is connected to (undefined before it is). */
  get remote(): string | undefined { return this.socket.remoteAddress; }

  destroy(): void {
    this.closed = true;
    this.socket.destroy();
  }

  /** The tick after a {@link send}: what was written in the turn leaves. */
  uncork(): void {
    this.corked = false;
    this.socket.uncork();
  }

  private finish(err: Error | null): void {
    this.closed = true;
    const users = this.users.splice(0);
    if (users.length > 0) { this.pool?.counted(-1); serveSoon(); }
    for (const u of users) u.end(err);
    if (!this.socket.destroyed) this.socket.destroy();
  }
}

function uncork(c: Connection): void { c.uncork(); }

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
 * Sends `request` (from {@link requestBytes}) to `t` — behind the requests awaiting answers on a
 * connection of `pool` that has room ({@link ConnectionPool.depth}), else on an idle connection
 * to a checked address, else on a new one — and resolves with the answer's head. The body is
 * then drained in the background, and the connection goes back to `pool` once no answer is
 * awaited on it (or is closed: no pool, not keep-alive, framed by the close). One timer of
 * `timeoutMs` covers connecting, sending, the head and the drain; for a request written behind
 * others it starts once their answers are read. A request that got no byte of its answer when
 * its connection ended, on a connection that had carried others (the receiver closed it while
 * idle, or after the answers before this one), is made again, once, alone on an idle or a new
 * connection within the pool's bounds (waiting for one past them, {@link ConnectionPool.take}).
 * @throws TimeoutError when no head came in time; AnswerError on a malformed answer; the
 *   socket's error (with its `code`, e.g. ECONNREFUSED, or a TLS certificate error) otherwise.
 */
export function exchange(pool: ConnectionPool | null, t: Target, request: Buffer, timeoutMs: number): Promise<AnswerHead> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let current: Connection | null = null;
    let timedOut = false;
    let timer: NodeJS.Timeout | null = null;
    /** Written behind another request at some point: a time-out then says the receiver may not read pipelined requests. */
    let wentBehind = false;
    const arm = (): void => {
      if (timer !== null || settled) return;
      timer = setTimeout(() => {
        timedOut = true;
        if (wentBehind && pool !== null) pool.noPipelining();
        current?.destroy();
        if (!settled) { settled = true; reject(new TimeoutError()); }
      }, timeoutMs);
    };
    const disarm = (): void => { if (timer !== null) clearTimeout(timer); };
    const fail = (e: Error): void => {
      disarm();
      if (!settled) { settled = true; reject(e); }
    };
    const run = (c: Connection, reused: boolean, behind: boolean): void => {
      current = c;
      wentBehind = behind;
      if (!behind) arm();
      const reader = new AnswerReader();
      let got = false;
      const done = (): void => {
        c.leave(user);
        disarm();
        const idleMs = keptFor(reader.head!);
        if (pool === null || !reader.keepAlive || idleMs <= 0) { c.destroy(); return; }
        c.answered++;
        c.idleMs = idleMs;
        if (c.users.length === 0) pool.give(c, performance.now()); else pool.answering(c);
      };
      const user: ConnectionUser = {
        data: (b) => {
          got = true;
          let error: Error | null = null;
          let used = b.length;
          try { used = reader.feed(b); } catch (e) { error = e as Error; }
          // The outcome is the head's, even when what follows it is malformed.
          if (!settled && reader.head !== null) { settled = true; resolve(reader.head); }
          if (error !== null) { c.leave(user); c.destroy(); fail(error); return -1; }
          if (reader.state === 'done') done();
          return used;
        },
        atHead: arm,
        end: (err) => {
          if (timedOut) return;
          if (err === null) {
            try { reader.end(); } catch (e) { err = e as Error; }
          }
          if (err === null) {
            disarm();
            if (!settled && reader.head !== null) { settled = true; resolve(reader.head); }
            return;
          }
          if (reused && !got && !alone) { next(true); return; }
          fail(err);
        },
      };
      c.send(user, request);
      pool?.answering(c);
    };
    const start = (taken: Taken): void => {
      if (settled) {
        // Timed out while it waited for a connection: an idle one it was given goes back.
        if (typeof taken === 'object' && !taken.behind) pool!.give(taken.c, performance.now());
        return;
      }
      if (taken === 'wait') { pool!.wait(t.addresses, alone, start); return; }
      if (taken === 'closed') { fail(new NotSentError('not sent')); return; }
      if (taken !== 'open') { pool!.adopt(taken.c); run(taken.c, true, taken.behind); return; }
      let c: Connection;
      try { c = open(t); } catch (e) { fail(e as Error); return; }
      pool?.adopt(c);
      run(c, false, false);
    };
    /** Made again after its connection ended (once): alone, on an idle or a new connection. */
    let alone = false;
    const next = (again: boolean): void => {
      alone = again;
      start(pool === null ? 'open' : pool.take(t.addresses, performance.now(), alone));
    };
    next(false);
  });
}
