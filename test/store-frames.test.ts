/**
 * Write-once transactions and framed lines (docs/storage.md#transactions,
 * docs/storage.md#frames, docs/storage.md#recovery): each record once per transaction with its
 * last value, big transactions as frames of bounded lines, replay applying a frame only with
 * its commit marker, and the torn or corrupt frames recovery meets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Db, type ChangeListener, type DbOptions } from '../src/store/db.js';
import { nodeFs, type StoreFs } from '../src/store/log/fs.js';
import { viaFdatasync, buffersOf, bytesOf } from './helpers/storeFs.js';
import { attachIndexes, groupBy, orderBy, uniqueBy } from '../src/store/indexes.js';
import { CorruptLogError } from '../src/store/log/recovery.js';
import { repairLog, scanLog } from '../src/store/log/repair.js';
import { LINE_BYTES, MAX_BATCH_BYTES, encodeLine } from '../src/store/log/log.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'sw-frames-'));

interface Item { name: string; at: string; group?: string; n?: number; pad?: string }

/** A log with indexes and a mirror listener on type `t`, like an area's (docs/storage.md#indexes). */
function create(path: string, opts: Partial<DbOptions> = {}) {
  const mirror = new Map<string, unknown>();
  let live = 0;
  const listener: ChangeListener = (type, id, prev, next) => {
    if (next === undefined) mirror.delete(`${type}/${id}`); else mirror.set(`${type}/${id}`, next);
    live += (next !== undefined ? 1 : 0) - (prev !== undefined ? 1 : 0);
  };
  const db = Db.create<{ t: Item; u: Item }>(path, { fs: nodeFs, sync: true, listeners: [listener], ...opts });
  const idx = attachIndexes(db, 't', { byName: uniqueBy((r: Item) => r.name), byAt: orderBy((r: Item) => r.at), byGroup: groupBy((r: Item) => r.group) });
  /** Everything a reader could see: records, every index, what the listener keeps. */
  const state = () => {
    const names = new Set<string>(), groups = new Set<string>();
    for (const r of db.table('t').values()) { names.add(r.name); if (r.group) groups.add(r.group); }
    for (const n of ['a', 'b', 'c', 'd', 'e', 'x', 'y', 'z', 'gone', 'new']) names.add(n);
    for (const g of ['g1', 'g2', 'g3']) groups.add(g);
    return {
      t: [...db.table('t')].sort(),
      u: [...db.table('u')].sort(),
      byName: [...names].sort().map((n) => [n, idx.byName.get(n)]),
      byNameSize: idx.byName.size,
      byAt: [...idx.byAt.asc()].map((i) => idx.byAt.keyAt(i)),
      byGroup: [...groups].sort().map((g) => [g, [...(idx.byGroup.get(g) ?? [])].sort()]),
      byGroupSize: idx.byGroup.size,
      mirror: [...mirror].sort(),
      live,
    };
  };
  return { db, state };
}
const open = async (path: string, opts: Partial<DbOptions> = {}) => { const c = create(path, opts); await c.db.load(); return c; };

/** The complete lines of `file`: their JSON, parsed (the checksum checked). */
function lines(file: string): unknown[] {
  const text = readFileSync(file, 'utf8');
  assert.ok(text === '' || text.endsWith('\n'), 'the log ends with a whole line');
  return text.split('\n').slice(0, -1).map((l) => {
    assert.equal(encodeLine(l.slice(9)).toString('utf8'), `${l}\n`, 'the line checks');
    return JSON.parse(l.slice(9));
  });
}
/** Start offsets of the lines of `buf`, and its length last. */
function offsets(buf: Buffer): number[] {
  const out = [0];
  for (let at = buf.indexOf(0x0a); at !== -1; at = buf.indexOf(0x0a, at + 1)) out.push(at + 1);
  return out;
}

