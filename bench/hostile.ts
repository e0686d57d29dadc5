/**
 * `npm run bench -- --only hostile` (docs/security.md#hostile-traffic): API reads and durable writes of one
 * workspace, paced, while at the same time one address views a 19,000-heading docs page in a loop, another
 * floods the sign-in form, and a third key bursts analytics and client lists on a 100,000-record workspace.
 * The attackers run on a worker thread at the lowest CPU priority, standing for clients on other machines.
 */
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import * as http from 'node:http';
import { makeBase } from './seed.js';
import { writeLog } from './analyticsLog.js';
import { ms, int, mb1, verdict } from './figures.js';
import type { Row } from './results.js';

/** What the scenario needs from bench/run.ts. */
export interface HostileKit {
  tmp: string;
  seconds: number;
  rows: Row[];
  notes: string[];
  startServer(label: string, dataDir: string, env: Record<string, string>): {
    ready(): Promise<{ port: number }>; stop(): Promise<void>; cpuSeconds(): number };
}

/** The bound on the p99 of API reads and writes during the hostile traffic (DESIGN §10). */
export const TARGET_MS = 50;
const RECORDS = 100_000;
const HEADINGS = 19_000;
/** One measured read and one measured write every this many ms. */
const PACE_MS = 20;

/** The attackers' thread: plain JavaScript on node:http keep-alive agents; reports answers by kind and status. */
const ATTACKERS = `
const { parentPort, workerData: w } = require('node:worker_threads');
const http = require('node:http');
try { require('node:os').setPriority(19); } catch {}
let stop = false;
parentPort.on('message', () => { stop = true; });
const report = {};
const count = (kind, status, bytes, ms) => {
  const r = (report[kind] ??= { statuses: {}, bytes: 0, ms: [] });
  r.statuses[status] = (r.statuses[status] ?? 0) + 1; r.bytes += bytes; if (r.ms.length < 100000) r.ms.push(ms);
};
const get = (agent, kind, method, path, headers, body) => new Promise((resolve) => {
  const t = performance.now();
  const req = http.request({ host: '127.0.0.1', port: w.port, method, path, agent, headers }, (res) => {
    let bytes = 0;
    res.on('data', (c) => { bytes += c.length; });
    res.on('end', () => { count(kind, res.statusCode, bytes, performance.now() - t); resolve(); });
  });
  req.on('error', () => { count(kind, 'error', 0, performance.now() - t); resolve(); });
  req.end(body);
});
const loops = (n, fn) => Array.from({ length: n }, async (_, i) => { while (!stop) await fn(i); });
const agent = (n) => new http.Agent({ keepAlive: true, maxSockets: n });
const docs = agent(8), signIn = agent(100), reports = agent(10);
const login = 'csrf=' + encodeURIComponent(w.csrf) + '&email=';
let day = 0;
Promise.all([
  ...loops(8, () => get(docs, 'docs', 'GET', '/docs/coll?page=' + (1 + Math.floor(Math.random() * w.pages)),
    { 'X-Forwarded-For': '10.1.0.1' })),
  ...loops(100, () => {
    const body = login + 'x' + Math.random().toString(36).slice(2) + '%40example.com&password=wrong+' + Math.random();
    return get(signIn, 'signIn', 'POST', '/settings/login', { 'X-Forwarded-For': '10.2.0.1', Cookie: w.cookie,
      Origin: 'http://127.0.0.1:' + w.port, 'Content-Type': 'application/x-www-form-urlencoded',
      'Content-Length': Buffer.byteLength(body) }, body);
  }),
  ...loops(10, (i) => i % 2
    ? get(reports, 'clients', 'GET', '/api/v1/clients?limit=100', { Authorization: 'Bearer ' + w.reportsKey })
    : get(reports, 'analytics', 'GET', '/api/v1/analytics?from=2026-01-01&to=2026-12-' + String(1 + (day++ % 31)).padStart(2, '0'),
      { Authorization: 'Bearer ' + w.reportsKey })),
]).then(() => { for (const a of [docs, signIn, reports]) a.destroy(); parentPort.postMessage(report); });
`;

interface Kind { statuses: Record<string, number>; bytes: number; ms: number[] }

const p = (xs: number[], q: number) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1,
  Math.ceil(q * s.length) - 1)] ?? NaN; };

