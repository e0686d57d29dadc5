/**
 * Deliveries to real receivers (docs/api.md#webhook-deliveries): gunicorn with threads, nginx
 * proxying to a receiver, and Python's http.server. 500 events to two endpoints of each: nothing
 * lost, misattributed or badly signed, and p90 latency from write to receipt under 500 ms. A
 * test whose tool is missing skips with a banner naming it.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from './helpers/server.js';
import { verifyWebhook } from './helpers/receiver.js';
import { installed, skipBanner, startGunicorn, startNginx, startPythonReceiver,
  type RealReceiver } from './helpers/realReceivers.js';

const EVENTS = 500;
/** Conversations written at once. */
const WRITERS = 10;
const HOOKS = '/api/v1/webhook-endpoints';

/** Sends EVENTS conversations' events to two endpoints at `rx` and checks what arrived. */
async function deliverTo(rx: RealReceiver): Promise<void> {
  const srv = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_BURST: '1000000' } });
  try {
    const secrets = new Map<string, string>();
    for (const path of ['/a', '/b']) {
      const r = await srv.call<{ webhookEndpoint: { secret: string } }>('POST', HOOKS,
        { body: { url: `${rx.url}${path}`, events: ['conversation.created'] } });
      assert.equal(r.status, 201, r.text);
      secrets.set(path, r.body.webhookEndpoint.secret);
    }
    const wroteAt = new Map<string, number>();
    const write = async (n: number) => {
      const subject = `Receiver ${n}`;
      wroteAt.set(subject, Date.now());
      const r = await srv.call('POST', '/api/v1/conversations', { body: { subject,
        customer: { email: `r${n}@example.com` } } });
      assert.equal(r.status, 201, r.text);
    };
    for (let i = 0; i < EVENTS; i += WRITERS) await Promise.all(Array.from({ length: WRITERS }, (_,
      j) => write(i + j)));
    await rx.waitFor(2 * EVENTS, 60_000);
    const seen = new Map<string, Set<string>>([['/a', new Set()], ['/b', new Set()]]);
    const latencies: number[] = [];
    let badlySigned = 0;
    let misattributed = 0;
    let duplicates = 0;
    for (const g of rx.got) {
      const secret = secrets.get(g.path);
      const event = JSON.parse(g.body) as { id: string; type: string; data: { object: { subject: string } } };
      if (secret === undefined || event.id !== g.id || event.type !== 'conversation.created') {
        misattributed++;
        continue;
      }
      const headers = { 'webhook-id': g.id, 'webhook-timestamp': g.timestamp, 'webhook-signature': g.signature };
      if (!verifyWebhook(secret, headers, g.body, srv.clock.now())) badlySigned++;
      const ids = seen.get(g.path)!;
      if (ids.has(g.id)) duplicates++;
      ids.add(g.id);
      const at = wroteAt.get(event.data.object.subject);
      if (at === undefined) misattributed++; else latencies.push(g.at - at);
    }
    latencies.sort((x, y) => x - y);
    const p90 = latencies[Math.floor(latencies.length * 0.9)];
    const p50 = latencies[Math.floor(latencies.length / 2)];
    const max = latencies.at(-1)!;
    const ms = (x: number): string => `${x.toFixed(0)} ms`;
    const summary = `${rx.got.length} requests; p50 ${ms(p50)}, p90 ${ms(p90)}, max ${ms(max)}`;
    process.stderr.write(`# ${summary}\n`);
    assert.deepEqual({ a: seen.get('/a')!.size, b: seen.get('/b')!.size, misattributed, badlySigned, duplicates },
      { a: EVENTS, b: EVENTS, misattributed: 0, badlySigned: 0, duplicates: 0 }, summary);
    assert.ok(p90 < 500, `p90 latency from write to receipt under 500 ms: ${summary}`);
  } finally { await srv.close(); }
}

/** Runs `start`'s receiver through {@link deliverTo} when `tool` is installed; skips loudly otherwise. */
async function withTool(t: TestContext, tool: string, start: () => Promise<RealReceiver>): Promise<void> {
  if (!installed(tool)) {
    skipBanner(tool, t.name);
    t.skip(`${tool} is not installed`);
    return;
  }
  const rx = await start();
  try { await deliverTo(rx); } finally { await rx.close(); }
}

const WANT = `${EVENTS} events to two endpoints, none lost, misattributed or badly signed, p90 under 500 ms`;

test(`gunicorn with --threads: ${WANT}`, (t) => withTool(t, 'gunicorn', () => startGunicorn(4)));

test(`nginx proxying to a receiver: ${WANT}`, (t) => withTool(t, 'nginx', startNginx));

test(`Python's http.server: ${WANT}`, (t) => withTool(t, 'python3', startPythonReceiver));