test('a transaction that puts a record three times writes it once, with its last value; replay gives the same records, indexes and listener state', async () => {
  const file = join(tmp(), 'a.log');
  const { db, state } = await open(file);
  const t0 = db.begin();
  t0.put('t', 'old', { name: 'x', at: '01', group: 'g1' });
  t0.put('t', 'gone', { name: 'gone', at: '02', group: 'g1' });
  await db.commit(t0);
  const tx = db.begin();
  tx.put('t', 'k', { name: 'a', at: '10', group: 'g1', n: 1 });
  tx.put('u', 'side', { name: 'side', at: '00' });
  tx.put('t', 'k', { name: 'b', at: '11', group: 'g2', n: 2 });
  tx.put('t', 'old', { name: 'y', at: '05', group: 'g2' });
  tx.put('t', 'k', { name: 'c', at: '09', group: 'g3', n: 3 });
  tx.del('t', 'gone');
  tx.put('t', 'old', { name: 'z', at: '06' });
  await db.commit(tx);
  const live = state();
  assert.deepEqual(db.stats().ops, 2 + 4, 'the file holds 2 + 4 operations');
  await db.close();

  const [, line] = lines(file);
  // Each record once, at the place of its first operation, with its last value.
  assert.deepEqual(line, [
    ['p', 't', 'k', { name: 'c', at: '09', group: 'g3', n: 3 }],
    ['p', 'u', 'side', { name: 'side', at: '00' }],
    ['p', 't', 'old', { name: 'z', at: '06' }],
    ['d', 't', 'gone'],
  ]);
  const again = await open(file);
  assert.deepEqual(again.state(), live);
  assert.equal(again.db.stats().ops, 6);
  await again.db.close();

  // The same changes as an old log line holds them (every operation, in order) replay the same.
  const oldFile = join(tmp(), 'old.log');
  writeFileSync(oldFile, Buffer.concat([readFileSync(file).subarray(0, offsets(readFileSync(file))[1]), encodeLine(JSON.stringify(tx.ops))]));
  const old = await open(oldFile);
  assert.deepEqual(old.state(), live);
  await old.db.close();
});

test('the same id under two types is two records (both written); a transaction of more than 16 operations with a repeated record writes it once too', async () => {
  const file = join(tmp(), 'a.log');
  const { db } = await open(file);
  const small = db.begin();
  small.put('t', 'same', { name: 'as t', at: '01' });
  small.put('u', 'same', { name: 'as u', at: '01' });
  await db.commit(small);
  const big = db.begin();
  for (let i = 0; i < 20; i++) big.put('t', `k${i}`, { name: `v${i}`, at: '02' });
  big.put('t', 'k3', { name: 'last', at: '03' });
  await db.commit(big);
  await db.close();
  const [first, second] = lines(file) as unknown[][];
  assert.deepEqual(first, [['p', 't', 'same', { name: 'as t', at: '01' }], ['p', 'u', 'same', { name: 'as u', at: '01' }]]);
  assert.equal(second.length, 20);
  assert.deepEqual(second[3], ['p', 't', 'k3', { name: 'last', at: '03' }]);
});

test('a record created and deleted in one transaction is not written; deleted after a put it is one delete; a transaction whose changes cancel out writes nothing and still resolves in order', async () => {
  const file = join(tmp(), 'a.log');
  const { db, state } = await open(file);
  const t0 = db.begin(); t0.put('t', 'e', { name: 'e', at: '1' }); await db.commit(t0);
  const tx = db.begin();
  tx.put('t', 'new', { name: 'new', at: '2' });
  tx.put('t', 'e', { name: 'e2', at: '3' });
  tx.put('t', 'new', { name: 'new', at: '4' });
  tx.del('t', 'new');
  tx.del('t', 'e');
  tx.put('t', 'a', { name: 'a', at: '5' });
  await db.commit(tx);
  let committed = 0;
  db.afterCommit(() => { committed++; });
  const empty = db.begin();
  empty.put('t', 'tmp', { name: 'tmp', at: '6' });
  empty.del('t', 'tmp');
  const size = statSync(file).size;
  const later = db.begin(); later.put('t', 'b', { name: 'b', at: '7' });
  const order: string[] = [];
  await Promise.all([db.commit(empty).then(() => order.push('empty')), db.commit(later).then(() => order.push('later'))]);
  assert.deepEqual(order, ['empty', 'later']);
  assert.equal(committed, 2, 'the after-commit hook hears of both');
  assert.equal(statSync(file).size - size, encodeLine(JSON.stringify([['p', 't', 'b', { name: 'b', at: '7' }]])).length, 'the cancelled-out transaction wrote nothing');
  const live = state();
  await db.close();
  assert.deepEqual(lines(file), [
    [['p', 't', 'e', { name: 'e', at: '1' }]],
    [['d', 't', 'e'], ['p', 't', 'a', { name: 'a', at: '5' }]],
    [['p', 't', 'b', { name: 'b', at: '7' }]],
  ]);
  const again = await open(file);
  assert.deepEqual(again.state(), live);
  assert.equal(again.db.stats().ops, 4);
  await again.db.close();
});

