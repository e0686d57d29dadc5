/**
 * The fuzzer's pages (docs/web.md): requests to every route of the settings area and the public
 * docs, taken from the page table (`PAGE_ROUTES`, src/web/app.ts), with a signed-in session of
 * either workspace or none — GETs with odd query strings and path values, form POSTs with
 * missing, empty, huge, duplicated, unknown and mistyped fields, bodies that are not UTF-8, of
 * another media type, compressed, chunked or over 16 KiB, a missing, forged or other session's
 * csrf token, a wrong or absent Origin, a forged or absent session cookie, other methods
 * (mutations: pageMutators.ts).
 *
 * The oracle of a page answer (docs/security.md#settings-area), failures as {@link FailureKind}:
 * never a 5xx and never a hang; every answer, errors and redirects included, carries the
 * security headers (docs/security.md#headers); no answer holds a secret (the harness's scan,
 * `TestServer.scan`); a refused POST — and any GET — changes no record of either workspace nor
 * of the system log (keys, users…; a session's activity aside, docs/security.md#sessions); a
 * signed-in page shows no id of the other workspace; and where the dispatcher's order decides
 * it (docs/web.md#routes-and-forms): 404 for a path no page has, 405 for a method the page does
 * not take, 303 to the sign-in page without a session, then 415/413/400 for the form's body,
 * then 403 for its origin or its csrf token (docs/security.md#csrf).
 */
import { PAGE_ROUTES, type PageRoute } from '../../src/web/app.js';
import { hashKey, randomBase62 } from '../../src/auth/keys.js';
import { iso } from '../../src/core/clock.js';
import type { SessionRec } from '../../src/store/store.js';
import type { Rec } from '../../src/store/db.js';
import { CSP, csrfOf } from '../helpers/web.js';
import { NO_BODY, type Draft, type Plan, type WsTag } from './types.js';
import type { Fuzzer } from './fuzzer.js';
import { send, toHeaders, type HttpResponse, type Sent } from './transport.js';
import { plainCall } from './afterRun.js';
import { indexSizes, netChanges } from './oracle.js';
import { diffSizes, encodeComponent, show } from './util.js';
import { uniqueNumber } from './generate.js';
import { PAGE_MUTATORS, validFields } from './pageMutators.js';

/** The headers every answer of the settings area and the public docs carries, as docs/security.md#headers states them. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = { 'content-security-policy': CSP, 'x-content-type-options': 'nosniff', 'referrer-policy': 'same-origin' };

/** The largest form body (docs/web.md#routes-and-forms). */
export const FORM_LIMIT = 16 * 1024;
/** The largest add-source form (docs/web.md#routes-and-forms). */
export const ADD_SOURCE_LIMIT = 8 * 1024 * 1024;
/** The largest form of how an agent answers (docs/web.md#routes-and-forms). */
export const ANSWERING_LIMIT = 64 * 1024;
/** The form limit of `route`. */
export const formLimit = (route: PageRoute): number => route.name === '/settings/sources' ? ADD_SOURCE_LIMIT
  : route.name === '/settings/agents/{id}/answering' ? ANSWERING_LIMIT : FORM_LIMIT;

/** A signed-in browser of the run: its user, and the session cookie and csrf token it has now. */
export interface Browser { ws: WsTag; email: string; password: string; token: string; csrf: string }

/** What page requests are built from: the sessions, the pre-session cookie, the users and links. */
export interface PageState {
  /** One signed-in user per workspace; signed in again when a fuzzed sign-out ends the session. */
  sessions: Record<WsTag, Browser>;
  /** The `sw_pre` nonce of the run's browser and the csrf token of the sign-in and activation forms. */
  pre: { nonce: string; csrf: string };
  /** A user of A whose sign-in the fuzzer tries (the session users are never locked out). */
  signin: { email: string; password: string };
  /** An activation token not used yet (a user of A without a password) and one used. */
  activation: { pending: string; used: string };
  /** The keys there were before the pages were fuzzed (the API's): never revoked by a page request. */
  protectedKeys: Set<string>;
  /** The server's origin, as a browser sends it in `Origin`. */
  origin: string;
}

