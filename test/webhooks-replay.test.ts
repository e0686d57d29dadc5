/**
 * What the log replays is what the server held (docs/storage.md#transactions): attempts' outcomes
 * are written in batches while requests change the same endpoints — failure counts put by an
 * outcome, a description put by a PATCH, deliveries deleted with their endpoint. After a
 * graceful stop and a restart, the endpoints and the delivery records are exactly those the
 * running server had: a batch of outcomes is written in the order its changes were made, before
 * any request that came after them. (When the batch was committed in the turn's check phase, a
 * request handled in between was written first: this test failed in 2 of 4 runs then, replaying
 * an endpoint's older description over the PATCH that followed it, or deliveries of a deleted
 * endpoint.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from './helpers/server.js';
import { startReceiver } from './helpers/receiver.js';
import { tempDir } from './helpers/child.js';

const HOOKS = '/api/v1/webhook-endpoints';

test('endpoints changed and deleted while failing attempts are written: a restart replays the same endpoints and deliveries', { timeout: 120_000 }, async () => {
  const dataDir = tempDir();
  const rx = await startReceiver(() => ({ status: 500 })); // every attempt fails: each outcome puts its endpoint's failure counts
  const env = { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' };
  // No compaction: the restart replays the log line by line rather than a snapshot of memory.
  const one = await startTestServer({ dataDir, env, compactionSlack: 1_000_000_000 });
  const ws = one.store.workspace(one.workspaceId)!;
  const state = () => ({
    endpoints: [...ws.db.table('webhook_endpoint').values()].map((e) => JSON.stringify(e)).sort(),
    deliveries: [...ws.db.table('webhook_delivery').values()].map((d) => JSON.stringify(d)).sort(),
  });
  let before: ReturnType<typeof state>;
  try {
    const hooks: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await one.call<{ webhookEndpoint: { id: string } }>('POST', HOOKS, { body: { url: `${rx.url}/h${i}`, events: ['*'] } });
      assert.equal(r.status, 201, r.text);
      hooks.push(r.body.webhookEndpoint.id);
    }
    // Three streams at once: events (each owes every endpoint a failing attempt), PATCHes of the
    // endpoints, and now and then a deletion — so that requests land between outcomes and their write.
    const events = (async () => {
      for (let i = 0; i < 300; i++) {
        const r = await one.call('POST', '/api/v1/conversations', { body: { subject: `R${i}`, customer: { email: `r${i}@example.com` } } });
        assert.equal(r.status, 201);
      }
    })();
    const patches = (async () => {
      for (let i = 0; i < 600; i++) {
        const id = hooks[i % hooks.length];
        const r = await one.call('PATCH', `${HOOKS}/${id}`, { body: { description: `change ${i}` } });
        assert.ok(r.status === 200 || r.status === 404, r.text);
        // One endpoint deleted (with its deliveries) while outcomes of its attempts are being written.
        if (i % 150 === 149) assert.equal((await one.call('DELETE', `${HOOKS}/${hooks.shift()}`)).status, 200);
      }
    })();
    await Promise.all([events, patches]);
    await one.webhooks.runDue();
    before = state();
    assert.ok(before.deliveries.length > 100, `attempts were made and written (${before.deliveries.length})`);
  } finally { await one.close(); }
  const two = await startTestServer({ dataDir, env });
  try {
    const ws2 = two.store.workspace(one.workspaceId)!;
    const after = {
      endpoints: [...ws2.db.table('webhook_endpoint').values()].map((e) => JSON.stringify(e)).sort(),
      deliveries: [...ws2.db.table('webhook_delivery').values()].map((d) => JSON.stringify(d)).sort(),
    };
    assert.deepEqual(after.endpoints, before!.endpoints, 'the same endpoints, descriptions and failure counts');
    assert.deepEqual(after.deliveries.length, before!.deliveries.length, 'as many delivery records');
    assert.deepEqual(after.deliveries, before!.deliveries, 'the same delivery records');
  } finally { await two.close(); await rx.close(); }
});
