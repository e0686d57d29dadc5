/**
 * JSON-lines logs on stdout (docs/configuration.md#logs). Callers pass structured fields; nothing here ever receives an
 * API key, a secret or a request body (docs/security.md#secrets-in-answers-and-logs).
 */
import { writeSync } from 'node:fs';
import type { LogLevel } from './config.js';
import { iso } from './clock.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A line whose fields come already serialized as JSON members (`"a":1`); the caller guarantees valid JSON. */
  line(level: LogLevel, msg: string, members: string): void;
  /**
   * The access log's line of one answered request, at `info` (docs/configuration.md#logs), `durationMs` rounded to
   * hundredths. `ownId`: the id is a server-made UUID, so it is not checked for characters JSON escapes.
   */
  request(requestId: string, method: string, route: string, status: number, durationMs: number, ownId?: boolean): void;
  /** True when lines at `level` are written (lets hot paths skip building fields). */
  enabled(level: LogLevel): boolean;
}

/** Pending log text is written at least this often, wall ms (docs/configuration.md#logs). */
export const LOG_FLUSH_MS = 10;
/** …and at once when a line might not fit what is left of this many bytes. */
export const LOG_FLUSH_BYTES = 64 * 1024;

/**
 * A line writer that batches (docs/configuration.md#logs): lines are copied as UTF-8 into one buffer that goes to
 * `sink` every {@link LOG_FLUSH_MS} or once it holds {@link LOG_FLUSH_BYTES}, because each stdout write is a system
 * call that also wakes the reader. The buffer is reused once `sink` returns, so `sink` must be done with the bytes by
 * then and must not log to this writer. `timer` is injected by tests.
 */
export function batchedWriter(sink: (bytes: Buffer) => void, timer: Timer = defaultTimer): BatchedWriter {
  return new BatchedWriter(sink, timer);
}

/** Runs `fn` once after `ms` wall ms (unref'd: it never keeps the process alive). */
export type Timer = (fn: () => void, ms: number) => void;
const defaultTimer: Timer = (fn, ms) => { setTimeout(fn, ms).unref(); };

/**
 * The writer {@link batchedWriter} makes: `write` lines, `flush` what is pending, `take` it (at exit). In place:
 * `reserve(n)` makes room for `n` bytes in `buf` from `used` on (RangeError past {@link LOG_FLUSH_BYTES}), the caller
 * writes them and `commit(end)` takes them.
 */
export class BatchedWriter {
  /** The batch; bytes [0, used) are pending. One buffer for the writer's life: a new one per batch page-faults. */
  readonly buf = Buffer.allocUnsafe(LOG_FLUSH_BYTES);
  /** Pending bytes in {@link buf}. */
  used = 0;
  private armed = false;
  private readonly onTimer = (): void => { if (this.armed) this.flush(); };

  constructor(private readonly sink: (bytes: Buffer) => void, readonly timer: Timer) {}

  /** Takes what is pending and starts a new batch: the bytes returned are valid until the next line is written. */
  take(): Buffer {
    this.armed = false;
    const out = this.buf.subarray(0, this.used);
    this.used = 0;
    return out;
  }

  /** Gives what is pending to the sink now. */
  flush(): void { if (this.used > 0) this.sink(this.take()); else this.armed = false; }

  /** Adds `line` (one or more lines, each ending in a newline) as UTF-8. */
  write(line: string): void {
    // A line that may not fit what is left goes after a flush; one longer than the buffer alone.
    if (this.used > 0 && line.length * 3 > LOG_FLUSH_BYTES - this.used) this.flush();
    if (line.length * 3 > LOG_FLUSH_BYTES) { this.sink(Buffer.from(line, 'utf8')); return; }
    this.used += this.buf.write(line, this.used, 'utf8');
    this.arm();
  }

  /** Room for `n` bytes in {@link buf} from {@link used} on. @throws RangeError when `n` exceeds LOG_FLUSH_BYTES. */
  reserve(n: number): void {
    if (n > LOG_FLUSH_BYTES) throw new RangeError(`a line of ${n} bytes does not fit the log buffer`);
    if (this.used > 0 && n > LOG_FLUSH_BYTES - this.used) this.flush();
  }

  /** Bytes up to `end` of {@link buf} are written: pending from now on. */
  commit(end: number): void { this.used = end; this.arm(); }

