/**
 * Test harness for the real processes: `node dist/server.js` as a child on PORT=0 over a temp
 * data dir, and `node dist/cli.js`. Everything waits on events (a "listening" line, a key on
 * stderr, the child's exit) with a bounded timeout; nothing sleeps on the clock.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SERVER_JS = fileURLToPath(new URL('../../dist/server.js', import.meta.url));
export const CLI_JS = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** The settings of docs/configuration.md#settings; a child never inherits them from the test's environment. */
const SETTINGS = ['PORT', 'HOST', 'DATA_DIR', 'LOG_LEVEL', 'RATE_LIMIT_PER_MINUTE', 'RATE_LIMIT_BURST', 'SYNC', 'BOOTSTRAP',
  'SOURCE_FETCH_ALLOW_PRIVATE', 'SOURCE_FETCH_TIMEOUT_MS', 'SOURCE_FETCH_MAX_BYTES', 'SOURCE_CRAWL_MAX_PAGES', 'GITHUB_API_URL',
  'MAX_CONNECTIONS', 'HEADERS_TIMEOUT_MS', 'REQUEST_TIMEOUT_MS', 'KEEP_ALIVE_TIMEOUT_MS', 'SHUTDOWN_TIMEOUT_MS',
  'TRUST_PROXY', 'MAX_CONNECTIONS_PER_ADDRESS', 'INGEST_TIMEOUT_MS',
  'WEBHOOK_ALLOW_PRIVATE', 'WEBHOOK_TIMEOUT_MS', 'WEBHOOK_RETRY_SCHEDULE', 'WEBHOOK_CONCURRENCY', 'WEBHOOK_CONCURRENCY_PER_ENDPOINT'];

const KEY_LINE = /API key \(shown only this once — keep it somewhere safe\): (svck_[0-9A-Za-z]+)/;

export function tempDir(prefix = 'sw-child-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...process.env };
  for (const k of SETTINGS) delete out[k];
  for (const [k, v] of Object.entries(env)) { if (v === undefined) delete out[k]; else out[k] = v; }
  return out;
}

export interface Exit { code: number | null; signal: NodeJS.Signals | null }

/** A spawned server process and everything it printed so far. */
export class ServerProcess {
  stdout = '';
  stderr = '';
  readonly exited: Promise<Exit>;
  exit: Exit | null = null;
  private waiters: Array<() => void> = [];

  constructor(readonly proc: ChildProcess, readonly dataDir: string) {
    proc.stdout!.setEncoding('utf8').on('data', (d: string) => { this.stdout += d; this.poke(); });
    proc.stderr!.setEncoding('utf8').on('data', (d: string) => { this.stderr += d; this.poke(); });
    // 'close' comes after the exit and after both pipes ended, so the output is complete.
    this.exited = new Promise((resolve) => proc.once('close', (code, signal) => { this.exit = { code, signal }; this.poke(); resolve(this.exit); }));
  }

  get pid(): number { return this.proc.pid!; }

  private poke(): void { const w = this.waiters; this.waiters = []; for (const f of w) f(); }

