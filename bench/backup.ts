/**
 * `npm run bench -- --only backup` (docs/storage.md#backup): a data dir seeded with `--records` records (default
 * 1,000,000, written directly as bench/seed.ts does for start-up), the server on it (SYNC=always), 1,000 durable writes
 * a second sent open-loop (`POST /api/v1/issues`, each at its time whatever the answers), and `cli backup --to DIR`
 * taken during that load. Prints the backup's duration and size, and the writes' p99 before and during the backup.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import { join } from 'node:path';
import { generateLog } from './seed.js';
import { int, ms, mb, secs, log } from './figures.js';
import type { Ctx, Row } from './run.js';
import type { WritesKit } from './writes.js';

/** Durable writes sent a second, open-loop. */
const RATE = 1000;
/** Seconds of load before the backup starts (the first 2 s not measured: warm-up) and after it ends. */
const BEFORE_S = 20;
const WARMUP_S = 10;
const AFTER_S = 3;
/** Seeding slower than this is cut short (the brief's bound: a 1M-record seed within 10 minutes). */
const MAX_SEED_S = 600;

/** One write: when it was sent (ms since the load began), how long its answer took (ms), its status (0: error). */
interface Sent { at: number; ms: number; status: number }

/** The `q` quantile of `xs` (nearest rank), NaN for none. */
function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
}

/** Sends RATE writes a second to `port` until {@link stop}: each on its schedule, over keep-alive connections. */
class OpenLoop {
  readonly sent: Sent[] = [];
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  private readonly t0 = performance.now();
  private count = 0;
  private readonly timer: NodeJS.Timeout;
  private inFlight = 0;

  constructor(private readonly port: number, private readonly auth: Record<string, string>) {
    this.timer = setInterval(() => this.tick(), 2);
  }

  /** ms since the load began. */
  now(): number { return performance.now() - this.t0; }

  private tick(): void {
    const due = Math.floor(this.now() * RATE / 1000);
    for (; this.count < due; this.count++) this.send(this.count * 1000 / RATE);
  }

  private send(at: number): void {
    const body = JSON.stringify({ subject: `backup load ${this.count}` });
    const start = performance.now();
    this.inFlight++;
    const done = (status: number) => {
      this.inFlight--;
      this.sent.push({ at, ms: performance.now() - start, status });
    };
    const req = http.request({ host: '127.0.0.1', port: this.port, method: 'POST', path: '/api/v1/issues',
      agent: this.agent, headers: { ...this.auth, 'content-type': 'application/json',
        'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
    });
    req.on('error', () => done(0));
    req.end(body);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    while (this.inFlight > 0) await new Promise((r) => setTimeout(r, 10));
    this.agent.destroy();
  }
}

/** Runs `node cli.js backup --to to --data-dir dataDir` without blocking this event loop; returns its JSON answer. */
function runBackup(cliJs: string, dataDir: string, to: string): Promise<{ files: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [cliJs, 'backup', '--to', to, '--data-dir', dataDir],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'warn' } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => { out += d; });
    p.stderr.on('data', (d: Buffer) => { err += d; });
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`cli backup: ${code} ${err}`))));
  });
}

/** The bytes of every file under `dir`. */
function duBytes(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += fs.statSync(join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).size;
  }
  return n;
}