  private arm(): void { if (!this.armed) { this.armed = true; this.timer(this.onTimer, LOG_FLUSH_MS); } }
}
/** A request id JSON must escape, or that is not printable ASCII. */
const NEEDS_ESCAPE = /["\\\x00-\x1f\x7f-\uffff]/;

/** Stdout, batched into {@link stdoutSink}; what is pending at exit goes out then ({@link flushedAtExit}). */
function batchedStdout(): BatchedWriter {
  const sink = stdoutSink();
  return flushedAtExit(batchedWriter(sink), undefined, sink.drainSync);
}

/** Bytes a sink keeps while its descriptor is not ready (EAGAIN); past them a batch is lost and counted. */
export const LOG_QUEUE_BYTES = 4 * 1024 * 1024;
/** How long the last lines may wait for a descriptor that is not ready when the process exits, wall ms. */
export const LOG_EXIT_WAIT_MS = 2000;

/** A {@link batchedWriter} sink that can also write what it still holds before the process exits. */
export interface LogSink {
  (bytes: Buffer): void;
  /** Writes what waits (EAGAIN), retrying for up to {@link LOG_EXIT_WAIT_MS}; what is left then is lost. Blocks. */
  drainSync(): void;
}

/**
 * A {@link batchedWriter} sink writing each batch to `fd` (default 1) synchronously, which never throws
 * (docs/configuration.md#logs): a failed write (EPIPE, ENOSPC, EIO) loses that batch, not the process, and the next
 * batch begins with a `warn` line `log output lost` giving the bytes lost and the error code. On EAGAIN the rest is
 * kept and later batches wait behind it, retried every {@link LOG_FLUSH_MS}; past {@link LOG_QUEUE_BYTES} a batch is
 * lost. `write`, `now`, `timer` and `sleep` (a blocking pause at exit) are injected by tests.
 */
export function stdoutSink(fd = 1, write: (fd: number, buf: Buffer, offset: number, length: number) => number =
  writeSync, now: () => number = Date.now,
  timer: Timer = defaultTimer, sleep: (ms: number) => void = sleepSync): LogSink {
  let lost = 0;
  let lastError = '';
  /** Copies of bytes not written yet (EAGAIN), oldest first, and their total. */
  const waiting: Buffer[] = [];
  let waitingBytes = 0;
  let retrying = false;
  const lose = (n: number, code: string): void => { lost += n; lastError = code; };
  /** Writes `bytes` from `at`; returns the end, or where EAGAIN stopped it; other errors lose the rest. */
  const writeFrom = (bytes: Buffer, at: number): number => {
    while (at < bytes.length) {
      try {
        at += write(fd, bytes, at, bytes.length - at);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? 'unknown';
        if (code === 'EAGAIN') return at;
        lose(bytes.length - at, code);
        return bytes.length;
      }
    }
    return at;
  };
  /** Writes what waits, oldest first; true when nothing waits any more. */
  const writeWaiting = (): boolean => {
    while (waiting.length > 0) {
      const head = waiting[0];
      const at = writeFrom(head, 0);
      if (at < head.length) { waiting[0] = head.subarray(at); waitingBytes -= at; return false; }
      waiting.shift();
      waitingBytes -= head.length;
    }
    return true;
  };
  const retry = (): void => {
    retrying = false;
    if (!writeWaiting()) arm();
  };
  const arm = (): void => { if (!retrying) { retrying = true; timer(retry, LOG_FLUSH_MS); } };
  /** Queues a copy of `bytes` (the batch buffer is reused), or loses it past the cap. */
  const keep = (bytes: Buffer): void => {
    if (waitingBytes + bytes.length > LOG_QUEUE_BYTES) { lose(bytes.length, 'EAGAIN'); return; }
    waiting.push(Buffer.from(bytes));
    waitingBytes += bytes.length;
    arm();
  };
  /** Writes `bytes` after what waits; what EAGAIN leaves is kept. */
  const put = (bytes: Buffer): void => {
    if (waiting.length > 0 && !writeWaiting()) { keep(bytes); return; }
    const at = writeFrom(bytes, 0);
    if (at < bytes.length) keep(bytes.subarray(at));
  };
  const sink = (bytes: Buffer): void => {
    if (lost > 0) {
      const was = lost;
      const code = lastError;
      lost = 0;
      put(Buffer.from(`{"time":"${iso(now())}","level":"warn","msg":"log output ` +
        `lost","bytes":${was},"error":${JSON.stringify(code)}}\n`, 'utf8'));
      // The note not written (nor kept): the count goes on (the note's own bytes are not counted).
      if (lost > 0) lost = was;
    }
    put(bytes);
  };
  return Object.assign(sink, {
    drainSync(): void {
      const until = now() + LOG_EXIT_WAIT_MS;
      while (!writeWaiting() && now() < until) sleep(1);
      waiting.length = 0;
      waitingBytes = 0;
    },
  });
}

/** Blocks the thread for `ms` wall ms (the process is exiting: nothing else is to run). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A logger writing one JSON object per line to `out`: a function (tests) or a {@link BatchedWriter}. */
export function createLogger(level: LogLevel, out: ((line: string) => void) | BatchedWriter = batchedStdout()): Logger {
  const min = RANK[level];
  const batched = typeof out === 'function' ? null : out;
  const write = typeof out === 'function' ? out : (l: string): void => out.write(l);
  // Access lines with batched output are written as bytes into the batch buffer: the text before the id is made once
  // per second (its millisecond digits patched in place), the method/route/status text once per route.
  let prefixSecond = NaN;
  let prefixMs = NaN;
  let msAt = 0;
  let prefix = Buffer.alloc(0);
  // By route, then method (the route's own, or HEAD for a GET route), then status.
  const middles = new Map<string, Map<string, Array<Buffer | undefined>>>();
  const middleOf = (method: string, route: string, status: number): Buffer => {
    // A route's template is ours (bounded); an unmatched request's method is the client's: not kept.
    if (route === '-') return Buffer.from(`,"method":"${method}","route":"-","status":${status},"durationMs":`,
      'latin1');
    let byMethod = middles.get(route);
    if (byMethod === undefined) middles.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = []));
    return (byStatus[status] ??= Buffer.from(
      `,"method":"${method}","route":"${route}","status":${status},"durationMs":`, 'latin1'));
  };
  // `{"time":…,"level":…,"msg":…,<members>}`; callers' fields never use the names time, level or msg.
  const line = (lvl: LogLevel, msg: string, members: string) => {
    if (RANK[lvl] < min) return;
    // iso() keeps the last millisecond's text (a busy server logs many lines per ms).
    write(`{"time":"${iso(Date.now())}","level":"${lvl}",` +
      `"msg":${JSON.stringify(msg)}${members === '' ? '' : ','}${members}}\n`);
  };
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < min) return;
    const rest = fields === undefined ? '{}' : JSON.stringify(fields);
    line(lvl, msg, rest.slice(1, -1));
  };
  const request = (requestId: string, method: string, route: string, status: number, durationMs: number, ownId =
    false): void => {
    if (RANK.info < min) return;
    const hundredths = Math.round(durationMs * 100);
    // An id JSON must escape (or not printable ASCII) takes the text way below; our own ids never do.
    if (batched !== null && requestId.length <= 1024 && durationMs >= 0 && durationMs < 1e9 &&
      (ownId || !NEEDS_ESCAPE.test(requestId))) {
      const ms = Date.now();
      if (ms !== prefixMs) {
        const inSecond = ((ms % 1000) + 1000) % 1000;
        const second = ms - inSecond;
        if (second !== prefixSecond) {
          prefixSecond = second;
          const time = iso(second);
          prefix = Buffer.from(`{"time":"${time}","level":"info","msg":"request","requestId":"`, 'latin1');
          msAt = 9 + time.length - 4; // the three digits before the Z
        }
        prefixMs = ms;
        prefix[msAt] = 0x30 + Math.floor(inSecond / 100);
        prefix[msAt + 1] = 0x30 + (Math.floor(inSecond / 10) % 10);
        prefix[msAt + 2] = 0x30 + (inSecond % 10);
      }
      const middle = middleOf(method, route, status);
      // prefix, id (printable ASCII: one byte a character), '"', middle, at most 12 digits and a point, '}\n'
      batched.reserve(prefix.length + requestId.length + 1 + middle.length + 16);
      const buf = batched.buf;
      let at = batched.used;
      buf.set(prefix, at);
      at += prefix.length;
      at += buf.write(requestId, at, 'latin1');
      buf[at++] = 0x22; // "
      buf.set(middle, at);
      at = writeHundredths(buf, at + middle.length, hundredths);
      buf[at++] = 0x7d; // }
      buf[at++] = 0x0a; // \n
      batched.commit(at);
      return;
    }
    line('info', 'request',
      `"requestId":${NEEDS_ESCAPE.test(requestId) ? JSON.stringify(requestId) : `"${requestId}"`},` +
        `"method":"${method}","route":"${route}","status":${status},"durationMs":${hundredths / 100}`);
  };
  return {
    request,
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    line,
    enabled: (lvl) => RANK[lvl] >= min,
  };
}

