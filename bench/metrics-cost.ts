/**
 * What the metrics cost on the reads path (docs/decisions.md#metrics-on-a-port-of-their-own-written-by-hand): `GET
 * /api/v1/issues/{id}` with `METRICS_PORT` set against unset, one fresh server per run, the sides alternating
 * (A/B/B/A…), driven by bench/load.ts in a separate process (its raw client, 50 connections). Prints each run and the
 * medians. `node --import tsx bench/metrics-cost.ts [--rounds N] [--seconds S]` after `npm run build`.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, makeBase, writeImportFile, importFile, liveIds } from './seed.js';
import { freePort } from './fixedLoad.js';
import type { Job, JobResult } from './load.js';

const { values } = parseArgs({ options: { rounds: { type: 'string' }, seconds: { type: 'string' } } });
const rounds = Number(values.rounds ?? 4);
const seconds = Number(values.seconds ?? 5);

const tmp = fs.mkdtempSync(join(os.tmpdir(), 'sw-metrics-cost-'));
const base = join(tmp, 'base');
const { workspaceId, key } = makeBase(base);
importFile(base, workspaceId, writeImportFile(tmp, 100, 10_000));
const issues = [...(liveIds(join(base, 'workspaces', `${workspaceId}.log`)).get('issue') ?? [])];

const load = fork(join(ROOT, 'bench', 'load.ts'), [], { cwd: ROOT, execArgv: ['--import', 'tsx'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const runLoad = (job: Job) => new Promise<JobResult>((resolve, reject) => {
  const on = (m: { id: number; result?: JobResult; error?: string }) => {
    if (m.result) { load.off('message', on); resolve(m.result); }
    if (m.error) { load.off('message', on); reject(new Error(m.error)); }
  };
  load.on('message', on);
  load.send({ id: 1, job });
});

async function server(metrics: boolean, dir: string): Promise<{ port: number; metricsPort: number; proc: ChildProcess }> {
  const port = await freePort();
  const metricsPort = await freePort();
  const proc = spawn(process.execPath, [join(ROOT, 'dist', 'server.js')], { stdio: 'ignore', env: { ...process.env,
    PORT: String(port), DATA_DIR: dir, SYNC: 'none', LOG_LEVEL: 'warn', BOOTSTRAP: 'false',
    RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000',
    ...(metrics ? { METRICS_PORT: String(metricsPort) } : {}) } });
  for (let i = 0; i < 600; i++) {
    try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return { port, metricsPort, proc }; } catch { /**/ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the server did not start');
}

const got: Record<'on' | 'off', Array<{ rps: number; p50: number; p99: number }>> = { on: [], off: [] };
try {
  for (let r = 0; r < rounds; r++) {
    for (const side of (r % 2 === 0 ? ['off', 'on'] : ['on', 'off']) as Array<'on' | 'off'>) {
      const dir = join(tmp, `run-${r}-${side}`);
      fs.cpSync(base, dir, { recursive: true });
      const s = await server(side === 'on', dir);
      const res = await runLoad({ port: s.port, client: 'raw', warmupMs: 1000, durationMs: seconds * 1000, groups: [{
        name: 'get', connections: 50, request: { method: 'GET', paths: issues.map((id) => `/api/v1/issues/${id}`),
          headers: { authorization: `Bearer ${key}` } } }] });
      const g = res.groups[0];
      if (side === 'on') {
        const text = await (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
        const counted = /http_requests_total\{route="\/api\/v1\/issues\/\{issueId\}",method="GET",status="200"\} (\d+)/
          .exec(text)?.[1];
        console.log(`    scrape: ${counted} GET issue answers counted`);
      }
      s.proc.kill('SIGTERM');
      await new Promise((ok) => s.proc.once('exit', ok));
      got[side].push({ rps: g.rps, p50: g.latencyMs.p50, p99: g.latencyMs.p99 });
      console.log(`round ${r + 1} metrics ${side}: ${Math.round(g.rps)} req/s, p50 ${g.latencyMs.p50.toFixed(2)} ms, ` +
        `p99 ${g.latencyMs.p99.toFixed(2)} ms, errors ${g.errors}`);
    }
  }
  const med = (a: number[]) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
  const ratios = got.on.map((o, i) => o.rps / got.off[i].rps);
  console.log(`median: on ${Math.round(med(got.on.map((x) => x.rps)))} req/s (p99 ${med(got.on.map((x) => x.p99))
    .toFixed(2)} ms), off ${Math.round(med(got.off.map((x) => x.rps)))} req/s (p99 ${med(got.off.map((x) => x.p99))
    .toFixed(2)} ms); same-round ratio on/off ${med(ratios).toFixed(3)} (${ratios.map((x) => x.toFixed(3)).join(', ')})`);
  console.log(`machine: ${os.cpus()[0]?.model} × ${os.cpus().length}, Node ${process.version}, load ${os.loadavg()
    .map((x) => x.toFixed(2)).join(' / ')}`);
} finally {
  load.disconnect();
  fs.rmSync(tmp, { recursive: true, force: true });
}
