/**
 * How long analytics and client lists hold the event loop on a large workspace (docs/api.md#analytics,
 * DESIGN §10: no request over 50 ms at 1,000,000 records). Writes a log of `--records` records
 * directly (30 % conversations over 2026, 60 % their messages, 10 % issues), starts a server on it
 * in this process, then times bursts of `GET /analytics` (a whole year) and `GET /clients` pages with
 * message writes between them, under `monitorEventLoopDelay`; then compacts, restarts from the
 * snapshot block and times the same again. Run: `node --import tsx bench/analytics-scale.ts [--records N]`.
 */
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { writeLog } from './analyticsLog.js';
import { startTestServer, tempDir, type TestServer } from '../test/helpers/server.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? dflt : Number(process.argv[i + 1]);
};
const RECORDS = arg('records', 1_000_000);
const ENV = { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000', LOG_LEVEL: 'warn' };

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const f = (x: number) => x.toFixed(1);

/** Bursts of analytics and clients reads (10 at a time) with message writes between; the longest event-loop delay. */
async function burst(srv: TestServer, key: string, convIds: string[], label: string): Promise<void> {
  const get = async (path: string) => {
    const t0 = performance.now();
    const res = await fetch(srv.url + path, { headers: { Authorization: `Bearer ${key}` } });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 200)}`);
    return { ms: performance.now() - t0, body };
  };
  const t0 = performance.now();
  const first = await get('/api/v1/analytics?from=2026-01-01&to=2026-12-31');
  const firstClients = await get('/api/v1/clients?limit=100');
  console.log(
    `${label}: first analytics ${f(first.ms)} ms, first clients page ${f(firstClients.ms)} ms `
      + `(${f(performance.now() - t0)} ms both)`,
  );
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const lat = { analytics: [] as number[], clients: [] as number[], writes: [] as number[] };
  let cursor: string | null = null;
  for (let round = 0; round < 10; round++) {
    await Promise.all(
      Array.from({ length: 10 }, async (_, i) =>
        lat.analytics.push(
          (await get(`/api/v1/analytics?from=2026-01-01&to=2026-12-${String(31 - i).padStart(2, '0')}`)).ms,
        ),
      ),
    );
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        const page = await get(`/api/v1/clients?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
        cursor = (JSON.parse(page.body) as { nextCursor: string | null }).nextCursor;
        lat.clients.push(page.ms);
      }),
    );
    // Writes between the reads: each moves its client to the top and changes a day's median.
    for (let i = 0; i < 5; i++) {
      const w0 = performance.now();
      const id = convIds[(round * 7919 + i * 104_729) % convIds.length];
      const res = await fetch(`${srv.url}/api/v1/conversations/${id}/messages`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ role: 'agent', body: 'ok' }),
      });
      await res.text();
      lat.writes.push(performance.now() - w0);
    }
  }
  h.disable();
  console.log(
    `${label}: analytics p50 ${f(pct(lat.analytics, 0.5))} ms max ${f(Math.max(...lat.analytics))} ms; ` +
      `clients p50 ${f(pct(lat.clients, 0.5))} ms max ${f(Math.max(...lat.clients))} ms; ` +
      `writes p50 ${f(pct(lat.writes, 0.5))} ms; event loop delay max ${f(h.max / 1e6)} ms, ` +
      `p99 ${f(h.percentile(99) / 1e6)} ms`,
  );
}

const dataDir = tempDir('sw-analytics-');
let srv = await startTestServer({ dataDir, env: ENV });
const { key, workspaceId } = srv;
await srv.close();
const w0 = performance.now();
const { ids } = writeLog(join(dataDir, 'workspaces', `${workspaceId}.log`), RECORDS);
console.log(`wrote ${RECORDS} records in ${f((performance.now() - w0) / 1000)} s`);
let s0 = performance.now();
srv = await startTestServer({ dataDir, env: ENV });
console.log(`start (full replay): ${f((performance.now() - s0) / 1000)} s`);
srv.clock.set(Date.parse('2027-01-01T00:00:00.000Z'));
await burst(srv, key, ids, 'replayed');
await srv.store.workspace(workspaceId)!.db.compact();
await srv.close();
s0 = performance.now();
srv = await startTestServer({ dataDir, env: ENV });
console.log(`start (snapshot block): ${f((performance.now() - s0) / 1000)} s`);
srv.clock.set(Date.parse('2027-01-02T00:00:00.000Z'));
await burst(srv, key, ids, 'from the block');
await srv.close();
