/**
 * The write scenarios of `npm run bench` (bench/README.md, "Writes" and "Webhooks"): `PATCH` of a
 * conversation and `POST` of a message with `SYNC=always` against `SYNC=none`, and the same
 * `PATCH` load with `SYNC=always` on a server with one webhook endpoint subscribed to every event
 * (its receiver, bench/receiver.ts, in this process) against one with none. Every run starts
 * from the same data with `--fresh on` (bench/README.md, "Write rounds start from the same data").
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import { join } from 'node:path';
import { useCli, makeBase, importFile, liveIds, runCli } from './seed.js';
import { median, int, ms, mb, ratio, verdict, log, paired, spreadNote, runLine, summarize, type Run } from './figures.js';
import { startReceiver, type ReceiverStats } from './receiver.js';
import type { GroupSpec } from './load.js';
import type { Ctx, LoadClient, Proc, Row } from './run.js';

/** What bench/run.ts lends the write scenarios. */
export interface WritesKit {
  opts: {
    connections: number; rounds: number; seconds: number; warmup: number; fresh: boolean; against?: string;
    /** The webhooks receiver (`--receiver`), and the load generator's client there (raw unless `--client` says). */
    receiver: 'raw' | 'http'; webhooksClient: 'http' | 'raw';
  };
  rows: Row[];
  notes: string[];
  abRun(load: LoadClient, target: Proc, groups: GroupSpec[], name: string, timing?: { client?: 'http' | 'raw'; warmupMs?: number; onMeasuring?: () => void }): Promise<Record<string, Run>>;
  copyDir(from: string, to: string): string;
  detail(line: string): void;
  /** Our server (or `serverJs`, another build) on `dataDir` with `SYNC=sync`. */
  startServer(label: string, dataDir: string, sync: 'always' | 'none', probe?: boolean, env?: Record<string, string>, serverJs?: string): Proc;
}

/**
 * `dir` as a new copy of `base` — at a server's first start, and at every start with `--fresh on`
 * (the writes and webhooks rounds): each run then begins from the same data, not from the log
 * and heap the runs before it grew (bench/README.md "Write rounds start from the same data").
 */
function fromBase(kit: WritesKit, base: string, dir: string): string {
  if (!fs.existsSync(dir) || kit.opts.fresh) { fs.rmSync(dir, { recursive: true, force: true }); kit.copyDir(base, dir); }
  return dir;
}

/**
 * Before a run of `t`: with `--fresh on`, a new process on a new copy of its data
 * ({@link fromBase}, in `t.start`), unless its process was just started and not measured yet
 * (`t.fresh`). The peak RSS of the process it stops is kept in `peak[key]`.
 */
async function readyForRun(kit: WritesKit, t: { p: Proc; start: () => Proc; fresh: boolean }, peak: Record<string, number>, key: string): Promise<void> {
  if (kit.opts.fresh && !t.fresh) {
    peak[key] = Math.max(peak[key] ?? 0, t.p.memory().hwm);
    await t.p.stop();
    t.p = await t.start().ready();
  }
  t.fresh = false;
}

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
function writeSeed(c: Ctx, kit: WritesKit): string {
  const dir = join(c.tmp, 'seed-compacted');
  if (!fs.existsSync(dir)) { kit.copyDir(c.seedDir, dir); runCli(dir, ['compact', '--workspace', c.workspaceId]); }
  return dir;
}

