/**
 * Agents' modes (docs/api.md#agent-modes), black-box over HTTP: `reply` answers a live-chat customer as a bot message
 * citing the endpoint and its public docs anchor; `suggest` only stores the answer; other channels and `off` get
 * nothing; once a person replies the bot is silent until the conversation is solved; and 200 races of a person's
 * reply against a bot answer (a model stand-in that answers after a random delay) never put a bot message after the
 * person's.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { startTestServer, type Space, type TestServer } from './helpers/server.js';

/** A Stripe-like API: customers and charges. */
const SPEC = JSON.stringify({ openapi: '3.0.3', info: { title: 'Payments API', version: '1' }, paths: {
  '/v1/customers': {
    post: { operationId: 'createCustomer', summary: 'Create a customer',
      description: 'Creates a new customer object with an email and a name.', responses: { 200: { description: 'OK' } } },
    get: { operationId: 'listCustomers', summary: 'List all customers', responses: { 200: { description: 'OK' } } } },
  '/v1/charges': { post: { operationId: 'createCharge', summary: 'Create a charge',
    description: 'Charges a card or another payment source.', responses: { 200: { description: 'OK' } } } } } });

let srv: TestServer;
let w: Space;
let agentId = '';
before(async () => {
  srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } });
  w = await srv.space();
  const s = await w.call<any>('POST', '/api/v1/sources', { body: { content: SPEC, name: 'Payments' } });
  assert.equal(s.status, 201, s.text);
  assert.equal((await w.call('PATCH', `/api/v1/sources/${s.body.source.id}`,
    { body: { publicDocs: { enabled: true, published: true, slug: 'payments' } } })).status, 200);
  const a = await w.call<any>('POST', '/api/v1/agents', { body: { name: 'Ada bot' } });
  assert.equal(a.status, 201, a.text);
  agentId = a.body.agent.id;
});
after(() => srv.close());

const mode = async (m: string) =>
  assert.equal((await w.call('PATCH', `/api/v1/agents/${agentId}`, { body: { mode: m } })).status, 200);
let made = 0;
/** A conversation of `channel` in `space` of `server` (live-chat ones come from the widget; here by the import). */
async function conversation(channel = 'live-chat', server = srv, space = w): Promise<string> {
  const externalId = `modes-${++made}`;
  await server.admin.importData(space.workspaceId, { conversations: [{ externalId, subject: 'Help', channel,
    customer: { email: 'visitor@example.com' } }] });
  const list = await space.call<any>('GET', `/api/v1/conversations?channel=${channel}&limit=100`);
  const c = list.body.conversations.find((x: any) => x.externalId === externalId);
  assert.ok(c, list.text);
  return c.id;
}
const say = async (id: string, role: 'user' | 'agent', body: string) =>
  assert.equal((await w.call('POST', `/api/v1/conversations/${id}/messages`, { body: { role, body } })).status, 201);
const messages = async (id: string) =>
  (await w.call<any>('GET', `/api/v1/conversations/${id}/messages?limit=100`)).body.messages as any[];
const answers = async (id: string) =>
  (await w.call<any>('GET', `/api/v1/conversations/${id}/answers?limit=100`)).body.answers as any[];

