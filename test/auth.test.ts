/**
 * Authentication and scopes (docs/api.md#authentication, docs/security.md#api-keys), black-box over a real
 * server: every 401 case, expiry on the injected clock, scopes per family, brute-force
 * limiting per address (of failures only: a valid key is always served; which address a client
 * has is tested in test/clientAddress.test.ts), lastUsedAt throttling, keys stored only as
 * SHA-256, and the check order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './helpers/server.js';
import { generateWidgetKey, hasScope, looksLikeApiKey, parseScopes, generateApiKey } from '../src/auth/keys.js';
import { iso } from '../src/core/clock.js';
import type { ConversationAnswer, CustomFieldList, IssueAnswer, IssueList } from './helpers/answers.js';

const UNAUTHORIZED = { code: 'unauthorized', error: 'A valid workspace API key is required.' };
const EXPIRED = { code: 'key_expired', error: 'This API key has expired.' };
const scopeError = (scope: string) => ({ code: 'insufficient_scope', error: `This API key is missing the required scope: this operation needs ${scope}.` });
const conversation = { subject: 'Refund', customer: { email: 'bo@example.com' } };

async function withServer(fn: (srv: TestServer) => Promise<void>, env?: Record<string, string>): Promise<void> {
  const srv = await startTestServer({ env });
  try { await fn(srv); } finally { await srv.close(); }
}

/** Creates a key and returns both its secret and its id. */
async function keyWithId(srv: TestServer, o: { scopes?: string; expiresAt?: string } = {}): Promise<{ id: string; key: string }> {
  const k = await srv.admin.createKey({ workspace: srv.workspaceId, scopes: o.scopes, expiresAt: o.expiresAt });
  return { id: k.id, key: k.key };
}

const listKey = (srv: TestServer, id: string) => srv.admin.listKeys(srv.workspaceId).keys.find((k) => k.id === id)!;

// ---------------------------------------------------------------- 401

test('no Authorization header → 401 unauthorized', () => withServer(async (srv) => {
  const r = await srv.call('GET', '/api/v1/conversations', { key: null });
  assert.equal(r.status, 401);
  assert.deepEqual(r.body, UNAUTHORIZED);
  assert.equal(r.headers.get('ratelimit-limit'), null, 'unauthenticated answers carry no per-key rate headers');
}));

test('Authorization with the Basic scheme or without a scheme → 401 unauthorized', () => withServer(async (srv) => {
  const basic = 'Basic ' + Buffer.from(`${srv.key}:`).toString('base64');
  for (const value of [basic, `Basic ${srv.key}`, srv.key, `Token ${srv.key}`, 'Bearer', 'Bearer ', `Bearer ${srv.key} extra`, `Bearer${srv.key}`]) {
    const r = await srv.call('GET', '/api/v1/conversations', { key: null, headers: { Authorization: value } });
    assert.equal(r.status, 401, value);
    assert.deepEqual(r.body, UNAUTHORIZED);
  }
}));

test('the Bearer scheme is case-insensitive', () => withServer(async (srv) => {
  const r = await srv.call('GET', '/api/v1/conversations', { key: null, headers: { Authorization: `bearer ${srv.key}` } });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { object: 'list', hasMore: false, nextCursor: null, conversations: [] });
  // Any case, several spaces before the key (spaces around the value are not part of it in HTTP); anything else → 401.
  for (const h of [`BEARER ${srv.key}`, `BeArEr   ${srv.key}`, `Bearer ${srv.key}  `]) {
    assert.equal((await srv.call('GET', '/api/v1/conversations', { key: null, headers: { Authorization: h } })).status, 200, h);
  }
  for (const h of [`Bearer${srv.key}`, `Bearer\t${srv.key}`, `Bearer ${srv.key}x`, `Bearer ${srv.key} x`, `Bearers ${srv.key}`, `Basic ${srv.key}`]) {
    const bad = await srv.call('GET', '/api/v1/conversations', { key: null, headers: { Authorization: h } });
    assert.deepEqual([bad.status, bad.body], [401, UNAUTHORIZED], h);
  }
}));

test('a malformed key (wrong prefix, length or alphabet) → 401 unauthorized', () => withServer(async (srv) => {
  const body = srv.key.slice(5);
  for (const k of ['svck_', 'svck_short', `svck_${body}x`, `svck_${body.slice(1)}`, `SVCK_${body}`, `svck_${body.slice(0, -1)}-`, `sk_live_${body}`, `svck_${body.slice(0, -1)}é`]) {
    const r = await srv.call('GET', '/api/v1/conversations', { key: k });
    assert.equal(r.status, 401, k);
    assert.deepEqual(r.body, UNAUTHORIZED);
  }
}));

