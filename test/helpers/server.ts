/**
 * Test harness: a real server on port 0 over a temp data dir, with an injected clock, and a
 * `call` helper around real `fetch`. Every test file starts its own servers.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/core/config.js';
import { ManualClock } from '../../src/core/clock.js';
import { silentLogger, createLogger, type Logger } from '../../src/core/logger.js';
import { startServer, type RunningServer, type ServerDeps } from '../../src/server/start.js';
import type { StoreFs } from '../../src/store/fs.js';
import { assertContract, contractDocument } from './contract.js';

export interface TestServer extends RunningServer {
  /** The bootstrap key (all scopes) of the bootstrap workspace. */
  key: string;
  workspaceId: string;
  clock: ManualClock;
  dataDir: string;
  /** Lines the logger wrote (when `captureLogs`). */
  logs: string[];
  /**
   * fetch against the server: JSON body in, parsed JSON body out. `B` types the parsed body
   * (test/helpers/answers.ts); it is `unknown` unless the caller says what it expects.
   */
  call<B = unknown>(method: string, path: string, opts?: CallOptions): Promise<CallResult<B>>;
  /** Creates another key in `workspaceId` (default: the bootstrap workspace). */
  newKey(opts?: { scopes?: string; workspaceId?: string; expiresAt?: string }): Promise<string>;
  /** Creates another workspace and a full-access key for it. */
  newWorkspace(name?: string): Promise<{ workspaceId: string; key: string }>;
  /** A fresh workspace whose `call` uses its full-access key unless told otherwise. */
  space(): Promise<Space>;
  /** The bootstrap owner's activation link (settings area, docs/web.md#users); empty with WEB_UI=false. */
  ownerLink: string;
  /**
   * Adds a secret the test made or saw (a password, a session cookie, an activation token, a
   * key shown on the keys page): like the API keys, it must never be found in a log line or
   * a data-dir file when the server closes.
   */
  watch(secret: string): void;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  /** Sent as is (not JSON-encoded) when given. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

export interface Space { workspaceId: string; key: string; call<B = unknown>(method: string, path: string, opts?: CallOptions): Promise<CallResult<B>> }

/** An answer: `body` is the parsed JSON (undefined when the text is not JSON), typed `B` as the caller claims. */
export interface CallResult<B = unknown> { status: number; headers: Headers; body: B; text: string }

/**
 * A webhook signing secret (`whsec_` + base64 of 32 bytes, docs/api.md#webhook-endpoint-object):
 * no answer but create and rotate-secret, no log line and no file may hold one.
 */
export const WEBHOOK_SECRET = /whsec_[A-Za-z0-9+/]{43}=/;

