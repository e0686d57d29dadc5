/**
 * What holding events as bytes saves (docs/storage.md#memory): N events made by the events area
 * itself (its derive hooks, indexes and view texts, src/areas/events/events.ts) as 1,000
 * conversations are created and then updated over and over — once with events held as objects
 * and once as bytes (`Db.holdAsBytes`, what the area asks for) — each in a child process of its
 * own. Prints, per event, the heap (`heapUsed`) and the memory outside it (`arrayBuffers`: the
 * arena's chunks) after a full GC, and how long a compaction of the log takes.
 *
 *   node --expose-gc --import tsx bench/cold-memory.ts [N, default 100000]
 *
 * An update's event holds the conversation's API view (~400 bytes of JSON) and the fields that
 * changed: ~700 bytes of JSON an event. The conversations' own records are included in the
 * figures (1,000 records: under 1 % of them at 100,000 events).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Db } from '../src/store/db.js';
import { nodeFs } from '../src/store/log/fs.js';
import { newId } from '../src/core/ids.js';
import { iso } from '../src/core/clock.js';
import { attachEvents, type EventRecords } from '../src/areas/events/events.js';
import type { AnswerRecords } from '../src/areas/answers/model.js';
import type { Conversation, ConversationRecords } from '../src/areas/conversations/conversations.js';
import type { IssueRecords } from '../src/areas/issues.js';
import type { Source } from '../src/areas/sources/model.js';
import type { Workspace } from '../src/domain/workspace.js';

const n = Number(process.argv[2] ?? 100_000);
const mode = process.argv[3] as 'objects' | 'bytes' | undefined;
const CONVERSATIONS = 1000;
const STATUSES = ['open', 'waiting', 'solved'] as const;

const gc = (globalThis as { gc?: () => void }).gc;

async function child(m: 'objects' | 'bytes'): Promise<void> {
  if (gc === undefined) throw new Error('run with --expose-gc');
  const dir = mkdtempSync(join(tmpdir(), 'sw-coldmem-'));
  try {
    type Records = EventRecords & ConversationRecords & IssueRecords & AnswerRecords & { source: Source };
    const db = Db.create<Records>(join(dir, 'w.log'), { fs: nodeFs, sync: false, compactionSlack: 1e9, tailSlack: 1e9 });
    const start = Date.now() - 10 * 24 * 3600 * 1000;
    let clock = start;
    // Objects: the events area as it was before events were held as bytes.
    if (m === 'objects') db.holdAsBytes = () => {};
    attachEvents({} as Workspace, db, () => clock);
    await db.load();
    const convs: Conversation[] = [];
    gc(); gc();
    const m0 = process.memoryUsage();
    for (let i = 0; i < n; i += 100) {
      const commits: Array<Promise<void>> = [];
      for (let j = i; j < Math.min(n, i + 100); j++) {
        clock = start + j * 1000;
        const at = iso(clock);
        const k = j % CONVERSATIONS;
        const prev = convs[k];
        const c: Conversation = prev === undefined
          ? { id: newId(clock), externalId: `ticket-${k}`, status: 'open', channel: 'api', priority: 'high', subject: `Login fails after password reset (${k})`, preview: '', customer: { id: newId(clock), name: 'Ada Lovelace', email: `ada${k}@example.com`, company: 'Acme', identitySource: 'api' } as Conversation['customer'], createdAt: at, updatedAt: at }
          : { ...prev, status: STATUSES[j % 3], preview: `Thanks Ada, we are looking into it (${j}).`, updatedAt: at, lastMessageAt: at };
        convs[k] = c;
        const tx = db.begin();
        tx.put('conversation', c.id, c);
        commits.push(db.commit(tx));
      }
      await Promise.all(commits);
    }
    const events = db.table('event').size;
    gc(); gc();
    const m1 = process.memoryUsage();
    const t0 = performance.now();
    await db.compact();
    const compactMs = performance.now() - t0;
    gc(); gc();
    const m2 = process.memoryUsage();
    const arena = db.arenaStats();
    let json = 0;
    for (const [, e] of db.table('event')) json += Buffer.byteLength(JSON.stringify(e));
    await db.close();
    process.stdout.write(`${JSON.stringify({
      mode: m, events, jsonBytesPerEvent: json / events,
      heapPerEvent: (m1.heapUsed - m0.heapUsed) / events, offHeapPerEvent: (m1.arrayBuffers - m0.arrayBuffers) / events,
      afterCompaction: { heapPerEvent: (m2.heapUsed - m0.heapUsed) / events, offHeapPerEvent: (m2.arrayBuffers - m0.arrayBuffers) / events },
      rssMiB: m1.rss / 2 ** 20, compactMs, arena,
    })}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (mode !== undefined) await child(mode);
else {
  const self = fileURLToPath(import.meta.url);
  const rows: Array<Record<string, unknown>> = [];
  for (const m of ['objects', 'bytes'] as const) {
    const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', self, String(n), m], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${m}: ${r.stderr}`);
    rows.push(JSON.parse(r.stdout) as Record<string, unknown>);
  }
  const f = (x: unknown) => Math.round(x as number);
  for (const r of rows) {
    const after = r.afterCompaction as Record<string, number>;
    console.log(`${String(r.mode).padEnd(7)} ${String(r.events)} events of ${f(r.jsonBytesPerEvent)} B JSON: heap ${f(r.heapPerEvent)} B/event + off-heap ${f(r.offHeapPerEvent)} B/event (after a compaction: ${f(after.heapPerEvent)} + ${f(after.offHeapPerEvent)}); RSS ${f(r.rssMiB)} MiB; compaction ${f(r.compactMs)} ms`);
  }
}
