/**
 * One record type's records in memory (docs/storage.md#snapshots): a `Map` of id → record for
 * what was put since the log was loaded, over a *base* of the records loaded from the snapshot
 * block, if any.
 *
 * The base is what lets a start skip a million `Map` inserts: the block's ids in file order (the
 * strings the indexes share), the records' bytes in {@link LazyRecords} (refs `first`…), and a
 * permutation of them by id, written by compaction, that a binary search walks. A base record
 * is parsed on its first read and kept; a change keeps it in its place; a delete marks it dead.
 * Records never in the base live in the map.
 *
 * Iteration order is a `Map`'s: insertion order, a changed record keeping its place — the base
 * records in file order (the order they had before the compaction), then the others.
 */
import type { LazyRecords } from './lazy.js';
import type { IdList } from './ids.js';

/** A table's entry as compaction captures it: the record, or the lazy ref of its bytes. */
export type Entry = object | number;

class Base {
  /** Parsed (or changed) records by base position; null until the first one. */
  objs: Array<object | undefined> | null = null;
  /**
   * Base positions of the ids looked up so far: a second lookup of a record (most reads and
   * writes touch the same few, and a write touches its record twice) costs a `Map` lookup, not
   * ~20 comparisons of a binary search.
   */
  private readonly hot = new Map<string, number>();
  readonly dead: Uint8Array;
  live: number;
  /** Records in the base: positions 0…n-1. */
  readonly n: number;
  constructor(readonly ids: IdList, readonly first: number, readonly perm: Uint32Array, readonly lazy: LazyRecords) {
    this.n = perm.length;
    this.dead = new Uint8Array(this.n);
    this.live = this.n;
  }

  /** The id at base position `at`. */
  id(at: number): string { return this.ids.at(at); }

  /** The base position of live record `id`, or -1. */
  find(id: string): number {
    const h = this.hot.get(id);
    if (h !== undefined) return this.dead[h] === 1 ? -1 : h;
    const { ids, perm } = this;
    let lo = 0;
    let hi = perm.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = perm[mid];
      const c = ids.compare(at, id);
      if (c === 0) {
        if (this.dead[at] === 1) return -1;
        this.hot.set(id, at);
        return at;
      }
      if (c < 0) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
  }

  /** The record at base position `at` (live), parsed now if it was not yet. */
  value(at: number): object {
    const v = this.objs?.[at];
    if (v !== undefined) return v;
    const rec = this.lazy.parse(this.first + at);
    (this.objs ??= new Array<object | undefined>(this.n))[at] = rec;
    return rec;
  }
}

export class Table {
  /** Records not in the base: put since the load (or every record, without a base). */
  private readonly map = new Map<string, object>();
  private base: Base | null = null;

  /**
   * Gives this (empty) table a base: the records `ids` (file order), whose bytes are lazy refs
   * `first`… of `lazy`, and `perm`, their positions ordered by id.
   * @throws Error when `perm` is not a permutation of the positions with strictly increasing ids
   *   (a record named twice, or an order that a binary search cannot use).
   */
  setBase(ids: IdList, perm: Uint32Array, first: number, lazy: LazyRecords): void {
    if (this.map.size > 0 || this.base !== null) throw new Error('a base goes into an empty table');
    checkOrder(ids, perm);
    this.base = new Base(ids, first, perm, lazy);
  }

  get size(): number { return this.map.size + (this.base?.live ?? 0); }

  has(id: string): boolean { return this.map.has(id) || (this.base !== null && this.base.find(id) >= 0); }

  /** The record `id` (parsed on its first read), or undefined. */
  get(id: string): object | undefined {
    const v = this.map.get(id);
    if (v !== undefined || this.base === null) return v;
    const at = this.base.find(id);
    return at < 0 ? undefined : this.base.value(at);
  }

  /** Puts `value` as record `id`, or deletes it (undefined); returns the previous record, parsed. */
  set(id: string, value: object | undefined): object | undefined {
    const base = this.base;
    if (base !== null && !this.map.has(id)) {
      const at = base.find(id);
      if (at >= 0) {
        const prev = base.value(at);
        if (value !== undefined) base.objs![at] = value;
        else { base.objs![at] = undefined; base.dead[at] = 1; base.live--; }
        return prev;
      }
    }
    const prev = this.map.get(id);
    if (value === undefined) this.map.delete(id); else this.map.set(id, value);
    return prev;
  }

  /** Every (id, record), as {@link entries}. */
  [Symbol.iterator](): Generator<[string, object]> { return this.entries(); }

  /** Every id, in iteration order. */
  *keys(): Generator<string> {
    const b = this.base;
    if (b !== null) for (let i = 0; i < b.n; i++) if (b.dead[i] === 0) yield b.id(i);
    yield* this.map.keys();
  }

  /** Every (id, record), in iteration order; base records are parsed as they are reached. */
  *entries(): Generator<[string, object]> {
    const b = this.base;
    if (b !== null) for (let i = 0; i < b.n; i++) if (b.dead[i] === 0) yield [b.id(i), b.value(i)];
    yield* this.map.entries();
  }

  /**
   * Every (id, entry) as compaction captures it — base records not read yet as their lazy refs
   * (nothing parsed) — and, in `loaded`, each one's ref in the block it was loaded from (-1 for
   * a record put since).
   */
  capture(ids: string[], values: Entry[], loaded: number[]): void {
    const b = this.base;
    if (b !== null) {
      for (let i = 0; i < b.n; i++) {
        if (b.dead[i] === 1) continue;
        ids.push(b.id(i));
        values.push(b.objs?.[i] ?? b.first + i);
        loaded.push(b.first + i);
      }
    }
    for (const [id, v] of this.map) { ids.push(id); values.push(v); loaded.push(-1); }
  }
}

/**
 * Checks that `perm` lists every position of `ids` once, in strictly increasing id order.
 * @throws Error otherwise.
 */
function checkOrder(ids: IdList, perm: Uint32Array): void {
  const n = perm.length;
  if (n !== ids.length) throw new Error('the id order does not list every record');
  const seen = new Uint8Array(n);
  for (let k = 0; k < n; k++) {
    const at = perm[k];
    if (at >= n || seen[at] === 1) throw new Error('the id order is not a permutation');
    seen[at] = 1;
    if (k > 0 && !(ids.compareAt(perm[k - 1], at) < 0)) throw new Error('the id order is not strictly increasing');
  }
}

/**
 * A read-only view of one table whose every read gives records, parsing base records as they
 * are read (a `ReadonlyMap`, live: it sees later changes).
 */
export class TableView<V> implements ReadonlyMap<string, V> {
  /** `table()` gives the type's table, or undefined while the type has none (no empty table is made for a read). */
  constructor(private readonly table: () => Table | undefined) {}
  get size(): number { return this.table()?.size ?? 0; }
  has(id: string): boolean { return this.table()?.has(id) ?? false; }
  get(id: string): V | undefined { return this.table()?.get(id) as V | undefined; }
  *keys(): MapIterator<string> { const t = this.table(); if (t !== undefined) yield* t.keys(); }
  *values(): MapIterator<V> { const t = this.table(); if (t !== undefined) for (const [, v] of t.entries()) yield v as V; }
  *entries(): MapIterator<[string, V]> { const t = this.table(); if (t !== undefined) yield* t.entries() as Generator<[string, V]>; }
  [Symbol.iterator](): MapIterator<[string, V]> { return this.entries(); }
  forEach(fn: (value: V, key: string, map: ReadonlyMap<string, V>) => void, thisArg?: unknown): void {
    for (const [id, v] of this.entries()) fn.call(thisArg, v, id, this);
  }
}
