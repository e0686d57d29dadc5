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
   * The access log's line of one answered request, at `info`: `requestId` (any printable
   * ASCII; escaped when it holds `"` or `\\`), `method` (an HTTP token), `route` (`METHOD
   * /template`, or `-`; no character JSON escapes), `status`, `durationMs` (ms, two decimals).
   * The same text as {@link line} with those members, copied into the output buffer piece by
   * piece when the output is batched stdout — no line string made per request
   * (docs/configuration.md#logs).
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
 * A line writer that batches: lines are copied as UTF-8 into a buffer that goes to `sink` in
 * one write every {@link LOG_FLUSH_MS}, or as soon as it holds {@link LOG_FLUSH_BYTES} — not once
 * per line, nor once per event-loop turn: stdout on a pipe is a synchronous `write` on Linux,
 * each one a system call that also wakes the reader, which cost a busy server ~15 % of its reads
 * (docs/configuration.md#logs). `sink` owns the buffer it is given. `timer` is injected by tests.
 */
export function batchedWriter(sink: (bytes: Buffer) => void, timer: (fn: () => void, ms: number) => void = (fn, ms) => { setTimeout(fn, ms).unref(); }): BatchedWriter {
  let buf = Buffer.allocUnsafe(LOG_FLUSH_BYTES);
  let used = 0;
  let armed = false;
  const arm = (): void => { if (!armed) { armed = true; timer(() => { if (armed) flush(); }, LOG_FLUSH_MS); } };
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
  const reserve = (max: number): Buffer => {
    if (used > 0 && max > LOG_FLUSH_BYTES - used) flush();
    return buf;
  };
  const commit = (end: number): void => { used = end; arm(); };
  return { write, flush, take, reserve, get at() { return used; }, commit };
}

/**
 * A {@link batchedWriter}: lines as strings (`write`), or written in place — `reserve(max)`
 * gives the buffer with at least `max` bytes free from `at` on (at most
 * {@link LOG_FLUSH_BYTES}), the caller writes there and `commit`s the new end.
 */
export interface BatchedWriter {
  write: (line: string) => void;
  flush: () => void;
  take: () => Buffer;
  reserve: (max: number) => Buffer;
  readonly at: number;
  commit: (end: number) => void;
}

/**
 * Stdout, batched ({@link batchedWriter}). What is still pending when the process exits is
 * written synchronously.
 */
function batchedStdout(): BatchedWriter {
  const out = batchedWriter((bytes) => { process.stdout.write(bytes); });
  process.once('exit', () => { const bytes = out.take(); if (bytes.length > 0) { try { writeSync(1, bytes); } catch { /* stdout closed */ } } });
  return out;
}

/** A request id that JSON must escape, or that is not ASCII (written through a string). */
const NEEDS_ESCAPE = /["\\\x00-\x1f\x7f-\uffff]/;
/** The longest method and route the byte path takes (longer ones go through a string). */
const MAX_NAME = 512;

/**
 * A logger writing one JSON object per line to `out`: a function given each line as a string
 * (tests), or a {@link BatchedWriter} (default: stdout, batched), into whose buffer the access
 * log's lines are written in place.
 */
export function createLogger(level: LogLevel, out: ((line: string) => void) | BatchedWriter = batchedStdout()): Logger {
  const min = RANK[level];
  const write = typeof out === 'function' ? out : out.write;
  const bytes = typeof out === 'function' ? null : out;
  // The time text is made once per millisecond (a busy server logs many lines per ms).
  let lastMs = NaN;
  let lastTime = '';
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
  // The access line's head up to the request id's value, per millisecond; and per method and
  // route, the bytes from the end of the id to the status (bounded: routes are few, methods tokens).
  let headMs = NaN;
  let head = Buffer.alloc(0);
  const middles = new Map<string, Buffer>();
  const middleOf = (method: string, route: string): Buffer => {
    const key = method + ' ' + route;
    let m = middles.get(key);
    if (m === undefined) {
      if (middles.size >= 1024) middles.clear();
      middles.set(key, (m = Buffer.from(`,"method":"${method}","route":"${route}","status":`, 'latin1')));
    }
    return m;
  };
  const request = (requestId: string, method: string, route: string, status: number, durationMs: number): void => {
    if (RANK.info < min) return;
    const escape = NEEDS_ESCAPE.test(requestId);
    if (bytes === null || escape || method.length + route.length > MAX_NAME) {
      const id = escape ? JSON.stringify(requestId) : `"${requestId}"`;
      line('info', 'request', `"requestId":${id},"method":"${method}","route":"${route}","status":${status},"durationMs":${durationMs}`);
      return;
    }
    const ms = Date.now();
    if (ms !== headMs) {
      if (ms !== lastMs) { lastMs = ms; lastTime = new Date(ms).toISOString(); }
      headMs = ms;
      head = Buffer.from(`{"time":"${lastTime}","level":"info","msg":"request","requestId":"`, 'latin1');
    }
    const middle = middleOf(method, route);
    const buf = bytes.reserve(head.length + requestId.length + middle.length + 64);
    let at = bytes.at;
    at += head.copy(buf, at);
    at += buf.write(requestId, at, 'latin1');
    buf[at++] = 0x22; // "
    at += middle.copy(buf, at);
    at += buf.write(`${status},"durationMs":${durationMs}}\n`, at, 'latin1');
    bytes.commit(at);
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

/** A logger that drops everything; for tests and the CLI. */
export const silentLogger: Logger = createLogger('error', () => {});
