/**
 * SortedIndex (src/store/memory/sorted.ts): entries kept as (sortKey, id) pairs must list in exactly
 * the string order of their composite keys `sortKey + "\0" + id` — the order cursors rely on —
 * checked against a plain sorted array of composite strings over random operations.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SortedIndex, compositeKey } from '../src/store/memory/sorted.js';
import { mulberry32 as rng } from './helpers/prng.js';


const asc = (idx: SortedIndex, from?: string) => [...idx.asc(from)].map((i) => idx.keyAt(i));
const desc = (idx: SortedIndex, before?: string) => [...idx.desc(before)].map((i) => idx.keyAt(i));

test('SortedIndex: appends, inserts and removes keep composite-key order; duplicates and absent removals are no-ops', () => {
  const idx = new SortedIndex();
  idx.add('2025-01-02', 'b');
  idx.add('2025-01-01', 'z');
  idx.add('2025-01-02', 'a');
  idx.add('2025-01-02', 'a');
  idx.add('2025-01-0', 'q'); // a sort key that is a prefix of another sorts first
  idx.remove('2025-01-03', 'a');
  idx.remove('2025-01-02', 'z');
  assert.deepEqual(asc(idx), ['2025-01-0\0q', '2025-01-01\0z', '2025-01-02\0a', '2025-01-02\0b']);
  assert.equal(idx.size, 4);
  assert.deepEqual(desc(idx, '2025-01-02\0b'), ['2025-01-02\0a', '2025-01-01\0z', '2025-01-0\0q']);
  assert.deepEqual(asc(idx, '2025-01-01\0z'), ['2025-01-02\0a', '2025-01-02\0b']);
  // A bound that is not a composite key (analytics passes a date): everything at or after it.
  assert.deepEqual(asc(idx, '2025-01-02'), ['2025-01-02\0a', '2025-01-02\0b']);
  assert.deepEqual([idx.idAt(0), idx.sortKeyAt(0)], ['q', '2025-01-0']);
  idx.remove('2025-01-02', 'a');
  assert.deepEqual(asc(idx), ['2025-01-0\0q', '2025-01-01\0z', '2025-01-02\0b']);
});

test('SortedIndex: 20 seeds × 400 random operations agree with a sorted array of composite strings', () => {
  const alphabet = ['a', 'b', 'ab', '', '2025', '2025-01', 'z'];
  // Sort keys with "\0" at the same place in each (custom fields' `position \0 createdAt`).
  const fixed = ['0000000001\0' + '2025-01-01', '0000000001\0' + '2025-01-02', '0000000002\0' + '2024-12-31', '0000000010\0' + '2025-01-01'];
  for (let seed = 1; seed <= 20; seed++) {
    const r = rng(seed);
    const pick = <T>(a: T[]) => a[Math.floor(r() * a.length)];
    const keys = seed % 2 ? alphabet.flatMap((a) => alphabet.map((b) => a + b)) : fixed;
    const idx = new SortedIndex();
    const ref = new Set<string>();
    const sorted = () => [...ref].sort();
    for (let op = 0; op < 400; op++) {
      const sk = pick(keys);
      const id = pick(['1', '2', '10', 'x', 'xy']);
      if (r() < 0.65) { idx.add(sk, id); ref.add(compositeKey(sk, id)); } else { idx.remove(sk, id); ref.delete(compositeKey(sk, id)); }
      if (op % 20 === 0) {
        const all = sorted();
        assert.deepEqual(asc(idx), all, `seed ${seed} op ${op}`);
        assert.equal(idx.size, all.length);
        const bound = r() < 0.5 && all.length ? pick(all) : r() < 0.5 ? compositeKey(pick(keys), pick(['1', '5', 'y'])) : pick(alphabet) + pick(alphabet); // a bare bound (a date) never has \0
        assert.deepEqual(asc(idx, bound), all.filter((k) => k > bound), `asc from ${JSON.stringify(bound)}`);
        assert.deepEqual(desc(idx, bound), all.filter((k) => k < bound).reverse(), `desc before ${JSON.stringify(bound)}`);
      }
    }
  }
});

test('SortedIndex packed (restored from a snapshot block: times as epoch ms, ids by position) reads as the same index in arrays, and unpacks on its first change (10 seeds)', async () => {
  const { ArrayIds } = await import('../src/store/memory/ids.js');
  for (let seed = 1; seed <= 10; seed++) {
    const r = rng(seed);
    const base = Date.UTC(2025, 0, 1);
    const n = 1 + Math.floor(r() * 60);
    const entries: Array<[string, string]> = [];
    for (let i = 0; i < n; i++) entries.push([new Date(base + Math.floor(r() * 20) * 1000).toISOString(), `id${Math.floor(r() * 1000)}`]);
    entries.sort((a, b) => (a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]) ? -1 : a[0] === b[0] && a[1] === b[1] ? 0 : 1));
    const uniq = entries.filter((e, i) => i === 0 || e[0] !== entries[i - 1][0] || e[1] !== entries[i - 1][1]);
    const plain = new SortedIndex();
    for (const [k, id] of uniq) plain.add(k, id);
    // Packed in the middle of shared arrays, as a map of indexes restores them.
    const pad = 3;
    const ms = new Float64Array(uniq.length + 2 * pad).fill(0);
    const refs = new Uint32Array(uniq.length + 2 * pad);
    const ids = uniq.map(([, id]) => id).reverse();
    uniq.forEach(([k], i) => { ms[pad + i] = Date.parse(k); refs[pad + i] = uniq.length - 1 - i; });
    const packed = new SortedIndex();
    packed.replacePacked({ ms, refs, ids: new ArrayIds(ids), first: 1000 }, pad, uniq.length);
    const bounds = [undefined, '2025-01-01', '2025-01-01T00:00:05.000Z', compositeKey('2025-01-01T00:00:07.000Z', 'id5'), ...uniq.slice(0, 5).map(([k, id]) => compositeKey(k, id)), 'zzz', ''];
    for (const b of bounds) {
      assert.deepEqual(asc(packed, b), asc(plain, b), `seed ${seed} asc ${b}`);
      assert.deepEqual(desc(packed, b), desc(plain, b), `seed ${seed} desc ${b}`);
      // With an upper bound (a time): exactly the entries whose sort key is below it.
      for (const below of ['2025-01-01T00:00:10.000Z', '2025-01-01T00:00:00.000Z', '2025-01-02', '2024']) {
        const want = asc(plain, b).filter((k) => k.slice(0, k.indexOf('\u0000')) < below);
        assert.deepEqual([...packed.asc(b, below)].map((i) => packed.keyAt(i)), want, `seed ${seed} asc ${b} below ${below}`);
        assert.deepEqual([...plain.asc(b, below)].map((i) => plain.keyAt(i)), want, `seed ${seed} plain asc ${b} below ${below}`);
      }
    }
    assert.equal(packed.size, plain.size);
    for (let i = 0; i < plain.size; i++) assert.deepEqual([packed.idAt(i), packed.sortKeyAt(i), packed.keyAt(i)], [plain.idAt(i), plain.sortKeyAt(i), plain.keyAt(i)]);
    // A packed copy names its records by their refs in the block (first + position), with their times.
    const pc = packed.copy();
    assert.deepEqual([...pc.loaded!].map((r) => ids[r - 1000]), plain.copy().ids);
    assert.deepEqual([...pc.ms!].map((t) => new Date(t).toISOString()), plain.copy().keys);
    for (let op = 0; op < 40; op++) {
      const k = new Date(base + Math.floor(r() * 25) * 1000).toISOString();
      const id = `id${Math.floor(r() * 1000)}`;
      const [x] = r() < 0.5 ? uniq[Math.floor(r() * uniq.length)] ?? [k, id] : [k, id];
      if (r() < 0.6) { packed.add(x, id); plain.add(x, id); } else { packed.remove(x, id); plain.remove(x, id); }
      assert.deepEqual(asc(packed), asc(plain), `seed ${seed} after op ${op}`);
    }
  }
});
