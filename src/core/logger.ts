/**
 * JSON-lines logs on stdout (docs/configuration.md#logs). Callers pass structured fields; nothing here ever
 * receives an API key, a secret or a request body (docs/security.md#secrets-in-answers-and-logs).
 */
import { writeSync } from 'node:fs';
import type { LogLevel } from './config.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /**
   * A line whose fields come already serialized as JSON object members (`"a":1,"b":"x"`), for
   * the per-request access log; the caller guarantees they are valid JSON.
   */
  line(level: LogLevel, msg: string, members: string): void;
  /**
   * The access log's line of one answered request, at `info` (docs/configuration.md#logs):
   * `requestId` (escaped when JSON needs it), `method` (an HTTP token), `route` (`METHOD
   * /template` or `-`, nothing JSON escapes), `status`, `durationMs`. With batched output the
   * line is written as bytes straight into the batch buffer (no string per request; the text
   * way for an id JSON must escape, one over 1,024 characters, or a duration out of range).
   */
  request(requestId: string, method: string, route: string, status: number, durationMs: number): void;
  /** True when lines at `level` are written (lets hot paths skip building fields). */
  enabled(level: LogLevel): boolean;
}

/** Pending log text is written at least this often, wall ms (docs/configuration.md#logs). */
export const LOG_FLUSH_MS = 10;
/** …and at once when a line might not fit what is left of this many bytes. */
export const LOG_FLUSH_BYTES = 64 * 1024;

/**
 * A line writer that batches: lines (one or more per call, each ending in a newline) are
 * copied as UTF-8 into a buffer that goes to `sink` in one write every {@link LOG_FLUSH_MS},
 * or as soon as it holds {@link LOG_FLUSH_BYTES} (text longer than that goes alone) — not once
 * per line, nor once per event-loop turn: stdout on a pipe is a synchronous `write` on Linux,
 * each one a system call that also wakes the reader, which cost a busy server ~15 % of its reads
 * (docs/configuration.md#logs). `sink` owns the buffer it is given. `timer` is injected by tests.
 */
export function batchedWriter(sink: (bytes: Buffer) => void, timer: Timer = defaultTimer): BatchedWriter {
  let buf = Buffer.allocUnsafe(LOG_FLUSH_BYTES);
  let used = 0;
  let armed = false;
  const take = (): Buffer => {
    armed = false;
    const out = buf.subarray(0, used);
    buf = Buffer.allocUnsafe(LOG_FLUSH_BYTES);
    used = 0;
    return out;
  };
  const flush = (): void => { if (used > 0) sink(take()); else armed = false; };
  const write = (line: string): void => {
    // A line that may not fit what is left goes after a flush; one longer than the buffer alone.
    if (used > 0 && line.length * 3 > LOG_FLUSH_BYTES - used) flush();
    if (line.length * 3 > LOG_FLUSH_BYTES) { sink(Buffer.from(line, 'utf8')); return; }
    used += buf.write(line, used, 'utf8');
    arm();
  };
  const arm = (): void => { if (!armed) { armed = true; timer(() => { if (armed) flush(); }, LOG_FLUSH_MS); } };
  const reserve = (n: number): Buffer => {
    if (n > LOG_FLUSH_BYTES) throw new RangeError(`a line of ${n} bytes does not fit the log buffer`);
    if (used > 0 && n > LOG_FLUSH_BYTES - used) flush();
    return buf;
  };
  const commit = (end: number): void => { used = end; arm(); };
  return { write, flush, take, timer, reserve, get used() { return used; }, commit };
}

/** Runs `fn` once after `ms` wall ms (unref'd: it never keeps the process alive). */
export type Timer = (fn: () => void, ms: number) => void;
const defaultTimer: Timer = (fn, ms) => { setTimeout(fn, ms).unref(); };

/**
 * A {@link batchedWriter}: `write` lines, `flush` what is pending, `take` it (at exit); its
 * `timer`. Bytes written in place: `reserve(n)` returns the buffer with room for `n` bytes
 * from `used` on (flushing first when needed; RangeError past {@link LOG_FLUSH_BYTES}), and
 * `commit(end)` takes what was written up to `end`.
 */