/** A page request being built: a valid one, then mutated. */
export interface PageDraft {
  route: PageRoute;
  method: string;
  /** Path parameters as they go into the path (percent-encoded). */
  params: Record<string, string>;
  /** Pairs (encoded on build) or a raw query string. */
  query: Array<[string, string]> | string;
  cookies: Array<[string, string]>;
  headers: Record<string, string>;
  /** The form's fields, urlencoded on build unless `raw` replaces the whole body. */
  fields: Array<[string, string]>;
  raw?: Buffer;
  chunked: boolean;
  /** The workspace whose session, ids and csrf token the draft was built with. */
  ws: WsTag;
  muts: string[];
  valid: boolean;
}

/** The path parameter kinds the fuzzer can fill, by the page route's name up to the parameter. */
const PARAM_KINDS: Record<string, 'key' | 'source' | 'webhook' | 'user' | 'conversation' | 'agent' | 'slug'> = {
  '/settings/keys/{id}': 'key',
  '/settings/sources/{id}': 'source',
  '/settings/webhooks/{id}': 'webhook',
  '/settings/users/{id}': 'user',
  '/settings/inbox/{id}': 'conversation',
  '/settings/agents/{id}': 'agent',
  '/docs/{slug}': 'slug',
};

/** The page routes to fuzz: all, or those whose `page /name` contains the `route` option. */
export function targetPages(f: Fuzzer): PageRoute[] {
  const filter = f.opts.route;
  return PAGE_ROUTES.filter((r) => !filter || `page ${r.name}`.includes(filter));
}

// ───────── setup ─────────

/** The value of cookie `name` set by an answer, if any. */
function setCookie(res: HttpResponse, name: string): string | undefined {
  const set = res.headers['set-cookie'] ?? [];
  for (const c of set) if (c.startsWith(`${name}=`)) return c.slice(name.length + 1).split(';')[0];
  return undefined;
}

const formBody = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** POSTs a form the way a browser does (urlencoded, our Origin), without fuzzing or checks. */
function postForm(f: Fuzzer, path: string, fields: Record<string, string>, cookie: string): Promise<HttpResponse> {
  return plainCall(f, f.srv.url, 'POST', path, { 'Content-Type': 'application/x-www-form-urlencoded', Origin: new URL(f.srv.url).origin, Cookie: cookie }, formBody(fields));
}

/** Signs `b` in over HTTP (the sign-in form): its session cookie and csrf token. */
async function signIn(f: Fuzzer, b: Browser): Promise<void> {
  const { pre } = f.pages!;
  const r = await postForm(f, '/settings/login', { csrf: pre.csrf, email: b.email, password: b.password }, `sw_pre=${pre.nonce}`);
  const token = setCookie(r, 'sw_session');
  if (r.status !== 303 || !token) throw new Error(`the fuzzer could not sign ${b.email} in: ${r.status} ${r.text.slice(0, 200)}`);
  f.srv.watch(token);
  const page = await plainCall(f, f.srv.url, 'GET', '/settings/keys', { Cookie: `sw_session=${token}` });
  b.token = token;
  b.csrf = csrfOf(page.text);
}

/**
 * Users for the pages (docs/web.md#users): one signed in per workspace, one of A whose sign-in
 * is fuzzed, one of A not activated yet (its link is fuzzed); every password, token and nonce
 * is watched by the harness's secrets scan.
 */
export async function setupPages(f: Fuzzer): Promise<void> {
  const first = await plainCall(f, f.srv.url, 'GET', '/settings/login');
  const nonce = setCookie(first, 'sw_pre');
  if (!nonce) throw new Error(`no sw_pre cookie from the sign-in page: ${first.status}`);
  f.srv.watch(nonce);
  const pre = { nonce, csrf: csrfOf(first.text) };
  const user = async (ws: WsTag, email: string, password?: string): Promise<string> => {
    const made = await f.srv.admin.execute('user.create', { workspace: f.wsId[ws], email }) as { activationUrl: string };
    const link = new URL(made.activationUrl);
    const token = link.searchParams.get('token') ?? '';
    f.srv.watch(token);
    if (password !== undefined) {
      f.srv.watch(password);
      const done = await postForm(f, link.pathname + link.search, { csrf: pre.csrf, password }, `sw_pre=${pre.nonce}`);
      if (done.status !== 303) throw new Error(`the fuzzer could not activate ${email}: ${done.status} ${done.text.slice(0, 200)}`);
    }
    return token;
  };
  const password = (who: string) => `fuzz ${who} password ${f.seed}`;
  const sessions = {} as Record<WsTag, Browser>;
  for (const ws of ['A', 'B'] as const) {
    const email = `page-${ws.toLowerCase()}@fuzz.example`;
    await user(ws, email, password(ws));
    sessions[ws] = { ws, email, password: password(ws), token: '', csrf: '' };
  }
  const signin = { email: 'signin@fuzz.example', password: password('signin') };
  const used = await user('A', signin.email, signin.password);
  const pending = await user('A', 'pending@fuzz.example');
  f.pages = { sessions, pre, signin, activation: { pending, used }, protectedKeys: new Set(f.srv.store.system.table('key').keys()), origin: new URL(f.srv.url).origin };
  for (const b of Object.values(sessions)) await signIn(f, b);
}

