/**
 * `npm run bench` — the benchmark suite (README "Performance"). See bench/README.md.
 *
 * Starts the real server (`node dist/server.js`) on temp data dirs with seeded data and, in
 * the same run and alternating with it (A/B/A/B…), its peers answering the same records with
 * the same key check (fastify 5 and two bare `node:http` servers, bench/reads.ts); drives them
 * from a separate load-generator process (bench/load.ts); reports the median of the rounds,
 * p50/p99 latency, the server's peak RSS and the same-round ratios to the peers; prints a
 * Markdown table and writes it to bench/results.md.
 *
 * Options: --seconds N (measurement per run, default 5), --warmup S (default 1),
 * --rounds N (A/B rounds, default 3), --connections N (default 50), --records N (start-up
 * log size, default 1,000,000), --log-level L (server LOG_LEVEL, default info),
 * --only reads,list,writes,webhooks,sources,startup,search, --quick (1 s runs, 1 round, 100,000 records,
 * a 200,000-chunk search index: a smoke test), --keep (keep the temp dir), --out FILE (default
 * bench/results.md), --against DIR (another build beside ours in reads, list, writes and webhooks), --receiver raw|http
 * (the webhooks receiver), --pin on|off (reads and list: servers on CPU 0, the load generator on
 * CPU 1; on by default with taskset and ≥ 2 cores), --fresh on|off (reads, list, writes and webhooks: a new process of
 * every server each round; default on), --peers fastify|none (default fastify:
 * installed outside the project by bench/peers.ts). The reads scenario is bench/reads.ts.
 */
import { fork, spawn, execFileSync, type ChildProcess } from 'node:child_process';
import * as os from 'node:os';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, useCli, makeBase, writeImportFile, importFile, liveIds, generateLog, syntheticOpenApi, runCli } from './seed.js';
import { startupHistories } from './startup-histories.js';
import type { Job, JobResult, GroupSpec } from './load.js';
import type { SearchReport } from './search.js';
import { median, int, ms, secs, mb, mb1, ratio, pct, verdict, log, DISTURBED, paired, quietNote, runLine, summarize, type Run } from './figures.js';
import { installFastify, pinPlan, type PeerInstall } from './peers.js';
import { reads } from './reads.js';
import { startReceiver, type ReceiverStats } from './receiver.js';

// ---------------------------------------------------------------------------------------------
// Options