test('a failed write of a transaction that put records several times is undone operation by operation: records, indexes and listeners are exactly as before', async () => {
  const file = join(tmp(), 'a.log');
  let fail = false;
  const fs: StoreFs = { ...nodeFs, write: async (fd, buf, pos) => { if (fail) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }); return nodeFs.write(fd, buf, pos); } };
  const { db, state } = await open(file, { fs });
  const t0 = db.begin();
  t0.put('t', 'a', { name: 'a', at: '1', group: 'g1' });
  t0.put('t', 'b', { name: 'b', at: '2', group: 'g1' });
  await db.commit(t0);
  const before = state();
  fail = true;
  const tx = db.begin();
  tx.put('t', 'a', { name: 'x', at: '3', group: 'g2' });
  tx.put('t', 'new', { name: 'new', at: '0', group: 'g3' });
  tx.put('t', 'a', { name: 'y', at: '4', group: 'g3' });
  tx.del('t', 'b');
  tx.put('t', 'b', { name: 'b', at: '9' });
  tx.del('t', 'new');
  tx.put('t', 'a', { name: 'z', at: '5' });
  await assert.rejects(db.commit(tx), /ENOSPC/);
  assert.deepEqual(state(), before);
  fail = false;
  const t2 = db.begin(); t2.put('t', 'a', { name: 'a', at: '6', group: 'g1' }); await db.commit(t2);
  const live = state();
  await db.close();
  const again = await open(file);
  assert.deepEqual(again.state(), live);
  await again.db.close();
});

test('pre-serialized values are taken for the operation they came with: the last one written, one replaced by a later plain put never written', async () => {
  const file = join(tmp(), 'a.log');
  const written: Buffer[] = [];
  const fs: StoreFs = { ...nodeFs, write: (fd, data, pos) => { written.push(...buffersOf(data)); return nodeFs.write(fd, data, pos); } };
  const { db } = await open(file, { fs });
  const utf8 = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));
  const big = (s: string) => ({ name: s, at: '1', pad: s.repeat(70_000) });
  const superseded = utf8(big('S'));
  const last = utf8(big('L'));
  const tx = db.begin();
  tx.put('t', 'a', big('S'), superseded); // raw, then replaced by a plain put
  tx.put('t', 'b', { name: 'b', at: '1' }); // plain, then replaced by a raw put
  tx.put('t', 'c', { name: 'c', at: '1' }, JSON.stringify({ name: 'c', at: '1' }));
  tx.put('t', 'a', { name: 'a', at: '2' });
  tx.put('t', 'b', big('L'), ['{"name":"L","at":"1","pad":', utf8('L'.repeat(70_000)), '}']);
  tx.put('t', 'c', { name: 'c2', at: '2' }, JSON.stringify({ name: 'c2', at: '2' }));
  tx.put('t', 'd', big('L'), last);
  await db.commit(tx);
  await db.close();
  const all = Buffer.concat(written);
  assert.ok(!all.includes(Buffer.from('SSSSSSSS')), 'the superseded pre-serialized value was not written');
  assert.ok(written.some((b) => b.buffer === last.buffer && b.byteOffset === last.byteOffset), 'a kept value made elsewhere is written from its own bytes');
  assert.deepEqual(lines(file), [[
    ['p', 't', 'a', { name: 'a', at: '2' }],
    ['p', 't', 'b', big('L')],
    ['p', 't', 'c', { name: 'c2', at: '2' }],
    ['p', 't', 'd', big('L')],
  ]]);
  const again = await open(file);
  assert.deepEqual(again.db.get('t', 'b'), big('L'));
  assert.deepEqual(again.db.get('t', 'a'), { name: 'a', at: '2' });
  await again.db.close();
});

