/**
 * How long a compaction holds the event loop (bench/README.md, "Compaction stalls";
 * docs/storage.md#compaction): opens a data dir as the server would (a copy: the log is
 * rewritten), then compacts one workspace's log `--times` times; for each, the wall time, the
 * event loop's delay while it ran (`monitorEventLoopDelay`, max and p99) and the longest gap
 * between two runs of a 1 ms interval — what a request arriving then would wait at most.
 *
 *   node --import tsx bench/compaction-stall.ts --data DIR --workspace ID [--times N] [--dist DIR]
 *
 * `--data`: a data dir, e.g. a webhooks run's `wh-on` kept with `npm run bench -- --only
 * webhooks --keep` (its workspace: the one file under `workspaces/`; `--workspace` may be left
 * out when there is one). `--dist`: another build's `dist/` (old/new). Records are as a start
 * leaves them (held as bytes, not parsed): the server's records touched since its start are
 * objects, serialized rather than copied, so its compactions take longer.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { ROOT } from './seed.js';

const { values: a } = parseArgs({ options: { data: { type: 'string' }, workspace: { type: 'string' }, times: { type: 'string' }, dist: { type: 'string' } } });
if (!a.data) throw new Error('--data DIR (a data dir, e.g. a kept webhooks run\'s wh-on) is required');
const dist = resolve(a.dist ?? join(ROOT, 'dist'));
const copy = mkdtempSync(join(tmpdir(), 'sw-stall-'));
cpSync(a.data, copy, { recursive: true });
const logs = readdirSync(join(copy, 'workspaces')).filter((f) => f.endsWith('.log'));
const workspace = a.workspace ?? (logs.length === 1 ? logs[0].slice(0, -4) : undefined);
if (!workspace) throw new Error(`--workspace ID: the data dir has ${logs.length} workspace logs`);
type StoreLike = { workspace(id: string): { db: { compact(): Promise<void>; stats(): { covered: number; bytes: number } } } | undefined; close(): Promise<void> };
const { openStore } = (await import(pathToFileURL(join(dist, 'domain', 'workspace.js')).href)) as { openStore(o: object): Promise<StoreLike> };
const { systemClock } = (await import(pathToFileURL(join(dist, 'core', 'clock.js')).href)) as { systemClock: object };
const store = await openStore({ dataDir: copy, sync: true, clock: systemClock });
try {
  const db = store.workspace(workspace)?.db;
  if (!db) throw new Error(`no workspace ${workspace} in ${a.data}`);
  console.log(`${dist}: workspace ${workspace}, ${db.stats().bytes} bytes of log`);
  for (let i = 0; i < Number(a.times ?? 3); i++) {
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    let last = performance.now();
    let gap = 0;
    const tick = setInterval(() => { const t = performance.now(); gap = Math.max(gap, t - last); last = t; }, 1);
    const t0 = performance.now();
    await db.compact();
    const ms = performance.now() - t0;
    clearInterval(tick);
    h.disable();
    console.log(`compaction ${i + 1}: ${db.stats().covered} records, ${ms.toFixed(0)} ms; event-loop delay max ${(h.max / 1e6).toFixed(1)} ms, p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms; longest gap between 1 ms ticks ${gap.toFixed(1)} ms`);
  }
} finally {
  await store.close();
  rmSync(copy, { recursive: true, force: true });
}
