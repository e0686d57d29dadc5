/**
 * `Idempotency-Key` on POST (docs/api.md#idempotency): replay of the stored status and body with
 * `Idempotent-Replayed: true`, 422 on reuse with another request, scoping per API key, no
 * storage of failures, the 1–255 length rule, the 24 h lifetime on the injected clock,
 * durability across a restart, and 409 while the first request still runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { startTestServer, type TestServer } from './helpers/server.js';
import { Idempotency, requestFingerprint } from '../src/http/idempotency.js';
import { ApiError } from '../src/http/errors.js';
import { hashKey } from '../src/auth/keys.js';
import type { KeyRec } from '../src/store/store.js';
import type { ConversationAnswer, ConversationList, IssueAnswer, MessageList, SourceList } from './helpers/answers.js';

const REUSED = { code: 'idempotency_key_reused', error: 'This Idempotency-Key was already used with a different request.' };
const IN_PROGRESS = { code: 'idempotency_in_progress', error: 'A request with this Idempotency-Key is still being processed.' };
const BAD_KEY = { code: 'invalid_request', error: 'Header Idempotency-Key must be 1 to 255 printable ASCII characters.' };
const conv = (subject = 'Cannot log in') => ({ subject, customer: { email: 'cy@example.com', name: 'Cy' } });
const idem = (k: string) => ({ 'Idempotency-Key': k });

async function withServer(fn: (srv: TestServer) => Promise<void>): Promise<void> {
  const srv = await startTestServer();
  try { await fn(srv); } finally { await srv.close(); }
}

async function conversationIds(srv: TestServer, key?: string): Promise<string[]> {
  const r = await srv.call<ConversationList>('GET', '/api/v1/conversations?limit=100', { key });
  assert.equal(r.status, 200);
  return r.body.conversations.map((c: { id: string }) => c.id);
}

test('the same Idempotency-Key and POST → the same status and body, Idempotent-Replayed: true, one record', () => withServer(async (srv) => {
  const first = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv(), headers: idem('create-1') });
  assert.equal(first.status, 201);
  assert.equal(first.headers.get('idempotent-replayed'), null);
  srv.clock.advance(5000);
  const second = await srv.call('POST', '/api/v1/conversations', { body: conv(), headers: idem('create-1') });
  assert.equal(second.status, 201);
  assert.deepEqual(second.body, first.body);
  assert.equal(second.text, first.text, 'byte-for-byte the same body');
  assert.equal(second.headers.get('idempotent-replayed'), 'true');
  assert.notEqual(second.headers.get('x-request-id'), first.headers.get('x-request-id'), 'the replay is its own request');
  assert.deepEqual(await conversationIds(srv), [first.body.conversation.id]);
}));

test('a replay answers with the stored body even after the record changed', () => withServer(async (srv) => {
  const first = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv(), headers: idem('snap') });
  const id = first.body.conversation.id;
  assert.equal((await srv.call('PATCH', `/api/v1/conversations/${id}`, { body: { status: 'solved' } })).status, 200);
  const replay = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv(), headers: idem('snap') });
  assert.deepEqual(replay.body, first.body);
  assert.equal(replay.body.conversation.status, 'open');
}));

test('replays work on nested POST routes (add message) too', () => withServer(async (srv) => {
  const c = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv() });
  const path = `/api/v1/conversations/${c.body.conversation.id}/messages`;
  const m1 = await srv.call('POST', path, { body: { role: 'user', body: 'hello' }, headers: idem('msg') });
  const m2 = await srv.call('POST', path, { body: { role: 'user', body: 'hello' }, headers: idem('msg') });
  assert.equal(m1.status, 201);
  assert.deepEqual([m2.status, m2.body, m2.headers.get('idempotent-replayed')], [201, m1.body, 'true']);
  const list = await srv.call<MessageList>('GET', path);
  assert.equal(list.body.messages.length, 1);
}));

test('the same key with a different body → 422 idempotency_key_reused, nothing created', () => withServer(async (srv) => {
  const first = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv('A'), headers: idem('k') });
  assert.equal(first.status, 201);
  const r = await srv.call('POST', '/api/v1/conversations', { body: conv('B'), headers: idem('k') });
  assert.equal(r.status, 422);
  assert.deepEqual(r.body, REUSED);
  assert.deepEqual(await conversationIds(srv), [first.body.conversation.id]);
}));

test('a body over 256 KiB (fingerprinted on the body worker): the same key and bytes → a replay; one byte more → 422', () => withServer(async (srv) => {
  const content = `# Big\n\n${'word '.repeat(70_000)}`;
  const first = await srv.call('POST', '/api/v1/sources', { body: { content }, headers: idem('big-1') });
  assert.equal(first.status, 201, first.text.slice(0, 200));
  const again = await srv.call('POST', '/api/v1/sources', { body: { content }, headers: idem('big-1') });
  assert.equal(again.status, 201);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(again.body, first.body);
  const other = await srv.call('POST', '/api/v1/sources', { body: { content: content + '!' }, headers: idem('big-1') });
  assert.equal(other.status, 422);
  assert.deepEqual(other.body, { code: 'idempotency_key_reused', error: 'This Idempotency-Key was already used with a different request.' });
  const list = await srv.call<SourceList>('GET', '/api/v1/sources');
  assert.equal(list.body.sources.length, 1);
}));

test('the same key on another path → 422 idempotency_key_reused', () => withServer(async (srv) => {
  assert.equal((await srv.call('POST', '/api/v1/conversations', { body: conv(), headers: idem('k') })).status, 201);
  const r = await srv.call('POST', '/api/v1/issues', { body: { subject: 'x' }, headers: idem('k') });
  assert.equal(r.status, 422);
  assert.deepEqual(r.body, REUSED);
}));

test('Idempotency-Key is scoped to the API key: another key with the same value creates a new record', () => withServer(async (srv) => {
  const other = await srv.newKey();
  const a = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv(), headers: idem('shared') });
  const b = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { key: other, body: conv(), headers: idem('shared') });
  assert.equal(a.status, 201);
  assert.equal(b.status, 201);
  assert.equal(b.headers.get('idempotent-replayed'), null);
  assert.notEqual(b.body.conversation.id, a.body.conversation.id);
  assert.equal((await conversationIds(srv)).length, 2);
  // Each key replays its own answer.
  const a2 = await srv.call('POST', '/api/v1/conversations', { body: conv(), headers: idem('shared') });
  const b2 = await srv.call('POST', '/api/v1/conversations', { key: other, body: conv(), headers: idem('shared') });
  assert.deepEqual([a2.body, b2.body], [a.body, b.body]);
}));

test('Idempotency-Key in another workspace is independent', () => withServer(async (srv) => {
  const other = await srv.newWorkspace();
  const a = await srv.call('POST', '/api/v1/issues', { body: { subject: 'x' }, headers: idem('ws') });
  const b = await srv.call<IssueAnswer>('POST', '/api/v1/issues', { key: other.key, body: { subject: 'y' }, headers: idem('ws') });
  assert.deepEqual([a.status, b.status], [201, 201]);
  assert.equal(b.body.issue.subject, 'y');
}));

test('a failed validation (400) is not stored: a retry with a fixed body succeeds', () => withServer(async (srv) => {
  const bad = await srv.call('POST', '/api/v1/conversations', { body: { subject: '' , customer: { email: 'cy@example.com' } }, headers: idem('fix-me') });
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.body, { code: 'invalid_request', error: 'Request body is invalid: subject must be 1 to 200 characters.' });
  const again = await srv.call('POST', '/api/v1/conversations', { body: { subject: '', customer: { email: 'cy@example.com' } }, headers: idem('fix-me') });
  assert.equal(again.status, 400, 'the failure is evaluated again, not replayed');
  assert.equal(again.headers.get('idempotent-replayed'), null);
  const fixed = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv(), headers: idem('fix-me') });
  assert.equal(fixed.status, 201);
  assert.equal(fixed.headers.get('idempotent-replayed'), null);
  assert.deepEqual(await conversationIds(srv), [fixed.body.conversation.id]);
}));

test('a handler error (409 conflict, 404) is not stored either', () => withServer(async (srv) => {
  assert.equal((await srv.call('POST', '/api/v1/conversations', { body: { ...conv(), externalId: 'ext-1' } })).status, 201);
  const dup = await srv.call('POST', '/api/v1/conversations', { body: { ...conv(), externalId: 'ext-1' }, headers: idem('c') });
  assert.equal(dup.status, 409);
  assert.deepEqual(dup.body, { code: 'conflict', error: 'A record with this identifier already exists: externalId "ext-1" is already used by another conversation.' });
  const ok = await srv.call('POST', '/api/v1/conversations', { body: { ...conv(), externalId: 'ext-2' }, headers: idem('c') });
  assert.equal(ok.status, 201, 'a different request with the same key runs: the 409 was not stored');
  const missing = await srv.call('POST', '/api/v1/conversations/nope/messages', { body: { role: 'user', body: 'x' }, headers: idem('m') });
  assert.equal(missing.status, 404);
  const c = await srv.call('POST', '/api/v1/conversations', { body: conv('other'), headers: idem('m') });
  assert.equal(c.status, 201);
}));

test('an Idempotency-Key over 255 characters, or empty → 400 invalid_request; 255 is fine', () => withServer(async (srv) => {
  for (const k of ['x'.repeat(256), '']) {
    const r = await srv.call('POST', '/api/v1/conversations', { body: conv(), headers: idem(k) });
    assert.equal(r.status, 400, `length ${k.length}`);
    assert.deepEqual(r.body, BAD_KEY);
  }
  assert.deepEqual(await conversationIds(srv), []);
  const ok = await srv.call('POST', '/api/v1/conversations', { body: conv(), headers: idem('x'.repeat(255)) });
  assert.equal(ok.status, 201);
  const replay = await srv.call('POST', '/api/v1/conversations', { body: conv(), headers: idem('x'.repeat(255)) });
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
}));

test('Idempotency-Key is ignored on GET and PATCH', () => withServer(async (srv) => {
  const c = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv() });
  const id = c.body.conversation.id;
  const g = await srv.call('GET', `/api/v1/conversations/${id}`, { headers: idem('x'.repeat(300)) });
  assert.deepEqual([g.status, g.headers.get('idempotent-replayed')], [200, null]);
  const p1 = await srv.call('PATCH', `/api/v1/conversations/${id}`, { body: { status: 'waiting' }, headers: idem('p') });
  const p2 = await srv.call<ConversationAnswer>('PATCH', `/api/v1/conversations/${id}`, { body: { status: 'solved' }, headers: idem('p') });
  assert.deepEqual([p1.status, p2.status, p2.headers.get('idempotent-replayed')], [200, 200, null]);
  assert.equal(p2.body.conversation.status, 'solved');
}));

test('a stored answer expires after 24 h: the request then executes again', () => withServer(async (srv) => {
  const first = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv(), headers: idem('day') });
  srv.clock.advance(24 * 3600_000 - 1);
  const within = await srv.call('POST', '/api/v1/conversations', { body: conv(), headers: idem('day') });
  assert.deepEqual([within.headers.get('idempotent-replayed'), within.body], ['true', first.body]);
  srv.clock.advance(1);
  const after = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv(), headers: idem('day') });
  assert.equal(after.status, 201);
  assert.equal(after.headers.get('idempotent-replayed'), null);
  assert.notEqual(after.body.conversation.id, first.body.conversation.id);
  assert.equal((await conversationIds(srv)).length, 2);
  // The new answer is what is replayed from now on.
  const replay = await srv.call('POST', '/api/v1/conversations', { body: conv(), headers: idem('day') });
  assert.deepEqual(replay.body, after.body);
  // …and once expired, a different body is allowed too.
  srv.clock.advance(24 * 3600_000);
  assert.equal((await srv.call('POST', '/api/v1/conversations', { body: conv('new'), headers: idem('day') })).status, 201);
}));

test('the stored answer survives a restart on the same data dir', async () => {
  const srv = await startTestServer();
  const first = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv(), headers: idem('durable') });
  assert.equal(first.status, 201);
  await srv.close();
  const again = await startTestServer({ dataDir: srv.dataDir });
  try {
    const r = await again.call('POST', '/api/v1/conversations', { key: srv.key, body: conv(), headers: idem('durable') });
    assert.equal(r.status, 201);
    assert.deepEqual(r.body, first.body);
    assert.equal(r.headers.get('idempotent-replayed'), 'true');
    const reused = await again.call('POST', '/api/v1/conversations', { key: srv.key, body: conv('other'), headers: idem('durable') });
    assert.deepEqual([reused.status, reused.body], [422, REUSED]);
    assert.deepEqual(await conversationIds(again, srv.key), [first.body.conversation.id]);
  } finally { await again.close(); }
});

test('concurrent identical requests with one key create exactly one record; the rest replay or get 409', () => withServer(async (srv) => {
  const answers = await Promise.all(Array.from({ length: 12 }, () =>
    srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: conv(), headers: idem('race') })));
  const fresh = answers.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null);
  assert.equal(fresh.length, 1);
  for (const r of answers) {
    if (r === fresh[0]) continue;
    if (r.status === 409) assert.deepEqual(r.body, IN_PROGRESS);
    else assert.deepEqual([r.status, r.body, r.headers.get('idempotent-replayed')], [201, fresh[0].body, 'true']);
  }
  assert.deepEqual(await conversationIds(srv), [fresh[0].body.conversation.id]);
}));

// ---------------------------------------------------------------- the Idempotency class itself

const fakeReq = (k?: string) => ({ headers: k === undefined ? {} : { 'idempotency-key': k } }) as unknown as IncomingMessage;

function thrown(fn: () => unknown): ApiError {
  try { fn(); } catch (e) { assert.ok(e instanceof ApiError, String(e)); return e; }
  assert.fail('expected an ApiError');
}

/** The fingerprint the server computes for a request line and raw body. */
const fp = (line: string, raw: Buffer | undefined) => () => requestFingerprint(line, raw ? [raw] : []);

