/**
 * What an anonymous visitor of the public docs costs the server (docs/security.md#public-docs),
 * over HTTP against an in-process server: a source of thousands of identical headings renders
 * in linear time with GitHub-style anchors, split over pages; the first render holds the event
 * loop <= 50 ms of CPU (on a worker); 40 parallel visitors share one render and one buffer;
 * 40 connections pipelining the page without reading hold no copies, and the memory is back
 * once they close; the search page links to the page a hit is on; a change renders anew.
 * Waits are on events or conditions re-checked each turn, bounded by timeouts; nothing sleeps.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startTestServer, type Space, type TestServer } from './helpers/server.js';
import { parseRawResponse, within, type RawResponse } from './helpers/raw.js';
import { PAGE_SECTIONS as P } from '../src/web/docsModel.js';

const MiB = 1024 * 1024;
/** The bound on the longest event-loop stall while a page is first rendered (ms). */
const STALL_MS = 50;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
function settledRss(): number { gc(); gc(); return process.memoryUsage().rss; }

const servers: TestServer[] = [];
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) await s.close();
});
async function server(): Promise<TestServer> {
  // What a page costs, not the per-address limit (test/web-docs-limit.test.ts): one address makes every visit here.
  const srv = await startTestServer({ captureLogs: true, env: { DOCS_VIEWS_PER_MINUTE: '10000000' } });
  servers.push(srv);
  return srv;
}

/** Resolves once `cond()` holds, re-checked every turn of the event loop; rejects after `ms`. */
function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  return within(new Promise<void>((resolve) => {
    const check = () => { if (cond()) resolve(); else setImmediate(check); };
    check();
  }), ms, what);
}

