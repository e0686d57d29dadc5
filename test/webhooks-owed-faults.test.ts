/**
 * Deliveries owed by the event log under faults (docs/decisions.md#deliveries-owed-by-the-event-log):
 * a disabling or a deletion whose write fails, a clock that steps back, an upgrade from a log
 * without cursors, a widened subscription, aborted transactions. Each drives a Workspace with a
 * manual clock and a file system that can fail a write with ENOSPC, and checks what is owed in
 * memory and after a restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '../src/core/ids.js';
import { iso } from '../src/core/clock.js';
import { enospcFs } from './helpers/enospc.js';
import { Workspace } from '../src/domain/workspace.js';
import { owedRec, type Owed } from '../src/areas/webhooks/state.js';
import { createEndpoint, deleteEndpoint, putDisabled, putEnabled } from '../src/areas/webhooks/endpoints.js';
import { deliveredRecJson, deliveryRecJson, type DeliveredRec, type DeliveryRec, type WebhookEndpointRec } from '../src/areas/webhooks/model.js';
import type { Conversation } from '../src/areas/conversations/conversations.js';

const secrets = { seal: () => ({ kid: 'k1', iv: '', ct: '', tag: '' }) } as never;

function setup() {
  const path = join(mkdtempSync(join(tmpdir(), 'owed-review-')), 'w.log');
  const clock = { t: Date.parse('2026-03-01T00:00:00.000Z') };
  const fs = enospcFs();
  const opts = { fs, sync: false, now: () => clock.t, compactionSlack: 1_000_000 };
  return { path, clock, fs, opts, open: () => Workspace.open('w1', path, opts) };
}

let n = 0;
async function newConversation(ws: Workspace, clock: { t: number }): Promise<void> {
  const c: Conversation = {
    id: `c${++n}`, status: 'open', channel: 'api', priority: 'medium', subject: 'S', preview: '',
    customer: { id: `cu${n}`, email: `n${n}@example.com` } as Conversation['customer'], createdAt: iso(clock.t), updatedAt: iso(clock.t),
  };
  const tx = ws.db.begin();
  tx.put('conversation', c.id, c);
  await ws.db.commit(tx);
}

async function newEndpoint(ws: Workspace, clock: { t: number }): Promise<WebhookEndpointRec> {
  const tx = ws.db.begin();
  const { rec } = createEndpoint(ws, tx, secrets, clock.t, { url: 'https://hooks.example.com/x', events: ['*'] });
  await ws.db.commit(tx);
  return rec;
}

/** What the dispatcher does for a successful first attempt of each owed delivery (or those `only` picks): record + cursor, one transaction. */
async function deliverAll(ws: Workspace, endpointId: string, only?: (o: Owed) => boolean): Promise<void> {
  const owed = ([...(ws.webhooks.owedOf(endpointId)?.values() ?? [])] as Owed[]).filter((o) => only === undefined || only(o));
  if (owed.length === 0) return;
  const tx = ws.db.begin();
  for (const o of owed) {
    const d: DeliveryRec = { ...owedRec(o), attempt: 1, status: 'succeeded', responseStatus: 200, durationMs: 1, nextAttemptAt: null };
    tx.put('webhook_delivery', d.id, d, deliveryRecJson(d));
    ws.webhooks.recorded(o);
  }
  tx.put('webhook_cursor', endpointId, { id: endpointId, from: ws.webhooks.cursorNow(endpointId) });
  await ws.db.commit(tx);
}

const listed = (ws: Workspace, endpointId: string): string[] => {
  const idx = ws.webhooks.deliveriesOf(endpointId);
  const out: string[] = [];
  for (const at of idx.asc()) if (ws.webhooks.delivery(endpointId, idx.idAt(at)) !== undefined) out.push(idx.idAt(at));
  return out;
};