test('an unknown well-formed key → 401 unauthorized', () => withServer(async (srv) => {
  const unknown = generateApiKey();
  assert.ok(looksLikeApiKey(unknown));
  const r = await srv.call('GET', '/api/v1/conversations', { key: unknown });
  assert.equal(r.status, 401);
  assert.deepEqual(r.body, UNAUTHORIZED);
}));

test('a revoked key → 401 unauthorized (it worked before the revocation)', () => withServer(async (srv) => {
  const { id, key } = await keyWithId(srv);
  assert.equal((await srv.call('GET', '/api/v1/conversations', { key })).status, 200);
  await srv.admin.revokeKey(id);
  const r = await srv.call('GET', '/api/v1/conversations', { key });
  assert.equal(r.status, 401);
  assert.deepEqual(r.body, UNAUTHORIZED);
  assert.equal((await srv.call('GET', '/api/v1/conversations')).status, 200, 'other keys keep working');
}));

test('a key past its expiresAt → 401 key_expired; it works until that instant', () => withServer(async (srv) => {
  const expiresAt = iso(srv.clock.now() + 3600_000);
  const key = await srv.newKey({ expiresAt });
  assert.equal((await srv.call('GET', '/api/v1/conversations', { key })).status, 200);
  srv.clock.advance(3600_000 - 1);
  assert.equal((await srv.call('GET', '/api/v1/conversations', { key })).status, 200, 'valid 1 ms before expiresAt');
  srv.clock.advance(1);
  const r = await srv.call('GET', '/api/v1/conversations', { key });
  assert.equal(r.status, 401);
  assert.deepEqual(r.body, EXPIRED);
  srv.clock.advance(86_400_000);
  assert.deepEqual((await srv.call('GET', '/api/v1/conversations', { key })).body, EXPIRED);
}));

test('a revoked key that has also expired → 401 unauthorized (revocation wins)', () => withServer(async (srv) => {
  const { id, key } = await keyWithId(srv, { expiresAt: iso(srv.clock.now() + 1000) });
  await srv.admin.revokeKey(id);
  srv.clock.advance(2000);
  const r = await srv.call('GET', '/api/v1/conversations', { key });
  assert.equal(r.status, 401);
  assert.deepEqual(r.body, UNAUTHORIZED);
}));

test('a public widget key (svcw_…) grants no API access → 401 unauthorized', () => withServer(async (srv) => {
  for (const k of [generateWidgetKey(), 'svcw_' + srv.key.slice(5)]) {
    const r = await srv.call('GET', '/api/v1/conversations', { key: k });
    assert.equal(r.status, 401, k);
    assert.deepEqual(r.body, UNAUTHORIZED);
  }
}));

test('a key of another workspace cannot read this workspace\'s records → 404 not_found', () => withServer(async (srv) => {
  const created = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conversation });
  assert.equal(created.status, 201);
  const other = await srv.newWorkspace();
  const r = await srv.call('GET', `/api/v1/conversations/${created.body.conversation.id}`, { key: other.key });
  assert.equal(r.status, 404);
  assert.deepEqual(r.body, { code: 'not_found', error: 'Record not found.' });
  const list = await srv.call('GET', '/api/v1/conversations', { key: other.key });
  assert.deepEqual(list.body, { object: 'list', hasMore: false, nextCursor: null, conversations: [] });
}));

// ---------------------------------------------------------------- 403

test('conversations:read can list but not create, update or add messages → 403 insufficient_scope', () => withServer(async (srv) => {
  const key = await srv.newKey({ scopes: 'conversations:read' });
  assert.equal((await srv.call('GET', '/api/v1/conversations', { key })).status, 200);
  for (const [method, path, body] of [
    ['POST', '/api/v1/conversations', conversation],
    ['PATCH', '/api/v1/conversations/c1', { status: 'solved' }],
    ['POST', '/api/v1/conversations/c1/messages', { role: 'user', body: 'hi' }],
  ] as const) {
    const r = await srv.call(method, path, { key, body });
    assert.equal(r.status, 403, `${method} ${path}`);
    assert.deepEqual(r.body, scopeError('conversations:write'));
  }
  const other = await srv.call('GET', '/api/v1/issues', { key });
  assert.deepEqual(other.body, scopeError('issues:read'));
  assert.deepEqual((await srv.call('GET', '/api/v1/custom-fields', { key })).body, scopeError('definitions:read'));
}));

