/**
 * How long a durable commit of one large transaction takes (docs/decisions.md, "Durable writes in
 * one system call"): `--mb` MiB of pre-serialized values (a pasted source's documents, made
 * elsewhere as bytes) in `--parts` records, committed with `SYNC=always` on a store in `--dir`
 * (default: a temp dir under data/, the data's disk), `--times` times; prints each commit's ms.
 *
 *   node --import tsx bench/large-transaction.ts [--mb 4] [--parts 40] [--times 10] [--dist DIR]
 *
 * `--dist DIR`: the store of another build (its `dist/store/`), for old/new; default this build's
 * `dist/` (`npm run build` first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ROOT } from './seed.js';

const { values: a } = parseArgs({ options: { mb: { type: 'string' }, parts: { type: 'string' }, times: { type: 'string' }, dir: { type: 'string' }, dist: { type: 'string' } } });
const mb = Number(a.mb ?? 4);
const parts = Number(a.parts ?? 40);
const times = Number(a.times ?? 10);
const dist = a.dist ?? join(ROOT, 'dist');
const { Db } = (await import(pathToFileURL(join(dist, 'store', 'db.js')).href)) as typeof import('../src/store/db.js');
const { nodeFs } = (await import(pathToFileURL(join(dist, 'store', 'log', 'fs.js')).href)) as typeof import('../src/store/log/fs.js');
const dir = mkdtempSync(join(a.dir ?? join(ROOT, 'data'), 'bench-large-tx-'));
try {
  const db = await Db.open(join(dir, 'w.log'), { fs: nodeFs, sync: true });
  const each = Math.floor((mb * 1048576) / parts);
  const got: number[] = [];
  for (let t = 0; t < times; t++) {
    const tx = db.begin();
    for (let i = 0; i < parts; i++) {
      const pad = 'x'.repeat(each - 40);
      const bytes = new TextEncoder().encode(JSON.stringify(pad));
      tx.put('t', `r${t}-${i}`, { pad }, ['{"pad":', bytes, '}']);
    }
    const t0 = performance.now();
    await db.commit(tx);
    got.push(performance.now() - t0);
  }
  await db.close();
  got.sort((x, y) => x - y);
  console.log(`one transaction of ${mb} MiB in ${parts} parts, SYNC=always (${dist}): commit ${got.map((x) => x.toFixed(0)).join(', ')} ms; median ${got[Math.floor(got.length / 2)].toFixed(0)} ms (${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