const { values: argv } = parseArgs({
  options: {
    seconds: { type: 'string' }, warmup: { type: 'string' }, rounds: { type: 'string' }, connections: { type: 'string' },
    records: { type: 'string' }, 'log-level': { type: 'string' }, only: { type: 'string' }, quick: { type: 'boolean' },
    keep: { type: 'boolean' }, out: { type: 'string' }, 'read-connections': { type: 'string' }, client: { type: 'string' },
    'cpu-prof': { type: 'string' }, pin: { type: 'string' }, fresh: { type: 'string' }, peers: { type: 'string' }, against: { type: 'string' },
    receiver: { type: 'string' },
  },
});
const quick = argv.quick ?? false;
const num = (v: string | undefined, def: number) => (v === undefined ? def : Number(v));
const opts = {
  seconds: num(argv.seconds, quick ? 1 : 5),
  warmup: num(argv.warmup, quick ? 0.3 : 1),
  rounds: num(argv.rounds, quick ? 1 : 3),
  connections: num(argv.connections, 50),
  readConnections: num(argv['read-connections'], 10),
  records: num(argv.records, quick ? 100_000 : 1_000_000),
  logLevel: argv['log-level'] ?? 'info',
  only: new Set((argv.only ?? 'reads,list,writes,webhooks,sources,startup,search').split(',')),
  ingestions: quick ? 2 : 5,
  startRounds: quick ? 1 : 2,
  out: argv.out ?? join(ROOT, 'bench', 'results.md'),
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
  receiver: argv.receiver ?? 'raw',
};
if (opts.pin !== undefined && !['on', 'off'].includes(opts.pin)) { console.error('--pin is on or off'); process.exit(2); }
if (argv.fresh !== undefined && !['on', 'off'].includes(argv.fresh)) { console.error('--fresh is on or off'); process.exit(2); }
if (!['fastify', 'none'].includes(opts.peers)) { console.error('--peers is fastify or none'); process.exit(2); }
if (!['http', 'raw'].includes(opts.receiver)) { console.error('--receiver is raw or http'); process.exit(2); }
if (!['http', 'raw'].includes(opts.client)) { console.error('--client is http or raw'); process.exit(2); }
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
const CLK_TCK = (() => { try { return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100; } catch { return 100; } })();
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

  /**
   * `stdoutFile`: the server's standard output goes to that file (opened for appending), as with
   * `node dist/server.js >> server.log`, and the `listening` line is looked for there.
   */
  constructor(readonly label: string, args: string[], env: Record<string, string>, stdoutFile?: string) {
    const fd = stdoutFile === undefined ? null : fs.openSync(stdoutFile, 'a');
    // An earlier process's lines may be in the file: this one's start after them.
    const from = fd === null ? 0 : fs.fstatSync(fd).size;
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
    this.child.stdout?.on('data', (chunk: Buffer) => {
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
    });
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => { this.err = (this.err + d).slice(-20000); this.poke(); });
    this.child.once('exit', () => { this.exited = true; children.delete(this.child); this.poke(); });
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
  cpuSeconds(): number { return this.statSeconds(`/proc/${this.pid}/stat`); }
  /** CPU seconds of the process's main thread alone (the thread that answers requests). */
  mainThreadCpuSeconds(): number { return this.statSeconds(`/proc/${this.pid}/task/${this.pid}/stat`); }

  private statSeconds(file: string): number {
    try {
      const stat = fs.readFileSync(file, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(f[11]) + Number(f[12])) / CLK_TCK;
    } catch { return NaN; }
  }

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

function startServer(label: string, dataDir: string, sync: 'always' | 'none', probe = false, env: Record<string, string> = {}, serverJs = SERVER_JS, stdoutFile?: string): Proc {
  const prof = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] : [];
  const args = probe ? [...prof, '--expose-gc', '--import', join(ROOT, 'bench', 'memprobe.mjs'), serverJs] : [...prof, serverJs];
  // LOG_LEVEL=warn or error also hides the `listening` line waited for: the preload prints it.
  const quiet: Record<string, string> = ['warn', 'error'].includes(env.LOG_LEVEL ?? opts.logLevel) ? { NODE_OPTIONS: `--import "${join(ROOT, 'bench', 'listening-probe.mjs')}"` } : {};
  return new Proc(label, args, { ...quiet,
    PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, SYNC: sync, LOG_LEVEL: opts.logLevel, BOOTSTRAP: 'false',
    RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000', ...env,
  }, stdoutFile);
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
  const job: Job = { port: target.port, client: timing?.client ?? opts.client, warmupMs: timing?.warmupMs ?? opts.warmup * 1000, durationMs: timing?.durationMs ?? opts.seconds * 1000, groups };
  const result = await load.run(job, () => { cpu0 = target.cpuSeconds(); busy0 = machineBusySeconds(); self0 = selfCpu(); t0 = performance.now(); timing?.onMeasuring?.(); });
  const elapsed = (performance.now() - t0) / 1000;
  const serverCpu = (target.cpuSeconds() - cpu0) / elapsed;
  // Everything else the machine did meanwhile (other sessions' tests…), in cores.
  const otherCpu = Math.max(0, (machineBusySeconds() - busy0) / elapsed - serverCpu - result.clientCpu - (selfCpu() - self0) / elapsed);
  otherLoads.push(otherCpu);
  const runs: Record<string, Run> = {};
  for (const g of result.groups) {
    runs[g.name] = { rps: g.rps, p50: g.latencyMs.p50, p90: g.latencyMs.p90, p99: g.latencyMs.p99, max: g.latencyMs.max, mean: g.latencyMs.mean, errors: g.errors, requests: g.requests, serverCpu, clientCpu: result.clientCpu, otherCpu, group: g };
    if (g.errors) log(`    ! ${g.name}: ${g.errors} errors of ${g.requests}; statuses ${JSON.stringify(g.statuses)}; first: ${g.firstError}`);
  }
  return { runs, result };
}

