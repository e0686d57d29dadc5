/**
 * The start-up scenarios of `npm run bench` for a large history (README "Performance",
 * docs/storage.md#snapshots), in two shapes of the same size:
 *
 * - **one by one**: the generated log of `--records` puts, one transaction per line, as a
 *   server writes them (bench/seed.ts `generateLog`), started once as it is (a full replay:
 *   today's start), then compacted with `cli compact` through the running server, so that it
 *   ends with a snapshot block;
 * - **imported**: the same number of records imported with the admin CLI in 10 files of
 *   conversations with 19 messages each (each import a frame; the CLI compacts by itself as
 *   the log grows), then `cli compact` once more, as after a big import.
 *
 * For each: start-up to "listening" from the snapshot block (median of the rounds), RSS right
 * after, the heap after a full GC, the data dir's size, the live records' JSON (the block's
 * value bytes), the RSS / live-JSON ratio (target ≤ 1.8×), and a start of the same file with
 * the block ignored (`STARTUP_SNAPSHOT=ignore`: a full replay) for comparison. With
 * `--records 10000000` the same at 10,000,000 records: the steps that must replay the log in
 * full get a larger heap (`--max-old-space-size`), and a full replay that fails is reported.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { generateLog, runCli } from './seed.js';
import { readBlock } from '../src/store/snapshot/snapshot.js';

/** What the scenarios need of bench/run.ts. */
export interface HistoryDeps {
  tmp: string;
  baseDir: string;
  workspaceId: string;
  records: number;
  rounds: number;
  /** Starts the server on `dir` (with `env`), waits for "listening"; ms, RSS right after, heap after GC. */
  startOnce(label: string, dir: string, env?: Record<string, string>, timeoutMs?: number): Promise<{ ms: number; rss: number; heap: number; proc: { stop(): Promise<void>; memory(): { rss: number; hwm: number } } }>;
  log(s: string): void;
  detail(s: string): void;
  row(scenario: string, figure: string, target: string, status: string): void;
}

const MiB = 1048576;
const mb = (b: number) => (Number.isFinite(b) ? `${(b / MiB).toFixed(0)} MiB` : 'n/a');
const secs = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : 'n/a');
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const median = (xs: number[]) => { const s = xs.filter(Number.isFinite).sort((a, b) => a - b); return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN; };
const verdict = (ok: boolean) => (ok ? '**met**' : '**not met**');

/** Bytes of every file under `dir`. */
function dirBytes(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += dirBytes(p); else if (e.isFile()) n += fs.statSync(p).size;
  }
  return n;
}

/** The records of the log's snapshot block and the bytes of their JSON (the live records' JSON), read from the block. */
function liveJson(file: string): { records: number; bytes: number } {
  const fd = fs.openSync(file, 'r');
  try {
    const b = readBlock(fd, fs.fstatSync(fd).size);
    if ('reason' in b) throw new Error(`${file}: ${b.reason}`);
    let bytes = 0;
    for (const len of b.lengths) bytes += len;
    return { records: b.lengths.length, bytes };
  } finally { fs.closeSync(fd); }
}

/**
 * Writes the import file of `convs` conversations of 19 messages each (bench/seed.ts's data,
 * one file of the imported history), conversation by conversation; returns its path and size.
 */