// ───────── drafts ─────────

/** The ids a path parameter of `kind` can take in workspace `ws` (`forChange`: only what a page request may change). */
export function idsOf(f: Fuzzer, kind: 'key' | 'source' | 'webhook' | 'user' | 'conversation' | 'agent', ws: WsTag, forChange = false): string[] {
  if (kind === 'user') {
    // The run's own users (signed in, signing in, the pending link) are never removed by a page request.
    const own = new Set([...Object.values(f.pages!.sessions).map((b) => b.email), f.pages!.signin.email, 'pending@fuzz.example']);
    return [...f.srv.store.system.table('user').values()].filter((u) => u.workspaceId === f.wsId[ws] && (!forChange || !own.has(u.email))).map((u) => u.id);
  }
  if (kind === 'key') {
    return [...f.srv.store.system.table('key').values()].filter((k) => k.workspaceId === f.wsId[ws] && !k.revokedAt && (!forChange || !f.pages!.protectedKeys.has(k.id))).map((k) => k.id);
  }
  if (kind === 'conversation' || kind === 'agent') return [...f.workspace(ws).db.table(kind).keys()];
  return [...f.workspace(ws).db.table(kind === 'source' ? 'source' : 'webhook_endpoint').keys()];
}

/** The slugs of workspace `ws`'s sources, published (served) or not. */
export function slugsOf(f: Fuzzer, ws: WsTag, served: boolean): string[] {
  const out: string[] = [];
  for (const s of f.workspace(ws).db.table('source').values()) {
    const pd = s.publicDocs;
    if (pd.slug && (pd.enabled && pd.published) === served) out.push(pd.slug);
  }
  return out;
}

/** The kind of record path parameter `param` of `route` names. @throws Error for a parameter the fuzzer does not know */
export function paramKindOf(route: PageRoute, param: string): 'key' | 'source' | 'webhook' | 'user' | 'conversation' | 'agent' | 'slug' {
  const at = route.name.indexOf(`{${param}}`);
  const kind = PARAM_KINDS[route.name.slice(0, at + param.length + 2)];
  if (!kind) throw new Error(`the page fuzzer does not know the path parameter {${param}} of ${route.name}: add it to PARAM_KINDS`);
  return kind;
}

/** A value of `route`'s parameter `param` for a valid request of workspace `ws` (its own record; a published slug). */
function ownParam(f: Fuzzer, route: PageRoute, param: string, ws: WsTag, method: string): string {
  const g = f.g;
  const kind = paramKindOf(route, param);
  if (kind === 'slug') {
    const served = [...slugsOf(f, 'A', true), ...slugsOf(f, 'B', true)];
    return served.length ? g.pick(served) : `no-docs-${uniqueNumber(f)}`;
  }
  const ids = idsOf(f, kind, ws, method === 'POST');
  return ids.length ? g.pick(ids) : g.uuid();
}

/** A query string a page reads, with valid values. */
function validQuery(f: Fuzzer, route: PageRoute, ws: WsTag): Array<[string, string]> {
  const g = f.g;
  const p = f.pages!;
  const some = (xs: string[]) => (xs.length ? g.pick(xs) : g.uuid());
  switch (route.name) {
    case '/settings/keys': return g.chance(0.3) ? [['revoked', some(idsOf(f, 'key', ws))]] : [];
    case '/settings/sources': return g.chance(0.3) ? [[g.pick(['published', 'unpublished']), some(idsOf(f, 'source', ws))]] : [];
    case '/settings/webhooks': return g.chance(0.3) ? [['deleted', '1']] : [];
    case '/settings/login': return g.chance(0.3) ? [[g.pick(['activated', 'signedOut']), '1']] : [];
    case '/settings/activate': return [['token', g.pick([p.activation.pending, p.activation.used])]];
    case '/docs/{slug}/search': return [['q', g.pick(['items', 'refund status', 'reset password', 'Fuzz Shop', ''])]];
    default: return [];
  }
}