let retriesLeft = quick ? 4 : 12;

/**
 * One A/B run; when other processes took more than {@link DISTURBED} cores meanwhile, it is
 * run once more (within a budget of retries per bench run) and the quieter of the two kept.
 */
async function abRun(load: LoadClient, target: Proc, groups: GroupSpec[], name: string, timing?: { client?: 'http' | 'raw'; onMeasuring?: () => void }): Promise<Record<string, Run>> {
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
/**
 * `dir` as a new copy of `base` — at a server's first start, and at every start with `--fresh on`
 * (the writes and webhooks rounds): each run then begins from the same data, not from the log
 * and heap the runs before it grew (bench/README.md "Write rounds start from the same data").
 */
const fromBase = (base: string, dir: string): string => {
  if (!fs.existsSync(dir) || opts.fresh) { fs.rmSync(dir, { recursive: true, force: true }); copyDir(base, dir); }
  return dir;
};

// ---------------------------------------------------------------------------------------------
// Results

export interface Row { scenario: string; figure: string; target: string; status: string }
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
  const machine = `${cpu[0]?.model ?? 'unknown CPU'} × ${cpu.length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}, Node ${process.version}, ${new Date().toISOString()}, load average ${load0.map((x) => x.toFixed(2)).join(' / ')} at start`;
  let wrk = false;
  try { execFileSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' }); wrk = true; } catch { wrk = false; }
  log(`# Benchmark (${quick ? 'quick smoke run' : 'full run'})`);
  log(`machine: ${machine}`);
  log(`code: ${source}; the server and CLI run from a snapshot of dist/ taken at the start`);
  log(`settings: ${opts.seconds} s measured after ${opts.warmup} s warm-up per run, ${opts.rounds} round(s), ${opts.connections} connections (reads under ingestion: ${opts.readConnections}), LOG_LEVEL=${opts.logLevel}, ${opts.fresh ? 'reads, list, writes and webhooks: every server started again each round (writes and webhooks on a new copy of their data)' : 'reads, list, writes and webhooks: one process per server for all rounds'}, start-up log ${int(opts.records)} records; load generator: bench/load.ts in a separate process, ${opts.client === 'raw' ? 'raw node:net client' : `node:http keep-alive agents${opts.readClients.includes('raw') ? ' (GET issue also with its raw node:net client)' : ''}`}${wrk ? ' (wrk is installed but not used, so every figure comes from one tool)' : ' (wrk not installed)'}`);
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

    if (readsOn) {
      await reads(ctx, {
        opts, pin: pinning, peer, rows, notes, abRun, copyDir, detail,
        startServer: (label, dataDir, env, stdoutFile) => startServer(label, dataDir, 'always', false, env, SERVER_JS, stdoutFile),
        against: opts.against === undefined ? undefined : { label: opts.against, start: (label, dataDir) => startServer(label, dataDir, 'always', false, {}, join(opts.against!, 'dist', 'server.js')) },
        spawnPeer: (label, script, env) => new Proc(label, [...(opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] : []), '--import', 'tsx', join(ROOT, 'bench', script)], { PORT: '0', ...env }),
      });
    }
    if (opts.only.has('writes')) await writes(ctx);
    if (opts.only.has('sources')) await sources(ctx);
    if (opts.only.has('webhooks')) await webhooks(ctx);
    if (opts.only.has('startup')) await startup(ctx);
    if (opts.only.has('search')) await search();
  } finally {
    load.close();
    if (!argv.keep) fs.rmSync(tmp, { recursive: true, force: true });
  }

  const load1 = os.loadavg();
  const others = otherLoads.slice().sort((a, b) => a - b);
  if (others.length) {
    const disturbed = others.filter((x) => x > 0.25).length;
    notes.push(`Outside load: other processes used a median ${median(others).toFixed(2)} and up to ${others[others.length - 1].toFixed(2)} of the ${cpu.length} cores during the measured windows; ${disturbed} of ${others.length} windows had more than 0.25 core taken by them (\`other\` in the run lines). Such runs measure the machine, not the server: a disturbed A/B run is run once more (at most ${quick ? 4 : 12} times per bench run; ${(quick ? 4 : 12) - retriesLeft} were), and figures and ratios use the undisturbed rounds when there are any.`);
  }
  const table = [
    '| scenario | figure (median of the undisturbed rounds) | target | ratio (median of same-round ratios) / status |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.scenario} | ${r.figure} | ${r.target} | ${r.status} |`),
  ].join('\n');
  const cmd = `npm run bench${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  const header = `Machine: ${machine}; ${source} (dist/ snapshotted at the start); load average ${load1.map((x) => x.toFixed(2)).join(' / ')} at the end. Command: \`${cmd}\` (${int((performance.now() - started) / 1000)} s).${readsOn ? ` Reads: ${peersLine}; ${pinning.line}.` : ''}`;
  log('\n## Results\n');
  log(header + '\n');
  log(table);
  if (notes.length) log(`\n${notes.map((n) => `- ${n}`).join('\n')}`);
  const md = [
    '# Benchmark results', '',
    'Written by `npm run bench` (bench/run.ts); the latest run replaces this file.', '',
    header, '',
    table, '',
    ...(notes.length ? ['Notes:', '', ...notes.map((n) => `- ${n}`), ''] : []),
    '## Runs', '',
    'Every measured run, in the order it ran (A/B alternation); `cpu` is the share of one core over the window (server: all its threads; client: the load generator); `other` is what the rest of the machine (other processes) used meanwhile, in cores.', '',
    '```', ...details, '```', '',
  ].join('\n');
  fs.writeFileSync(opts.out, md);
  log(`\nwritten to ${opts.out}`);
}

