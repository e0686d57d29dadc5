/**
 * The list contract (docs/api.md#lists), generated from the route table: every list route (a
 * GET whose query takes a `cursor`) is checked the same way — `limit` 1 and 100 answer, 0 and
 * 101 are refused with the exact body, a walk through more than one page with the cursor gives
 * exactly the one-page list, and a cursor of any other list is refused with the exact body.
 * A new list route that the seed below does not fill with enough items fails the test.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { walkList, type ListPage } from './helpers/lists.js';
import type { Route } from '../src/http/route.js';
import type { TSchema } from '../src/http/schema.js';

const LIMIT_REFUSED = { code: 'invalid_request', error: 'Query parameter limit must be an integer from 1 to 100.' };
const CURSOR_REFUSED = { code: 'invalid_request', error: 'Query parameter cursor is invalid.' };
/** Items the seed makes in every list, so that pages of 2 make at least two pages. */
const MIN_ITEMS = 3;

let srv: TestServer;
let key: string;
/** One id per path parameter name, for routes like `/conversations/{conversationId}/messages`. */
const ids: Record<string, string> = {};

/** `schema` itself, or the schema a named reference stands for. */
const deref = (schema: TSchema): TSchema => (schema.kind === 'ref' ? deref(schema.target()) : schema);

/** A list route: its path filled in, and the name of its array of items (from its success schema). */
interface ListRoute { route: Route; path: string; items: string }

/** Every list route of the table. */
function listRoutes(): ListRoute[] {
  // Widget lists take a widget session, not an API key (test/widget-api.test.ts).
  return srv.routes.filter((r) => r.method === 'GET' && r.query !== undefined && 'cursor' in r.query.properties
    && r.auth === undefined).map((route) => {
    const schema = deref(route.success.schema);
    assert.equal(schema.kind, 'object', route.path);
    const arrays = Object.entries(schema.kind === 'object' ? schema.properties : {}).filter(([, p]) => deref(p as TSchema).kind === 'array').map(([k]) => k);
    assert.equal(arrays.length, 1, `${route.path}: one array of items in the list answer`);
    const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      assert.ok(name in ids, `the list contract does not know the path parameter {${name}} of ${route.path}: add it to the seed`);
      return ids[name];
    });
    return { route, path, items: arrays[0] };
  });
}

/** GET with the seeded workspace's key. */
const get = (path: string) => srv.call('GET', path, { key });

before(async () => {
  srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000', WEBHOOK_ALLOW_PRIVATE: 'true' } });
  const w = await srv.space();
  key = w.key;
  // Webhook endpoints first, so that every change below makes deliveries for them.
  for (let i = 0; i < MIN_ITEMS; i++) {
    const h = await w.call('POST', '/api/v1/webhook-endpoints', { body: { url: `http://127.0.0.1:9/hook-${i}`, events: ['*'] } });
    assert.equal(h.status, 201, h.text);
    ids.webhookEndpointId ??= (h.body as { webhookEndpoint: { id: string } }).webhookEndpoint.id;
  }
  for (let i = 0; i < MIN_ITEMS; i++) {
    const c = await w.call('POST', '/api/v1/conversations', { body: { subject: `c${i}`, customer: { email: `p${i}@c${i}.example`, company: `Co ${i}` } } });
    assert.equal(c.status, 201, c.text);
    ids.conversationId ??= (c.body as { conversation: { id: string } }).conversation.id;
    const m = await w.call('POST', `/api/v1/conversations/${ids.conversationId}/messages`, { body: { role: i % 2 ? 'agent' : 'user', body: `m${i}` } });
    assert.equal(m.status, 201, m.text);
    const is = await w.call('POST', '/api/v1/issues', { body: { subject: `i${i}` } });
    assert.equal(is.status, 201, is.text);
    const so = await w.call('POST', '/api/v1/sources', { body: { content: `# Guide ${i}\n\nText ${i}.` } });
    assert.equal(so.status, 201, so.text);
    srv.clock.advance(1000);
  }
  await srv.admin.importData(w.workspaceId, {
    customFields: [{ label: 'F0', type: 'text' }, { label: 'F1', type: 'number' }, { label: 'F2', type: 'date' }],
    tags: [{ name: 't0' }, { name: 't1' }, { name: 't2' }],
    agents: [{ name: 'A0' }, { name: 'A1' }, { name: 'A2' }],
  });
  // Answers need an agent and a customer message: both exist now.
  for (let i = 0; i < MIN_ITEMS; i++) {
    const a = await w.call('POST', `/api/v1/conversations/${ids.conversationId}/answers`, { body: {} });
    assert.equal(a.status, 201, a.text);
    srv.clock.advance(1000);
  }
  // Every first delivery attempt made (port 9 refuses them) before the lists are read: the clock
  // does not move after this, so no delivery changes while a list is walked.
  await srv.webhooks.runDue();
});
after(() => srv.close());