test('compaction counts the operations written, not the puts made: an import-like transaction that re-puts its records leaves no dead operations to compact', async () => {
  const file = join(tmp(), 'a.log');
  let compactions = 0;
  const fs: StoreFs = { ...nodeFs, rename: (a, b) => { compactions++; return nodeFs.rename(a, b); } };
  // The rule on operations written after the snapshot block is set aside (tailSlack): this test watches the dead operations alone.
  const { db } = await open(file, { fs, compactionSlack: 10, tailSlack: 1_000_000 });
  const tx = db.begin();
  for (let c = 0; c < 50; c++) {
    for (let m = 0; m < 20; m++) tx.put('t', `c${c}`, { name: `c${c}`, at: `${m}`, n: m });
  }
  await db.commit(tx);
  assert.deepEqual({ live: db.stats().live, ops: db.stats().ops }, { live: 50, ops: 50 });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(compactions, 0, 'the 1,000 puts of 50 records left no dead operation');
  // Dead operations still count: an update per line adds one, and past 25 + 10 the log compacts.
  for (let c = 0; c < 35; c++) { const t = db.begin(); t.put('t', `c${c}`, { name: `c${c}`, at: 'z' }); await db.commit(t); }
  assert.deepEqual({ ops: db.stats().ops, compactions }, { ops: 85, compactions: 0 });
  const t = db.begin(); t.put('t', 'c0', { name: 'c0', at: 'y' }); await db.commit(t);
  await db.close();
  assert.equal(compactions, 1, '36 dead operations > 25 + 10: compacted');
});

test('a big transaction is a frame: begin marker, lines within the bound (a larger record alone on its line), commit marker; it loads back whole', async () => {
  const file = join(tmp(), 'a.log');
  const BOUND = 2048;
  const { db, state } = await open(file, { lineBytes: BOUND });
  const small = db.begin(); small.put('t', 's', { name: 's', at: '0' }); await db.commit(small);
  const tx = db.begin();
  for (let i = 0; i < 100; i++) tx.put('t', `k${i}`, { name: `n${i}`, at: String(i).padStart(3, '0'), group: `g${i % 3 + 1}` });
  tx.put('u', 'huge', { name: 'huge', at: '1', pad: 'h'.repeat(5000) });
  for (let i = 0; i < 100; i++) tx.put('t', `k${i}`, { name: `n${i}`, at: String(i).padStart(3, '0'), group: `g${i % 3 + 1}`, n: i });
  for (let i = 100; i < 150; i++) tx.put('u', `v${i}`, { name: `v${i}`, at: '2' });
  await db.commit(tx);
  const after = db.begin(); after.put('t', 'z', { name: 'z', at: '9' }); await db.commit(after);
  const live = state();
  await db.close();

  const buf = readFileSync(file);
  const starts = offsets(buf);
  const sizes = starts.slice(1).map((end, i) => end - starts[i]);
  const parsed = lines(file);
  assert.ok(parsed.length > 5, `${parsed.length} lines`);
  assert.deepEqual(parsed[1], { frame: 'begin', lines: parsed.length - 4, ops: 151 });
  assert.deepEqual(parsed[parsed.length - 2], { frame: 'commit', lines: parsed.length - 4, ops: 151 });
  const inside = parsed.slice(2, -2) as unknown[][][];
  assert.equal(inside.flat().length, 151, 'each record once');
  for (const [i, l] of inside.entries()) {
    const size = sizes[i + 2];
    if (l.length === 1 && l[0][2] === 'huge') assert.ok(size > BOUND, 'the record larger than the bound is a line of its own');
    else assert.ok(size <= BOUND, `line ${i + 3} is ${size} bytes`);
  }
  assert.deepEqual(inside.flat().map((op) => op[2]).slice(0, 102), [...Array.from({ length: 100 }, (_, i) => `k${i}`), 'huge', 'v100']);
  assert.deepEqual((inside.flat()[7] as unknown[])[3], { name: 'n7', at: '007', group: 'g2', n: 7 });
  const again = await open(file, { lineBytes: BOUND });
  assert.deepEqual(again.state(), live);
  assert.equal(again.db.replay.lines, parsed.length);
  assert.equal(again.db.stats().ops, 153);
  await again.db.close();
  // The bound only shapes what is written: a log loads whatever bound wrote it.
  const other = await open(file);
  assert.deepEqual(other.state(), live);
  await other.db.close();
});

