/**
 * Agents' answers (docs/api.md#answers) without a model: agent settings on the agents API, POST and GET
 * /conversations/{id}/answers, citations (named endpoints first, public docs anchors), outcomes, the
 * `answer.created` event, and isolation between workspaces.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startTestServer, type Space, type TestServer } from './helpers/server.js';

let srv: TestServer;
before(async () => { srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } }); });
after(async () => { await srv.close(); });

const PETSTORE = readFileSync(new URL('./fixtures/corpus/openapi/oai-v2.0-petstore.json', import.meta.url), 'utf8');
const invalid = (detail: string) => ({ code: 'invalid_request', error: `Request body is invalid: ${detail}.` });
const NOT_FOUND = { code: 'not_found', error: 'Record not found.' };

async function withSource(w: Space, content = PETSTORE): Promise<any> {
  const r = await w.call<any>('POST', '/api/v1/sources', { body: { content } });
  assert.equal(r.status, 201, r.text);
  return r.body;
}
async function agent(w: Space, body: Record<string, unknown> = { name: 'Helper' }): Promise<any> {
  const r = await w.call<any>('POST', '/api/v1/agents', { body });
  assert.equal(r.status, 201, r.text);
  return r.body.agent;
}
async function conversation(w: Space, ...messages: Array<[string, string]>): Promise<string> {
  const c = await w.call<any>('POST', '/api/v1/conversations', { body: { subject: 'Help', customer: { email: 'c@example.com' } } });
  assert.equal(c.status, 201, c.text);
  for (const [role, body] of messages) {
    const m = await w.call('POST', `/api/v1/conversations/${c.body.conversation.id}/messages`, { body: { role, body } });
    assert.equal(m.status, 201, m.text);
  }
  return c.body.conversation.id;
}

describe('agent settings', () => {
  test('POST /agents → defaults sources [], mode off, instructions "", handoffAfterUncertain 2; PATCH changes them', async () => {
    const w = await srv.space();
    const src = (await withSource(w)).source;
    const a = await agent(w);
    assert.deepEqual({ sources: a.sources, mode: a.mode, instructions: a.instructions, h: a.handoffAfterUncertain },
      { sources: [], mode: 'off', instructions: '', h: 2 });
    srv.clock.advance(1000);
    const p = await w.call<any>('PATCH', `/api/v1/agents/${a.id}`, { body: { sources: [src.id, src.id], mode: 'suggest',
      instructions: 'Be brief.', handoffAfterUncertain: 3 } });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual({ ...p.body.agent, updatedAt: undefined }, { ...a, sources: [src.id], mode: 'suggest', instructions: 'Be brief.',
      handoffAfterUncertain: 3, updatedAt: undefined });
    assert.notEqual(p.body.agent.updatedAt, a.updatedAt);
    assert.deepEqual((await w.call<any>('GET', `/api/v1/agents/${a.id}`)).body.agent, p.body.agent);
  });

  const bad: Array<[string, Record<string, unknown>, string]> = [
    ['mode "auto"', { mode: 'auto' }, 'mode must be one of off, suggest, reply'],
    ['instructions of 4,001 characters', { instructions: 'x'.repeat(4001) }, 'instructions must be at most 4000 characters'],
    ['handoffAfterUncertain 0', { handoffAfterUncertain: 0 }, 'handoffAfterUncertain must be an integer from 1 to 20'],
    ['sources not an array', { sources: 'all' }, 'sources must be an array'],
    ['a source id that is not a UUID', { sources: ['nope'] }, 'sources[0] must be a UUID'],
  ];
  for (const [what, body, detail] of bad) {
    test(`POST and PATCH /agents with ${what} → 400 "${detail}"; nothing stored`, async () => {
      const w = await srv.space();
      const r = await w.call('POST', '/api/v1/agents', { body: { name: 'X', ...body } });
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, invalid(detail));
      const a = await agent(w);
      const p = await w.call('PATCH', `/api/v1/agents/${a.id}`, { body });
      assert.equal(p.status, 400);
      assert.deepEqual(p.body, invalid(detail));
      assert.deepEqual((await w.call<any>('GET', '/api/v1/agents')).body.agents, [a]);
    });
  }

  test('sources naming another workspace\'s source → 400 naming it; PATCH of another workspace\'s agent → 404', async () => {
    const w = await srv.space();
    const other = await srv.space();
    const theirs = (await withSource(other)).source.id;
    const r = await w.call('POST', '/api/v1/agents', { body: { name: 'X', sources: [theirs] } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, invalid(`sources: ${theirs} is not a source of this workspace`));
    const a = await agent(other);
    const p = await w.call('PATCH', `/api/v1/agents/${a.id}`, { body: { mode: 'reply' } });
    assert.equal(p.status, 404);
    assert.deepEqual(p.body, NOT_FOUND);
  });
});

describe('POST /conversations/{id}/answers', () => {
  test('a named METHOD /concrete-path finds its endpoint first; every field; listed; event answer.created', async () => {
    const w = await srv.space();
    const ingested = await withSource(w);
    const a = await agent(w);
    const cid = await conversation(w, ['user', 'Hello'], ['agent', 'Hi, how can I help?'],
      ['user', 'What does GET /v1/pets/42 return when the pet does not exist?']);
    const r = await w.call<any>('POST', `/api/v1/conversations/${cid}/answers`, { body: {} });
    assert.equal(r.status, 201, r.text);
    const ans = r.body.answer;
    const msgs = (await w.call<any>('GET', `/api/v1/conversations/${cid}/messages`)).body.messages;
    const ep = ingested.endpoints.find((e: any) => e.path === '/pets/{petId}');
    assert.equal(ans.object, 'answer');
    assert.equal(ans.conversationId, cid);
    assert.equal(ans.messageId, msgs[2].id);
    assert.equal(ans.agentId, a.id);
    assert.equal(ans.outcome, 'answered');
    assert.equal(ans.model, null);
    assert.equal(ans.createdAt, new Date(srv.clock.now()).toISOString());
    assert.deepEqual({ ...ans.citations[0], score: 0 }, { sourceId: ingested.source.id, documentId: ep.documentId ?? ans.citations[0].documentId,
      endpointId: ep.id, method: 'GET', path: '/pets/{petId}', title: 'Info for a specific pet', url: null, score: 0 });
    assert.ok(ans.citations.length <= 3);
    assert.match(ans.text, /^From the documentation:\n\n\[1\] Info for a specific pet \(GET \/pets\/\{petId\}\)\n> /);
    const list = await w.call<any>('GET', `/api/v1/conversations/${cid}/answers`);
    assert.deepEqual(list.body, { object: 'list', hasMore: false, nextCursor: null, answers: [ans] });
    const events = await w.call<any>('GET', '/api/v1/events?type=answer.created');
    assert.deepEqual(events.body.events.map((e: any) => e.data.object), [ans]);
  });

  test('an operationId finds its endpoint; a plain question finds the operation by BM25', async () => {
    const w = await srv.space();
    await withSource(w);
    await agent(w);
    const one = await conversation(w, ['user', 'is createPets idempotent?']);
    const r1 = await w.call<any>('POST', `/api/v1/conversations/${one}/answers`, { body: {} });
    assert.deepEqual([r1.body.answer.citations[0].method, r1.body.answer.citations[0].path], ['POST', '/pets']);
    const two = await conversation(w, ['user', 'how do I list all pets, and how many come back at most?']);
    const r2 = await w.call<any>('POST', `/api/v1/conversations/${two}/answers`);
    assert.equal(r2.status, 201, r2.text);
    assert.deepEqual([r2.body.answer.outcome, r2.body.answer.citations[0].method, r2.body.answer.citations[0].path],
      ['answered', 'GET', '/pets']);
  });

  test('a published source: url is the docs page anchor of the cited operation', async () => {
    const w = await srv.space();
    const ingested = await withSource(w);
    const p = await w.call('PATCH', `/api/v1/sources/${ingested.source.id}`, { body: { publicDocs: { enabled: true, published: true, slug: `pets-${Date.now()}` } } });
    assert.equal(p.status, 200, p.text);
    await agent(w);
    const cid = await conversation(w, ['user', 'GET /pets/7 please']);
    const ans = (await w.call<any>('POST', `/api/v1/conversations/${cid}/answers`, { body: {} })).body.answer;
    const url = new URL(ans.citations[0].url);
    assert.equal(url.hash, '#get-pets-petid');
    const page = await fetch(url);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /id="get-pets-petid"/);
  });

  test('a question the source cannot answer → uncertain or no_sources; no source at all → no_sources', async () => {
    const w = await srv.space();
    await agent(w);
    const none = await conversation(w, ['user', 'how do I list pets?']);
    const r0 = (await w.call<any>('POST', `/api/v1/conversations/${none}/answers`, { body: {} })).body.answer;
    assert.deepEqual([r0.outcome, r0.citations], ['no_sources', []]);
    await withSource(w);
    const off = await conversation(w, ['user', 'What is the weather in Lisbon tomorrow?']);
    const r1 = (await w.call<any>('POST', `/api/v1/conversations/${off}/answers`, { body: {} })).body.answer;
    assert.notEqual(r1.outcome, 'answered');
  });

  test('an agent answers from its sources only', async () => {
    const w = await srv.space();
    await withSource(w);
    const other = await withSource(w, '# Refunds\n\nRefunds of pet food orders are paid back within 14 days.\n');
    const a = await agent(w, { name: 'Refunds', sources: [other.source.id] });
    const cid = await conversation(w, ['user', 'How do I list pets? And refunds of food orders?']);
    const ans = (await w.call<any>('POST', `/api/v1/conversations/${cid}/answers`, { body: { agentId: a.id } })).body.answer;
    assert.ok(ans.citations.length > 0);
    assert.ok(ans.citations.every((c: any) => c.sourceId === other.source.id));
  });

  test('errors: another workspace\'s conversation or agent → 404; no customer message or no agent → 409; bad agentId → 400', async () => {
    const w = await srv.space();
    const other = await srv.space();
    const theirAgent = await agent(other);
    const theirConv = await conversation(other, ['user', 'hello']);
    const noAgent = await conversation(w, ['user', 'hello']);
    const r0 = await w.call('POST', `/api/v1/conversations/${noAgent}/answers`, { body: {} });
    assert.equal(r0.status, 409);
    assert.deepEqual(r0.body, { code: 'conflict', error: 'A record with this identifier already exists: the workspace has no enabled agent to answer with.' });
    await agent(w);
    const r1 = await w.call('POST', `/api/v1/conversations/${theirConv}/answers`, { body: {} });
    assert.deepEqual([r1.status, r1.body], [404, NOT_FOUND]);
    const r2 = await w.call('POST', `/api/v1/conversations/${noAgent}/answers`, { body: { agentId: theirAgent.id } });
    assert.deepEqual([r2.status, r2.body], [404, NOT_FOUND]);
    const r3 = await w.call('GET', `/api/v1/conversations/${theirConv}/answers`);
    assert.deepEqual([r3.status, r3.body], [404, NOT_FOUND]);
    const silent = await conversation(w, ['agent', 'We are here if you need us.']);
    const r4 = await w.call('POST', `/api/v1/conversations/${silent}/answers`, { body: {} });
    assert.equal(r4.status, 409);
    assert.deepEqual(r4.body, { code: 'conflict', error: 'A record with this identifier already exists: the conversation has no customer message to answer.' });
    const r5 = await w.call('POST', `/api/v1/conversations/${noAgent}/answers`, { body: { agentId: 'x' } });
    assert.deepEqual([r5.status, r5.body], [400, invalid('agentId must be a UUID')]);
    assert.deepEqual((await w.call<any>('GET', '/api/v1/events?type=answer.created')).body.events, []);
  });
});
