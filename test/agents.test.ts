/**
 * GET /api/v1/agents, /api/v1/agents/{id} (docs/api.md#agents): agents come
 * from the CLI and import, each with a public `widgetKey` (`svcw_…`) that grants no API access
 * — proved on every route of the route table that needs a scope.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type CallOptions, type CallResult, type TestServer, type Space } from './helpers/server.js';
import type { ConversationAnswer, IssueAnswer } from './helpers/answers.js';

let srv: TestServer;
before(async () => { srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } }); });
after(async () => { await srv.close(); });

/** A fresh workspace with a full-access key; `call` uses that key unless told otherwise. */
const space = () => srv.space();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const WIDGET_KEY = /^svcw_[0-9A-Za-z]{33}$/;
const NOT_FOUND = { code: 'not_found', error: 'Record not found.' };
const UNAUTHORIZED = { code: 'unauthorized', error: 'A valid workspace API key is required.' };
const iso = (ms: number) => new Date(ms).toISOString();
const A = '/api/v1/agents';

async function ok(w: Space, path: string): Promise<any> {
  const r = await w.call('GET', path);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

describe('GET /api/v1/agents', () => {
  test('GET /agents in a new workspace → an empty list', async () => {
    const w = await space();
    assert.deepEqual(await ok(w, A), { object: 'list', hasMore: false, nextCursor: null, agents: [] });
  });

  test('an agent created through the CLI → listed and retrieved with every field, widgetKey svcw_…', async () => {
    const w = await space();
    const at = iso(srv.clock.now());
    const created = await srv.admin.createDefinition('agent', w.workspaceId, { name: 'Front desk', description: 'First line' }) as any;
    assert.match(created.id, UUID);
    assert.match(created.widgetKey, WIDGET_KEY);
    const agent = { object: 'agent', id: created.id, name: 'Front desk', description: 'First line', enabled: true, widgetKey: created.widgetKey, sources: [], mode: 'off', instructions: '', handoffAfterUncertain: 2, allowedOrigins: [], createdAt: at, updatedAt: at };
    assert.deepEqual(created, agent);
    assert.deepEqual(await ok(w, A), { object: 'list', hasMore: false, nextCursor: null, agents: [agent] });
    assert.deepEqual(await ok(w, `${A}/${created.id}`), { agent });
  });

  test('agents from import: description defaults to "", enabled as given; listed oldest first; each its own widget key', async () => {
    const w = await space();
    const t0 = srv.clock.now();
    await srv.admin.importData(w.workspaceId, { agents: [{ name: 'Imported one' }, { name: 'Imported off', enabled: false, description: 'Paused' }] });
    srv.clock.advance(1000);
    const later = await srv.admin.createDefinition('agent', w.workspaceId, { name: 'Later' }) as any;
    const list = (await ok(w, A)).agents;
    assert.equal(list.length, 3);
    // The two imported ones share a createdAt: they come first (by id among themselves), the later one last.
    assert.deepEqual(list[2], { object: 'agent', id: later.id, name: 'Later', description: '', enabled: true, widgetKey: later.widgetKey, sources: [], mode: 'off', instructions: '', handoffAfterUncertain: 2, allowedOrigins: [], createdAt: iso(t0 + 1000), updatedAt: iso(t0 + 1000) });
    const imported = list.slice(0, 2);
    assert.deepEqual(imported.map((a: any) => a.id), imported.map((a: any) => a.id).sort());
    const byName = Object.fromEntries(imported.map((a: any) => [a.name, a]));
    assert.deepEqual(byName['Imported one'], { object: 'agent', id: byName['Imported one'].id, name: 'Imported one', description: '', enabled: true, widgetKey: byName['Imported one'].widgetKey, sources: [], mode: 'off', instructions: '', handoffAfterUncertain: 2, allowedOrigins: [], createdAt: iso(t0), updatedAt: iso(t0) });
    assert.deepEqual(byName['Imported off'], { object: 'agent', id: byName['Imported off'].id, name: 'Imported off', description: 'Paused', enabled: false, widgetKey: byName['Imported off'].widgetKey, sources: [], mode: 'off', instructions: '', handoffAfterUncertain: 2, allowedOrigins: [], createdAt: iso(t0), updatedAt: iso(t0) });
    for (const a of list) assert.match(a.widgetKey, WIDGET_KEY);
    assert.equal(new Set(list.map((a: any) => a.widgetKey)).size, 3);
  });

  // Paging itself (limits, cursors, pages) is checked for every list in test/lists.test.ts.
  test('GET /agents → every agent once, oldest first', async () => {
    const w = await space();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      ids.push(String((await srv.admin.createDefinition('agent', w.workspaceId, { name: `Agent ${i}` })).id));
      srv.clock.advance(10);
    }
    const body = await ok(w, `${A}?limit=100`);
    assert.deepEqual(body.agents.map((a: any) => a.id), ids);
    assert.equal(body.hasMore, false);
  });

  test('a disabled agent → enabled:false and a later updatedAt; createdAt and widgetKey unchanged', async () => {
    const w = await space();
    const t0 = srv.clock.now();
    const a = await srv.admin.createDefinition('agent', w.workspaceId, { name: 'Bot' }) as any;
    srv.clock.advance(60_000);
    const disabled = await srv.admin.disableDefinition('agent', w.workspaceId, a.id);
    const expected = { ...a, enabled: false, createdAt: iso(t0), updatedAt: iso(t0 + 60_000) };
    assert.deepEqual(disabled, expected);
    assert.deepEqual(await ok(w, `${A}/${a.id}`), { agent: expected });
    assert.deepEqual((await ok(w, A)).agents, [expected]);
    // Disabling it again changes nothing: same answer, updatedAt kept, nothing written.
    srv.clock.advance(60_000);
    const db = srv.store.workspace(w.workspaceId)!.db;
    const ops = db.stats().ops;
    assert.deepEqual(await srv.admin.disableDefinition('agent', w.workspaceId, a.id), expected);
    assert.equal(db.stats().ops, ops);
    assert.deepEqual(await ok(w, `${A}/${a.id}`), { agent: expected });
  });

  test('GET /agents/{id} for an unknown id, a non-uuid, or another workspace\'s agent → 404 not_found', async () => {
    const a = await space();
    const b = await space();
    const agent = await srv.admin.createDefinition('agent', a.workspaceId, { name: 'Mine' });
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id', String(agent.id)]) {
      const r = await b.call('GET', `${A}/${id}`);
      assert.equal(r.status, 404, r.text);
      assert.deepEqual(r.body, NOT_FOUND);
    }
    assert.deepEqual((await ok(b, A)).agents, []);
    assert.equal((await a.call('GET', `${A}/${agent.id}`)).status, 200);
  });

  test('GET /agents and /agents/{id} need agents:read: another scope → 403, agents:read → 200', async () => {
    const w = await space();
    const agent = await srv.admin.createDefinition('agent', w.workspaceId, { name: 'Bot' });
    const wrong = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'definitions:read,clients:read' });
    const right = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'agents:read' });
    for (const path of [A, `${A}/${agent.id}`]) {
      const r = await w.call('GET', path, { key: wrong });
      assert.equal(r.status, 403, r.text);
      assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs agents:read.' });
      assert.equal((await w.call('GET', path, { key: right })).status, 200);
    }
  });
});

