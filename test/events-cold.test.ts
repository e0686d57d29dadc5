// Events and settled webhook deliveries held as bytes in a workspace (docs/storage.md#memory):
// what becomes bytes, the views read from the text, and retention read from the text, which
// must agree with the records' own rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeFs } from '../src/store/log/fs.js';
import { iso } from '../src/core/clock.js';
import { Workspace } from '../src/domain/workspace.js';
import { eventViewJson } from '../src/areas/events/events.js';
import type { Conversation } from '../src/areas/conversations/conversations.js';
import type { DeliveryRec, WebhookEndpointRec } from '../src/areas/webhooks/model.js';
import { owedRec } from '../src/areas/webhooks/state.js';

const DAY = 24 * 3600 * 1000;

test('events and settled deliveries become bytes once on disk, pending deliveries stay objects; views come from the text; retention drops the expired ones from file and memory', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'sw-evcold-')), 'w.log');
  let clock = Date.parse('2026-03-01T00:00:00.000Z');
  const opts = { fs: nodeFs, sync: false, now: () => clock, compactionSlack: 1_000_000 };
  const ws = await Workspace.open('w1', path, opts);
  const endpoint: WebhookEndpointRec = {
    id: 'ep1', url: 'https://hooks.example.com/x', events: ['*'], description: '', enabled: true, disabledReason: null,
    createdAt: iso(clock), updatedAt: iso(clock), secret: { kid: 'k1', iv: '', ct: '', tag: '' },
  };
  const put = async (fn: (tx: ReturnType<typeof ws.db.begin>) => void) => { const tx = ws.db.begin(); fn(tx); await ws.db.commit(tx); };
  await put((tx) => tx.put('webhook_endpoint', endpoint.id, endpoint));
  const conv = (i: number): Conversation => ({
    id: `c${i}`, status: 'open', channel: 'api', priority: 'medium', subject: `Subject "${i}" ü`, preview: '',
    customer: { id: `cu${i}`, email: `a${i}@example.com` } as Conversation['customer'], createdAt: iso(clock), updatedAt: iso(clock),
  });
  // Ten conversations on day 0, ten on day 20: an event and a delivery each.
  for (let i = 0; i < 20; i++) {
    if (i === 10) clock += 20 * DAY;
    await put((tx) => tx.put('conversation', `c${i}`, conv(i)));
  }
  const events = [...ws.db.table('event').keys()];
  assert.equal(events.length, 20);
  for (const id of events) {
    const text = ws.db.text('event', id);
    assert.ok(text !== undefined, 'an event on disk is bytes');
    const e = ws.db.get('event', id)!;
    assert.equal(eventViewJson(ws.db, id), JSON.stringify({ object: 'event', ...e }), 'the view made from the text is the record\'s');
  }
  // Each event owes the endpoint a delivery (no record yet); a first attempt failed for each: pending records.
  const owed = [...ws.webhooks.owedOf(endpoint.id)!.values()];
  assert.equal(owed.length, 20);
  assert.equal(ws.db.table('webhook_delivery').size, 0, 'an owed delivery has no record');
  const deliveries = owed.map((o): DeliveryRec => ({ ...owedRec(o), attempt: 1, responseStatus: 503, durationMs: 2, nextAttemptAt: iso(clock + DAY) }));
  await put((tx) => { for (const d of deliveries) tx.put('webhook_delivery', d.id, d); });
  for (const d of deliveries) assert.equal(ws.db.text('webhook_delivery', d.id), undefined, 'a pending delivery is an object');
  // Settle all but the last of each day's ten; one with an error text that needs escapes.
  await put((tx) => {
    for (const [k, d] of deliveries.entries()) {
      if (k % 10 === 9) continue;
      const settled: DeliveryRec = { ...d, attempt: 1, status: k % 2 === 0 ? 'succeeded' : 'failed', responseStatus: 500, error: k === 1 ? 'said "no" \\ twice' : null, durationMs: 3, nextAttemptAt: null };
      tx.put('webhook_delivery', d.id, settled);
    }
  });
  for (const [k, d] of deliveries.entries()) assert.equal(ws.db.text('webhook_delivery', d.id) !== undefined, k % 10 !== 9);
  // Day 40: the day-0 events, and the day-0 settled deliveries, are past their 30 days.
  clock += 20 * DAY + 1;
  await ws.db.compact();
  assert.deepEqual([...ws.db.table('event').keys()], events.slice(10));
  assert.equal(ws.events.size, 10, 'the index followed');
  assert.deepEqual([...ws.db.table('webhook_delivery').keys()].sort(), [deliveries[9].id, ...deliveries.slice(10).map((d) => d.id)].sort(), 'a pending delivery is kept whatever its age');
  assert.equal(ws.db.arenaStats()!.refs, 10 + 9);
  await ws.db.close();
  const again = await Workspace.open('w1', path, opts);
  assert.deepEqual([...again.db.table('event').keys()], events.slice(10));
  assert.equal(again.db.table('webhook_delivery').size, 11);
  await again.db.close();
});