test('Idempotency: a second begin() while the first is running → 409 idempotency_in_progress; end() releases it', () => withServer(async (srv) => {
  const ws = srv.store.workspace(srv.workspaceId)!;
  const key = srv.store.keyByHash(hashKey(srv.key)) as KeyRec;
  const idem = new Idempotency();
  const body = Buffer.from('{"a":1}');
  const now = srv.clock.now();
  const t1 = idem.begin(fakeReq('k'), ws, key, fp('POST /x', body), now)!;
  assert.ok(t1 && !t1.replay);
  const e = thrown(() => idem.begin(fakeReq('k'), ws, key, fp('POST /x', body), now));
  assert.deepEqual([e.status, e.body()], [409, IN_PROGRESS]);
  // Even a different request with the running key is 409: the first answer is not known yet.
  assert.equal(thrown(() => idem.begin(fakeReq('k'), ws, key, fp('POST /y', Buffer.from('{}')), now)).code, 'idempotency_in_progress');
  // Another API key with the same header value is not blocked.
  const otherKey = { ...key, id: 'another-key-id' };
  const t2 = idem.begin(fakeReq('k'), ws, otherKey, fp('POST /x', body), now)!;
  assert.ok(t2 && !t2.replay);
  t2.end();
  t1.end();
  const t3 = idem.begin(fakeReq('k'), ws, key, fp('POST /x', body), now)!;
  assert.ok(t3 && !t3.replay, 'released without a stored answer: runs again');
  t3.end();
}));

