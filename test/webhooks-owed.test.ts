/**
 * Deliveries owed by the event log (docs/decisions.md#deliveries-owed-by-the-event-log): an
 * event on disk owes each subscribed enabled endpoint a delivery, listed pending before any
 * record exists, under the id its record then keeps; the record and the endpoint's cursor are
 * written with the first outcome; a restart owes again exactly what had no record — not what
 * was delivered, not what was made before the endpoint existed or while it was disabled — and
 * a log written before this design (a record with every event, no cursor) sends nothing twice.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '../src/core/ids.js';
import { iso } from '../src/core/clock.js';
import { nodeFs } from '../src/store/log/fs.js';
import { compositeKey } from '../src/store/memory/sorted.js';
import { Workspace } from '../src/domain/workspace.js';
import { deliveryIdOf } from '../src/areas/webhooks/state.js';
import { DISABLED_ERROR } from '../src/areas/webhooks/endpoints.js';
import type { Conversation } from '../src/areas/conversations/conversations.js';
import type { DeliveryRec, WebhookEndpointRec } from '../src/areas/webhooks/model.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startReceiver, type Answer, type Received } from './helpers/receiver.js';
import { inWorld, type Delivery, type Hook } from './helpers/webhooks.js';

const HOOKS = '/api/v1/webhook-endpoints';
const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('a delivery id is derived from its event and endpoint: a UUIDv7 with the event\'s time, distinct per pair', () => {
  const endpoints = [newId(), newId(), newId()];
  const seen = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const ev = newId(Date.parse('2026-06-01T00:00:00.000Z') + (i >> 4));
    for (const ep of endpoints) {
      const id = deliveryIdOf(ev, ep);
      assert.match(id, UUID7);
      assert.equal(id.slice(0, 24), ev.slice(0, 24), 'the event\'s time and counter');
      assert.equal(deliveryIdOf(ev, ep), id, 'the same pair, the same id');
      seen.add(id);
    }
  }
  assert.equal(seen.size, 2000 * endpoints.length, 'no two pairs share an id');
  assert.equal(deliveryIdOf('evt_1', 'ep1'), 'evt_1.ep1', 'ids of another shape are joined');
});

test('a delivery id is the same text as the XOR of the two 48-bit tails (ids on disk keep meaning the same pair)', () => {
  // The rule as first written: the event id's first 24 characters, then the two 24-bit halves
  // of its tail XORed with the endpoint's, as 6 lower-case hex digits each.
  const reference = (ev: string, ep: string): string => {
    const tail = (id: string): boolean => id.length === 36 && id[23] === '-' && /^[0-9a-f]{12}$/.test(id.slice(24));
    if (!tail(ev) || !tail(ep)) return `${ev}.${ep}`;
    const h = (s: string, at: number): number => parseInt(s.slice(at, at + 6), 16);
    const x = (n: number): string => n.toString(16).padStart(6, '0');
    return ev.slice(0, 24) + x(h(ev, 24) ^ h(ep, 24)) + x(h(ev, 30) ^ h(ep, 30));
  };
  const ids = [...Array.from({ length: 300 }, () => newId()), '00000000-0000-7000-8000-000000000000', 'ffffffff-ffff-7fff-bfff-ffffffffffff'];
  for (const ev of ids) for (const ep of ids.slice(0, 8)) assert.equal(deliveryIdOf(ev, ep), reference(ev, ep), `${ev} ${ep}`);
  // Shapes the server never makes: upper-case hex, a missing dash, another length, a character beyond one byte.
  const odd = ['01A21036-AC64-7000-B7DB-75587481FFBC', '01a21036-ac64-7000-b7db+75587481ffbc', '01a21036-ac64-7000-b7db-75587481ffb', '01a21036-ac64-7000-b7db-75587481ffbg', 'Ā1a21036-ac64-7000-b7db-75587481ffbc'];
  for (const ev of odd) for (const ep of [ids[0], odd[0]]) {
    assert.equal(deliveryIdOf(ev, ep), reference(ev, ep), `${ev} ${ep}`);
    assert.equal(deliveryIdOf(ep, ev), reference(ep, ev), `${ep} ${ev}`);
  }
});

test('an owed delivery is listed pending under the id its record then keeps; the record and the cursor come with the outcome', () => inWorld(() => 'hold', {}, async (w) => {
  const { srv, rx, hook } = w;
  const ws = srv.store.workspace(srv.workspaceId)!;
  await w.event('First');
  await rx.waitFor(1);
  const [owed] = await w.deliveries();
  const event = (await srv.call<{ events: Array<{ id: string; createdAt: string }> }>('GET', '/api/v1/events')).body.events[0];
  assert.deepEqual(owed, {
    object: 'webhook_delivery', id: deliveryIdOf(event.id, hook.id), eventId: event.id, eventType: 'conversation.created', attempt: 0, status: 'pending',
    responseStatus: null, error: null, durationMs: null, createdAt: event.createdAt, nextAttemptAt: event.createdAt,
  });
  assert.equal(ws.get('webhook_delivery', owed.id), undefined, 'no record before an attempt ends');
  const cursorBefore = ws.get('webhook_cursor', hook.id);
  assert.ok(cursorBefore !== undefined && cursorBefore.from < compositeKey(event.createdAt, event.id), 'the cursor made with the endpoint is below the event');
  rx.release(200);
  await srv.webhooks.runDue();
  const [done] = await w.deliveries();
  assert.deepEqual({ ...done, durationMs: 0 }, { ...owed, attempt: 1, status: 'succeeded', responseStatus: 200, durationMs: 0, nextAttemptAt: null });
  // A first attempt that succeeded is stored in its outcome's batch, not as a record of its own.
  assert.equal(ws.get('webhook_delivery', owed.id), undefined);
  assert.deepEqual([...ws.db.table('webhook_delivered').values()].map((b) => [b.endpointId, b.createdAt, b.deliveries.map((d) => d.slice(0, 4))]),
    [[hook.id, event.createdAt, [[event.id, 'conversation.created', event.createdAt, 200]]]], 'the batch, under the endpoint');
  assert.equal(ws.webhooks.delivery(hook.id, owed.id)?.status, 'succeeded', 'found under the same id');
  assert.deepEqual(ws.get('webhook_cursor', hook.id), { id: hook.id, from: compositeKey(event.createdAt, event.id) }, 'the cursor moved past the delivered event');
  assert.equal(ws.webhooks.owedCount(hook.id), 0);
}));

test('disabling an endpoint fails its owed deliveries under their ids; the one already sent gets its real outcome; nothing more is sent', () => inWorld(() => 'hold', { WEBHOOK_CONCURRENCY_PER_ENDPOINT: '1' }, async (w) => {
  const { srv, rx, hook } = w;
  for (let i = 0; i < 6; i++) await w.event();
  const [sent] = await rx.waitFor(1);
  const before = await w.deliveries();
  assert.deepEqual(before.map((d) => [d.status, d.attempt]), Array(6).fill(['pending', 0]));
  assert.equal((await srv.call('PATCH', `${HOOKS}/${hook.id}`, { body: { enabled: false } })).status, 200);
  const after = await w.deliveries();
  assert.deepEqual(after.map((d) => d.id), before.map((d) => d.id), 'the same deliveries');
  assert.deepEqual(after.map((d) => [d.status, d.attempt, d.error, d.nextAttemptAt]), Array(6).fill(['failed', 0, DISABLED_ERROR, null]));
  rx.answer = () => ({ status: 200 });
  rx.release(200);
  await srv.webhooks.runDue();
  assert.equal(rx.received.length, 1, 'only the request already on the wire was made');
  const final = await w.deliveries();
  const made = final.find((d) => d.eventId === sent.headers['webhook-id'])!;
  assert.deepEqual([made.status, made.attempt, made.responseStatus, made.error], ['succeeded', 1, 200, null], 'the request that was sent is in the record');
  assert.deepEqual(final.filter((d) => d !== made).map((d) => [d.status, d.attempt, d.error]), Array(5).fill(['failed', 0, DISABLED_ERROR]));
}));

test('status=pending lists the owed deliveries and the retries from their own index: the same items, order and cursors as the whole list filtered', () => {
  let n = 0;
  return inWorld(() => (++n <= 3 ? { status: 503 } : 'hold'), {}, async (w) => {
    const { srv, rx, hook } = w;
    for (let i = 0; i < 3; i++) await w.event();
    await srv.webhooks.runDue(); // three failed first attempts: records waiting for their retry
    await w.event();
    await w.event(); // two more, owed, attempts held open by the receiver
    await rx.waitFor(5);
    srv.clock.advance(1);
    await w.event(); // one more, owed
    const all = await w.deliveries();
    assert.deepEqual(all.map((d) => [d.status, d.attempt]), [['pending', 0], ['pending', 0], ['pending', 0], ['pending', 1], ['pending', 1], ['pending', 1]]);
    const paged: Delivery[] = [];
    let cursor = '';
    for (let page = 0; page < 5; page++) {
      const r = await srv.call<{ deliveries: Delivery[]; hasMore: boolean; nextCursor: string | null }>('GET', `${HOOKS}/${hook.id}/deliveries?status=pending&limit=2${cursor && `&cursor=${cursor}`}`);
      assert.equal(r.status, 200, r.text);
      paged.push(...r.body.deliveries);
      if (!r.body.hasMore) break;
      cursor = encodeURIComponent(r.body.nextCursor!);
    }
    assert.deepEqual(paged, all, 'three pages of two, newest first, as the unfiltered list has them');
    const firstOfUnfiltered = await srv.call<{ nextCursor: string }>('GET', `${HOOKS}/${hook.id}/deliveries?limit=2`);
    const secondByPending = await srv.call<{ deliveries: Delivery[] }>('GET', `${HOOKS}/${hook.id}/deliveries?status=pending&limit=2&cursor=${encodeURIComponent(firstOfUnfiltered.body.nextCursor)}`);
    assert.deepEqual(secondByPending.body.deliveries, all.slice(2, 4), 'a cursor of the unfiltered list goes on in the filtered one');
  });
});

test('a quiet endpoint\'s cursor is brought up to the newest event, so a start-up does not walk the events it never matched', () => inWorld(undefined, {}, async (w) => {
  const { srv, rx } = w;
  const ws = srv.store.workspace(srv.workspaceId)!;
  const quiet = (await srv.call<{ webhookEndpoint: Hook }>('POST', HOOKS, { body: { url: `${rx.url}/quiet`, events: ['source.deleted'] } })).body.webhookEndpoint;
  const made = ws.get('webhook_cursor', quiet.id)!.from;
  for (let i = 0; i < 5; i++) await w.event();
  await srv.webhooks.runDue();
  assert.equal(ws.get('webhook_cursor', quiet.id)!.from, made, 'no outcome of its own moved it');
  srv.webhooks.refreshCursors();
  await srv.webhooks.runDue();
  const newest = ws.webhooks.cursorAtNewest();
  assert.ok(newest > made);
  assert.deepEqual(ws.get('webhook_cursor', quiet.id), { id: quiet.id, from: newest }, 'moved to the newest event');
  assert.equal(ws.get('webhook_cursor', w.hook.id)!.from, newest, 'the busy endpoint is there too');
  assert.equal(rx.received.filter((r) => r.path === '/quiet').length, 0);
}));

/** A server on `dataDir` with a receiver on `port` answering with `answer`; the bootstrap workspace's key. */
async function serverOn(dataDir: string, port: number, answer: (r: Received) => Answer) {
  const rx = await startReceiver(answer, port);
  const srv = await startTestServer({ dataDir, env: { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_BURST: '1000000' } });
  const ws = [...srv.store.workspaces.values()][0];
  const key = srv.key || await srv.newKey({ workspaceId: ws.id });
  const call = <B>(method: string, path: string, body?: unknown) => srv.call<B>(method, path, { key, body });
  return { rx, srv, ws, call, async close() { await srv.close(); await rx.close(); } };
}

