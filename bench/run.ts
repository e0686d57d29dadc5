/**
 * `npm run bench` — the benchmark suite (README "Performance"). See bench/README.md.
 *
 * Starts the real server (`node dist/server.js`) on temp data dirs with seeded data and, in
 * the same run and alternating with it (A/B/A/B…), its peers answering the same records with
 * the same key check (fastify 5 and two bare `node:http` servers, bench/reads.ts); drives them
 * from a separate load-generator process (bench/load.ts); reports the median of the rounds,
 * p50/p99 latency, the server's peak RSS and the same-round ratios to the peers; prints a
 * Markdown table per benchmark and rewrites those sections of bench/RESULTS.md (bench/results.ts).
 *
 * Options: --seconds N (measurement per run, default 5), --warmup S (default 1),
 * --rounds N (A/B rounds, default 3), --connections N (default 50), --records N (start-up
 * log size, default 1,000,000), --log-level L (server LOG_LEVEL, default info),
 * --only reads,list,writes,webhooks,sources,startup,search,hostile,docs,streams,backup,cells, --quick (1 s runs, 1 round, 100,000
 * records,
 * a 200,000-chunk search index: a smoke test; writes no results file unless --out is given), --keep
 * (keep the temp dir), --out FILE (default bench/RESULTS.md), --against DIR (another build beside ours in reads, list, writes and webhooks), --receiver raw|http
 * (the webhooks receiver), --pin on|off (reads and list: servers on CPU 0, the load generator on
 * CPU 1; on by default with taskset and ≥ 2 cores), --fresh on|off (reads, list, writes and webhooks: a new process of
 * every server each round; default on), --log-rounds N (rounds of the access log's cost measured at once; default
 * --rounds), --peers fastify|none (default fastify:
 * installed outside the project by bench/peers.ts). The reads scenario is bench/reads.ts.
 */
import { fork, spawn, execFileSync, type ChildProcess } from 'node:child_process';
import * as os from 'node:os';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, useCli, makeBase, writeImportFile, importFile, liveIds, generateLog, syntheticOpenApi } from './seed.js';
import { startupHistories } from './startup-histories.js';
import { streams } from './streams.js';
import { backup } from './backup.js';
import type { Job, JobResult, GroupSpec } from './load.js';
import type { SearchReport } from './search.js';
import { median, int, ms, secs, mb, mb1, pct, verdict, log, DISTURBED, runLine, type Run } from './figures.js';
import { installFastify, pinPlan, type PeerInstall } from './peers.js';
import { CLK_TCK, statCpuSeconds, statFields } from './procStat.js';
import { reads } from './reads.js';
import { writeResults, machineLine, type Benchmark, type Row, type Section } from './results.js';
import { writes, webhooks, type WritesKit } from './writes.js';
import { hostile } from './hostile.js';
import { cells } from './cells.js';

// ---------------------------------------------------------------------------------------------
// Options

const { values: argv } = parseArgs({
  options: {
    seconds: { type: 'string' }, warmup: { type: 'string' }, rounds: { type: 'string' }, connections: { type: 'string' },
    records: { type: 'string' }, 'log-level': { type: 'string' }, only: { type: 'string' }, quick: { type: 'boolean' },
    keep: { type: 'boolean' }, out: { type: 'string' }, 'read-connections': { type: 'string' }, client: { type: 'string' },
    'cpu-prof': { type: 'string' }, pin: { type: 'string' }, fresh: { type: 'string' }, peers: { type: 'string' }, against: { type: 'string' },
    receiver: { type: 'string' }, 'log-rounds': { type: 'string' },
  },
});
const quick = argv.quick ?? false;
const num = (v: string | undefined, def: number) => (v === undefined ? def : Number(v));
const opts = {
  seconds: num(argv.seconds, quick ? 1 : 5),
  warmup: num(argv.warmup, quick ? 0.3 : 1),
  rounds: num(argv.rounds, quick ? 1 : 3),
  /** `--log-rounds N`: rounds of the access log's cost measured at once (bench/reads.ts `atOnce`); default `--rounds`. */
  logRounds: num(argv['log-rounds'], num(argv.rounds, quick ? 1 : 3)),
  connections: num(argv.connections, 50),
  readConnections: num(argv['read-connections'], 10),
  records: num(argv.records, quick ? 100_000 : 1_000_000),
  logLevel: argv['log-level'] ?? 'info',
  only: new Set((argv.only ?? 'reads,list,writes,webhooks,sources,startup,search,hostile,docs,streams,backup,cells')
    .split(',')),
  ingestions: quick ? 2 : 5,
  startRounds: quick ? 1 : 2,
  /** Where the sections are written; a --quick run writes none unless --out is given. */
  out: argv.out ?? (quick ? undefined : join(ROOT, 'bench', 'RESULTS.md')),
  /** The load generator's client for every scenario; the GET-issue comparison also runs with `raw` unless one is chosen. */
  client: (argv.client ?? 'http') as 'http' | 'raw',
  readClients: (argv.client ? [argv.client] : ['http', 'raw']) as Array<'http' | 'raw'>,
  /** `--cpu-prof DIR`: every server (ours and the peers) runs with `--cpu-prof`, one profile per thread written to DIR when it stops. */
  cpuProf: argv['cpu-prof'],
  /**
   * `--against DIR`: another build of this server (a checkout with `dist/` built, e.g. a git
   * worktree of the commit before a change) runs beside ours in the reads and list rounds,
   * alternating: the old/new comparison a change to the read path is kept or dropped by; and in
   * the writes rounds (SYNC=always, on a seed its own CLI made from the same import file) and the
   * webhooks rounds (with one endpoint, same seed rule).
   */
  against: argv.against,
  /** `--pin on|off` (default: on when taskset exists and there are ≥ 2 cores): servers on CPU 0, the load generator on CPU 1 in reads and list. */
  pin: argv.pin,
  /** `--fresh on|off` (default on): reads, list, writes and webhooks start every server again before each of its runs (bench/reads.ts `rounds`); writes and webhooks on a new copy of its starting data. */
  fresh: (argv.fresh ?? 'on') === 'on',
  /** `--peers fastify|none` (default fastify): install fastify 5 outside the project and measure it beside ours in reads and list. */
  peers: argv.peers ?? 'fastify',
  /** `--receiver raw|http` (default raw): the webhooks scenario's receiver, bench/receiver.ts or bare node:http. */
  receiver: (argv.receiver ?? 'raw') as 'raw' | 'http',
};
if (opts.pin !== undefined && !['on', 'off'].includes(opts.pin)) { console.error('--pin is on or off'); process.exit(2); }
if (argv.fresh !== undefined && !['on', 'off'].includes(argv.fresh)) { console.error('--fresh is on or off'); process.exit(2); }
if (!['fastify', 'none'].includes(opts.peers)) { console.error('--peers is fastify or none'); process.exit(2); }
if (!['http', 'raw'].includes(opts.receiver)) { console.error('--receiver is raw or http'); process.exit(2); }
if (!['http', 'raw'].includes(opts.client)) { console.error('--client is http or raw'); process.exit(2); }
if (!(Number.isInteger(opts.logRounds) && opts.logRounds >= 1)) { console.error('--log-rounds is a whole number ≥ 1'); process.exit(2); }
for (const [k, v] of Object.entries(opts)) {
  if (typeof v === 'number' && !(v > 0)) { console.error(`--${k} must be a positive number`); process.exit(2); }
}
if (opts.seconds > 60 || opts.warmup > 30) { console.error('--seconds is at most 60 and --warmup at most 30'); process.exit(2); }