test('a disabling whose write fails (ENOSPC) leaves the owed deliveries owed and listed, past the next cursor and a restart', async () => {
  const s = setup();
  let ws = await s.open();
  const e = await newEndpoint(ws, s.clock);
  s.clock.t += 10; await newConversation(ws, s.clock);
  s.clock.t += 10; await newConversation(ws, s.clock);
  assert.equal(ws.webhooks.owedCount(e.id), 2);

  // PATCH enabled=false: the commit fails (disk full); the pipeline answers 503, the endpoint stays enabled.
  const tx = ws.db.begin();
  putDisabled(ws, tx, { ...ws.get('webhook_endpoint', e.id)!, enabled: false });
  s.fs.failNext = 1;
  await assert.rejects(ws.db.commit(tx), /ENOSPC/);
  assert.equal(ws.get('webhook_endpoint', e.id)?.enabled, true, 'the disable was undone');
  const owedAfterUndo = ws.webhooks.owedCount(e.id);
  const listedAfterUndo = listed(ws, e.id).length;

  // Business as usual: a new event, delivered; its batch moves the cursor.
  const before = new Set([...ws.webhooks.owedOf(e.id)!.keys()]);
  s.clock.t += 10; await newConversation(ws, s.clock);
  await deliverAll(ws, e.id, (o) => !before.has(o.id));
  await ws.db.close();
  ws = await s.open();
  const owedAfterRestart = ws.webhooks.owedCount(e.id);
  await ws.db.close();
  assert.deepEqual({ owedAfterUndo, listedAfterUndo, owedAfterRestart }, { owedAfterUndo: 2, listedAfterUndo: 2, owedAfterRestart: 2 },
    'the two events made while enabled are owed (in memory, listed, and after a restart)');
});

test('a deletion whose write fails leaves the endpoint\'s owed deliveries owed, past the next cursor and a restart', async () => {
  const s = setup();
  let ws = await s.open();
  const e = await newEndpoint(ws, s.clock);
  s.clock.t += 10; await newConversation(ws, s.clock);
  s.clock.t += 10; await newConversation(ws, s.clock);
  const tx = ws.db.begin();
  deleteEndpoint(ws, tx, ws.get('webhook_endpoint', e.id)!);
  s.fs.failNext = 1;
  await assert.rejects(ws.db.commit(tx), /ENOSPC/);
  assert.ok(ws.get('webhook_endpoint', e.id), 'the delete was undone');
  const owedAfterUndo = ws.webhooks.owedCount(e.id);
  const before = new Set([...ws.webhooks.owedOf(e.id)!.keys()]);
  s.clock.t += 10; await newConversation(ws, s.clock);
  assert.equal(ws.webhooks.owedCount(e.id), 3, 'an event made after the failed deletion is owed too');
  await deliverAll(ws, e.id, (o) => !before.has(o.id));
  await ws.db.close();
  ws = await s.open();
  const owedAfterRestart = ws.webhooks.owedCount(e.id);
  await ws.db.close();
  assert.deepEqual({ owedAfterUndo, owedAfterRestart }, { owedAfterUndo: 2, owedAfterRestart: 2 });
});

test('the wall clock stepping back: a new event still sorts above the cursor on disk (event times never go back), so a restart owes it', async () => {
  const s = setup();
  let ws = await s.open();
  const e = await newEndpoint(ws, s.clock);
  s.clock.t += 1000; await newConversation(ws, s.clock);
  await deliverAll(ws, e.id); // cursor = that event's key
  s.clock.t -= 500; // NTP step / VM resume
  await newConversation(ws, s.clock); // on disk, owed in memory, not yet attempted
  assert.equal(ws.webhooks.owedCount(e.id), 1);
  await ws.db.close(); // crash before its attempt ended
  ws = await s.open();
  const owed = ws.webhooks.owedCount(e.id);
  await ws.db.close();
  assert.equal(owed, 1, 'the undelivered event is owed again');
});