/** A page request that the server must take as a browser's (a valid form, session, csrf token and Origin), then mutated unless `valid`. */
export function pageDraft(f: Fuzzer, route: PageRoute, valid: boolean, ws: WsTag = f.g.chance(0.75) ? 'A' : 'B'): PageDraft {
  const g = f.g;
  const p = f.pages!;
  const method = route.methods.length > 1 && g.chance(0.5) ? route.methods[1] : route.methods[0];
  const d: PageDraft = { route, method, params: {}, query: [], cookies: [], headers: {}, fields: [], chunked: false, ws, muts: [], valid };
  for (const m of route.name.matchAll(/\{(\w+)\}/g)) d.params[m[1]] = encodeURIComponent(ownParam(f, route, m[1], ws, method));
  if (method === 'GET') d.query = validQuery(f, route, ws);
  else if (route.name === '/settings/activate') d.query = [['token', p.activation.pending]];
  const signedIn = !route.public || g.chance(0.3);
  if (signedIn && !route.name.startsWith('/assets/')) d.cookies.push(['sw_session', p.sessions[ws].token]);
  if (method === 'POST') {
    d.headers['Content-Type'] = 'application/x-www-form-urlencoded';
    d.headers.Origin = p.origin;
    if (route.public) d.cookies.push(['sw_pre', p.pre.nonce]);
    d.fields = [...validFields(f, route, ws), ['csrf', route.public ? p.pre.csrf : p.sessions[ws].csrf]];
    if (g.chance(0.5)) d.fields.reverse();
  }
  if (g.chance(0.1)) d.headers['X-Request-Id'] = `fuzz-page-${uniqueNumber(f)}`;
  if (valid) return d;
  const n = g.weighted([[1, 70], [2, 22], [3, 8]] as const);
  for (let i = 0; i < n; i++) {
    const applicable = PAGE_MUTATORS.filter((m) => m.applies(d, f));
    if (!applicable.length) break;
    for (let tries = 0; tries < 4; tries++) {
      const m = g.weighted(applicable.map((x) => [x, x.weight] as const));
      const name = m.apply(d, f);
      if (name) { d.muts.push(name); break; }
    }
  }
  if (d.muts.length === 0) d.muts.push('none');
  // Every page is refused at least once whatever the seed's luck: its first mutated request also has a method it
  // does not take (405).
  const refused = refusedOnce.get(f) ?? new Set<string>();
  refusedOnce.set(f, refused);
  if (!refused.has(route.name)) {
    refused.add(route.name);
    d.method = 'PUT';
    d.muts.push('method.PUT');
  }
  return d;
}

/** Per fuzzer run: the pages that had their first mutated request. */
const refusedOnce = new WeakMap<Fuzzer, Set<string>>();

// ───────── one request ─────────

/** The request of a draft: path, query string, headers and body, in the fuzzer's plan shape (for the transport and the report). */
export function pagePlan(d: PageDraft): Plan {
  const path = d.route.name.replace(/\{(\w+)\}/g, (_m, p: string) => d.params[p] ?? '');
  const qs = typeof d.query === 'string' ? d.query : d.query.map(([k, v]) => `${encodeComponent(k)}=${encodeComponent(v)}`).join('&');
  const headers: Record<string, string | string[]> = { ...d.headers };
  if (d.cookies.length && headers.Cookie === undefined) headers.Cookie = d.cookies.map(([k, v]) => `${k}=${v}`).join('; ');
  let body: Buffer | undefined;
  if (d.method !== 'GET' && d.method !== 'HEAD' && (d.raw !== undefined || d.fields.length > 0 || d.method === 'POST')) {
    body = d.raw ?? Buffer.from(d.fields.map(([k, v]) => `${encodeComponent(k)}=${encodeComponent(v)}`).join('&'));
  }
  if (body !== undefined && !d.chunked) headers['Content-Length'] = String(body.length);
  if (d.chunked) headers['Transfer-Encoding'] = 'chunked';
  const draft: Draft = {
    routeKey: `page ${d.route.name}`, method: d.method, params: {}, rawPath: path, query: qs, body: NO_BODY, headers, key: { role: 'none' },
    ws: d.ws, chunked: d.chunked, muts: d.muts, certain: [], valid: d.valid, targetIds: [],
  };
  return { draft, method: d.method, path, qs, headers, body, mayReset: (body?.length ?? 0) > formLimit(d.route) };
}