/** Set to a snapshot of dist/ taken at the start, so a rebuild by someone else mid-run cannot mix builds. */
let SERVER_JS = join(ROOT, 'dist', 'server.js');
const CORPUS = join(ROOT, 'test/fixtures/corpus');
const DOCS = [
  { name: 'Adyen Management OpenAPI JSON', file: join(CORPUS, 'openapi', 'adyen-management-v3.json') },
  { name: 'OpenAI OpenAPI YAML', file: join(CORPUS, 'openapi', 'openai-openapi-2024-01.yaml') },
  { name: 'GitHub GraphQL SDL', file: join(CORPUS, 'graphql', 'github-public-schema.graphql') },
];
const SETTINGS = ['PORT', 'HOST', 'DATA_DIR', 'LOG_LEVEL', 'RATE_LIMIT_PER_MINUTE', 'RATE_LIMIT_BURST', 'SYNC', 'BOOTSTRAP',
  'SOURCE_FETCH_ALLOW_PRIVATE', 'SOURCE_FETCH_TIMEOUT_MS', 'SOURCE_FETCH_MAX_BYTES', 'SOURCE_CRAWL_MAX_PAGES', 'GITHUB_API_URL',
  'MAX_CONNECTIONS', 'HEADERS_TIMEOUT_MS', 'REQUEST_TIMEOUT_MS', 'KEEP_ALIVE_TIMEOUT_MS', 'SHUTDOWN_TIMEOUT_MS', 'NODE_OPTIONS', 'STARTUP_SNAPSHOT'];

// ---------------------------------------------------------------------------------------------
// Processes

const children = new Set<ChildProcess>();
process.on('exit', () => { for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL'); });
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(130));

function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of SETTINGS) delete env[k];
  return { ...env, ...extra };
}

/** A spawned server (ours or a peer) on 127.0.0.1. */
export class Proc {
  readonly child: ChildProcess;
  readonly spawnedAt = performance.now();
  private out = '';
  private err = '';
  private listening = false;
  private waiters: Array<() => void> = [];
  exited = false;
  port = 0;
  startMs = NaN;

  /** The read end of a FIFO the server writes its standard output to (`stdout: { fifo }`). */
  private fifo: net.Socket | null = null;
  /** Why the FIFO's read end stopped before the server did, if it did. */
  fifoFailed: string | undefined;

