/**
 * GET /api/v1/tags, /statuses, /priorities (docs/api.md#lists, docs/api.md#tags,
 * docs/api.md#statuses, docs/api.md#priorities; docs/configuration.md#admin-cli), and custom fields disabled through the admin operations.
 * Tags come from import, from the CLI (`createDefinition`) and from use on issues; a disabled
 * tag is left out. Every test works in a workspace of its own.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type CallOptions, type CallResult, type TestServer, type Space } from './helpers/server.js';
import { walkList } from './helpers/lists.js';
import type { ErrorAnswer, IssueAnswer } from './helpers/answers.js';

let srv: TestServer;
before(async () => { srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } }); });
after(async () => { await srv.close(); });

/** A fresh workspace with a full-access key; `call` uses that key unless told otherwise. */
const space = () => srv.space();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const invalid = (detail: string) => ({ code: 'invalid_request', error: `Request body is invalid: ${detail}.` });
const invalidQuery = (detail: string) => ({ code: 'invalid_request', error: `Query parameter ${detail}.` });

const STATUSES = [
  { object: 'status', id: 'conversation.open', name: 'open', resource: 'conversation' },
  { object: 'status', id: 'conversation.waiting', name: 'waiting', resource: 'conversation' },
  { object: 'status', id: 'conversation.solved', name: 'solved', resource: 'conversation' },
  { object: 'status', id: 'issue.new', name: 'new', resource: 'issue' },
  { object: 'status', id: 'issue.on_you', name: 'on_you', resource: 'issue' },
  { object: 'status', id: 'issue.on_customer', name: 'on_customer', resource: 'issue' },
  { object: 'status', id: 'issue.on_hold', name: 'on_hold', resource: 'issue' },
  { object: 'status', id: 'issue.closed', name: 'closed', resource: 'issue' },
];
const PRIORITIES = [
  { object: 'priority', id: 'urgent', name: 'urgent', rank: 1 },
  { object: 'priority', id: 'high', name: 'high', rank: 2 },
  { object: 'priority', id: 'medium', name: 'medium', rank: 3 },
  { object: 'priority', id: 'low', name: 'low', rank: 4 },
];