/** A header of the plan as the server reads it: lower-cased name; the first of a repeated value. */
function header(p: Plan, name: string): string | undefined {
  for (const [k, v] of Object.entries(p.headers)) if (k.toLowerCase() === name) return Array.isArray(v) ? v[0] : v;
  return undefined;
}

/** The request's cookies as the server parses them (the first of a repeated name wins, src/web/forms.ts). */
function cookiesOf(p: Plan): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header(p, 'cookie') ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!out.has(name)) out.set(name, part.slice(eq + 1).trim());
  }
  return out;
}

/** The run's browser whose live session the request carries, if any. */
function liveSession(f: Fuzzer, p: Plan): Browser | undefined {
  const token = cookiesOf(p).get('sw_session');
  if (!token) return undefined;
  const b = Object.values(f.pages!.sessions).find((x) => x.token === token);
  return b && f.srv.store.system.get('session', hashKey(token)) ? b : undefined;
}

/** An expected status: the statuses allowed, why, and the `Location` of a redirect. */
interface PageExpect { statuses: number[]; why: string; location?: string }

/**
 * The status the dispatcher's order decides (docs/web.md#routes-and-forms, src/web/app.ts): the
 * path, the method, the session, then for a form its body, origin and csrf token; undefined
 * when the page's handler decides.
 */