  /**
   * `stdout`: where the server's standard output goes. By default a `stdio: 'pipe'` this process
   * reads — which Node makes a Unix socket pair, not a pipe; `{ file }`: that file, opened for
   * appending, as with `node dist/server.js >> server.log` (the `listening` line is looked for
   * there); `{ fifo }`: a named pipe made at that path, which this process reads, as with
   * `node dist/server.js | …` (a shell pipe) or a FIFO a log collector reads.
   */
  constructor(readonly label: string, args: string[], env: Record<string, string>, stdout?: { file: string } | { fifo: string }) {
    const stdoutFile = stdout !== undefined && 'file' in stdout ? stdout.file : undefined;
    let fd = stdoutFile === undefined ? null : fs.openSync(stdoutFile, 'a');
    if (stdout !== undefined && 'fifo' in stdout) {
      fs.rmSync(stdout.fifo, { force: true });
      execFileSync('mkfifo', [stdout.fifo]);
      // The read end first, without waiting for a writer; then the write end the child gets.
      this.fifo = new net.Socket({ fd: fs.openSync(stdout.fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK), readable: true, writable: false });
      fd = fs.openSync(stdout.fifo, 'w');
    }
    // An earlier process's lines may be in the file: this one's start after them.
    const from = stdoutFile === undefined ? 0 : fs.fstatSync(fd!).size;
    try {
      this.child = spawn(process.execPath, args, { cwd: ROOT, env: cleanEnv(env), stdio: ['ignore', fd ?? 'pipe', 'pipe'] });
    } finally { if (fd !== null) fs.closeSync(fd); }
    children.add(this.child);
    if (stdoutFile !== undefined) {
      // Read until the `listening` line is there (a few lines), then never again.
      const look = setInterval(() => {
        const head = Buffer.alloc(1 << 16);
        const f = fs.openSync(stdoutFile, 'r');
        const n = (() => { try { return fs.readSync(f, head, 0, head.length, from); } finally { fs.closeSync(f); } })();
        const m = /^(\{.*"msg":"listening".*\})$/m.exec(head.toString('utf8', 0, n));
        if (m === null && !this.exited) return;
        clearInterval(look);
        if (m !== null) {
          this.startMs = performance.now() - this.spawnedAt;
          this.port = Number((JSON.parse(m[1]) as { port: number }).port);
          this.listening = true;
        }
        this.poke();
      }, 20);
    }
    // Bytes, decoded only until the "listening" line: the request logs after it are read and
    // dropped undecoded (megabytes a second in the reads rounds).
    const onOut = (chunk: Buffer): void => {
      if (this.listening) return;
      this.out += chunk.toString('utf8');
      const m = /^(\{.*"msg":"listening".*\})$/m.exec(this.out);
      if (m) {
        this.startMs = performance.now() - this.spawnedAt;
        this.port = Number((JSON.parse(m[1]) as { port: number }).port);
        this.listening = true;
        this.out = '';
      }
      this.poke();
    };
    this.child.stdout?.on('data', onOut);
    // The FIFO must be read for the server's life (a full pipe blocks its writes): a read end
    // that fails or ends early is recorded, and the scenario that reads it refuses its figures.
    this.fifo?.on('data', onOut).on('error', (e) => { this.fifoFailed ??= e.message; }).on('end', () => { if (!this.exited) this.fifoFailed ??= 'the FIFO ended before the server exited'; });
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => { this.err = (this.err + d).slice(-20000); this.poke(); });
    this.child.once('exit', () => { this.exited = true; children.delete(this.child); this.fifo?.destroy(); this.poke(); });
  }

  get pid(): number { return this.child.pid!; }
  private poke(): void { const w = this.waiters; this.waiters = []; for (const f of w) f(); }

  private waitUntil<T>(what: string, check: () => T | undefined, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.label}: timed out waiting for ${what}\n${this.err}`)), timeoutMs);
      const test = () => {
        const v = check();
        if (v !== undefined) { clearTimeout(timer); resolve(v); return; }
        if (this.exited) { clearTimeout(timer); reject(new Error(`${this.label} exited before ${what}:\n${this.out}\n${this.err}`)); return; }
        this.waiters.push(test);
      };
      test();
    });
  }

  /** Resolves once the `listening` line is out; `startMs` is spawn → that line. */
  async ready(timeoutMs = 120_000): Promise<this> {
    await this.waitUntil('the listening line', () => (this.listening ? true : undefined), timeoutMs);
    return this;
  }

  /** VmRSS and VmHWM (peak) of the process, bytes. */
  memory(): { rss: number; hwm: number } {
    try {
      const s = fs.readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN) * 1024;
      return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
    } catch { return { rss: NaN, hwm: NaN }; }
  }

  /** User + system CPU seconds so far (all threads). */
  cpuSeconds(): number { return statCpuSeconds(`/proc/${this.pid}/stat`); }
  /** Minor page faults so far (all threads): pages of new memory touched. */
  minorFaults(): number { const f = statFields(`/proc/${this.pid}/stat`); return f === null ? NaN : Number(f[7]); }
  /** CPU seconds of the process's main thread alone (the thread that answers requests). */
  mainThreadCpuSeconds(): number { return statCpuSeconds(`/proc/${this.pid}/task/${this.pid}/stat`); }


  /** The heap as seen from inside (bench/memprobe.mjs must be preloaded). */
  async heap(): Promise<{ rss: number; heapUsed: number; external: number; arrayBuffers: number }> {
    const before = this.err.length;
    this.child.kill('SIGUSR2');
    return this.waitUntil('the memory probe', () => {
      const m = /\{"benchMemory":(\{[^\n]*\})\}\n/.exec(this.err.slice(Math.max(0, before - 200)));
      return m ? JSON.parse(m[1]) : undefined;
    }, 30_000);
  }

  /** SIGTERM (graceful stop); SIGKILL after 20 s. */
  async stop(): Promise<void> {
    if (this.exited) return;
    this.child.kill('SIGTERM');
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    await this.waitUntil('the exit', () => (this.exited ? true : undefined), 30_000).catch(() => {});
    clearTimeout(killer);
  }
}

function startServer(label: string, dataDir: string, sync: 'always' | 'none', probe = false, env: Record<string, string> = {}, serverJs = SERVER_JS, stdout?: { file: string } | { fifo: string }): Proc {
  const prof = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] : [];
  const args = probe ? [...prof, '--expose-gc', '--import', join(ROOT, 'bench', 'memprobe.mjs'), serverJs] : [...prof, serverJs];
  // LOG_LEVEL=warn or error also hides the `listening` line waited for: the preload prints it.
  const quiet: Record<string, string> = ['warn', 'error'].includes(env.LOG_LEVEL ?? opts.logLevel) ? { NODE_OPTIONS: `--import "${join(ROOT, 'bench', 'listening-probe.mjs')}"` } : {};
  return new Proc(label, args, { ...quiet,
    PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, SYNC: sync, LOG_LEVEL: opts.logLevel, BOOTSTRAP: 'false',
    RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000', ...env,
  }, stdout);
}

/** The load generator, a forked child process (IPC). */
export class LoadClient {
  private readonly child = fork(join(ROOT, 'bench', 'load.ts'), [], { cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  private next = 1;
  private readonly pending = new Map<number, { resolve: (r: JobResult) => void; reject: (e: Error) => void; onMeasuring?: () => void }>();

  constructor() {
    children.add(this.child);
    this.child.on('message', (m: { id: number; measuring?: boolean; result?: JobResult; error?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      if (m.measuring) { p.onMeasuring?.(); return; }
      this.pending.delete(m.id);
      if (m.error) p.reject(new Error(`load generator: ${m.error}`)); else p.resolve(m.result!);
    });
    this.child.once('exit', (code) => {
      children.delete(this.child);
      for (const p of this.pending.values()) p.reject(new Error(`load generator exited (${code})`));
      this.pending.clear();
    });
  }

  run(job: Job, onMeasuring?: () => void): Promise<JobResult> {
    const id = this.next++;
    return new Promise((resolve, reject) => { this.pending.set(id, { resolve, reject, onMeasuring }); this.child.send({ id, job }); });
  }

  get pid(): number { return this.child.pid!; }
  close(): void { if (this.child.connected) this.child.disconnect(); }
}


/** CPU seconds the whole machine spent busy so far (/proc/stat). */
function machineBusySeconds(): number {
  try {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, , , irq, softirq, steal] = f;
    return (user + nice + system + irq + softirq + (steal ?? 0)) / CLK_TCK;
  } catch { return NaN; }
}
const selfCpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const otherLoads: number[] = [];

async function measure(load: LoadClient, target: Proc, groups: GroupSpec[], timing?: { warmupMs?: number; durationMs?: number; client?: 'http' | 'raw'; onMeasuring?: () => void }): Promise<{ runs: Record<string, Run>; result: JobResult }> {
  let cpu0 = NaN;
  let t0 = NaN;
  let busy0 = NaN;
  let self0 = NaN;
  let faults0 = NaN;
  const job: Job = { port: target.port, client: timing?.client ?? opts.client, warmupMs: timing?.warmupMs ?? opts.warmup * 1000, durationMs: timing?.durationMs ?? opts.seconds * 1000, groups };
  const result = await load.run(job, () => { cpu0 = target.cpuSeconds(); faults0 = target.minorFaults(); busy0 = machineBusySeconds(); self0 = selfCpu(); t0 = performance.now(); timing?.onMeasuring?.(); });
  const elapsed = (performance.now() - t0) / 1000;
  const serverCpu = (target.cpuSeconds() - cpu0) / elapsed;
  // Per request of the whole job (all its groups): the faults are the server's.
  const faultsPerRequest = (target.minorFaults() - faults0) / Math.max(1, result.groups.reduce((n, g) => n + g.requests, 0));
  // Everything else the machine did meanwhile (other sessions' tests…), in cores.
  const otherCpu = Math.max(0, (machineBusySeconds() - busy0) / elapsed - serverCpu - result.clientCpu - (selfCpu() - self0) / elapsed);
  otherLoads.push(otherCpu);
  const runs: Record<string, Run> = {};
  for (const g of result.groups) {
    runs[g.name] = { rps: g.rps, p50: g.latencyMs.p50, p90: g.latencyMs.p90, p99: g.latencyMs.p99, max: g.latencyMs.max, mean: g.latencyMs.mean, errors: g.errors, requests: g.requests, serverCpu, clientCpu: result.clientCpu, otherCpu, group: g, faultsPerRequest };
    if (g.errors) log(`    ! ${g.name}: ${g.errors} errors of ${g.requests}; statuses ${JSON.stringify(g.statuses)}; first: ${g.firstError}`);
  }
  return { runs, result };
}

let retriesLeft = quick ? 4 : 12;

/**
 * One A/B run; when other processes took more than {@link DISTURBED} cores meanwhile, it is
 * run once more (within a budget of retries per bench run) and the quieter of the two kept.
 */
async function abRun(load: LoadClient, target: Proc, groups: GroupSpec[], name: string, timing?: { client?: 'http' | 'raw'; warmupMs?: number; onMeasuring?: () => void }): Promise<Record<string, Run>> {
  const first = (await measure(load, target, groups, timing)).runs;
  if (first[name].otherCpu <= DISTURBED || retriesLeft <= 0) return first;
  retriesLeft--;
  detail(runLine(`(disturbed, run again) ${target.label}`, first[name]));
  const second = (await measure(load, target, groups, timing)).runs;
  return second[name].otherCpu < first[name].otherCpu ? second : first;
}

async function request(port: number, method: string, path: string, key?: string, body?: unknown): Promise<{ status: number; json: any }> {
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(data ? { 'content-type': 'application/json', 'content-length': data.length } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => { const t = Buffer.concat(chunks).toString('utf8'); resolve({ status: res.statusCode ?? 0, json: t ? JSON.parse(t) : null }); });
    });
    req.on('error', reject);
    req.end(data);
  });
}

const copyDir = (from: string, to: string) => { fs.cpSync(from, to, { recursive: true }); return to; };

// ---------------------------------------------------------------------------------------------
// Results

export type { Row };
const rows: Row[] = [];
const details: string[] = [];
const notes: string[] = [];

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now();
  const cpu = os.cpus();
  const load0 = os.loadavg();
  let source = 'unknown source state';
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean).length;
    source = `source ${head}${dirty ? ` + ${dirty} uncommitted file(s) in src/` : ''}`;
  } catch { /* not a git checkout */ }
  const startedAt = new Date().toISOString();
  const machine = `${cpu[0]?.model ?? 'unknown CPU'} × ${cpu.length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}, Node ${process.version}, ${startedAt}, load average ${load0.map((x) => x.toFixed(2)).join(' / ')} at start`;
  let wrk = false;
  try { execFileSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' }); wrk = true; } catch { wrk = false; }
  log(`# Benchmark (${quick ? 'quick smoke run' : 'full run'})`);
  log(`machine: ${machine}`);
  log(`code: ${source}; the server and CLI run from a snapshot of dist/ taken at the start`);
  log(`settings: ${opts.seconds} s measured after ${opts.warmup} s warm-up per run, ${opts.rounds} round(s), ${opts.connections} connections (reads under ingestion: ${opts.readConnections}), LOG_LEVEL=${opts.logLevel}, ${opts.fresh ? 'reads, list, writes and webhooks: every server started again each round (writes and webhooks on a new copy of their data)' : 'reads, list, writes and webhooks: one process per server for all rounds'}, start-up log ${int(opts.records)} records; load generator: bench/load.ts in a separate process, ${opts.client === 'raw' ? 'raw node:net client' : `node:http keep-alive agents${opts.readClients.includes('raw') ? ' (GET issue and the list page also with its raw node:net client)' : ''}`}${wrk ? ' (wrk is installed but not used, so every figure comes from one tool)' : ' (wrk not installed)'}`);
  // The peers of the reads comparison: fastify 5 installed outside the project, and pinning.
  const readsOn = opts.only.has('reads') || opts.only.has('list');
  const pinning = pinPlan(readsOn ? opts.pin : 'off');
  let peer: PeerInstall = { ok: false, line: 'fastify: not measured (--peers none)' };
  if (readsOn && opts.peers === 'fastify') peer = await installFastify();
  const peersLine = peer.ok ? `peers: fastify ${peer.version} (${peer.how}), bare node:http with JSON.stringify, bare node:http with ready Buffers` : `peers: ${peer.line}; bare node:http with JSON.stringify, bare node:http with ready Buffers`;
  if (readsOn) { log(peersLine); log(pinning.line); }

  const tmp = fs.mkdtempSync(join(os.tmpdir(), 'sw-bench-'));
  log(`temp dir: ${tmp}`);
  // Snapshot the build: the server and the CLI run from this copy for the whole run.
  const app = join(tmp, 'app');
  fs.cpSync(join(ROOT, 'dist'), join(app, 'dist'), { recursive: true });
  fs.writeFileSync(join(app, 'package.json'), '{"type":"module"}\n');
  SERVER_JS = join(app, 'dist', 'server.js');
  useCli(join(app, 'dist', 'cli.js'));
  const load = new LoadClient();
  try {
    // Seed: a base dir (workspace + key), and the main data set imported with the CLI.
    let t = performance.now();
    const baseDir = join(tmp, 'base');
    const { workspaceId, key } = makeBase(baseDir);
    const seedDir = copyDir(baseDir, join(tmp, 'seed'));
    const importJson = writeImportFile(tmp, 10_000, 10_000);
    const imported = importFile(seedDir, workspaceId, importJson);
    const ids = liveIds(join(seedDir, 'workspaces', `${workspaceId}.log`));
    const issueIds = [...(ids.get('issue') ?? [])];
    const convIds = [...(ids.get('conversation') ?? [])];
    log(`seeded ${JSON.stringify(imported)} in ${secs((performance.now() - t) / 1000)}`);
    const auth = { authorization: `Bearer ${key}` };
    const ctx: Ctx = { tmp, baseDir, seedDir, workspaceId, key, auth, issueIds, convIds, load, importJson, cliJs: join(app, 'dist', 'cli.js') };

    const prof = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] : [];
    const againstJs = opts.against === undefined ? undefined : join(opts.against, 'dist', 'server.js');
    const readsKit = (only: 'reads' | 'list') => ({
      opts: { ...opts, only: new Set([only]) }, pin: pinning, peer, rows, notes, abRun, copyDir, detail,
      startServer: (label: string, dataDir: string, env?: Record<string, string>, stdout?: Stdout) =>
        startServer(label, dataDir, 'always', false, env, SERVER_JS, stdout),
      newLoadClient: () => new LoadClient(),
      against: againstJs === undefined ? undefined : {
        label: opts.against!,
        start: (label: string, dataDir: string) => startServer(label, dataDir, 'always', false, {}, againstJs),
      },
      spawnPeer: (label: string, script: string, env: Record<string, string>) =>
        new Proc(label, [...prof, '--import', 'tsx', join(ROOT, 'bench', script)], { PORT: '0', ...env }),
    });
    const writesKit: WritesKit = {
      opts: { ...opts, webhooksClient: argv.client ? opts.client : 'raw' }, rows, notes, abRun, copyDir, detail,
      startServer: (label, dataDir, sync, probe, env, serverJs) => startServer(label, dataDir, sync, probe, env, serverJs),
    };
    // Each benchmark is a section of its own in RESULTS.md: reads and list run one after the other.
    const scenarios: Record<Benchmark, () => Promise<void>> = {
      reads: () => reads(ctx, readsKit('reads')), list: () => reads(ctx, readsKit('list')),
      writes: () => writes(ctx, writesKit), sources: () => sources(ctx), webhooks: () => webhooks(ctx, writesKit),
      startup: () => startup(ctx), search: () => search(), docs: () => docsPages(),
      streams: () => streams(ctx, writesKit),
      backup: () => backup(ctx, writesKit, opts.records),
      cells: () => cells(ctx, { rows, notes, detail, opts, copyDir,
        startServer: (label, dataDir, env) => startServer(label, dataDir, 'always', false, env) }),
      hostile: () => hostile({ tmp, seconds: quick ? 5 : 30, rows, notes,
        startServer: (label, dataDir, env) => startServer(label, dataDir, 'always', false, { LOG_LEVEL: 'info', ...env }) }),
    };
    for (const [bench, run] of Object.entries(scenarios) as Array<[Benchmark, () => Promise<void>]>) {
      if (opts.only.has(bench)) sections.push(await measuredSection(bench, run));
    }
  } finally {
    load.close();
    if (!argv.keep) fs.rmSync(tmp, { recursive: true, force: true });
  }

  const load1 = os.loadavg();
  const cmd = `npm run bench${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  const header = `Machine: ${machine}; ${source} (dist/ snapshotted at the start); load average ${load1.map((x) => x.toFixed(2)).join(' / ')} at the end. Command: \`${cmd}\` (${int((performance.now() - started) / 1000)} s).${readsOn ? ` Reads: ${peersLine}; ${pinning.line}.` : ''}`;
  log('\n## Results\n');
  log(header + '\n');
  const stamp = (key: string, seconds: number) => ({
    date: startedAt, commit: source.replace(/^source /, ''),
    machine: machineLine(cpu[0]?.model?.trim() ?? 'unknown CPU', cpu.length, os.totalmem(),
      `${os.type()} ${os.release()}`, process.version),
    command: `\`${cmd}\` (${int(seconds)} s)`
      + (key === 'reads' || key === 'list' ? `; ${peersLine}; ${pinning.line}` : ''),
  });
  const done: Section[] = sections.map((s) => ({ ...s, stamp: stamp(s.key, s.seconds) }));
  for (const s of done) {
    log(`### ${s.key}\n`);
    for (const r of s.rows) log(`| ${r.scenario} | ${r.figure} | ${r.target} | ${r.status} |`);
    if (s.notes.length) log(`\n${s.notes.map((n) => `- ${n}`).join('\n')}`);
    log('');
  }
  if (opts.out === undefined) { log('a --quick run: no results file written (--out FILE writes one)'); return; }
  writeResults(opts.out, done);
  log(`sections ${done.map((s) => s.key).join(', ')} written to ${opts.out}`);
}

