/**
 * One record type's records in memory (docs/storage.md#snapshots, docs/storage.md#memory): a `Map`
 * of what was put since load over a *base* of the records of the snapshot block, kept as bytes in
 * the {@link ByteArena} and parsed on first read. A type held as bytes (`Db.holdAsBytes`) keeps no
 * parsed record. Iteration is insertion order, base records first in file order.
 */
import type { ByteArena } from './arena.js';
import type { IdList } from './ids.js';

/** Where a captured record's value is: the object itself, or its bytes (a ref of the {@link ByteArena}). */
export const HELD_OBJECT = 0;
export const HELD_BYTES = 1;
export type Held = typeof HELD_OBJECT | typeof HELD_BYTES;

/**
 * A table's records as compaction captures them, parallel by position: `held` tells whether
 * `objs` holds each or `refs` names its bytes; `loaded` is its position in the block the log was
 * loaded from (-1: put since).
 */
export interface Captured {
  ids: string[];
  held: Uint8Array;
  objs: Array<object | undefined>;
  refs: Uint32Array;
  loaded: Int32Array;
}

class Base {
  /**
   * Parsed or changed records by base position — a number is a ref of the arena (held as bytes
   * since), undefined the block's bytes (ref `first` + position); null until the first one.
   */
  objs: Array<object | number | undefined> | null = null;
  /** Base positions of the ids looked up so far: most reads and writes touch the same few records. */
  private readonly hot = new Map<string, number>();
  readonly dead: Uint8Array;
  live: number;
  /** Records in the base: positions 0…n-1. */
  readonly n: number;
  constructor(readonly ids: IdList, readonly first: number, readonly perm: Uint32Array, readonly bytes: ByteArena) {
    this.n = perm.length;
    this.dead = new Uint8Array(this.n);
    this.live = this.n;
  }

  /** The base position of live record `id`, or -1. */
  find(id: string): number {
    const h = this.hot.get(id);
    if (h !== undefined) return this.dead[h] === 1 ? -1 : h;
    const { ids, perm } = this;
    let lo = 0;
    let hi = perm.length - 1;
    // A new record's id (UUIDv7, time-ordered) is most often above every id of the block.
    if (hi < 0 || ids.compare(perm[hi], id) < 0) return -1;
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

  /** The ref of the bytes of the record at base position `at` (live), or -1 when it is held as an object. */
  ref(at: number): number {
    const v = this.objs?.[at];
    return typeof v === 'number' ? v : v === undefined ? this.first + at : -1;
  }

  /** The record at live base position `at`: parsed and kept (its bytes freed) unless `cold`, then parsed each read. */
  value(at: number, cold: boolean): object {
    const v = this.objs?.[at];
    if (typeof v === 'object') return v;
    if (typeof v === 'number') return this.bytes.parse(v);
    if (cold) return this.bytes.parse(this.first + at);
    const rec = this.bytes.take(this.first + at);
    (this.objs ??= new Array<object | number | undefined>(this.n))[at] = rec;
    return rec;
  }

  /** Marks base position `at` deleted. */
  kill(at: number): void {
    if (this.objs !== null) this.objs[at] = undefined;
    this.dead[at] = 1;
    this.live--;
  }

  /** Sets the entry at base position `at` (a record, or a ref). */
  put(at: number, v: object | number | undefined): void {
    (this.objs ??= new Array<object | number | undefined>(this.n))[at] = v;
  }
}

export class Table {
  /** Records not in the base (put since the load); a number is a ref of the arena. */
  private readonly map = new Map<string, object | number>();
  private base: Base | null = null;
  /** The log's arena when this table's type is held as bytes (docs/storage.md#memory), else null. */
  private cold: ByteArena | null = null;

  /** Holds this table's records as bytes from now on (docs/storage.md#memory), in `arena`. */
  holdAsBytes(arena: ByteArena): void { this.cold = arena; }