  /**
   * Resolves with `pick()`'s first non-undefined value, re-checked whenever the child prints
   * or exits. Rejects when the child exits first or after `timeoutMs`.
   */
  waitFor<T>(what: string, pick: () => T | undefined, timeoutMs = 15_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`)), timeoutMs);
      const check = () => {
        let v: T | undefined;
        try { v = pick(); } catch (e) { clearTimeout(timer); reject(e); return; }
        if (v !== undefined) { clearTimeout(timer); resolve(v); return; }
        if (this.exit) { clearTimeout(timer); reject(new Error(`server exited (${JSON.stringify(this.exit)}) before ${what}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`)); return; }
        this.waiters.push(check);
      };
      check();
    });
  }

  /** Parsed JSON lines of stdout (lines that do not parse are returned as `{ unparsed }`). */
  logLines(): Array<Record<string, unknown>> {
    return this.stdout.split('\n').filter((l) => l.trim() !== '').map((l) => {
      try { return JSON.parse(l) as Record<string, unknown>; } catch { return { unparsed: l }; }
    });
  }

  /** The first log line of stdout whose `msg` is `msg`, once it is printed. */
  waitForLine(msg: string): Promise<Record<string, unknown>> {
    return this.waitFor(`the "${msg}" line`, () => this.logLines().find((l) => l.msg === msg));
  }

  /** The bootstrap key, once it is on stderr. */
  waitForKey(): Promise<string> {
    return this.waitFor('the bootstrap key on stderr', () => KEY_LINE.exec(this.stderr)?.[1]);
  }

  /** Sends `signal` (default SIGTERM) and resolves with the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<Exit> {
    if (!this.exit) this.proc.kill(signal);
    return this.exited;
  }
}

/** A server that printed its "listening" line. */
export type RunningChild = ServerProcess & { port: number; url: string };

export interface SpawnOptions { dataDir?: string; env?: Record<string, string | undefined>; cwd?: string }

/** Spawns `node dist/server.js`; `env` is applied over PORT=0, DATA_DIR=dataDir, SYNC=none. */
export function spawnServer(opts: SpawnOptions = {}): ServerProcess {
  const dataDir = opts.dataDir ?? tempDir();
  const proc = spawn(process.execPath, [SERVER_JS], {
    cwd: opts.cwd,
    env: childEnv({ PORT: '0', DATA_DIR: dataDir, SYNC: 'none', ...opts.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new ServerProcess(proc, dataDir);
}

/** Spawns a server and waits for its "listening" line. */
export async function startServer(opts: SpawnOptions = {}): Promise<RunningChild> {
  const child = spawnServer(opts);
  const port = Number((await child.waitForLine('listening')).port);
  return Object.assign(child, { port, url: `http://127.0.0.1:${port}` });
}

/** Runs a server that is expected to stop by itself; resolves with its exit and output. */
export async function runServerToExit(opts: SpawnOptions = {}, timeoutMs = 15_000): Promise<Exit & { stdout: string; stderr: string }> {
  const child = spawnServer(opts);
  const exit = await child.waitFor('the server to exit', () => child.exit ?? undefined, timeoutMs).catch(async (e) => { await child.stop('SIGKILL'); throw e; });
  return { ...exit, stdout: child.stdout, stderr: child.stderr };
}

/** A CLI run: exit code, output, and stdout parsed as JSON (`J`, as the caller claims; undefined when it does not parse). */
export interface CliResult<J = unknown> { code: number | null; stdout: string; stderr: string; json: J }

/** Runs `node dist/cli.js ...args --data-dir dataDir`; `json` is stdout parsed (undefined when it does not parse). */
export function runCli<J = unknown>(dataDir: string | null, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<CliResult<J>> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const argv = dataDir === null ? args : [...args, '--data-dir', dataDir];
  const proc = spawn(process.execPath, [CLI_JS, ...argv], { cwd: opts.cwd, env: childEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
  proc.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`cli ${args.join(' ')} timed out\nstderr: ${stderr}`)); }, timeoutMs);
    proc.once('close', (code) => {
      clearTimeout(timer);
      let json: unknown;
      try { json = JSON.parse(stdout); } catch { json = undefined; }
      resolve({ code, stdout, stderr, json: json as J });
    });
  });
}

/** An answer: `body` is the parsed JSON (undefined when the text is not JSON), typed `B` as the caller claims. */
export interface HttpResult<B = unknown> { status: number; headers: Headers; body: B; text: string }

/** fetch with a JSON body and a bearer key; the response body parsed as JSON when it is. */
export async function call<B = unknown>(base: string, method: string, path: string, o: { key?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<HttpResult<B>> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.key !== undefined) headers.Authorization = `Bearer ${o.key}`;
  let body: string | undefined;
  if (o.body !== undefined) { body = JSON.stringify(o.body); headers['Content-Type'] ??= 'application/json'; }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
  return { status: res.status, headers: res.headers, body: parsed as B, text };
}

/** A pid that no process has any more (a child that already ran to its end). */
export async function deadPid(): Promise<number> {
  const proc = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  const pid = proc.pid!;
  await new Promise((r) => proc.once('close', r));
  return pid;
}
