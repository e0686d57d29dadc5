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
   * /template` or `-`, nothing JSON escapes), `status`, `durationMs`. With batched output its
   * fields are kept in columns and the lines made together, in order, before any other line
   * and at least every {@link LOG_FLUSH_MS} — not one string per request on the request path.
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
    if (!armed) { armed = true; timer(() => { if (armed) flush(); }, LOG_FLUSH_MS); }
  };
  return { write, flush, take, timer };
}

/** Runs `fn` once after `ms` wall ms (unref'd: it never keeps the process alive). */
export type Timer = (fn: () => void, ms: number) => void;
const defaultTimer: Timer = (fn, ms) => { setTimeout(fn, ms).unref(); };

/** A {@link batchedWriter}: `write` a line, `flush` what is pending, `take` it (at exit); its `timer`. */
export interface BatchedWriter { write: (line: string) => void; flush: () => void; take: () => Buffer; timer: Timer }

/** Access lines kept as fields before they are made (see {@link Logger.request}). */
const MAX_PENDING_REQUESTS = 512;
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
  const direct = typeof out === 'function' ? out : out.write;
  // Access lines kept as fields (batched output only), made into lines together.
  const ids: string[] = [];
  const methods: string[] = [];
  const routes: string[] = [];
  const statuses = new Uint16Array(MAX_PENDING_REQUESTS);
  const durations = new Float64Array(MAX_PENDING_REQUESTS);
  const times = new Float64Array(MAX_PENDING_REQUESTS);
  let pending = 0;
  let armed = false;
  const makePending = (): void => {
    armed = false;
    const n = pending;
    pending = 0;
    // One text for the batch, written once: a write per line costs each line a call into
    // the encoder (docs/configuration.md#logs).
    let text = '';
    for (let i = 0; i < n; i++) {
      const ms = times[i];
      if (ms !== lastMs) { lastMs = ms; lastTime = new Date(ms).toISOString(); }
      const id = ids[i];
      text += `{"time":"${lastTime}","level":"info","msg":"request","requestId":${NEEDS_ESCAPE.test(id) ? JSON.stringify(id) : `"${id}"`},"method":"${methods[i]}","route":"${routes[i]}","status":${statuses[i]},"durationMs":${durations[i]}}\n`;
    }
    ids.length = 0; methods.length = 0; routes.length = 0;
    if (n > 0) direct(text);
  };
  // Every other line goes after the access lines before it.
  const write = batched === null ? direct : (l: string): void => { if (pending > 0) makePending(); direct(l); };
  if (batched !== null) exitHooks.set(batched, makePending);
  // `{"time":…,"level":…,"msg":…,<members>}`; callers' fields never use the names time, level or msg.
  const line = (lvl: LogLevel, msg: string, members: string) => {
    if (RANK[lvl] < min) return;
    const ms = Date.now();
    if (ms !== lastMs) { lastMs = ms; lastTime = new Date(ms).toISOString(); }
    write(`{"time":"${lastTime}","level":"${lvl}","msg":${JSON.stringify(msg)}${members === '' ? '' : ','}${members}}\n`);
  };
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < min) return;
    const rest = fields === undefined ? '{}' : JSON.stringify(fields);
    line(lvl, msg, rest.slice(1, -1));
  };
  const request = (requestId: string, method: string, route: string, status: number, durationMs: number): void => {
    if (RANK.info < min) return;
    if (batched === null) {
      line('info', 'request', `"requestId":${NEEDS_ESCAPE.test(requestId) ? JSON.stringify(requestId) : `"${requestId}"`},"method":"${method}","route":"${route}","status":${status},"durationMs":${durationMs}`);
      return;
    }
    const i = pending++;
    ids.push(requestId);
    methods.push(method);
    routes.push(route);
    statuses[i] = status;
    durations[i] = durationMs;
    times[i] = Date.now();
    if (pending === MAX_PENDING_REQUESTS) makePending();
    else if (!armed) { armed = true; batched.timer(() => { if (armed) { makePending(); batched.flush(); } }, LOG_FLUSH_MS); }
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

/** Per batched output, what makes its pending access lines (run at exit before the output is taken). */
const exitHooks = new WeakMap<BatchedWriter, () => void>();

/** `out`, whose pending lines (access lines kept as fields included) are written synchronously at exit. */
function stdoutAtExit(out: BatchedWriter): BatchedWriter {
  process.once('exit', () => {
    exitHooks.get(out)?.();
    const bytes = out.take();
    if (bytes.length > 0) { try { writeSync(1, bytes); } catch { /* stdout closed */ } }
  });
  return out;
}

/** A logger that drops everything; for tests and the CLI. */
export const silentLogger: Logger = createLogger('error', () => {});