  /**
   * Gives this (empty) table a base: the records `ids` (file order), whose bytes are the refs
   * `first`… of `arena` ({@link ByteArena.reserve}), and `perm`, their positions ordered by id.
   * @throws Error when `perm` is not a permutation with strictly increasing ids, or the table is
   *   held as bytes in another arena.
   */
  setBase(ids: IdList, perm: Uint32Array, first: number, arena: ByteArena): void {
    if (this.map.size > 0 || this.base !== null) throw new Error('a base goes into an empty table');
    if (this.cold !== null && this.cold !== arena) throw new Error('a base in another arena than the table\'s');
    checkOrder(ids, perm);
    this.base = new Base(ids, first, perm, arena);
  }

  get size(): number { return this.map.size + (this.base?.live ?? 0); }

  has(id: string): boolean { return this.map.has(id) || (this.base !== null && this.base.find(id) >= 0); }

  /** The record `id` (parsed on its first read, or at each read when held as bytes), or undefined. */
  get(id: string): object | undefined {
    const v = this.map.get(id);
    if (typeof v === 'number') return this.cold!.parse(v);
    if (v !== undefined || this.base === null) return v;
    const at = this.base.find(id);
    return at < 0 ? undefined : this.base.value(at, this.cold !== null);
  }

  /** The arena's ref of the bytes record `id` is held as; -1 when it is absent or held as an object. */
  private held(id: string): number {
    const v = this.map.get(id);
    if (typeof v === 'number') return v;
    if (v !== undefined || this.base === null) return -1;
    const at = this.base.find(id);
    return at < 0 ? -1 : this.base.ref(at);
  }

  /** The arena of the refs {@link held} gives: the table's when it is held as bytes, else its base's. */
  private get bytes(): ByteArena { return this.cold ?? this.base!.bytes; }

  /** The JSON text record `id` is held as; undefined when absent or held as an object (docs/storage.md#memory). */
  text(id: string): string | undefined {
    const ref = this.held(id);
    return ref < 0 ? undefined : this.bytes.text(ref);
  }

  /** Like {@link text}, as a new Buffer: `before` bytes left for the caller, then the text's bytes. */
  textBytes(id: string, before: number): Buffer | undefined {
    const ref = this.held(id);
    if (ref < 0) return undefined;
    const bytes = this.bytes;
    const out = Buffer.allocUnsafe(before + bytes.length(ref));
    bytes.copyTo(ref, out, before);
    return out;
  }

  /** Puts `value` as record `id`, or deletes it (undefined); returns the previous record, parsed. */
  set(id: string, value: object | undefined): object | undefined {
    const base = this.base;
    if (base !== null && !this.map.has(id)) {
      const at = base.find(id);
      if (at >= 0) {
        const prev = base.value(at, this.cold !== null);
        const was = base.ref(at);
        if (was >= 0) base.bytes.free(was);
        if (value !== undefined) base.put(at, value);
        else base.kill(at);
        return prev;
      }
    }
    const was = this.map.get(id);
    let prev: object | undefined;
    if (typeof was === 'number') { prev = this.cold!.parse(was); this.cold!.free(was); } else prev = was;
    if (value === undefined) this.map.delete(id); else this.map.set(id, value);
    return prev;
  }

  /**
   * Turns record `id` into bytes when the table still holds `value` for it (docs/storage.md#memory):
   * `bytes()` copies its text into the arena and gives the ref kept in its place. Does nothing when
   * the record changed or is gone, or the type is not held as bytes. Returns whether it was turned.
   */
  hold(id: string, value: object, bytes: () => number): boolean {
    if (this.cold === null) return false;
    const v = this.map.get(id);
    if (v !== undefined) {
      if (v !== value) return false;
      this.map.set(id, bytes());
      return true;
    }
    const b = this.base;
    if (b === null) return false;
    const at = b.find(id);
    if (at < 0 || b.objs?.[at] !== value) return false;
    b.put(at, bytes());
    return true;
  }

