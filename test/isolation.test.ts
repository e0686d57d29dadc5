/**
 * Tenant isolation sweep (docs/security.md#tenant-isolation), generated from the route table: for every route
 * with an id in its path, another workspace's id answers exactly like a random id (404); for
 * every list with a cursor, another workspace's cursor answers exactly like a random one (400).
 * A new route with a path parameter or a cursor that this file does not know fails the test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import type { ClientList, ConversationAnswer, Ingestion, IssueAnswer, Page, SearchAnswer } from './helpers/answers.js';

const customer = { email: 'iso@example.com', name: 'Iso', company: 'Isolated Inc' };

/** Seeds a workspace with two of everything and returns one id per path parameter name. */
async function seed(srv: TestServer, key: string, workspaceId: string): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  for (let i = 0; i < 2; i++) {
    // First, so that every later change makes a delivery for it (its deliveries list has a second page).
    const hook = await srv.call<{ webhookEndpoint: { id: string } }>('POST', '/api/v1/webhook-endpoints', { key, body: { url: `http://127.0.0.1:9/hook-${i}`, events: ['*'] } });
    assert.equal(hook.status, 201, hook.text);
    ids.webhookEndpointId = hook.body.webhookEndpoint.id;
    const c = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { key, body: { subject: `c${i}`, customer: { ...customer, company: `Co ${i}` } } });
    ids.conversationId = c.body.conversation.id;
    await srv.call('POST', `/api/v1/conversations/${ids.conversationId}/messages`, { key, body: { role: 'user', body: 'one' } });
    await srv.call('POST', `/api/v1/conversations/${ids.conversationId}/messages`, { key, body: { role: 'agent', body: 'two' } });
    const is = await srv.call<IssueAnswer>('POST', '/api/v1/issues', { key, body: { subject: `i${i}`, tags: [`t${i}`], conversationId: ids.conversationId } });
    ids.issueId = is.body.issue.id;
    const so = await srv.call<Ingestion>('POST', '/api/v1/sources', { key, body: { content: `openapi: 3.0.0\ninfo: {title: S${i}, version: "1"}\nservers: [{url: "https://api.example.com"}]\npaths:\n  /x${i}:\n    get: {summary: X, responses: {"200": {description: ok}}}\n` } });
    ids.sourceId = so.body.source.id;
    ids.endpointId = so.body.endpoints[0].id;
    await srv.admin.createDefinition('customField', workspaceId, { label: `F${i}`, type: 'text' });
    ids.agentId = ((await srv.admin.createDefinition('agent', workspaceId, { name: `A${i}` })) as { id: string }).id;
    for (let n = 0; n < 2; n++) await srv.call('POST', `/api/v1/conversations/${ids.conversationId}/answers`, { key, body: {} });
  }
  ids.clientId = (await srv.call<ClientList>('GET', '/api/v1/clients', { key })).body.clients[0].id;
  ids.eventId = (await srv.call<{ events: Array<{ id: string }> }>('GET', '/api/v1/events', { key })).body.events[0].id;
  return ids;
}

test('every id and cursor of another workspace answers exactly like a random one', async () => {
  const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000', WEBHOOK_ALLOW_PRIVATE: 'true' } });
  try {
    const a = { key: srv.key, workspaceId: srv.workspaceId };
    const b = await srv.newWorkspace('Other tenant');
    const mine = await seed(srv, a.key, a.workspaceId);
    const theirs = await seed(srv, b.key, b.workspaceId);
    const randomId = '01a20000-0000-7000-8000-000000000000';
    let idChecks = 0;
    let cursorChecks = 0;
    // The widget API's isolation (another visitor's conversation → 404) is test/widget-api.test.ts's.
    for (const r of srv.routes.filter((x) => x.scope !== null && !x.auth)) {
      const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const p of params) assert.ok(p in theirs, `the sweep does not know the path parameter {${p}} of ${r.method} ${r.path}: add it to seed()`);
      const body = r.body && !r.bodyOptional ? (r.path.endsWith('/messages') ? { role: 'user', body: 'x' } : r.path.endsWith('/checks') ? { endpointId: theirs.endpointId } : {}) : undefined;
      // Each path parameter in turn belongs to the other workspace (the rest are ours).
      for (const p of params) {
        const fill = (value: string) => r.path.replace(/\{(\w+)\}/g, (_, n: string) => (n === p ? value : mine[n]));
        const foreign = await srv.call(r.method, fill(theirs[p]), { key: a.key, body });
        const random = await srv.call(r.method, fill(randomId), { key: a.key, body });
        assert.equal(foreign.status, 404, `${r.method} ${r.path} with another workspace's ${p}: ${foreign.text}`);
        assert.deepEqual(foreign.body, random.body, `${r.method} ${r.path}: another workspace's ${p} answers like a random id`);
        idChecks++;
      }
      if (r.method === 'GET' && r.query && 'cursor' in r.query.properties) {
        const path = r.path.replace(/\{(\w+)\}/g, (_, n: string) => theirs[n]);
        const page = await srv.call<Page>('GET', `${path}?limit=1`, { key: b.key });
        assert.equal(page.status, 200, page.text);
        assert.ok(page.body.nextCursor, `${r.path}: the seed makes at least two items in the other workspace`);
        const ownPath = r.path.replace(/\{(\w+)\}/g, (_, n: string) => mine[n]);
        const foreign = await srv.call('GET', `${ownPath}?limit=1&cursor=${encodeURIComponent(page.body.nextCursor)}`, { key: a.key });
        const forged = await srv.call('GET', `${ownPath}?limit=1&cursor=${encodeURIComponent(page.body.nextCursor.replace(/.$/, (c: string) => (c === 'A' ? 'B' : 'A')))}`, { key: a.key });
        assert.equal(foreign.status, 400, `${r.path}: ${foreign.text}`);
        assert.deepEqual(foreign.body, forged.body, `${r.path}: another workspace's cursor answers like a forged one`);
        assert.deepEqual(foreign.body, { code: 'invalid_request', error: 'Query parameter cursor is invalid.' });
        cursorChecks++;
      }
    }
    assert.ok(idChecks >= 12, `id checks: ${idChecks}`);
    assert.ok(cursorChecks >= 10, `cursor checks: ${cursorChecks}`);
    // And nothing of the other workspace leaks into our lists or search.
    const ours = await srv.call<SearchAnswer>('GET', '/api/v1/sources/search?q=x0', { key: a.key });
    for (const hit of ours.body.results) assert.notEqual(hit.sourceId, theirs.sourceId);
  } finally { await srv.close(); }
});
