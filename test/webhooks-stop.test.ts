/**
 * Deliveries stop when told (docs/api.md#webhook-deliveries, #webhook-disabling): after a DELETE,
 * a disabling, a change of url or a 410 Gone, nothing more is sent to the endpoint; an attempt's
 * outcome counts only for the URL it was sent to; every request sent is in the delivery record.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import { inWorld } from './helpers/webhooks.js';
import { startReceiver } from './helpers/receiver.js';
import { DISABLED_ERROR } from '../src/areas/webhooks/endpoints.js';

const HOOKS = '/api/v1/webhook-endpoints';
const ids = (rs: Array<{ headers: http.IncomingHttpHeaders }>) => rs.map((r) => String(r.headers['webhook-id'])).sort();

test('DELETE of an endpoint: nothing more is sent once it answered, though its held connections are freed',
  () => inWorld(() => 'hold', { WEBHOOK_TIMEOUT_MS: '600000', WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2' }, async (w) => {
  const { srv, rx, hook } = w;
  for (let i = 0; i < 6; i++) await w.event();
  await rx.waitFor(2);
  const started = performance.now();
  assert.equal((await srv.call('DELETE', `${HOOKS}/${hook.id}`)).status, 200);
  rx.answer = () => ({ status: 200 });
  rx.release(200);
  await srv.webhooks.runDue();
  assert.ok(performance.now() - started < 1000, 'settled within 1 s');
  assert.equal(rx.received.length, 2, 'only the two already on the wire were made');
}));

test('PATCH of the url: the attempts to the old url stop, and every delivery is sent to the new url, each once',
  () => inWorld(() => 'hold', { WEBHOOK_TIMEOUT_MS: '600000', WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2' }, async (w) => {
  const { srv, rx, hook } = w;
  const next = await startReceiver(() => ({ status: 200 }));
  try {
    for (let i = 0; i < 6; i++) await w.event();
    const old = await rx.waitFor(2);
    const started = performance.now();
    assert.equal((await srv.call('PATCH', `${HOOKS}/${hook.id}`, { body: { url: `${next.url}/new` } })).status, 200);
    const got = await next.waitFor(6, 1000);
    assert.ok(performance.now() - started < 1000);
    assert.equal(new Set(ids(got)).size, 6, 'each event once at the new url');
    for (const id of ids(old)) assert.ok(ids(got).includes(id), 'a delivery cut at the old url is sent to the new one');
    rx.release(200); // too late: those connections were cut
    await srv.webhooks.runDue();
    const ds = await w.deliveries();
    assert.deepEqual(ds.map((d) => [d.status, d.attempt, d.responseStatus]), Array(6).fill(['succeeded', 1, 200]));
    assert.equal(rx.received.length, 2, 'nothing more went to the old url');
    assert.ok(next.received.every((r) => r.path === '/new'));
  } finally { await next.close(); }
}));

test('a 410 Gone disables the endpoint at once: nothing more is sent, the requests already sent keep their outcome',
  async () => {
  // A receiver that holds requests; once the test has written its events and 4 are in, it
  // answers the first 410, then the others 200.
  const held: http.ServerResponse[] = [];
  const got: string[] = [];
  let fourIn!: () => void;
  const four = new Promise<void>((ok) => { fourIn = ok; });
  const rx = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got.push(String(req.headers['webhook-id']));
      held.push(res);
      if (held.length === 4) fourIn();
    });
  });
  await new Promise<void>((ok) => rx.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(rx.address() as AddressInfo).port}/hook`;
  const answer = (): void => {
    held[0].writeHead(410).end();
    held[0].on('finish', () => { for (const r of held.slice(1)) r.writeHead(200).end(); });
  };
  try {
    await inWorld(undefined, { WEBHOOK_TIMEOUT_MS: '600000', WEBHOOK_CONCURRENCY_PER_ENDPOINT: '4' }, async (w) => {
      const { srv } = w;
      const made = await srv.call<{ webhookEndpoint: { id: string } }>('POST', HOOKS, { body: { url,
        events: ['conversation.created'] } });
      const id = made.body.webhookEndpoint.id;
      for (let i = 0; i < 10; i++) await w.event();
      await four;
      answer();
      await srv.webhooks.runDue();
      assert.equal(got.length, 4, 'the four on the wire when the 410 came, nothing after');
      const e = await w.endpoint(id);
      assert.deepEqual([e.status, e.enabled], ['disabled', false]);
      assert.match(String(e.disabledReason), /^the endpoint answered HTTP 410 Gone on /);
      const ds = await w.deliveries(id);
      const sent = ds.filter((d) => got.includes(d.eventId));
      assert.deepEqual(sent.map((d) => [d.status, d.attempt, d.responseStatus]).sort(), [['failed', 1, 410],
        ['succeeded', 1, 200], ['succeeded', 1, 200], ['succeeded', 1, 200]].sort());
      assert.deepEqual(ds.filter((d) => !got.includes(d.eventId)).map((d) => [d.status, d.attempt, d.error]),
        Array(6).fill(['failed', 0, DISABLED_ERROR]));
    });
  } finally { rx.closeAllConnections(); await new Promise((ok) => rx.close(ok)); }
});