test('an earlier build\'s endpoint (no cursor), disabled then enabled again there, is owed nothing after the upgrade, and gets its cursor at once', async () => {
  const s = setup();
  let ws = await s.open();
  const clock = s.clock;
  const endpoint: WebhookEndpointRec = {
    id: newId(clock.t), url: 'https://hooks.example.com/x', events: ['*'], description: '', enabled: true, disabledReason: null,
    createdAt: iso(clock.t), updatedAt: iso(clock.t), secret: { kid: 'k1', iv: '', ct: '', tag: '' },
  };
  // As the earlier build wrote them: one event with its record; then the endpoint disabled, two events without records; then enabled again.
  const tx = ws.db.begin();
  tx.bulk = true;
  tx.put('webhook_endpoint', endpoint.id, endpoint);
  clock.t += 1000;
  const e0 = newId(clock.t);
  tx.put('event', e0, { id: e0, type: 'conversation.created', createdAt: iso(clock.t), data: { object: { id: 'c0' } } });
  tx.put('webhook_delivery', 'd0', { id: newId(clock.t), endpointId: endpoint.id, eventId: e0, eventType: 'conversation.created', attempt: 1, status: 'succeeded', responseStatus: 200, error: null, durationMs: 1, createdAt: iso(clock.t), nextAttemptAt: null });
  tx.put('webhook_endpoint', endpoint.id, { ...endpoint, enabled: false });
  for (let i = 1; i <= 2; i++) {
    clock.t += 1000;
    const id = newId(clock.t);
    tx.put('event', id, { id, type: 'conversation.created', createdAt: iso(clock.t), data: { object: { id: `c${i}` } } });
  }
  tx.put('webhook_endpoint', endpoint.id, { ...endpoint, enabled: true });
  await ws.db.commit(tx);
  await ws.db.close();
  ws = await s.open();
  const owed = ws.webhooks.owedCount(endpoint.id);
  const cursor = ws.get('webhook_cursor', endpoint.id);
  const newest = ws.webhooks.cursorAtNewest();
  await ws.db.close();
  assert.equal(owed, 0, 'the events made while it was disabled are not owed');
  assert.deepEqual(cursor, { id: endpoint.id, from: newest }, 'its cursor, at the newest event, written before serving');
});

test('an endpoint disabled and enabled again is owed nothing made before', async () => {
  const s = setup();
  const ws = await s.open();
  const e = await newEndpoint(ws, s.clock);
  s.clock.t += 10;
  await newConversation(ws, s.clock);
  const tx = ws.db.begin();
  putDisabled(ws, tx, { ...ws.get('webhook_endpoint', e.id)!, enabled: false });
  await ws.db.commit(tx);
  const tx2 = ws.db.begin();
  putEnabled(ws, tx2, ws.get('webhook_endpoint', e.id)!, { ...ws.get('webhook_endpoint', e.id)!, enabled: true });
  await ws.db.commit(tx2);
  assert.equal(ws.webhooks.owedCount(e.id), 0);
  await ws.db.close();
});

test('widening an endpoint\'s events moves its cursor: a restart owes none of the older events of the new types', async () => {
  const s = setup();
  let ws = await s.open();
  const tx0 = ws.db.begin();
  const { rec } = createEndpoint(ws, tx0, secrets, s.clock.t, { url: 'https://hooks.example.com/x', events: ['conversation.updated'] });
  await ws.db.commit(tx0);
  // Three days of conversations: conversation.created events, not subscribed; nothing owed, the cursor stays where it was.
  for (let i = 0; i < 3; i++) { s.clock.t += 24 * 3600 * 1000; await newConversation(ws, s.clock); }
  assert.equal(ws.webhooks.owedCount(rec.id), 0);
  // PATCH events: ['*'] (putEnabled: no cursor change for an endpoint that stays enabled).
  const tx = ws.db.begin();
  const e = ws.get('webhook_endpoint', rec.id)!;
  putEnabled(ws, tx, e, { ...e, events: ['*'] });
  await ws.db.commit(tx);
  assert.equal(ws.webhooks.owedCount(rec.id), 0, 'while running, nothing made before the PATCH is owed');
  await ws.db.close(); // a plain restart (no crash needed)
  ws = await s.open();
  const owed = ws.webhooks.owedCount(rec.id);
  await ws.db.close();
  assert.equal(owed, 0, 'a restart owes nothing the endpoint was not subscribed to when it was made');
});

test('transactions that made owed events and were aborted are swept: they do not pile up', async () => {
  const s = setup();
  const ws = await s.open();
  await newEndpoint(ws, s.clock);
  for (let i = 0; i < 600; i++) {
    const tx = ws.db.begin();
    tx.put('conversation', `x${i}`, { id: `x${i}`, status: 'open', channel: 'api', priority: 'medium', subject: 'S', preview: '', customer: { id: 'cu', email: 'a@b.c' }, createdAt: iso(s.clock.t), updatedAt: iso(s.clock.t) } as Conversation);
    tx.abort();
  }
  const madeBy = (ws.webhooks as unknown as { madeBy: Map<unknown, unknown> }).madeBy;
  assert.ok(madeBy.size <= 256, `at most 256 held (${madeBy.size})`);
  await ws.db.close();
});