export function tempDir(prefix = 'sw-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Starts a server; `env` overrides configuration as the environment would. */
export async function startTestServer(opts: { env?: Record<string, string>; clock?: ManualClock; fs?: StoreFs; dataDir?: string; captureLogs?: boolean; compactionSlack?: number; output?: ServerDeps['output']; webhookRandom?: () => number } = {}): Promise<TestServer> {
  const dataDir = opts.dataDir ?? tempDir();
  const config: Config = loadConfig({ PORT: '0', DATA_DIR: dataDir, SYNC: 'none', ...opts.env });
  const clock = opts.clock ?? new ManualClock();
  const logs: string[] = [];
  // Logs are always kept (debug and up when asked, else info and up) so that close() can scan
  // them for secrets.
  const logger: Logger = createLogger(opts.captureLogs ? 'debug' : 'info', (l) => logs.push(l));
  /**
   * Every API key, credential secret, activation token, session token and password the test
   * has made or sent: none may ever be logged or stored (and the API keys and credentials never
   * come back in an API answer).
   */
  const secrets = new Set<string>();
  const watchBody = (b: unknown) => {
    const secret = (b as { auth?: { secret?: unknown } } | undefined)?.auth?.secret;
    if (typeof secret === 'string' && secret.length >= 8) secrets.add(secret);
  };
  const leaked = (text: string) => [...secrets].find((x) => text.includes(x));
  let announced = '';
  const running = await startServer(config, { clock, logger, fs: opts.fs, announce: (t) => { announced += t; }, compactionSlack: opts.compactionSlack, output: opts.output, webhookRandom: opts.webhookRandom });
  const key = /svck_[0-9A-Za-z]+/.exec(announced)?.[0] ?? '';
  const ownerLink = /https?:\/\/\S+\/settings\/activate\?token=([0-9A-Za-z]+)/.exec(announced);
  if (ownerLink) secrets.add(ownerLink[1]);
  const workspaceId = /\(([0-9a-f-]{36})\)/.exec(announced)?.[1] ?? '';
  const call = async <B = unknown>(method: string, path: string, o: CallOptions = {}): Promise<CallResult<B>> => {
    const headers: Record<string, string> = { ...o.headers };
    const k = o.key === undefined ? key : o.key;
    if (k !== null) headers.Authorization = `Bearer ${k}`;
    let body: string | Buffer | undefined;
    if (o.raw !== undefined) body = o.raw;
    else if (o.body !== undefined) { body = JSON.stringify(o.body); headers['Content-Type'] ??= 'application/json'; watchBody(o.body); }
    const res = await fetch(running.url + path, { method, headers, body: typeof body === "string" || body === undefined ? body : new Uint8Array(body) });
    const text = await res.text();
    let parsed: unknown;
    try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
    // Every answer the suite receives is checked against the server's own OpenAPI document.
    assertContract(contractDocument(running.routes), method, path, { status: res.status, headers: res.headers, text });
    // And no answer ever holds a full API key or a credential secret (docs/security.md#secrets-in-answers-and-logs).
    const found = leaked(text + JSON.stringify([...res.headers]));
    if (found) throw new Error(`SECRET LEAK: the answer to ${method} ${path} contains a key or credential (${found.slice(0, 6)}…)`);
    // A webhook signing secret (`whsec_…`) is shown only by the create and rotate-secret answers;
    // once shown, it must never appear again: in another answer, a log line or a file.
    const showsSecret = method === 'POST' && /^\/api\/v1\/webhook-endpoints(\/[^/?]+\/rotate-secret)?(\?.*)?$/.test(path);
    if (!showsSecret && WEBHOOK_SECRET.test(text)) throw new Error(`SECRET LEAK: the answer to ${method} ${path} contains a webhook secret (whsec_…)`);
    const shown = (parsed as { webhookEndpoint?: { secret?: unknown } } | undefined)?.webhookEndpoint?.secret;
    if (showsSecret && typeof shown === 'string') secrets.add(shown);
    return { status: res.status, headers: res.headers, body: parsed as B, text };
  };
  const newKey = async (o: { scopes?: string; workspaceId?: string; expiresAt?: string } = {}) => {
    const k = (await running.admin.createKey({ workspace: o.workspaceId ?? workspaceId, scopes: o.scopes, expiresAt: o.expiresAt })).key;
    secrets.add(k);
    return k;
  };
  if (key) secrets.add(key);
  /** On close: no file of the data dir and no log line holds a key or a credential secret. */
  const close = async () => {
    await running.close();
    for (const line of logs) {
      if (WEBHOOK_SECRET.test(line)) throw new Error(`SECRET LEAK: a log line contains a webhook secret: ${line.slice(0, 200)}`);
      const found = leaked(line);
      if (found) throw new Error(`SECRET LEAK: a log line contains a key or credential (${found.slice(0, 6)}…): ${line.slice(0, 200)}`);
    }
    for (const file of walk(dataDir)) {
      const content = readFileSync(file, 'latin1');
      if (WEBHOOK_SECRET.test(content)) throw new Error(`SECRET LEAK: ${file} contains a webhook secret (whsec_…)`);
      const found = leaked(content);
      if (found) throw new Error(`SECRET LEAK: ${file} contains a key or credential (${found.slice(0, 6)}…)`);
    }
  };
  const newWorkspace = async (name = 'Other') => {
    const ws = await running.admin.createWorkspace(name);
    return { workspaceId: ws.id, key: await newKey({ workspaceId: ws.id }) };
  };
  const space = async (): Promise<Space> => {
    const w = await newWorkspace();
    return { ...w, call: <B = unknown>(m: string, p: string, o: CallOptions = {}) => call<B>(m, p, { key: w.key, ...o }) };
  };
  const watch = (secret: string) => { if (secret.length >= 8) secrets.add(secret); };
  return { ...running, close, key, workspaceId, clock, dataDir, logs, call, newKey, newWorkspace, space, ownerLink: ownerLink?.[0] ?? '', watch };
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}