async function ok(w: Space, path: string): Promise<any> {
  const r = await w.call('GET', path);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** Walks every page of `path` with `limit` (test/helpers/lists.ts checks each page); returns the items in order and the page sizes. */
async function walk(w: Space, path: string, items: string, limit: number): Promise<{ all: { id: string; name: string }[]; sizes: number[] }> {
  const { items: all, sizes } = await walkList<{ id: string; name: string }>((p) => w.call('GET', p), path, items, limit);
  return { all, sizes };
}

describe('GET /api/v1/tags', () => {
  test('GET /tags in a new workspace → an empty list', async () => {
    const w = await space();
    assert.deepEqual(await ok(w, '/api/v1/tags'), { object: 'list', hasMore: false, nextCursor: null, tags: [] });
  });

  test('GET /tags → tags from import, from the CLI and from use on issues, once each, sorted by name case-insensitively', async () => {
    const w = await space();
    await srv.admin.importData(w.workspaceId, { tags: [{ name: 'billing' }, { name: 'Bug' }] });
    const cli = await srv.admin.createDefinition('tag', w.workspaceId, { name: 'alpha' });
    assert.match(String(cli.id), UUID);
    assert.deepEqual(cli, { object: 'tag', id: cli.id, name: 'alpha' });
    // An issue's tags join the list; `bug` is the imported `Bug` (case-insensitive) and is not added twice.
    const r = await w.call<IssueAnswer>('POST', '/api/v1/issues', { body: { subject: 'Crash', tags: ['zeta', 'bug', 'Mobile'] } });
    assert.equal(r.status, 201, r.text);
    const body = await ok(w, '/api/v1/tags');
    assert.deepEqual(body.tags.map((t: any) => t.name), ['alpha', 'billing', 'Bug', 'Mobile', 'zeta']);
    for (const t of body.tags) {
      assert.match(t.id, UUID);
      assert.deepEqual(t, { object: 'tag', id: t.id, name: t.name });
    }
    assert.equal(body.tags.find((t: any) => t.name === 'alpha').id, cli.id);
    assert.deepEqual(Object.keys(body), ['object', 'hasMore', 'nextCursor', 'tags']);
    assert.equal(body.hasMore, false);
    assert.equal(body.nextCursor, null);
    // Using an existing tag again on a PATCH adds nothing.
    const p = await w.call('PATCH', `/api/v1/issues/${r.body.issue.id}`, { body: { tags: ['ZETA', 'new-one'] } });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual((await ok(w, '/api/v1/tags')).tags.map((t: any) => t.name), ['alpha', 'billing', 'Bug', 'Mobile', 'new-one', 'zeta']);
  });

  test('GET /tags leaves out a tag disabled through the CLI; the others keep their ids', async () => {
    const w = await space();
    await srv.admin.importData(w.workspaceId, { tags: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] });
    const before = (await ok(w, '/api/v1/tags')).tags;
    const b = before.find((t: any) => t.name === 'b');
    const disabled = await srv.admin.disableDefinition('tag', w.workspaceId, b.id);
    assert.deepEqual(disabled, { object: 'tag', id: b.id, name: 'b', enabled: false });
    const afterDisable = await ok(w, '/api/v1/tags');
    assert.deepEqual(afterDisable, { object: 'list', hasMore: false, nextCursor: null, tags: before.filter((t: any) => t.name !== 'b') });
    // Paging skips the disabled tag too.
    const { all, sizes } = await walk(w, '/api/v1/tags', 'tags', 1);
    assert.deepEqual(all.map((t) => t.name), ['a', 'c']);
    assert.deepEqual(sizes, [1, 1]);
  });

  test('GET /tags paginated with limit and cursor → every tag once, in name order', async () => {
    const w = await space();
    const names = Array.from({ length: 23 }, (_, i) => `tag-${String(i).padStart(2, '0')}`);
    // Imported in a shuffled order: the list is by name, not by creation.
    const shuffled = [...names].sort((x, y) => (x.split('').reverse().join('') < y.split('').reverse().join('') ? -1 : 1));
    await srv.admin.importData(w.workspaceId, { tags: shuffled.map((name) => ({ name })) });
    const { all, sizes } = await walk(w, '/api/v1/tags', 'tags', 5);
    assert.deepEqual(all.map((t) => t.name), names);
    assert.deepEqual(sizes, [5, 5, 5, 5, 3]);
    assert.equal(new Set(all.map((t) => t.id)).size, 23);
    // Default page size is 20.
    const first = await ok(w, '/api/v1/tags');
    assert.equal(first.tags.length, 20);
    assert.equal(first.hasMore, true);
    const rest = await ok(w, `/api/v1/tags?cursor=${encodeURIComponent(first.nextCursor)}`);
    assert.deepEqual(rest.tags.map((t: any) => t.name), names.slice(20));
    assert.equal(rest.hasMore, false);
    assert.equal(rest.nextCursor, null);
  });

  test('GET /tags lists only the key\'s workspace', async () => {
    const a = await space();
    const b = await space();
    await srv.admin.importData(a.workspaceId, { tags: [{ name: 'only-in-a' }] });
    assert.deepEqual((await ok(b, '/api/v1/tags')).tags, []);
    assert.deepEqual((await ok(a, '/api/v1/tags')).tags.map((t: any) => t.name), ['only-in-a']);
  });

  for (const [q, detail] of [
    ['limit=0', 'limit must be an integer from 1 to 100'],
    ['limit=101', 'limit must be an integer from 1 to 100'],
    ['limit=abc', 'limit must be an integer from 1 to 100'],
    ['cursor=nonsense', 'cursor is invalid'],
    ['color=red', 'color is not supported'],
  ] as const) {
    test(`GET /tags?${q} → 400 "${detail}"`, async () => {
      const w = await space();
      const r = await w.call<ErrorAnswer>('GET', `/api/v1/tags?${q}`);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.code, 'invalid_request');
      assert.deepEqual(r.body, invalidQuery(detail));
    });
  }
});