/** A pasted source of `content`, published at `slug`; returns its id. */
async function published(w: Space, content: string, slug: string): Promise<string> {
  type Created = { source: { id: string; status: string } };
  const r = await w.call<Created>('POST', '/api/v1/sources', { body: { content, name: 'Heads' } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.source.status, 'ready');
  const publicDocs = { enabled: true, published: true, slug };
  const p = await w.call('PATCH', `/api/v1/sources/${r.body.source.id}`, { body: { publicDocs } });
  assert.equal(p.status, 200, p.text);
  return r.body.source.id;
}

/**
 * One GET over a raw socket: the bytes as they came, kept (not parsed: parsing 40 large answers
 * whose ends arrive in one turn of the event loop would count as the server's stall).
 */
function rawBytes(srv: TestServer, path: string, headers = ''): Promise<Buffer[]> {
  return within(new Promise((resolve, reject) => {
    const s = net.connect(srv.port, '127.0.0.1');
    sockets.push(s);
    const parts: Buffer[] = [];
    s.on('data', (d: Buffer) => parts.push(d));
    s.on('error', reject);
    s.on('end', () => resolve(parts));
    s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${headers}\r\n`);
  }), 60_000, `GET ${path}`);
}

function parsed(parts: Buffer[]): RawResponse & { size: number } {
  const p = parseRawResponse(Buffer.concat(parts));
  if (!p) throw new Error('an incomplete answer');
  return { ...p.response, size: p.size };
}

/** One GET over a raw socket, parsed. */
const rawGet = async (srv: TestServer, path: string, headers = '') => parsed(await rawBytes(srv, path, headers));

/** The main thread's CPU time so far (ns), or null where the kernel does not tell (not Linux). */
function mainThreadCpuNs(): number | null {
  try { return Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]); } catch { return null; }
}
if (mainThreadCpuNs() === null) {
  console.error('\n*** /proc/thread-self/schedstat is missing: event-loop stalls are measured in wall time, '
    + 'scheduler delays included ***\n');
}

/**
 * `fn`'s value and the longest stall of the event loop while it ran: the most CPU time the main
 * thread spent between two turns of a 1 ms timer (ms), so that a stall the scheduler caused on
 * this shared machine (the thread waiting for a core) does not count; and the same in wall time.
 */
async function stallOf<T>(fn: () => Promise<T>): Promise<{ value: T; cpuMs: number; wallMs: number }> {
  let cpu = mainThreadCpuNs();
  let wall = performance.now();
  let maxCpu = 0;
  let maxWall = 0;
  const tick = () => {
    const c = mainThreadCpuNs();
    const w = performance.now();
    if (c !== null && cpu !== null) maxCpu = Math.max(maxCpu, (c - cpu) / 1e6);
    maxWall = Math.max(maxWall, w - wall);
    cpu = c;
    wall = w;
  };
  const timer = setInterval(tick, 1);
  try {
    const value = await fn();
    tick();
    return { value, cpuMs: cpu === null ? maxWall : maxCpu, wallMs: maxWall };
  } finally { clearInterval(timer); }
}

const stallText = (s: { cpuMs: number; wallMs: number }) =>
  `longest event-loop stall ${s.cpuMs.toFixed(1)} ms of CPU (${s.wallMs.toFixed(0)} ms of wall time)`;

/** The last page of 6,000 one-line sections. */
const LAST = 6000 / P;
const ids = (page: string) => [...page.matchAll(/<section class="op" id="([^"]+)"/g)].map((m) => m[1]);

test(`6,000 identical headings: linear GitHub-style anchors over ${6000 / P} pages of ${P}, first render stalls the loop `
  + '<= 50 ms, then one cached buffer with an ETag', async (t) => {
  const srv = await server();
  const w = await srv.space();
  await published(w, '# a\nx\n'.repeat(6000), 'heads');
  const started = performance.now();
  const cold = await stallOf(() => rawBytes(srv, '/docs/heads'));
  const took = Math.round(performance.now() - started);
  t.diagnostic(`first render of 6,000 identical headings: ${took} ms, ${stallText(cold)}`);
  assert.equal(parsed(cold.value).status, 200);
  assert.ok(cold.cpuMs <= STALL_MS, `the event loop stalled ${cold.cpuMs.toFixed(1)} ms`);

  const first = await rawGet(srv, '/docs/heads');
  assert.equal(first.status, 200);
  assert.equal(first.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(first.headers['cache-control'], 'no-cache');
  assert.match(first.headers.etag, /^"[A-Za-z0-9_-]{27}"$/);
  assert.deepEqual(ids(first.text), ['section-a', ...Array.from({ length: P - 1 }, (_, i) => `section-a-${i + 1}`)]);
  assert.match(first.text, /<a rel="next" href="\/docs\/heads\?page=2">Next page<\/a>/);
  assert.match(first.text, /<li><span aria-current="page">1<\/span><\/li>/);
  assert.ok(first.text.includes(`<li><a href="/docs/heads?page=${LAST}">${LAST}</a></li>`));
  const last = await rawGet(srv, `/docs/heads?page=${LAST}`);
  assert.equal(last.status, 200);
  assert.deepEqual(ids(last.text), Array.from({ length: P }, (_, i) => `section-a-${6000 - P + i}`));
  assert.match(last.text, /<h2>Other documents <span class="hint">\(continued\)<\/span><\/h2>/);
  assert.ok(last.text.includes(`<a rel="prev" href="/docs/heads?page=${LAST - 1}">Previous page</a>`));
  assert.ok(!last.text.includes('rel="next"'));
  // The contents link to where the documents start, from every page.
  assert.match(last.text, /<a href="\/docs\/heads#documents">Other documents<\/a>/);
  for (const bad of [`?page=${LAST + 1}`, '?page=0', '?page=x', '?page=01', '?page=1e1']) {
    assert.equal((await rawGet(srv, `/docs/heads${bad}`)).status, 404, bad);
  }

  // The same bytes again, and a 304 for the ETag.
  const again = await rawGet(srv, '/docs/heads');
  assert.equal(again.headers.etag, first.headers.etag);
  assert.equal(again.text, first.text);
  const revalidated = await rawGet(srv, '/docs/heads', `If-None-Match: ${first.headers.etag}\r\n`);
  assert.equal(revalidated.status, 304);
  assert.equal(revalidated.text, '');
  assert.equal(revalidated.headers.etag, first.headers.etag);
});

test('anchors: a heading that spells a suffix another one would take is skipped over, each anchor unique', async () => {
  const srv = await server();
  const w = await srv.space();
  await published(w, '# a\nx\n# a\nx\n# a 1\nx\n# a\nx\n# a 2\nx\n# a\nx\n', 'suffixes');
  const p = await rawGet(srv, '/docs/suffixes');
  assert.deepEqual(ids(p.text), ['section-a', 'section-a-1', 'section-a-1-1', 'section-a-2', 'section-a-2-1',
    'section-a-3']);
  await published(w, '# a 1\nx\n# a\nx\n# a\nx\n', 'suffix-first');
  assert.deepEqual(ids((await rawGet(srv, '/docs/suffix-first')).text), ['section-a-1', 'section-a', 'section-a-2']);
});

/** `n` distinct headings, each with a paragraph of about 560 characters. */
const distinct = (n: number) =>
  Array.from({ length: n }, (_, i) => `# heading ${i}\n\n${`Paragraph ${i} about the wombat feeder. `.repeat(14)}\n`)
    .join('');

test('40 parallel first visitors share one render and one buffer; 120 connections pipelining it without reading '
  + 'hold no copies, and the memory is back once they close', async (t) => {
  const srv = await server();
  const w = await srv.space();
  await published(w, distinct(3000), 'wide');
  const cold = await stallOf(() => Promise.all(Array.from({ length: 40 }, () => rawBytes(srv, '/docs/wide'))));
  t.diagnostic(`40 parallel first visitors: ${stallText(cold)}`);
  const answers = cold.value.map(parsed);
  assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
  assert.equal(new Set(answers.map((a) => a.headers.etag)).size, 1, 'one render for all 40');
  assert.equal(new Set(answers.map((a) => a.text)).size, 1);
  assert.ok(cold.cpuMs <= STALL_MS, `the event loop stalled ${cold.cpuMs.toFixed(1)} ms`);
  const page = await rawGet(srv, '/docs/wide');
  assert.equal(ids(page.text).length, P);
  assert.ok(page.size > 200_000 && page.size < 1.5 * MiB, `${page.size} bytes`);

  // 120 connections, 50 pipelined GETs each, never reading.
  const rssBefore = settledRss();
  const request = 'GET /docs/wide HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(50);
  const clients: net.Socket[] = [];
  for (let i = 0; i < 120; i++) {
    const s = net.connect(srv.port, '127.0.0.1');
    s.pause();
    sockets.push(s);
    clients.push(s);
    s.write(request);
  }
  await until(() => srv.connections.stats().holding === 120, 30_000, 'every connection to be held back for its output');
  const held = settledRss();
  const stats = srv.connections.stats();
  for (const s of clients) s.destroy();
  await until(() => srv.connections.stats().connections === 0, 10_000, 'the server to close the connections');
  const after = settledRss();
  const grown = (held - rssBefore) / MiB;
  const left = (after - rssBefore) / MiB;
  t.diagnostic(`120 pipelining connections of a ${(page.size / 1024).toFixed(0)} KiB page: `
    + `${(stats.unsentBytes / MiB).toFixed(1)} MiB unsent, RSS +${grown.toFixed(1)} MB held, `
    + `+${left.toFixed(1)} MB after they closed`);
  assert.ok(stats.maxUnsentBytes <= MiB + page.size, `one connection holds ${stats.maxUnsentBytes} bytes`);
  // A copy per answer would be 120 × 2-3 answers × ~0.23 MB; the shared buffer costs next to nothing.
  assert.ok(grown < 24, `RSS grew by ${grown.toFixed(1)} MB while they were held`);
  assert.ok(left < 24, `RSS is ${left.toFixed(1)} MB above where it was after they closed`);
  assert.equal((await rawGet(srv, '/healthz')).status, 200);
});

test('the search page of a large source: cold, it stalls the loop <= 50 ms; its hits link to the page they are on; '
  + 'rescan, rename and unpublish render anew', async (t) => {
  const srv = await server();
  const w = await srv.space();
  const id = await published(w, distinct(3000), 'findme');
  const cold = await stallOf(() => rawBytes(srv, '/docs/findme/search?q=heading+2500'));
  t.diagnostic(`cold search page of 3,000 sections: ${stallText(cold)}`);
  assert.equal(parsed(cold.value).status, 200);
  assert.ok(cold.cpuMs <= STALL_MS, `the event loop stalled ${cold.cpuMs.toFixed(1)} ms`);
  const s = await rawGet(srv, '/docs/findme/search?q=paragraph+2500');
  assert.equal(s.status, 200);
  const at = Math.floor(2500 / P) + 1;
  const hit = `<ol class="results"><li><a href="/docs/findme?page=${at}#section-heading-2500">heading 2500</a>`;
  assert.ok(s.text.includes(hit), s.text);
  const early = await rawGet(srv, '/docs/findme/search?q=paragraph+7');
  assert.match(early.text, /<ol class="results"><li><a href="\/docs\/findme#section-heading-7">heading 7<\/a>/);
  const target = await rawGet(srv, `/docs/findme?page=${at}`);
  assert.ok(target.text.includes('<section class="op" id="section-heading-2500"'));

  // A rename shows at once; a rescan renders anew; unpublished → 404, published again → 200.
  const before = await rawGet(srv, '/docs/findme');
  assert.equal((await w.call('PATCH', `/api/v1/sources/${id}`, { body: { name: 'Renamed docs' } })).status, 200);
  const renamed = await rawGet(srv, '/docs/findme');
  assert.match(renamed.text, /<h1>Renamed docs<\/h1>/);
  assert.notEqual(renamed.headers.etag, before.headers.etag);
  const rescan = await w.call<{ source: { status: string } }>('POST', `/api/v1/sources/${id}/rescan`);
  assert.ok(rescan.status === 200 || rescan.status === 202, rescan.text);
  await within((async () => {
    type Got = { source: { status: string } };
    const status = async () => (await w.call<Got>('GET', `/api/v1/sources/${id}`)).body.source.status;
    while (await status() !== 'ready') await new Promise((r) => setImmediate(r));
  })(), 30_000, 'the rescan');
  const rescanned = await rawGet(srv, '/docs/findme');
  assert.equal(rescanned.status, 200);
  assert.equal(rescanned.text, renamed.text, 'the same content renders the same page');
  const publish = (published: boolean) =>
    w.call('PATCH', `/api/v1/sources/${id}`, { body: { publicDocs: { published } } });
  assert.equal((await publish(false)).status, 200);
  assert.equal((await rawGet(srv, '/docs/findme')).status, 404);
  assert.equal((await rawGet(srv, '/docs/findme/search?q=wombat')).status, 404);
  assert.equal((await publish(true)).status, 200);
  assert.equal((await rawGet(srv, '/docs/findme')).text, renamed.text);
});
