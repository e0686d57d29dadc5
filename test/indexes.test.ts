/**
 * Indexes declared as data (src/store/indexes.ts) and the log's per-type hooks (src/store/db.ts:
 * `on`, `derive`, `retain`, values prepared for a put): every index must equal what a scan of
 * the table gives after puts, updates, deletes, an aborted transaction, a failed write and a
 * replay; derived records are written and undone with their cause.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Db, type WithPrepared } from '../src/store/db.js';
import { attachIndexes, groupBy, orderBy, uniqueBy } from '../src/store/indexes.js';
import { nodeFs, type StoreFs } from '../src/store/log/fs.js';
import type { SortedIndex } from '../src/store/memory/sorted.js';
import { mulberry32 as rng } from './helpers/prng.js';

interface Ticket { id: string; createdAt: string; code?: string; team: string | null }
interface Tally { n: number }
interface Records { ticket: Ticket; tally: Tally; blob: WithPrepared<{ text: string }, { words: number }> }

const ticketIndexes = {
  order: orderBy((t: Ticket) => t.createdAt),
  byCode: uniqueBy((t: Ticket) => t.code),
  byTeam: groupBy((t: Ticket) => t.team),
};

const file = () => join(mkdtempSync(join(tmpdir(), 'sw-idx-')), 'a.log');

/** Opens `path` with the ticket indexes attached before the replay. */
async function open(path: string, fs: StoreFs = nodeFs) {
  const db = Db.create<Records>(path, { fs, sync: false });
  const idx = attachIndexes(db, 'ticket', ticketIndexes);
  await db.load();
  return { db, idx };
}

const ids = (s: SortedIndex) => [...s.asc()].map((i) => s.idAt(i));

/** Every index against a scan of the table. */
function assertConsistent(db: Db<Records>, idx: Awaited<ReturnType<typeof open>>['idx']): void {
  const rows = [...db.table('ticket').values()];
  const byOrder = [...rows].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1)).map((t) => t.id);
  assert.deepEqual(ids(idx.order), byOrder);
  const codes = rows.filter((t) => t.code);
  assert.equal(idx.byCode.size, codes.length);
  for (const t of codes) assert.equal(idx.byCode.get(t.code!), t.id);
  const teams = new Map<string, string[]>();
  for (const t of rows) if (t.team) teams.set(t.team, [...(teams.get(t.team) ?? []), t.id]);
  assert.equal(idx.byTeam.size, teams.size);
  for (const [team, members] of teams) assert.deepEqual([...idx.byTeam.get(team)!].sort(), members.sort());
}

test('declared indexes follow puts, updates, deletes, aborts and a replay (10 seeds × 300 operations)', async () => {
  for (let seed = 1; seed <= 10; seed++) {
    const r = rng(seed);
    const path = file();
    const { db, idx } = await open(path);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
    for (let op = 0; op < 300; op++) {
      const tx = db.begin();
      for (let k = 0; k < 1 + Math.floor(r() * 3); k++) {
        const id = `t${Math.floor(r() * 40)}`;
        const prev = db.get('ticket', id);
        if (prev && r() < 0.2) { tx.del('ticket', id); continue; }
        // Codes are unique, as an area keeps them: a code is taken only when free.
        const code = pick([undefined, '', `c${Math.floor(r() * 60)}`]);
        const free = code === undefined || code === '' || idx.byCode.get(code) === undefined || idx.byCode.get(code) === id;
        tx.put('ticket', id, {
          id, createdAt: prev && r() < 0.7 ? prev.createdAt : `2026-01-${String(1 + Math.floor(r() * 28)).padStart(2, '0')}`,
          ...(free && code !== undefined ? { code } : prev?.code !== undefined ? { code: prev.code } : {}),
          team: pick([null, 'a', 'b', 'c']),
        });
      }
      if (r() < 0.2) tx.abort(); else await db.commit(tx);
      assertConsistent(db, idx);
    }
    await db.close();
    const again = await open(path);
    assertConsistent(again.db, again.idx);
    assert.deepEqual(ids(again.idx.order), ids(idx.order));
    await again.db.close();
  }
});