describe('GET /api/v1/statuses and /api/v1/priorities', () => {
  test('GET /statuses → the 8 statuses: 3 of conversations, then 5 issue states', async () => {
    const w = await space();
    assert.deepEqual(await ok(w, '/api/v1/statuses'), { object: 'list', hasMore: false, nextCursor: null, statuses: STATUSES });
  });

  test('GET /priorities → urgent rank 1 … low rank 4', async () => {
    const w = await space();
    assert.deepEqual(await ok(w, '/api/v1/priorities'), { object: 'list', hasMore: false, nextCursor: null, priorities: PRIORITIES });
  });

  // Paging (pages in the defined order, a cursor of another list or workspace refused) is
  // checked for every list in test/lists.test.ts and test/isolation.test.ts.
});

describe('definitions scope', () => {
  for (const path of ['/api/v1/custom-fields', '/api/v1/tags', '/api/v1/statuses', '/api/v1/priorities']) {
    test(`GET ${path} with a key without definitions:read → 403 insufficient_scope; with it → 200; no key → 401`, async () => {
      const w = await space();
      const noScope = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'conversations:write,issues:write,sources:write,clients:read,agents:read,usage:read,analytics:read' });
      const r = await w.call('GET', path, { key: noScope });
      assert.equal(r.status, 403, r.text);
      assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs definitions:read.' });
      const scoped = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'definitions:read' });
      assert.equal((await w.call('GET', path, { key: scoped })).status, 200);
      const anon = await w.call('GET', path, { key: null });
      assert.equal(anon.status, 401);
      assert.deepEqual(anon.body, { code: 'unauthorized', error: 'A valid workspace API key is required.' });
    });
  }
});

describe('custom fields created and disabled through the admin operations (CLI)', () => {
  test('a custom field disabled via the CLI is listed with enabled:false; the others stay enabled', async () => {
    const w = await space();
    const plan = await srv.admin.createDefinition('customField', w.workspaceId, { label: 'Plan', type: 'select', options: ['free', 'pro'] });
    const note = await srv.admin.createDefinition('customField', w.workspaceId, { label: 'Note', type: 'text', fillMode: 'ai', description: 'Free text' });
    assert.deepEqual(plan, { object: 'custom_field', id: plan.id, label: 'Plan', type: 'select', enabled: true, fillMode: 'manual', description: '', options: ['free', 'pro'] });
    const disabled = await srv.admin.disableDefinition('customField', w.workspaceId, String(plan.id));
    assert.deepEqual(disabled, { ...plan, enabled: false });
    const list = await ok(w, '/api/v1/custom-fields');
    assert.deepEqual(list, {
      object: 'list', hasMore: false, nextCursor: null,
      customFields: [
        { ...plan, enabled: false },
        { object: 'custom_field', id: note.id, label: 'Note', type: 'text', enabled: true, fillMode: 'ai', description: 'Free text', options: [] },
      ],
    });
  });

  test('disabling an unknown id, or an id of another workspace → AdminError, nothing changes', async () => {
    const a = await space();
    const b = await space();
    const f = await srv.admin.createDefinition('customField', a.workspaceId, { label: 'Plan', type: 'text' });
    await assert.rejects(srv.admin.disableDefinition('customField', b.workspaceId, String(f.id)), /no custom field/);
    await assert.rejects(srv.admin.disableDefinition('tag', a.workspaceId, '00000000-0000-4000-8000-000000000000'), /no tag/);
    assert.equal((await ok(a, '/api/v1/custom-fields')).customFields[0].enabled, true);
  });
});
