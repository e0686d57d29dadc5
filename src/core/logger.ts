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
export function batchedWriter(sink: (bytes: Buffer) => void, timer: (fn: () => void, ms: number) => void = (fn, ms) => { setTimeout(fn, ms).unref(); }): { write: (line: string) => void; flush: () => void; take: () => Buffer } {
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
  return { write, flush, take };
}

/**
 * Stdout, batched ({@link batchedWriter}). What is still pending when the process exits is
 * written synchronously.
 */
function batchedStdout(): (line: string) => void {
  const out = batchedWriter((bytes) => { process.stdout.write(bytes); });
  process.once('exit', () => { const bytes = out.take(); if (bytes.length > 0) { try { writeSync(1, bytes); } catch { /* stdout closed */ } } });
  return out.write;
}

/** A logger writing one JSON object per line to `write` (default: stdout, batched per turn). */
export function createLogger(level: LogLevel, write: (line: string) => void = batchedStdout()): Logger {
  const min = RANK[level];
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
  return {
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
