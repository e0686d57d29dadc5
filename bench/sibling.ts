/**
 * What a busy second core costs the API thread (bench/README.md, "A busy second core"): the
 * server's main-thread CPU per request, with the other core idle but for the load generator,
 * against the same with a pure-CPU loop filling that core's idle time. The loop shares no
 * memory, no lock and no file with the server: whatever it changes in the server's CPU per
 * request is the machine's (two hardware threads of one core, or a hypervisor), not ours.
 *
 *   node --import tsx bench/sibling.ts --seed DIR [--request patch|get] [--rounds N]
 *     [--sync always|none] [--warmup N] [--requests N] [--dist DIR]
 *
 * `--seed DIR`: the temp dir of a reads run kept with `npm run bench -- --only reads --rounds 1
 * --keep` (its `reads/` data dir and `peer-data.json`). Each round starts a new server on a new
 * copy of it, pinned to CPU 0 (`taskset`; `SYNC=always` unless `--sync none`, `LOG_LEVEL=warn`), in both modes, the
 * order swapped every round; this process (the load: 50 keep-alive connections, `PATCH` of the
 * seed's 20 open conversations with a new subject each time, or `GET` of a random issue) runs
 * on CPU 1, and in the busy mode so does a CPU loop at `nice -n 19`, which takes nearly only the
 * time the load generator leaves (CFS still gives it ~1.5 % beside a nice-0 task); it starts just
 * before the measured requests. The main thread's CPU comes from `/proc/<pid>/task/<pid>/stat`
 * over `--requests` (default 20,000) after `--warmup` (default 5,000).
 *
 * Needs Linux, `taskset` and 2 or more CPUs.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from './seed.js';
import { fixedLoad, freePort } from './fixedLoad.js';
import { statCpuSeconds } from './procStat.js';

const { values: a } = parseArgs({ options: {
  seed: { type: 'string' }, request: { type: 'string' }, sync: { type: 'string' }, rounds: { type: 'string' }, warmup: { type: 'string' }, requests: { type: 'string' }, dist: { type: 'string' },
} });
if (!a.seed) throw new Error('--seed DIR (a reads run kept with --keep) is required');
const seed = a.seed;
const request = a.request ?? 'patch';
if (request !== 'patch' && request !== 'get') throw new Error('--request is patch or get');
const sync = a.sync ?? 'always';
if (sync !== 'always' && sync !== 'none') throw new Error('--sync is always or none');
const rounds = Number(a.rounds ?? 6);
const warmup = Number(a.warmup ?? 5000);
const requests = Number(a.requests ?? 20000);
for (const [name, v] of [['rounds', rounds], ['warmup', warmup], ['requests', requests]] as const) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} is a whole number ≥ 1`);
}
const dist = a.dist ?? join(ROOT, 'dist');
if (os.cpus().length < 2) throw new Error('needs 2 or more CPUs');

const peer = JSON.parse(fs.readFileSync(join(seed, 'peer-data.json'), 'utf8')) as { key: string; issues: Record<string, unknown>; conversationsPage: { conversations: Array<{ id: string }> } };
const ids = Object.keys(peer.issues);
const convIds = peer.conversationsPage.conversations.map((c) => c.id);
let subjects = 0;
function nextRequest(r: number): string {
  if (request === 'get') return `GET /api/v1/issues/${ids[r % ids.length]} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${peer.key}\r\n\r\n`;
  const body = JSON.stringify({ subject: `Subject ${++subjects}` });
  return `PATCH /api/v1/conversations/${convIds[r % convIds.length]} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${peer.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The main thread's user + system CPU of process `pid`, ms. */
const threadCpuMs = (pid: number): number => statCpuSeconds(`/proc/${pid}/task/${pid}/stat`) * 1000;

