/**
 * Issues over a real socket (docs/api.md#issues) and issue import
 * (docs/configuration.md#import-file). Every test works in a workspace of its own.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type CallOptions, type CallResult, type TestServer, type Space } from './helpers/server.js';
import { refused, refusedWith } from './helpers/refusal.js';
import { idsOf, walkList } from './helpers/lists.js';
import type { ConversationAnswer, ConversationList, IssueAnswer, IssueList } from './helpers/answers.js';

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
const I = '/api/v1/issues';
const C = '/api/v1/conversations';
const RANDOM_ID = '0190a1b2-0000-7000-8000-000000000000';

async function createIssue(w: Space, body: Record<string, unknown> = {}): Promise<any> {
  const r = await w.call<IssueAnswer>('POST', I, { body: { subject: 'Bug', ...body } });
  assert.equal(r.status, 201, r.text);
  return r.body.issue;
}

async function createConversation(w: Space, body: Record<string, unknown> = {}): Promise<any> {
  const r = await w.call<ConversationAnswer>('POST', C, { body: { subject: 'Help', customer: { name: 'Ada', email: 'ada@example.com', company: 'Acme' }, ...body } });
  assert.equal(r.status, 201, r.text);
  return r.body.conversation;
}

async function getIssue(w: Space, id: string): Promise<any> {
  const r = await w.call<IssueAnswer>('GET', `${I}/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.body.issue;
}

async function listAll(w: Space, query = ''): Promise<any> {
  const r = await w.call('GET', `${I}?limit=100${query}`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

const ids = async (w: Space, q: string): Promise<string[]> => {
  const r = await w.call<IssueList>('GET', `${I}?${q}`);
  assert.equal(r.status, 200, r.text);
  return r.body.issues.map((x: { id: string }) => x.id);
};

describe('POST /api/v1/issues', () => {
  test('POST /issues with only a subject → 201 with number 1, state new, priority medium, tags [], source {channel:"api"}, preview ""', async () => {
    const w = await space();
    const now = iso(srv.clock.now());
    const r = await w.call<IssueAnswer>('POST', I, { body: { subject: 'Checkout broken' } });
    assert.equal(r.status, 201);
    assert.match(r.body.issue.id, UUID);
    assert.deepEqual(r.body, {
      issue: {
        object: 'issue', id: r.body.issue.id, number: 1, subject: 'Checkout broken', preview: '', state: 'new', priority: 'medium',
        tags: [], source: { channel: 'api' }, createdAt: now, updatedAt: now, lastActivityAt: now,
      },
    });
    const g = await w.call('GET', `${I}/${r.body.issue.id}`);
    assert.equal(g.status, 200);
    assert.deepEqual(g.body, r.body);
  });

  test('POST /issues with every field → 201 echoing them; preview is the first 160 characters of description', async () => {
    const w = await space();
    const now = iso(srv.clock.now());
    const description = `${'d'.repeat(150)} and then some more text that goes past the cut`;
    const i = await createIssue(w, {
      subject: 'Refunds', description, priority: 'urgent', tags: ['billing', 'refunds'], state: 'on_you',
      customer: { name: 'Grace', email: 'grace@example.com', company: 'Navy' },
    });
    assert.deepEqual(i, {
      object: 'issue', id: i.id, number: 1, subject: 'Refunds', description, preview: description.slice(0, 160), state: 'on_you',
      priority: 'urgent', tags: ['billing', 'refunds'], customer: { name: 'Grace', email: 'grace@example.com', company: 'Navy' },
      source: { channel: 'api' }, createdAt: now, updatedAt: now, lastActivityAt: now,
    });
    assert.equal(i.preview.length, 160);
  });

  test('POST /issues with a short description → preview equals the description', async () => {
    const w = await space();
    const i = await createIssue(w, { description: 'Short one' });
    assert.equal(i.preview, 'Short one');
    assert.equal(i.description, 'Short one');
  });

  test('POST /issues with conversationId → source {channel, conversationId} and customer copied from the conversation', async () => {
    const w = await space();
    const c = await createConversation(w);
    const i = await createIssue(w, { conversationId: c.id });
    assert.deepEqual(i.source, { channel: 'api', conversationId: c.id });
    assert.deepEqual(i.customer, { name: 'Ada', email: 'ada@example.com', company: 'Acme' });
    // An explicit customer wins over the conversation's.
    const j = await createIssue(w, { conversationId: c.id, customer: { email: 'other@example.com' } });
    assert.deepEqual(j.customer, { email: 'other@example.com' });
    // A conversation customer with only an email gives only an email.
    const d = await createConversation(w, { customer: { email: 'solo@example.com' } });
    assert.deepEqual((await createIssue(w, { conversationId: d.id })).customer, { email: 'solo@example.com' });
  });

  test('POST /issues from an imported email conversation → source.channel "email"', async () => {
    const w = await space();
    await srv.admin.importData(w.workspaceId, { conversations: [{ externalId: 'm1', subject: 'Mail', customer: { email: 'm@example.com' }, channel: 'email' }] });
    const conv = (await w.call<ConversationList>('GET', C)).body.conversations[0];
    const i = await createIssue(w, { conversationId: conv.id });
    assert.deepEqual(i.source, { channel: 'email', conversationId: conv.id });
  });

  test('POST /issues numbers issues 1, 2, 3 per workspace; another workspace counts on its own', async () => {
    const a = await space();
    const b = await space();
    assert.deepEqual([(await createIssue(a)).number, (await createIssue(a)).number], [1, 2]);
    assert.equal((await createIssue(b)).number, 1);
    assert.equal((await createIssue(a)).number, 3);
    assert.equal((await createIssue(b)).number, 2);
  });

  test('POST /issues with an unknown conversationId → 400 naming it; nothing stored and no number used', async () => {
    const w = await space();
    const r = await w.call('POST', I, { body: { subject: 'x', conversationId: RANDOM_ID } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, invalid('conversationId does not match a conversation in this workspace'));
    assert.deepEqual(await listAll(w), { object: 'list', hasMore: false, nextCursor: null, issues: [] });
    assert.equal((await createIssue(w)).number, 1);
  });

  test('POST /issues with a conversationId of another workspace → the same 400 as an unknown one; nothing stored', async () => {
    const w = await space();
    const other = await space();
    const c = await createConversation(other);
    const r = await w.call('POST', I, { body: { subject: 'x', conversationId: c.id } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, invalid('conversationId does not match a conversation in this workspace'));
    assert.deepEqual((await listAll(w)).issues, []);
    assert.deepEqual((await listAll(other)).issues, []);
  });

  test('POST /issues tags: duplicates dropped case-insensitively, first spelling and order kept', async () => {
    const w = await space();
    const i = await createIssue(w, { tags: ['Bug', 'billing', 'bug', 'BUG', 'Billing', 'ux'] });
    assert.deepEqual(i.tags, ['Bug', 'billing', 'ux']);
  });

  test('POST /issues with 50 tags of 64 characters → 201; 50 tags (case duplicates of one) keep 1', async () => {
    const w = await space();
    const tags = Array.from({ length: 50 }, (_, n) => `${String(n).padStart(2, '0')}${'t'.repeat(62)}`);
    assert.deepEqual((await createIssue(w, { tags })).tags, tags);
    const same = Array.from({ length: 50 }, (_, n) => (n % 2 ? 'Dup' : 'dUP'));
    assert.deepEqual((await createIssue(w, { tags: same })).tags, ['dUP']);
  });

  test('POST /issues with state closed → closedAt set at creation', async () => {
    const w = await space();
    const now = iso(srv.clock.now());
    const i = await createIssue(w, { state: 'closed' });
    assert.equal(i.state, 'closed');
    assert.equal(i.closedAt, now);
  });

  test('POST /issues with subject of 200 emoji → 201 (code points); description of 20000 → 201', async () => {
    const w = await space();
    const i = await createIssue(w, { subject: '🐛'.repeat(200), description: 'x'.repeat(20000) });
    assert.equal(i.subject, '🐛'.repeat(200));
    assert.equal(i.description.length, 20000);
    assert.equal(i.preview, 'x'.repeat(160));
  });

  const bad: Array<[string, unknown, string]> = [
    ['subject missing', { description: 'x' }, 'subject is required'],
    ['subject ""', { subject: '' }, 'subject must be 1 to 200 characters'],
    ['subject of 201 characters', { subject: 's'.repeat(201) }, 'subject must be 1 to 200 characters'],
    ['subject a number', { subject: 1 }, 'subject must be a string'],
    ['description of 20001 characters', { subject: 'x', description: 'd'.repeat(20001) }, 'description must be at most 20000 characters'],
    ['priority "p1"', { subject: 'x', priority: 'p1' }, 'priority must be one of urgent, high, medium, low'],
    ['state "open"', { subject: 'x', state: 'open' }, 'state must be one of new, on_you, on_customer, on_hold, closed'],
    ['tags a string', { subject: 'x', tags: 'bug' }, 'tags must be an array'],
    ['51 tags', { subject: 'x', tags: Array.from({ length: 51 }, (_, n) => `t${n}`) }, 'tags must have at most 50 items'],
    ['an empty tag', { subject: 'x', tags: ['ok', ''] }, 'tags[1] must be 1 to 64 characters'],
    ['a tag of 65 characters', { subject: 'x', tags: ['t'.repeat(65)] }, 'tags[0] must be 1 to 64 characters'],
    ['a tag that is a number', { subject: 'x', tags: [5] }, 'tags[0] must be a string'],
    ['customer.email invalid', { subject: 'x', customer: { email: 'nope' } }, 'customer.email must be a valid email address'],
    ['customer.name of 161 characters', { subject: 'x', customer: { name: 'n'.repeat(161) } }, 'customer.name must be at most 160 characters'],
    ['customer.company of 161 characters', { subject: 'x', customer: { company: 'c'.repeat(161) } }, 'customer.company must be at most 160 characters'],
    ['customer.id (not an issue customer field)', { subject: 'x', customer: { id: 'c1' } }, 'customer.id is not an allowed property'],
    ['conversationId ""', { subject: 'x', conversationId: '' }, 'conversationId must be 1 to 200 characters'],
    ['source (server-set)', { subject: 'x', source: { channel: 'api' } }, 'source is not an allowed property'],
    ['number (server-set)', { subject: 'x', number: 7 }, 'number is not an allowed property'],
    ['an unknown property', { subject: 'x', foo: true }, 'foo is not an allowed property'],
  ];
  for (const [what, body, detail] of bad) {
    test(`POST /issues with ${what} → 400 invalid_request "${detail}"; nothing stored`, async () => {
      const w = await space();
      const first = await createIssue(w);
      const before = await listAll(w);
      const r = await w.call('POST', I, { body });
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, invalid(detail));
      assert.deepEqual(await listAll(w), before);
      assert.equal((await createIssue(w)).number, first.number + 1);
    });
  }

  test('POST /issues with a conversations-only key → 403 insufficient_scope', async () => {
    const w = await space();
    const k = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'conversations:write' });
    const r = await w.call('POST', I, { key: k, body: { subject: 'x' } });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs issues:write.' });
    const g = await w.call('GET', I, { key: await srv.newKey({ workspaceId: w.workspaceId, scopes: 'issues:write' }) });
    assert.equal(g.status, 200, 'issues:write implies issues:read');
    assert.deepEqual((await listAll(w)).issues, []);
  });
});

describe('GET /api/v1/issues/:id', () => {
  test('GET /issues/:id of an unknown id → 404 not_found', async () => {
    const w = await space();
    for (const id of [RANDOM_ID, 'abc']) {
      const r = await w.call('GET', `${I}/${id}`);
      assert.equal(r.status, 404);
      assert.deepEqual(r.body, NOT_FOUND);
    }
  });

  test('lastActivityAt is the later of updatedAt and the linked conversation\'s lastMessageAt', async () => {
    const w = await space();
    const c = await createConversation(w);
    srv.clock.advance(1000);
    const created = iso(srv.clock.now());
    const i = await createIssue(w, { conversationId: c.id });
    assert.equal(i.lastActivityAt, created);
    srv.clock.advance(1000);
    const msgAt = iso(srv.clock.now());
    await w.call('POST', `${C}/${c.id}/messages`, { body: { role: 'user', body: 'still broken' } });
    assert.deepEqual(await getIssue(w, i.id), { ...i, lastActivityAt: msgAt });
    // The list shows the same.
    assert.equal((await listAll(w)).issues[0].lastActivityAt, msgAt);
    srv.clock.advance(1000);
    const patchedAt = iso(srv.clock.now());
    const p = await w.call('PATCH', `${I}/${i.id}`, { body: { priority: 'high' } });
    assert.deepEqual(p.body, { issue: { ...i, priority: 'high', updatedAt: patchedAt, lastActivityAt: patchedAt } });
    // A conversation whose last message is older than the issue's update does not pull it back.
    await srv.admin.importData(w.workspaceId, { conversations: [{ externalId: 'past', subject: 'Old', customer: { email: 'p@example.com' }, createdAt: '2026-01-01T00:00:00Z', messages: [{ role: 'user', body: 'old' }] }] });
    const past = (await w.call<ConversationList>('GET', C)).body.conversations.find((x) => x.externalId === 'past');
    assert.ok(past);
    assert.equal(past.lastMessageAt, '2026-01-01T00:00:00.000Z');
    const j = await createIssue(w, { conversationId: past.id });
    assert.equal(j.lastActivityAt, j.updatedAt);
    assert.equal(j.lastActivityAt, iso(srv.clock.now()));
  });
});

describe('PATCH /api/v1/issues/:id', () => {
  test('PATCH state closed sets closedAt; reopening clears it; updatedAt follows the clock', async () => {
    const w = await space();
    const i = await createIssue(w);
    srv.clock.advance(1000);
    const t1 = iso(srv.clock.now());
    let r = await w.call<IssueAnswer>('PATCH', `${I}/${i.id}`, { body: { state: 'closed' } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { issue: { ...i, state: 'closed', closedAt: t1, updatedAt: t1, lastActivityAt: t1 } });
    srv.clock.advance(1000);
    r = await w.call<IssueAnswer>('PATCH', `${I}/${i.id}`, { body: { state: 'closed' } });
    assert.deepEqual(r.body.issue.closedAt, t1, 'closing a closed issue keeps closedAt');
    assert.equal(r.body.issue.updatedAt, t1);
    srv.clock.advance(1000);
    const t3 = iso(srv.clock.now());
    r = await w.call('PATCH', `${I}/${i.id}`, { body: { state: 'on_customer' } });
    assert.deepEqual(r.body, { issue: { ...i, state: 'on_customer', updatedAt: t3, lastActivityAt: t3 } });
    assert.equal('closedAt' in r.body.issue, false);
    assert.deepEqual(await getIssue(w, i.id), r.body.issue);
  });

  test('PATCH subject, description, priority, tags and customer → all replaced; preview follows description', async () => {
    const w = await space();
    const i = await createIssue(w, { description: 'old', tags: ['a', 'b'], customer: { name: 'Old', email: 'old@example.com' } });
    srv.clock.advance(1000);
    const t = iso(srv.clock.now());
    const description = 'n'.repeat(200);
    const r = await w.call('PATCH', `${I}/${i.id}`, { body: { subject: 'New', description, priority: 'low', tags: ['C', 'c', 'd'], customer: { company: 'NewCo' } } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {
      issue: { ...i, subject: 'New', description, preview: 'n'.repeat(160), priority: 'low', tags: ['C', 'd'], customer: { company: 'NewCo' }, updatedAt: t, lastActivityAt: t },
    });
    assert.deepEqual(await getIssue(w, i.id), r.body.issue);
    // description "" clears the preview.
    const e = await w.call<IssueAnswer>('PATCH', `${I}/${i.id}`, { body: { description: '' } });
    assert.equal(e.body.issue.preview, '');
    assert.equal(e.body.issue.description, '');
    // tags [] removes every tag.
    const g = await w.call<IssueAnswer>('PATCH', `${I}/${i.id}`, { body: { tags: [] } });
    assert.deepEqual(g.body.issue.tags, []);
  });

  test('PATCH {} and PATCH with the current values → 200 unchanged, updatedAt does not move', async () => {
    const w = await space();
    const i = await createIssue(w, { tags: ['x'], priority: 'high' });
    srv.clock.advance(5000);
    for (const body of [{}, { priority: 'high', tags: ['x'], state: 'new', subject: i.subject }]) {
      const r = await w.call('PATCH', `${I}/${i.id}`, { body });
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, { issue: i });
    }
    assert.deepEqual(await getIssue(w, i.id), i);
  });

  test('PATCH customer with the same fields in another key order → 200 unchanged, updatedAt does not move', async () => {
    const w = await space();
    const i = await createIssue(w, { customer: { name: 'Ada', email: 'ada@example.com', company: 'Acme' } });
    srv.clock.advance(5000);
    const r = await w.call('PATCH', `${I}/${i.id}`, { body: { customer: { company: 'Acme', email: 'ada@example.com', name: 'Ada' } } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { issue: i });
  });

  const badPatches: Array<[string, unknown, string]> = [
    ['conversationId (not patchable)', { conversationId: RANDOM_ID }, 'conversationId is not an allowed property'],
    ['state "done"', { state: 'done' }, 'state must be one of new, on_you, on_customer, on_hold, closed'],
    ['priority "P2"', { priority: 'P2' }, 'priority must be one of urgent, high, medium, low'],
    ['subject ""', { subject: '' }, 'subject must be 1 to 200 characters'],
    ['subject null', { subject: null }, 'subject must be a string'],
    ['description of 20001 characters', { description: 'd'.repeat(20001) }, 'description must be at most 20000 characters'],
    ['51 tags', { tags: Array.from({ length: 51 }, (_, n) => `t${n}`) }, 'tags must have at most 50 items'],
    ['a tag of 65 characters', { tags: ['ok', 't'.repeat(65)] }, 'tags[1] must be 1 to 64 characters'],
    ['customer with an unknown property', { customer: { phone: '1' } }, 'customer.phone is not an allowed property'],
    ['number', { number: 9 }, 'number is not an allowed property'],
    ['closedAt', { closedAt: '2026-01-01T00:00:00Z' }, 'closedAt is not an allowed property'],
  ];
  for (const [what, body, detail] of badPatches) {
    test(`PATCH /issues/:id with ${what} → 400 invalid_request "${detail}"; nothing changed`, async () => {
      const w = await space();
      const c = await createConversation(w);
      const i = await createIssue(w, { tags: ['keep'], conversationId: c.id });
      srv.clock.advance(1000);
      const r = await w.call('PATCH', `${I}/${i.id}`, { body });
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, invalid(detail));
      assert.deepEqual(await getIssue(w, i.id), i);
    });
  }

  test('PATCH /issues/:id of an unknown id → 404 not_found', async () => {
    const w = await space();
    const r = await w.call('PATCH', `${I}/${RANDOM_ID}`, { body: { state: 'closed' } });
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, NOT_FOUND);
  });
});

describe('GET /api/v1/issues', () => {
  test('GET /issues on an empty workspace → {object:"list", hasMore:false, nextCursor:null, issues:[]}', async () => {
    const w = await space();
    const r = await w.call('GET', I);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { object: 'list', hasMore: false, nextCursor: null, issues: [] });
  });

  test('GET /issues → newest first, whole objects', async () => {
    const w = await space();
    const a = await createIssue(w, { subject: 'A' });
    srv.clock.advance(1000);
    const b = await createIssue(w, { subject: 'B' });
    srv.clock.advance(1000);
    await w.call('PATCH', `${I}/${a.id}`, { body: { priority: 'low' } });
    const aNow = await getIssue(w, a.id);
    const r = await w.call('GET', I);
    assert.deepEqual(r.body, { object: 'list', hasMore: false, nextCursor: null, issues: [b, aNow] });
  });

  test('GET /issues filters: state, priority, tag (case-insensitive), conversationId, updatedAfter, combined', async () => {
    const w = await space();
    const c1 = await createConversation(w);
    const c2 = await createConversation(w, { customer: { email: 'b@example.com' } });
    const t0 = srv.clock.now();
    const a = await createIssue(w, { subject: 'A', state: 'closed', priority: 'high', tags: ['Bug', 'ui'], conversationId: c1.id });
    srv.clock.advance(1000);
    const b = await createIssue(w, { subject: 'B', state: 'on_hold', priority: 'high', tags: ['billing'], conversationId: c2.id });
    srv.clock.advance(1000);
    const c = await createIssue(w, { subject: 'C', priority: 'low', tags: ['bug'], conversationId: c1.id });
    srv.clock.advance(1000);
    const d = await createIssue(w, { subject: 'D' });
    assert.deepEqual(await ids(w, 'state=closed'), [a.id]);
    assert.deepEqual(await ids(w, 'state=new'), [d.id, c.id]);
    assert.deepEqual(await ids(w, 'state=on_you'), []);
    assert.deepEqual(await ids(w, 'priority=high'), [b.id, a.id]);
    assert.deepEqual(await ids(w, 'priority=medium'), [d.id]);
    assert.deepEqual(await ids(w, 'tag=bug'), [c.id, a.id]);
    assert.deepEqual(await ids(w, 'tag=BUG'), [c.id, a.id]);
    assert.deepEqual(await ids(w, 'tag=bu'), [], 'tags match whole');
    assert.deepEqual(await ids(w, `tag=${encodeURIComponent('Billing')}`), [b.id]);
    assert.deepEqual(await ids(w, `conversationId=${c1.id}`), [c.id, a.id]);
    assert.deepEqual(await ids(w, `conversationId=${c2.id}`), [b.id]);
    assert.deepEqual(await ids(w, `conversationId=${RANDOM_ID}`), []);
    assert.deepEqual(await ids(w, `updatedAfter=${iso(t0)}`), [d.id, c.id, b.id]);
    assert.deepEqual(await ids(w, `updatedAfter=${iso(t0 + 2000)}`), [d.id]);
    assert.deepEqual(await ids(w, `updatedAfter=${iso(t0 + 3000)}`), []);
    assert.deepEqual(await ids(w, `tag=bug&priority=high&conversationId=${c1.id}`), [a.id]);
    assert.deepEqual(await ids(w, 'tag=bug&state=new&priority=low'), [c.id]);
    // updatedAfter sees a later update.
    srv.clock.advance(1000);
    await w.call('PATCH', `${I}/${a.id}`, { body: { state: 'on_you' } });
    assert.deepEqual(await ids(w, `updatedAfter=${iso(t0 + 3000)}`), [a.id]);
    assert.deepEqual(await ids(w, 'state=closed'), []);
  });

  test('GET /issues paginated with cursors: 23 issues sharing one createdAt → each exactly once, newest first', async () => {
    const w = await space();
    const made: string[] = [];
    for (let n = 0; n < 23; n++) made.push((await createIssue(w, { subject: `S${n}`, tags: n % 2 ? ['odd'] : ['even'] })).id);
    const walk = async (path: string, limit: number) => {
      const { items, sizes } = await walkList<{ id: string }>((p) => w.call('GET', p), path, 'issues', limit);
      return { out: idsOf(items), sizes };
    };
    for (const limit of [1, 4, 22, 23, 24]) {
      const { out, sizes } = await walk(I, limit);
      assert.deepEqual(out, [...made].reverse(), `limit ${limit}`);
      assert.equal(sizes.length, Math.ceil(23 / limit));
    }
    const odd = await walk(`${I}?tag=ODD`, 5);
    assert.deepEqual(odd.out, made.filter((_, n) => n % 2).reverse());
    assert.deepEqual(odd.sizes, [5, 5, 1]);
    // Numbers are 1…23 without gaps.
    const numbers = (await listAll(w)).issues.map((x: any) => x.number);
    assert.deepEqual(numbers, Array.from({ length: 23 }, (_, n) => 23 - n));
  });

  const badQueries: Array<[string, string]> = [
    ['state=open', 'state must be one of new, on_you, on_customer, on_hold, closed'],
    ['priority=critical', 'priority must be one of urgent, high, medium, low'],
    ['tag=', 'tag must be 1 to 64 characters'],
    [`tag=${'t'.repeat(65)}`, 'tag must be 1 to 64 characters'],
    ['conversationId=', 'conversationId must be 1 to 200 characters'],
    ['updatedAfter=2026', 'updatedAfter must be an ISO 8601 date-time such as 2026-06-29T12:00:00Z'],
    ['limit=0', 'limit must be an integer from 1 to 100'],
    ['limit=101', 'limit must be an integer from 1 to 100'],
    ['limit=abc', 'limit must be an integer from 1 to 100'],
    ['limit=1.5', 'limit must be an integer from 1 to 100'],
    ['status=open', 'status is not supported'],
    ['tag=a&tag=b', 'tag must be given once'],
    ['cursor=nope', 'cursor is invalid'],
  ];
  for (const [q, detail] of badQueries) {
    test(`GET /issues?${q.length > 40 ? `${q.slice(0, 40)}…` : q} → 400 invalid_request "${detail}"`, async () => {
      const w = await space();
      const r = await w.call('GET', `${I}?${q}`);
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, invalidQuery(detail));
    });
  }

  // A cursor of another list (the conversations') is refused: test/lists.test.ts checks every pair of lists.
});

describe('workspace isolation', () => {
  test('another workspace\'s issue id → 404 not_found on GET and PATCH, exactly like a random id; the issue is untouched', async () => {
    const mine = await space();
    const theirs = await space();
    const i = await createIssue(theirs, { subject: 'Theirs' });
    for (const id of [i.id, RANDOM_ID]) {
      for (const [method, body] of [['GET', undefined], ['PATCH', { state: 'closed' }]] as const) {
        const r = await mine.call(method, `${I}/${id}`, body === undefined ? {} : { body });
        assert.equal(r.status, 404, `${method} ${id}`);
        assert.equal(r.text, JSON.stringify(NOT_FOUND));
      }
    }
    assert.deepEqual(await getIssue(theirs, i.id), i);
  });

  test('lists never show another workspace\'s issues, with or without filters', async () => {
    const a = await space();
    const b = await space();
    const ca = await createConversation(a);
    const cb = await createConversation(b);
    const ia = await createIssue(a, { tags: ['shared'], conversationId: ca.id });
    const ib = await createIssue(b, { tags: ['shared'], conversationId: cb.id });
    assert.deepEqual(await ids(a, 'limit=100'), [ia.id]);
    assert.deepEqual(await ids(b, 'limit=100'), [ib.id]);
    assert.deepEqual(await ids(a, 'tag=shared'), [ia.id]);
    assert.deepEqual(await ids(a, `conversationId=${cb.id}`), []);
  });
});

describe('import of issues (admin)', () => {
  test('import issues linked by conversationExternalId → source and customer from the conversation, createdAt kept, numbers continue', async () => {
    const w = await space();
    await createIssue(w, { subject: 'Before import' });
    const res = await srv.admin.importData(w.workspaceId, {
      tags: [{ name: 'legacy' }, { name: 'Legacy' }],
      conversations: [{ externalId: 'zd-9', subject: 'Old', customer: { name: 'Ada', email: 'ada@example.com' }, channel: 'discord', createdAt: '2026-01-01T00:00:00Z', messages: [{ role: 'user', body: 'hi', createdAt: '2026-01-03T00:00:00Z' }] }],
      issues: [
        { subject: 'Linked', description: 'from zendesk', tags: ['legacy', 'LEGACY', 'p1'], state: 'closed', priority: 'high', conversationExternalId: 'zd-9', createdAt: '2026-01-02T00:00:00Z' },
        { subject: 'Loose', customer: { email: 'x@example.com' } },
      ],
    });
    assert.deepEqual(res.imported, { customFields: 0, tags: 1, agents: 0, conversations: 1, messages: 1, issues: 2 });
    const conv = (await w.call<ConversationList>('GET', C)).body.conversations[0];
    const list = (await listAll(w)).issues;
    assert.deepEqual(list.map((x: any) => [x.subject, x.number]), [['Loose', 3], ['Before import', 1], ['Linked', 2]]);
    const linked = list[2];
    assert.deepEqual(linked, {
      object: 'issue', id: linked.id, number: 2, subject: 'Linked', description: 'from zendesk', preview: 'from zendesk', state: 'closed', priority: 'high',
      tags: ['legacy', 'p1'], customer: { name: 'Ada', email: 'ada@example.com' }, source: { channel: 'discord', conversationId: conv.id },
      createdAt: '2026-01-02T00:00:00.000Z', updatedAt: '2026-01-02T00:00:00.000Z', closedAt: '2026-01-02T00:00:00.000Z',
      lastActivityAt: '2026-01-03T00:00:00.000Z',
    });
    assert.deepEqual(await ids(w, `conversationId=${conv.id}`), [linked.id]);
    assert.equal((await createIssue(w)).number, 4);
  });

  test('import with an issue linked to a missing conversationExternalId → refused naming issues[1]; nothing imported', async () => {
    const w = await space();
    await assert.rejects(srv.admin.importData(w.workspaceId, {
      conversations: [{ externalId: 'c1', subject: 'x', customer: { email: 'a@example.com' } }],
      issues: [{ subject: 'ok', conversationExternalId: 'c1' }, { subject: 'bad', conversationExternalId: 'c2' }],
    }), refusedWith('import', 'import file is invalid: issues[1].conversationExternalId matches no conversation.'));
    assert.deepEqual((await listAll(w)).issues, []);
    assert.deepEqual((await w.call<ConversationList>('GET', C)).body.conversations, []);
  });

  test('import with an invalid issue field → refused with its JSON path; nothing imported', async () => {
    const w = await space();
    await assert.rejects(srv.admin.importData(w.workspaceId, {
      conversations: [{ subject: 'x', customer: { email: 'a@example.com' } }],
      issues: [{ subject: 'ok' }, { subject: 'ok', tags: ['fine', ''] }],
    }), refusedWith('import', 'import file is invalid: issues[1].tags[1] must be 1 to 64 characters.'));
    await assert.rejects(srv.admin.importData(w.workspaceId, { issues: [{ subject: 'ok', conversationId: RANDOM_ID }] }),
      refusedWith('import', 'import file is invalid: issues[0].conversationId is not an allowed property.'));
    assert.deepEqual((await listAll(w)).issues, []);
    assert.deepEqual((await w.call<ConversationList>('GET', C)).body.conversations, []);
  });

  test('a refused import does not use up issue numbers: the next issue is number 1', async () => {
    const w = await space();
    await assert.rejects(srv.admin.importData(w.workspaceId, {
      issues: [{ subject: 'one' }, { subject: 'two' }, { subject: 'bad', conversationExternalId: 'missing' }],
    }), refused);
    assert.deepEqual((await listAll(w)).issues, []);
    assert.equal((await createIssue(w)).number, 1);
  });
});
