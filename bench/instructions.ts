/**
 * Instructions per request of `GET /api/v1/issues/{id}` (or, with `--request patch`, of
 * `PATCH /api/v1/conversations/{id}` with a new subject each time: a real durable write) on a
 * server's main thread, counted by
 * valgrind's callgrind (bench/README.md, "Instruction counts"): a figure that does not move with
 * the machine's speed, for old/new decisions that the throughput rounds cannot resolve on a host
 * whose speed swings ±20 % from one second to the next.
 *
 *   node --import tsx bench/instructions.ts --seed DIR [--target ours|fastify|bare|buffer]
 *     [--log-level info|warn] [--dist DIR] [--warmup N] [--requests N] [--times K]
 *     [--request get|patch] [--endpoint] [--metrics] [--out FILE]
 *
 * `--metrics`: ours with `METRICS_PORT` set (docs/deployment.md#monitoring), for the counters' cost.
 *
 * `--out FILE`: the main thread's callgrind profile of the (last) run is kept there, for
 * `callgrind_annotate --inclusive=yes FILE` (which functions the instructions are in). JIT code
 * has no names there: with `--perf-map` the server runs with `node --perf-basic-prof` and its
 * map of JIT code (address, size, function) is kept beside, as `FILE.map`.
 *
 * `--seed DIR`: the temp dir of a reads run kept with `npm run bench -- --only reads --rounds 1
 * --keep` (its `reads/` data dir and `peer-data.json`). The server runs under callgrind with
 * instrumentation off (JIT code is still run under valgrind, ~100× slower); `--warmup` requests
 * (default 4,000) bring V8's tiers up, then instrumentation is switched on for `--requests`
 * (default 6,000) and off again; the main thread's total over those requests is divided by them.
 * The load: 50 keep-alive connections from this process (not under valgrind), random issues;
 * for `patch` (ours only, `SYNC=always`), the 20 open conversations of the seed's list page,
 * each request a new subject (the write path: validation, the log's group commit, the event).
 *
 * `--endpoint` (with `--request patch`): one webhook endpoint subscribed to every event, its
 * receiver (bench/receiver.ts) in this process answering 204, so that every PATCH also owes,
 * hands over and records one delivery: the count with it minus the count without is what a
 * delivery costs the API thread (the attempt itself is made on the delivery worker's thread, not
 * counted). Under valgrind the dispatcher's passes carry one or two deliveries each, not the
 * dozens they carry under load, so the difference is an upper bound of the per-delivery cost.
 *
 * What it cannot show: a cost paid per unit of time (the access log's time text once per
 * millisecond, its batch written every 10 ms) lands on every request here, since valgrind
 * serves ~100 requests a second; kernel time (system calls) is not counted; and an instruction
 * is not a cycle (cache misses are not seen). Another thread's work (V8's helpers) is not in
 * the main thread's count.
 */
