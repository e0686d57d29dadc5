/**
 * The widget API's limits (docs/api.md#live-chat-limits), time injected: 20 messages a minute per session and 30 new
 * sessions a minute per client address and widget key → 429 `rate_limited` with `Retry-After`, then allowed again.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';

const ORIGIN = 'https://shop.example';
let srv: TestServer;
before(async () => { srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } }); });
after(async () => { await srv.close(); });

async function agent(): Promise<string> {
  const a = await srv.admin.createDefinition('agent', srv.workspaceId, { name: 'Desk' }) as any;
  await srv.call('PATCH', `/api/v1/agents/${a.id}`, { body: { allowedOrigins: [ORIGIN] } });
  return a.widgetKey;
}
const newSession = (key: string) => srv.call<any>('POST', '/widget/v1/sessions', { key, body: {}, headers: { Origin: ORIGIN } });

test('the 21st message in a minute of one session → 429 with Retry-After; a new token after 3 s; another session unaffected', async () => {
  const key = await agent();
  const s = (await newSession(key)).body.session.token;
  srv.watch(s);
  const opts = (body: string) => ({ key: s, body: { body }, headers: { Origin: ORIGIN } });
  const conv = (await srv.call<any>('POST', '/widget/v1/conversations', opts('m0'))).body.conversation.id;
  for (let i = 1; i < 20; i++) assert.equal((await srv.call('POST', `/widget/v1/conversations/${conv}/messages`, opts(`m${i}`))).status, 201);
  const r = await srv.call('POST', `/widget/v1/conversations/${conv}/messages`, opts('too many'));
  assert.equal(r.status, 429);
  assert.equal(r.headers.get('retry-after'), '3');
  assert.equal(r.headers.get('access-control-allow-origin'), ORIGIN);
  assert.deepEqual(r.body, { code: 'rate_limited', error: 'Too many API requests. Slow down and try again shortly: more than 20 messages a minute in this session.' });
  const other = (await newSession(key)).body.session.token;
  srv.watch(other);
  assert.equal((await srv.call('POST', '/widget/v1/conversations', { key: other, body: { body: 'hi' }, headers: { Origin: ORIGIN } })).status, 201);
  srv.clock.advance(3000);
  assert.equal((await srv.call('POST', `/widget/v1/conversations/${conv}/messages`, opts('again'))).status, 201);
});

test('the 31st new session in a minute from one address with one widget key → 429; another widget key unaffected', async () => {
  const key = await agent();
  for (let i = 0; i < 30; i++) {
    const r = await newSession(key);
    assert.equal(r.status, 201);
    srv.watch(r.body.session.token);
  }
  const r = await newSession(key);
  assert.equal(r.status, 429);
  assert.equal(r.headers.get('retry-after'), '2');
  assert.deepEqual(r.body, { code: 'rate_limited', error: 'Too many API requests. Slow down and try again shortly: more than 30 new sessions a minute from this address.' });
  const other = await newSession(await agent());
  assert.equal(other.status, 201);
  srv.watch(other.body.session.token);
  srv.clock.advance(2000);
  const again = await newSession(key);
  assert.equal(again.status, 201);
  srv.watch(again.body.session.token);
});