type Stdout = { file: string } | { fifo: string };

/** A benchmark's rows, notes and run lines, cut from the run's as it ran. */
interface Measured { key: string; seconds: number; rows: Row[]; notes: string[]; runs: string[] }
const sections: Measured[] = [];

/**
 * Runs one benchmark and takes what it added to `rows`, `notes` and `details`, with a note on the
 * outside load of its own windows. A start-up run of another size than the default is a variant
 * section of its own (`startup (10,000,000 records)`), so it does not replace the default's figures.
 */
async function measuredSection(bench: Benchmark, run: () => Promise<void>): Promise<Measured> {
  const from = {
    rows: rows.length, notes: notes.length, details: details.length, loads: otherLoads.length, retries: retriesLeft,
  };
  const t0 = performance.now();
  await run();
  const others = otherLoads.slice(from.loads).sort((a, b) => a - b);
  const sectionNotes = notes.slice(from.notes);
  if (others.length) {
    const disturbed = others.filter((x) => x > DISTURBED).length;
    const budget = quick ? 4 : 12;
    sectionNotes.push(`Outside load: other processes used a median ${median(others).toFixed(2)} and up to `
      + `${others[others.length - 1].toFixed(2)} of the ${os.cpus().length} cores during the measured windows; `
      + `${disturbed} of ${others.length} windows had more than ${DISTURBED} core taken by them (\`other\` in the run `
      + `lines). A disturbed A/B run is run once more (at most ${budget} times per bench run; `
      + `${from.retries - retriesLeft} were here), and figures and ratios use the undisturbed rounds when there are any.`);
  }
  const variant = bench === 'startup' && opts.records !== 1_000_000 ? ` (${int(opts.records)} records)` : '';
  return {
    key: `${bench}${variant}`, seconds: (performance.now() - t0) / 1000,
    rows: rows.slice(from.rows), notes: sectionNotes, runs: details.slice(from.details),
  };
}