test('a frame larger than a batch spans batches, with no other line between its lines; its commit resolves only when the commit marker is synced; lines committed around it keep their order', { timeout: 20_000 }, async () => {
  const file = join(tmp(), 'a.log');
  const syncs: Array<() => void> = [];
  let holding = true;
  const fs: StoreFs = viaFdatasync({ ...nodeFs, fdatasync: (fd) => (holding ? new Promise<void>((r) => syncs.push(() => nodeFs.fdatasync(fd).then(r))) : nodeFs.fdatasync(fd)) });
  const { db } = await open(file, { fs });
  const settled: string[] = [];
  const one = (id: string) => { const t = db.begin(); t.put('t', id, { name: id, at: id }); return db.commit(t).then(() => settled.push(id)); };
  const pad = 'p'.repeat(100_000);
  const a = one('a');
  const tx = db.begin();
  for (let i = 0; i < 60; i++) tx.put('u', `b${i}`, { name: `b${i}`, at: 'b', pad }); // ~6 MB: more than one batch
  const big = db.commit(tx).then(() => settled.push('big'));
  const c = one('c');
  while (syncs.length < 1) await new Promise((r) => setImmediate(r));
  syncs.shift()!();
  while (syncs.length < 1) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(settled, ['a'], 'the frame\'s first batch is synced, but not its commit marker');
  holding = false;
  for (const s of syncs.splice(0)) s();
  await Promise.all([a, big, c]);
  assert.deepEqual(settled, ['a', 'big', 'c']);
  await db.close();
  const parsed = lines(file);
  const begin = parsed.findIndex((l) => (l as { frame?: string }).frame === 'begin');
  const commit = parsed.findIndex((l) => (l as { frame?: string }).frame === 'commit');
  assert.equal(begin, 1);
  assert.equal(commit, parsed.length - 2);
  assert.ok(statSync(file).size > MAX_BATCH_BYTES && LINE_BYTES < MAX_BATCH_BYTES);
  assert.ok(parsed.slice(begin + 1, commit).every((l) => Array.isArray(l) && (l as unknown[][]).every((op) => String(op[2]).startsWith('b'))), 'only the frame\'s lines between its markers');
  const again = await open(file);
  assert.equal(again.db.table('u').size, 60);
  assert.deepEqual([again.db.get('t', 'a')?.name, again.db.get('t', 'c')?.name], ['a', 'c']);
  await again.db.close();
});

test('a write that fails in the middle of a frame cuts the file back to the frame\'s begin marker; the transaction is undone and later writes go on', { timeout: 20_000 }, async () => {
  const file = join(tmp(), 'a.log');
  let writes = 0;
  let failAt = Infinity;
  const fs: StoreFs = {
    ...nodeFs,
    write: async (fd, data, pos) => {
      // Out of space: writes go on after it (an I/O error on the O_DSYNC descriptor is final).
      if (++writes === failAt) { await nodeFs.write(fd, bytesOf(data).subarray(0, 100), pos); throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }); }
      return nodeFs.write(fd, data, pos);
    },
  };
  const { db, state } = await open(file, { fs });
  const t0 = db.begin(); t0.put('t', 'a', { name: 'a', at: '1' }); await db.commit(t0);
  const before = state();
  const size = statSync(file).size;
  failAt = writes + 2; // the frame's second batch (each batch is one write; the first holds the begin marker)
  const tx = db.begin();
  for (let i = 0; i < 60; i++) tx.put('u', `b${i}`, { name: `b${i}`, at: 'b', pad: 'p'.repeat(100_000) });
  await assert.rejects(db.commit(tx), /ENOSPC/);
  assert.ok(writes >= failAt);
  assert.equal(statSync(file).size, size, 'cut back to where the frame began');
  assert.deepEqual(state(), before);
  const t2 = db.begin(); t2.put('t', 'c', { name: 'c', at: '2' }); await db.commit(t2);
  await db.close();
  const again = await open(file);
  assert.equal(again.db.table('u').size, 0);
  assert.deepEqual(again.db.get('t', 'c'), { name: 'c', at: '2' });
  assert.equal(again.db.replay.tornTailSavedTo, undefined);
  await again.db.close();
});