test('issues:write implies issues:read, and grants nothing outside issues', () => withServer(async (srv) => {
  const key = await srv.newKey({ scopes: 'issues:write' });
  const created = await srv.call<IssueAnswer>('POST', '/api/v1/issues', { key, body: { subject: 'Login broken' } });
  assert.equal(created.status, 201);
  const list = await srv.call<IssueList>('GET', '/api/v1/issues', { key });
  assert.equal(list.status, 200);
  assert.deepEqual(list.body.issues.map((i: { id: string }) => i.id), [created.body.issue.id]);
  const one = await srv.call('GET', `/api/v1/issues/${created.body.issue.id}`, { key });
  assert.deepEqual(one.body, created.body);
  assert.deepEqual((await srv.call('GET', '/api/v1/conversations', { key })).body, scopeError('conversations:read'));
  assert.deepEqual((await srv.call('GET', '/api/v1/custom-fields', { key })).body, scopeError('definitions:read'));
}));

test('issues:read cannot create or update issues → 403 naming issues:write', () => withServer(async (srv) => {
  const key = await srv.newKey({ scopes: 'issues:read' });
  assert.equal((await srv.call('GET', '/api/v1/issues', { key })).status, 200);
  assert.deepEqual((await srv.call('POST', '/api/v1/issues', { key, body: { subject: 'x' } })).body, scopeError('issues:write'));
  assert.deepEqual((await srv.call('PATCH', '/api/v1/issues/i1', { key, body: { subject: 'x' } })).body, scopeError('issues:write'));
}));

test('definitions:read lists custom fields and nothing else', () => withServer(async (srv) => {
  const key = await srv.newKey({ scopes: 'definitions:read' });
  const r = await srv.call<CustomFieldList>('GET', '/api/v1/custom-fields', { key });
  assert.equal(r.status, 200);
  assert.equal(r.body.object, 'list');
  assert.deepEqual((await srv.call('GET', '/api/v1/issues', { key })).body, scopeError('issues:read'));
}));

test('a key with several scopes gets each of them', () => withServer(async (srv) => {
  const key = await srv.newKey({ scopes: 'conversations:write,definitions:read' });
  assert.equal((await srv.call('POST', '/api/v1/conversations', { key, body: conversation })).status, 201);
  assert.equal((await srv.call('GET', '/api/v1/conversations', { key })).status, 200);
  assert.equal((await srv.call('GET', '/api/v1/custom-fields', { key })).status, 200);
  assert.deepEqual((await srv.call('GET', '/api/v1/issues', { key })).body, scopeError('issues:read'));
}));

test('every scoped route refuses a key without its scope, with the exact 403 body, and * passes them all', () => withServer(async (srv) => {
  // A key whose only scope belongs to another area than the route's.
  const agentsOnly = await srv.newKey({ scopes: 'agents:read' });
  const usageOnly = await srv.newKey({ scopes: 'usage:read' });
  const star = await srv.newKey({ scopes: '*' });
  // The widget API takes widget keys and sessions, not API keys (test/widget-api.test.ts).
  const routes = srv.routes.filter((r) => r.scope !== null && r.auth === undefined);
  assert.ok(routes.length >= 10);
  for (const r of routes) {
    const path = r.path.replace(/\{\w+\}/g, 'missing-id');
    const junk = r.method === 'GET' ? {} : { raw: 'not even json', headers: { 'Content-Type': 'text/plain' } };
    const unrelated = r.scope === 'agents:read' ? usageOnly : agentsOnly;
    const denied = await srv.call(r.method, path, { key: unrelated, ...junk });
    assert.equal(denied.status, 403, `${r.method} ${r.path}`);
    assert.deepEqual(denied.body, scopeError(r.scope!));
    const allowed = await srv.call(r.method, path, { key: star, body: r.body ? {} : undefined });
    assert.ok(allowed.status !== 401 && allowed.status !== 403, `* refused on ${r.method} ${r.path}: ${allowed.status}`);
  }
}));

test('scope rules: X:write implies X:read only; * grants all', () => {
  assert.equal(hasScope(['issues:write'], 'issues:read'), true);
  assert.equal(hasScope(['issues:read'], 'issues:write'), false);
  assert.equal(hasScope(['issues:write'], 'conversations:read'), false);
  assert.equal(hasScope(['*'], 'sources:write'), true);
  assert.equal(hasScope([], 'issues:read'), false);
  assert.equal(hasScope(['definitions:write'], 'definitions:read'), true);
  assert.deepEqual(parseScopes('issues:read, issues:read,conversations:write'), ['issues:read', 'conversations:write']);
  assert.throws(() => parseScopes('issues:admin'), /unknown scope "issues:admin"/);
  assert.throws(() => parseScopes('*,issues:read'), /\* must stand alone/);
});

