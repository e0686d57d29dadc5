/**
 * `npm run bench -- --only cells` (docs/deployment.md#several-machines): `GET /api/v1/issues/{id}` through HAProxy
 * against the same cells directly, with 1 and with 3 cells (rounds alternating), and the pause of 10 workspace moves
 * made under durable write load through the proxy. Everything on one machine, so the ratio is the router's cost in
 * CPU beside the servers'. Targets (DESIGN §14): through HAProxy ≥ 0.85× of direct; move pause p99 ≤ 5 s.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import { join } from 'node:path';
import { importFile, liveIds, makeBase, runCli } from './seed.js';
import { int, ms, log, ratio, verdict } from './figures.js';
import type { GroupSpec, JobResult } from './load.js';
import { statCpuSeconds, statSystemSeconds } from './procStat.js';
import type { Ctx } from './run.js';
import type { Row } from './results.js';

/** What the benchmark needs from bench/run.ts. */
export interface CellsKit {
  rows: Row[];
  notes: string[];
  detail(line: string): void;
  opts: { rounds: number; seconds: number; warmup: number; connections: number };
  copyDir(from: string, to: string): string;
  startServer(label: string, dataDir: string, env: Record<string, string>): { ready(): Promise<{ port: number }>;
    stop(): Promise<void>; cpuSeconds(): number; readonly pid: number };
}

const MOVES = 10;
/** One move started every this many ms, while the writes go on. */
const MOVE_EVERY_MS = 2000;

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

const total = (r: JobResult) => r.groups.reduce((n, g) => n + g.rps, 0);
const worst = (r: JobResult, k: 'p50' | 'p99') => Math.max(...r.groups.map((g) => g.latencyMs[k]));
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