const newEvent = async (call: (m: string, p: string, b?: unknown) => Promise<{ status: number }>, n: number): Promise<void> => {
  const r = await call('POST', '/api/v1/conversations', { subject: `Restart ${n}`, customer: { email: `r${n}@example.com` } });
  assert.equal(r.status, 201);
};
const ids = (got: Received[]) => got.map((r) => String(r.headers['webhook-id'])).sort();

test('a restart owes again what had no record, once: not what was delivered, not what was made before the endpoint or while it was disabled', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sw-owed-'));
  let answered = 0;
  // First run: events 1–3 delivered; 4–6 held open when the server stops (their attempts cut off).
  const one = await serverOn(dataDir, 0, () => (++answered <= 3 ? { status: 204 } : 'hold'));
  const port = one.rx.port;
  let a: Hook, b: Hook;
  let allEvents: string[];
  try {
    await newEvent(one.call, 0); // before any endpoint (same instant of the test clock as the endpoints)
    a = (await one.call<{ webhookEndpoint: Hook }>('POST', HOOKS, { url: `${one.rx.url}/a`, events: ['conversation.created'] })).body.webhookEndpoint;
    b = (await one.call<{ webhookEndpoint: Hook }>('POST', HOOKS, { url: `${one.rx.url}/b`, events: ['conversation.created'], enabled: false })).body.webhookEndpoint;
    for (let i = 1; i <= 3; i++) await newEvent(one.call, i);
    await one.rx.waitFor(3);
    await (one.srv as TestServer).webhooks.runDue();
    for (let i = 4; i <= 6; i++) await newEvent(one.call, i);
    await one.rx.waitFor(6);
    assert.equal((await one.call('PATCH', `${HOOKS}/${b.id}`, { enabled: true })).status, 200);
    allEvents = (await one.call<{ events: Array<{ id: string }> }>('GET', '/api/v1/events?limit=100')).body.events.map((e) => e.id).reverse();
    assert.equal(allEvents.length, 7);
    assert.equal(one.ws.webhooks.owedCount(a.id), 3, 'events 4–6 owed to a');
    assert.equal(one.ws.webhooks.owedCount(b.id), 0, 'nothing owed to b: disabled until now');
  } finally { await one.close(); }

  // Second run: exactly events 4–6 arrive, at a.
  const two = await serverOn(dataDir, port, () => ({ status: 200 }));
  try {
    // (What is owed is not counted here: the dispatcher starts with the server and may have sent some already.)
    await two.srv.webhooks.runDue();
    assert.deepEqual(ids(two.rx.received), allEvents.slice(4).sort(), 'the deliveries without a record, once each');
    assert.ok(two.rx.received.every((r) => r.path === '/a'));
    const listed = (await two.call<{ deliveries: Delivery[] }>('GET', `${HOOKS}/${a.id}/deliveries?limit=100`)).body.deliveries;
    assert.deepEqual(listed.map((d) => d.status), Array(6).fill('succeeded'));
    assert.deepEqual(listed.map((d) => d.id).sort(), allEvents.slice(1).map((e) => deliveryIdOf(e, a.id)).sort());
    await newEvent(two.call, 7);
    await two.srv.webhooks.runDue();
    assert.equal(two.rx.received.length, 5, 'the new event to both endpoints');
    assert.deepEqual(two.rx.received.slice(3).map((r) => r.path).sort(), ['/a', '/b']);
  } finally { await two.close(); }

  // Third run: everything has its record; nothing is sent.
  const three = await serverOn(dataDir, port, () => ({ status: 200 }));
  try {
    assert.equal(three.ws.webhooks.owedCount(a.id) + three.ws.webhooks.owedCount(b.id), 0);
    await three.srv.webhooks.runDue();
    assert.equal(three.rx.received.length, 0);
  } finally { await three.close(); }
});