export async function writes(c: Ctx, kit: WritesKit): Promise<void> {
  const { opts } = kit;
  log(`\n## Writes${opts.against ? ` (and the other build, --against ${opts.against}, SYNC=always)` : ''}`);
  // With `--fresh on` (the default) every run has a new process on a new copy of the seed, as in
  // the webhooks rounds (bench/README.md "Write rounds start from the same data").
  const other = opts.against === undefined ? undefined : seedOther(c, opts.against);
  /** `fresh`: its process has not been measured yet (a first start needs no second one). */
  type Target = { label: string; p: Proc; start: () => Proc; auth: Record<string, string>; convIds: string[]; fresh: boolean };
  const target = (label: string, sync: 'always' | 'none', seedDir: string, dir: string, ids: { auth: Record<string, string>; convIds: string[] }, serverJs?: string): Target => {
    const start = (): Proc => kit.startServer(label === 'other build' ? 'other build SYNC=always' : `server ${label}`, fromBase(kit, seedDir, join(c.tmp, dir)), sync, false, {}, serverJs);
    return { label, p: start(), start, ...ids, fresh: true };
  };
  const targets: Target[] = [
    target('SYNC=always', 'always', writeSeed(c, kit), 'w-always', c), target('SYNC=none', 'none', writeSeed(c, kit), 'w-none', c),
    ...(other ? [target('other build', 'always', other.seedDir, 'w-against', other, join(opts.against!, 'dist', 'server.js'))] : []),
  ];
  await Promise.all(targets.map((t) => t.p.ready()));
  const peakRss: Record<string, number> = {};
  const rssOf = (t: Target): number => Math.max(peakRss[t.label] ?? 0, t.p.memory().hwm);
  const scenarios = [
    { name: 'PATCH /api/v1/conversations/{id}', short: 'PATCH', request: (t: { auth: Record<string, string>; convIds: string[] }) => ({ method: 'PATCH' as const, paths: t.convIds.map((id) => `/api/v1/conversations/${id}`), headers: t.auth, body: 'patchSubject' as const }) },
    { name: 'POST /api/v1/conversations/{id}/messages', short: 'POST message', request: (t: { auth: Record<string, string>; convIds: string[] }) => ({ method: 'POST' as const, paths: t.convIds.map((id) => `/api/v1/conversations/${id}/messages`), headers: t.auth, body: 'message' as const }) },
  ];
  for (const sc of scenarios) {
    log(`  ${sc.name}, random over ${c.convIds.length} conversations, ${opts.connections} connections`);
    const got: Record<string, Run[]> = {};
    const mainCpu: Record<string, number[]> = {};
    for (let r = 0; r < opts.rounds; r++) {
      for (let k = 0; k < targets.length; k++) {
        const t = targets[(k + r) % targets.length];
        await readyForRun(kit, t, peakRss, t.label);
        let main0 = NaN;
        const runs = await kit.abRun(c.load, t.p, [{ name: 'write', connections: opts.connections, request: sc.request(t) }], 'write',
          { onMeasuring: () => { main0 = t.p.mainThreadCpuSeconds(); } });
        // The API thread's own CPU per write: whether SYNC=always costs it work, or leaves it idle.
        const mainUs = ((t.p.mainThreadCpuSeconds() - main0) / (runs.write.rps * opts.seconds)) * 1e6;
        (mainCpu[t.label] ??= []).push(mainUs);
        (got[t.label] ??= []).push(runs.write);
        kit.detail(`${runLine(`[${sc.short}] round ${r + 1} ${t.label}`, runs.write)}   main thread ${mainUs.toFixed(0)} µs CPU/write`);
      }
    }
    const cpuNote = (label: string): string => `API thread ${median(mainCpu[label]).toFixed(0)} µs of CPU per write`;
    const a = summarize(got['SYNC=always']);
    const n = summarize(got['SYNC=none']);
    const ab = paired(got['SYNC=always'], got['SYNC=none']);
    const ok = ab >= 0.8 && a.rps >= 10_000;
    kit.rows.push({ scenario: `${sc.name}, ${opts.connections} conns, SYNC=always`, figure: `${int(a.rps)} writes/s, p50 ${ms(a.p50)}, p99 ${ms(a.p99)}; server peak RSS ${mb(rssOf(targets[0]))}; ${cpuNote('SYNC=always')}`,
      target: '≥ 0.8× SYNC=none and ≥ 10,000 writes/s', status: `${ratio(ab)} of SYNC=none${spreadNote(got['SYNC=always'], got['SYNC=none'])} ${verdict(ok)}` });
    kit.rows.push({ scenario: `↳ same, SYNC=none`, figure: `${int(n.rps)} writes/s, p50 ${ms(n.p50)}, p99 ${ms(n.p99)}; server peak RSS ${mb(rssOf(targets[1]))}; ${cpuNote('SYNC=none')}`, target: 'reference', status: '1.00×' });
    if (other) {
      const o = summarize(got['other build']);
      const vs = paired(got['SYNC=always'], got['other build']);
      kit.rows.push({ scenario: `↳ the other build (--against ${opts.against}), SYNC=always, its own seed of the same import`, figure: `${int(o.rps)} writes/s, p50 ${ms(o.p50)}, p99 ${ms(o.p99)}; server peak RSS ${mb(rssOf(targets[2]))}; ${cpuNote('other build')}`,
        target: 'ours ≥ 0.95× of it', status: `ours ${ratio(vs)} of it${spreadNote(got['SYNC=always'], got['other build'])} ${verdict(vs >= 0.95)}` });
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

/**
 * The webhooks rounds' least warm-up, wall ms (bench/README.md): each run is a freshly started
 * server, and one with an endpoint also compiles the delivery paths — code that runs once a
 * write, ~8× less often a second than a read's, so V8 is still compiling it (on the helper
 * threads both servers' API threads compete with) a second into the load. The figure asked for
 * is a running server's.
 */
const WEBHOOKS_WARMUP_MS = 4000;

export async function webhooks(c: Ctx, kit: WritesKit): Promise<void> {
  const { opts } = kit;
  // The load generator's raw node:net client unless one is chosen: at these rates node:http's
  // client takes ~0.4 of the 2 cores, and with an endpoint the receiver needs a share of them
  // too; the cheaper client leaves the cores to the server (both sides of the pair alike).
  const client = opts.webhooksClient;
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
    const p = await kit.startServer(label, kit.copyDir(seedDir, dir), 'always', false, env, serverJs).ready();
    try { return await subscribe(p, auth); } finally { await p.stop(); }
  };
  const onBase = join(c.tmp, 'wh-on-base');
  const endpointId = await subscribed('server, 1 endpoint (subscribing)', writeSeed(c, kit), onBase, c.auth);
  // `--against DIR`: the other build with one endpoint too, on a seed its own CLI made.
  const otherSeed = opts.against === undefined ? undefined : seedOther(c, opts.against);
  const otherJs = opts.against === undefined ? undefined : join(opts.against, 'dist', 'server.js');
  const otherBase = join(c.tmp, 'wh-against-base');
  const otherEndpointId = otherSeed && await subscribed('other build, 1 endpoint (subscribing)', otherSeed.seedDir, otherBase, otherSeed.auth, otherJs);
  const onDir = join(c.tmp, 'wh-on');
  const offDir = join(c.tmp, 'wh-off');
  const otherDir = join(c.tmp, 'wh-against');
  const startOn = (): Proc => kit.startServer('server, 1 endpoint', fromBase(kit, onBase, onDir), 'always', false, env);
  const startOff = (): Proc => kit.startServer('server, no endpoint', fromBase(kit, writeSeed(c, kit), offDir), 'always', false, env);
  const startOther = (): Proc => kit.startServer('other build, 1 endpoint', fromBase(kit, otherBase, otherDir), 'always', false, env, otherJs);
  const hooked = startOn();
  const plain = startOff();
  const otherHooked = otherSeed && startOther();
  await Promise.all([hooked.ready(), plain.ready(), otherHooked?.ready()]);
  /** `fresh`: its process has not been measured yet (a first start needs no second one). */
  type Target = { key: 'on' | 'off' | 'other'; p: Proc; start: () => Proc; auth: Record<string, string>; convIds: string[]; endpointId?: string; fresh: boolean };
  const targets: Target[] = [
    { key: 'on', p: hooked, start: startOn, auth: c.auth, convIds: c.convIds, endpointId, fresh: true },
    { key: 'off', p: plain, start: startOff, auth: c.auth, convIds: c.convIds, fresh: true },
  ];
  if (otherHooked && otherSeed) targets.push({ key: 'other', p: otherHooked, start: startOther, auth: otherSeed.auth, convIds: otherSeed.convIds, endpointId: otherEndpointId, fresh: true });
  // `--fresh on` (the default): every server is started again before each of its runs, as in
  // reads and list (bench/README.md "A fresh process per run"), on a new copy of its starting
  // data (the deliveries of the run before were all received: each run waits for its backlog).
  const peakRss: Record<string, number> = {};
  const got: Record<string, Run[]> = {};
  const deliveries: Array<{ rate: number; writes: number; backlog: number; drainS: number }> = [];
  const mainCpu: Record<string, number[]> = {};
  for (let r = 0; r < opts.rounds; r++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(k + r) % targets.length];
      await readyForRun(kit, t, peakRss, t.key);
      const p = t.p;
      const request = { method: 'PATCH' as const, paths: t.convIds.map((id) => `/api/v1/conversations/${id}`), headers: t.auth, body: 'patchSubject' as const };
      // Deliveries are counted over the measured window, as the writes are (warm-up left out).
      let before = receivedSoFar();
      let main0 = NaN;
      const runs = await kit.abRun(c.load, p, [{ name: 'write', connections: opts.connections, request }], 'write',
        { client, warmupMs: Math.max(WEBHOOKS_WARMUP_MS, opts.warmup * 1000), onMeasuring: () => { before = receivedSoFar(); main0 = p.mainThreadCpuSeconds(); } });
      // The window's length: the deliveries counted since it began include those owed for its
      // writes that arrived just after it (the answer's way back to this process takes a moment).
      const seconds = opts.seconds;
      // The API thread's own CPU per write: what an endpoint adds to it, whatever else ran.
      const mainUs = ((p.mainThreadCpuSeconds() - main0) / (runs.write.rps * seconds)) * 1e6;
      (mainCpu[t.key] ??= []).push(mainUs);
      (got[t.key] ??= []).push(runs.write);
      kit.detail(`${runLine(`[webhooks] round ${r + 1} ${p.label}`, runs.write)}   main thread ${mainUs.toFixed(0)} µs CPU/write`);
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
      kit.detail(`    [webhooks] round ${r + 1} ${p.label}: ${int(rate)} deliveries/s during the measured window; ${backlog >= 5000 ? '≥ 5,000' : int(backlog)} pending when it ended, ${left === 0 ? `none left ${drainS.toFixed(2)} s later` : 'STILL PENDING after 60 s'}`);
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
  kit.rows.push({ scenario: `PATCH /api/v1/conversations/{id}, ${opts.connections} conns, SYNC=always, one webhook endpoint subscribed to every event (a local receiver answering 204, ${opts.receiver === 'raw' ? 'bench/receiver.ts' : 'node:http'}); ${client} load client; each run after ${Math.max(WEBHOOKS_WARMUP_MS / 1000, opts.warmup)} s of warm-up`,
    figure: `${int(on.rps)} writes/s, p50 ${ms(on.p50)}, p99 ${ms(on.p99)}; server peak RSS ${mb(Math.max(peakRss.on ?? 0, targets[0].p.memory().hwm))}; API thread ${median(mainCpu.on).toFixed(0)} µs of CPU per write (no endpoint: ${median(mainCpu.off).toFixed(0)} µs)`,
    target: '≥ 0.8× without an endpoint', status: `${ratio(ratio_)} of no endpoint${spreadNote(got.on, got.off)} ${verdict(ratio_ >= 0.8)}` });
  kit.rows.push({ scenario: '↳ same, no endpoint', figure: `${int(off.rps)} writes/s, p50 ${ms(off.p50)}, p99 ${ms(off.p99)}`, target: 'reference', status: '1.00×' });
  kit.rows.push({ scenario: '↳ deliveries (one per write)', figure: `${int(rate)} deliveries/s during the measured windows (median); owed at the end of a run ${deliveries.map((d) => int(d.backlog)).join(', ')}, all received within ${Math.max(...deliveries.map((d) => d.drainS)).toFixed(2)} s`,
    target: 'deliveries/s ≥ writes/s', status: `${ratio(perWrite)} of the same window's writes ${verdict(keepsUp)}` });
  if (otherHooked) {
    const o = summarize(got.other);
    const vs = paired(got.on, got.other);
    kit.rows.push({ scenario: `↳ the other build with one endpoint (--against ${opts.against}), its own seed of the same import`, figure: `${int(o.rps)} writes/s, p50 ${ms(o.p50)}, p99 ${ms(o.p99)}; API thread ${median(mainCpu.other).toFixed(0)} µs of CPU per write`,
      target: '(new/old)', status: `ours ${ratio(vs)} of it${spreadNote(got.on, got.other)}` });
  }
  await Promise.all(targets.map((t) => t.p.stop()));
  await receiver.close();
  const st = receiver.stats;
  if (st !== null) {
    kit.detail(`    [webhooks] receiver: ${int(st.received)} deliveries; ${int(st.checked)} signatures checked (one in 64), ${st.badSignatures} wrong; ${st.framingErrors} framing errors; ${(st.received / Math.max(1, st.reads)).toFixed(2)} requests a read, ${int(st.connections)} connections`);
    if (st.badSignatures > 0 || st.framingErrors > 0) kit.notes.push(`The webhooks receiver saw ${st.badSignatures} wrong signatures and ${st.framingErrors} framing errors.`);
  }
}
