/**
 * First-attempt successes stored in batches (docs/decisions.md#first-attempt-successes-are-stored-in-batches):
 * one `webhook_delivered` record per endpoint for the outcomes read together, listed as their
 * own records would be; the same after a restart from the log's lines and from its snapshot
 * block, with nothing sent again; a batch whose write fails leaves its deliveries owed; an
 * endpoint's deletion and the 30 days' retention take batches away. Real server, real receiver,
 * injected clock.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';
import type { Workspace } from '../src/domain/workspace.js';
import { startReceiver } from './helpers/receiver.js';
import type { Delivery, Hook } from './helpers/webhooks.js';
import { enospcFs } from './helpers/enospc.js';
import { ManualClock } from '../src/core/clock.js';
import { deliveryIdOf } from '../src/areas/webhooks/state.js';
import { deliveredRecJson, type DeliveredRec } from '../src/areas/webhooks/model.js';

const HOOKS = '/api/v1/webhook-endpoints';
const DAY = 24 * 3600 * 1000;
const env = { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' };

/** A test server, its (first) workspace and a key of it — on a data dir used before, a new key. */
interface Srv { srv: TestServer; ws: Workspace; key: string }
async function open(opts: Parameters<typeof startTestServer>[0]): Promise<Srv> {
  const srv = await startTestServer({ ...opts, env });
  const ws = [...srv.store.workspaces.values()][0];
  return { srv, ws, key: srv.key || await srv.newKey({ workspaceId: ws.id }) };
}
async function newHook(s: Srv, url: string): Promise<Hook> {
  const r = await s.srv.call<{ webhookEndpoint: Hook }>('POST', HOOKS, { key: s.key, body: { url, events: ['*'] } });
  assert.equal(r.status, 201, r.text);
  return r.body.webhookEndpoint;
}
async function newEvents(s: Srv, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await s.srv.call('POST', '/api/v1/conversations', { key: s.key, body: { subject: `B${i}`, customer: { email: `b${i}@example.com` } } });
    assert.equal(r.status, 201, r.text);
  }
}
async function listed(s: Srv, hookId: string, query = 'limit=100'): Promise<Delivery[]> {
  const r = await s.srv.call<{ deliveries: Delivery[] }>('GET', `${HOOKS}/${hookId}/deliveries?${query}`, { key: s.key });
  assert.equal(r.status, 200, r.text);
  return r.body.deliveries;
}
async function eventsOf(s: Srv): Promise<Array<{ id: string; createdAt: string }>> {
  return (await s.srv.call<{ events: Array<{ id: string; createdAt: string }> }>('GET', '/api/v1/events?limit=100', { key: s.key })).body.events;
}
const batches = (s: Srv): DeliveredRec[] => [...s.ws.db.table('webhook_delivered').values()];
const records = (s: Srv): number => s.ws.db.table('webhook_delivery').size;

test('a batch record is the same text as JSON.stringify, strings that need escapes included', () => {
  const b: DeliveredRec = {
    id: '0197b5e5-3a01-7b22-9d10-4e5f6a7b8c91', endpointId: 'ep "1"', createdAt: '2026-03-01T00:00:00.001Z',
    deliveries: [['0197b5e2-6a10-7f02-8b44-51d9e0a7c3b4', 'conversation.created', '2026-03-01T00:00:00.000Z', 204, 3], ['e\\2\n', 'issue.updated', '2026-03-01T00:00:00.001Z', 200, 0]],
  };
  assert.equal(deliveredRecJson(b), JSON.stringify(b));
  assert.equal(deliveredRecJson({ ...b, deliveries: [] }), JSON.stringify({ ...b, deliveries: [] }));
});