export interface Ctx {
  tmp: string; baseDir: string; seedDir: string; workspaceId: string; key: string;
  auth: Record<string, string>; issueIds: string[]; convIds: string[]; load: LoadClient;
  /** The seed's import file, and the CLI of the build measured. */
  importJson: string; cliJs: string;
}

function detail(s: string): void { details.push(s.trimStart()); log(s); }

// ---------------------------------------------------------------------------------------------
// Sources: ingestion latency, blocking seen from outside, reads under a 2 MB ingestion

async function sources(c: Ctx): Promise<void> {
  log('\n## Sources (SYNC=always)');
  const server = await startServer('server', copyDir(c.seedDir, join(c.tmp, 'sources')), 'always').ready();
  const ingestGroup = (content: string, extra: Partial<GroupSpec>): GroupSpec => ({
    name: 'ingest', connections: 1, ...extra,
    request: { method: 'POST', paths: ['/api/v1/sources'], headers: c.auth, body: 'static', staticBody: JSON.stringify({ type: 'auto', content }), capture: 'source.status' },
  });
  const probe: GroupSpec = { name: 'probe', connections: 1, request: { method: 'GET', paths: ['/healthz'] } };
  const docs = DOCS.map((d) => ({ ...d, content: fs.readFileSync(d.file, 'utf8') }));

  // Warm-up: one ingestion of each document (the worker thread's first parse is cold).
  for (const d of docs) {
    const { runs } = await measure(c.load, server, [ingestGroup(d.content, { primary: true, maxRequests: 1 }), probe], { warmupMs: 0, durationMs: 60_000 });
    detail(`    [ingest] warm-up ${d.name}: ${ms(runs.ingest.max)} (first, cold), status ${JSON.stringify(runs.ingest.group.captured)}; /healthz max ${ms(runs.probe.max)}`);
  }
  for (const d of docs) {
    const { runs } = await measure(c.load, server, [ingestGroup(d.content, { primary: true, maxRequests: opts.ingestions }), probe], { warmupMs: 0, durationMs: 60_000 });
    const ing = runs.ingest;
    const pr = runs.probe;
    const statusOk = (ing.group.captured.ready ?? 0) === ing.requests;
    detail(`    [ingest] ${d.name} (${mb1(Buffer.byteLength(d.content))}) × ${ing.requests}: median ${ms(ing.p50)}, max ${ms(ing.max)}, ${ing.rps.toFixed(2)} ingestions/s; statuses ${JSON.stringify(ing.group.captured)}; /healthz probes ${pr.requests}: p50 ${ms(pr.p50)}, p99 ${ms(pr.p99)}, max ${ms(pr.max)}; cpu server ${pct(ing.serverCpu)}`);
    rows.push({ scenario: `POST /api/v1/sources: ${d.name} (${mb1(Buffer.byteLength(d.content))}), sequential, ×${ing.requests}`,
      figure: `median ${ms(ing.p50)}, max ${ms(ing.max)} (${ing.rps.toFixed(2)}/s)${statusOk ? '' : `; statuses ${JSON.stringify(ing.group.captured)}`}`, target: '≤ 300 ms each',
      status: verdict(ing.max <= 300 && statusOk) });
    rows.push({ scenario: `↳ event-loop blocking during it: /healthz probed in a loop from outside (${int(pr.requests)} probes)`,
      figure: `max ${ms(pr.max)}, p99 ${ms(pr.p99)}, p50 ${ms(pr.p50)}`, target: '≤ 50 ms', status: verdict(pr.max <= 50) });
  }

  // Reads alone, then the same reads while a 2 MB document is ingested again and again.
  const big = syntheticOpenApi(1_990_000);
  const readers: GroupSpec = { name: 'read', connections: opts.readConnections, request: { method: 'GET', paths: c.issueIds.map((id) => `/api/v1/issues/${id}`), headers: c.auth } };
  const alone = (await measure(c.load, server, [readers])).runs.read;
  detail(runLine(`[reads, ${opts.readConnections} conns] alone`, alone));
  const dur = Math.max(opts.seconds, 3) * 1000;
  const { runs } = await measure(c.load, server, [readers, ingestGroup(big, {})], { durationMs: dur });
  const under = runs.read;
  detail(runLine(`[reads, ${opts.readConnections} conns] during 2 MB ingestions`, under));
  detail(`    [ingest 2 MB] ${runs.ingest.requests} ingestions in the window: median ${ms(runs.ingest.p50)}, max ${ms(runs.ingest.max)}; statuses ${JSON.stringify(runs.ingest.group.captured)}`);
  rows.push({ scenario: `GET issue (${opts.readConnections} conns) during back-to-back ingestions of a ${mb1(Buffer.byteLength(big))} OpenAPI JSON`,
    figure: `p99 ${ms(under.p99)} (max ${ms(under.max)}), ${int(under.rps)} req/s; without ingestion p99 ${ms(alone.p99)}, ${int(alone.rps)} req/s; ${runs.ingest.requests} ingestions, median ${ms(runs.ingest.p50)}; server peak RSS ${mb(server.memory().hwm)}`,
    target: 'p99 < 50 ms', status: verdict(under.p99 < 50 && runs.ingest.requests > 0) });
  if (runs.ingest.requests === 0) notes.push('No 2 MB ingestion completed inside the measurement window: raise --seconds.');
  await server.stop();
}