/**
 * `out`, flushed at exit (`onExit` registers the callback), then `drain` writes what the sink still holds, so the last
 * lines go out behind any waiting ones (docs/configuration.md#logs).
 */
export function flushedAtExit(out: BatchedWriter, onExit: (fn: () => void) => void = (fn) =>
  { process.once('exit', fn); }, drain?: () => void): BatchedWriter {
  onExit(() => { out.flush(); drain?.(); });
  return out;
}

/** Writes `h / 100` (whole h, 0 ≤ h < 1e11) at `at` as JSON writes that number (`1.5`, `0.07`); returns the end. */
export function writeHundredths(buf: Buffer, at: number, h: number): number {
  const whole = Math.floor(h / 100);
  const frac = h - whole * 100;
  let p = 1;
  while (p * 10 <= whole) p *= 10;
  for (; p >= 1; p /= 10) buf[at++] = 0x30 + (Math.floor(whole / p) % 10);
  if (frac === 0) return at;
  buf[at++] = 0x2e; // .
  buf[at++] = 0x30 + Math.floor(frac / 10);
  if (frac % 10 !== 0) buf[at++] = 0x30 + (frac % 10);
  return at;
}

/** A logger that drops everything; for tests and the CLI. */
export const silentLogger: Logger = createLogger('error', () => {});
