import { mkdtempSync, writeFileSync, mkdirSync, openSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeLine } from '../src/store/log/log.js';
import { Workspace } from '../src/domain/workspace.js';
import { nodeFs } from '../src/store/log/fs.js';
const n = Number(process.argv[2] ?? 1_000_000), ids = Number(process.argv[3] ?? 100_000);
const dir = mkdtempSync(join(tmpdir(), 'sw-replay-'));
const file = join(dir, 'ws.log');
const fd = openSync(file, 'w');
const base = Date.parse('2026-01-01T00:00:00Z');
let buf: Buffer[] = [];
for (let i = 0; i < n; i++) {
  const k = i % ids;
  const t = new Date(base + k * 1000).toISOString();
  const rec = { id: `c${k}`, status: i % 3 ? 'open' : 'waiting', channel: 'api', priority: 'medium', subject: `Subject ${k} about an invoice`, preview: `Latest message ${i}`, customer: { id: `u${k % 5000}`, name: 'Ada Lovelace', email: `ada${k % 5000}@example.com`, company: `Company ${k % 700}`, identitySource: 'api' }, createdAt: t, updatedAt: t };
  buf.push(encodeLine(JSON.stringify([['p', 'conversation', `c${k}`, rec]])));
  if (buf.length === 10000) { writeSync(fd, Buffer.concat(buf)); buf = []; }
}
if (buf.length) writeSync(fd, Buffer.concat(buf));
closeSync(fd);
if (process.env.SEMI) (await import('node:v8')).setFlagsFromString(`--max-semi-space-size=${process.env.SEMI}`);
const t = performance.now();
const ws = await Workspace.open('ws', file, { fs: nodeFs, sync: false, now: () => Date.now() });
console.log(`replayed ${n} puts over ${ids} ids in ${Math.round(performance.now() - t)} ms; heap ${Math.round(process.memoryUsage().heapUsed / 2 ** 20)} MiB; conversations ${ws.conversations.order.size}`);