export interface BatchedWriter {
  write: (line: string) => void; flush: () => void; take: () => Buffer; timer: Timer;
  reserve: (n: number) => Buffer; readonly used: number; commit: (end: number) => void;
}
/** A request id JSON must escape, or that is not printable ASCII. */
const NEEDS_ESCAPE = /["\\\x00-\x1f\x7f-\uffff]/;

/**
 * Stdout, batched ({@link batchedWriter}). What is still pending when the process exits is
 * written synchronously.
 */
function batchedStdout(): BatchedWriter {
  return batchedWriter((bytes) => { process.stdout.write(bytes); });
}

/**
 * A logger writing one JSON object per line to `out`: a function given each line as it is
 * made (tests), or a {@link BatchedWriter} (default: stdout, batched; what is pending at exit
 * is written synchronously).
 */
export function createLogger(level: LogLevel, out: ((line: string) => void) | BatchedWriter = stdoutAtExit(batchedStdout())): Logger {
  const min = RANK[level];
  // The time text is made once per millisecond (a busy server logs many lines per ms).
  let lastMs = NaN;
  let lastTime = '';
  const batched = typeof out === 'function' ? null : out;
  const write = typeof out === 'function' ? out : out.write;
  // Access lines with batched output are written as bytes straight into the batch buffer
  // (docs/configuration.md#logs): the time text once per millisecond, the method/route/status
  // text once per route and status, the id and the duration as bytes — no string per line.
  let prefixTime = '';
  let prefix = Buffer.alloc(0);
  // By route, then method (the route's own, or HEAD for a GET route), then status.
  const middles = new Map<string, Map<string, Array<Buffer | undefined>>>();
  const middleOf = (method: string, route: string, status: number): Buffer => {
    // A route's template is ours (bounded); an unmatched request's method is the client's: not kept.
    if (route === '-') return Buffer.from(`,"method":"${method}","route":"-","status":${status},"durationMs":`, 'latin1');
    let byMethod = middles.get(route);
    if (byMethod === undefined) middles.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = []));
    return (byStatus[status] ??= Buffer.from(`,"method":"${method}","route":"${route}","status":${status},"durationMs":`, 'latin1'));
  };
  // The time text, made once per millisecond (a busy server logs many lines per ms).
  const timeText = (): string => {
    const ms = Date.now();
    if (ms !== lastMs) { lastMs = ms; lastTime = new Date(ms).toISOString(); }
    return lastTime;
  };
  // `{"time":…,"level":…,"msg":…,<members>}`; callers' fields never use the names time, level or msg.
  const line = (lvl: LogLevel, msg: string, members: string) => {
    if (RANK[lvl] < min) return;
    write(`{"time":"${timeText()}","level":"${lvl}","msg":${JSON.stringify(msg)}${members === '' ? '' : ','}${members}}\n`);
  };
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < min) return;
    const rest = fields === undefined ? '{}' : JSON.stringify(fields);
    line(lvl, msg, rest.slice(1, -1));
  };
  const request = (requestId: string, method: string, route: string, status: number, durationMs: number): void => {
    if (RANK.info < min) return;
    if (batched !== null && requestId.length <= 1024 && durationMs >= 0 && durationMs < 1e9) {
      const time = timeText();
      if (time !== prefixTime) {
        prefixTime = time;
        prefix = Buffer.from(`{"time":"${time}","level":"info","msg":"request","requestId":"`, 'latin1');
      }
      const middle = middleOf(method, route, status);
      const n = requestId.length;
      // prefix, id, '"', middle, at most 12 digits and a point, '}\n'
      const buf = batched.reserve(prefix.length + n + 1 + middle.length + 16);
      let at = batched.used;
      buf.set(prefix, at);
      at += prefix.length;
      // One byte per character while the id needs no JSON escape (printable ASCII but " and \);
      // any other id is written as text below (nothing is committed until the line is whole).
      let i = 0;
      for (; i < n; i++) {
        const c = requestId.charCodeAt(i);
        if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) break;
        buf[at++] = c;
      }
      if (i === n) {
        buf[at++] = 0x22; // "
        buf.set(middle, at);
        at = writeHundredths(buf, at + middle.length, Math.round(durationMs * 100));
        buf[at++] = 0x7d; // }
        buf[at++] = 0x0a; // \n
        batched.commit(at);
        return;
      }
    }
    line('info', 'request', `"requestId":${NEEDS_ESCAPE.test(requestId) ? JSON.stringify(requestId) : `"${requestId}"`},"method":"${method}","route":"${route}","status":${status},"durationMs":${durationMs}`);
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

/** `out`, whose pending lines are written synchronously at exit. */
function stdoutAtExit(out: BatchedWriter): BatchedWriter {
  process.once('exit', () => {
    const bytes = out.take();
    if (bytes.length > 0) { try { writeSync(1, bytes); } catch { /* stdout closed */ } }
  });
  return out;
}

/**
 * Writes `h / 100` (h a whole number, 0 ≤ h < 1e11) at `at` as JSON writes that number —
 * `3`, `1.5`, `0.07`, `12.34`: the shortest form, no trailing zero — and returns the end.
 */
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