// ---------------------------------------------------------------------------------------------
// Start-up: empty, 1,000,000 live records, 1,000,000 puts over 100,000 ids before/after compaction

async function startOnce(label: string, dir: string, env: Record<string, string> = {}, timeoutMs = 180_000): Promise<{ ms: number; rss: number; heap: number; proc: Proc }> {
  const p = await startServer(label, dir, 'always', true, env).ready(timeoutMs);
  const rss = p.memory().rss; // right after the listening line
  const h = await p.heap();
  return { ms: p.startMs, rss, heap: h.heapUsed + h.arrayBuffers, proc: p };
}

async function startup(c: Ctx): Promise<void> {
  log('\n## Start-up');
  const logName = join('workspaces', `${c.workspaceId}.log`);
  const series = async (label: string, dir: string, n: number) => {
    const got = [];
    for (let i = 0; i < n; i++) {
      const s = await startOnce(label, dir);
      await s.proc.stop();
      got.push(s);
      detail(`    [start] ${label} #${i + 1}: ${secs(s.ms / 1000)} to "listening", RSS ${mb(s.rss)}, heap after GC ${mb(s.heap)}`);
    }
    return { ms: median(got.map((g) => g.ms)), rss: median(got.map((g) => g.rss)), heap: median(got.map((g) => g.heap)) };
  };
  const empty = await series('empty workspace', copyDir(c.baseDir, join(c.tmp, 'start-empty')), Math.max(opts.startRounds, 2));
  rows.push({ scenario: 'Start-up, empty workspace', figure: `${secs(empty.ms / 1000)}; RSS ${mb(empty.rss)}`, target: '—', status: '' });

  // A history of --records records, written one by one and imported with the CLI (bench/startup-histories.ts).
  const history = await startupHistories({
    tmp: c.tmp, baseDir: c.baseDir, workspaceId: c.workspaceId, records: opts.records, rounds: opts.startRounds,
    startOnce, log, detail, row: (scenario, figure, target, status) => rows.push({ scenario, figure, target, status }),
  });

  // Churned: mostly dead records; the first write makes the server compact. (At most
  // 1,000,000 puts: at 10,000,000 the histories above are the measure.)
  const puts = Math.min(opts.records, 1_000_000);
  const churnDir = copyDir(c.baseDir, join(c.tmp, 'start-churn'));
  const logFile = join(churnDir, logName);
  const liveTarget = Math.max(1000, Math.round(puts / 10));
  const gc = generateLog(logFile, puts, liveTarget);
  log(`  generated ${int(gc.records)} puts over ${int(gc.live)} ids (${mb(gc.liveJsonBytes)} of live JSON), log ${mb(gc.fileBytes)}, in ${secs(gc.seconds)}`);
  const before = await startOnce('churned log, before compaction', churnDir);
  detail(`    [start] ${int(gc.records)} puts over ${int(gc.live)} ids, before compaction: ${secs(before.ms / 1000)}, RSS ${mb(before.rss)}, heap ${mb(before.heap)}`);
  const size0 = fs.statSync(logFile).size;
  // Any committed write triggers it: create a conversation.
  const t0 = performance.now();
  const w = await request(before.proc.port, 'POST', '/api/v1/conversations', c.key, { subject: 'compaction trigger', customer: { email: 'bench@example.com' } });
  if (w.status !== 201) throw new Error(`compaction trigger: ${w.status} ${JSON.stringify(w.json)}`);
  let size1 = size0;
  while (performance.now() - t0 < 180_000) {
    size1 = fs.statSync(logFile).size;
    if (size1 < size0 / 2) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const compactMs = performance.now() - t0;
  const compacted = size1 < size0 / 2;
  detail(`    [compaction] ${compacted ? `log ${mb(size0)} → ${mb(size1)} in ${secs(compactMs / 1000)} after the first write` : `did not happen within ${secs(compactMs / 1000)} (log ${mb(size0)})`}`);
  await before.proc.stop();
  const after = await series(`after compaction (${int(gc.live)} live)`, churnDir, opts.startRounds);
  const expected = empty.ms + (history.ms - empty.ms) * (gc.live / history.records);
  rows.push({ scenario: `Start-up, ${int(gc.records)} puts over ${int(gc.live)} ids, before compaction (${mb(size0)})`, figure: `${secs(before.ms / 1000)}; RSS ${mb(before.rss)}`, target: '—', status: '' });
  rows.push({ scenario: `↳ compaction (by itself, after the first write)`, figure: compacted ? `${secs(compactMs / 1000)}; log ${mb(size0)} → ${mb(size1)}` : 'did not happen', target: 'log ∝ live data', status: verdict(compacted) });
  rows.push({ scenario: `↳ start-up after compaction (${int(gc.live)} live records)`, figure: `${secs(after.ms / 1000)}; RSS ${mb(after.rss)}, heap +${mb(after.heap - empty.heap)} for ${mb(gc.liveJsonBytes)} of live JSON`,
    target: `∝ live data (≈ ${secs(expected / 1000)} from the one-by-one history's start)`, status: verdict(after.ms <= expected * 1.5 + 100) });
  fs.rmSync(churnDir, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------
// Search: a 1,000,000-chunk BM25 index built and queried by bench/search.ts in a child process
// (its ~1.6 GiB stays out of this one), pruned scan against the exhaustive one

/** The public docs pages (bench/public-docs.ts, in a child process: a heap of its own). */
async function docsPages(): Promise<void> {
  log('\n## Public docs (bench/public-docs.ts, in a child process)');
  const child = fork(join(ROOT, 'bench', 'public-docs.ts'), quick ? ['--runs', '3', '--serves', '200'] : [], {
    cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let report: SearchReport | undefined;
  child.on('message', (m) => { report = m as SearchReport; });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (!report) throw new Error(`bench/public-docs.ts exited with ${code} without a report`);
  rows.push(...report.rows);
}

async function search(): Promise<void> {
  log('\n## Search (bench/search.ts, in a child process)');
  const args = quick ? ['--chunks', '200000', '--queries', '30', '--before', '3'] : [];
  const child = fork(join(ROOT, 'bench', 'search.ts'), args, {
    cwd: ROOT, execArgv: ['--import', 'tsx', '--expose-gc', '--max-old-space-size=8192'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let report: SearchReport | undefined;
  child.on('message', (m) => { report = m as SearchReport; });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (!report) throw new Error(`bench/search.ts exited with ${code} without a report`);
  for (const d of report.details) details.push(d);
  rows.push(...report.rows);
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