test('a delivery owed again after newer ones (its outcome not written) holds the cursor below its event, so a restart owes it', async () => {
  const s = setup();
  let ws = await s.open();
  const e = await newEndpoint(ws, s.clock);
  for (let i = 0; i < 3; i++) { s.clock.t += 1000; await newConversation(ws, s.clock); }
  const [first, second, third] = [...ws.webhooks.owedOf(e.id)!.values()] as Owed[];
  assert.ok(first.createdAt < second.createdAt && second.createdAt < third.createdAt);
  await deliverAll(ws, e.id, (o) => o === first);
  // The second's outcome was taken, then its write failed: owed again, after the third was.
  ws.webhooks.recorded(second);
  ws.webhooks.reowe(second);
  assert.equal(ws.webhooks.owedCount(e.id), 2);
  const tx = ws.db.begin();
  tx.put('webhook_cursor', e.id, { id: e.id, from: ws.webhooks.cursorNow(e.id) });
  await ws.db.commit(tx);
  await ws.db.close();
  ws = await s.open();
  const owed = [...ws.webhooks.owedOf(e.id)!.values()].map((o) => o.eventId).sort();
  await ws.db.close();
  assert.deepEqual(owed, [second.eventId, third.eventId].sort(), 'both undelivered events are owed after the restart');
});

/** What the dispatcher does for first attempts that succeeded: one batch, the cursor left where it was. */
async function deliverInBatch(ws: Workspace, endpointId: string): Promise<void> {
  const owed = [...(ws.webhooks.owedOf(endpointId)?.values() ?? [])] as Owed[];
  const b: DeliveredRec = { id: newId(), endpointId, createdAt: owed.map((o) => o.createdAt).sort().at(-1)!, deliveries: owed.map((o) => [o.eventId, o.eventType, o.createdAt, 204, 1]) };
  const tx = ws.db.begin();
  for (const o of owed) ws.webhooks.recorded(o);
  ws.webhooks.putBatch(tx, b, deliveredRecJson(b), owed.map((o) => o.id));
  await ws.db.commit(tx);
}

test('a restart owes nothing that a batch of first-attempt successes holds, the cursor below it or not', async () => {
  const s = setup();
  let ws = await s.open();
  const e = await newEndpoint(ws, s.clock);
  for (let i = 0; i < 3; i++) { s.clock.t += 10; await newConversation(ws, s.clock); }
  const cursor = ws.get('webhook_cursor', e.id);
  await deliverInBatch(ws, e.id);
  assert.deepEqual(ws.get('webhook_cursor', e.id), cursor, 'the cursor did not move');
  const before = listed(ws, e.id).map((id) => ws.webhooks.delivery(e.id, id));
  assert.deepEqual(before.map((d) => [d?.status, d?.attempt, d?.responseStatus]), Array(3).fill(['succeeded', 1, 204]));
  await ws.db.close();
  ws = await s.open();
  try {
    assert.equal(ws.webhooks.owedCount(e.id), 0, 'each event has its place in the batch');
    assert.deepEqual(listed(ws, e.id).map((id) => ws.webhooks.delivery(e.id, id)), before);
  } finally { await ws.db.close(); }
});

test("a deletion whose write fails leaves the endpoint's batches and their deliveries listed", async () => {
  const s = setup();
  const ws = await s.open();
  try {
    const e = await newEndpoint(ws, s.clock);
    for (let i = 0; i < 2; i++) { s.clock.t += 10; await newConversation(ws, s.clock); }
    await deliverInBatch(ws, e.id);
    const tx = ws.db.begin();
    deleteEndpoint(ws, tx, ws.get('webhook_endpoint', e.id)!);
    assert.equal(ws.db.table('webhook_delivered').size, 0, 'the batch went with the endpoint');
    s.fs.failNext = 1;
    await assert.rejects(ws.db.commit(tx), /ENOSPC/);
    assert.equal(ws.db.table('webhook_delivered').size, 1, 'back with the undo');
    assert.deepEqual(listed(ws, e.id).map((id) => ws.webhooks.delivery(e.id, id)?.status), ['succeeded', 'succeeded']);
    assert.equal(ws.webhooks.owedCount(e.id), 0);
  } finally { await ws.db.close(); }
});
