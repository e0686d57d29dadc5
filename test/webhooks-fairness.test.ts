/**
 * Delivery capacity is shared fairly between workspaces (docs/api.md#webhook-deliveries): one
 * workspace's silent receivers delay another's deliveries by at most one WEBHOOK_TIMEOUT_MS.
 * Real loopback receivers; the dispatcher runs by itself (no runDue).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { startTestServer } from './helpers/server.js';
import { startReceiver } from './helpers/receiver.js';
import { rawServer } from './helpers/rawReceivers.js';

const HOOKS = '/api/v1/webhook-endpoints';
const TIMEOUT_MS = 2000;

test('workspace A with 16 silent endpoints and 100 conversations: each delivery of workspace B arrives within one '
  + 'WEBHOOK_TIMEOUT_MS of its write', async () => {
  const srv = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    RATE_LIMIT_BURST: '1000000' } });
  const silent = await rawServer(() => {}); // accepts, reads, never answers
  const rxB = await startReceiver(() => ({ status: 200 }));
  try {
    for (let i = 0; i < 16; i++) {
      const r = await srv.call('POST', HOOKS, { body: { url: `${silent.url}/a${i}`, events: ['*'] } });
      assert.equal(r.status, 201, r.text);
    }
    const b = await srv.space();
    assert.equal((await b.call('POST', HOOKS, { body: { url: `${rxB.url}/b`,
      events: ['conversation.created'] } })).status, 201);
    const writeA = async (n: number) => {
      const r = await srv.call('POST', '/api/v1/conversations', { body: { subject: `A ${n}`,
        customer: { email: `a${n}@example.com` } } });
      assert.equal(r.status, 201, r.text);
    };
    for (let i = 0; i < 100; i += 10) await Promise.all(Array.from({ length: 10 }, (_, j) => writeA(i + j)));
    // A now owes 1,600 deliveries that each hold a connection for the whole time limit.
    const late: number[] = [];
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      const r = await b.call('POST', '/api/v1/conversations', { body: { subject: `B ${i}`,
        customer: { email: `b${i}@example.com` } } });
      assert.equal(r.status, 201, r.text);
      await rxB.waitFor(i + 1, TIMEOUT_MS + 1000);
      late.push(performance.now() - started);
      if (i === 4) await writeA(1000); // more of A's in between
    }
    const worst = Math.max(...late);
    assert.ok(worst < TIMEOUT_MS,
      `B's slowest delivery came ${worst.toFixed(0)} ms after its write (all: ${late.map(Math.round).join(' ')})`);
    assert.equal(rxB.received.length, 10);
    assert.ok(silent.mostOpen() <= 48,
      `A held at most three quarters of the 64 connections at once (${silent.mostOpen()})`);
  } finally { await rxB.close(); await srv.close(); await silent.close(); }
});

/** Lets the dispatcher's passes woken by the last events run (event-loop turns, not wall time). */
async function turns(n = 50): Promise<void> { for (let i = 0; i < n; i++) await new Promise((ok) => setImmediate(ok)); }

test('two workspaces with held deliveries: neither holds more than a quarter of the connections while the other waits',
  async () => {
  const srv = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '600000',
    WEBHOOK_CONCURRENCY: '8', RATE_LIMIT_BURST: '1000000' } });
  const rxA = await startReceiver(() => 'hold');
  const rxB = await startReceiver(() => 'hold');
  try {
    const b = await srv.space();
    for (let i = 0; i < 4; i++) {
      assert.equal((await srv.call('POST', HOOKS, { body: { url: `${rxA.url}/a${i}`, events: ['*'] } })).status, 201);
      assert.equal((await b.call('POST', HOOKS, { body: { url: `${rxB.url}/b${i}`, events: ['*'] } })).status, 201);
    }
    const make = (call: typeof srv.call, n: number) => call('POST', '/api/v1/conversations',
      { body: { subject: `S ${n}`, customer: { email: `s${n}@example.com` } } });
    // A alone: it may use all but a quarter (6 of 8), kept free for another workspace.
    for (let i = 0; i < 4; i++) assert.equal((await make(srv.call, i)).status, 201);
    await rxA.waitFor(6);
    await turns();
    assert.equal(rxA.received.length, 6);
    // B comes: it gets the quarter kept free at once (2 of 8), and waits for more.
    for (let i = 0; i < 4; i++) assert.equal((await make(b.call, i)).status, 201);
    await rxB.waitFor(2);
    // A's answers free its connections: while B waits, A takes back only its quarter.
    rxA.release(200);
    await rxA.waitFor(6 + 2);
    await turns();
    assert.deepEqual([rxA.received.length, rxB.received.length], [8, 2]);
  } finally {
    for (const rx of [rxA, rxB]) { rx.answer = () => ({ status: 200 }); rx.release(200); }
    await srv.close();
    await rxA.close();
    await rxB.close();
  }
});