test('a failed write undoes its changes in every index', async () => {
  let fail = false;
  const fs: StoreFs = { ...nodeFs, write: async (fd, buf, pos) => { if (fail) throw Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' }); return nodeFs.write(fd, buf, pos); } };
  const { db, idx } = await open(file(), fs);
  const tx = db.begin();
  tx.put('ticket', 'a', { id: 'a', createdAt: '2026-01-01', code: 'x', team: 'red' });
  await db.commit(tx);
  fail = true;
  const bad = db.begin();
  bad.put('ticket', 'a', { id: 'a', createdAt: '2026-01-05', code: 'y', team: 'blue' });
  bad.put('ticket', 'b', { id: 'b', createdAt: '2026-01-02', code: 'x2', team: 'red' });
  assert.deepEqual([idx.byCode.get('y'), idx.byTeam.get('red')?.size], ['a', 1], 'visible at once');
  await assert.rejects(db.commit(bad), /ENOSPC/);
  assert.deepEqual([ids(idx.order), idx.byCode.get('x'), idx.byCode.get('y'), idx.byCode.get('x2'), [...idx.byTeam.get('red')!], idx.byTeam.get('blue')],
    [['a'], 'a', undefined, undefined, ['a'], undefined]);
});

test('an index declared on an existing log is filled by the replay: adding an indexed field is one declaration', async () => {
  const path = file();
  const first = await open(path);
  const tx = first.db.begin();
  for (const [id, team] of [['a', 'red'], ['b', 'blue'], ['c', 'red']] as const) tx.put('ticket', id, { id, createdAt: '2026-01-01', team });
  await first.db.commit(tx);
  await first.db.close();
  const db = Db.create<Records>(path, { fs: nodeFs, sync: false });
  const more = attachIndexes(db, 'ticket', { ...ticketIndexes, byTeamAgain: groupBy((t: Ticket) => t.team) });
  await db.load();
  assert.deepEqual([...more.byTeamAgain.get('red')!].sort(), ['a', 'c']);
  assert.deepEqual([...more.byTeamAgain.get('blue')!], ['b']);
});

test('a value prepared for a put reaches the listeners with that put only: not on replay, not on undo', async () => {
  const path = file();
  const seen: Array<[string, string | undefined, number | undefined]> = [];
  const make = () => {
    const db = Db.create<Records>(path, { fs: nodeFs, sync: false });
    db.on('blob', (id, _prev, next, prepared) => seen.push([id, next?.text, prepared?.words]));
    return db;
  };
  const db = await make().load();
  const tx = db.begin();
  tx.put('blob', 'b1', { text: 'one two three' }, undefined, { words: 3 });
  await db.commit(tx);
  const undone = db.begin();
  undone.put('blob', 'b1', { text: 'four' }, undefined, { words: 1 });
  undone.abort();
  // Checked by the compiler only (never called): the record map types every put.
  const _typed = (t: typeof tx) => {
    // @ts-expect-error a prepared value of another shape
    t.put('blob', 'b2', { text: 'x' }, undefined, { letters: 1 });
    // @ts-expect-error a record of another type
    t.put('ticket', 't', { text: 'x' });
    // @ts-expect-error a prepared value for a type that takes none
    t.put('tally', 'all', { n: 1 }, undefined, { words: 1 });
  };
  await db.close();
  assert.deepEqual(seen, [['b1', 'one two three', 3], ['b1', 'four', 1], ['b1', 'one two three', undefined]]);
  seen.length = 0;
  const again = await make().load();
  assert.deepEqual(seen, [['b1', 'one two three', undefined]]);
  await again.close();
});

test('derived records are written with their cause and undone with it; retain drops records at compaction', async () => {
  const path = file();
  const make = () => {
    const db = Db.create<Records>(path, { fs: nodeFs, sync: false, compactionSlack: 1_000_000 });
    db.derive('ticket', (tx, _id, prev) => { if (!prev) tx.put('tally', 'all', { n: (db.get('tally', 'all')?.n ?? 0) + 1 }); });
    db.retain('ticket', (t) => t.team !== null);
    return db;
  };
  const db = await make().load();
  for (const id of ['a', 'b']) { const tx = db.begin(); tx.put('ticket', id, { id, createdAt: '2026-01-01', team: id === 'a' ? null : 'red' }); await db.commit(tx); }
  const aborted = db.begin();
  aborted.put('ticket', 'c', { id: 'c', createdAt: '2026-01-01', team: 'red' });
  assert.deepEqual(db.get('tally', 'all'), { n: 3 });
  aborted.abort();
  assert.deepEqual(db.get('tally', 'all'), { n: 2 });
  await db.compact();
  await db.close();
  const again = await Db.open<Records>(path, { fs: nodeFs, sync: false });
  assert.deepEqual([again.get('tally', 'all'), again.get('ticket', 'a'), again.get('ticket', 'b')?.team], [{ n: 2 }, undefined, 'red']);
  await again.close();
});