test('compaction asked for while a frame is half written waits for its commit marker, then snapshots it', { timeout: 20_000 }, async () => {
  const file = join(tmp(), 'a.log');
  const syncs: Array<() => void> = [];
  let holding = true;
  const fs: StoreFs = viaFdatasync({ ...nodeFs, fdatasync: (fd) => (holding ? new Promise<void>((r) => syncs.push(() => nodeFs.fdatasync(fd).then(r))) : nodeFs.fdatasync(fd)) });
  const { db } = await open(file, { fs, compactionSlack: 1_000_000 });
  for (let i = 0; i < 5; i++) { holding = false; const t = db.begin(); t.put('t', 'a', { name: 'a', at: String(i) }); await db.commit(t); }
  holding = true;
  const tx = db.begin();
  for (let i = 0; i < 60; i++) tx.put('u', `b${i}`, { name: `b${i}`, at: 'b', pad: 'p'.repeat(100_000) });
  const big = db.commit(tx);
  while (syncs.length < 1) await new Promise((r) => setImmediate(r));
  const compaction = db.compact(); // the frame's first batch is written, its commit marker is not
  const late = db.begin(); late.put('t', 'late', { name: 'late', at: 'x' });
  const lateDone = db.commit(late);
  holding = false;
  for (const s of syncs.splice(0)) s();
  await Promise.all([big, compaction, lateDone]);
  await db.close();
  const parsed = lines(file);
  assert.ok(parsed.every((l) => Array.isArray(l) || typeof (l as { snapshot?: unknown }).snapshot === 'string'), 'the compacted log has no frame left: put lines and its snapshot block');
  const again = await open(file);
  assert.equal(again.db.table('u').size, 60);
  assert.deepEqual(again.db.get('t', 'a'), { name: 'a', at: '4' });
  assert.deepEqual(again.db.get('t', 'late'), { name: 'late', at: 'x' });
  assert.equal(again.db.replay.tornTailSavedTo, undefined);
  await again.db.close();
});

test('compaction writes lines within the bound (a larger record alone on its line), each a transaction of its own', async () => {
  const file = join(tmp(), 'a.log');
  const BOUND = 1024;
  const { db, state } = await open(file, { lineBytes: BOUND, compactionSlack: 1_000_000 });
  for (let round = 0; round < 3; round++) {
    const tx = db.begin();
    for (let i = 0; i < 80; i++) tx.put('t', `k${i}`, { name: `n${i}`, at: String(i).padStart(2, '0'), n: round });
    tx.put('u', 'huge', { name: 'huge', at: '1', pad: 'h'.repeat(3000 + round) });
    await db.commit(tx);
  }
  const live = state();
  await db.compact();
  await db.close();
  const buf = readFileSync(file);
  const starts = offsets(buf);
  const parsed = lines(file);
  assert.ok(parsed.length > 3);
  for (const [i, l] of parsed.entries()) {
    const size = starts[i + 1] - starts[i];
    if (!Array.isArray(l)) {
      // The snapshot block's lines (docs/storage.md#snapshots) keep to the bound too.
      assert.equal(typeof (l as { snapshot?: unknown }).snapshot, 'string', 'no frame in a compacted log');
      assert.ok(size <= BOUND, `snapshot line ${i + 1}: ${size} bytes`);
      continue;
    }
    if ((l as unknown[][]).some((op) => op[2] === 'huge')) { assert.equal((l as unknown[]).length, 1); assert.ok(size > BOUND); } else assert.ok(size <= BOUND, `line ${i + 1}: ${size} bytes`);
  }
  assert.ok(parsed.filter((l) => !Array.isArray(l)).length > 3, 'the block spans several lines');
  const again = await open(file, { lineBytes: BOUND });
  // A listener of every type (the mirror) cannot be restored: the block is used, but every type is parsed and replayed through the listeners.
  assert.deepEqual({ snapshot: again.db.loadInfo.snapshot, lazy: again.db.loadInfo.lazy, replayed: again.db.loadInfo.replayedTypes.sort() }, { snapshot: true, lazy: 0, replayed: ['t', 'u'] });
  assert.deepEqual(again.state(), live);
  await again.db.close();
});

// ── Recovery of frames ──

/** A log of: a small transaction, a frame of several lines, and (when `after`) another small one. Returns the file, its bytes and its line offsets. */
async function framedLog(after = false) {
  const dir = tmp();
  const file = join(dir, 'a.log');
  const { db } = await open(file, { lineBytes: 512 });
  const t0 = db.begin(); t0.put('t', 'first', { name: 'first', at: '0' }); await db.commit(t0);
  const tx = db.begin();
  for (let i = 0; i < 30; i++) tx.put('u', `f${i}`, { name: `f${i}`, at: String(i) });
  await db.commit(tx);
  if (after) { const t2 = db.begin(); t2.put('t', 'last', { name: 'last', at: '9' }); await db.commit(t2); }
  await db.close();
  const buf = readFileSync(file);
  return { dir, file, buf, starts: offsets(buf) };
}

