/**
 * Snapshot blocks of compacted logs (docs/storage.md#snapshots, docs/storage.md#compaction):
 * a start that loads the block — records kept as bytes until first read, persisted indexes
 * restored — gives exactly what a full replay of the same file gives; a damaged, cut or
 * miscounted block is set aside with a warning for a full replay; a bad put line is still
 * corruption; writes go on while compaction writes the new file and land in it; compaction's
 * rules on dead operations and on the lines written after the block.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Db, type DbOptions } from '../src/store/db.js';
import { nodeFs, type StoreFs } from '../src/store/log/fs.js';
import { attachIndexes, groupBy, orderBy, persistSortedMap, uniqueBy } from '../src/store/indexes.js';
import { SortedIndex } from '../src/store/memory/sorted.js';
import { CorruptLogError } from '../src/store/log/recovery.js';
import { scanLog } from '../src/store/log/repair.js';
import { encodeLine } from '../src/store/log/log.js';
import { mulberry32 as rng } from './helpers/prng.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'sw-snap-'));

interface Item { id: string; name: string; at: string; group?: string; n?: number; pad?: string }
interface Note { id: string; item: string; at: string; text: string }
interface Records { item: Item; note: Note; plain: { v: number }; word: { w: string }; old: { keep: boolean } }

/**
 * A log with hooks like the areas': declared indexes on `item`, each item's notes in order (a
 * map of sorted indexes), a counter kept by a persisted listener of its own, a stateless
 * listener, and `word`, whose listener saves nothing (its type is replayed at every start);
 * `old` records compaction drops when they say so.
 */
function create(path: string, opts: Partial<DbOptions> = {}) {
  const db = Db.create<Records>(path, { fs: nodeFs, sync: true, compactionSlack: 1_000_000, ...opts });
  const idx = attachIndexes(db, 'item', { byAt: orderBy((r: Item) => r.at), byName: uniqueBy((r: Item) => r.name), byGroup: groupBy((r: Item) => r.group) });
  const notes = new Map<string, SortedIndex>();
  db.on('note', (id, prev, next) => {
    if (prev) notes.get(prev.item)?.remove(prev.at, id);
    if (next) { let s = notes.get(next.item); if (!s) notes.set(next.item, (s = new SortedIndex())); s.add(next.at, id); }
  }, persistSortedMap('note.byItem/1', 'note', () => notes, () => new SortedIndex()));
  let total = 0;
  db.on('plain', (_id, prev, next) => { total += (next?.v ?? 0) - (prev?.v ?? 0); }, {
    name: 'plain.total/1',
    capture: () => { const t = total; return () => ({ total: [t] }); },
    restore: (cols, ctx) => { const t = ctx.numbers(cols.total)[0]; if (t === undefined) throw new Error('no total'); return () => { total = t; }; },
  });
  let deletes = 0;
  db.on('plain', (_id, _prev, next) => { if (next === undefined) deletes++; }, 'stateless');
  const words = new Map<string, number>();
  db.on('word', (_id, prev, next) => {
    if (prev) words.set(prev.w, (words.get(prev.w) ?? 1) - 1);
    if (next) words.set(next.w, (words.get(next.w) ?? 0) + 1);
  });
  db.retain('old', (r) => r.keep);
  /** Everything a reader could see: records (in table order), every index, every listener's state. */
  const state = () => ({
    records: (['item', 'note', 'plain', 'word', 'old'] as const).map((t) => [t, [...db.table(t)]]),
    byAt: [...idx.byAt.asc()].map((i) => idx.byAt.keyAt(i)),
    byAtDesc: [...idx.byAt.desc()].slice(0, 5).map((i) => [idx.byAt.idAt(i), idx.byAt.sortKeyAt(i)]),
    byName: [...db.table('item').values()].map((r) => [r.name, idx.byName.get(r.name)]).concat([['nobody', idx.byName.get('nobody')]]),
    byNameSize: idx.byName.size,
    byGroup: ['g0', 'g1', 'g2', 'g3'].map((g) => [g, [...(idx.byGroup.get(g) ?? [])].sort()]),
    byGroupSize: idx.byGroup.size,
    notes: [...notes].filter(([, s]) => s.size > 0).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, s]) => [k, [...s.asc()].map((i) => s.keyAt(i))]),
    total,
    words: [...words].filter(([, n]) => n > 0).sort(),
  });
  return { db, idx, notes, state, deletes: () => deletes };
}
const open = async (path: string, opts: Partial<DbOptions> = {}) => { const c = create(path, opts); await c.db.load(); return c; };
const iso = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();