test('reply: a live-chat question is answered by a bot message citing POST /v1/customers and its docs anchor',
  async () => {
    await mode('reply');
    const id = await conversation();
    await say(id, 'user', 'How do I create a customer?');
    await srv.replies.settled();
    const [a] = await answers(id);
    assert.equal(a.outcome, 'answered');
    assert.equal(a.agentId, agentId);
    assert.deepEqual([a.citations[0].method, a.citations[0].path], ['POST', '/v1/customers']);
    assert.match(a.citations[0].url, /^http:\/\/127\.0\.0\.1:\d+\/docs\/payments#/);
    const ms = await messages(id);
    assert.equal(ms.length, 2);
    assert.equal(ms[1].role, 'agent');
    assert.ok(ms[1].body.startsWith(a.text), ms[1].body);
    assert.ok(ms[1].body.includes(`[1] POST /v1/customers — ${a.citations[0].url}`), ms[1].body);
  });

test('suggest stores the answer only; off and other channels get nothing', async () => {
  await mode('suggest');
  const id = await conversation();
  await say(id, 'user', 'How do I create a charge?');
  await srv.replies.settled();
  assert.equal((await answers(id)).length, 1);
  assert.equal((await messages(id)).length, 1);
  const email = await conversation('email');
  await say(email, 'user', 'How do I create a charge?');
  await mode('off');
  const off = await conversation();
  await say(off, 'user', 'How do I create a charge?');
  await srv.replies.settled();
  assert.equal((await answers(email)).length, 0);
  assert.equal((await answers(off)).length, 0);
});

test('once a person replies the bot is silent (its answers kept as suggestions) until the conversation is solved',
  async () => {
    await mode('reply');
    const id = await conversation();
    await say(id, 'user', 'How do I list customers?');
    await srv.replies.settled();
    await say(id, 'agent', 'Hi, this is Grace from support.');
    await say(id, 'user', 'And how do I create a charge?');
    await srv.replies.settled();
    let ms = await messages(id);
    assert.deepEqual(ms.map((m) => m.role), ['user', 'agent', 'agent', 'user']);
    assert.equal((await answers(id)).length, 2);
    assert.equal((await w.call('PATCH', `/api/v1/conversations/${id}`, { body: { status: 'solved' } })).status, 200);
    await say(id, 'user', 'One more: how do I create a customer?');
    await srv.replies.settled();
    ms = await messages(id);
    assert.deepEqual(ms.map((m) => m.role), ['user', 'agent', 'agent', 'user', 'user', 'agent']);
    assert.match(ms[5].body, /POST \/v1\/customers/);
  });

test('200 races of a person\'s reply against a bot answer: never a bot message after the person\'s', async () => {
  // A model that answers after 0–15 ms, so that the bot's write and the person's land in either order.
  const llm: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'c', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop',
        message: { role: 'assistant', content: 'Use POST /v1/customers [1].' } }] }));
    }, Math.random() * 15));
  });
  await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r));
  const racing = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000',
    AGENT_LLM_URL: `http://127.0.0.1:${(llm.address() as { port: number }).port}/v1`, AGENT_LLM_API_KEY: 'sk-race',
    AGENT_LLM_MODEL: 'race' } });
  try {
    const rw = await racing.space();
    assert.equal((await rw.call('POST', '/api/v1/sources', { body: { content: SPEC } })).status, 201);
    const a = await rw.call<any>('POST', '/api/v1/agents', { body: { name: 'Race bot', mode: 'reply' } });
    assert.equal(a.status, 201, a.text);
    const PERSON = 'A person here.';
    let botFirst = 0;
    let silenced = 0;
    for (let i = 0; i < 200; i++) {
      const id = await conversation('live-chat', racing, rw);
      const question = rw.call('POST', `/api/v1/conversations/${id}/messages`,
        { body: { role: 'user', body: 'How do I create a customer?' } });
      // The person answers at the same moment: after the customer's message is on disk, while the bot is thinking.
      await question;
      await new Promise((r) => setTimeout(r, Math.random() * 10));
      assert.equal((await rw.call('POST', `/api/v1/conversations/${id}/messages`,
        { body: { role: 'agent', body: PERSON } })).status, 201);
      await racing.replies.settled();
      const ms = (await rw.call<any>('GET', `/api/v1/conversations/${id}/messages`)).body.messages as any[];
      const person = ms.findIndex((m) => m.body === PERSON);
      const bots = ms.map((m, at) => (m.role === 'agent' && m.body !== PERSON ? at : -1)).filter((at) => at >= 0);
      assert.ok(bots.every((at) => at < person), `conversation ${i}: ${JSON.stringify(ms.map((m) => m.body))}`);
      if (bots.length > 0) botFirst++; else silenced++;
    }
    // Both orders happened: the race was real.
    assert.ok(botFirst > 0 && silenced > 0, `bot first ${botFirst}, silenced ${silenced}`);
  } finally {
    await racing.close();
    llm.closeAllConnections();
    await new Promise((r) => llm.close(r));
  }
});

test('hand-over: the customer asks for a person, or answers stay uncertain, or the API asks; the event follows',
  async () => {
    await mode('reply');
    const asks = await conversation();
    await say(asks, 'user', 'Can I talk to a person please?');
    await srv.replies.settled();
    let c = (await w.call<any>('GET', `/api/v1/conversations/${asks}`)).body.conversation;
    assert.equal(c.handoff.reason, 'customer');
    assert.equal(c.status, 'waiting'); // the bot's hand-over message is an agent message
    const ms = await messages(asks);
    assert.deepEqual(ms.map((m) => m.body), ['Can I talk to a person please?',
      'I am asking a person from the team to help; they will answer here.']);
    assert.equal((await answers(asks)).length, 0);
    const ev = await w.call<any>('GET', '/api/v1/events?type=conversation.handoff_requested');
    assert.equal(ev.body.events.filter((e: any) => e.data.object.id === asks).length, 1);
    // Pending: the bot writes no more messages, its answers are kept for the person.
    await say(asks, 'user', 'How do I create a customer?');
    await srv.replies.settled();
    assert.equal((await messages(asks)).length, 3);
    assert.equal((await answers(asks)).length, 1);

    // Two uncertain answers in a row (handoffAfterUncertain 2): the second hands over.
    const lost = await conversation();
    await say(lost, 'user', 'Why is the sky blue over the ocean?');
    await srv.replies.settled();
    assert.equal((await w.call<any>('GET', `/api/v1/conversations/${lost}`)).body.conversation.handoff, undefined);
    await say(lost, 'user', 'What about sunsets over mountains?');
    await srv.replies.settled();
    c = (await w.call<any>('GET', `/api/v1/conversations/${lost}`)).body.conversation;
    assert.equal(c.handoff.reason, 'uncertain');
    assert.match((await messages(lost)).at(-1).body, /I am asking a person from the team to help/);

    // Through the API: 200 with the conversation; a pending one keeps its time and reason; solved clears it.
    const api = await conversation('email');
    const r = await w.call<any>('POST', `/api/v1/conversations/${api}/handoff`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.conversation.handoff.reason, 'api');
    assert.equal(r.body.conversation.status, 'open');
    const again = await w.call<any>('POST', `/api/v1/conversations/${api}/handoff`);
    assert.deepEqual(again.body.conversation.handoff, r.body.conversation.handoff);
    assert.equal((await w.call<any>('PATCH', `/api/v1/conversations/${api}`, { body: { status: 'solved' } }))
      .body.conversation.handoff, undefined);
    assert.deepEqual((await w.call<any>('POST', '/api/v1/conversations/nope/handoff')).body,
      { code: 'not_found', error: 'Record not found.' });
    const reader = await srv.newKey({ scopes: 'conversations:read', workspaceId: w.workspaceId });
    const refused = await w.call<any>('POST', `/api/v1/conversations/${api}/handoff`, { key: reader });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'insufficient_scope');
  });
