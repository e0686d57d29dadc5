/**
 * An HTTP client for the settings area (docs/web.md), like a browser without JavaScript: real
 * fetch with redirects handled by hand, a cookie jar, the `Origin` header a browser sends on a
 * form POST, and the page's `csrf` field read back. Every session token, pre-session nonce,
 * password and key secret it sees is handed to the server harness's secrets scan, and every
 * answer it receives goes through that scan like an API answer (`TestServer.scan`,
 * docs/security.md#secrets-in-answers-and-logs).
 */
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './server.js';
import type { KeyRec } from '../../src/store/store.js';

export const OWNER = 'owner@localhost';
export const PASSWORD = 'correct horse battery staple';
export const CSP = "default-src 'self'; frame-ancestors 'none'; form-action 'self'";

/** Runs `fn` with a test server (logs captured), closing it (and its secrets scan) after. */
export async function withServer(fn: (srv: TestServer) => Promise<void>, env?: Record<string, string>): Promise<void> {
  const srv = await startTestServer({ env, captureLogs: true });
  try { await fn(srv); } finally { await srv.close(); }
}

/** A client signed in as the bootstrap owner (through its activation link). */
export async function owner(srv: TestServer): Promise<WebClient> {
  const c = new WebClient(srv);
  const keys = await c.activateAndSignIn(srv.ownerLink, OWNER, PASSWORD);
  assert.equal(keys.status, 200);
  return c;
}

/** A user of workspace `workspace` made through the admin operation, signed in. */
export async function userOf(srv: TestServer, workspace: string, email: string): Promise<WebClient> {
  const u = await srv.admin.execute('user.create', { workspace, email }) as { activationUrl: string };
  const c = new WebClient(srv);
  await c.activateAndSignIn(u.activationUrl, email, PASSWORD);
  return c;
}

/** The three security headers every settings-area answer carries (docs/security.md#headers). */
export function assertSecurityHeaders(p: WebPage, what: string): void {
  assert.equal(p.headers.get('content-security-policy'), CSP, what);
  assert.equal(p.headers.get('x-content-type-options'), 'nosniff', what);
  assert.equal(p.headers.get('referrer-policy'), 'same-origin', what);
}

/** The keys of a workspace (default: the bootstrap one), as stored. */
export const keysOf = (srv: TestServer, ws = srv.workspaceId): KeyRec[] => [...srv.store.system.table('key').values()].filter((k) => k.workspaceId === ws);

/** One answer: status, headers, the body text, and the `Location` of a redirect. */
export interface WebPage { status: number; headers: Headers; text: string; location: string | null; setCookies: string[] }

/** The value of the first `<input name="csrf">` of a page. */
export function csrfOf(text: string): string {
  const m = /name="csrf" value="([^"]*)"/.exec(text);
  if (!m) throw new Error(`no csrf field in the page:\n${text.slice(0, 400)}`);
  return m[1];
}

/** The full `svck_` secret shown on a new-key page. */
export function shownKey(text: string): string {
  const m = /id="secret" value="(svck_[0-9A-Za-z]{43})"/.exec(text);
  if (!m) throw new Error('no key shown on the page');
  return m[1];
}

export class WebClient {
  readonly jar = new Map<string, string>();
  constructor(readonly server: TestServer) {}

  /** The `Origin` a browser sends for our pages. */
  get origin(): string { return new URL(this.server.url).origin; }

  /** The Cookie header of the jar. */
  private cookieHeader(): string | undefined {
    return this.jar.size ? [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ') : undefined;
  }

  private remember(res: Response): string[] {
    const set = res.headers.getSetCookie();
    for (const c of set) {
      const [pair, ...attrs] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim(), value = pair.slice(eq + 1).trim();
      const gone = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (gone || value === '') this.jar.delete(name); else { this.jar.set(name, value); this.server.watch(value); }
    }
    return set;
  }

  /**
   * A request with the jar's cookies; no redirect is followed. The answer goes through the
   * server's secrets scan. @throws Error `SECRET LEAK: …`
   */
  async request(method: string, path: string, o: { body?: string; headers?: Record<string, string> } = {}): Promise<WebPage> {
    const headers: Record<string, string> = { ...o.headers };
    const cookie = this.cookieHeader();
    if (cookie && headers.Cookie === undefined) headers.Cookie = cookie;
    const res = await fetch(this.server.url + path, { method, headers, body: o.body, redirect: 'manual' });
    const setCookies = this.remember(res);
    const text = await res.text();
    this.server.scan({ method, target: path, status: res.status, headers: res.headers, text });
    return { status: res.status, headers: res.headers, text, location: res.headers.get('location'), setCookies };
  }

  get(path: string, headers?: Record<string, string>): Promise<WebPage> { return this.request('GET', path, { headers }); }

  /**
   * POSTs a form as a browser does (urlencoded, `Origin` of the server unless `origin` says
   * otherwise: null leaves it out). Fields named `password` are handed to the secrets scan.
   */
  post(path: string, fields: Record<string, string | string[]>, o: { origin?: string | null; headers?: Record<string, string> } = {}): Promise<WebPage> {
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) form.append(k, x);
    if (typeof fields.password === 'string') this.server.watch(fields.password);
    const headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded', ...o.headers };
    const origin = o.origin === undefined ? this.origin : o.origin;
    if (origin !== null) headers.Origin = origin;
    return this.request('POST', path, { body: form.toString(), headers });
  }

  /** GETs `path` and POSTs `fields` to `action` (default: `path`) with the page's csrf token. */
  async submit(path: string, fields: Record<string, string | string[]>, action = path): Promise<WebPage> {
    const page = await this.get(path);
    return this.post(action, { csrf: csrfOf(page.text), ...fields });
  }

  /** Sets the password through activation `link` (a full URL) and signs in; returns the keys page. */
  async activateAndSignIn(link: string, email: string, password: string): Promise<WebPage> {
    const u = new URL(link);
    this.server.watch(u.searchParams.get('token') ?? '');
    const done = await this.submit(u.pathname + u.search, { password });
    if (done.status !== 303) throw new Error(`activation answered ${done.status}: ${done.text.slice(0, 300)}`);
    return this.signIn(email, password);
  }

  /** Signs in; returns the keys page. */
  async signIn(email: string, password: string): Promise<WebPage> {
    const r = await this.submit('/settings/login', { email, password });
    if (r.status !== 303) throw new Error(`sign-in answered ${r.status}: ${r.text.slice(0, 300)}`);
    return this.get(r.location!);
  }
}
