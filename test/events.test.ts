/**
 * Events over a real socket (docs/api.md#events): one event per change, in the same log line as
 * the change; the API view in `data.object`; `previousAttributes` on updates; the `type` and
 * `createdAfter` filters; 30-day retention on the injected clock; isolation and scopes.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer, type Space } from './helpers/server.js';

let srv: TestServer;
before(async () => { srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } }); });
after(async () => { await srv.close(); });

interface Ev { object: 'event'; id: string; type: string; createdAt: string; data: { object: Record<string, unknown> }; previousAttributes?: Record<string, unknown> }
interface EvList { object: 'list'; hasMore: boolean; nextCursor: string | null; events: Ev[] }

const E = '/api/v1/events';
const C = '/api/v1/conversations';
const NOT_FOUND = { code: 'not_found', error: 'Record not found.' };
const DAY = 24 * 3600 * 1000;

async function events(w: Space, query = ''): Promise<Ev[]> {
  const r = await w.call<EvList>('GET', `${E}?limit=100${query}`);
  assert.equal(r.status, 200, r.text);
  return r.body.events;
}

async function created<T>(w: Space, path: string, body: unknown, name: string): Promise<T> {
  const r = await w.call<Record<string, T>>('POST', path, { body });
  assert.equal(r.status, 201, r.text);
  return r.body[name];
}

const conversationBody = { subject: 'Help', customer: { name: 'Ada', email: 'ada@example.com' } };

describe('one event per change, with the resource as the API returns it', () => {
  test('conversation.created holds the conversation exactly as the create answered it', async () => {
    const w = await srv.space();
    const conv = await created<Record<string, unknown>>(w, C, conversationBody, 'conversation');
    const [e, ...rest] = await events(w);
    assert.equal(rest.length, 0);
    assert.equal(e.object, 'event');
    assert.equal(e.type, 'conversation.created');
    assert.deepEqual(e.data.object, conv);
    assert.equal(e.previousAttributes, undefined);
    assert.equal(e.createdAt, new Date(srv.clock.now()).toISOString());
    const one = await w.call<{ event: Ev }>('GET', `${E}/${e.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body.event, e);
  });

  test('a PATCH makes conversation.updated with the previous values of the changed fields only', async () => {
    const w = await srv.space();
    const conv = await created<{ id: string; subject: string; updatedAt: string }>(w, C, conversationBody, 'conversation');
    srv.clock.advance(1000);
    const r = await w.call<{ conversation: Record<string, unknown> }>('PATCH', `${C}/${conv.id}`, { body: { subject: 'Help, please' } });
    assert.equal(r.status, 200, r.text);
    const [e] = await events(w, '&type=conversation.updated');
    assert.deepEqual(e.data.object, r.body.conversation);
    assert.deepEqual(e.previousAttributes, { subject: 'Help', updatedAt: conv.updatedAt });
  });

  test('a message makes message.created and conversation.updated (its status and times changed), in the one transaction', async () => {
    const w = await srv.space();
    const conv = await created<{ id: string }>(w, C, conversationBody, 'conversation');
    srv.clock.advance(1000);
    const msg = await created<Record<string, unknown>>(w, `${C}/${conv.id}/messages`, { role: 'agent', body: 'On it' }, 'message');
    const all = await events(w);
    assert.deepEqual(all.map((e) => e.type).sort(), ['conversation.created', 'conversation.updated', 'message.created']);
    const m = all.find((e) => e.type === 'message.created')!;
    assert.deepEqual(m.data.object, msg);
    const u = all.find((e) => e.type === 'conversation.updated')!;
    assert.equal(u.previousAttributes!.status, 'open');
    assert.equal(u.data.object.status, 'waiting');
    // Both events and both records are one log line: a crash keeps all of them or none.
    const dir = join(srv.dataDir, 'workspaces');
    const log = readFileSync(join(dir, readdirSync(dir).find((f) => f.startsWith(w.workspaceId) && f.endsWith('.log'))!), 'utf8');
    const line = log.split('\n').find((l) => l.includes(String(msg.id)) && l.includes('"message"'))!;
    for (const e of [m, u]) assert.ok(line.includes(e.id), `event ${e.type} is in the message's log line`);
  });

  test('issue.created and issue.updated (previousAttributes of the changed fields)', async () => {
    const w = await srv.space();
    const issue = await created<{ id: string; state: string; updatedAt: string }>(w, '/api/v1/issues', { subject: 'Bug' }, 'issue');
    srv.clock.advance(1000);
    const r = await w.call<{ issue: Record<string, unknown> }>('PATCH', `/api/v1/issues/${issue.id}`, { body: { state: 'on_you' } });
    assert.equal(r.status, 200, r.text);
    const [u, c] = await events(w, '&type=issue.*');
    assert.equal(c.type, 'issue.created');
    assert.equal(c.data.object.id, issue.id);
    assert.equal(u.type, 'issue.updated');
    assert.deepEqual(u.data.object, r.body.issue);
    assert.equal(u.previousAttributes!.state, 'new');
    assert.equal(u.previousAttributes!.updatedAt, issue.updatedAt);
  });

  test('source.created, source.updated for its ingestion, and source.deleted — never a credential', async () => {
    const w = await srv.space();
    const secret = 'tok-events-secret-123456';
    const src = await created<{ id: string }>(w, '/api/v1/sources', { content: '# Title\n\nSome text about the API.', name: 'Notes' }, 'source');
    const p = await w.call('PATCH', `/api/v1/sources/${src.id}`, { body: { auth: { type: 'bearer', secret } } });
    assert.equal(p.status, 200, p.text);
    const d = await w.call('DELETE', `/api/v1/sources/${src.id}`);
    assert.equal(d.status, 200, d.text);
    const all = await events(w, '&type=source.*');
    const types = all.map((e) => e.type).reverse();
    assert.equal(types[0], 'source.created');
    assert.equal(all[0].data.object.status, 'ready');
    assert.ok(types.includes('source.updated'));
    assert.equal(types.at(-1), 'source.deleted');
    assert.equal(all[0].data.object.deleted, true);
    assert.equal(all[0].data.object.id, src.id);
    assert.ok(!JSON.stringify(all).includes(secret), 'no event holds the credential');
  });

  test('a refused change makes no event', async () => {
    const w = await srv.space();
    await created(w, C, { ...conversationBody, externalId: 'x-1' }, 'conversation');
    const r = await w.call('POST', C, { body: { ...conversationBody, externalId: 'x-1' } });
    assert.equal(r.status, 409);
    assert.equal((await events(w)).length, 1);
  });

  test('the admin import makes no events', async () => {
    const w = await srv.space();
    await srv.admin.importData(w.workspaceId, { conversations: [{ externalId: 'imp', subject: 'Old', customer: { email: 'p@example.com' }, messages: [{ role: 'user', body: 'old' }] }] });
    assert.deepEqual(await events(w), []);
  });
});

test('events read back identically after a restart (the log holds them as the API shows them)', async () => {
  const dir = (await import('./helpers/server.js')).tempDir();
  const one = await startTestServer({ dataDir: dir, env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } });
  let before: Ev[] = [];
  let beforeText = '';
  let key = '';
  try {
    key = one.key;
    const w = { workspaceId: one.workspaceId, key: one.key, call: one.call };
    const conv = await created<{ id: string }>(w, C, { ...conversationBody, customer: { name: 'Zoë "Q" <x>', email: 'z@example.com' } }, 'conversation');
    await w.call('PATCH', `${C}/${conv.id}`, { body: { subject: 'Ünïcode \u2028 "quoted"', priority: 'urgent' } });
    await created(w, `${C}/${conv.id}/messages`, { role: 'user', body: 'line\nbreak \ud83d\ude00' }, 'message');
    await created(w, '/api/v1/issues', { subject: 'Bug' }, 'issue');
    before = await events(w);
    assert.equal(before.length, 5);
    beforeText = (await w.call('GET', `${E}?limit=100`)).text;
  } finally { await one.close(); }
  const two = await startTestServer({ dataDir: dir, env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } });
  try {
    // A restart prints no new key: the first one still holds.
    const after = await events({ workspaceId: one.workspaceId, key, call: (m, p, o = {}) => two.call(m, p, { ...o, key }) });
    assert.deepEqual(after, before);
    // Byte for byte: the text made from the cached views when the events were written is the
    // JSON.stringify of the replayed records.
    assert.equal((await two.call('GET', `${E}?limit=100`, { key })).text, beforeText);
  } finally { await two.close(); }
});

describe('GET /api/v1/events filters', () => {
  test('type: exact, resource.*; createdAfter excludes the instant itself', async () => {
    const w = await srv.space();
    const conv = await created<{ id: string }>(w, C, conversationBody, 'conversation');
    const t0 = new Date(srv.clock.now()).toISOString();
    srv.clock.advance(1000);
    await created(w, `${C}/${conv.id}/messages`, { role: 'user', body: 'Hi' }, 'message');
    await created(w, '/api/v1/issues', { subject: 'Bug' }, 'issue');
    assert.deepEqual((await events(w, '&type=message.created')).map((e) => e.type), ['message.created']);
    assert.deepEqual((await events(w, '&type=conversation.*')).map((e) => e.type), ['conversation.updated', 'conversation.created']);
    assert.deepEqual((await events(w, `&createdAfter=${encodeURIComponent(t0)}`)).map((e) => e.type), ['issue.created', 'conversation.updated', 'message.created']);
    assert.deepEqual((await events(w, `&type=conversation.*&createdAfter=${encodeURIComponent(t0)}`)).map((e) => e.type), ['conversation.updated']);
  });

  test('a page walk with a type filter returns every matching event once, newest first', async () => {
    const w = await srv.space();
    for (let i = 0; i < 7; i++) { await created(w, C, { ...conversationBody, subject: `S${i}` }, 'conversation'); await created(w, '/api/v1/issues', { subject: `I${i}` }, 'issue'); }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r: { status: number; body: EvList; text: string } = await w.call<EvList>('GET', `${E}?limit=3&type=conversation.created${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(r.status, 200, r.text);
      seen.push(...r.body.events.map((e) => String(e.data.object.subject)));
      cursor = r.body.nextCursor;
    } while (cursor);
    assert.deepEqual(seen, ['S6', 'S5', 'S4', 'S3', 'S2', 'S1', 'S0']);
  });

  test('an unknown type or a malformed createdAfter → 400 with the exact message', async () => {
    const w = await srv.space();
    const bad = await w.call('GET', `${E}?type=conversation.deleted`);
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { code: 'invalid_request', error: 'Query parameter type must be one of conversation.created, conversation.updated, conversation.handoff_requested, message.created, issue.created, issue.updated, source.created, source.updated, source.deleted, answer.created, conversation.*, message.*, issue.*, source.*, answer.*.' });
    const star = await w.call('GET', `${E}?type=*`);
    assert.equal(star.status, 400);
    const date = await w.call('GET', `${E}?createdAfter=yesterday`);
    assert.equal(date.status, 400);
    assert.deepEqual(date.body, { code: 'invalid_request', error: 'Query parameter createdAfter must be an ISO 8601 date-time such as 2026-06-29T12:00:00Z.' });
  });
});

describe('retention, isolation and scope', () => {
  test('an event is listed and retrievable for 30 days, then neither', async () => {
    const w = await srv.space();
    await created(w, C, conversationBody, 'conversation');
    const [e] = await events(w);
    srv.clock.advance(30 * DAY);
    assert.equal((await events(w)).length, 1);
    srv.clock.advance(1);
    assert.deepEqual(await events(w), []);
    const r = await w.call('GET', `${E}/${e.id}`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, NOT_FOUND);
  });

  test("another workspace's event is a 404 and never listed", async () => {
    const a = await srv.space();
    const b = await srv.space();
    await created(a, C, conversationBody, 'conversation');
    const [e] = await events(a);
    const r = await b.call('GET', `${E}/${e.id}`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, NOT_FOUND);
    assert.deepEqual(await events(b), []);
  });

  test('events:read is needed (a conversations-only key gets 403)', async () => {
    const w = await srv.space();
    const key = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'conversations:read' });
    const r = await w.call('GET', E, { key });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs events:read.' });
    const ok = await w.call('GET', E, { key: await srv.newKey({ workspaceId: w.workspaceId, scopes: 'events:read' }) });
    assert.equal(ok.status, 200);
  });
});