describe('widget keys grant no API access', () => {
  test('Authorization: Bearer svcw_… → 401 unauthorized on every route of the route table that has a scope', async () => {
    const w = await space();
    const agent = await srv.admin.createDefinition('agent', w.workspaceId, { name: 'Widget bot' }) as any;
    const widgetKey: string = agent.widgetKey;
    assert.match(widgetKey, WIDGET_KEY);
    // Real ids where the route takes one, so that a 404 could not hide an accepted key.
    const conv = await w.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: { subject: 'Hi', customer: { email: 'x@example.com' } } });
    const issue = await w.call<IssueAnswer>('POST', '/api/v1/issues', { body: { subject: 'Bug' } });
    const ids: Record<string, string> = {
      conversationId: conv.body.conversation.id, issueId: issue.body.issue.id, agentId: agent.id,
      clientId: (await ok(w, '/api/v1/clients')).clients[0].id,
    };
    // The widget API (its own authentication) is test/widget-api.test.ts's.
    const scoped = srv.routes.filter((r) => r.scope !== null && !r.auth);
    assert.ok(scoped.length >= 20, `only ${scoped.length} scoped routes`);
    const tried: string[] = [];
    for (const route of scoped) {
      const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? '00000000-0000-4000-8000-000000000000');
      const body = route.method === 'GET' || route.method === 'DELETE' ? undefined : {};
      for (const header of [`Bearer ${widgetKey}`, `bearer ${widgetKey}`]) {
        const r = await srv.call(route.method, path, { key: null, body, headers: { Authorization: header } });
        assert.equal(r.status, 401, `${route.method} ${route.path}: ${r.text}`);
        assert.deepEqual(r.body, UNAUTHORIZED, `${route.method} ${route.path}`);
        assert.equal(r.headers.get('ratelimit-limit'), null, 'an unauthenticated answer has no key bucket');
        // Failed authentications are limited per address (30 a minute): keep the bucket full.
        srv.clock.advance(2_100);
      }
      tried.push(`${route.method} ${route.path}`);
    }
    assert.ok(tried.includes('GET /api/v1/agents'));
    assert.ok(tried.includes('GET /api/v1/usage'));
    // The same request with a real key reaches the agent.
    assert.equal((await w.call('GET', `${A}/${agent.id}`)).status, 200);
  });
});