export function pageExpect(f: Fuzzer, d: PageDraft, p: Plan): PageExpect | undefined {
  // The path matches the route's pattern (a value of 1 to 100 characters without "/"), then the
  // method is the page's, then the value is decoded (src/web/app.ts, dispatch).
  for (const v of Object.values(d.params)) {
    if (v.length === 0 || v.length > 100 || v.includes('/')) return { statuses: [404], why: 'no page has this path (a path value of 1 to 100 characters without "/")' };
  }
  const method = p.method === 'HEAD' ? 'GET' : p.method;
  if (!(d.route.methods as readonly string[]).includes(method)) return { statuses: [405], why: `the page takes ${d.route.methods.join(', ')}` };
  for (const v of Object.values(d.params)) {
    try { decodeURIComponent(v); } catch { return { statuses: [404], why: 'a path value that does not decode' }; }
  }
  if (d.route.name.startsWith('/assets/')) return { statuses: [200], why: 'a static file' };
  const session = liveSession(f, p);
  if (!d.route.public && !session) return { statuses: [303], location: '/settings/login', why: 'no live session' };
  if (method !== 'POST') return undefined;
  const type = (header(p, 'content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return { statuses: [415], why: `Content-Type ${show(type)}` };
  const encoding = header(p, 'content-encoding');
  if (encoding !== undefined && encoding !== 'identity') return { statuses: [415], why: `Content-Encoding ${show(encoding)}` };
  const body = p.body ?? Buffer.alloc(0);
  if (body.length > formLimit(d.route)) return { statuses: [413], why: `a form of ${body.length} bytes` };
  let text: string;
  try { text = new TextDecoder('utf-8', { fatal: true }).decode(body); } catch { return { statuses: [400], why: 'a form that is not UTF-8' }; }
  // docs/security.md#csrf: the Origin (else the Referer) must be ours, then exactly one csrf field must be the expected token.
  const allowed = new Set([f.pages!.origin, (() => { try { return new URL(`http://${header(p, 'host') ?? new URL(f.srv.url).host}`).origin; } catch { return ''; } })()]);
  const origin = header(p, 'origin');
  const referer = header(p, 'referer');
  const originOk = origin !== undefined ? allowed.has(origin) : referer !== undefined && (() => { try { return allowed.has(new URL(referer).origin); } catch { return false; } })();
  if (!originOk) return { statuses: [403], why: `Origin ${show(String(origin))}, Referer ${show(String(referer))}` };
  const pre = cookiesOf(p).get('sw_pre');
  const expected = d.route.public ? (pre === undefined ? undefined : pre === f.pages!.pre.nonce ? f.pages!.pre.csrf : '(the token of another nonce)') : session!.csrf;
  const given = new URLSearchParams(text).getAll('csrf');
  if (expected === undefined || given.length !== 1 || given[0] !== expected) return { statuses: [403], why: `csrf: ${given.length} field(s), ${expected === undefined ? 'no sw_pre cookie' : 'expected another token'}` };
  return undefined;
}

/** Sends a page draft, checks the answer (see the module's oracle), and keeps the run's sessions signed in. */
export async function executePage(f: Fuzzer, d: PageDraft): Promise<void> {
  const p = pagePlan(d);
  const expect = pageExpect(f, d, p);
  const sizesBefore = indexSizes(f);
  f.changes = [];
  f.systemChanges = [];
  f.recording = true;
  let sent: Sent;
  try {
    sent = await send(f, p);
  } finally {
    f.recording = false;
  }
  f.count(p, sent);
  if (!sent.ok) {
    if (sent.timedOut) f.fail('hung', p, undefined, `no answer within ${f.timeoutMs} ms`);
    else if (sent.head) f.fail('framing', p, sent.head, `the client's HTTP parser failed after a ${sent.head.status} head (${sent.error})`);
    else if (!p.mayReset) f.fail('no_response', p, undefined, `the connection failed without an answer: ${sent.error}`);
  } else {
    checkPage(f, d, p, sent.res, expect, sizesBefore);
    // An endpoint deleted here is gone for the API's requests too (they expect 404 for it from now on).
    if (sent.res.status === 303 && sent.res.headers.location === '/settings/webhooks?deleted=1') {
      const id = decodeURIComponent(d.params.id ?? '');
      for (const ws of ['A', 'B'] as const) { const pool = f.pools[ws].webhook_endpoint; if (pool.includes(id)) pool.splice(pool.indexOf(id), 1); }
      f.owner.delete(id);
    }
    // So is a source deleted here.
    if (sent.res.status === 303 && sent.res.headers.location === '/settings/sources?deleted=1') {
      const id = decodeURIComponent(d.params.id ?? '');
      for (const ws of ['A', 'B'] as const) {
        const pools = f.pools[ws];
        if (pools.source.includes(id)) pools.source.splice(pools.source.indexOf(id), 1);
        pools.endpoints.delete(id); pools.sourceHasUrl.delete(id);
      }
      f.owner.delete(id);
    }
    for (const c of sent.res.headers['set-cookie'] ?? []) f.srv.watch(c.slice(c.indexOf('=') + 1).split(';')[0]);
  }
  // A fuzzed account page may change a run user's email: follow it.
  for (const b of Object.values(f.pages!.sessions)) {
    const s = f.srv.store.system.get('session', hashKey(b.token));
    const u = s && f.srv.store.system.get('user', s.userId);
    if (u) b.email = u.email;
  }
  // A fuzzed sign-out (a valid one) ends a session of the run: start another.
  for (const b of Object.values(f.pages!.sessions)) if (!f.srv.store.system.get('session', hashKey(b.token))) await newSession(f, b);
}

/**
 * A new session for `b`'s user, stored as `Sessions.create` stores one (src/web/sessions.ts: the
 * token's SHA-256 as its id), without signing in over HTTP again: that would hash the password
 * (scrypt, about 160 ms here) after every fuzzed sign-out, and sign-in is fuzzed on its own.
 */
async function newSession(f: Fuzzer, b: Browser): Promise<void> {
  const user = f.srv.store.userByEmail(b.email);
  if (!user) throw new Error(`no user ${b.email}`);
  const token = randomBase62(32);
  f.srv.watch(token);
  const now = iso(f.clock.now());
  const rec: SessionRec = { id: hashKey(token), userId: user.id, workspaceId: user.workspaceId, createdAt: now, lastSeenAt: now };
  const tx = f.srv.store.system.begin();
  tx.put('session', rec.id, rec);
  await f.srv.store.system.commit(tx);
  const page = await plainCall(f, f.srv.url, 'GET', '/settings/keys', { Cookie: `sw_session=${token}` });
  if (page.status !== 200) throw new Error(`a new session of ${b.email} is not signed in: ${page.status}`);
  b.token = token;
  b.csrf = csrfOf(page.text);
}

/** Checks a page answer against the oracle (see the module's comment), recording failures. */
export function checkPage(f: Fuzzer, d: PageDraft, p: Plan, res: HttpResponse, expect: PageExpect | undefined, sizesBefore: string): void {
  const target = p.path + (p.qs ? `?${p.qs}` : '');
  if (res.status >= 500) f.fail('server_error', p, res, `status ${res.status}`);
  const missing = Object.entries(PAGE_HEADERS).filter(([k, v]) => res.headers[k] !== v).map(([k]) => `${k}: ${show(String(res.headers[k]))}`);
  if (missing.length) f.fail('security_headers', p, res, `a ${res.status} answer without the security headers (docs/security.md#headers): ${missing.join('; ')}`);
  try {
    f.srv.scan({ method: p.method, target, status: res.status, headers: toHeaders(res.headers), text: res.text });
  } catch (e) {
    f.fail('secret_leak', p, res, (e as Error).message);
  }
  if (expect) {
    f.report.expectationsChecked++;
    if (!expect.statuses.includes(res.status)) f.fail('unexpected_status', p, res, `expected ${expect.statuses.join(' or ')} (${expect.why}), got ${res.status}`);
    else if (expect.location !== undefined && res.headers.location !== expect.location) f.fail('unexpected_status', p, res, `expected a redirect to ${expect.location} (${expect.why}), got ${show(String(res.headers.location))}`);
  }
  if (d.valid && res.status >= 400) {
    const k = `${p.draft.routeKey} → ${res.status}: ${/<div class="card"><p>([^<]{0,100})/.exec(res.text)?.[1] ?? /role="alert">([^<]{0,100})/.exec(res.text)?.[1] ?? ''}`;
    f.report.validRejected.set(k, (f.report.validRejected.get(k) ?? 0) + 1);
  }
  // A refused form, a sign-in redirect and any read change nothing (docs/security.md#csrf).
  const refused = res.status >= 400 || (res.status === 303 && res.headers.location === '/settings/login');
  if (refused || p.method === 'GET' || p.method === 'HEAD') {
    const changed = [...netChanges(f), ...systemChanges(f)];
    if (changed.length) f.fail('state_changed', p, res, `a ${res.status} answer to ${p.method} changed ${changed.length} record(s): ${changed.slice(0, 5).join(', ')}`);
    const after = indexSizes(f);
    if (after !== sizesBefore) f.fail('state_changed', p, res, `workspace indexes changed: ${diffSizes(sizesBefore, after)}`);
  }
  // A signed-in page shows nothing of the other workspace (docs/security.md#tenant-isolation).
  const session = liveSessionAfter(f, p);
  if (res.status < 300 && session && p.path.startsWith('/settings')) {
    const other: WsTag = session.ws === 'A' ? 'B' : 'A';
    const sent = target + (p.body && p.body.length < 1_000_000 ? p.body.toString('latin1') : '');
    for (const m of res.text.matchAll(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g)) {
      if (!sent.includes(m[0]) && ownedBy(f, m[0], other)) { f.fail('tenant_leak', p, res, `a page of ${session.ws}'s session holds ${m[0]} of ${other}`); break; }
    }
  }
}

/** The run's browser whose session cookie the request carried (whether or not the request ended it). */
function liveSessionAfter(f: Fuzzer, p: Plan): Browser | undefined {
  const token = cookiesOf(p).get('sw_session');
  return token ? Object.values(f.pages!.sessions).find((x) => x.token === token) : undefined;
}

/** Whether `id` names a key, source, webhook endpoint or any harvested record of workspace `ws`. */
function ownedBy(f: Fuzzer, id: string, ws: WsTag): boolean {
  if (f.owner.get(id) === ws) return true;
  if (f.srv.store.system.get('key', id)?.workspaceId === f.wsId[ws]) return true;
  const db = f.workspace(ws).db;
  return db.get('source', id) !== undefined || db.get('webhook_endpoint', id) !== undefined;
}

/**
 * (type/id) of every system record (keys, users, activation links, sessions) that differs from
 * before the request, but a session's activity: any request with a live session may write its
 * `lastSeenAt` (docs/security.md#sessions); a session made or ended still counts.
 */
function systemChanges(f: Fuzzer): string[] {
  const first = new Map<string, Rec | undefined>();
  const last = new Map<string, Rec | undefined>();
  for (const c of f.systemChanges) {
    if (c.type === 'session' && c.prev !== undefined && c.next !== undefined) continue;
    const k = `system:${c.type}/${c.id}`;
    if (!first.has(k)) first.set(k, c.prev);
    last.set(k, c.next);
  }
  return [...first.keys()].filter((k) => first.get(k) !== last.get(k));
}