import { spawn, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from './seed.js';
import { PEER_DIR } from './peers.js';
import { startReceiver } from './receiver.js';
import { fixedLoad, freePort } from './fixedLoad.js';

const { values: a } = parseArgs({ options: {
  seed: { type: 'string' }, target: { type: 'string' }, 'log-level': { type: 'string' }, dist: { type: 'string' },
  warmup: { type: 'string' }, requests: { type: 'string' }, times: { type: 'string' }, request: { type: 'string' }, out: { type: 'string' }, 'perf-map': { type: 'boolean' }, endpoint: { type: 'boolean' },
  metrics: { type: 'boolean' },
} });
if (!a.seed) throw new Error('--seed DIR (a reads run kept with --keep) is required');
const seed = a.seed;
const target = a.target ?? 'ours';
const level = a['log-level'] ?? 'info';
const dist = a.dist ?? join(ROOT, 'dist');
const warmup = Number(a.warmup ?? 4000);
const requests = Number(a.requests ?? 6000);
const times = Number(a.times ?? 1);
const request = a.request ?? 'get';
if (request !== 'get' && request !== 'patch') throw new Error('--request is get or patch');
if (request === 'patch' && target !== 'ours') throw new Error('--request patch measures our server only');
const endpoint = a.endpoint ?? false;
if (endpoint && request !== 'patch') throw new Error('--endpoint goes with --request patch');
const peer = JSON.parse(fs.readFileSync(join(seed, 'peer-data.json'), 'utf8')) as { key: string; issues: Record<string, unknown>; conversationsPage: { conversations: Array<{ id: string }> } };
const ids = Object.keys(peer.issues);
const convIds = peer.conversationsPage.conversations.map((c) => c.id);
let subjects = 0;
/** The next request's bytes: a random issue, or a PATCH of a conversation's subject (a new one each time). */
function nextRequest(r: number): Buffer {
  if (request === 'get') return Buffer.from(`GET /api/v1/issues/${ids[r % ids.length]} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${peer.key}\r\nAccept: application/json\r\n\r\n`);
  const body = JSON.stringify({ subject: `Subject ${++subjects}` });
  return Buffer.from(`PATCH /api/v1/conversations/${convIds[r % convIds.length]} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${peer.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

async function once(): Promise<number> {
  const port = await freePort();
  const work = fs.mkdtempSync(join(os.tmpdir(), 'sw-instructions-'));
  const out = join(work, 'callgrind.out');
  // vgdb names its pipes after HOST (and USER): callgrind_control must see the same values.
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', USER: 'bench', LOGNAME: 'bench', PORT: String(port) };
  const vg = ['--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file', '--separate-threads=yes', `--callgrind-out-file=${out}`];
  let args: string[];
  if (target === 'ours') {
    // A server killed on the seed may have left its admin socket: not copied (cpSync refuses sockets).
    fs.cpSync(join(seed, 'reads'), join(work, 'data'), { recursive: true, filter: (f) => !fs.lstatSync(f).isSocket() });
    Object.assign(env, { DATA_DIR: join(work, 'data'), LOG_LEVEL: level, SYNC: 'always', BOOTSTRAP: 'false', RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000', WEBHOOK_ALLOW_PRIVATE: 'true' });
    if (a.metrics) env.METRICS_PORT = String(await freePort());
    args = [...vg, process.execPath, ...(a['perf-map'] ? ['--perf-basic-prof'] : []), join(dist, 'server.js')];
  } else {
    Object.assign(env, { PEER_DIR, PEER_DATA: join(seed, 'peer-data.json'), BASELINE_MODE: target === 'buffer' ? 'buffer' : 'stringify' });
    args = [...vg, process.execPath, '--import', 'tsx', join(ROOT, 'bench', target === 'fastify' ? 'fastify-server.ts' : 'baseline.ts')];
  }
  // Started before the server, so that nothing is left running if it cannot start.
  const receiver = endpoint ? await startReceiver(() => null) : null;
  const child = spawn('valgrind', args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-4000); });
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  try {
    for (let i = 0; ; i++) {
      const up = await new Promise<boolean>((ok) => { const s = net.connect(port, '127.0.0.1'); s.on('connect', () => { s.destroy(); ok(true); }); s.on('error', () => ok(false)); });
      if (up) break;
      if (i > 1200 || child.exitCode !== null) throw new Error(`the server under valgrind did not listen:\n${err}`);
      await new Promise((ok) => setTimeout(ok, 100));
    }
    if (receiver !== null) {
      const made = await fetch(`http://127.0.0.1:${port}/api/v1/webhook-endpoints`, {
        method: 'POST', headers: { authorization: `Bearer ${peer.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook`, events: ['*'] }),
      });
      if (made.status !== 201) throw new Error(`creating the webhook endpoint: ${made.status} ${await made.text()}`);
    }
    await fixedLoad(port, warmup, nextRequest);
    const received0 = receiver?.stats.received ?? 0;
    const control = (state: string): void => { execFileSync('callgrind_control', ['-i', state, String(child.pid)], { env, stdio: 'ignore' }); };
    control('on');
    await fixedLoad(port, requests, nextRequest);
    control('off');
    if (receiver !== null) deliveries.push(receiver.stats.received - received0);
    child.kill('SIGTERM');
    await exited;
    // The main thread's part: `<out>-01`; `totals:` counts what ran while instrumentation was on.
    const text = fs.readFileSync(`${out}-01`, 'utf8');
    if (a.out) fs.copyFileSync(`${out}-01`, a.out);
    // Valgrind runs the program in its own process: the map is named after the child's pid.
    if (a.out && a['perf-map']) fs.renameSync(`/tmp/perf-${child.pid}.map`, `${a.out}.map`);
    const total = Number(/^totals: (\d+)/m.exec(text)?.[1]);
    if (!(total > 0)) throw new Error(`no instructions counted (callgrind_control could not reach the process?)\n${err}`);
    return total / requests;
  } finally {
    await receiver?.close();
    if (child.exitCode === null) { child.kill('SIGKILL'); await exited; }
    fs.rmSync(work, { recursive: true, force: true });
  }
}

const got: number[] = [];
/** Deliveries the receiver got while each count ran (with `--endpoint`). */
const deliveries: number[] = [];
for (let i = 0; i < times; i++) got.push(await once());
const label = `${target === 'ours' ? `ours (${dist}, LOG_LEVEL=${level}${a.metrics ? ", METRICS_PORT set" : ""})` : target}, ${request === 'get' ? 'GET issue' : `PATCH conversation (SYNC=always${endpoint ? `, one webhook endpoint: ${deliveries.map((d) => d.toLocaleString('en-US')).join(', ')} deliveries received while counting` : ''})`}`;
console.log(`${label}: ${got.map((g) => Math.round(g).toLocaleString('en-US')).join(', ')} instructions per request on the main thread (${requests.toLocaleString('en-US')} requests after ${warmup.toLocaleString('en-US')}; ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version})`);