export interface Ctx {
  tmp: string; baseDir: string; seedDir: string; workspaceId: string; key: string;
  auth: Record<string, string>; issueIds: string[]; convIds: string[]; load: LoadClient;
  /** The seed's import file, and the CLI of the build measured. */
  importJson: string; cliJs: string;
}

function detail(s: string): void { details.push(s.trimStart()); log(s); }

// ---------------------------------------------------------------------------------------------
// Writes: PATCH /api/v1/conversations/{id} and POST …/messages, SYNC=always vs SYNC=none

/**
 * With `--against DIR`: the other build's own seed — the same import file through its own CLI
 * (its log format: a build from before frames cannot read ours, while ours reads its) — and its
 * workspace's key and conversation ids.
 */
function seedOther(c: Ctx, dir: string): { seedDir: string; auth: Record<string, string>; convIds: string[] } {
  useCli(join(dir, 'dist', 'cli.js'));
  try {
    const seedDir = join(c.tmp, 'seed-against');
    const { workspaceId, key } = makeBase(seedDir);
    importFile(seedDir, workspaceId, c.importJson);
    const convIds = [...(liveIds(join(seedDir, 'workspaces', `${workspaceId}.log`)).get('conversation') ?? [])];
    runCli(seedDir, ['compact', '--workspace', workspaceId]);
    return { seedDir, auth: { authorization: `Bearer ${key}` }, convIds };
  } finally { useCli(c.cliJs); }
}

/**
 * The seed as the write rounds start from it (writes, webhooks), made once: a copy, compacted
 * with the CLI, so its log ends in a snapshot block as the log of a server that has run for a
 * while does. A log fresh from an import has none, and the first writes on it start a compaction
 * (docs/storage.md#compaction), which would then fall in every run's first seconds
 * (bench/README.md "Write rounds start from the same data").
 */
function writeSeed(c: Ctx): string {
  const dir = join(c.tmp, 'seed-compacted');
  if (!fs.existsSync(dir)) { copyDir(c.seedDir, dir); runCli(dir, ['compact', '--workspace', c.workspaceId]); }
  return dir;
}

