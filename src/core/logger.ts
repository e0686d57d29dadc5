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

/**
 * Stdout, batched: lines of one event-loop turn go out in one write (a busy server logs a line
 * per request; a write per line would cost a syscall each). What is still buffered when the
 * process exits is written synchronously.
 */
function batchedStdout(): (line: string) => void {
  let pending: string[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    process.stdout.write(text);
  };
  process.once('exit', () => { if (pending.length) { try { writeSync(1, pending.join('')); } catch { /* stdout closed */ } pending = []; } });
  return (line) => {
    if (pending.length === 0) setImmediate(flush);
    pending.push(line);
  };
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