test('the route table has the list routes the API documents, each taking limit 1 to 100', () => {
  const lists = listRoutes();
  assert.ok(lists.length >= 10, `list routes: ${lists.map((l) => l.route.path).join(', ')}`);
  for (const { route } of lists) {
    const limit = route.query!.properties.limit as TSchema;
    assert.deepEqual({ kind: limit.kind, minimum: (limit as { minimum?: number }).minimum, maximum: (limit as { maximum?: number }).maximum },
      { kind: 'integer', minimum: 1, maximum: 100 }, `${route.path}: limit`);
  }
});

test('every list: limit 1 and 100 answer, 0 and 101 are refused, the cursor walks every item once over several pages', async () => {
  for (const { route, path, items } of listRoutes()) {
    const all = await get(`${path}?limit=100`);
    assert.equal(all.status, 200, `${route.path}: ${all.text}`);
    const full = all.body as ListPage;
    const every = full[items] as unknown[];
    assert.ok(every.length >= MIN_ITEMS, `${route.path}: the seed makes at least ${MIN_ITEMS} items (has ${every.length}): add them to the seed`);
    assert.deepEqual(full, { object: 'list', hasMore: false, nextCursor: null, [items]: every }, route.path);

    const one = await get(`${path}?limit=1`);
    assert.equal(one.status, 200, `${route.path}: ${one.text}`);
    const first = one.body as ListPage;
    assert.equal(typeof first.nextCursor, 'string', route.path);
    assert.deepEqual(first, { object: 'list', hasMore: true, nextCursor: first.nextCursor, [items]: every.slice(0, 1) }, route.path);

    for (const limit of ['0', '101']) {
      const r = await get(`${path}?limit=${limit}`);
      assert.deepEqual({ status: r.status, body: r.body }, { status: 400, body: LIMIT_REFUSED }, `${route.path}?limit=${limit}`);
    }

    const walk = await walkList(get, path, items, 2);
    assert.deepEqual(walk.items, every, `${route.path}: the pages of 2 hold every item once, in list order`);
    assert.ok(walk.sizes.length >= 2, `${route.path}: more than one page`);
  }
});

test('every list refuses the cursor of every other list with the exact body', async () => {
  const lists = listRoutes();
  const cursors = new Map<string, string>();
  for (const l of lists) cursors.set(l.route.path, ((await get(`${l.path}?limit=1`)).body as ListPage).nextCursor!);
  let checks = 0;
  for (const l of lists) {
    // Its own cursor works…
    const own = await get(`${l.path}?limit=1&cursor=${encodeURIComponent(cursors.get(l.route.path)!)}`);
    assert.equal(own.status, 200, `${l.route.path}: ${own.text}`);
    // …every other list's does not.
    for (const other of lists) {
      if (other === l) continue;
      const r = await get(`${l.path}?cursor=${encodeURIComponent(cursors.get(other.route.path)!)}`);
      assert.deepEqual({ status: r.status, body: r.body }, { status: 400, body: CURSOR_REFUSED }, `${l.route.path} with the cursor of ${other.route.path}`);
      checks++;
    }
  }
  assert.equal(checks, lists.length * (lists.length - 1));
});