async function writes(c: Ctx): Promise<void> {
  log(`\n## Writes${opts.against ? ` (and the other build, --against ${opts.against}, SYNC=always)` : ''}`);
  // With `--fresh on` (the default) every run has a new process on a new copy of the seed, as in
  // the webhooks rounds (bench/README.md "Write rounds start from the same data").
  const other = opts.against === undefined ? undefined : seedOther(c, opts.against);
  type Target = { label: string; p: Proc; start: () => Proc; auth: Record<string, string>; convIds: string[] };
  const target = (label: string, sync: 'always' | 'none', seedDir: string, dir: string, ids: { auth: Record<string, string>; convIds: string[] }, serverJs?: string): Target => {
    const start = (): Proc => startServer(label === 'other build' ? 'other build SYNC=always' : `server ${label}`, fromBase(seedDir, join(c.tmp, dir)), sync, false, {}, serverJs);
    return { label, p: start(), start, ...ids };
  };
  const targets: Target[] = [
    target('SYNC=always', 'always', writeSeed(c), 'w-always', c), target('SYNC=none', 'none', writeSeed(c), 'w-none', c),
    ...(other ? [target('other build', 'always', other.seedDir, 'w-against', other, join(opts.against!, 'dist', 'server.js'))] : []),
  ];
  await Promise.all(targets.map((t) => t.p.ready()));
  const peakRss: Record<string, number> = {};
  const renew = async (t: Target): Promise<void> => {
    peakRss[t.label] = Math.max(peakRss[t.label] ?? 0, t.p.memory().hwm);
    await t.p.stop();
    t.p = await t.start().ready();
  };
  const rssOf = (t: Target): number => Math.max(peakRss[t.label] ?? 0, t.p.memory().hwm);
  const scenarios = [
    { name: 'PATCH /api/v1/conversations/{id}', short: 'PATCH', request: (t: { auth: Record<string, string>; convIds: string[] }) => ({ method: 'PATCH' as const, paths: t.convIds.map((id) => `/api/v1/conversations/${id}`), headers: t.auth, body: 'patchSubject' as const }) },
    { name: 'POST /api/v1/conversations/{id}/messages', short: 'POST message', request: (t: { auth: Record<string, string>; convIds: string[] }) => ({ method: 'POST' as const, paths: t.convIds.map((id) => `/api/v1/conversations/${id}/messages`), headers: t.auth, body: 'message' as const }) },
  ];
  for (const sc of scenarios) {
    log(`  ${sc.name}, random over ${c.convIds.length} conversations, ${opts.connections} connections`);
    const got: Record<string, Run[]> = {};
    for (let r = 0; r < opts.rounds; r++) {
      for (let k = 0; k < targets.length; k++) {
        const t = targets[(k + r) % targets.length];
        if (opts.fresh) await renew(t);
        const runs = await abRun(c.load, t.p, [{ name: 'write', connections: opts.connections, request: sc.request(t) }], 'write');
        (got[t.label] ??= []).push(runs.write);
        detail(runLine(`[${sc.short}] round ${r + 1} ${t.label}`, runs.write));
      }
    }
    const a = summarize(got['SYNC=always']);
    const n = summarize(got['SYNC=none']);
    const ab = paired(got['SYNC=always'], got['SYNC=none']);
    const ok = ab >= 0.8 && a.rps >= 10_000;
    rows.push({ scenario: `${sc.name}, ${opts.connections} conns, SYNC=always`, figure: `${int(a.rps)} writes/s, p50 ${ms(a.p50)}, p99 ${ms(a.p99)}; server peak RSS ${mb(rssOf(targets[0]))}`,
      target: '≥ 0.8× SYNC=none and ≥ 10,000 writes/s', status: `${ratio(ab)} of SYNC=none${quietNote(got['SYNC=always'], got['SYNC=none'])} ${verdict(ok)}` });
    rows.push({ scenario: `↳ same, SYNC=none`, figure: `${int(n.rps)} writes/s, p50 ${ms(n.p50)}, p99 ${ms(n.p99)}; server peak RSS ${mb(rssOf(targets[1]))}`, target: 'reference', status: '1.00×' });
    if (other) {
      const o = summarize(got['other build']);
      const vs = paired(got['SYNC=always'], got['other build']);
      rows.push({ scenario: `↳ the other build (--against ${opts.against}), SYNC=always, its own seed of the same import`, figure: `${int(o.rps)} writes/s, p50 ${ms(o.p50)}, p99 ${ms(o.p99)}; server peak RSS ${mb(rssOf(targets[2]))}`,
        target: 'ours ≥ 0.95× of it', status: `ours ${ratio(vs)} of it${quietNote(got['SYNC=always'], got['other build'])} ${verdict(vs >= 0.95)}` });
    }
  }
  await Promise.all(targets.map((t) => t.p.stop()));
}