/** One answer over a keep-alive agent: status, body and time (ms). */
function call(port: number, agent: http.Agent, method: string, path: string, headers: Record<string, string>,
  body?: string): Promise<{ status: number; text: string; ms: number; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(parts).toString(), ms:
        performance.now() - t, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Paced reads and durable writes for `seconds`; @returns each one's time (ms). */
async function measure(port: number, key: string, convId: string, seconds: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  const auth = { Authorization: `Bearer ${key}` };
  const reads: number[] = [];
  const writes: number[] = [];
  const end = performance.now() + seconds * 1000;
  let i = 0;
  try {
    while (performance.now() < end) {
      const next = performance.now() + PACE_MS;
      const [r, w] = await Promise.all([
        call(port, agent, 'GET', `/api/v1/conversations/${convId}`, auth),
        call(port, agent, 'POST', '/api/v1/conversations', { ...auth, 'Content-Type': 'application/json' },
          JSON.stringify({ subject: `Measured write ${i++}`, customer: { email: 'ada@example.com' } })),
      ]);
      if (r.status !== 200 || w.status !== 201) throw new Error(`measured calls answered ${r.status} / ${w.status}: ${
        r.status !== 200 ? r.text : w.text}`);
      reads.push(r.ms);
      writes.push(w.ms);
      const wait = next - performance.now();
      if (wait > 0) await new Promise((res) => setTimeout(res, wait));
    }
  } finally { agent.destroy(); }
  return { reads, writes };
}

/** Runs the scenario and adds its rows to `kit.rows`. */
export async function hostile(kit: HostileKit): Promise<void> {
  const dir = join(kit.tmp, 'hostile');
  const reportsWs = makeBase(dir);
  writeLog(join(dir, 'workspaces', `${reportsWs.workspaceId}.log`), RECORDS);
  const measured = makeBase(dir);
  const srv = kit.startServer('hostile', dir, { TRUST_PROXY: '127.0.0.1' });
  const { port } = await srv.ready();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const auth = { Authorization: `Bearer ${measured.key}`, 'Content-Type': 'application/json' };
    const content = Array.from({ length: HEADINGS }, (_, i) => `# Heading ${i}\nThe text of section ${i}.\n`).join('');
    const made = await call(port, agent, 'POST', '/api/v1/sources', auth, JSON.stringify({ name: 'Headings', content }));
    const sourceId = (JSON.parse(made.text) as { source: { id: string } }).source.id;
    const pub = await call(port, agent, 'PATCH', `/api/v1/sources/${sourceId}`, auth,
      JSON.stringify({ publicDocs: { enabled: true, published: true, slug: 'coll' } }));
    if (pub.status !== 200) throw new Error(`publishing answered ${pub.status}: ${pub.text}`);
    const first = await call(port, agent, 'GET', '/docs/coll', {});
    const pages = Math.max(1, ...[...first.text.matchAll(/\?page=(\d+)/g)].map((m) => Number(m[1])));
    const conv = await call(port, agent, 'POST', '/api/v1/conversations', auth,
      JSON.stringify({ subject: 'Read me', customer: { email: 'ada@example.com' } }));
    const convId = (JSON.parse(conv.text) as { conversation: { id: string } }).conversation.id;
    const login = await call(port, agent, 'GET', '/settings/login', {});
    const cookie = [login.headers['set-cookie'] ?? []].flat().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="csrf" value="([^"]+)"/.exec(login.text)?.[1] ?? '';

    const alone = await measure(port, measured.key, convId, Math.min(10, kit.seconds));
    const cpu0 = srv.cpuSeconds();
    const worker = new Worker(ATTACKERS, { eval: true, workerData: { port, pages, cookie, csrf,
      reportsKey: reportsWs.key } });
    const reportP = new Promise<Record<string, Kind>>((res) => worker.once('message', res));
    let during: { reads: number[]; writes: number[] };
    try {
      during = await measure(port, measured.key, convId, kit.seconds);
    } finally { worker.postMessage('stop'); }
    const report = await reportP;
    await worker.terminate();
    const cpu = (srv.cpuSeconds() - cpu0) / kit.seconds;

    const ok = (xs: number[]) => p(xs, 0.99) <= TARGET_MS;
    const line = (xs: number[]) => `p50 ${ms(p(xs, 0.5))}, p99 ${ms(p(xs, 0.99))}, max ${ms(Math.max(...xs))} (${
      int(xs.length)})`;
    kit.rows.push(
      { scenario: `API reads (GET conversation), one every ${PACE_MS} ms, during the hostile traffic`,
        figure: line(during.reads), target: `p99 ≤ ${TARGET_MS} ms`, status: verdict(ok(during.reads)) },
      { scenario: 'durable writes (POST conversation, SYNC=always), beside the reads',
        figure: line(during.writes), target: `p99 ≤ ${TARGET_MS} ms`, status: verdict(ok(during.writes)) },
      { scenario: '↳ the same reads and writes without the hostile traffic', figure: `reads ${line(alone.reads)}; `
        + `writes ${line(alone.writes)}`, target: '', status: '' },
    );
    const kinds: Array<[string, string]> = [['docs', `one address viewing pages of a ${int(HEADINGS)}-heading docs `
      + `source (${pages} pages), 8 connections`], ['signIn', 'one address flooding the sign-in, 100 connections'],
    ['analytics', `one key: analytics over a year of a ${int(RECORDS)}-record workspace`],
    ['clients', '… and client list pages (10 connections in all)']];
    for (const [k, what] of kinds) {
      const r = report[k];
      if (!r) continue;
      const n = Object.values(r.statuses).reduce((a, b) => a + b, 0);
      kit.rows.push({ scenario: `↳ attacker: ${what}`, figure: `${int(n / kit.seconds)} answers/s (${Object.entries(
        r.statuses).map(([s, c]) => `${s}: ${int(c)}`).join(', ')}), ${mb1(r.bytes / kit.seconds)}/s, p50 ${ms(
        p(r.ms, 0.5))}`, target: '', status: '' });
    }
    kit.notes.push(`Hostile traffic for ${kit.seconds} s: the server used ${(cpu * 100).toFixed(0)} % of a core; `
      + 'the attackers ran on one worker thread at nice 19 in the bench process, the measured client at normal '
      + 'priority; TRUST_PROXY=127.0.0.1 gives each attacker its own address (X-Forwarded-For).');
  } finally {
    agent.destroy();
    await srv.stop();
  }
}
