/**
 * The `answers` section of GET /api/v1/analytics (docs/api.md#analytics), black-box over HTTP: answers by outcome,
 * the visitors' feedback (a second one moves the count) and hand-overs by reason, per agent and per cited source,
 * each on the UTC day it happened; the same body after a compaction and a restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';

const ENV = { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' };
const ORIGIN = 'https://shop.example';
const W = '/widget/v1';
const SPEC = JSON.stringify({ openapi: '3.0.3', info: { title: 'Payments API', version: '1' }, paths: {
  '/v1/customers': { post: { operationId: 'createCustomer', summary: 'Create a customer',
    description: 'Creates a new customer object with an email and a name.', responses: { 200: { description: 'OK' } } } },
  '/v1/charges': { post: { operationId: 'createCharge', summary: 'Create a charge',
    description: 'Charges a card or another payment source.', responses: { 200: { description: 'OK' } } } } } });
const Q = '?from=2026-06-09&to=2026-06-12';
/** 10:00 UTC of a June day; the 11th at 08:00, while the visitor's 24-hour session still holds. */
const at = (day: string) => Date.parse(`2026-06-${day}T${day === '11' ? '08' : '10'}:00:00.000Z`);

const zero = { answered: 0, uncertain: 0, no_sources: 0 };
const noHandoff = { customer: 0, uncertain: 0, api: 0 };

