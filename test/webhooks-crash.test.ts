/**
 * At-least-once across a crash (docs/api.md#webhook-deliveries): 25 events whose deliveries are
 * not done when the real server process is killed with SIGKILL all arrive after the restart,
 * each with its event id as `webhook-id` — the ones in flight at the kill a second time. No
 * wall-clock sleep: the receiver holds the first requests open until the kill.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, startServer, tempDir } from './helpers/child.js';
import { startReceiver, verifyWebhook } from './helpers/receiver.js';

test('25 undelivered events survive a kill -9 and all arrive after the restart', { timeout: 60_000 }, async () => {
  const dataDir = tempDir();
  const env = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '600000', WEBHOOK_CONCURRENCY_PER_ENDPOINT: '4', SYNC: 'always', RATE_LIMIT_BURST: '10000' };
  const held = await startReceiver(() => 'hold');
  const first = await startServer({ dataDir, env });
  let secret = '';
  let eventIds: string[] = [];
  try {
    const key = await first.waitForKey();
    const hook = await call<{ webhookEndpoint: { id: string; secret: string } }>(first.url, 'POST', '/api/v1/webhook-endpoints', { key, body: { url: `${held.url}/hook`, events: ['conversation.created'] } });
    assert.equal(hook.status, 201, hook.text);
    secret = hook.body.webhookEndpoint.secret;
    for (let i = 0; i < 25; i++) {
      const r = await call(first.url, 'POST', '/api/v1/conversations', { key, body: { subject: `Crash ${i}`, customer: { email: `crash${i}@example.com` } } });
      assert.equal(r.status, 201, r.text);
    }
    const events = await call<{ events: Array<{ id: string }> }>(first.url, 'GET', '/api/v1/events?limit=100', { key });
    eventIds = events.body.events.map((e) => e.id);
    assert.equal(eventIds.length, 25);
    // Four in flight (the per-endpoint bound), held open by the receiver; 21 waiting.
    await held.waitFor(4);
  } finally {
    await first.stop('SIGKILL');
  }
  const inFlight = held.received.map((r) => String(r.headers['webhook-id']));
  const port = held.port;
  await held.close(); // before any assertion: a held request left open would keep the test process alive
  assert.equal(first.exit?.signal, 'SIGKILL');
  assert.equal(inFlight.length, 4);

  const rx = await startReceiver(() => ({ status: 200 }), port);
  const second = await startServer({ dataDir, env });
  try {
    const got = await rx.waitFor(25, 30_000);
    const ids = got.map((r) => String(r.headers['webhook-id']));
    assert.deepEqual(new Set(ids), new Set(eventIds), 'every event arrived after the restart');
    assert.equal(ids.length, 25, 'each once after the restart');
    for (const id of inFlight) assert.ok(ids.includes(id), 'a delivery cut off by the kill is sent again with the same webhook-id');
    for (const r of got) {
      assert.ok(verifyWebhook(secret, r.headers, r.body), 'signed with the same secret after the restart');
      assert.equal((JSON.parse(r.body) as { id: string }).id, r.headers['webhook-id']);
    }
  } finally {
    await second.stop('SIGTERM');
    await rx.close();
  }
  assert.equal(second.exit?.code, 0, second.stderr);
});
