/**
 * Webhook retries and disabling (docs/api.md#webhook-retries, #webhook-disabling), driven by a
 * ManualClock and the dispatcher's `runDue` seam: the schedule step by step on a 5xx, a
 * timeout and a refused connection; jitter; Retry-After on 429/503; redirects not followed;
 * 410 disables at once; 100 failed deliveries in a row, or 5 days of failures, disable.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startReceiver } from './helpers/receiver.js';
import { inWorld, at, type Hook } from './helpers/webhooks.js';

const HOOKS = '/api/v1/webhook-endpoints';
const SCHEDULE = [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 504e5, 72e6, 864e5];

test('a 5xx is retried on the schedule, step by step, then the delivery fails; every attempt has the same webhook-id', () => inWorld(() => ({ status: 500 }), {}, async (w) => {
  const { srv, rx } = w;
  const t0 = srv.clock.now();
  await w.event();
  await srv.webhooks.runDue();
  let [d] = await w.deliveries();
  assert.deepEqual([d.attempt, d.status, d.responseStatus, d.error, d.nextAttemptAt], [1, 'pending', 500, 'the endpoint answered HTTP 500 Internal Server Error', at(t0, 5000)]);
  let t = t0;
  for (let step = 0; step < SCHEDULE.length; step++) {
    srv.clock.advance(SCHEDULE[step] - 1);
    await srv.webhooks.runDue();
    assert.equal(rx.received.length, step + 1, `not before step ${step + 1} is due`);
    srv.clock.advance(1);
    t += SCHEDULE[step];
    await srv.webhooks.runDue();
    assert.equal(rx.received.length, step + 2, `attempt ${step + 2} at its time`);
    [d] = await w.deliveries();
    assert.equal(d.attempt, step + 2);
    const last = step === SCHEDULE.length - 1;
    assert.deepEqual([d.status, d.nextAttemptAt], last ? ['failed', null] : ['pending', at(t, SCHEDULE[step + 1])]);
  }
  assert.equal(new Set(rx.received.map((r) => r.headers['webhook-id'])).size, 1);
  srv.clock.advance(7 * 24 * 3600_000);
  await srv.webhooks.runDue();
  assert.equal(rx.received.length, 10, 'nothing after the last step');
  assert.equal((await w.endpoint()).status, 'enabled', 'one failed delivery does not disable');
}));

test('jitter adds up to 10 % to a step', () => inWorld(() => ({ status: 502 }), {}, async (w) => {
  w.jitter.value = 0.999;
  const t0 = w.srv.clock.now();
  await w.event();
  await w.srv.webhooks.runDue();
  assert.equal((await w.deliveries())[0].nextAttemptAt, at(t0, Math.round(5000 * 1.0999)));
}));

test('a timeout is a failed attempt, retried on the schedule', () => inWorld(() => 'hold', { WEBHOOK_TIMEOUT_MS: '200' }, async (w) => {
  const t0 = w.srv.clock.now();
  await w.event();
  await w.srv.webhooks.runDue();
  let [d] = await w.deliveries();
  assert.deepEqual([d.attempt, d.status, d.responseStatus, d.error, d.nextAttemptAt], [1, 'pending', null, 'no answer within 200 ms', at(t0, 5000)]);
  assert.ok(d.durationMs! >= 150, `durationMs ${d.durationMs}`);
  w.srv.clock.advance(5000);
  await w.srv.webhooks.runDue();
  [d] = await w.deliveries();
  assert.deepEqual([d.attempt, d.nextAttemptAt], [2, at(t0, 5000 + 300_000)]);
  assert.equal(w.rx.received.length, 2);
}));

test('a refused connection is a failed attempt, retried on the schedule', () => inWorld(undefined, {}, async (w) => {
  const closed = await startReceiver();
  await closed.close(); // its port now refuses connections
  const made = await w.srv.call<{ webhookEndpoint: Hook }>('POST', HOOKS, { body: { url: `${closed.url}/gone`, events: ['conversation.created'] } });
  const t0 = w.srv.clock.now();
  await w.event();
  await w.srv.webhooks.runDue();
  let [d] = await w.deliveries(made.body.webhookEndpoint.id);
  assert.deepEqual([d.attempt, d.status, d.responseStatus, d.error, d.nextAttemptAt], [1, 'pending', null, 'could not connect to the endpoint: ECONNREFUSED', at(t0, 5000)]);
  w.srv.clock.advance(5000);
  await w.srv.webhooks.runDue();
  [d] = await w.deliveries(made.body.webhookEndpoint.id);
  assert.deepEqual([d.attempt, d.status], [2, 'pending']);
  assert.equal((await w.deliveries())[0].status, 'succeeded', 'the other endpoint got its delivery meanwhile');
}));

test('Retry-After on 429 and 503 is honoured when later than the next step (seconds or a date, at most 24 h)', async () => {
  const cases: Array<[number, string, number]> = [ // status, Retry-After, expected wait
    [503, '120', 120_000],
    [429, '2', 5000], // earlier than the step: the step wins
    [429, 'Mon, 29 Jun 2026 13:00:00 GMT', 3600_000], // an HTTP date (the clock is at 12:00)
    [503, '999999', 24 * 3600_000],
    [500, '120', 5000], // only on 429 and 503
  ];
  for (const [status, retryAfter, wait] of cases) {
    await inWorld(() => ({ status, headers: { 'Retry-After': retryAfter } }), {}, async (w) => {
      const t0 = w.srv.clock.now();
      await w.event();
      await w.srv.webhooks.runDue();
      const [d] = await w.deliveries();
      assert.deepEqual([d.responseStatus, d.nextAttemptAt], [status, at(t0, wait)], `${status} Retry-After: ${retryAfter}`);
    });
  }
});

test('a redirect is not followed: it is a failed attempt', () => inWorld((r) => (r.path === '/hook' ? { status: 302, headers: { Location: '/elsewhere' } } : { status: 200 }), {}, async (w) => {
  await w.event();
  await w.srv.webhooks.runDue();
  assert.deepEqual(w.rx.received.map((r) => r.path), ['/hook']);
  const [d] = await w.deliveries();
  assert.deepEqual([d.status, d.responseStatus, d.error], ['pending', 302, 'the endpoint answered HTTP 302 Found; redirects are not followed']);
}));

test('410 Gone disables the endpoint at once; its other pending deliveries fail; re-enabling clears the reason', () => inWorld(() => ({ status: 410 }), { WEBHOOK_CONCURRENCY_PER_ENDPOINT: '1' }, async (w) => {
  const { srv, rx } = w;
  await w.event();
  await w.event();
  await srv.webhooks.runDue();
  assert.equal(rx.received.length, 1, 'one at a time: the second is never sent');
  const e = await w.endpoint();
  assert.deepEqual([e.enabled, e.status, e.disabledReason], [false, 'disabled', 'the endpoint answered HTTP 410 Gone on 2026-06-29T12:00:00.000Z']);
  const ds = await w.deliveries();
  assert.deepEqual(ds.map((d) => [d.status, d.attempt, d.responseStatus, d.error]), [
    ['failed', 0, null, 'the endpoint was disabled before this delivery succeeded'],
    ['failed', 1, 410, 'the endpoint answered HTTP 410 Gone'],
  ]);
  await w.event();
  srv.clock.advance(3600_000);
  await srv.webhooks.runDue();
  assert.equal(rx.received.length, 1);
  const on = await srv.call<{ webhookEndpoint: Hook }>('PATCH', `${HOOKS}/${w.hook.id}`, { body: { enabled: true } });
  assert.deepEqual([on.body.webhookEndpoint.status, on.body.webhookEndpoint.disabledReason], ['enabled', null]);
}));

test('100 deliveries failed in a row disable the endpoint; a success in between starts the count again', () => inWorld(() => ({ status: 500 }), { WEBHOOK_RETRY_SCHEDULE: '1s', WEBHOOK_CONCURRENCY_PER_ENDPOINT: '8' }, async (w) => {
  const { srv, rx } = w;
  /** `n` events whose two attempts both fail. */
  const failEvents = async (n: number) => {
    for (let i = 0; i < n; i++) await w.event();
    await srv.webhooks.runDue();
    srv.clock.advance(1000);
    await srv.webhooks.runDue();
  };
  await failEvents(99);
  assert.equal((await w.endpoint()).status, 'enabled', '99 in a row');
  rx.answer = () => ({ status: 200 });
  await w.event();
  await srv.webhooks.runDue();
  rx.answer = () => ({ status: 500 });
  await failEvents(99);
  assert.equal((await w.endpoint()).status, 'enabled', 'the success started the count again');
  await failEvents(1);
  const e = await w.endpoint();
  assert.equal(e.status, 'disabled');
  assert.match(e.disabledReason!, /^100 deliveries in a row failed \(the last on 2026-06-29T12:00:0\d\.000Z\)$/);
  const sent = rx.received.length;
  await w.event();
  srv.clock.advance(3600_000);
  await srv.webhooks.runDue();
  assert.equal(rx.received.length, sent);
}));

test('an endpoint whose attempts all failed for 5 days is disabled', () => inWorld(() => ({ status: 503 }), { WEBHOOK_RETRY_SCHEDULE: '24h,24h,24h,24h,24h,24h' }, async (w) => {
  const { srv } = w;
  await w.event();
  await srv.webhooks.runDue();
  for (let day = 1; day <= 4; day++) {
    srv.clock.advance(24 * 3600_000);
    await srv.webhooks.runDue();
    assert.equal((await w.endpoint()).status, 'enabled', `day ${day}`);
  }
  srv.clock.advance(24 * 3600_000);
  await srv.webhooks.runDue();
  const e = await w.endpoint();
  assert.deepEqual([e.status, e.disabledReason], ['disabled', 'every delivery attempt failed for 5 days (since 2026-06-29T12:00:00.000Z)']);
  const [d] = await w.deliveries();
  assert.deepEqual([d.attempt, d.status, d.error], [6, 'failed', 'the endpoint answered HTTP 503 Service Unavailable']);
}));