test('answers: outcomes, feedback moved by a second say, hand-overs by reason, per agent and source; kept', async () => {
  const dataDir = tempDir();
  let srv: TestServer = await startTestServer({ env: ENV, dataDir });
  const w = await srv.space();
  srv.clock.set(at('10'));
  const s = await w.call<any>('POST', '/api/v1/sources', { body: { content: SPEC, name: 'Payments' } });
  assert.equal(s.status, 201, s.text);
  const sourceId = s.body.source.id;
  const desk = await srv.admin.createDefinition('agent', w.workspaceId, { name: 'Front desk' }) as any;
  assert.equal((await w.call('PATCH', `/api/v1/agents/${desk.id}`,
    { body: { mode: 'reply', allowedOrigins: [ORIGIN] } })).status, 200);
  const helper = await srv.admin.createDefinition('agent', w.workspaceId, { name: 'Suggestions' }) as any;
  assert.equal((await w.call('PATCH', `/api/v1/agents/${helper.id}`, { body: { mode: 'suggest' } })).status, 200);

  // A visitor asks on the 10th: the desk agent answers from the source.
  const sess = await srv.call<any>('POST', `${W}/sessions`, { key: desk.widgetKey, body: {}, headers: { Origin: ORIGIN } });
  assert.equal(sess.status, 201, sess.text);
  const as = { key: sess.body.session.token, headers: { Origin: ORIGIN } };
  const c = await srv.call<any>('POST', `${W}/conversations`, { ...as, body: { body: 'How do I create a customer?' } });
  assert.equal(c.status, 201, c.text);
  const cid = c.body.conversation.id;
  await srv.replies.settled();
  const msgs = await srv.call<any>('GET', `${W}/conversations/${cid}/messages`, as);
  const bot = msgs.body.messages.find((m: any) => m.author.type === 'bot');
  assert.ok(bot?.answerId, msgs.text);
  const first = (await w.call<any>('GET', `/api/v1/conversations/${cid}/answers`)).body.answers[0];
  assert.equal(first.id, bot.answerId);
  assert.equal(first.outcome, 'answered');
  assert.equal(first.agentId, desk.id);
  // The visitor finds it helpful on the 10th, then changes their mind on the 11th: the count moves.
  const fb = await srv.call<any>('POST', `${W}/answers/${first.id}/feedback`, { ...as, body: { helpful: true } });
  assert.equal(fb.status, 200, fb.text);
  srv.clock.set(at('11'));
  assert.equal((await srv.call('POST', `${W}/answers/${first.id}/feedback`, { ...as, body: { helpful: false } })).status,
    200);
  // Then asks for a person in the widget: a hand-over by the desk agent, on the 11th.
  assert.equal((await srv.call('POST', `${W}/conversations/${cid}/handoff`, as)).status, 200);

  // On the 12th an API conversation: the suggestion agent answers twice, then the API hands over.
  srv.clock.set(at('12'));
  const api = await w.call<any>('POST', '/api/v1/conversations', { body: { subject: 'Charges',
    customer: { email: 'c@example.com' } } });
  assert.equal(api.status, 201, api.text);
  const aid = api.body.conversation.id;
  assert.equal((await w.call('POST', `/api/v1/conversations/${aid}/messages`,
    { body: { role: 'user', body: 'How do I create a charge?' } })).status, 201);
  const a2 = await w.call<any>('POST', `/api/v1/conversations/${aid}/answers`, { body: { agentId: helper.id } });
  assert.equal(a2.status, 201, a2.text);
  assert.equal((await w.call('POST', `/api/v1/conversations/${aid}/messages`,
    { body: { role: 'user', body: 'What is the airspeed velocity of an unladen swallow?' } })).status, 201);
  const a3 = await w.call<any>('POST', `/api/v1/conversations/${aid}/answers`, { body: { agentId: helper.id } });
  assert.equal(a3.status, 201, a3.text);
  assert.notEqual(a3.body.answer.outcome, 'answered', a3.text);
  assert.equal((await w.call('POST', `/api/v1/conversations/${aid}/handoff`)).status, 200);

  const o2 = a2.body.answer.outcome as keyof typeof zero;
  const o3 = a3.body.answer.outcome as keyof typeof zero;
  const helperOutcomes = { ...zero, [o2]: 1 };
  helperOutcomes[o3] += 1;
  const all = { ...helperOutcomes, answered: helperOutcomes.answered + 1 };
  const citing = [first, a2.body.answer, a3.body.answer].filter((a) => a.citations.some((x: any) => x.sourceId === sourceId));
  const sourceOutcomes = { ...zero };
  for (const a of citing) sourceOutcomes[a.outcome as keyof typeof zero] += 1;
  const day = (date: string, answersCreated: number, handoffsRequested: number) => ({ date, conversationsCreated: 0,
    conversationsSolved: 0, issuesCreated: 0, issuesClosed: 0, answersCreated, handoffsRequested });
  const expected = {
    created: 3, byOutcome: all, feedback: { helpful: 0, unhelpful: 1 }, handoffs: { customer: 1, uncertain: 0, api: 1 },
    byAgent: [
      { agentId: helper.id, created: 2, byOutcome: helperOutcomes, feedback: { helpful: 0, unhelpful: 0 },
        handoffs: { ...noHandoff, api: 1 } },
      { agentId: desk.id, created: 1, byOutcome: { ...zero, answered: 1 }, feedback: { helpful: 0, unhelpful: 1 },
        handoffs: { ...noHandoff, customer: 1 } },
    ],
    bySource: [{ sourceId, cited: citing.length, byOutcome: sourceOutcomes, feedback: { helpful: 0, unhelpful: 1 } }],
  };
  const get = async (q = Q) => {
    const r = await w.call<any>('GET', `/api/v1/analytics${q}`);
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  const body = await get();
  assert.deepEqual(body.answers, expected);
  assert.deepEqual(body.daily.map((d: any) => [d.date, d.answersCreated, d.handoffsRequested]),
    [['2026-06-09', 0, 0], ['2026-06-10', 1, 0], ['2026-06-11', 0, 1], ['2026-06-12', 2, 1]]);
  assert.deepEqual(body.daily[0], day('2026-06-09', 0, 0));
  // One day alone: the 10th holds the desk's answer and (until it moved) nothing else.
  const tenth = (await get('?from=2026-06-10&to=2026-06-10')).answers;
  assert.deepEqual(tenth.feedback, { helpful: 0, unhelpful: 0 });
  assert.deepEqual(tenth.byAgent.map((a: any) => [a.agentId, a.created]), [[desk.id, 1]]);
  const eleventh = (await get('?from=2026-06-11&to=2026-06-11')).answers;
  assert.deepEqual(eleventh, { created: 0, byOutcome: zero, feedback: { helpful: 0, unhelpful: 1 },
    handoffs: { ...noHandoff, customer: 1 },
    byAgent: [{ agentId: desk.id, created: 0, byOutcome: zero, feedback: { helpful: 0, unhelpful: 1 },
      handoffs: { ...noHandoff, customer: 1 } }],
    bySource: first.citations.some((x: any) => x.sourceId === sourceId)
      ? [{ sourceId, cited: 0, byOutcome: zero, feedback: { helpful: 0, unhelpful: 1 } }] : [] });
  // The hand-over's agent is analytics' own: the conversation shows `{requestedAt, reason}` only.
  const conv = await w.call<any>('GET', `/api/v1/conversations/${cid}`);
  assert.deepEqual(conv.body.conversation.handoff, { requestedAt: new Date(at('11')).toISOString(), reason: 'customer' });

  // Compaction, then a restart: the same answer.
  await srv.store.workspace(w.workspaceId)!.db.compact();
  assert.deepEqual(await get(), body);
  await srv.close();
  srv = await startTestServer({ env: ENV, dataDir });
  try {
    srv.clock.set(at('12'));
    const r = await srv.call<any>('GET', `/api/v1/analytics${Q}`, { key: w.key });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, body);
  } finally {
    await srv.close();
  }
});