test('first-attempt successes go into one batch per endpoint, listed as their records would be; a restart from the lines and from the block lists the same and sends nothing again', { timeout: 60_000 }, async () => {
  const dataDir = tempDir();
  // /ok is held until released (its outcomes then come together); /bad fails: retries, records of their own.
  const rx = await startReceiver((r) => (r.path === '/bad' ? { status: 500 } : 'hold'));
  const clock = new ManualClock();
  try {
    const one = await open({ dataDir, clock, compactionSlack: 1_000_000_000 });
    let ok: Hook, bad: Hook;
    let before: { ok: Delivery[]; bad: Delivery[] };
    try {
      ok = await newHook(one, `${rx.url}/ok`);
      bad = await newHook(one, `${rx.url}/bad`);
      await newEvents(one, 12);
      await rx.waitFor(24);
      rx.release(204);
      await one.srv.webhooks.runDue();
      const events = await eventsOf(one);
      assert.equal(events.length, 12);
      assert.equal(records(one), 12, "only /bad's deliveries have records (pending a retry)");
      const bs = batches(one);
      assert.ok(bs.length >= 1 && bs.length <= 12, `${bs.length} batches`);
      for (const b of bs) {
        assert.equal(b.endpointId, ok.id);
        assert.equal(b.createdAt, b.deliveries.map((d) => d[2]).sort().at(-1), "a batch's time is its newest delivery's");
      }
      assert.deepEqual(bs.flatMap((b) => b.deliveries.map((d) => d[0])).sort(), events.map((e) => e.id).sort(), 'every event once');
      const okList = await listed(one, ok.id);
      assert.deepEqual(okList.map((d) => ({ ...d, durationMs: typeof d.durationMs })), events.map((e) => ({
        object: 'webhook_delivery', id: deliveryIdOf(e.id, ok.id), eventId: e.id, eventType: 'conversation.created', attempt: 1, status: 'succeeded',
        responseStatus: 204, error: null, durationMs: 'number', createdAt: e.createdAt, nextAttemptAt: null,
      })));
      const badList = await listed(one, bad.id);
      assert.deepEqual(badList.map((d) => [d.status, d.attempt, d.responseStatus]), Array(12).fill(['pending', 1, 500]));
      before = { ok: okList, bad: badList };
    } finally { await one.srv.close(); }

    const sent = rx.received.length;
    // Line by line (no compaction ran).
    const two = await open({ dataDir, clock });
    try {
      assert.equal(two.ws.db.loadInfo.snapshot, false);
      assert.deepEqual({ ok: await listed(two, ok!.id), bad: await listed(two, bad!.id) }, before!);
      assert.equal(two.ws.webhooks.owedCount(ok!.id), 0, 'nothing owed: each has its place in a batch');
      await two.srv.webhooks.runDue();
      assert.equal(rx.received.length, sent, 'nothing sent again');
      await two.ws.db.compact();
    } finally { await two.srv.close(); }
    // From the snapshot block the compaction wrote.
    const three = await open({ dataDir, clock });
    try {
      const info = three.ws.db.loadInfo;
      assert.equal(info.snapshot, true);
      assert.ok(info.replayedTypes.includes('webhook_delivered'), 'batches are replayed into the indexes at each start');
      assert.deepEqual({ ok: await listed(three, ok!.id), bad: await listed(three, bad!.id) }, before!);
      const page = await three.srv.call<{ deliveries: Delivery[]; nextCursor: string }>('GET', `${HOOKS}/${ok!.id}/deliveries?limit=5`, { key: three.key });
      const rest = await listed(three, ok!.id, `limit=100&cursor=${page.body.nextCursor}`);
      assert.deepEqual([...page.body.deliveries, ...rest], before!.ok, 'pages and cursors over batched deliveries');
      assert.equal((await listed(three, ok!.id, 'status=succeeded&limit=100')).length, 12);
      assert.equal((await listed(three, ok!.id, 'status=pending&limit=100')).length, 0);
      await three.srv.webhooks.runDue();
      assert.equal(rx.received.length, sent, 'nothing sent again');
    } finally { await three.srv.close(); }
  } finally { await rx.close(); }
});