/** The pending deliveries of endpoint `id` on `p`, counted over at most `pages` pages of 100 (so ≥ 100 × pages means "at least"). */
async function pendingDeliveries(p: Proc, auth: Record<string, string>, id: string, pages = 50): Promise<number> {
  let n = 0;
  let cursor: string | null = null;
  for (let i = 0; i < pages; i++) {
    const q: string = `status=pending&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await fetch(`http://127.0.0.1:${p.port}/api/v1/webhook-endpoints/${id}/deliveries?${q}`, { headers: auth });
    const page = (await res.json()) as { deliveries: unknown[]; nextCursor: string | null };
    n += page.deliveries.length;
    cursor = page.nextCursor;
    if (!cursor) break;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Webhooks: durable writes with one subscribed endpoint vs none; do deliveries keep up?

async function webhooks(c: Ctx): Promise<void> {
  // The load generator's raw node:net client unless one is chosen: at these rates node:http's
  // client takes ~0.4 of the 2 cores, and with an endpoint the receiver needs a share of them
  // too; the cheaper client leaves the cores to the server (both sides of the pair alike).
  const client = argv.client ? opts.client : 'raw';
  log(`\n## Webhooks (SYNC=always; load generator client: ${client}; receiver: ${opts.receiver})`);
  // The receiver, in this process, answering 204 to every delivery: bench/receiver.ts (raw
  // node:net, a sample of signatures checked) unless `--receiver http` (bare node:http).
  const secrets: string[] = [];
  let httpReceived = 0;
  let receiver: { port: number; stats: ReceiverStats | null; close(): Promise<void> };
  if (opts.receiver === 'raw') receiver = await startReceiver(() => (secrets.length === 0 ? null : secrets));
  else {
    const srv = http.createServer((req, res) => { req.resume(); req.on('end', () => { httpReceived++; res.writeHead(204).end(); }); });
    await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
    receiver = { port: (srv.address() as { port: number }).port, stats: null, close: () => new Promise<void>((ok) => srv.close(() => ok())) };
  }
  const receivedSoFar = (): number => receiver.stats?.received ?? httpReceived;
  const hookUrl = `http://127.0.0.1:${receiver.port}/hook`;
  const env = { WEBHOOK_ALLOW_PRIVATE: 'true' };
  const subscribe = async (p: Proc, auth: Record<string, string>): Promise<string> => {
    const made = await fetch(`http://127.0.0.1:${p.port}/api/v1/webhook-endpoints`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ url: hookUrl, events: ['*'] }),
    });
    if (made.status !== 201) throw new Error(`creating the webhook endpoint on ${p.label}: ${made.status} ${await made.text()}`);
    const body = (await made.json()) as { webhookEndpoint: { id: string; secret: string } };
    secrets.push(body.webhookEndpoint.secret);
    return body.webhookEndpoint.id;
  };
  // Each server's starting data: the seed, with the endpoint subscribed for those that have one
  // (written durably: SYNC=always answers 201 once it is on disk). With `--fresh on` every run
  // starts from a new copy of it, so the rounds are alike: otherwise each run's writes grow the
  // next one's log and heap, and a compaction falls in some windows and not others
  // (bench/README.md "Write rounds start from the same data").
  const subscribed = async (label: string, seedDir: string, dir: string, auth: Record<string, string>, serverJs?: string): Promise<string> => {
    const p = await startServer(label, copyDir(seedDir, dir), 'always', false, env, serverJs).ready();
    try { return await subscribe(p, auth); } finally { await p.stop(); }
  };
  const onBase = join(c.tmp, 'wh-on-base');
  const endpointId = await subscribed('server, 1 endpoint (subscribing)', writeSeed(c), onBase, c.auth);
  // `--against DIR`: the other build with one endpoint too, on a seed its own CLI made.
  const otherSeed = opts.against === undefined ? undefined : seedOther(c, opts.against);
  const otherJs = opts.against === undefined ? undefined : join(opts.against, 'dist', 'server.js');
  const otherBase = join(c.tmp, 'wh-against-base');
  const otherEndpointId = otherSeed && await subscribed('other build, 1 endpoint (subscribing)', otherSeed.seedDir, otherBase, otherSeed.auth, otherJs);
  const onDir = join(c.tmp, 'wh-on');
  const offDir = join(c.tmp, 'wh-off');
  const otherDir = join(c.tmp, 'wh-against');
  const startOn = (): Proc => startServer('server, 1 endpoint', fromBase(onBase, onDir), 'always', false, env);
  const startOff = (): Proc => startServer('server, no endpoint', fromBase(writeSeed(c), offDir), 'always', false, env);
  const startOther = (): Proc => startServer('other build, 1 endpoint', fromBase(otherBase, otherDir), 'always', false, env, otherJs);
  const hooked = startOn();
  const plain = startOff();
  const otherHooked = otherSeed && startOther();
  await Promise.all([hooked.ready(), plain.ready(), otherHooked?.ready()]);
  type Target = { key: 'on' | 'off' | 'other'; p: Proc; start: () => Proc; auth: Record<string, string>; convIds: string[]; endpointId?: string };
  const targets: Target[] = [
    { key: 'on', p: hooked, start: startOn, auth: c.auth, convIds: c.convIds, endpointId },
    { key: 'off', p: plain, start: startOff, auth: c.auth, convIds: c.convIds },
  ];
  if (otherHooked && otherSeed) targets.push({ key: 'other', p: otherHooked, start: startOther, auth: otherSeed.auth, convIds: otherSeed.convIds, endpointId: otherEndpointId });
  // `--fresh on` (the default): every server is started again before each of its runs, as in
  // reads and list (bench/README.md "A fresh process per run"), on a new copy of its starting
  // data (the deliveries of the run before were all received: each run waits for its backlog).
  const peakRss: Record<string, number> = {};
  const renew = async (t: Target): Promise<void> => {
    peakRss[t.key] = Math.max(peakRss[t.key] ?? 0, t.p.memory().hwm);
    await t.p.stop();
    t.p = await t.start().ready();
  };
  const got: Record<string, Run[]> = {};
  const deliveries: Array<{ rate: number; writes: number; backlog: number; drainS: number }> = [];
  const mainCpu: Record<string, number[]> = {};
  for (let r = 0; r < opts.rounds; r++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(k + r) % targets.length];
      if (opts.fresh) await renew(t);
      const p = t.p;
      const request = { method: 'PATCH' as const, paths: t.convIds.map((id) => `/api/v1/conversations/${id}`), headers: t.auth, body: 'patchSubject' as const };
      // Deliveries are counted over the measured window, as the writes are (warm-up left out).
      let before = receivedSoFar();
      let main0 = NaN;
      const runs = await abRun(c.load, p, [{ name: 'write', connections: opts.connections, request }], 'write',
        { client, onMeasuring: () => { before = receivedSoFar(); main0 = p.mainThreadCpuSeconds(); } });
      // The window's length: the deliveries counted since it began include those owed for its
      // writes that arrived just after it (the answer's way back to this process takes a moment).
      const seconds = opts.seconds;
      // The API thread's own CPU per write: what an endpoint adds to it, whatever else ran.
      const mainUs = ((p.mainThreadCpuSeconds() - main0) / (runs.write.rps * seconds)) * 1e6;
      (mainCpu[t.key] ??= []).push(mainUs);
      (got[t.key] ??= []).push(runs.write);
      detail(`${runLine(`[webhooks] round ${r + 1} ${p.label}`, runs.write)}   main thread ${mainUs.toFixed(0)} µs CPU/write`);
      if (t.endpointId === undefined) continue;
      // Each PATCH made one conversation.updated event, owed to the endpoint: the pending
      // deliveries left when the load stops are the backlog, then they drain.
      const rate = (receivedSoFar() - before) / seconds;
      const backlog = await pendingDeliveries(p, t.auth, t.endpointId);
      const t1 = performance.now();
      let left = backlog;
      while (left > 0 && performance.now() - t1 < 60_000) { await new Promise((ok) => setTimeout(ok, 50)); left = await pendingDeliveries(p, t.auth, t.endpointId, 1); }
      const drainS = (performance.now() - t1) / 1000;
      if (t.key === 'on') deliveries.push({ rate, writes: runs.write.rps, backlog, drainS });
      detail(`    [webhooks] round ${r + 1} ${p.label}: ${int(rate)} deliveries/s during the measured window; ${backlog >= 5000 ? '≥ 5,000' : int(backlog)} pending when it ended, ${left === 0 ? `none left ${drainS.toFixed(2)} s later` : 'STILL PENDING after 60 s'}`);
    }
  }
  const on = summarize(got.on);
  const off = summarize(got.off);
  const ratio_ = paired(got.on, got.off);
  const rate = median(deliveries.map((d) => d.rate));
  // Same window, same run: deliveries per write. Those in flight when the window closes are
  // counted in the next one, so "keeps up" allows 5 % and asks that the backlog drains in 5 s.
  const perWrite = median(deliveries.map((d) => d.rate / d.writes));
  const keepsUp = perWrite >= 0.95 && deliveries.every((d) => d.drainS < 5);
  rows.push({ scenario: `PATCH /api/v1/conversations/{id}, ${opts.connections} conns, SYNC=always, one webhook endpoint subscribed to every event (a local receiver answering 204, ${opts.receiver === 'raw' ? 'bench/receiver.ts' : 'node:http'}); ${client} load client`,
    figure: `${int(on.rps)} writes/s, p50 ${ms(on.p50)}, p99 ${ms(on.p99)}; server peak RSS ${mb(Math.max(peakRss.on ?? 0, targets[0].p.memory().hwm))}; API thread ${median(mainCpu.on).toFixed(0)} µs of CPU per write (no endpoint: ${median(mainCpu.off).toFixed(0)} µs)`,
    target: '≥ 0.8× without an endpoint', status: `${ratio(ratio_)} of no endpoint${quietNote(got.on, got.off)} ${verdict(ratio_ >= 0.8)}` });
  rows.push({ scenario: '↳ same, no endpoint', figure: `${int(off.rps)} writes/s, p50 ${ms(off.p50)}, p99 ${ms(off.p99)}`, target: 'reference', status: '1.00×' });
  rows.push({ scenario: '↳ deliveries (one per write)', figure: `${int(rate)} deliveries/s during the measured windows (median); owed at the end of a run ${deliveries.map((d) => int(d.backlog)).join(', ')}, all received within ${Math.max(...deliveries.map((d) => d.drainS)).toFixed(2)} s`,
    target: 'deliveries/s ≥ writes/s', status: `${ratio(perWrite)} of the same window's writes ${verdict(keepsUp)}` });
  if (otherHooked) {
    const o = summarize(got.other);
    const vs = paired(got.on, got.other);
    rows.push({ scenario: `↳ the other build with one endpoint (--against ${opts.against}), its own seed of the same import`, figure: `${int(o.rps)} writes/s, p50 ${ms(o.p50)}, p99 ${ms(o.p99)}; API thread ${median(mainCpu.other).toFixed(0)} µs of CPU per write`,
      target: '(new/old)', status: `ours ${ratio(vs)} of it${quietNote(got.on, got.other)}` });
  }
  await Promise.all(targets.map((t) => t.p.stop()));
  await receiver.close();
  const st = receiver.stats;
  if (st !== null) {
    detail(`    [webhooks] receiver: ${int(st.received)} deliveries; ${int(st.checked)} signatures checked (one in 64), ${st.badSignatures} wrong; ${st.framingErrors} framing errors`);
    if (st.badSignatures > 0 || st.framingErrors > 0) notes.push(`The webhooks receiver saw ${st.badSignatures} wrong signatures and ${st.framingErrors} framing errors.`);
  }
}

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