// ---------------------------------------------------------------- brute-force limit

test('31 failed authentications from one address in a minute → the 31st is 429 with Retry-After; 60 s later 401 again', () => withServer(async (srv) => {
  const bad = generateApiKey();
  for (let i = 1; i <= 30; i++) {
    const r = await srv.call('GET', '/api/v1/conversations', { key: bad });
    assert.equal(r.status, 401, `attempt ${i}`);
    assert.deepEqual(r.body, UNAUTHORIZED);
  }
  const limited = await srv.call('GET', '/api/v1/conversations', { key: bad });
  assert.equal(limited.status, 429);
  assert.deepEqual(limited.body, { code: 'rate_limited', error: 'Too many API requests. Slow down and try again shortly: too many failed authentications from this address.' });
  assert.equal(limited.headers.get('retry-after'), '2', '30 a minute refills one failure every 2 s');
  srv.clock.advance(60_000);
  const again = await srv.call('GET', '/api/v1/conversations', { key: bad });
  assert.equal(again.status, 401);
  assert.deepEqual(again.body, UNAUTHORIZED);
}));

test('failures of every kind (missing, malformed, revoked, expired) count towards the same limit', () => withServer(async (srv) => {
  const { id, key: revoked } = await keyWithId(srv);
  await srv.admin.revokeKey(id);
  const expired = await srv.newKey({ expiresAt: iso(srv.clock.now() - 1) });
  const kinds: Array<string | null> = [null, 'nope', revoked, expired];
  for (let i = 0; i < 30; i++) assert.equal((await srv.call('GET', '/api/v1/issues', { key: kinds[i % 4] })).status, 401);
  for (const k of kinds) assert.equal((await srv.call('GET', '/api/v1/issues', { key: k })).status, 429);
}));

test('a locked-out address still gets its normal answer with a valid key, every time; its invalid keys get 429 with Retry-After', () => withServer(async (srv) => {
  const LOCKED = { code: 'rate_limited', error: 'Too many API requests. Slow down and try again shortly: too many failed authentications from this address.' };
  for (let i = 0; i < 30; i++) assert.equal((await srv.call('GET', '/api/v1/issues', { key: 'svck_wrong' })).status, 401);
  const bad = await srv.call('GET', '/api/v1/issues', { key: 'svck_wrong' });
  assert.deepEqual([bad.status, bad.body, bad.headers.get('retry-after')], [429, LOCKED, '2']);
  // The failure limit never refuses a valid key: the same address keeps working…
  for (let i = 0; i < 5; i++) {
    const ok = await srv.call('GET', '/api/v1/issues');
    assert.deepEqual([ok.status, ok.body], [200, { object: 'list', hasMore: false, nextCursor: null, issues: [] }]);
    assert.equal(ok.headers.get('retry-after'), null);
  }
  // …while one bad key every 2 s (as fast as the bucket refills) keeps the invalid keys locked out.
  for (let i = 0; i < 5; i++) {
    srv.clock.advance(2000);
    assert.equal((await srv.call('GET', '/api/v1/issues', { key: 'svck_wrong' })).status, 401, 'the refilled token is spent by this failure');
    const locked = await srv.call('GET', '/api/v1/issues', { key: null });
    assert.deepEqual([locked.status, locked.body, locked.headers.get('retry-after')], [429, LOCKED, '2']);
    assert.equal((await srv.call('POST', '/api/v1/issues', { body: { subject: `still served ${i}` } })).status, 201);
  }
  assert.equal((await srv.call<IssueList>('GET', '/api/v1/issues')).body.issues.length, 5);
}));

test('successful requests do not count as failures', () => withServer(async (srv) => {
  for (let i = 0; i < 40; i++) assert.equal((await srv.call('GET', '/api/v1/issues')).status, 200);
  assert.equal((await srv.call('GET', '/api/v1/issues', { key: null })).status, 401);
}));

// ---------------------------------------------------------------- lastUsedAt

test('lastUsedAt is set on first use and rewritten at most once a minute', () => withServer(async (srv) => {
  const { id, key } = await keyWithId(srv);
  const t0 = srv.clock.now();
  assert.equal(listKey(srv, id).lastUsedAt, null);
  await srv.call('GET', '/api/v1/issues', { key });
  assert.equal(listKey(srv, id).lastUsedAt, iso(t0));
  srv.clock.advance(30_000);
  await srv.call('GET', '/api/v1/issues', { key });
  srv.clock.advance(29_999);
  await srv.call('GET', '/api/v1/issues', { key });
  assert.equal(listKey(srv, id).lastUsedAt, iso(t0), 'not rewritten within the minute');
  srv.clock.advance(1);
  await srv.call('GET', '/api/v1/issues', { key });
  assert.equal(listKey(srv, id).lastUsedAt, iso(t0 + 60_000));
}));