test('a batch whose write fails (ENOSPC) leaves its deliveries owed: sent again 30 s later with the same webhook-id, then stored once', { timeout: 30_000 }, async () => {
  const fs = Object.assign(enospcFs(), { failNext: 1, failMarker: '"deliveries":[[' });
  const rx = await startReceiver(() => ({ status: 204 }));
  try {
    const s = await open({ fs, captureLogs: true });
    try {
      const hook = await newHook(s, `${rx.url}/h`);
      await newEvents(s, 1);
      await rx.waitFor(1);
      await s.srv.webhooks.runDue();
      assert.equal(fs.failed, 1, 'the batch was written, and failed');
      assert.deepEqual(batches(s), []);
      const [owed] = await listed(s, hook.id);
      assert.deepEqual([owed.status, owed.attempt], ['pending', 0], 'owed again, listed pending');
      assert.ok(s.srv.logs.some((l: string) => l.includes('could not write a webhook delivery outcome') && l.includes('ENOSPC')), s.srv.logs.join(''));
      await s.srv.webhooks.runDue();
      assert.equal(rx.received.length, 1, 'held back until its 30 s are over');
      s.srv.clock.advance(30_001);
      await s.srv.webhooks.runDue();
      assert.equal(rx.received.length, 2);
      assert.equal(rx.received[1].headers['webhook-id'], rx.received[0].headers['webhook-id'], 'the same webhook-id');
      const [done] = await listed(s, hook.id);
      assert.deepEqual([done.id, done.status, done.attempt, done.responseStatus], [owed.id, 'succeeded', 1, 204]);
      assert.equal(batches(s).length, 1);
      assert.equal(records(s), 0);
    } finally { await s.srv.close(); }
  } finally { await rx.close(); }
});

test("deleting an endpoint deletes its batches, for good; another endpoint's stay", { timeout: 30_000 }, async () => {
  const dataDir = tempDir();
  const rx = await startReceiver(() => ({ status: 204 }));
  try {
    const one = await open({ dataDir });
    let keep: Hook;
    try {
      const gone = await newHook(one, `${rx.url}/gone`);
      keep = await newHook(one, `${rx.url}/keep`);
      await newEvents(one, 5);
      await rx.waitFor(10);
      await one.srv.webhooks.runDue();
      assert.deepEqual(new Set(batches(one).map((b) => b.endpointId)), new Set([gone.id, keep.id]));
      assert.equal((await one.srv.call('DELETE', `${HOOKS}/${gone.id}`, { key: one.key })).status, 200);
      assert.deepEqual(new Set(batches(one).map((b) => b.endpointId)), new Set([keep.id]));
    } finally { await one.srv.close(); }
    const two = await open({ dataDir });
    try {
      assert.deepEqual(new Set(batches(two).map((b) => b.endpointId)), new Set([keep!.id]), 'not back after a restart');
      assert.equal((await listed(two, keep!.id)).length, 5);
    } finally { await two.srv.close(); }
  } finally { await rx.close(); }
});

test('a batch is kept 30 days after its newest delivery, then compacted away; it is listed until then', { timeout: 30_000 }, async () => {
  const rx = await startReceiver(() => ({ status: 204 }));
  try {
    const s = await open({});
    try {
      const hook = await newHook(s, `${rx.url}/h`);
      await newEvents(s, 3);
      await rx.waitFor(3);
      await s.srv.webhooks.runDue();
      s.srv.clock.advance(30 * DAY - 1000);
      await s.ws.db.compact();
      assert.equal((await listed(s, hook.id)).length, 3, 'within 30 days: kept');
      assert.ok(batches(s).length >= 1);
      s.srv.clock.advance(2000);
      await s.ws.db.compact();
      assert.deepEqual(batches(s), [], 'past 30 days: gone');
      assert.deepEqual(await listed(s, hook.id), []);
      assert.equal(s.ws.webhooks.deliveriesOf(hook.id).size, 0, 'the index followed');
    } finally { await s.srv.close(); }
  } finally { await rx.close(); }
});
