/**
 * Conversations and messages over a real socket (docs/api.md#conversations-and-messages),
 * plus conversation import (docs/configuration.md#import-file).
 * Every test works in a workspace of its own, so lists hold only what the test made.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type CallOptions, type CallResult, type TestServer, type Space } from './helpers/server.js';
import { refused as refusal, refusedWith } from './helpers/refusal.js';
import { idsOf, walkList } from './helpers/lists.js';
import type { ConversationAnswer, ConversationList, CustomFieldList, MessageAnswer, MessageList, Page } from './helpers/answers.js';

let srv: TestServer;
before(async () => { srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } }); });
after(async () => { await srv.close(); });

/** A fresh workspace with a full-access key; `call` uses that key unless told otherwise. */
const space = () => srv.space();

const iso = (ms: number) => new Date(ms).toISOString();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const invalid = (detail: string) => ({ code: 'invalid_request', error: `Request body is invalid: ${detail}.` });
const invalidQuery = (detail: string) => ({ code: 'invalid_request', error: `Query parameter ${detail}.` });
const NOT_FOUND = { code: 'not_found', error: 'Record not found.' };
const C = '/api/v1/conversations';

/** Creates a conversation and returns it (asserting the 201). */
async function create(w: Space, body: Record<string, unknown> = {}): Promise<any> {
  const r = await w.call<ConversationAnswer>('POST', C, { body: { subject: 'Help', customer: { email: 'ada@example.com' }, ...body } });
  assert.equal(r.status, 201, r.text);
  return r.body.conversation;
}

async function message(w: Space, id: string, role: string, body: string): Promise<any> {
  const r = await w.call<MessageAnswer>('POST', `${C}/${id}/messages`, { body: { role, body } });
  assert.equal(r.status, 201, r.text);
  return r.body.message;
}