/** Random changes of every type: puts, updates, deletes, a big transaction (a frame). */
async function churn(db: Db<Records>, seed: number, rounds: number, prefix = ''): Promise<void> {
  const r = rng(seed);
  const pick = (n: number) => Math.floor(r() * n);
  for (let i = 0; i < rounds; i++) {
    const tx = db.begin();
    const k = pick(6);
    const id = `${prefix}${pick(60)}`;
    if (k === 0) tx.put('item', `i${id}`, { id: `i${id}`, name: `name-${pick(80)}-${prefix}${i}`, at: iso(pick(500)), ...(r() < 0.7 ? { group: `g${pick(4)}` } : {}), n: i });
    else if (k === 1) tx.put('note', `n${id}`, { id: `n${id}`, item: `i${pick(60)}`, at: iso(pick(500)), text: `note ${i} ${'é'.repeat(pick(3))}` });
    else if (k === 2) tx.put('plain', `p${id}`, { v: pick(100) });
    else if (k === 3) tx.put('word', `w${id}`, { w: ['a', 'b', 'c'][pick(3)] });
    else if (k === 4) tx.put('old', `o${id}`, { keep: r() < 0.5 });
    else {
      const t = (['item', 'note', 'plain', 'word', 'old'] as const)[pick(5)];
      tx.del(t, `${t[0]}${id}`);
    }
    await db.commit(tx);
  }
  // One transaction past the line bound: a frame.
  const big = db.begin();
  for (let j = 0; j < 40; j++) big.put('note', `nb${prefix}${j}`, { id: `nb${prefix}${j}`, item: 'i1', at: iso(1000 + j), text: 'x'.repeat(60) });
  await db.commit(big);
}

test('a compacted log loads from its snapshot block with nothing parsed, and gives exactly what a full replay of the same file gives — records, every index, every listener', async () => {
  for (const seed of [1, 2, 3]) {
    const file = join(tmp(), 'a.log');
    const a = await open(file, { lineBytes: 2048 });
    await churn(a.db, seed, 400);
    await a.db.compact();
    await churn(a.db, seed + 100, 60, 't'); // lines after the block
    const live = a.state();
    await a.db.close();
    const fast = await open(file);
    assert.equal(fast.db.loadInfo.snapshot, true);
    assert.equal(fast.db.loadInfo.ignoredBlock, undefined);
    assert.deepEqual(fast.db.loadInfo.replayedTypes, ['word'], 'a type whose listener saves nothing is replayed');
    assert.ok(fast.db.loadInfo.lazy > 0 && fast.db.loadInfo.replayedOps > 0);
    assert.equal(fast.db.parsedSinceLoad, 0, 'no record parsed before the first read');
    const full = await open(file, { snapshot: 'ignore' });
    assert.equal(full.db.loadInfo.snapshot, false);
    // Records compaction dropped are gone from both: the others are as they were in memory.
    const kept = (s: ReturnType<typeof a.state>) => ({ ...s, records: s.records.map(([t, rs]) => [t, t === 'old' ? (rs as Array<[string, { keep: boolean }]>).filter(([id, r]) => r.keep || id.startsWith('ot')) : rs]) });
    assert.deepEqual(full.state(), kept(live), `seed ${seed}: a full replay gives the state before the restart`);
    assert.deepEqual(fast.state(), full.state(), `seed ${seed}: the snapshot load gives what the full replay gives`);
    assert.deepEqual(fast.db.stats().live, full.db.stats().live);
    await fast.db.close();
    await full.db.close();
  }
});