/** The server and the CPU loop of the run in progress: killed when this process ends, however it ends (a loop left running would skew every later measurement on the machine). */
const children = new Set<ChildProcess>();
/** The data dir copies of the runs in progress: removed likewise. */
const dirs = new Set<string>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) process.on(sig, () => process.exit(code));
/** The CPU loop: spins, and looks every ~16 M turns whether its parent is still this process (its pid, the loop's argument). */
const LOOP = 'const p = Number(process.argv[1]); for (let i = 1; ; i++) if ((i & 0xffffff) === 0 && process.ppid !== p) process.exit(0);';

/** One server's run: main-thread µs of CPU per request, and requests per second. */
async function run(busy: boolean): Promise<{ us: number; rps: number }> {
  const work = fs.mkdtempSync(join(os.tmpdir(), 'sw-sibling-'));
  dirs.add(work);
  fs.cpSync(join(seed, 'reads'), join(work, 'data'), { recursive: true, filter: (f) => !fs.lstatSync(f).isSocket() });
  const port = await freePort();
  const server = spawn('taskset', ['-c', '0', process.execPath, join(dist, 'server.js')], {
    env: { PATH: process.env.PATH ?? '', DATA_DIR: join(work, 'data'), PORT: String(port), LOG_LEVEL: 'warn', SYNC: sync, BOOTSTRAP: 'false', RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(server);
  let exited = false;
  const exit = new Promise<void>((ok) => server.once('exit', () => { exited = true; ok(); }));
  let burner: ChildProcess | null = null;
  try {
    for (let i = 0; ; i++) {
      try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break; } catch { /* not yet */ }
      if (exited) throw new Error('the server exited before it answered /healthz');
      if (i > 300) throw new Error('the server did not start');
      await new Promise((ok) => setTimeout(ok, 100));
    }
    await fixedLoad(port, warmup, nextRequest);
    // The loop ends by itself when this process is gone (its parent changes), however it ended.
    if (busy) children.add(burner = spawn('taskset', ['-c', '1', 'nice', '-n', '19', process.execPath, '-e', LOOP, String(process.pid)], { stdio: 'ignore' }));
    const cpu0 = threadCpuMs(server.pid!);
    const t0 = performance.now();
    await fixedLoad(port, requests, nextRequest);
    const seconds = (performance.now() - t0) / 1000;
    return { us: ((threadCpuMs(server.pid!) - cpu0) * 1000) / requests, rps: requests / seconds };
  } finally {
    burner?.kill('SIGKILL');
    server.kill('SIGKILL');
    if (!exited) await exit;
    if (burner) children.delete(burner);
    children.delete(server);
    fs.rmSync(work, { recursive: true, force: true });
    dirs.delete(work);
  }
}

const median = (xs: number[]): number => { const s = [...xs].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

execFileSync('taskset', ['-a', '-pc', '1', String(process.pid)], { stdio: 'ignore' });
const cpus = os.cpus();
console.log(`Machine: ${cpus[0].model.trim()} × ${cpus.length}, Linux ${os.release()}, Node ${process.version}, ${new Date().toISOString()}; ${request === 'patch' ? 'PATCH conversation' : 'GET issue'} (SYNC=${sync}), ${requests} requests after ${warmup}, ${rounds} rounds`);
const ratios: number[] = [];
const quiet: number[] = [];
const busyUs: number[] = [];
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? [false, true] : [true, false];
  const got: Record<string, { us: number; rps: number }> = {};
  for (const busy of order) got[busy ? 'busy' : 'quiet'] = await run(busy);
  quiet.push(got.quiet.us);
  busyUs.push(got.busy.us);
  ratios.push(got.busy.us / got.quiet.us);
  console.log(`round ${r + 1}: main thread ${got.quiet.us.toFixed(1)} µs of CPU a request with CPU 1 idle but for the load (${got.quiet.rps.toFixed(0)}/s), ${got.busy.us.toFixed(1)} with a CPU loop filling it (${got.busy.rps.toFixed(0)}/s): ${(got.busy.us / got.quiet.us).toFixed(2)}×`);
}
console.log(`medians: ${median(quiet).toFixed(1)} against ${median(busyUs).toFixed(1)} µs a request; busy / quiet, the median of the rounds' ratios: ${median(ratios).toFixed(2)}× (rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`);