/** Runs the scenarios; rows and details go to `kit`. */
export async function cells(c: Ctx, kit: CellsKit): Promise<void> {
  log('\n## Cells behind HAProxy');
  if (spawnSync('haproxy', ['-v']).status !== 0) {
    log('!!! haproxy is not installed (apt-get install haproxy): the cells benchmark was NOT run');
    kit.rows.push({ scenario: 'cells behind HAProxy', figure: 'not measured: haproxy is not installed',
      target: '≥ 0.85× of direct', status: 'not run' });
    return;
  }
  const root = join(c.tmp, 'cells');
  const confDir = join(root, 'haproxy');
  fs.mkdirSync(confDir, { recursive: true });
  const runtime = await freePort();
  const front = await freePort();
  const names = ['a', 'b', 'c'];
  // Cell a holds the seeded workspace; b and c a workspace each with the same records imported.
  const dirs: Record<string, string> = { a: kit.copyDir(c.seedDir, join(root, 'a')) };
  const spaces: Record<string, { key: string; workspaceId: string; issues: string[]; convs: string[] }> = {
    a: { key: c.key, workspaceId: c.workspaceId, issues: c.issueIds, convs: c.convIds } };
  for (const name of ['b', 'c']) {
    const dir = join(root, name);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const f of ['secret', 'master.keys']) fs.copyFileSync(join(dirs.a, f), join(dir, f));
    const base = makeBase(dir);
    importFile(dir, base.workspaceId, c.importJson);
    const ids = liveIds(join(dir, 'workspaces', `${base.workspaceId}.log`));
    spaces[name] = { ...base, issues: [...(ids.get('issue') ?? [])], convs: [...(ids.get('conversation') ?? [])] };
    dirs[name] = dir;
  }
  const servers: Record<string, { port: number; pid: number; stop(): Promise<void>; cpuSeconds(): number }> = {};
  let proxy: ChildProcess | undefined;
  try {
    for (const name of names) {
      const proc = kit.startServer(`cell ${name}`, dirs[name], { CELL_NAME: name,
        CELL_HAPROXY_RUNTIME: `127.0.0.1:${runtime}`, CELL_MAPS_DIR: confDir, LOG_LEVEL: 'warn',
        });
      servers[name] = Object.assign(proc, { port: (await proc.ready()).port });
    }
    const list = names.map((n) => `${n}=127.0.0.1:${servers[n].port}`).join(',');
    const files = names.map((n) => {
      const file = join(confDir, `${n}.routes.json`);
      fs.writeFileSync(file, JSON.stringify(runCli(dirs[n], ['cells', 'routes', '--cell', n])));
      return file;
    });
    runCli(dirs.a, ['cells', 'haproxy', '--cells', list, '--routes', files.join(','), '--out', confDir, '--bind',
      `127.0.0.1:${front}`, '--runtime', `127.0.0.1:${runtime}`]);
    proxy = spawn('haproxy', ['-db', '-f', join(confDir, 'haproxy.cfg')], { stdio: ['ignore', 'ignore', 'inherit'] });
    for (let i = 0; ; i++) {
      if ((await fetch(`http://127.0.0.1:${front}/healthz`).catch(() => null))?.status === 200) break;
      if (i > 200) throw new Error('HAProxy did not answer');
      await new Promise((r) => setTimeout(r, 50));
    }
    const version = /HAProxy version ([0-9.]+)/.exec(spawnSync('haproxy', ['-v'], { encoding: 'utf8' }).stdout)?.[1];

    const reads = (name: string, connections: number, port?: number): GroupSpec => ({ name, connections,
      port, request: { method: 'GET', headers: { authorization: `Bearer ${spaces[name].key}` },
        paths: spaces[name].issues.slice(0, 2000).map((id) => `/api/v1/issues/${id}`) } });
    const run = (port: number, groups: GroupSpec[]) => c.load.run({ port, client: 'http', groups,
      warmupMs: kit.opts.warmup * 1000, durationMs: kit.opts.seconds * 1000 });
    for (const [label, cellsUsed] of [['1 cell', ['a']], ['3 cells', names]] as const) {
      const per = Math.max(1, Math.round(kit.opts.connections / cellsUsed.length));
      const direct: JobResult[] = [];
      const routed: JobResult[] = [];
      /** CPU ms per 1,000 reads, by side: the cells' and HAProxy's. */
      const cpu = { direct: { cells: [] as number[], proxy: [] as number[], cellsSys: [] as number[] },
        routed: { cells: [] as number[], proxy: [] as number[], cellsSys: [] as number[], proxySys: [] as number[] } };
      const cellsCpu = () => names.reduce((n, k) => n + servers[k].cpuSeconds(), 0);
      const cellsSys = () => names.reduce((n, k) => n + statSystemSeconds(`/proc/${servers[k].pid}/stat`), 0);
      const proxyCpu = () => statCpuSeconds(`/proc/${proxy!.pid}/stat`);
      const proxySys = () => statSystemSeconds(`/proc/${proxy!.pid}/stat`);
      for (let r = 0; r < kit.opts.rounds; r++) {
        for (const side of r % 2 === 0 ? ['direct', 'routed'] as const : ['routed', 'direct'] as const) {
          const before = [cellsCpu(), proxyCpu(), cellsSys(), proxySys()];
          const got = side === 'direct'
            ? await run(servers.a.port, cellsUsed.map((n) => reads(n, per, servers[n].port)))
            : await run(front, cellsUsed.map((n) => reads(n, per)));
          (side === 'direct' ? direct : routed).push(got);
          // Warm-up requests are not counted in `total`; the CPU of the whole run is spread over the measured ones.
          const requests = total(got) * (kit.opts.seconds + kit.opts.warmup);
          cpu[side].cells.push(((cellsCpu() - before[0]) * 1e6) / requests);
          cpu[side].proxy.push(((proxyCpu() - before[1]) * 1e6) / requests);
          cpu[side].cellsSys.push(((cellsSys() - before[2]) * 1e6) / requests);
          if (side === 'routed') cpu.routed.proxySys.push(((proxySys() - before[3]) * 1e6) / requests);
          kit.detail(`    [cells] ${label} round ${r + 1} ${side.padEnd(6)} ${int(total(got)).padStart(7)} req/s   `
            + `p50 ${ms(worst(got, 'p50'))}   p99 ${ms(worst(got, 'p99'))}   errors ${got.groups.reduce((n, g) =>
              n + g.errors, 0)}`);
        }
      }
      const ratios = routed.map((x, i) => total(x) / total(direct[i]));
      const rr = median(ratios);
      const fig = (runs: JobResult[]) => `${int(median(runs.map(total)))} req/s, p50 ${ms(median(runs.map((x) =>
        worst(x, 'p50'))))}, p99 ${ms(median(runs.map((x) => worst(x, 'p99'))))}`;
      kit.rows.push({ scenario: `GET /api/v1/issues/{id} through HAProxy ${version ?? ''} to ${label} `
        + `(${per * cellsUsed.length} conns, node:http client, each cell's own workspace)`, figure: fig(routed),
      target: '≥ 0.85× of direct', status: `${ratio(rr)} (rounds ${Math.min(...ratios).toFixed(2)}–`
        + `${Math.max(...ratios).toFixed(2)}) ${verdict(rr >= 0.85)}` });
      kit.rows.push({ scenario: `↳ the same, straight to the cell${cellsUsed.length > 1 ? 's' : ''}`,
        figure: fig(direct), target: 'reference', status: '1.00×' });
      const per1k = (xs: number[], sys: number[]) => `${median(xs).toFixed(0)} ms (kernel ${median(sys).toFixed(0)})`;
      kit.rows.push({ scenario: `↳ CPU per 1,000 reads, ${label}: cells direct / routed; HAProxy routed (of it in the `
        + 'kernel: system time, mostly the loopback TCP stack)',
        figure: `${per1k(cpu.direct.cells, cpu.direct.cellsSys)} / ${per1k(cpu.routed.cells, cpu.routed.cellsSys)}; ${
          per1k(cpu.routed.proxy, cpu.routed.proxySys)}`,
        target: 'printed', status: '—' });
    }

    // Moves under durable write load: PATCH conversations of cell a's workspace through the proxy meanwhile.
    const ws = spaces.a;
    const writes = c.load.run({ port: front, client: 'http', warmupMs: 0, durationMs: MOVES * MOVE_EVERY_MS + 2000,
      groups: [{
      name: 'write', connections: 16, maxRequests: 5_000_000, request: { method: 'PATCH', body: 'patchSubject',
        headers: { authorization: `Bearer ${ws.key}` },
        paths: ws.convs.slice(0, 2000).map((id) => `/api/v1/conversations/${id}`) } }] });
    const pauses: number[] = [];
    let at = 'a';
    let bytes = 0;
    const started = performance.now();
    let underLoad = 0;
    for (let i = 0; i < MOVES; i++) {
      const next = started + (i + 1) * MOVE_EVERY_MS;
      await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
      if (performance.now() - started < MOVES * MOVE_EVERY_MS + 1000) underLoad++;
      const to = names[(names.indexOf(at) + 1) % names.length];
      const report = runCli(dirs[at], ['workspace', 'move', '--workspace', ws.workspaceId, '--to', to, '--cells', list]);
      pauses.push(Number(report.pauseMs));
      bytes = Number(report.bytes);
      kit.detail(`    [cells] move ${i + 1}: ${at} → ${to}, ${int(Number(report.bytes) / 1024)} KiB in ${report.rounds} `
        + `round(s), writes paused ${report.pauseMs} ms`);
      at = to;
    }
    const seconds = (performance.now() - started) / 1000;
    const w = (await writes).groups[0];
    kit.detail(`    [cells] writes during the moves: ${int(w.requests)} answered, statuses ${JSON.stringify(w.statuses)}`);
    pauses.sort((a, b) => a - b);
    const p99 = pauses[Math.min(pauses.length - 1, Math.floor(0.99 * pauses.length))];
    kit.rows.push({ scenario: `${MOVES} moves of a ${int(bytes / 1024 / 1024)} MiB workspace between the 3 cells, `
      + 'PATCH a conversation through HAProxy meanwhile (16 conns, SYNC=always)', figure: `writes paused p50 ${
      ms(median(pauses))}, p99 ${ms(p99)}, max ${ms(pauses.at(-1)!)} (${seconds.toFixed(1)} s for the ${MOVES})`,
    target: 'p99 ≤ 5 s', status: verdict(p99 <= 5000) });
    kit.rows.push({ scenario: '↳ the writes meanwhile', figure: `${int(w.rps)} writes/s; answers ${Object.entries(
      w.statuses).map(([s, n]) => `${s}: ${int(n)}`).join(', ')} (${underLoad} of ${MOVES} moves under the load)`,
    target: 'printed', status: '—' });
    kit.notes.push('Cells: the 3 cells, HAProxy and the load generator share the 2 cores, so "through HAProxy" pays '
      + 'for the proxy\'s CPU out of the servers\' (the CPU rows: HAProxy spends about what a cell does per read, half '
      + 'of it in the kernel, so on shared cores the ratio runs at 0.6–0.8×); on separate machines the proxy\'s cost is its own core. During a '
      + 'move a write answers 503 `moving` (the load generator counts it as an error and goes on).');
  } finally {
    proxy?.kill('SIGKILL');
    for (const s of Object.values(servers)) await s.stop().catch(() => {});
  }
}