test('lazy records: untouched ones stay unparsed; get, list, update and delete of one behave as before (listeners get the parsed previous value); table order is kept', async () => {
  const file = join(tmp(), 'a.log');
  const a = await open(file);
  for (let i = 0; i < 50; i++) { const tx = a.db.begin(); tx.put('item', `i${i}`, { id: `i${i}`, name: `n${i}`, at: iso(i), group: `g${i % 3}` }); await a.db.commit(tx); }
  await a.db.compact();
  await a.db.close();
  const b = await open(file);
  const order = [...(await open(file, { snapshot: 'ignore' })).db.table('item').keys()];
  assert.equal(b.db.loadInfo.lazy, 50);
  assert.equal(b.db.table('item').size, 50);
  assert.deepEqual([...b.db.table('item').keys()], order, 'ids in the order a full replay gives');
  assert.equal(b.db.table('item').has('i7'), true);
  assert.equal(b.db.table('item').has('nope'), false);
  assert.equal(b.db.get('item', 'nope'), undefined);
  assert.equal(b.db.parsedSinceLoad, 0);
  assert.deepEqual(b.db.get('item', 'i7'), { id: 'i7', name: 'n7', at: iso(7), group: 'g1' });
  assert.equal(b.db.get('item', 'i7'), b.db.get('item', 'i7'), 'parsed once, then kept');
  assert.equal(b.db.parsedSinceLoad, 1);
  // An update: the listeners see the previous record parsed; the record keeps its place.
  const seen: unknown[] = [];
  b.db.on('item', (_id, prev, next) => seen.push([prev?.name, next?.name]));
  const tx = b.db.begin(); tx.put('item', 'i9', { id: 'i9', name: 'renamed', at: iso(9), group: 'g0' }); await b.db.commit(tx);
  assert.deepEqual(seen, [['n9', 'renamed']]);
  assert.equal(b.idx.byName.get('renamed'), 'i9');
  assert.equal(b.idx.byName.get('n9'), undefined);
  assert.deepEqual([...b.db.table('item').keys()], order, 'an updated record keeps its place');
  // A delete, then the same id again: it goes to the end, as in a Map.
  const d = b.db.begin(); d.del('item', 'i3'); await b.db.commit(d);
  assert.deepEqual(seen[1], ['n3', undefined]);
  assert.equal(b.db.get('item', 'i3'), undefined);
  assert.equal(b.db.table('item').size, 49);
  assert.ok(![...b.idx.byAt.asc()].some((i) => b.idx.byAt.idAt(i) === 'i3'));
  const again = b.db.begin(); again.put('item', 'i3', { id: 'i3', name: 'back', at: iso(3), group: 'g0' }); await b.db.commit(again);
  assert.deepEqual([...b.db.table('item').keys()].slice(-1), ['i3']);
  // An aborted change puts the lazy record back.
  const ab = b.db.begin(); ab.put('item', 'i20', { id: 'i20', name: 'tmp', at: iso(20) }); ab.abort();
  assert.deepEqual(b.db.get('item', 'i20'), { id: 'i20', name: 'n20', at: iso(20), group: 'g2' });
  assert.equal(b.idx.byName.get('n20'), 'i20');
  // Listing parses what it reaches.
  assert.equal([...b.db.table('item').values()].length, 50);
  assert.equal(b.db.parsedSinceLoad, 50, 'each record of the block parsed once (i3 when it was deleted)');
  await b.db.close();
  const c = await open(file);
  assert.deepEqual(c.db.get('item', 'i9')?.name, 'renamed');
  assert.deepEqual(c.db.get('item', 'i3')?.name, 'back');
  await c.db.close();
});

/** The byte offsets of the lines of `buf` whose JSON begins `{"snapshot":"<kind>"`. */
function blockLines(buf: Buffer, kind?: string): number[] {
  const out: number[] = [];
  for (let at = 0; at < buf.length;) {
    const nl = buf.indexOf(0x0a, at);
    if (buf.toString('latin1', at + 9, at + 21) === '{"snapshot":' && (kind === undefined || buf.toString('latin1', at + 22, at + 22 + kind.length + 1) === `${kind}"`)) out.push(at);
    at = nl + 1;
  }
  return out;
}

/** A compacted log with lines after its block, and the state a full replay gives. */
async function compacted() {
  const file = join(tmp(), 'a.log');
  const a = await open(file, { lineBytes: 4096 });
  await churn(a.db, 7, 300);
  await a.db.compact();
  await churn(a.db, 8, 20, 't');
  await a.db.close();
  const full = await open(file, { snapshot: 'ignore' });
  const state = full.state();
  await full.db.close();
  return { file, state, buf: readFileSync(file) };
}

