/**
 * Webhook deliveries (docs/api.md#webhook-deliveries, #webhook-signatures): every event type
 * arrives signed (checked with the README's verifier), the body is the event as the API shows
 * it; secret rotation (both signatures for 24 h); a deleted or disabled endpoint gets nothing;
 * another workspace's receiver gets nothing; nothing is sent before its event is durable; a
 * bulk import sends nothing; the private-address rule is checked again at delivery.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verifyWebhook, startReceiver } from './helpers/receiver.js';
import { inWorld, type Hook } from './helpers/webhooks.js';
import { createConversation } from '../src/areas/conversations/conversations.js';
import { sendAttempt } from '../src/areas/webhooks/send.js';

const HOOKS = '/api/v1/webhook-endpoints';

test('each of the 8 event types arrives signed, with the event as GET /events/{id} shows it', () => inWorld(undefined, {}, async (w) => {
  const { srv, rx, hook } = w;
  const conv = await w.event('Login fails');
  await srv.call('POST', `/api/v1/conversations/${conv}/messages`, { body: { role: 'user', body: 'Help' } });
  await srv.call('PATCH', `/api/v1/conversations/${conv}`, { body: { status: 'solved' } });
  const issue = (await srv.call<{ issue: { id: string } }>('POST', '/api/v1/issues', { body: { subject: 'SSO', conversationId: conv } })).body.issue.id;
  await srv.call('PATCH', `/api/v1/issues/${issue}`, { body: { subject: 'SSO broken' } });
  const src = (await srv.call<{ source: { id: string } }>('POST', '/api/v1/sources', { body: { content: '# Guide\n\nReset your password.\n' } })).body.source.id;
  await srv.call('PATCH', `/api/v1/sources/${src}`, { body: { name: 'Guide' } });
  assert.equal((await srv.call('DELETE', `/api/v1/sources/${src}`)).status, 200);
  const events = (await srv.call<{ events: Array<{ id: string; type: string }> }>('GET', '/api/v1/events?limit=100')).body.events;
  assert.deepEqual(new Set(events.map((e) => e.type)), new Set(['conversation.created', 'conversation.updated', 'message.created', 'issue.created', 'issue.updated', 'source.created', 'source.updated', 'source.deleted']));

  await srv.webhooks.runDue();
  assert.equal(rx.received.length, events.length, 'one request per event');
  const seen = new Set<string>();
  for (const r of rx.received) {
    assert.equal(r.path, '/hook');
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(r.headers['webhook-timestamp'], String(Math.floor(srv.clock.now() / 1000)));
    assert.ok(verifyWebhook(hook.secret, r.headers, r.body, srv.clock.now()), `the signature of ${r.headers['webhook-id']} verifies`);
    assert.ok(!verifyWebhook(hook.secret, r.headers, r.body + ' ', srv.clock.now()), 'a changed body does not verify');
    const body = JSON.parse(r.body) as { id: string; type: string };
    assert.equal(r.headers['webhook-id'], body.id);
    const shown = await srv.call<{ event: unknown }>('GET', `/api/v1/events/${body.id}`);
    assert.deepEqual(body, shown.body.event);
    assert.equal(r.body, JSON.stringify(shown.body.event), 'the body is the same JSON text');
    seen.add(body.type);
  }
  assert.equal(seen.size, 8);
  const ds = await w.deliveries();
  assert.equal(ds.length, events.length);
  for (const d of ds) {
    assert.deepEqual({ ...d, id: '', eventId: '', eventType: '', createdAt: '', durationMs: 0 }, {
      object: 'webhook_delivery', id: '', eventId: '', eventType: '', attempt: 1, status: 'succeeded', responseStatus: 200, error: null, durationMs: 0, createdAt: '', nextAttemptAt: null,
    });
    assert.ok(typeof d.durationMs === 'number' && d.durationMs >= 0);
  }
  assert.deepEqual(new Set(ds.map((d) => d.eventId)), new Set(events.map((e) => e.id)));
  // Filtered by status.
  assert.equal((await srv.call<{ deliveries: unknown[] }>('GET', `${HOOKS}/${hook.id}/deliveries?status=pending`)).body.deliveries.length, 0);
}));

test('an endpoint subscribed to some types gets only those', () => inWorld(undefined, {}, async (w) => {
  const { srv, rx, hook } = w;
  await srv.call('PATCH', `${HOOKS}/${hook.id}`, { body: { events: ['issue.created'] } });
  await w.event();
  await srv.call('POST', '/api/v1/issues', { body: { subject: 'Only me' } });
  await srv.webhooks.runDue();
  assert.deepEqual(rx.received.map((r) => (JSON.parse(r.body) as { type: string }).type), ['issue.created']);
}));

test('rotate-secret: both secrets sign for 24 hours, then only the new one; a master-key rotation changes nothing', () => inWorld(undefined, {}, async (w) => {
  const { srv, rx, hook } = w;
  const rotated = await srv.call<{ webhookEndpoint: Hook }>('POST', `${HOOKS}/${hook.id}/rotate-secret`);
  assert.equal(rotated.status, 200, rotated.text);
  const fresh = rotated.body.webhookEndpoint.secret;
  assert.notEqual(fresh, hook.secret);
  await w.event();
  await srv.webhooks.runDue();
  const during = rx.received[0];
  assert.equal(String(during.headers['webhook-signature']).split(' ').length, 2);
  assert.ok(verifyWebhook(fresh, during.headers, during.body, srv.clock.now()));
  assert.ok(verifyWebhook(hook.secret, during.headers, during.body, srv.clock.now()));

  srv.clock.advance(24 * 3600 * 1000 - 1);
  await w.event();
  await srv.webhooks.runDue();
  assert.equal(String(rx.received[1].headers['webhook-signature']).split(' ').length, 2, 'still two just before 24 h');

  srv.clock.advance(1);
  await w.event();
  await srv.webhooks.runDue();
  const after = rx.received[2];
  assert.equal(String(after.headers['webhook-signature']).split(' ').length, 1);
  assert.ok(verifyWebhook(fresh, after.headers, after.body, srv.clock.now()));
  assert.ok(!verifyWebhook(hook.secret, after.headers, after.body, srv.clock.now()));

  const resealed = await srv.admin.rotateSecrets();
  assert.equal(resealed.credentialsResealed, 1);
  await w.event();
  await srv.webhooks.runDue();
  assert.ok(verifyWebhook(fresh, rx.received[3].headers, rx.received[3].body, srv.clock.now()));
}));

test('a deleted or disabled endpoint gets nothing more; enabled again, it gets new events', () => inWorld(() => ({ status: 500 }), {}, async (w) => {
  const { srv, rx, hook } = w;
  const second = (await srv.call<{ webhookEndpoint: Hook }>('POST', HOOKS, { body: { url: `${rx.url}/second`, events: ['*'] } })).body.webhookEndpoint;
  await w.event();
  await srv.webhooks.runDue();
  assert.equal(rx.received.length, 2, 'one failed attempt per endpoint; both deliveries wait for their retry');
  assert.equal((await srv.call('DELETE', `${HOOKS}/${hook.id}`)).status, 200);
  const off = await srv.call<{ webhookEndpoint: Hook }>('PATCH', `${HOOKS}/${second.id}`, { body: { enabled: false } });
  assert.equal(off.body.webhookEndpoint.status, 'disabled');
  const failed = await w.deliveries(second.id);
  assert.deepEqual(failed.map((d) => [d.status, d.attempt, d.responseStatus, d.error, d.nextAttemptAt]),
    [['failed', 1, 500, 'the endpoint was disabled before this delivery succeeded', null]]);
  srv.clock.advance(3600_000);
  await w.event();
  await srv.webhooks.runDue();
  assert.equal(rx.received.length, 2, 'nothing more was sent');
  assert.equal((await w.deliveries(second.id)).length, 1, 'a disabled endpoint gets no new deliveries');
  rx.answer = () => ({ status: 204 });
  await srv.call('PATCH', `${HOOKS}/${second.id}`, { body: { enabled: true } });
  await w.event();
  await srv.webhooks.runDue();
  assert.deepEqual(rx.received.slice(2).map((r) => r.path), ['/second']);
  assert.equal((await w.deliveries(second.id))[0].status, 'succeeded');
}));

test("another workspace's events never reach this workspace's receiver", () => inWorld(undefined, {}, async (w) => {
  const { srv, rx } = w;
  const other = await srv.space();
  const rxB = await startReceiver();
  try {
    const hookB = (await other.call<{ webhookEndpoint: Hook }>('POST', HOOKS, { body: { url: `${rxB.url}/b`, events: ['*'] } })).body.webhookEndpoint;
    await w.event();
    await other.call('POST', '/api/v1/conversations', { body: { subject: 'B only', customer: { email: 'b@example.com' } } });
    await other.call('POST', '/api/v1/issues', { body: { subject: 'B issue' } });
    await srv.webhooks.runDue();
    assert.equal(rx.received.length, 1);
    assert.equal(rxB.received.length, 2);
    const bEvents = new Set((await other.call<{ events: Array<{ id: string }> }>('GET', '/api/v1/events')).body.events.map((e) => e.id));
    for (const r of rx.received) assert.ok(!bEvents.has(String(r.headers['webhook-id'])));
    for (const r of rxB.received) assert.ok(bEvents.has(String(r.headers['webhook-id'])));
    assert.ok(verifyWebhook(hookB.secret, rxB.received[0].headers, rxB.received[0].body, srv.clock.now()));
    assert.ok(!verifyWebhook(w.hook.secret, rxB.received[0].headers, rxB.received[0].body, srv.clock.now()));
  } finally { await rxB.close(); }
}));

test('a receiver that never answers holds only its own endpoint\'s slots: other endpoints and API requests go on', () => inWorld(undefined, { WEBHOOK_TIMEOUT_MS: '600000', WEBHOOK_CONCURRENCY_PER_ENDPOINT: '4' }, async (w) => {
  const { srv, rx } = w;
  const slow = await startReceiver(() => 'hold');
  try {
    await srv.call('POST', HOOKS, { body: { url: `${slow.url}/slow`, events: ['*'] } });
    for (let i = 0; i < 10; i++) await w.event();
    // No runDue (it would wait for the held attempts): the dispatcher runs by itself.
    await rx.waitFor(10);
    await slow.waitFor(4);
    assert.ok(srv.webhooks.inFlight >= 4, 'the slow endpoint holds its 4 slots');
    const started = performance.now();
    const list = await srv.call('GET', '/api/v1/conversations?limit=100');
    assert.equal(list.status, 200);
    assert.ok(performance.now() - started < 1000, 'the API answers while deliveries hang');
    assert.equal(slow.received.length, 4, 'no more than its 4 slots went to the slow endpoint');
  } finally { await slow.close(); }
}));

test('the per-endpoint bound: at most WEBHOOK_CONCURRENCY_PER_ENDPOINT requests at once, the next sent as an answer comes', () => inWorld(() => 'hold', { WEBHOOK_TIMEOUT_MS: '600000', WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2' }, async (w) => {
  const { srv, rx } = w;
  for (let i = 0; i < 10; i++) await w.event();
  await rx.waitFor(2);
  assert.equal(srv.webhooks.inFlight, 2, 'under way: the bound of 2');
  assert.equal(rx.received.length, 2, 'sent at once: the bound');
  rx.answer = () => ({ status: 200 });
  rx.release(200);
  const got = await rx.waitFor(10);
  assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 10, 'each event once');
  await srv.webhooks.runDue();
  assert.deepEqual((await w.deliveries()).map((d) => d.status), Array(10).fill('succeeded'));
}));

test('one request at a time per connection: a held burst has one request on each of the bound\'s connections, and kept connections carry the rest', () => inWorld(undefined, { WEBHOOK_TIMEOUT_MS: '600000', WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2' }, async (w) => {
  const { srv, rx } = w;
  await w.event();
  await srv.webhooks.runDue();
  assert.equal(rx.connections, 1, 'the first delivery opened one connection, which answered');
  rx.answer = () => 'hold';
  for (let i = 0; i < 12; i++) await w.event();
  await rx.waitFor(1 + 2);
  assert.equal(rx.connections, 2, 'the bound of 2 connections');
  assert.equal(rx.received.length, 3, 'no request goes behind a held one');
  rx.answer = () => ({ status: 200 });
  rx.release(200);
  const got = await rx.waitFor(13);
  assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 13, 'each event once');
  await srv.webhooks.runDue();
  assert.deepEqual((await w.deliveries()).map((d) => d.status), Array(13).fill('succeeded'));
  assert.equal(rx.connections, 2, 'the two connections were kept alive');
}));

test('a slow endpoint holds only its own connections: another endpoint gets every event', () => inWorld(undefined, { WEBHOOK_TIMEOUT_MS: '600000', WEBHOOK_CONCURRENCY: '4', WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2' }, async (w) => {
  const { srv, rx } = w;
  const slow = await startReceiver(() => 'hold');
  try {
    await srv.call('POST', HOOKS, { body: { url: `${slow.url}/slow`, events: ['*'] } });
    for (let i = 0; i < 10; i++) await w.event();
    await rx.waitFor(10);
    await slow.waitFor(2);
    assert.equal(slow.connections, 2, 'the slow endpoint: its 2 connections');
    assert.equal(slow.received.length, 2);
    assert.equal(new Set(rx.received.map((r) => r.headers['webhook-id'])).size, 10, 'the other endpoint: each event once');
  } finally { slow.release(200); await slow.close(); }
}));

test('with the dispatcher on its own (no runDue), each delivery reaches its receiver within 1 s of the write that made its event, alone and in a burst of 40', () => inWorld(undefined, {}, async (w) => {
  const { rx } = w;
  let started = performance.now();
  await w.event();
  await rx.waitFor(1, 1000);
  assert.ok(performance.now() - started < 1000, `alone: ${Math.round(performance.now() - started)} ms`);
  started = performance.now();
  await Promise.all(Array.from({ length: 40 }, () => w.event()));
  const wrote = performance.now();
  await rx.waitFor(41, 1000);
  assert.ok(performance.now() - wrote < 1000, `the last of 40, after its write: ${Math.round(performance.now() - wrote)} ms (${Math.round(wrote - started)} ms of writes)`);
  assert.equal(new Set(rx.received.map((r) => r.headers['webhook-id'])).size, 41);
}));

test('a delivery is sent only once its event is on disk; an aborted change sends nothing; a bulk import sends nothing', () => inWorld(undefined, {}, async (w) => {
  const { srv, rx } = w;
  const ws = srv.store.workspace(srv.workspaceId)!;
  const tx = ws.db.begin();
  createConversation(ws, tx, { subject: 'Not yet durable', customer: { email: 'd@example.com' } }, srv.clock.now());
  assert.equal((await w.deliveries()).length, 0, 'no delivery is owed before its event is on disk');
  await srv.webhooks.runDue();
  assert.equal(rx.received.length, 0, 'not sent before the commit');
  await ws.db.commit(tx);
  assert.deepEqual((await w.deliveries()).map((d) => [d.status, d.attempt, d.nextAttemptAt === d.createdAt]), [['pending', 0, true]], 'owed once on disk: pending, due since its event');
  await srv.webhooks.runDue();
  assert.equal(rx.received.length, 1);

  const aborted = ws.db.begin();
  createConversation(ws, aborted, { subject: 'Never', customer: { email: 'n@example.com' } }, srv.clock.now());
  aborted.abort();
  await srv.admin.importData(srv.workspaceId, { conversations: [{ subject: 'Imported', customer: { email: 'i@example.com' }, messages: [{ role: 'user', body: 'hi' }] }] });
  await srv.webhooks.runDue();
  assert.equal(rx.received.length, 1);
  assert.equal((await w.deliveries()).length, 1);
}));

test('the address is checked again at each delivery: a private one is refused without a connection', async () => {
  const rx = await startReceiver();
  try {
    const out = await sendAttempt(`${rx.url}/x`, '{}', {}, { timeoutMs: 1000, allowPrivate: false });
    const refused = `the host of ${rx.url}/x cannot be reached from this server`;
    assert.deepEqual({ ...out, durationMs: 0 }, { ok: false, status: null, error: refused, durationMs: 0 });
    assert.equal(rx.received.length, 0);
    const ok = await sendAttempt(`${rx.url}/x`, '{}', {}, { timeoutMs: 1000, allowPrivate: true });
    assert.equal(ok.ok, true);
    assert.equal(rx.received.length, 1);
  } finally { await rx.close(); }
});
