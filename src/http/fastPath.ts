/**
 * The fast path for plain reads (docs/decisions.md#a-fast-path-for-plain-reads): a request
 * that is a plain `GET` — HTTP/1.1, no body and no header that could announce one, nothing
 * to upgrade or expect, every header line in the strict grammar of src/http/plainHead.ts — is
 * parsed from the socket's bytes and answered with one buffer of status line, headers and
 * body, written at the end of the event-loop turn with the turn's other answers. The
 * first request of a connection that is anything else (a body, a `HEAD`, `Connection: close`,
 * a header this parser does not accept, a head that did not arrive whole in the bytes read)
 * hands the connection over to `node:http` with every byte not yet answered, and `node:http`
 * keeps it to the end: bodies, chunked encoding, header limits, slow clients and malformed
 * requests stay with its parser (llhttp). A request is answered the same way on both paths:
 * the same application handler, the same headers in the same order as `node:http` writes them.
 *
 * The heads it takes, and their parser: src/http/plainHead.ts.
 */
import { STATUS_CODES, type IncomingHttpHeaders, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { readIntoShared } from './sharedReads.js';
import { MAX_HEAD, TCHAR, parseHead } from './plainHead.js';

/** A response header name: a token. */
const TOKEN = new RegExp(`^${TCHAR}+$`);
/** Response header names found to be tokens (the pipeline's own few; at most {@link MAX_NAMES}). */
const TOKEN_NAMES = new Set<string>();
const MAX_NAMES = 256;

/** Whether `name` is a token (RFC 9110 §5.6.2); a name seen before costs one set lookup. */
function isTokenName(name: string): boolean {
  if (TOKEN_NAMES.has(name)) return true;
  if (!TOKEN.test(name)) return false;
  if (TOKEN_NAMES.size < MAX_NAMES) TOKEN_NAMES.add(name);
  return true;
}
/** A response header value: visible ASCII, space and tab only. */
const VALUE = /^[\t\x20-\x7e]*$/;

/**
 * What the API pipeline reads of a request before its body: an `IncomingMessage` from
 * node:http or a {@link FastRequest}.
 */
export interface RequestHead {
  readonly method?: string;
  readonly url?: string;
  readonly headers: IncomingHttpHeaders;
  readonly socket: { readonly remoteAddress?: string };
}

/** A request answered by the fast path: the subset of `IncomingMessage` the pipeline reads. */
export interface FastRequest extends RequestHead {
  readonly method: 'GET';
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly socket: Socket;
  /** Always true: a plain read has no body. */
  readonly complete: true;
  readonly httpVersion: '1.1';
}

/**
 * Where the fast path hands its requests: the connection guard's request listener
 * (src/http/connections.ts), which bounds a connection's unsent output and answers its
 * requests in order exactly as for node:http's.
 */
export type FastHandler = (req: FastRequest, res: FastResponse) => void;

export interface FastPathOptions {
  /** Whether a request target is one for the fast path (e.g. the API's paths). */
  accepts(url: string): boolean;
  /** The handler, once the application is ready; until then every connection is handed over. */
  handler(): FastHandler | undefined;
  /** Idle keep-alive connections are closed after this (ms, real time), as node:http does. */
  keepAliveTimeoutMs: number;
  /** A new connection that sent no whole request head for this long is closed (ms, real time). */
  headersTimeoutMs: number;
}

/** The answer slab's size (bytes): a turn's answers are copied into it while they fit; the others get a buffer of their own. */
const SLAB_BYTES = 64 * 1024;

/** Per-connection state of a socket the fast path holds. */
export interface Conn {
  readonly sock: Socket;
  /** Bytes read and not yet parsed (what follows a request that is not a plain read). */
  buf: Buffer | null;
  /** Requests handed to the handler and not yet answered. */
  outstanding: number;
  /** A request that is not a plain read came: the connection goes to node:http once `outstanding` is 0. */
  leaving: boolean;
  /** A `Connection: close` answer was written: nothing more is read. */
  closing: boolean;
  /** The idle timer is the keep-alive timeout (set with the first answer). */
  kept: boolean;
  /** The client half-closed (FIN): ours is closed once every answer was written. */
  ended: boolean;
  /** Answered in this event-loop turn (listed for its end), and whether its socket is corked by us till then. */
  inTurn: boolean;
  corked: boolean;
  onData: (chunk: Buffer) => void;
  onTimeout: () => void;
  onEnd: () => void;
}

/** A socket's error on the fast path: nothing to answer (the socket is being destroyed), nothing to log (a client's reset is routine). */
function socketFailed(): void {}

/**
 * Takes the `'connection'` event of `server` (an `http.Server`, before it listens): every
 * connection comes here first and is handed to the listeners the server had when this was
 * made (node:http's own) at its first request that is not a plain read. Listeners added
 * later (the connection guard) see every connection once, as it arrives.
 */
export class FastPath {
  private readonly conns = new Set<Conn>();
  private readonly handOff: Array<(sock: Socket) => void>;
  /** The `Connection` and `Keep-Alive` lines and the blank line that end a kept-alive answer's head. */
  readonly keepAliveLines: string;
  /** Requests answered here since the start; connections handed to node:http. */
  answered = 0;
  handedOver = 0;
  private dateSecond = -1;
  private dateText = '';
  /** The buffer the answers of an event-loop turn are written from (see write). */
  private slab: Buffer | undefined;
  /** Bytes of {@link slab} taken by this turn's answers. */
  private slabUsed = 0;
  /** Connections answered in this turn (corked, or uncorked early): their sockets are looked at at its end ({@link flush}). */
  private answeredInTurn: Conn[] = [];
  /**
   * The end of the turn (docs/decisions.md#answers-leave-at-the-end-of-the-turn): every socket
   * still corked is uncorked, so its answers go to the kernel together, one write (or writev) a
   * socket. Then, if every socket answered in the turn had its bytes taken whole, nothing
   * refers to the slab any more and the next turn's answers reuse it; a socket with bytes
   * still queued keeps it, and the next turn gets a new one.
   */
  private readonly flush = (): void => {
    const list = this.answeredInTurn;
    this.answeredInTurn = [];
    let taken = true;
    for (const c of list) {
      c.inTurn = false;
      if (c.corked) { c.corked = false; c.sock.uncork(); }
      if (c.sock.writableLength > 0) taken = false;
    }
    if (!taken) this.slab = undefined;
    this.slabUsed = 0;
  };

  constructor(server: Server, private readonly opts: FastPathOptions) {
    const listeners = server.listeners('connection') as Array<(sock: Socket) => void>;
    this.handOff = listeners.map((l) => (sock: Socket) => l.call(server, sock));
    server.removeAllListeners('connection');
    server.on('connection', (sock: Socket) => this.connected(sock));
    this.keepAliveLines = `Connection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(opts.keepAliveTimeoutMs / 1000)}\r\n\r\n`;
  }

  /** Closes the connections held here that are between requests (graceful shutdown), their answers written first. */
  closeIdle(): void {
    if (this.answeredInTurn.length > 0) this.flush();
    for (const c of this.conns) if (c.outstanding === 0 && c.buf === null) c.sock.destroy();
  }

  /** Closes every connection held here. */
  closeAll(): void {
    for (const c of this.conns) c.sock.destroy();
  }

  private connected(sock: Socket): void {
    if (sock.destroyed) return;
    const c: Conn = {
      sock, buf: null, outstanding: 0, leaving: false, closing: false, kept: false, ended: false, inTurn: false, corked: false,
      onData: (chunk) => this.data(c, chunk),
      onTimeout: () => { if (c.outstanding === 0) sock.destroy(); },
      // node:http's server allows half-open sockets, so a FIN is ours to answer: once the answers
      // already asked for are written, our side closes too (node:http ends at once).
      onEnd: () => { c.ended = true; if (c.outstanding === 0 && !c.leaving) sock.end(); },
    };
    this.conns.add(c);
    // Reads go into one shared buffer while the connection is held here (src/http/sharedReads.ts);
    // once it is handed over (or closed), each read is pushed to the stream as a copy, as Node
    // does by default, for node:http's listeners. The 'data' listener gets every read where
    // shared reads are not available.
    readIntoShared(sock, (bytes) => {
      if (!this.conns.has(c)) return sock.push(Buffer.from(bytes));
      this.data(c, bytes, true);
      return true;
    });
    sock.on('data', c.onData);
    sock.on('end', c.onEnd);
    // A peer's reset (ECONNRESET, EPIPE) or any socket error: the stream destroys the socket
    // after emitting it; without a listener the error would be thrown and end the process.
    sock.on('error', socketFailed);
    sock.once('close', () => this.conns.delete(c));
    sock.setTimeout(this.opts.headersTimeoutMs, c.onTimeout);
  }

  /**
   * Hands every whole plain read of the bytes read so far to the handler, in order (the guard
   * may queue them and stop the socket, as node:http's parser hands over the rest of its
   * chunk); at the first request that is not one, the connection is handed over as soon as
   * every earlier answer was written. `shared`: `chunk` is a view of the shared read buffer,
   * so what is kept past this call is copied.
   */
  private data(c: Conn, chunk: Buffer, shared = false): void {
    if (c.closing) return;
    // `buf` is the shared buffer itself unless earlier bytes were joined to it.
    const inShared = shared && c.buf === null;
    const buf = c.buf === null ? chunk : Buffer.concat([c.buf, chunk]);
    c.buf = null;
    if (c.leaving) { c.buf = inShared ? Buffer.from(buf) : buf; return; }
    const handler = this.opts.handler();
    let at = 0;
    while (at < buf.length) {
      const end = buf.indexOf('\r\n\r\n', at, 'latin1');
      const req = handler === undefined || end === -1 || end + 4 - at > MAX_HEAD ? null : parseHead(buf.toString('latin1', at, end), c.sock);
      if (req === null || !this.opts.accepts(req.url)) {
        const rest = at === 0 ? buf : buf.subarray(at);
        c.buf = inShared ? Buffer.from(rest) : rest;
        c.leaving = true;
        if (c.outstanding === 0) this.handOver(c);
        else c.sock.pause();
        return;
      }
      at = end + 4;
      c.outstanding++;
      this.answered++;
      handler!(req, new FastResponse(req, this, c));
      if (c.closing || c.sock.destroyed) return;
    }
  }

  /** Gives the connection, with the bytes not yet parsed, to node:http for good. */
  private handOver(c: Conn): void {
    const { sock } = c;
    this.conns.delete(c);
    this.handedOver++;
    sock.off('data', c.onData);
    sock.off('end', c.onEnd);
    // node:http adds its own error listener (it answers a parse error with a 400).
    sock.off('error', socketFailed);
    sock.setTimeout(0);
    if (c.buf !== null) sock.unshift(c.buf);
    c.buf = null;
    for (const l of this.handOff) l(sock);
    if (sock.isPaused()) sock.resume();
  }

  /**
   * Writes an answer's bytes; a `Connection: close` answer ends the connection after them.
   * They reach the kernel at the end of the event-loop turn, with the turn's other answers
   * (docs/decisions.md#answers-leave-at-the-end-of-the-turn): the socket is corked until then
   * (a close's `end` uncorks it at once). The socket's idle timer (refreshed by every read and
   * write) moves from the headers timeout to the keep-alive timeout with the connection's first
   * answer.
   */
  write(c: Conn, head: string, body: string | Uint8Array, close: boolean): void {
    const sock = c.sock;
    c.outstanding--;
    if (!c.inTurn) {
      c.inTurn = true;
      if (this.answeredInTurn.push(c) === 1) setImmediate(this.flush);
      // A socket with output still queued is not corked: its bytes wait for that output anyway.
      if (sock.writableLength === 0) { c.corked = true; sock.cork(); }
    }
    if (typeof body === 'string') sock.write(head + body);
    else {
      // One buffer an answer: head and body copied together. While it fits, the buffer is a
      // piece of the turn's answer slab (docs/decisions.md#reads-into-one-shared-buffer), reused
      // next turn if every write was taken whole (see flush).
      const n = head.length + body.length;
      const fits = n <= SLAB_BYTES - this.slabUsed;
      const out = fits ? (this.slab ??= Buffer.allocUnsafeSlow(SLAB_BYTES)).subarray(this.slabUsed, this.slabUsed + n) : Buffer.allocUnsafe(n);
      if (fits) this.slabUsed += n;
      out.write(head, 0, 'latin1');
      out.set(body, head.length);
      sock.write(out);
    }
    // A high-water mark's worth goes at once: the kernel takes it in segments anyway, and a
    // client that does not read then holds one write in the kernel's queue, as before corking.
    if (c.corked && sock.writableLength >= sock.writableHighWaterMark) { c.corked = false; sock.uncork(); }
    if (close) { c.closing = true; c.buf = null; this.conns.delete(c); sock.end(); return; }
    if (!c.kept) { c.kept = true; sock.setTimeout(this.opts.keepAliveTimeoutMs, c.onTimeout); }
    if (c.outstanding > 0) return;
    if (c.leaving) this.handOver(c);
    else if (c.ended) sock.end();
  }

  /** The `Date` header's value (RFC 9110 §5.6.7 IMF-fixdate), made once a second. */
  date(): string {
    const now = Date.now();
    const s = Math.floor(now / 1000);
    if (s !== this.dateSecond) { this.dateSecond = s; this.dateText = new Date(s * 1000).toUTCString(); }
    return this.dateText;
  }
}

/**
 * The answer to a {@link FastRequest}: the subset of `ServerResponse` the pipeline uses.
 * `writeHead` takes the headers as name/value pairs; `end` writes everything at once.
 */
export class FastResponse {
  statusCode = 200;
  headersSent = false;
  private head = '';
  private close = false;

  constructor(readonly req: FastRequest, private readonly path: FastPath, private readonly conn: Conn) {}

  /**
   * Records the status line and headers (written by {@link end}).
   * @throws TypeError when a header name is not a token or a value holds other than visible
   *   ASCII, space and tab (as node:http refuses CR and LF).
   */
  writeHead(status: number, headers: readonly string[]): this {
    let fields = '';
    let values = '';
    let close = false;
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i];
      const value = headers[i + 1];
      if (!isTokenName(name)) throw new TypeError(`invalid response header name ${JSON.stringify(name)}`);
      values += value;
      if (name.length === 10 && name.toLowerCase() === 'connection') { close = value.toLowerCase() === 'close'; continue; }
      fields += `${name}: ${value}\r\n`;
    }
    // Every value checked at once (one regular-expression run, not one per header): a character
    // outside the class anywhere in their concatenation is one in some value. A refused head
    // changes nothing: the error answer that follows is written as if it were the first.
    if (!VALUE.test(values)) throw new TypeError(`invalid response header value in ${JSON.stringify(headers)}`);
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n${fields}`;
    head += `Date: ${this.path.date()}\r\n`;
    head += close ? 'Connection: close\r\n\r\n' : this.path.keepAliveLines;
    this.close = close;
    this.statusCode = status;
    this.head = head;
    return this;
  }

  /** Writes the head and `body` (whose length the head's Content-Length gives). */
  end(body: string | Uint8Array = ''): this {
    if (this.headersSent) return this;
    this.headersSent = true;
    this.path.write(this.conn, this.head, body, this.close);
    return this;
  }

  /** Closes the connection at once (an answer that cannot be given). */
  destroy(): this {
    this.req.socket.destroy();
    return this;
  }

  /** The connection (for the connection guard: an answer here is given to the socket at once, in order, and counted in its `writableLength`). */
  get socket(): Socket { return this.req.socket; }
  get writableFinished(): boolean { return this.headersSent; }
  /** Nothing is held by the answer itself: it goes to the socket whole, at once. */
  get writableLength(): number { return 0; }
  get destroyed(): boolean { return this.req.socket.destroyed; }
}