test('failed authentications do not touch lastUsedAt', () => withServer(async (srv) => {
  const { id, key } = await keyWithId(srv, { expiresAt: iso(srv.clock.now() + 1000) });
  srv.clock.advance(1000);
  assert.equal((await srv.call('GET', '/api/v1/issues', { key })).status, 401);
  assert.equal(listKey(srv, id).lastUsedAt, null);
}));

test('lastUsedAt survives a restart', async () => {
  const srv = await startTestServer();
  const { id, key } = await keyWithId(srv);
  await srv.call('GET', '/api/v1/issues', { key });
  const used = listKey(srv, id).lastUsedAt;
  assert.equal(used, iso(srv.clock.now()));
  await srv.close();
  const again = await startTestServer({ dataDir: srv.dataDir });
  try {
    assert.equal(again.admin.listKeys(srv.workspaceId).keys.find((k) => k.id === id)!.lastUsedAt, used);
  } finally { await again.close(); }
});

// ---------------------------------------------------------------- storage of keys

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...filesUnder(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

test('keys are stored only as SHA-256: no file in the data dir holds a full key; logs never show one', async () => {
  const srv = await startTestServer({ captureLogs: true });
  const { key } = await keyWithId(srv, { scopes: 'issues:write' });
  await srv.call('GET', '/api/v1/issues', { key });
  await srv.call('POST', '/api/v1/issues', { key, body: { subject: 'x' } });
  await srv.call('GET', '/api/v1/issues', { key: key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A') });
  await srv.close();
  const files = filesUnder(srv.dataDir);
  assert.ok(files.length >= 2);
  const all = files.map((f) => readFileSync(f).toString('latin1')).join('\n');
  for (const k of [srv.key, key]) {
    assert.ok(!all.includes(k), 'a full key is on disk');
    assert.ok(!all.includes(k.slice(5)), 'a key body is on disk');
    assert.ok(all.includes(createHash('sha256').update(k).digest('hex')), 'its SHA-256 is what is stored');
    assert.ok(all.includes(k.slice(0, 12)), 'its 12-character prefix is stored');
    assert.ok(!srv.logs.join('\n').includes(k.slice(5)), 'a key is in the logs');
  }
});

// ---------------------------------------------------------------- check order

test('check order: unauthenticated with an invalid body → 401, not 400/415', () => withServer(async (srv) => {
  for (const [raw, ct] of [['{', 'application/json'], ['[]', 'application/json'], ['x', 'text/plain']]) {
    const r = await srv.call('POST', '/api/v1/conversations', { key: null, raw, headers: { 'Content-Type': ct } });
    assert.equal(r.status, 401);
    assert.deepEqual(r.body, UNAUTHORIZED);
  }
}));

test('check order: an expired key with an invalid body → 401 key_expired', () => withServer(async (srv) => {
  const key = await srv.newKey({ expiresAt: iso(srv.clock.now()) });
  const r = await srv.call('POST', '/api/v1/conversations', { key, raw: '{', headers: { 'Content-Type': 'application/json' } });
  assert.deepEqual([r.status, r.body], [401, EXPIRED]);
}));

test('check order: a wrong-scope key with an invalid body → 403, not 400', () => withServer(async (srv) => {
  const key = await srv.newKey({ scopes: 'conversations:read' });
  const r = await srv.call('POST', '/api/v1/conversations', { key, raw: '{', headers: { 'Content-Type': 'application/json' } });
  assert.equal(r.status, 403);
  assert.deepEqual(r.body, scopeError('conversations:write'));
  const patch = await srv.call('PATCH', '/api/v1/conversations/missing', { key, body: { status: 'nope' } });
  assert.deepEqual([patch.status, patch.body], [403, scopeError('conversations:write')]);
}));

test('check order: validation (400) comes before existence (404)', () => withServer(async (srv) => {
  const r = await srv.call('PATCH', '/api/v1/conversations/missing', { body: { status: 'nope' } });
  assert.equal(r.status, 400);
  assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: status must be one of open, waiting, solved.' });
  const valid = await srv.call('PATCH', '/api/v1/conversations/missing', { body: { status: 'solved' } });
  assert.deepEqual([valid.status, valid.body], [404, { code: 'not_found', error: 'Record not found.' }]);
}));