test('a block\'s ids are found by lookup at either end and in between; an id above (or below) all of them is absent, and putting it adds a record', async () => {
  const file = join(tmp(), 'a.log');
  const a = await open(file);
  // Same-width ids (packed in the block), loaded in a shuffled order.
  const ids = ['i10', 'i11', 'i12', 'i13', 'i14', 'i15', 'i16', 'i17', 'i18', 'i19'];
  for (const id of [...ids].sort(() => 0.5 - Math.random())) { const tx = a.db.begin(); tx.put('item', id, { id, name: id, at: iso(1) }); await a.db.commit(tx); }
  await a.db.compact();
  await a.db.close();
  const b = await open(file);
  assert.equal(b.db.loadInfo.snapshot, true);
  const t = b.db.table('item');
  for (const id of ids) assert.equal(t.get(id)?.id, id, `${id} found`);
  for (const id of ['i09', 'i1', 'i105', 'i20', 'i99', 'j00', 'h99', '']) assert.equal(t.has(id), false, `${JSON.stringify(id)} absent`);
  const tx = b.db.begin();
  tx.put('item', 'i20', { id: 'i20', name: 'i20', at: iso(2) });
  await b.db.commit(tx);
  assert.equal(t.get('i20')?.name, 'i20');
  assert.equal(t.has('i19') && t.has('i10'), true);
  await b.db.close();
});

test('a damaged snapshot block is set aside with a warning and the log replayed in full, to the same state: a flipped byte in a block line, a file cut inside the block, counts that do not match', async () => {
  const { file, state, buf } = await compacted();
  const states = blockLines(buf, 'state');
  const records = blockLines(buf, 'records');
  assert.ok(states.length > 1 && records.length > 1);
  for (const [what, at] of [['a records line', records[1] + 40], ['a state line', states[states.length - 1] + 30], ['the head line', 40]] as const) {
    const bad = Buffer.from(buf);
    bad[at] ^= 0x01;
    writeFileSync(file, bad);
    const b = await open(file);
    assert.equal(b.db.loadInfo.snapshot, false, what);
    assert.match(b.db.loadInfo.ignoredBlock ?? '', /damaged/, what);
    assert.ok(b.db.replay.damagedSnapshotLines?.length === 1, `${what}: the damaged line is named`);
    assert.deepEqual(b.state(), state, what);
    await b.db.close();
    assert.equal(scanLog(file).firstBad, undefined, `${what}: a repair finds nothing to cut`);
  }
  // Counts that do not match (the end line rewritten, its checksum right).
  const end = blockLines(buf, 'end')[0];
  const endLine = buf.toString('utf8', end + 9, buf.indexOf(0x0a, end));
  const wrong = encodeLine(endLine.replace(/"records":(\d+)/, (_, n) => `"records":${Number(n) + 1}`));
  writeFileSync(file, Buffer.concat([buf.subarray(0, end), wrong, buf.subarray(buf.indexOf(0x0a, end) + 1)]));
  const c = await open(file);
  assert.match(c.db.loadInfo.ignoredBlock ?? '', /counts/);
  assert.deepEqual(c.state(), state);
  await c.db.close();
  // Cut inside the block (a copy that ends there): a torn tail, and the put lines suffice.
  writeFileSync(file, buf.subarray(0, states[1] + 100));
  const d = await open(file);
  assert.equal(d.db.loadInfo.snapshot, false);
  assert.match(d.db.loadInfo.ignoredBlock ?? '', /the file ends inside the snapshot block/);
  assert.ok(d.db.replay.tornTailSavedTo, 'the cut line is set aside');
  assert.ok(d.db.table('item').size > 0, 'the records of the put lines are there');
  await d.db.close();
});

test('a flipped byte in a put line of a compacted log is corruption naming that line, with or without the block', async () => {
  const { file, buf } = await compacted();
  const second = buf.indexOf(0x0a) + 1; // the first put line
  const bad = Buffer.from(buf);
  bad[second + 30] ^= 0x01;
  writeFileSync(file, bad);
  for (const snapshot of ['use', 'ignore'] as const) {
    await assert.rejects(open(file, { snapshot }), (e: unknown) => e instanceof CorruptLogError && e.line === 2 && e.offset === second && /checksum mismatch/.test(e.message), snapshot);
  }
  assert.deepEqual(scanLog(file).firstBad, { line: 2, offset: second, reason: 'checksum mismatch' });
});

