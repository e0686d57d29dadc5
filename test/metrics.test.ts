/**
 * `GET /metrics` on METRICS_PORT (docs/deployment.md#monitoring): a real server with METRICS_PORT=0, requests made over
 * HTTP, then a scrape of the metrics port: request counters equal the requests made, histogram buckets are cumulative,
 * no label holds an id or a workspace name, `promtool check metrics` finds nothing (skipped with a banner when promtool
 * is missing), and under load the counter matches the requests sent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { request, Agent } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { readdirSync } from 'node:fs';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';
import { escapeLabel, Histogram, labelSet } from '../src/metrics/exposition.js';
import { loadConfig, ConfigError } from '../src/core/config.js';
import { ListenError } from '../src/server/start.js';

/** One sample line: name, labels, value. */
interface Sample { name: string; labels: Record<string, string>; value: number }

/** Parses an exposition text into its samples (comments skipped); throws on a line it cannot read. */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `unreadable sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    out.push({ name: m[1], labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return out;
}

async function scrape(srv: TestServer): Promise<{ text: string; samples: Sample[]; type: string | null }> {
  const res = await fetch(`http://127.0.0.1:${srv.metricsPort}/metrics`);
  assert.equal(res.status, 200);
  const text = await res.text();
  return { text, samples: parse(text), type: res.headers.get('content-type') };
}

/** `http_requests_total` as `METHOD route status` → count. */
function requestCounts(samples: Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    if (s.name === 'http_requests_total') out[`${s.labels.method} ${s.labels.route} ${s.labels.status}`] = s.value;
  }
  return out;
}

test('METRICS_PORT unset: no metrics port; METRICS_PORT and METRICS_HOST are validated', async () => {
  assert.deepEqual([loadConfig({}).metricsPort, loadConfig({}).metricsHost], [null, '127.0.0.1']);
  assert.deepEqual([loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '::1' }).metricsPort,
    loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '::1' }).metricsHost], [9464, '::1']);
  assert.throws(() => loadConfig({ METRICS_PORT: '70000' }), (e: unknown) => e instanceof ConfigError &&
    e.message === 'METRICS_PORT must be an integer from 0 to 65535, got "70000"');
  assert.throws(() => loadConfig({ METRICS_HOST: 'a b' }), (e: unknown) => e instanceof ConfigError &&
    e.message === 'METRICS_HOST must be an IP address (127.0.0.1, 0.0.0.0, ::) or a host name, got "a b"');
  const srv = await startTestServer();
  try { assert.equal(srv.metricsPort, null); } finally { await srv.close(); }
});

test('a METRICS_PORT in use stops the start with a ListenError naming it, the data dir untouched', async () => {
  const busy = createServer();
  await new Promise<void>((ok) => busy.listen(0, '127.0.0.1', ok));
  const port = (busy.address() as AddressInfo).port;
  const dataDir = tempDir();
  try {
    await assert.rejects(startTestServer({ dataDir, env: { METRICS_PORT: String(port) } }), (e: Error) =>
      e instanceof ListenError && e.message === `METRICS_PORT ${port} is already in use on "127.0.0.1" (EADDRINUSE)`);
    assert.deepEqual(readdirSync(dataDir), []);
  } finally { busy.close(); }
});