test('Idempotency: a stored answer is replayed after commit, and a request without the header gets no ticket', () => withServer(async (srv) => {
  const ws = srv.store.workspace(srv.workspaceId)!;
  const key = srv.store.keyByHash(hashKey(srv.key)) as KeyRec;
  const idem = new Idempotency();
  const now = srv.clock.now();
  assert.equal(idem.begin(fakeReq(), ws, key, fp('POST /x', undefined), now), null);
  const t = idem.begin(fakeReq('unit'), ws, key, fp('POST /x', Buffer.from('{}')), now)!;
  const tx = ws.db.begin();
  t.store(tx, { status: 201, body: { ok: true } }, now);
  await ws.db.commit(tx);
  t.end();
  const r = idem.begin(fakeReq('unit'), ws, key, fp('POST /x', Buffer.from('{}')), now + 1000)!;
  assert.deepEqual(r.replay, { status: 201, body: { ok: true }, headers: { 'Idempotent-Replayed': 'true' } });
  const e = thrown(() => idem.begin(fakeReq('unit'), ws, key, fp('POST /x', Buffer.from('{ }')), now));
  assert.deepEqual([e.status, e.body()], [422, REUSED]);
  for (const bad of ['x'.repeat(256), '', 'caf\u00e9', 'tab\there']) {
    const b = thrown(() => idem.begin(fakeReq(bad), ws, key, fp('POST /x', undefined), now));
    assert.deepEqual([b.status, b.body()], [400, BAD_KEY]);
  }
}));

test('Idempotency: an aborted transaction leaves nothing to replay', () => withServer(async (srv) => {
  const ws = srv.store.workspace(srv.workspaceId)!;
  const key = srv.store.keyByHash(hashKey(srv.key)) as KeyRec;
  const idem = new Idempotency();
  const now = srv.clock.now();
  const t = idem.begin(fakeReq('abort'), ws, key, fp('POST /x', undefined), now)!;
  const tx = ws.db.begin();
  t.store(tx, { status: 201, body: { ok: true } }, now);
  tx.abort();
  t.end();
  const again = idem.begin(fakeReq('abort'), ws, key, fp('POST /x', undefined), now)!;
  assert.ok(again && !again.replay);
  again.end();
}));