/** A StoreFs that holds the fdatasync of compaction's temp file until released, and can fail the log's writes. */
function gatedFs() {
  const paths = new Map<number, string>();
  let release!: () => void;
  let reached!: () => void;
  const atSync = new Promise<void>((r) => { reached = r; });
  const gate = new Promise<void>((r) => { release = r; });
  let failLog = false;
  let renames = 0;
  const fs: StoreFs = {
    ...nodeFs,
    open: async (p) => { const fd = await nodeFs.open(p); paths.set(fd, p); return fd; },
    openSynced: async (p) => { const fd = await nodeFs.openSynced!(p); paths.set(fd, p); return fd; },
    write: async (fd, buf, pos) => {
      if (failLog && !paths.get(fd)!.includes('.compact-')) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      return nodeFs.write(fd, buf, pos);
    },
    fdatasync: async (fd) => {
      if (paths.get(fd)?.includes('.compact-')) { reached(); await gate; }
      return nodeFs.fdatasync(fd);
    },
    rename: async (a, b) => { renames++; return nodeFs.rename(a, b); },
  };
  return { fs, atSync, release, failLog: (on: boolean) => { failLog = on; }, renames: () => renames };
}

test('writes go on while compaction writes its file: one committed while the new file\'s fdatasync is held is acknowledged meanwhile, and is in the new file, after the block', async () => {
  const file = join(tmp(), 'a.log');
  const g = gatedFs();
  const a = await open(file, { fs: g.fs });
  await churn(a.db, 11, 100);
  const compaction = a.db.compact();
  await g.atSync;
  const tx = a.db.begin();
  tx.put('item', 'during', { id: 'during', name: 'during', at: iso(9999) });
  await a.db.commit(tx); // acknowledged while compaction waits on its sync
  assert.equal(g.renames(), 0, 'the compaction is not done');
  g.release();
  await compaction;
  assert.equal(g.renames(), 1);
  const after = a.db.begin(); after.put('item', 'after', { id: 'after', name: 'after', at: iso(10000) }); await a.db.commit(after);
  const live = a.state();
  await a.db.close();
  const buf = readFileSync(file);
  const end = blockLines(buf, 'end')[0];
  const tail = buf.subarray(buf.indexOf(0x0a, end) + 1).toString('utf8');
  assert.match(tail, /"during"/, 'the write made meanwhile is copied after the block');
  assert.match(tail, /"after"/);
  const b = await open(file);
  assert.equal(b.db.loadInfo.snapshot, true);
  assert.ok(b.db.loadInfo.replayedOps >= 2);
  assert.deepEqual(b.state(), (await open(file, { snapshot: 'ignore' })).state());
  assert.deepEqual(b.state().records, live.records.map(([t, rs]) => [t, t === 'old' ? (rs as Array<[string, { keep: boolean }]>).filter(([, r]) => r.keep) : rs]));
  await b.db.close();
  assert.deepEqual(readdirSync(join(file, '..')).filter((f) => f !== 'a.log'), [], 'no temp file left');
});

test('a failed write after the capture point abandons the compaction: the log stays as it was, the temp file is removed, and every acknowledged write is there', async () => {
  const file = join(tmp(), 'a.log');
  const g = gatedFs();
  const a = await open(file, { fs: g.fs });
  await churn(a.db, 12, 50);
  const size = statSync(file).size;
  const openFds = () => (process.platform === 'linux' ? readdirSync('/proc/self/fd').length : 0);
  const fdsBefore = openFds();
  const compaction = a.db.compact();
  await g.atSync;
  g.failLog(true);
  const tx = a.db.begin(); tx.put('item', 'lost', { id: 'lost', name: 'lost', at: iso(1) });
  await assert.rejects(a.db.commit(tx), /ENOSPC/);
  g.failLog(false);
  g.release();
  await compaction;
  assert.equal(g.renames(), 0, 'abandoned');
  assert.equal(openFds(), fdsBefore, 'the temp file\'s descriptors (the one it was written through, the O_DSYNC one) are closed');
  assert.equal(statSync(file).size, size);
  const ok = a.db.begin(); ok.put('item', 'ok', { id: 'ok', name: 'ok', at: iso(2) }); await a.db.commit(ok);
  await a.db.close();
  assert.deepEqual(readdirSync(join(file, '..')).filter((f) => f !== 'a.log'), []);
  const b = await open(file);
  assert.equal(b.db.get('item', 'lost'), undefined);
  assert.equal(b.db.get('item', 'ok')?.name, 'ok');
  await b.db.close();
});