test('a log cut anywhere inside a frame (at each line boundary, in the middle of each line) loads with none of the frame and the earlier transaction whole; the frame is set aside like a torn tail', async () => {
  const { buf, starts } = await framedLog();
  const frameStart = starts[1];
  const end = buf.length;
  assert.ok(starts.length >= 6, `${starts.length - 1} lines`);
  const cuts = new Set<number>();
  for (let i = 1; i < starts.length - 1; i++) {
    cuts.add(starts[i]); // at a boundary: after the begin marker, after each op line, before the commit marker
    cuts.add(starts[i] + 1);
    cuts.add(Math.floor((starts[i] + starts[i + 1]) / 2));
    cuts.add(starts[i + 1] - 1); // the whole line but its newline
  }
  cuts.delete(frameStart); // cut exactly before the frame: an ordinary log of one line
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    assert.ok(cut > frameStart && cut < end);
    const dir = tmp();
    const file = join(dir, 'a.log');
    writeFileSync(file, buf.subarray(0, cut));
    const { db } = await open(file);
    assert.deepEqual(db.get('t', 'first'), { name: 'first', at: '0' }, `cut at ${cut}`);
    assert.equal(db.table('u').size, 0, `cut at ${cut}: none of the frame`);
    assert.equal(db.stats().ops, 1);
    assert.deepEqual({ size: db.replay.size, lines: db.replay.lines }, { size: frameStart, lines: 1 });
    assert.equal(statSync(file).size, frameStart, 'the log is cut where the frame began');
    const saved = readdirSync(dir).filter((f) => f.includes('.corrupt-'));
    assert.equal(saved.length, 1);
    assert.equal(db.replay.tornTailSavedTo, join(dir, saved[0]));
    assert.deepEqual(readFileSync(join(dir, saved[0])), buf.subarray(frameStart, cut), 'the frame\'s bytes are kept aside');
    assert.equal(statSync(join(dir, saved[0])).mode & 0o777, 0o600);
    // Still appendable after the cut, and it loads.
    const t = db.begin(); t.put('t', 'next', { name: 'next', at: '1' }); await db.commit(t);
    await db.close();
    const again = await open(file);
    assert.deepEqual([again.db.table('t').size, again.db.table('u').size], [2, 0]);
    await again.db.close();
    // scanLog agrees: the frame is the torn tail.
    writeFileSync(file, buf.subarray(0, cut));
    const scan = scanLog(file);
    assert.equal(scan.firstBad, undefined);
    assert.deepEqual({ goodLines: scan.goodLines, goodBytes: scan.goodBytes }, { goodLines: 1, goodBytes: frameStart });
  }
  // Cut right after the commit marker: everything is there.
  const dir = tmp();
  writeFileSync(join(dir, 'a.log'), buf);
  const { db } = await open(join(dir, 'a.log'));
  assert.equal(db.table('u').size, 30);
  assert.equal(db.replay.tornTailSavedTo, undefined);
  await db.close();
});

test('a whole frame followed by a torn line: the frame is applied, the torn line set aside', async () => {
  const { dir, file, buf } = await framedLog();
  appendFileSync(file, '0badc0de [["p","t","x"');
  const { db } = await open(file);
  assert.equal(db.table('u').size, 30);
  assert.equal(statSync(file).size, buf.length);
  const saved = readdirSync(dir).filter((f) => f.includes('.corrupt-'));
  assert.equal(readFileSync(join(dir, saved[0]), 'utf8'), '0badc0de [["p","t","x"');
  await db.close();
});