/** The backup benchmark; its rows go to `kit.rows`. */
export async function backup(c: Ctx, kit: Pick<WritesKit, 'rows' | 'notes' | 'copyDir' | 'detail' | 'startServer'>,
  records: number): Promise<void> {
  log('\n## Backup under load (SYNC=always)');
  const dir = kit.copyDir(c.baseDir, join(c.tmp, 'backup-data'));
  const logFile = join(dir, 'workspaces', `${c.workspaceId}.log`);
  const seeded = generateLog(logFile, records, records);
  const rate = seeded.records / seeded.seconds;
  log(`  seeded ${int(seeded.records)} records (log ${mb(seeded.fileBytes)}) in ${secs(seeded.seconds)}: ` +
    `${int(rate)} records/s`);
  if (seeded.seconds > MAX_SEED_S) kit.notes.push(`Seeding ran ${secs(seeded.seconds)} (${int(rate)} records/s).`);
  const load0 = os.loadavg();
  const t0 = performance.now();
  const server = await kit.startServer('backup', dir, 'always').ready(600_000);
  const startS = (performance.now() - t0) / 1000;
  // The first write makes the server compact the seeded log (it has no snapshot block yet): let that end first, so
  // that the figures are those of a server in its steady state. Compaction replaces the file (a new inode).
  const ino = fs.statSync(logFile).ino;
  const first = await fetch(`http://127.0.0.1:${server.port}/api/v1/issues`, { method: 'POST',
    headers: { ...c.auth, 'content-type': 'application/json' }, body: JSON.stringify({ subject: 'first' }) });
  if (first.status !== 201) throw new Error(`first write: ${first.status} ${await first.text()}`);
  const c0 = performance.now();
  while (fs.statSync(logFile).ino === ino && performance.now() - c0 < 300_000) await new Promise((r) => setTimeout(r, 50));
  const compactS = (performance.now() - c0) / 1000;
  const load = new OpenLoop(server.port, c.auth);
  const rows: Row[] = kit.rows;
  try {
    await new Promise((r) => setTimeout(r, BEFORE_S * 1000));
    const to = join(c.tmp, 'backup-copy');
    const b0 = load.now();
    const answer = await runBackup(c.cliJs, dir, to);
    const b1 = load.now();
    await new Promise((r) => setTimeout(r, AFTER_S * 1000));
    await load.stop();
    const size = duBytes(to);
    const window = (from: number, until: number) => load.sent.filter((s) => s.at >= from && s.at < until);
    const before = window(WARMUP_S * 1000, b0);
    const during = window(b0, b1);
    const bad = load.sent.filter((s) => s.status !== 201).length;
    // Second by second (by when each write was sent): where a stall is, and whether the backup is in it.
    for (let t = 0; t * 1000 < load.now(); t++) {
      const w = window(t * 1000, (t + 1) * 1000).map((s) => s.ms);
      const mark = t * 1000 < b0 ? (t < WARMUP_S ? 'warm-up' : 'before') : t * 1000 < b1 ? 'backup' : 'after';
      kit.detail(`    [backup] second ${String(t + 1).padStart(3)} ${mark.padEnd(7)} ${int(w.length)} writes sent, ` +
        `p50 ${ms(quantile(w, 0.5))}, p99 ${ms(quantile(w, 0.99))}`);
    }
    const describe = (w: Sent[], span: number) => `p50 ${ms(quantile(w.map((s) => s.ms), 0.5))}, p99 ` +
      `${ms(quantile(w.map((s) => s.ms), 0.99))}, max ${ms(quantile(w.map((s) => s.ms), 1))} ` +
      `(${int(w.length)} writes, ${int(w.length / (span / 1000))}/s)`;
    kit.detail(`    [backup] seeded ${int(seeded.records)} records in ${secs(seeded.seconds)}; server started in ` +
      `${secs(startS)}; backup ${secs((b1 - b0) / 1000)}, ${answer.files} files, ${mb(answer.bytes)}; ` +
      `${bad} writes not 201 of ${int(load.sent.length)}`);
    rows.push({ scenario: `Data dir seeded with ${int(seeded.records)} records (log ${mb(seeded.fileBytes)})`,
      figure: `seeded in ${secs(seeded.seconds)} (${int(rate)} records/s); server up in ${secs(startS)}, its first ` +
        `compaction (the snapshot block) done ${secs(compactS)} after the first write, before the load`,
      target: '—', status: '' });
    rows.push({ scenario: `\`cli backup --to DIR\` while ${int(RATE)} durable writes/s (POST issue) go on`,
      figure: `${secs((b1 - b0) / 1000)}; ${mb(size)} on disk (${answer.files} files and the manifest)`,
      target: 'printed', status: bad === 0 ? 'every write 201' : `${bad} writes not 201` });
    rows.push({ scenario: `API p99, writes before the backup (${BEFORE_S - WARMUP_S} s)`,
      figure: describe(before, b0 - WARMUP_S * 1000), target: 'reference', status: '' });
    rows.push({ scenario: 'API p99, writes sent during the backup', figure: describe(during, b1 - b0),
      target: 'printed', status: '' });
    kit.notes.push(`The writes are sent open-loop by the bench process (each at its time, ` +
      'answered or not), so a stall shows as latency rather than as fewer requests.');
    const avg = (l: number[]) => l.map((x) => x.toFixed(2)).join(' / ');
    kit.notes.push(`Load average ${avg(load0)} when the server started, ${avg(os.loadavg())} at the end, on ` +
      `${os.cpus().length} cores: other processes shared the machine (the writes benchmark's rate on it is the ` +
      'reference of what one core sustains).');
  } finally {
    await load.stop().catch(() => {});
    await server.stop();
  }
}