test('compaction by itself: when dead operations reach half the file\'s (past the slack), and when the operations written after the block outgrow the ones it holds', async () => {
  // Dead at half the file: 5 records, then updates of one; at 11 dead (> slack 10, ≥ live 5 + …) it compacts,
  // before "dead past half the live plus the slack" (> 12.5) would.
  const f1 = join(tmp(), 'a.log');
  let renames = 0;
  const fs: StoreFs = { ...nodeFs, rename: (a, b) => { renames++; return nodeFs.rename(a, b); } };
  const a = await open(f1, { fs, compactionSlack: 10, tailSlack: 1_000_000 });
  for (let i = 0; i < 5; i++) { const tx = a.db.begin(); tx.put('plain', `p${i}`, { v: i }); await a.db.commit(tx); }
  for (let i = 0; i < 10; i++) { const tx = a.db.begin(); tx.put('plain', 'p0', { v: 100 + i }); await a.db.commit(tx); }
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(renames, 0, '10 dead of 15: not past the slack');
  const tx = a.db.begin(); tx.put('plain', 'p0', { v: 200 }); await a.db.commit(tx);
  await a.db.close();
  assert.equal(renames, 1, '11 dead of 16 operations: past half, past the slack');

  // Lines after the block: 20 records compacted, then new records only (nothing dead): it
  // compacts once more than 2 × 20 + 5 operations were written after the block.
  const f2 = join(tmp(), 'b.log');
  renames = 0;
  const b = await open(f2, { fs, compactionSlack: 1_000_000, tailSlack: 5 });
  const many = b.db.begin(); for (let i = 0; i < 20; i++) many.put('plain', `q${i}`, { v: i }); await b.db.commit(many);
  // A log without a block covers nothing: 20 operations after "it" are past 2 × 0 + 5.
  while (b.db.stats().covered === 0) await new Promise((r) => setTimeout(r, 5));
  assert.equal(renames, 1);
  assert.deepEqual(b.db.stats().covered, 20);
  for (let i = 0; i < 45; i++) { const t = b.db.begin(); t.put('plain', `r${i}`, { v: i }); await b.db.commit(t); }
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(renames, 1, '45 after the block: not past 2 × 20 + 5');
  const t = b.db.begin(); t.put('plain', 'r45', { v: 1 }); await b.db.commit(t);
  await b.db.close();
  assert.equal(renames, 2, '46 after the block: compacted');
  const c = await open(f2);
  assert.deepEqual({ covered: c.db.stats().covered, replayed: c.db.loadInfo.replayedOps }, { covered: 66, replayed: 0 });
  await c.db.close();
});

test('an old log without a block, and one with a block of another version, load by a full replay (no warning for the first)', async () => {
  const file = join(tmp(), 'a.log');
  const a = await open(file);
  await churn(a.db, 21, 50);
  const live = a.state();
  await a.db.close();
  const b = await open(file);
  assert.deepEqual({ snapshot: b.db.loadInfo.snapshot, ignored: b.db.loadInfo.ignoredBlock }, { snapshot: false, ignored: undefined });
  assert.deepEqual(b.state().records, live.records.map(([t, rs]) => [t, rs]));
  await b.db.compact();
  await b.db.close();
  const buf = readFileSync(file);
  const head = buf.toString('utf8', 9, buf.indexOf(0x0a));
  writeFileSync(file, Buffer.concat([encodeLine(head.replace('"v":1', '"v":9')), buf.subarray(buf.indexOf(0x0a) + 1)]));
  const c = await open(file);
  assert.match(c.db.loadInfo.ignoredBlock ?? '', /version 9/);
  assert.deepEqual(c.state(), (await open(file, { snapshot: 'ignore' })).state());
  await c.db.close();
  truncateSync(file, 0);
});