function writeImport(dir: string, part: number, convs: number): { file: string; bytes: number } {
  const file = join(dir, `import-${part}.json`);
  const fd = fs.openSync(file, 'w');
  const base = Date.parse('2024-01-01T00:00:00.000Z') + part * convs * 60_000;
  const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald'];
  const COMPANIES = ['Analytical Engines Ltd', 'Compiler Works', 'Enigma Systems', 'Structured Labs'];
  const BODIES = [
    'Hi, the invoice export keeps failing with an error page. Can you help? We need the files for our accountant by Friday.',
    'Thanks for reaching out! We are looking into it and will get back to you shortly with a workaround.',
    'Any update on this? The problem is still there this morning.',
  ];
  let bytes = 0;
  const put = (s: string) => { bytes += fs.writeSync(fd, s); };
  put('{"conversations":[');
  for (let i = 0; i < convs; i++) {
    const created = base + i * 60_000;
    const c = {
      externalId: `p${part}-${i}`, subject: `Export of March invoices fails (${part}-${i})`,
      customer: { name: `${FIRST[i % FIRST.length]} Tester`, email: `user${(part * convs + i) % 50_000}@example.com`, company: COMPANIES[i % COMPANIES.length] },
      status: ['open', 'waiting', 'solved'][i % 3], channel: 'email', priority: 'medium', createdAt: new Date(created).toISOString(),
      messages: Array.from({ length: 19 }, (_, m) => ({ role: m % 2 ? 'agent' : 'user', body: BODIES[m % BODIES.length], createdAt: new Date(created + (m + 1) * 1000).toISOString() })),
    };
    put((i ? ',' : '') + JSON.stringify(c));
  }
  put(']}');
  fs.closeSync(fd);
  return { file, bytes };
}

/** Heap flags for a step that holds the whole history parsed (a full replay, an import of 1,000,000 records). */
function bigHeap(records: number): string[] {
  return records > 2_000_000 ? [`--max-old-space-size=${Math.min(20_000, Math.ceil(records / 1_000_000) * 1_500)}`] : [];
}

/**
 * Both histories: measured, reported as rows and detail lines.
 * @returns the one-by-one history's start-up from its block (ms, median) and its records.
 */
