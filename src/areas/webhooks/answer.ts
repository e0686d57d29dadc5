/**
 * The answer reader of the delivery worker's HTTP/1.1 client (src/areas/webhooks/http1.ts,
 * docs/decisions.md#a-lean-http-client-for-deliveries): an answer to a POST read only as far as
 * a delivery needs — the status line and the headers that frame the body — then its body
 * followed to its end, by the framing rules of RFC 9112 §6.3: 1xx interim answers are skipped;
 * 204 and 304 have no body; `Transfer-Encoding` whose last coding is `chunked` is read as
 * chunks (any other coding: until the connection closes); else `Content-Length`; else until the
 * connection closes. Bytes are fed as they come; what is kept across feeds (a line split between
 * them) is copied, so a caller may feed views of a buffer it reuses.
 */
/** The most bytes an answer's status line and headers (and, apart, its chunked trailers) may take. */
export const MAX_HEAD_BYTES = 16 * 1024;
/** The longest chunk-size line (size, extensions) read. */
const MAX_CHUNK_LINE = 1024;
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

export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
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

  /**
   * Takes the next bytes of the connection; returns how many were this answer's: fewer than
   * `data.length` only once the answer ended (`state` is `done`), the rest being the next
   * answer's (pipelined requests, RFC 9112 §9.3.2) or bytes nobody asked for.
   */
  feed(data: Buffer): number {
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
          return data.length;
        case 'done':
          return at;
      }
    }
    return at;
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