  /**
   * Removes record `id`, its bytes freed, when it is still what a capture saw (as in {@link Captured}):
   * compaction dropped it by retention (docs/storage.md#compaction). Returns whether it was removed.
   */
  dropIf(id: string, held: Held, obj: object | undefined, ref: number): boolean {
    const v = this.map.get(id);
    if (v !== undefined) {
      if (held === HELD_OBJECT ? v !== obj : v !== ref) return false;
      if (typeof v === 'number') this.cold!.free(v);
      this.map.delete(id);
      return true;
    }
    const b = this.base;
    if (b === null) return false;
    const at = b.find(id);
    if (at < 0) return false;
    const was = b.ref(at);
    const same = held === HELD_OBJECT ? b.objs?.[at] === obj && obj !== undefined : was === ref;
    if (!same) return false;
    if (was >= 0) b.bytes.free(was);
    b.kill(at);
    return true;
  }

  /** Every (id, record), as {@link entries}. */
  [Symbol.iterator](): Generator<[string, object]> { return this.entries(); }

  /** Every id, in iteration order. */
  *keys(): Generator<string> {
    const b = this.base;
    if (b !== null) for (let i = 0; i < b.n; i++) if (b.dead[i] === 0) yield b.ids.at(i);
    yield* this.map.keys();
  }

  /** Every (id, record), in iteration order; base records and records held as bytes are parsed as they are reached. */
  *entries(): Generator<[string, object]> {
    const b = this.base;
    const cold = this.cold;
    if (b !== null) for (let i = 0; i < b.n; i++) if (b.dead[i] === 0) yield [b.ids.at(i), b.value(i, cold !== null)];
    for (const [id, v] of this.map) yield [id, typeof v === 'number' ? cold!.parse(v) : v];
  }

  /** Every record as compaction captures it ({@link Captured}), in iteration order, nothing parsed. */
  capture(): Captured {
    const n = this.size;
    const out: Captured = { ids: new Array<string>(n), held: new Uint8Array(n), objs: new Array<object | undefined>(n),
      refs: new Uint32Array(n), loaded: new Int32Array(n).fill(-1) };
    let k = 0;
    const b = this.base;
    if (b !== null) {
      for (let i = 0; i < b.n; i++) {
        if (b.dead[i] === 1) continue;
        out.ids[k] = b.ids.at(i);
        const ref = b.ref(i);
        if (ref < 0) out.objs[k] = b.objs![i] as object;
        else { out.held[k] = HELD_BYTES; out.refs[k] = ref; }
        out.loaded[k] = b.first + i;
        k++;
      }
    }
    for (const [id, v] of this.map) {
      out.ids[k] = id;
      if (typeof v === 'number') { out.held[k] = HELD_BYTES; out.refs[k] = v; } else out.objs[k] = v;
      k++;
    }
    return out;
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

/** A live read-only `ReadonlyMap` view of one table, parsing records as they are read. */
export class TableView<V> implements ReadonlyMap<string, V> {
  /** `table()` gives the type's table, or undefined while the type has none (no empty table is made for a read). */
  constructor(private readonly table: () => Table | undefined) {}
  get size(): number { return this.table()?.size ?? 0; }
  has(id: string): boolean { return this.table()?.has(id) ?? false; }
  get(id: string): V | undefined { return this.table()?.get(id) as V | undefined; }
  *keys(): MapIterator<string> { const t = this.table(); if (t !== undefined) yield* t.keys(); }
  *values(): MapIterator<V> {
    const t = this.table(); if (t !== undefined) for (const [, v] of t.entries()) yield v as V;
  }
  *entries(): MapIterator<[string, V]> {
    const t = this.table(); if (t !== undefined) yield* t.entries() as Generator<[string, V]>;
  }
  [Symbol.iterator](): MapIterator<[string, V]> { return this.entries(); }
  forEach(fn: (value: V, key: string, map: ReadonlyMap<string, V>) => void, thisArg?: unknown): void {
    for (const [id, v] of this.entries()) fn.call(thisArg, v, id, this);
  }
}