async function get(w: Space, id: string): Promise<any> {
  const r = await w.call<ConversationAnswer>('GET', `${C}/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.body.conversation;
}

/** The whole list (limit 100), for "nothing changed" checks. */
async function listAll(w: Space, query = ''): Promise<any> {
  const r = await w.call('GET', `${C}?limit=100${query}`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** Walks every page with `limit` (test/helpers/lists.ts checks each page); returns the ids in order and the page sizes. */
async function walk(w: Space, path: string, items: string, limit: number): Promise<{ ids: string[]; sizes: number[] }> {
  const { items: all, sizes } = await walkList<{ id: string }>((p) => w.call('GET', p), path, items, limit);
  return { ids: idsOf(all), sizes };
}

describe('POST /api/v1/conversations', () => {
  test('POST /conversations → 201 with every field: channel api, status open, priority medium, preview "", customer.identitySource api', async () => {
    const w = await space();
    const now = iso(srv.clock.now());
    const r = await w.call<ConversationAnswer>('POST', C, { body: { externalId: 'ext-1', subject: 'Login fails', customer: { name: 'Ada Lovelace', email: 'ada@example.com', company: 'Acme' } } });
    assert.equal(r.status, 201);
    const c = r.body.conversation;
    assert.match(c.id, UUID);
    assert.match(c.customer.id, UUID);
    assert.deepEqual(r.body, {
      conversation: {
        object: 'conversation', id: c.id, externalId: 'ext-1', status: 'open', channel: 'api', priority: 'medium',
        subject: 'Login fails', preview: '',
        customer: { id: c.customer.id, name: 'Ada Lovelace', email: 'ada@example.com', company: 'Acme', identitySource: 'api' },
        createdAt: now, updatedAt: now,
      },
    });
    assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
    // Retrieve returns the same object.
    const g = await w.call('GET', `${C}/${c.id}`);
    assert.equal(g.status, 200);
    assert.deepEqual(g.body, r.body);
  });

  test('POST /conversations with only subject and customer.email → optional fields omitted, not null', async () => {
    const w = await space();
    const now = iso(srv.clock.now());
    const c = await create(w, { subject: 'Minimal', customer: { email: 'min@example.com' } });
    assert.deepEqual(c, {
      object: 'conversation', id: c.id, status: 'open', channel: 'api', priority: 'medium', subject: 'Minimal', preview: '',
      customer: { id: c.customer.id, email: 'min@example.com', identitySource: 'api' }, createdAt: now, updatedAt: now,
    });
  });

  test('POST /conversations with priority and customer.id → both kept', async () => {
    const w = await space();
    const c = await create(w, { priority: 'urgent', customer: { id: 'crm-42', email: 'bob@example.com' } });
    assert.equal(c.priority, 'urgent');
    assert.deepEqual(c.customer, { id: 'crm-42', email: 'bob@example.com', identitySource: 'api' });
    // The next conversation of that email keeps the given id.
    const d = await create(w, { customer: { email: 'BOB@example.com' } });
    assert.equal(d.customer.id, 'crm-42');
  });

  test('POST /conversations with the same email, any case → the same customer.id; another email → another id', async () => {
    const w = await space();
    const a = await create(w, { customer: { email: 'ada@example.com' } });
    const b = await create(w, { customer: { email: 'ADA@Example.COM', name: 'Ada' } });
    const c = await create(w, { customer: { email: 'grace@example.com' } });
    assert.equal(b.customer.id, a.customer.id);
    assert.equal(b.customer.email, 'ADA@Example.COM', 'the email is stored as given');
    assert.notEqual(c.customer.id, a.customer.id);
    // Another workspace does not share customer ids.
    const other = await space();
    const d = await create(other, { customer: { email: 'ada@example.com' } });
    assert.notEqual(d.customer.id, a.customer.id);
  });

  test('one email keeps one customer id: another explicit customer.id for a known email (any case) → 409 exact, nothing created; the same id or none → reused', async () => {
    const w = await space();
    const a = await create(w, { externalId: 'first', customer: { id: 'crm-1', email: 'Lin@example.com' } });
    assert.equal(a.customer.id, 'crm-1');
    const conflict = (email: string) => ({
      code: 'conflict',
      error: `A record with this identifier already exists: customer.email ${JSON.stringify(email)} already has the customer id "crm-1" in this workspace; send that id or none.`,
    });
    for (const email of ['Lin@example.com', 'lin@EXAMPLE.com']) {
      const r = await w.call('POST', C, { body: { subject: 'Hi', externalId: `x-${email}`, customer: { id: 'crm-2', email } } });
      assert.equal(r.status, 409, r.text);
      assert.deepEqual(r.body, conflict(email));
    }
    assert.deepEqual((await listAll(w)).conversations.map((c: any) => c.id), [a.id], 'nothing was created');
    // The refused externalIds were not taken either.
    assert.equal((await w.call('POST', C, { body: { subject: 'Hi', externalId: 'x-Lin@example.com', customer: { email: 'other@example.com' } } })).status, 201);
    // The same id (any case of the email), or no id → the email's id.
    assert.equal((await create(w, { customer: { id: 'crm-1', email: 'LIN@example.com' } })).customer.id, 'crm-1');
    assert.equal((await create(w, { customer: { email: 'lin@example.com' } })).customer.id, 'crm-1');
    // A new email takes the id it is given, and then keeps it.
    assert.equal((await create(w, { customer: { id: 'crm-2', email: 'kim@example.com' } })).customer.id, 'crm-2');
    assert.equal((await w.call('POST', C, { body: { subject: 'Hi', customer: { id: 'crm-3', email: 'kim@example.com' } } })).status, 409);
    // Another workspace has its own customers: the same email may take another id there.
    const other = await space();
    assert.equal((await create(other, { customer: { id: 'crm-9', email: 'lin@example.com' } })).customer.id, 'crm-9');
  });

  test('POST /conversations with a subject of 200 emoji (400 UTF-16 units) → 201: lengths count code points', async () => {
    const w = await space();
    const subject = '😀'.repeat(200);
    const c = await create(w, { subject });
    assert.equal(c.subject, subject);
    const r = await w.call('POST', C, { body: { subject: '😀'.repeat(201), customer: { email: 'a@example.com' } } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, invalid('subject must be 1 to 200 characters'));
  });

  test('POST /conversations at the limits (subject 200, email 320, name 160, company 160, id 200, externalId 200) → 201', async () => {
    const w = await space();
    const email = `${'e'.repeat(308)}@example.com`;
    assert.equal(email.length, 320);
    const body = {
      externalId: 'x'.repeat(200), subject: 's'.repeat(200),
      customer: { id: 'i'.repeat(200), name: 'n'.repeat(160), email, company: 'c'.repeat(160) },
    };
    const c = await create(w, body);
    assert.equal(c.externalId, body.externalId);
    assert.deepEqual(c.customer, { ...body.customer, identitySource: 'api' });
  });

  test('POST /conversations with an externalId already used → 409 conflict naming it; nothing stored', async () => {
    const w = await space();
    const first = await create(w, { externalId: 'x' });
    const before = await listAll(w);
    const r = await w.call('POST', C, { body: { externalId: 'x', subject: 'Again', customer: { email: 'b@example.com' } } });
    assert.equal(r.status, 409);
    assert.deepEqual(r.body, { code: 'conflict', error: 'A record with this identifier already exists: externalId "x" is already used by another conversation.' });
    assert.deepEqual(await listAll(w), before);
    // externalIds are per workspace, and case-sensitive.
    await create(await space(), { externalId: 'x' });
    const upper = await create(w, { externalId: 'X' });
    assert.notEqual(upper.id, first.id);
  });

  const bad: Array<[string, unknown, string]> = [
    ['subject missing', { customer: { email: 'a@example.com' } }, 'subject is required'],
    ['subject ""', { subject: '', customer: { email: 'a@example.com' } }, 'subject must be 1 to 200 characters'],
    ['subject of 201 characters', { subject: 's'.repeat(201), customer: { email: 'a@example.com' } }, 'subject must be 1 to 200 characters'],
    ['subject a number', { subject: 5, customer: { email: 'a@example.com' } }, 'subject must be a string'],
    ['subject null', { subject: null, customer: { email: 'a@example.com' } }, 'subject must be a string'],
    ['customer missing', { subject: 'Hi' }, 'customer is required'],
    ['customer a string', { subject: 'Hi', customer: 'a@example.com' }, 'customer must be a JSON object'],
    ['customer an array', { subject: 'Hi', customer: [] }, 'customer must be a JSON object'],
    ['customer.email missing', { subject: 'Hi', customer: { name: 'Ada' } }, 'customer.email is required'],
    ['customer.email not an email', { subject: 'Hi', customer: { email: 'not-an-email' } }, 'customer.email must be a valid email address'],
    ['customer.email with a space', { subject: 'Hi', customer: { email: 'a b@example.com' } }, 'customer.email must be a valid email address'],
    ['customer.email of 321 characters', { subject: 'Hi', customer: { email: `${'e'.repeat(309)}@example.com` } }, 'customer.email must be at most 320 characters'],
    ['customer.name of 161 characters', { subject: 'Hi', customer: { email: 'a@example.com', name: 'n'.repeat(161) } }, 'customer.name must be at most 160 characters'],
    ['customer.company of 161 characters', { subject: 'Hi', customer: { email: 'a@example.com', company: 'c'.repeat(161) } }, 'customer.company must be at most 160 characters'],
    ['customer.id of 201 characters', { subject: 'Hi', customer: { email: 'a@example.com', id: 'i'.repeat(201) } }, 'customer.id must be 1 to 200 characters'],
    ['customer.id ""', { subject: 'Hi', customer: { email: 'a@example.com', id: '' } }, 'customer.id must be 1 to 200 characters'],
    ['customer.id a number', { subject: 'Hi', customer: { email: 'a@example.com', id: 7 } }, 'customer.id must be a string'],
    ['customer.name a boolean', { subject: 'Hi', customer: { email: 'a@example.com', name: true } }, 'customer.name must be a string'],
    ['externalId ""', { subject: 'Hi', customer: { email: 'a@example.com' }, externalId: '' }, 'externalId must be 1 to 200 characters'],
    ['externalId of 201 characters', { subject: 'Hi', customer: { email: 'a@example.com' }, externalId: 'x'.repeat(201) }, 'externalId must be 1 to 200 characters'],
    ['externalId a number', { subject: 'Hi', customer: { email: 'a@example.com' }, externalId: 12 }, 'externalId must be a string'],
    ['priority "critical"', { subject: 'Hi', customer: { email: 'a@example.com' }, priority: 'critical' }, 'priority must be one of urgent, high, medium, low'],
    ['an unknown top-level property', { subject: 'Hi', customer: { email: 'a@example.com' }, foo: 1 }, 'foo is not an allowed property'],
    ['status (not settable on create)', { subject: 'Hi', customer: { email: 'a@example.com' }, status: 'open' }, 'status is not an allowed property'],
    ['channel (always api here)', { subject: 'Hi', customer: { email: 'a@example.com' }, channel: 'email' }, 'channel is not an allowed property'],
    ['an unknown customer property', { subject: 'Hi', customer: { email: 'a@example.com', phone: '123' } }, 'customer.phone is not an allowed property'],
    ['customer.identitySource (server-set)', { subject: 'Hi', customer: { email: 'a@example.com', identitySource: 'api' } }, 'customer.identitySource is not an allowed property'],
    ['a JSON array body', [{ subject: 'Hi' }], 'the body must be a JSON object'],
    ['a JSON string body', 'hello', 'the body must be a JSON object'],
  ];
  for (const [what, body, detail] of bad) {
    test(`POST /conversations with ${what} → 400 invalid_request "${detail}"; nothing stored`, async () => {
      const w = await space();
      await create(w);
      const before = await listAll(w);
      const r = await w.call('POST', C, { body });
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, invalid(detail));
      assert.deepEqual(await listAll(w), before);
    });
  }

  test('POST /conversations with malformed JSON, an empty body, or __proto__ → 400 with exact bodies; nothing stored', async () => {
    const w = await space();
    const cases: Array<[string, string]> = [
      ['{"subject": "Hi",', 'the body is not valid JSON'],
      ['', 'a JSON body is required'],
      ['{"subject":"Hi","customer":{"email":"a@example.com","__proto__":{"x":1}}}', 'the key __proto__ is not allowed'],
    ];
    for (const [raw, detail] of cases) {
      const r = await w.call('POST', C, { raw, headers: { 'Content-Type': 'application/json' } });
      assert.equal(r.status, 400, raw);
      assert.deepEqual(r.body, invalid(detail));
    }
    assert.deepEqual((await listAll(w)).conversations, []);
  });

  test('POST /conversations as text/plain → 415 unsupported_media_type; nothing stored', async () => {
    const w = await space();
    const r = await w.call('POST', C, { raw: JSON.stringify({ subject: 'Hi', customer: { email: 'a@example.com' } }), headers: { 'Content-Type': 'text/plain' } });
    assert.equal(r.status, 415);
    assert.deepEqual(r.body, { code: 'unsupported_media_type', error: 'The request body must be application/json.' });
    assert.deepEqual((await listAll(w)).conversations, []);
  });

  test('POST /conversations with a conversations:read key → 403 insufficient_scope; nothing stored', async () => {
    const w = await space();
    const readOnly = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'conversations:read' });
    const r = await w.call('POST', C, { key: readOnly, body: { subject: 'Hi', customer: { email: 'a@example.com' } } });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs conversations:write.' });
    assert.deepEqual((await listAll(w)).conversations, []);
    // The read key can list.
    const l = await w.call('GET', C, { key: readOnly });
    assert.equal(l.status, 200);
  });

  test('POST /conversations without a key → 401 unauthorized', async () => {
    const r = await srv.call('POST', C, { key: null, body: { subject: 'Hi', customer: { email: 'a@example.com' } } });
    assert.equal(r.status, 401);
    assert.deepEqual(r.body, { code: 'unauthorized', error: 'A valid workspace API key is required.' });
  });
});

describe('GET /api/v1/conversations/:id', () => {
  test('GET /conversations/:id of an unknown id → 404 not_found', async () => {
    const w = await space();
    for (const id of ['0190a1b2-0000-7000-8000-000000000000', 'nope', 'x'.repeat(300)]) {
      const r = await w.call('GET', `${C}/${id}`);
      assert.equal(r.status, 404);
      assert.deepEqual(r.body, NOT_FOUND);
    }
  });
});

describe('GET /api/v1/conversations', () => {
  test('GET /conversations on an empty workspace → {object:"list", hasMore:false, nextCursor:null, conversations:[]}', async () => {
    const w = await space();
    const r = await w.call('GET', C);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { object: 'list', hasMore: false, nextCursor: null, conversations: [] });
  });

  test('GET /conversations → newest first, whole objects', async () => {
    const w = await space();
    const a = await create(w, { subject: 'A' });
    srv.clock.advance(1000);
    const b = await create(w, { subject: 'B' });
    srv.clock.advance(1000);
    const c = await create(w, { subject: 'C' });
    const r = await w.call('GET', C);
    assert.deepEqual(r.body, { object: 'list', hasMore: false, nextCursor: null, conversations: [c, b, a] });
  });

  test('GET /conversations orders by createdAt, not by last update', async () => {
    const w = await space();
    const a = await create(w, { subject: 'A' });
    srv.clock.advance(1000);
    const b = await create(w, { subject: 'B' });
    srv.clock.advance(1000);
    await message(w, a.id, 'user', 'bump');
    const r = await w.call<ConversationList>('GET', C);
    assert.deepEqual(r.body.conversations.map((x: any) => x.id), [b.id, a.id]);
  });

  test('GET /conversations?status=… → only that status', async () => {
    const w = await space();
    const a = await create(w, { subject: 'A' });
    srv.clock.advance(10);
    const b = await create(w, { subject: 'B' });
    srv.clock.advance(10);
    const c = await create(w, { subject: 'C' });
    await w.call('PATCH', `${C}/${b.id}`, { body: { status: 'waiting' } });
    await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'solved' } });
    const ids = async (q: string) => (await w.call<ConversationList>('GET', `${C}?${q}`)).body.conversations.map((x: any) => x.id);
    assert.deepEqual(await ids('status=open'), [a.id]);
    assert.deepEqual(await ids('status=waiting'), [b.id]);
    assert.deepEqual(await ids('status=solved'), [c.id]);
  });

  test('GET /conversations?channel=… → only that channel (imported email/discord conversations)', async () => {
    const w = await space();
    const api = await create(w, { subject: 'API' });
    await srv.admin.importData(w.workspaceId, {
      conversations: [
        { externalId: 'mail', subject: 'Mail', customer: { email: 'm@example.com' }, channel: 'email', createdAt: '2026-01-01T00:00:00Z' },
        { externalId: 'disc', subject: 'Discord', customer: { email: 'd@example.com' }, channel: 'discord', createdAt: '2026-01-02T00:00:00Z' },
      ],
    });
    const subjects = async (q: string) => (await w.call<ConversationList>('GET', `${C}?${q}`)).body.conversations.map((x: any) => x.subject);
    assert.deepEqual(await subjects('channel=api'), [api.subject]);
    assert.deepEqual(await subjects('channel=email'), ['Mail']);
    assert.deepEqual(await subjects('channel=discord'), ['Discord']);
    assert.deepEqual(await subjects('channel=live-chat'), []);
    assert.deepEqual(await subjects('channel=email&status=open'), ['Mail']);
    assert.deepEqual(await subjects('channel=email&status=solved'), []);
  });

  test('GET /conversations?updatedAfter=… → only conversations updated strictly after that instant', async () => {
    const w = await space();
    const t0 = srv.clock.now();
    const a = await create(w, { subject: 'A' });
    srv.clock.advance(1000);
    const b = await create(w, { subject: 'B' });
    srv.clock.advance(1000);
    const ids = async (q: string) => (await w.call<ConversationList>('GET', `${C}?${q}`)).body.conversations.map((x: any) => x.id);
    assert.deepEqual(await ids(`updatedAfter=${iso(t0 - 1)}`), [b.id, a.id]);
    assert.deepEqual(await ids(`updatedAfter=${iso(t0)}`), [b.id]);
    assert.deepEqual(await ids(`updatedAfter=${iso(t0 + 1000)}`), []);
    // An update moves a conversation into the window; offsets other than Z are understood.
    await w.call('PATCH', `${C}/${a.id}`, { body: { priority: 'low' } });
    assert.deepEqual(await ids(`updatedAfter=${encodeURIComponent(iso(t0 + 1000).replace('Z', '+00:00'))}`), [a.id]);
    const plus2 = new Date(t0 + 1000 + 2 * 3600_000).toISOString().replace('Z', '+02:00');
    assert.deepEqual(await ids(`updatedAfter=${encodeURIComponent(plus2)}`), [a.id]);
  });

  test('GET /conversations?limit=2 → 2 items, hasMore true and a nextCursor; limit=100 → all', async () => {
    const w = await space();
    for (let i = 0; i < 3; i++) { await create(w, { subject: `S${i}` }); srv.clock.advance(1); }
    const r = await w.call<ConversationList>('GET', `${C}?limit=2`);
    assert.equal(r.body.conversations.length, 2);
    assert.equal(r.body.hasMore, true);
    assert.equal(typeof r.body.nextCursor, 'string');
    const all = await w.call<ConversationList>('GET', `${C}?limit=100`);
    assert.equal(all.body.conversations.length, 3);
    assert.equal(all.body.hasMore, false);
  });

  test('GET /conversations default page size is 20', async () => {
    const w = await space();
    for (let i = 0; i < 21; i++) await create(w, { subject: `S${i}` });
    const r = await w.call<ConversationList>('GET', C);
    assert.equal(r.body.conversations.length, 20);
    assert.equal(r.body.hasMore, true);
  });

  test('GET /conversations paginated with cursors: 25 conversations sharing one createdAt → every one exactly once, in list order', async () => {
    const w = await space();
    const made: string[] = [];
    for (let i = 0; i < 25; i++) made.push((await create(w, { subject: `S${i}` })).id);
    const full = (await listAll(w)).conversations.map((x: any) => x.id);
    assert.equal(new Set(full).size, 25);
    assert.deepEqual([...full].sort(), [...made].sort());
    // Same createdAt → newest first is creation order reversed (ids are time-ordered).
    assert.deepEqual(full, [...made].reverse());
    for (const limit of [1, 7, 24, 25, 26]) {
      const { ids, sizes } = await walk(w, C, 'conversations', limit);
      assert.deepEqual(ids, full, `limit ${limit}`);
      assert.deepEqual(sizes, Array.from({ length: Math.ceil(25 / limit) }, (_, i) => Math.min(limit, 25 - i * limit)), `limit ${limit}`);
    }
  });

  test('GET /conversations pagination with a filter: cursors skip records that do not match, no gaps', async () => {
    const w = await space();
    const solved: string[] = [];
    for (let i = 0; i < 12; i++) {
      const c = await create(w, { subject: `S${i}` });
      if (i % 3 === 0) { await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'solved' } }); solved.push(c.id); }
      srv.clock.advance(1);
    }
    const { ids, sizes } = await walk(w, `${C}?status=solved`, 'conversations', 3);
    assert.deepEqual(ids, [...solved].reverse());
    assert.deepEqual(sizes, [3, 1]);
    const open = await walk(w, `${C}?status=open`, 'conversations', 5);
    assert.equal(open.ids.length, 8);
    assert.equal(new Set(open.ids).size, 8);
  });

  test('GET /conversations pagination: a conversation created between pages does not shift the next page', async () => {
    const w = await space();
    for (let i = 0; i < 4; i++) { await create(w, { subject: `S${i}` }); srv.clock.advance(1); }
    const full = (await listAll(w)).conversations.map((x: any) => x.id);
    const p1 = await w.call<ConversationList>('GET', `${C}?limit=2`);
    await create(w, { subject: 'late' });
    const p2 = await w.call<ConversationList>('GET', `${C}?limit=2&cursor=${encodeURIComponent(p1.body.nextCursor!)}`);
    assert.deepEqual([...p1.body.conversations, ...p2.body.conversations].map((x: any) => x.id), full);
    assert.equal(p2.body.hasMore, false);
    assert.equal(p2.body.nextCursor, null);
  });

  const badQueries: Array<[string, string, string]> = [
    ['limit=0', 'limit=0', 'limit must be an integer from 1 to 100'],
    ['limit=101', 'limit=101', 'limit must be an integer from 1 to 100'],
    ['limit=abc', 'limit=abc', 'limit must be an integer from 1 to 100'],
    ['limit=1.5', 'limit=1.5', 'limit must be an integer from 1 to 100'],
    ['limit=-1', 'limit=-1', 'limit must be an integer from 1 to 100'],
    ['limit= (empty)', 'limit=', 'limit must be an integer from 1 to 100'],
    ['status=closed', 'status=closed', 'status must be one of open, waiting, solved'],
    ['status=OPEN', 'status=OPEN', 'status must be one of open, waiting, solved'],
    ['channel=sms', 'channel=sms', 'channel must be one of api, live-chat, email, discord'],
    ['updatedAfter=yesterday', 'updatedAfter=yesterday', 'updatedAfter must be an ISO 8601 date-time such as 2026-06-29T12:00:00Z'],
    ['updatedAfter=2026-06-29 (a date)', 'updatedAfter=2026-06-29', 'updatedAfter must be an ISO 8601 date-time such as 2026-06-29T12:00:00Z'],
    ['updatedAfter=2026-13-30T00:00:00Z (no such month)', 'updatedAfter=2026-13-30T00:00:00Z', 'updatedAfter must be an ISO 8601 date-time such as 2026-06-29T12:00:00Z'],
    ['an unknown parameter', 'foo=1', 'foo is not supported'],
    ['a name Object.prototype has (hasOwnProperty)', 'hasOwnProperty=1', 'hasOwnProperty is not supported'],
    ['a name Object.prototype has (constructor)', 'constructor=x', 'constructor is not supported'],
    ['a repeated parameter', 'status=open&status=waiting', 'status must be given once'],
    ['a repeated limit', 'limit=1&limit=1', 'limit must be given once'],
    ['a garbage cursor', 'cursor=garbage', 'cursor is invalid'],
    ['a forged cursor', `cursor=${Buffer.from('9999\u0000x').toString('base64url')}.AAAAAAAAAAAAAAAAAAAAAA`, 'cursor is invalid'],
  ];
  for (const [what, q, detail] of badQueries) {
    test(`GET /conversations with ${what} → 400 invalid_request "${detail}"`, async () => {
      const w = await space();
      const r = await w.call('GET', `${C}?${q}`);
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, invalidQuery(detail));
    });
  }

  test('GET /conversations?updatedAfter=2026-02-30T00:00:00Z (no such day) → 400 invalid_request', async () => {
    const w = await space();
    const r = await w.call('GET', `${C}?updatedAfter=2026-02-30T00:00:00Z`);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, invalidQuery('updatedAfter must be an ISO 8601 date-time such as 2026-06-29T12:00:00Z'));
  });

  test('GET /conversations with a cursor from another list (messages), or from another workspace → 400 cursor invalid', async () => {
    const w = await space();
    const c = await create(w);
    for (let i = 0; i < 3; i++) await message(w, c.id, 'user', `m${i}`);
    await create(w);
    await create(w);
    const msgCursor = (await w.call<Page>('GET', `${C}/${c.id}/messages?limit=1`)).body.nextCursor!;
    assert.equal(typeof msgCursor, 'string');
    const r = await w.call('GET', `${C}?cursor=${encodeURIComponent(msgCursor)}`);
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, invalidQuery('cursor is invalid'));

    const convCursor = (await w.call<Page>('GET', `${C}?limit=1`)).body.nextCursor!;
    const other = await space();
    await create(other);
    await create(other);
    const x = await other.call('GET', `${C}?cursor=${encodeURIComponent(convCursor)}`);
    assert.equal(x.status, 400);
    assert.deepEqual(x.body, invalidQuery('cursor is invalid'));
    // …and on the messages list of another conversation.
    const d = await create(w);
    await message(w, d.id, 'user', 'x');
    const y = await w.call('GET', `${C}/${d.id}/messages?cursor=${encodeURIComponent(msgCursor)}`);
    assert.equal(y.status, 400);
    assert.deepEqual(y.body, invalidQuery('cursor is invalid'));
    // A tampered cursor (one character of the payload changed) is refused too.
    const tampered = (convCursor[0] === 'A' ? 'B' : 'A') + convCursor.slice(1);
    const z = await w.call('GET', `${C}?cursor=${encodeURIComponent(tampered)}`);
    assert.equal(z.status, 400);
    assert.deepEqual(z.body, invalidQuery('cursor is invalid'));
  });
});

describe('PATCH /api/v1/conversations/:id', () => {
  test('PATCH status open → waiting → solved sets closedAt → open clears it; updatedAt follows the clock', async () => {
    const w = await space();
    const c = await create(w);
    srv.clock.advance(60_000);
    const t1 = iso(srv.clock.now());
    let r = await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'waiting' } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { conversation: { ...c, status: 'waiting', updatedAt: t1 } });

    srv.clock.advance(60_000);
    const t2 = iso(srv.clock.now());
    r = await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'solved' } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { conversation: { ...c, status: 'solved', updatedAt: t2, closedAt: t2 } });
    assert.deepEqual(await get(w, c.id), r.body.conversation);

    srv.clock.advance(60_000);
    const t3 = iso(srv.clock.now());
    r = await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'open' } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { conversation: { ...c, status: 'open', updatedAt: t3 } });
    assert.equal('closedAt' in r.body.conversation, false);
    assert.deepEqual(await get(w, c.id), r.body.conversation);
  });

  test('a conversation answered, solved and reopened keeps its fields in the schema\'s order, in every answer and event, and never shows firstResponseAt', async () => {
    const w = await space();
    const c = await create(w, { externalId: 'ext-order' });
    // The stored record gains firstResponseAt (the agent's reply), then closedAt, then a user message's lastMessageAt.
    await message(w, c.id, 'agent', 'On it');
    srv.clock.advance(1000);
    await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'solved' } });
    const order = ['object', 'id', 'externalId', 'status', 'channel', 'priority', 'subject', 'preview', 'customer', 'createdAt', 'updatedAt', 'lastMessageAt', 'closedAt'];
    const r = await w.call('PATCH', `${C}/${c.id}`, { body: { subject: 'Renamed' } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(JSON.parse(r.text).conversation), order);
    const g = await w.call('GET', `${C}/${c.id}`);
    assert.equal(g.text, r.text);
    const l = await w.call('GET', `${C}?limit=1`);
    assert.deepEqual(Object.keys(JSON.parse(l.text).conversations[0]), order);
    const e = await w.call('GET', '/api/v1/events?type=conversation.updated&limit=1');
    assert.equal(e.status, 200, e.text);
    const event = JSON.parse(e.text).events[0];
    assert.deepEqual(Object.keys(event.data.object), order);
    // Renamed in the same millisecond it was solved: updatedAt did not move.
    assert.deepEqual(event.previousAttributes, { subject: 'Help' });
    srv.clock.advance(1000);
    await message(w, c.id, 'user', 'It broke again');
    assert.deepEqual(Object.keys(await get(w, c.id)), order.filter((k) => k !== 'closedAt'));
  });

  test('PATCH solved → waiting also clears closedAt; solved → solved keeps the first closedAt', async () => {
    const w = await space();
    const c = await create(w);
    srv.clock.advance(1000);
    const t1 = iso(srv.clock.now());
    await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'solved' } });
    srv.clock.advance(1000);
    let r = await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'solved' } });
    assert.deepEqual(r.body, { conversation: { ...c, status: 'solved', updatedAt: t1, closedAt: t1 } });
    srv.clock.advance(1000);
    const t3 = iso(srv.clock.now());
    r = await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'waiting' } });
    assert.deepEqual(r.body, { conversation: { ...c, status: 'waiting', updatedAt: t3 } });
  });

  test('PATCH priority and subject together → both changed, updatedAt moves', async () => {
    const w = await space();
    const c = await create(w);
    srv.clock.advance(5000);
    const t = iso(srv.clock.now());
    const r = await w.call('PATCH', `${C}/${c.id}`, { body: { priority: 'urgent', subject: 'Renamed 😀' } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { conversation: { ...c, priority: 'urgent', subject: 'Renamed 😀', updatedAt: t } });
    assert.deepEqual(await get(w, c.id), r.body.conversation);
  });

  test('PATCH {} → 200 with the conversation unchanged (updatedAt does not move)', async () => {
    const w = await space();
    const c = await create(w);
    srv.clock.advance(5000);
    const r = await w.call('PATCH', `${C}/${c.id}`, { body: {} });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { conversation: c });
    assert.deepEqual(await get(w, c.id), c);
  });

  test('PATCH with the values it already has → 200 unchanged, updatedAt does not move', async () => {
    const w = await space();
    const c = await create(w, { priority: 'high' });
    srv.clock.advance(5000);
    const r = await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'open', priority: 'high', subject: c.subject } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { conversation: c });
  });

  const badPatches: Array<[string, unknown, string]> = [
    ['unknown status', { status: 'closed' }, 'status must be one of open, waiting, solved'],
    ['status null', { status: null }, 'status must be a string'],
    ['status a number', { status: 1 }, 'status must be a string'],
    ['unknown priority', { priority: 'p1' }, 'priority must be one of urgent, high, medium, low'],
    ['subject ""', { subject: '' }, 'subject must be 1 to 200 characters'],
    ['subject of 201 characters', { subject: 's'.repeat(201) }, 'subject must be 1 to 200 characters'],
    ['channel (not patchable)', { channel: 'email' }, 'channel is not an allowed property'],
    ['customer (not patchable)', { customer: { email: 'x@example.com' } }, 'customer is not an allowed property'],
    ['externalId (not patchable)', { externalId: 'y' }, 'externalId is not an allowed property'],
    ['an unknown property next to a valid one', { status: 'solved', foo: 1 }, 'foo is not an allowed property'],
    ['a valid field and an invalid one', { priority: 'low', status: 'done' }, 'status must be one of open, waiting, solved'],
    ['a JSON array', [], 'the body must be a JSON object'],
    ['null', null, 'the body must be a JSON object'],
  ];
  for (const [what, body, detail] of badPatches) {
    test(`PATCH /conversations/:id with ${what} → 400 invalid_request "${detail}"; nothing changed`, async () => {
      const w = await space();
      const c = await create(w);
      srv.clock.advance(1000);
      const r = await w.call('PATCH', `${C}/${c.id}`, { raw: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, invalid(detail));
      assert.deepEqual(await get(w, c.id), c);
    });
  }

  test('PATCH /conversations/:id with no body → 400 "a JSON body is required"', async () => {
    const w = await space();
    const c = await create(w);
    const r = await w.call('PATCH', `${C}/${c.id}`, { raw: '', headers: { 'Content-Type': 'application/json' } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, invalid('a JSON body is required'));
    assert.deepEqual(await get(w, c.id), c);
  });

  test('PATCH /conversations/:id of an unknown id → 404 not_found (a valid body); an invalid body is 400 first', async () => {
    const w = await space();
    const r = await w.call('PATCH', `${C}/0190a1b2-0000-7000-8000-000000000000`, { body: { status: 'solved' } });
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, NOT_FOUND);
    const v = await w.call('PATCH', `${C}/0190a1b2-0000-7000-8000-000000000000`, { body: { status: 'nope' } });
    assert.equal(v.status, 400);
    assert.deepEqual(v.body, invalid('status must be one of open, waiting, solved'));
  });

  test('DELETE /conversations/:id → 405 method_not_allowed with Allow', async () => {
    const w = await space();
    const c = await create(w);
    const r = await w.call('DELETE', `${C}/${c.id}`);
    assert.equal(r.status, 405);
    assert.deepEqual(r.body, { code: 'method_not_allowed', error: 'This method is not allowed on this path: use GET, PATCH, HEAD.' });
    assert.equal(r.headers.get('allow'), 'GET, PATCH, HEAD');
    assert.deepEqual(await get(w, c.id), c);
  });
});

describe('POST /api/v1/conversations/:id/messages', () => {
  test('POST messages (user) → 201 {message}; the conversation gets preview, lastMessageAt and updatedAt, stays open', async () => {
    const w = await space();
    const c = await create(w);
    srv.clock.advance(30_000);
    const t = iso(srv.clock.now());
    const r = await w.call<MessageAnswer>('POST', `${C}/${c.id}/messages`, { body: { role: 'user', body: 'My login fails' } });
    assert.equal(r.status, 201);
    assert.match(r.body.message.id, UUID);
    assert.deepEqual(r.body, { message: { object: 'message', id: r.body.message.id, conversationId: c.id, role: 'user', author: { type: 'api' }, body: 'My login fails', createdAt: t } });
    assert.deepEqual(await get(w, c.id), { ...c, preview: 'My login fails', lastMessageAt: t, updatedAt: t });
  });

  test('an agent message on an open conversation → waiting; a user message on waiting → open', async () => {
    const w = await space();
    const c = await create(w);
    srv.clock.advance(1000);
    const t1 = iso(srv.clock.now());
    await message(w, c.id, 'agent', 'Have you tried turning it off and on?');
    assert.deepEqual(await get(w, c.id), { ...c, status: 'waiting', preview: 'Have you tried turning it off and on?', lastMessageAt: t1, updatedAt: t1 });
    srv.clock.advance(1000);
    const t2 = iso(srv.clock.now());
    await message(w, c.id, 'user', 'Yes');
    assert.deepEqual(await get(w, c.id), { ...c, status: 'open', preview: 'Yes', lastMessageAt: t2, updatedAt: t2 });
  });

  test('a user message on a solved conversation → open and closedAt removed', async () => {
    const w = await space();
    const c = await create(w);
    srv.clock.advance(1000);
    await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'solved' } });
    assert.equal((await get(w, c.id)).closedAt, iso(srv.clock.now()));
    srv.clock.advance(1000);
    const t = iso(srv.clock.now());
    await message(w, c.id, 'user', 'It broke again');
    const after = await get(w, c.id);
    assert.deepEqual(after, { ...c, status: 'open', preview: 'It broke again', lastMessageAt: t, updatedAt: t });
    assert.equal('closedAt' in after, false);
  });

  test('an agent message on waiting or solved → status unchanged; a user message on open → stays open', async () => {
    const w = await space();
    const c = await create(w);
    await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'waiting' } });
    await message(w, c.id, 'agent', 'ping');
    assert.equal((await get(w, c.id)).status, 'waiting');
    srv.clock.advance(1000);
    const solvedAt = iso(srv.clock.now());
    await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'solved' } });
    srv.clock.advance(1000);
    await message(w, c.id, 'agent', 'Closing note');
    const s = await get(w, c.id);
    assert.equal(s.status, 'solved');
    assert.equal(s.closedAt, solvedAt);
    const d = await create(w);
    await message(w, d.id, 'user', 'hello');
    await message(w, d.id, 'user', 'anyone?');
    assert.equal((await get(w, d.id)).status, 'open');
  });

  test('preview is the latest body with whitespace collapsed and trimmed, at most 160 characters', async () => {
    const w = await space();
    const c = await create(w);
    await message(w, c.id, 'user', '  Hello\n\n\tthere   world  ');
    assert.equal((await get(w, c.id)).preview, 'Hello there world');
    const long = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' \n ');
    await message(w, c.id, 'agent', long);
    const p = (await get(w, c.id)).preview;
    assert.equal(p, long.replace(/\s+/g, ' ').slice(0, 160));
    assert.equal(p.length, 160);
    await message(w, c.id, 'user', 'short again');
    assert.equal((await get(w, c.id)).preview, 'short again');
  });

  test('preview never splits an emoji (no lone surrogate at the cut)', async () => {
    const w = await space();
    const c = await create(w);
    await message(w, c.id, 'user', `a${'😀'.repeat(200)}`);
    const p: string = (await get(w, c.id)).preview;
    assert.ok(p.length <= 160);
    assert.equal(p, `a${'😀'.repeat(79)}`);
    assert.equal(p.isWellFormed(), true);
  });

  test('a message body of exactly 20000 characters → 201, stored whole', async () => {
    const w = await space();
    const c = await create(w);
    const m = await message(w, c.id, 'user', 'b'.repeat(20000));
    assert.equal(m.body.length, 20000);
    const l = await w.call<MessageList>('GET', `${C}/${c.id}/messages`);
    assert.equal(l.body.messages[0].body.length, 20000);
  });

  const badMessages: Array<[string, unknown, string]> = [
    ['role missing', { body: 'hi' }, 'role is required'],
    ['body missing', { role: 'user' }, 'body is required'],
    ['role "system"', { role: 'system', body: 'hi' }, 'role must be one of user, agent'],
    ['role "User"', { role: 'User', body: 'hi' }, 'role must be one of user, agent'],
    ['body ""', { role: 'user', body: '' }, 'body must be 1 to 20000 characters'],
    ['body of 20001 characters', { role: 'user', body: 'b'.repeat(20001) }, 'body must be 1 to 20000 characters'],
    ['body a number', { role: 'user', body: 42 }, 'body must be a string'],
    ['body an object', { role: 'user', body: { text: 'hi' } }, 'body must be a string'],
    ['an unknown property', { role: 'user', body: 'hi', createdAt: '2026-01-01T00:00:00Z' }, 'createdAt is not an allowed property'],
  ];
  for (const [what, body, detail] of badMessages) {
    test(`POST /conversations/:id/messages with ${what} → 400 invalid_request "${detail}"; nothing stored`, async () => {
      const w = await space();
      const c = await create(w, { subject: 'solved one' });
      await w.call('PATCH', `${C}/${c.id}`, { body: { status: 'solved' } });
      const conv = await get(w, c.id);
      srv.clock.advance(1000);
      const r = await w.call('POST', `${C}/${c.id}/messages`, { body });
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, invalid(detail));
      assert.deepEqual(await get(w, c.id), conv);
      assert.deepEqual((await w.call('GET', `${C}/${c.id}/messages`)).body, { object: 'list', hasMore: false, nextCursor: null, messages: [] });
    });
  }

  test('POST messages on an unknown conversation → 404 not_found', async () => {
    const w = await space();
    const r = await w.call('POST', `${C}/0190a1b2-0000-7000-8000-000000000000/messages`, { body: { role: 'user', body: 'hi' } });
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, NOT_FOUND);
  });
});

describe('GET /api/v1/conversations/:id/messages', () => {
  test('GET messages → oldest first, whole objects; other conversations\' messages are not included', async () => {
    const w = await space();
    const c = await create(w);
    const other = await create(w);
    const ms = [];
    for (const [role, body] of [['user', 'one'], ['agent', 'two'], ['user', 'three']]) {
      srv.clock.advance(1000);
      ms.push(await message(w, c.id, role, body));
      await message(w, other.id, 'user', `other ${body}`);
    }
    const r = await w.call('GET', `${C}/${c.id}/messages`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { object: 'list', hasMore: false, nextCursor: null, messages: ms });
  });

  test('GET messages of a conversation without messages → empty list', async () => {
    const w = await space();
    const c = await create(w);
    const r = await w.call('GET', `${C}/${c.id}/messages`);
    assert.deepEqual(r.body, { object: 'list', hasMore: false, nextCursor: null, messages: [] });
  });

  test('GET messages paginated: 23 messages in one millisecond → every one once, in sending order', async () => {
    const w = await space();
    const c = await create(w);
    const sent: string[] = [];
    for (let i = 0; i < 23; i++) sent.push((await message(w, c.id, i % 2 ? 'agent' : 'user', `m${i}`)).id);
    for (const limit of [1, 5, 22, 23, 100]) {
      const { ids, sizes } = await walk(w, `${C}/${c.id}/messages`, 'messages', limit);
      assert.deepEqual(ids, sent, `limit ${limit}`);
      assert.equal(sizes.length, Math.ceil(23 / limit));
    }
  });

  test('GET messages with a bad limit, an unknown parameter or a bad cursor → 400', async () => {
    const w = await space();
    const c = await create(w);
    const cases: Array<[string, string]> = [
      ['limit=0', 'limit must be an integer from 1 to 100'],
      ['limit=101', 'limit must be an integer from 1 to 100'],
      ['status=open', 'status is not supported'],
      ['cursor=abc.def', 'cursor is invalid'],
    ];
    for (const [q, detail] of cases) {
      const r = await w.call('GET', `${C}/${c.id}/messages?${q}`);
      assert.equal(r.status, 400, q);
      assert.deepEqual(r.body, invalidQuery(detail));
    }
  });

  test('GET messages of an unknown conversation → 404 not_found', async () => {
    const w = await space();
    const r = await w.call('GET', `${C}/0190a1b2-0000-7000-8000-000000000000/messages`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, NOT_FOUND);
  });
});

describe('workspace isolation', () => {
  test('another workspace\'s conversation id → 404 not_found on GET, PATCH, POST messages and GET messages, exactly like a random id', async () => {
    const mine = await space();
    const theirs = await space();
    const c = await create(theirs, { externalId: 'theirs' });
    await message(theirs, c.id, 'user', 'secret');
    const snapshot = await get(theirs, c.id);
    const random = '0190a1b2-0000-7000-8000-000000000000';
    for (const id of [c.id, random]) {
      const calls: Array<[string, string, unknown]> = [
        ['GET', `${C}/${id}`, undefined],
        ['PATCH', `${C}/${id}`, { status: 'solved' }],
        ['POST', `${C}/${id}/messages`, { role: 'agent', body: 'hi' }],
        ['GET', `${C}/${id}/messages`, undefined],
      ];
      for (const [method, path, body] of calls) {
        const r = await mine.call(method, path, body === undefined ? {} : { body });
        assert.equal(r.status, 404, `${method} ${path}`);
        assert.deepEqual(r.body, NOT_FOUND);
        assert.equal(r.text, JSON.stringify(NOT_FOUND));
      }
    }
    // Their conversation is untouched.
    assert.deepEqual(await get(theirs, c.id), snapshot);
    assert.equal((await theirs.call<MessageList>('GET', `${C}/${c.id}/messages`)).body.messages.length, 1);
  });

  test('lists never show another workspace\'s conversations; the same externalId may be used in each', async () => {
    const a = await space();
    const b = await space();
    const ca = await create(a, { externalId: 'same' });
    const cb = await create(b, { externalId: 'same' });
    assert.deepEqual((await listAll(a)).conversations.map((x: any) => x.id), [ca.id]);
    assert.deepEqual((await listAll(b)).conversations.map((x: any) => x.id), [cb.id]);
    assert.deepEqual((await a.call<ConversationList>('GET', `${C}?status=open&channel=api&updatedAfter=2000-01-01T00:00:00Z`)).body.conversations.map((x: any) => x.id), [ca.id]);
  });
});

describe('import of conversations (admin)', () => {
  test('import conversations with messages and history → createdAt kept, messages replayed in time order with their effects', async () => {
    const w = await space();
    const res = await srv.admin.importData(w.workspaceId, {
      conversations: [
        {
          externalId: 'zd-1', subject: 'Old ticket', customer: { name: 'Ada', email: 'ada@example.com', company: 'Acme' }, channel: 'email',
          priority: 'high', createdAt: '2026-01-01T00:00:00Z',
          messages: [
            { role: 'agent', body: 'We are on it.', createdAt: '2026-01-01T00:05:00Z' },
            { role: 'user', body: 'Printer   on\nfire', createdAt: '2026-01-01T00:01:00Z' },
          ],
        },
        { subject: 'Done', customer: { email: 'ADA@example.com' }, status: 'solved', createdAt: '2026-01-02T00:00:00Z', messages: [{ role: 'user', body: 'thanks' }] },
        { subject: 'Fresh', customer: { email: 'new@example.com' }, channel: 'live-chat' },
      ],
    });
    assert.deepEqual(res, { object: 'import', workspaceId: w.workspaceId, imported: { customFields: 0, tags: 0, agents: 0, conversations: 3, messages: 3, issues: 0 } });
    const now = iso(srv.clock.now());
    const list = (await listAll(w)).conversations;
    assert.deepEqual(list.map((c: any) => c.subject), ['Fresh', 'Done', 'Old ticket']);
    const [fresh, done, old] = list;
    assert.deepEqual(old, {
      object: 'conversation', id: old.id, externalId: 'zd-1', status: 'waiting', channel: 'email', priority: 'high', subject: 'Old ticket',
      preview: 'We are on it.', customer: { id: old.customer.id, name: 'Ada', email: 'ada@example.com', company: 'Acme', identitySource: 'api' },
      createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:05:00.000Z', lastMessageAt: '2026-01-01T00:05:00.000Z',
    });
    assert.deepEqual(done, {
      object: 'conversation', id: done.id, status: 'solved', channel: 'api', priority: 'medium', subject: 'Done', preview: 'thanks',
      customer: { id: old.customer.id, email: 'ADA@example.com', identitySource: 'api' },
      createdAt: '2026-01-02T00:00:00.000Z', updatedAt: '2026-01-02T00:00:00.000Z', lastMessageAt: '2026-01-02T00:00:00.000Z', closedAt: '2026-01-02T00:00:00.000Z',
    });
    assert.deepEqual(fresh, {
      object: 'conversation', id: fresh.id, status: 'open', channel: 'live-chat', priority: 'medium', subject: 'Fresh', preview: '',
      customer: { id: fresh.customer.id, email: 'new@example.com', identitySource: 'api' }, createdAt: now, updatedAt: now,
    });
    const msgs = (await w.call<MessageList>('GET', `${C}/${old.id}/messages`)).body.messages;
    assert.deepEqual(msgs.map((m: any) => [m.role, m.body, m.createdAt]), [
      ['user', 'Printer   on\nfire', '2026-01-01T00:01:00.000Z'],
      ['agent', 'We are on it.', '2026-01-01T00:05:00.000Z'],
    ]);
    // The imported externalId is now taken for the API too.
    const r = await w.call('POST', C, { body: { externalId: 'zd-1', subject: 'dup', customer: { email: 'a@example.com' } } });
    assert.equal(r.status, 409);
    assert.deepEqual(r.body, { code: 'conflict', error: 'A record with this identifier already exists: externalId "zd-1" is already used by another conversation.' });
    // The API keeps the customer id of the imported email.
    assert.equal((await create(w, { customer: { email: 'Ada@Example.com' } })).customer.id, old.customer.id);
  });

  const refused: Array<[string, unknown, string]> = [
    ['an unknown nested property in the second conversation',
      { customFields: [{ label: 'Plan', type: 'text' }], tags: [{ name: 'vip' }], conversations: [{ subject: 'ok', customer: { email: 'a@example.com' } }, { subject: 'bad', customer: { email: 'b@example.com', foo: 1 } }] },
      'import file is invalid: conversations[1].customer.foo is not an allowed property.'],
    ['an invalid message role',
      { conversations: [{ subject: 'ok', customer: { email: 'a@example.com' }, messages: [{ role: 'user', body: 'x' }, { role: 'bot', body: 'y' }] }] },
      'import file is invalid: conversations[0].messages[1].role must be one of user, agent.'],
    ['an invalid createdAt',
      { conversations: [{ subject: 'ok', customer: { email: 'a@example.com' }, createdAt: 'last week' }] },
      'import file is invalid: conversations[0].createdAt must be an ISO 8601 date-time such as 2026-06-29T12:00:00Z.'],
    ['an unknown top-level section',
      { conversations: [], tickets: [] },
      'import file is invalid: tickets is not an allowed property.'],
    ['a file that is not an object',
      [],
      'import file is invalid: the file must be a JSON object.'],
    ['a message older than its conversation',
      { conversations: [{ subject: 'ok', customer: { email: 'a@example.com' } }, { subject: 'x', customer: { email: 'b@example.com' }, createdAt: '2026-01-02T00:00:00Z', messages: [{ role: 'user', body: 'early', createdAt: '2026-01-01T00:00:00Z' }] }] },
      'import file is invalid: conversations[1].messages has a message older than the conversation.'],
    ['a duplicate externalId inside the file',
      { conversations: [{ externalId: 'd', subject: 'one', customer: { email: 'a@example.com' }, messages: [{ role: 'user', body: 'hi' }] }, { externalId: 'd', subject: 'two', customer: { email: 'b@example.com' } }] },
      'import refused: externalId "d" is already used by another conversation.'],
    ['two customer ids for one email inside the file',
      { conversations: [{ subject: 'one', customer: { id: 'c-1', email: 'a@example.com' } }, { subject: 'two', customer: { id: 'c-2', email: 'A@example.com' } }] },
      'import refused: customer.email "A@example.com" already has the customer id "c-1" in this workspace; send that id or none.'],
  ];
  for (const [what, data, message] of refused) {
    test(`import with ${what} → refused, the CLI says "${message}", and nothing imported`, async () => {
      const w = await space();
      await assert.rejects(srv.admin.importData(w.workspaceId, data), refusedWith('import', message));
      assert.deepEqual(await listAll(w), { object: 'list', hasMore: false, nextCursor: null, conversations: [] });
      assert.deepEqual((await w.call<CustomFieldList>('GET', '/api/v1/custom-fields')).body.customFields, []);
      // A correct import afterwards works, and its externalIds are free.
      await srv.admin.importData(w.workspaceId, { conversations: [{ externalId: 'd', subject: 'after', customer: { email: 'a@example.com' } }] });
      assert.deepEqual((await listAll(w)).conversations.map((c: any) => c.subject), ['after']);
    });
  }

  test('an import refused after it added a customer leaves the email free: the API then gives it another id', async () => {
    const w = await space();
    await assert.rejects(srv.admin.importData(w.workspaceId, {
      conversations: [{ subject: 'one', customer: { id: 'c-1', email: 'a@example.com' } }, { externalId: 'e', subject: 'two', customer: { email: 'b@example.com' } }, { externalId: 'e', subject: 'dup', customer: { email: 'c@example.com' } }],
    }), refusal);
    assert.equal((await create(w, { customer: { id: 'c-2', email: 'a@example.com' } })).customer.id, 'c-2');
    assert.equal((await create(w, { customer: { email: 'A@example.com' } })).customer.id, 'c-2');
  });

  test('import into an unknown workspace → refused: no workspace', async () => {
    await assert.rejects(srv.admin.importData('nope', {}), refusedWith('import', 'no workspace "nope"'));
  });
});