test('a flipped byte inside a frame line is corruption naming that line; repair cuts the log where the frame began', async () => {
  const { file, buf, starts } = await framedLog(true);
  const lineNo = 4; // an op line inside the frame (line 2 is its begin marker)
  const damaged = Buffer.from(buf);
  const at = damaged.indexOf('"name"', starts[lineNo - 1]) + 2;
  damaged[at] ^= 0x01;
  writeFileSync(file, damaged);
  await assert.rejects(open(file), (err: unknown) => {
    assert.ok(err instanceof CorruptLogError);
    assert.deepEqual([err.line, err.offset, err.reason], [lineNo, starts[lineNo - 1], 'checksum mismatch']);
    return true;
  });
  assert.deepEqual(readFileSync(file), damaged, 'nothing was cut');
  const total = starts.length - 1;
  const scan = scanLog(file);
  assert.deepEqual(scan, {
    size: buf.length, goodLines: 1, goodBytes: starts[1], firstBad: { line: lineNo, offset: starts[lineNo - 1], reason: 'checksum mismatch' },
    droppedLines: total - 1, droppedValidLines: total - 2,
  });
  const r = repairLog(file, 1);
  assert.equal(r.droppedBytes, buf.length - starts[1]);
  const { db } = await open(file);
  assert.deepEqual([db.table('t').size, db.table('u').size], [1, 0]);
  await db.close();
});

test('frame rules broken in complete lines are corruption: a begin without commit followed by another transaction, a commit without begin, a begin inside a frame, a commit that does not match', async () => {
  const { buf, starts } = await framedLog(true);
  const n = starts.length - 1; // lines: first, begin, …ops…, commit, last
  const line = (i: number) => buf.subarray(starts[i - 1], starts[i]);
  const cases: Array<[string, Buffer, number, RegExp]> = [
    ['the commit marker lost, the next transaction after the frame', Buffer.concat([buf.subarray(0, starts[n - 2]), line(n)]), n - 1, /has its \d+ lines, but this line is not its commit marker/],
    ['a commit marker without its begin', Buffer.concat([line(1), line(n - 1)]), 2, /commit marker without its begin marker/],
    ['a begin marker inside a frame', Buffer.concat([line(1), line(2), line(3), line(2)]), 4, /a frame begins inside the frame begun at line 2/],
    ['an op line lost inside the frame', Buffer.concat([buf.subarray(0, starts[3]), buf.subarray(starts[4])]), n - 2, /does not match the frame begun at line 2/],
    ['a commit marker that does not match', Buffer.concat([buf.subarray(0, starts[n - 2]), encodeLine(JSON.stringify({ frame: 'commit', lines: n - 3, ops: 31 })), line(n)]), n - 1, /does not match/],
    ['a marker of another shape', Buffer.concat([line(1), encodeLine(JSON.stringify({ frame: 'begin', lines: 0, ops: 1 }))]), 2, /not a transaction/],
  ];
  for (const [what, bytes, badLine, reason] of cases) {
    const dir = tmp();
    const file = join(dir, 'a.log');
    writeFileSync(file, bytes);
    await assert.rejects(open(file), (err: unknown) => {
      assert.ok(err instanceof CorruptLogError, what);
      assert.equal(err.line, badLine, `${what}: ${err.message}`);
      assert.match(err.reason, reason, what);
      return true;
    });
    assert.deepEqual(readFileSync(file), bytes, `${what}: nothing was cut`);
    assert.deepEqual(readdirSync(dir), ['a.log'], `${what}: nothing was set aside`);
    // The repair keeps the whole transactions before the frame the bad line is in.
    repairLog(file, 1);
    const { db } = await open(file);
    assert.deepEqual(db.get('t', 'first'), { name: 'first', at: '0' }, what);
    assert.equal(db.table('u').size, 0, what);
    await db.close();
  }
});

test('an old log (one line per transaction, a record put several times in a line) loads unchanged', async () => {
  const file = join(tmp(), 'a.log');
  writeFileSync(file, Buffer.concat([
    encodeLine(JSON.stringify([['p', 't', 'a', { name: 'a', at: '1' }], ['p', 't', 'a', { name: 'a2', at: '2', group: 'g1' }], ['p', 'u', 'x', { name: 'x', at: '0' }]])),
    encodeLine(JSON.stringify([['d', 'u', 'x'], ['p', 't', 'b', { name: 'b', at: '3', group: 'g1' }]])),
  ]));
  const { db, state } = await open(file);
  const s = state();
  assert.deepEqual(s.t, [['a', { name: 'a2', at: '2', group: 'g1' }], ['b', { name: 'b', at: '3', group: 'g1' }]]);
  assert.deepEqual(s.byGroup.find(([g]) => g === 'g1'), ['g1', ['a', 'b']]);
  assert.equal(db.stats().ops, 5);
  await db.close();
});