export async function startupHistories(d: HistoryDeps): Promise<{ ms: number; records: number }> {
  let result = { ms: NaN, records: d.records };
  const logName = join('workspaces', `${d.workspaceId}.log`);
  const heapEnv = (): Record<string, string> => { const f = bigHeap(d.records); return f.length ? { NODE_OPTIONS: f.join(' ') } : {}; };

  /** Starts from the block `rounds` times, then once with it ignored; reports. */
  const measure = async (shape: string, dir: string, extra: string) => {
    const file = join(dir, logName);
    const live = liveJson(file);
    const size = dirBytes(dir);
    const got: Array<{ ms: number; rss: number; heap: number }> = [];
    for (let i = 0; i < d.rounds; i++) {
      const s = await d.startOnce(`${shape}, from the snapshot block`, dir);
      await s.proc.stop();
      got.push(s);
      d.detail(`    [start] ${shape}, snapshot block #${i + 1}: ${secs(s.ms)} to "listening", RSS ${mb(s.rss)} right after, heap after GC ${mb(s.heap)}`);
    }
    const ms = median(got.map((g) => g.ms));
    const rss = median(got.map((g) => g.rss));
    const heap = median(got.map((g) => g.heap));
    let full: string;
    // A full replay holds every record parsed: past a few million it needs a larger heap than V8's default (~4 GiB).
    const env: Record<string, string> = { STARTUP_SNAPSHOT: 'ignore', ...heapEnv() };
    const note = env.NODE_OPTIONS ? ` with ${env.NODE_OPTIONS}` : '';
    try {
      const f = await d.startOnce(`${shape}, block ignored`, dir, env, 1_800_000);
      await f.proc.stop();
      full = `${secs(f.ms)}, RSS ${mb(f.rss)} (${(f.rss / live.bytes).toFixed(2)}×)${note}`;
      d.detail(`    [start] ${shape}, block ignored (full replay${note}): ${secs(f.ms)}, RSS ${mb(f.rss)}, heap after GC ${mb(f.heap)}`);
    } catch (e) {
      full = `did not start${note}: ${String((e as Error).message).split('\n').find((l) => /heap|memory|exited|timed out/i.test(l))?.slice(0, 120) ?? 'failed'}`;
      d.detail(`    [start] ${shape}, block ignored (full replay): ${full}`);
    }
    const ratio = rss / live.bytes;
    if (shape === 'written one by one') result = { ms, records: live.records };
    const target = d.records <= 1_000_000 ? '≤ 2 s' : 'measured';
    d.row(`Start-up, ${int(live.records)} records ${shape} (data dir ${mb(size)}, ${mb(live.bytes)} of live JSON)${extra}`,
      `${secs(ms)} to "listening" from the snapshot block; the same file replayed in full (block ignored): ${full}`,
      target, d.records <= 1_000_000 ? verdict(ms <= 2000) : '');
    d.row(`↳ memory right after that start`, `RSS ${mb(rss)} = ${ratio.toFixed(2)}× the live JSON; heap after GC ${mb(heap)}`, 'RSS ≤ 1.8× the live JSON', verdict(ratio <= 1.8));
  };

  // ── One by one ────────────────────────────────────────────────────────────────────────────
  {
    const dir = join(d.tmp, 'history-one-by-one');
    fs.cpSync(d.baseDir, dir, { recursive: true });
    const gl = generateLog(join(dir, logName), d.records, d.records);
    d.log(`  one by one: generated ${int(gl.records)} puts, one transaction a line (${mb(gl.fileBytes)}), in ${secs(gl.seconds * 1000)}`);
    // Today's start: the log as written, replayed in full; then compacted through the server.
    let before = 'n/a';
    try {
      const s = await d.startOnce('one by one, as written', dir, heapEnv(), 1_800_000);
      before = `${secs(s.ms)}, RSS ${mb(s.rss)}`;
      d.detail(`    [start] one by one, the log as written (a full replay${heapEnv().NODE_OPTIONS ? `, ${heapEnv().NODE_OPTIONS}` : ''}): ${before}, heap after GC ${mb(s.heap)}`);
      const t0 = performance.now();
      const c = runCli(dir, ['compact', '--workspace', d.workspaceId]);
      d.detail(`    [compact] one by one: ${JSON.stringify(c)} (${secs(performance.now() - t0)})`);
      await s.proc.stop();
    } catch (e) {
      d.detail(`    [start] one by one, the log as written: failed (${String((e as Error).message).slice(0, 200)})`);
      throw e;
    }
    await measure('written one by one', dir, `; the log as written, replayed in full: ${before}`);
    fs.rmSync(dir, { recursive: true, force: true });
  }

  // ── Imported with the CLI in 10 files ───────────────────────────────────────────────────
  {
    const dir = join(d.tmp, 'history-imported');
    fs.cpSync(d.baseDir, dir, { recursive: true });
    const convs = Math.max(1, Math.round(d.records / 10 / 20));
    const t0 = performance.now();
    let fileBytes = 0;
    for (let part = 0; part < 10; part++) {
      const { file, bytes } = writeImport(d.tmp, part, convs);
      fileBytes += bytes;
      const t1 = performance.now();
      const r = runCli(dir, ['import', '--workspace', d.workspaceId, file], bigHeap(d.records));
      fs.rmSync(file);
      d.detail(`    [import] file ${part + 1}/10 (${mb(bytes)}): ${JSON.stringify((r as { imported: unknown }).imported)} in ${secs(performance.now() - t1)}; log ${mb(fs.statSync(join(dir, logName)).size)}`);
    }
    d.log(`  imported: 10 files of ${int(convs)} conversations × 19 messages (${mb(fileBytes)} of import files) in ${secs(performance.now() - t0)}`);
    // As the imports left it (the CLI compacts by itself as the log grows; the last imports may follow its block).
    const s = await d.startOnce('imported, as the imports left it', dir, heapEnv(), 1_800_000);
    await s.proc.stop();
    const asLeft = `${secs(s.ms)}, RSS ${mb(s.rss)}`;
    d.detail(`    [start] imported, as the imports left the log: ${asLeft}`);
    const c = runCli(dir, ['compact', '--workspace', d.workspaceId], bigHeap(d.records));
    d.detail(`    [compact] imported: ${JSON.stringify(c)}`);
    await measure('imported with the CLI in 10 files', dir, `; as the imports left the log (before \`cli compact\`): ${asLeft}`);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return result;
}