test('a log written when every event put its delivery record (no cursor) owes nothing twice after the upgrade', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'sw-owed-old-')), 'w.log');
  let clock = Date.parse('2026-03-01T00:00:00.000Z');
  const opts = { fs: nodeFs, sync: false, now: () => clock, compactionSlack: 1_000_000 };
  const old = await Workspace.open('w1', path, opts);
  const endpoint: WebhookEndpointRec = {
    id: newId(clock), url: 'https://hooks.example.com/x', events: ['*'], description: '', enabled: true, disabledReason: null,
    createdAt: iso(clock), updatedAt: iso(clock), secret: { kid: 'k1', iv: '', ct: '', tag: '' },
  };
  // As the earlier build wrote them: events with a delivery record each (random ids), no cursor.
  const tx = old.db.begin();
  tx.bulk = true; // the events below are written by hand, as that build's transaction held them
  tx.put('webhook_endpoint', endpoint.id, endpoint);
  const delivery = (eventId: string, status: 'succeeded' | 'pending'): DeliveryRec => ({
    id: newId(clock), endpointId: endpoint.id, eventId, eventType: 'conversation.created', attempt: status === 'pending' ? 0 : 1, status,
    responseStatus: status === 'pending' ? null : 200, error: null, durationMs: status === 'pending' ? null : 3, createdAt: iso(clock), nextAttemptAt: status === 'pending' ? iso(clock) : null,
  });
  const pending: string[] = [];
  for (let i = 0; i < 3; i++) {
    clock += 1000;
    const eventId = newId(clock);
    tx.put('event', eventId, { id: eventId, type: 'conversation.created', createdAt: iso(clock), data: { object: { id: `c${i}` } } });
    const d = delivery(eventId, i === 2 ? 'pending' : 'succeeded');
    if (i === 2) pending.push(d.id);
    tx.put('webhook_delivery', d.id, d);
  }
  await old.db.commit(tx);
  await old.db.close();

  const ws = await Workspace.open('w1', path, opts);
  try {
    assert.deepEqual(ws.get('webhook_cursor', endpoint.id), { id: endpoint.id, from: ws.webhooks.cursorAtNewest() }, 'its cursor, at the newest event, written at start-up');
    assert.equal(ws.webhooks.owedCount(endpoint.id), 0, 'every event has its record: nothing owed');
    assert.deepEqual(ws.webhooks.pendingOf(endpoint.id), pending, 'the pending record is sent as it was');
    clock += 1000;
    const conv: Conversation = {
      id: 'c9', status: 'open', channel: 'api', priority: 'medium', subject: 'New', preview: '',
      customer: { id: 'cu9', email: 'n@example.com' } as Conversation['customer'], createdAt: iso(clock), updatedAt: iso(clock),
    };
    const t2 = ws.db.begin();
    t2.put('conversation', conv.id, conv);
    await ws.db.commit(t2);
    assert.equal(ws.webhooks.owedCount(endpoint.id), 1, 'a new event is owed as this build owes them');
  } finally { await ws.db.close(); }
});
