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
import type { StoreFs } from '../../src/store/log/fs.js';
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
  /**
   * The secrets scan of one answer ({@link scanAnswer}) against this server's watched secrets;
   * `call` and the settings-area client (test/helpers/web.ts) send every answer through it.
   * @throws Error `SECRET LEAK: …`
   */
  scan(answer: Answer): void;
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

/** An API key (docs/security.md#api-keys): `svck_` and 43 base62 characters. */
export const API_KEY = /svck_[0-9A-Za-z]{43}/;

/** One answer as the secrets scan sees it: the request's method and target (path and query), the answer's status, headers and body text. */
export interface Answer { method: string; target: string; status: number; headers: Headers; text: string }

/**
 * The secrets scan of one answer, for the API (`call`) and the settings area's pages alike
 * (docs/security.md#secrets-in-answers-and-logs): the body and every header but `Set-Cookie`
 * (which carries the client's own new session or pre-session token by design,
 * docs/security.md#sessions) must hold none of the `watched` secrets (API keys, credential
 * secrets, activation and session tokens, passwords, secrets shown earlier), no API key
 * (`svck_…`) and no webhook signing secret (`whsec_…`), except in the one answer that shows
 * each by design:
 *
 * - the new key, on the 2xx answer to `GET /settings/keys/{id}/created`, the page the create form redirects to
 *   (docs/web.md#shown-once);
 * - the signing secret, on the 2xx answers to `POST /api/v1/webhook-endpoints`,
 *   `POST /api/v1/webhook-endpoints/{id}/rotate-secret` and `GET /settings/webhooks/{id}/created`
 *   (docs/api.md#webhook-endpoint-object, docs/web.md#shown-once);
 * - the activation page's form posts back to its own address, so an answer to
 *   `/settings/activate?token=T` may hold T (the request's own URL, docs/web.md#users).
 *
 * A secret shown by design is added to `watched`: no later answer, log line or file may hold it.
 * @throws Error `SECRET LEAK: …` naming the request and the first characters of the secret.
 */
export function scanAnswer(watched: Set<string>, a: Answer): void {
  const q = a.target.indexOf('?');
  const path = q === -1 ? a.target : a.target.slice(0, q);
  const ok = a.status >= 200 && a.status < 300;
  const post = ok && a.method === 'POST', get = ok && a.method === 'GET';
  const showsKey = get && /^\/settings\/keys\/[^/]+\/created$/.test(path);
  const showsWebhookSecret = (post && /^\/api\/v1\/webhook-endpoints(\/[^/]+\/rotate-secret)?$/.test(path))
    || (get && /^\/settings\/webhooks\/[^/]+\/created$/.test(path));
  const ownToken = path === '/settings/activate' ? new URLSearchParams(q === -1 ? '' : a.target.slice(q + 1)).get('token') : null;
  const headers = [...a.headers].filter(([k]) => k.toLowerCase() !== 'set-cookie').map(([k, v]) => `${k}: ${v}`).join('\n');
  const text = `${a.text}\n${headers}`;
  const what = `the answer to ${a.method} ${path}`;
  const found = [...watched].find((x) => x !== ownToken && text.includes(x));
  if (found) throw new Error(`SECRET LEAK: ${what} contains a key or credential (${found.slice(0, 6)}…)`);
  if (!showsKey && API_KEY.test(text)) throw new Error(`SECRET LEAK: ${what} contains an API key (svck_…)`);
  if (!showsWebhookSecret && WEBHOOK_SECRET.test(text)) throw new Error(`SECRET LEAK: ${what} contains a webhook secret (whsec_…)`);
  // Shown once: from now on, like every secret the suite knows, it must never appear again.
  if (showsKey) for (const m of text.matchAll(new RegExp(API_KEY.source, 'g'))) watched.add(m[0]);
  if (showsWebhookSecret) for (const m of text.matchAll(new RegExp(WEBHOOK_SECRET.source, 'g'))) watched.add(m[0]);
}

export function tempDir(prefix = 'sw-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Starts a server; `env` overrides configuration as the environment would. */
/** The text of a `text/event-stream` answer up to its first blank line; then the stream is cancelled. */
async function firstFrame(res: Response): Promise<string> {
  const reader = res.body!.getReader();
  let text = '';
  while (!text.includes('\n\n')) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  await reader.cancel();
  return text;
}

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
    // An event stream stays open: its first frame (the retry line) is its text, then the client lets go.
    const text = (res.headers.get('content-type') ?? '').startsWith('text/event-stream') ? await firstFrame(res)
      : await res.text();
    let parsed: unknown;
    try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
    // Every answer the suite receives is checked against the server's own OpenAPI document.
    assertContract(contractDocument(running.routes), method, path, { status: res.status, headers: res.headers, text });
    // And no answer holds a secret, but where one is shown by design (docs/security.md#secrets-in-answers-and-logs).
    scanAnswer(secrets, { method, target: path, status: res.status, headers: res.headers, text });
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
  const scan = (answer: Answer) => scanAnswer(secrets, answer);
  return { ...running, close, key, workspaceId, clock, dataDir, logs, call, newKey, newWorkspace, space, ownerLink: ownerLink?.[0] ?? '', watch, scan };
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