test('label values are escaped (backslash, quote, line feed); histogram buckets are cumulative', () => {
  assert.equal(escapeLabel('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
  assert.equal(labelSet([['route', '/x"y'], ['le', '+Inf']]), '{route="/x\\"y",le="+Inf"}');
  const h = new Histogram([0.1, 1]);
  for (const v of [0.05, 0.1, 0.5, 2]) h.observe(v);
  const out: string[] = [];
  h.write(out, 'x_seconds', []);
  assert.deepEqual(out, ['x_seconds_bucket{le="0.1"} 2', 'x_seconds_bucket{le="1"} 3', 'x_seconds_bucket{le="+Inf"} 4',
    'x_seconds_sum 2.65', 'x_seconds_count 4']);
});

test('a scrape after requests: exact counts by route template, method and status; no id in a label', async () => {
  const srv = await startTestServer({ env: { METRICS_PORT: '0' } });
  try {
    assert.equal(typeof srv.metricsPort, 'number');
    assert.notEqual(srv.metricsPort, srv.port);
    const created = await srv.call<{ issue: { id: string } }>('POST', '/api/v1/issues', { body: { subject: 'Printer on fire' } });
    assert.equal(created.status, 201);
    const id = created.body.issue.id;
    for (let i = 0; i < 3; i++) assert.equal((await srv.call('GET', `/api/v1/issues/${id}`)).status, 200);
    assert.equal((await srv.call('GET', '/api/v1/issues/00000000-0000-7000-8000-000000000000')).status, 404);
    assert.equal((await srv.call('GET', '/api/v1/issues', { key: null })).status, 401);
    assert.equal((await srv.call('GET', `/no/such/${id}`)).status, 404);
    assert.equal((await srv.call('PURGE', '/api/v1/issues')).status, 405);
    assert.equal((await srv.call('GET', '/healthz', { key: null })).status, 200);
    const page = await fetch(`${srv.url}/settings/keys/${id}/revoke`, { redirect: 'manual' });
    assert.equal(page.status, 303);
    await page.text();

    const { samples, text, type } = await scrape(srv);
    assert.equal(type, 'text/plain; version=0.0.4; charset=utf-8');
    assert.deepEqual(requestCounts(samples), {
      'POST /api/v1/issues 201': 1,
      'GET /api/v1/issues/{issueId} 200': 3,
      'GET /api/v1/issues/{issueId} 404': 1,
      'GET /api/v1/issues 401': 1,
      'GET other 404': 1,
      'other other 405': 1,
      'GET /healthz 200': 1,
      'GET /settings/keys/{id}/revoke 303': 1,
    });
    // Every route template's histogram: buckets cumulative, +Inf equal to the count, the count equal to its requests.
    const routes = new Set(samples.filter((s) => s.name === 'http_request_duration_seconds_count').map((s) =>
      s.labels.route));
    assert.deepEqual([...routes].sort(), ['/api/v1/issues', '/api/v1/issues/{issueId}', '/healthz',
      '/settings/keys/{id}/revoke', 'other']);
    for (const route of routes) {
      const buckets = samples.filter((s) => s.name === 'http_request_duration_seconds_bucket' &&
        s.labels.route === route);
      const les = buckets.map((b) => (b.labels.le === '+Inf' ? Infinity : Number(b.labels.le)));
      assert.deepEqual(les, [...les].sort((a, b) => a - b), `${route}: buckets in order`);
      for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i].value >= buckets[i - 1].value, `${route} cumulative`);
      const count = samples.find((s) => s.name === 'http_request_duration_seconds_count' && s.labels.route === route)!;
      assert.equal(buckets.at(-1)!.labels.le, '+Inf');
      assert.equal(buckets.at(-1)!.value, count.value);
      const made = samples.filter((s) => s.name === 'http_requests_total' && s.labels.route === route)
        .reduce((n, s) => n + s.value, 0);
      assert.equal(count.value, made, `${route}: histogram count = requests`);
    }
    // No label value holds an id or the workspace's name.
    const ws = srv.store.workspace(srv.workspaceId)!;
    const name = (srv.store.system.get('workspace', srv.workspaceId) as { name: string }).name;
    for (const s of samples) {
      for (const v of Object.values(s.labels)) {
        assert.ok(!/[0-9a-f]{8}-[0-9a-f]{4}-/.test(v) && !v.includes(ws.id) && v !== name, `${s.name}: label ${v}`);
      }
    }
    assert.ok(!text.includes(id) && !text.includes(srv.workspaceId));
    // The commit of the issue went through the group commit; the other series are present.
    const one = (n: string, labels: Record<string, string> = {}) => samples.find((s) => s.name === n &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    assert.ok(one('store_commit_duration_seconds_count')! >= 1);
    for (const n of ['event_streams_open', 'ingest_jobs_queued', 'webhook_deliveries_in_flight',
      'nodejs_eventloop_delay_p99_seconds', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes']) {
      assert.equal(typeof one(n), 'number', n);
    }
    assert.equal(one('webhook_deliveries_queued', { state: 'owed' }), 0);
    assert.equal(one('ingest_jobs_total', { outcome: 'succeeded' }), 0);
    // Only /metrics is served there.
    const other = await fetch(`http://127.0.0.1:${srv.metricsPort}/`);
    assert.deepEqual([other.status, await other.text()], [404, 'Not found: the metrics are at /metrics.\n']);
    const post = await fetch(`http://127.0.0.1:${srv.metricsPort}/metrics`, { method: 'POST' });
    assert.deepEqual([post.status, post.headers.get('allow'), await post.text()], [405, 'GET, HEAD', 'Use GET.\n']);
  } finally { await srv.close(); }
});

test('an event stream open is counted; a source ingested counts an ingestion job', async () => {
  const srv = await startTestServer({ env: { METRICS_PORT: '0' } });
  try {
    const ctrl = new AbortController();
    const res = await fetch(`${srv.url}/api/v1/events/stream`, { headers: { Authorization: `Bearer ${srv.key}` },
      signal: ctrl.signal });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    await reader.read();
    const open = (await scrape(srv)).samples.find((s) => s.name === 'event_streams_open')!;
    assert.equal(open.value, 1);
    ctrl.abort();
    const src = await srv.call<{ id: string; status: string }>('POST', '/api/v1/sources',
      { body: { type: 'text', name: 'Notes', content: '# Refunds\n\nRefunds take five days.' } });
    assert.equal(src.status, 201, src.text);
    const { samples } = await scrape(srv);
    const jobs = samples.filter((s) => s.name === 'ingest_jobs_total').reduce((n, s) => n + s.value, 0);
    assert.ok(jobs >= 1, `ingestion jobs counted: ${jobs}`);
  } finally { await srv.close(); }
});

test('promtool check metrics finds nothing in a live scrape', async (t) => {
  const found = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  if (found.error) {
    process.stderr.write('\n=== SKIPPED: promtool is not installed (apt-get install prometheus): ' +
      '`promtool check metrics` was not run ===\n\n');
    t.skip('promtool is not installed');
    return;
  }
  const srv = await startTestServer({ env: { METRICS_PORT: '0', SYNC: 'always' } });
  try {
    await srv.call('POST', '/api/v1/issues', { body: { subject: 'a' } });
    await srv.call('GET', '/nope');
    const { text } = await scrape(srv);
    const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.deepEqual({ status: r.status, out: r.stdout + r.stderr }, { status: 0, out: '' });
  } finally { await srv.close(); }
});

test('under load (2,000 requests from 8 clients at once) the request counter matches the requests sent within 1 %',
  async () => {
    const srv = await startTestServer({ env: { METRICS_PORT: '0', RATE_LIMIT_BURST: '100000',
      RATE_LIMIT_PER_MINUTE: '10000000' } });
    try {
      const created = await srv.call<{ issue: { id: string } }>('POST', '/api/v1/issues', { body: { subject: 'load' } });
      const path = `/api/v1/issues/${created.body.issue.id}`;
      const agent = new Agent({ keepAlive: true, maxSockets: 8 });
      const get = () => new Promise<number>((resolve, reject) => {
        const req = request(`${srv.url}${path}`, { agent, headers: { Authorization: `Bearer ${srv.key}` } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
      const total = 2000;
      // All 2,000 in flight at once over 8 connections; a scrape taken mid-load, and one after.
      const all = Array.from({ length: total }, get);
      const during = await scrape(srv);
      const statuses = await Promise.all(all);
      agent.destroy();
      assert.deepEqual(statuses.filter((s) => s !== 200), []);
      const mid = requestCounts(during.samples)[`GET /api/v1/issues/{issueId} 200`] ?? 0;
      assert.ok(mid <= total, `mid-load count ${mid}`);
      const counted = requestCounts((await scrape(srv)).samples)[`GET /api/v1/issues/{issueId} 200`];
      assert.ok(Math.abs(counted - total) <= total * 0.01, `counted ${counted} of ${total}`);
      assert.equal(counted, total);
    } finally { await srv.close(); }
  });
