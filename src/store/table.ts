/**
 * One record type's records in memory (docs/storage.md#snapshots, docs/storage.md#memory): a
 * `Map` of id → record for what was put since the log was loaded, over a *base* of the records
 * loaded from the snapshot block, if any.
 *
 * The base is what lets a start skip a million `Map` inserts: the block's ids in file order (the
 * strings the indexes share), the records' bytes in {@link LazyRecords} (refs `first`…), and a
 * permutation of them by id, written by compaction, that a binary search walks. A base record
 * is parsed on its first read and kept; a change keeps it in its place; a delete marks it dead.
 * Records never in the base live in the map.
 *
 * A table of a type held as bytes (`Db.holdAsBytes`, docs/storage.md#memory) keeps no parsed
 * record: a base record is parsed at each read, and a record whose transaction is on disk is
 * turned into its bytes in the log's {@link ByteArena} ({@link Table.hold}) — the map (or the
 * base slot) then holds its *cold ref*, a number, instead of the object. A read parses it.
 *
 * Iteration order is a `Map`'s: insertion order, a changed record keeping its place — the base
 * records in file order (the order they had before the compaction), then the others.
 */
import type { LazyRecords } from './lazy.js';
import type { ByteArena } from './arena.js';
import type { IdList } from './ids.js';

/**
 * Where a captured record's value is (docs/storage.md#compaction): the object itself, the bytes
 * of the snapshot block it was loaded from (a ref of {@link LazyRecords}), or bytes held since it
 * was written (a ref of the log's {@link ByteArena}). The two kinds of refs are numbers of
 * different stores: a capture always says which one a ref belongs to.
 */
export const HELD_OBJECT = 0;
export const HELD_BLOCK = 1;
export const HELD_COLD = 2;
export type Held = typeof HELD_OBJECT | typeof HELD_BLOCK | typeof HELD_COLD;

/**
 * A table's records as compaction captures them, parallel by position: `held` tells, per
 * record, whether `objs` holds it (HELD_OBJECT) or `refs` names its bytes (HELD_BLOCK: a ref of
 * the block's {@link LazyRecords}; HELD_COLD: a ref of the {@link ByteArena}); `loaded` is its
 * ref in the block the log was loaded from (-1: put since).
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
   * Parsed (or changed) records by base position — a number is a cold ref ({@link ByteArena}):
   * a changed record held as bytes since; null until the first one.
   */
  objs: Array<object | number | undefined> | null = null;
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
    // A new record's id is most often above every id of the block (ids are UUIDv7, time-ordered:
    // an event, a message, a delivery written since the snapshot): one comparison, not ~20.
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

  /**
   * The record at base position `at` (live): parsed now if it was not yet, and kept unless
   * `cold` holds the table's records as bytes (then parsed at every read).
   */
  value(at: number, cold: ByteArena | null): object {
    const v = this.objs?.[at];
    if (typeof v === 'object') return v;
    if (typeof v === 'number') return cold!.parse(v);
    if (cold !== null) return this.lazy.peek(this.first + at);
    const rec = this.lazy.parse(this.first + at);
    (this.objs ??= new Array<object | number | undefined>(this.n))[at] = rec;
    return rec;
  }

  /** Sets the entry at base position `at` (a record, or a cold ref). */
  put(at: number, v: object | number | undefined): void {
    (this.objs ??= new Array<object | number | undefined>(this.n))[at] = v;
  }
}

export class Table {
  /** Records not in the base: put since the load (or every record, without a base); a number is a cold ref. */
  private readonly map = new Map<string, object | number>();
  private base: Base | null = null;
  /** The log's arena when this table's type is held as bytes (docs/storage.md#memory), else null. */
  private cold: ByteArena | null = null;

  /**
   * Holds this table's records as bytes from now on (docs/storage.md#memory): base records are no
   * longer kept once parsed, and {@link hold} may turn records into refs of `arena`.
   */
  holdAsBytes(arena: ByteArena): void { this.cold = arena; }

  /**
   * Gives this (empty) table a base: the records `ids` (file order), whose bytes are lazy refs
   * `first`… of `lazy` — or, for a table held as bytes, the cold refs `cold` (by position) of the
   * arena — and `perm`, their positions ordered by id.
   * @throws Error when `perm` is not a permutation of the positions with strictly increasing ids
   *   (a record named twice, or an order that a binary search cannot use), or `cold` is given to
   *   a table not held as bytes or is not one ref a record.
   */
  setBase(ids: IdList, perm: Uint32Array, first: number, lazy: LazyRecords, cold?: Uint32Array): void {
    if (this.map.size > 0 || this.base !== null) throw new Error('a base goes into an empty table');
    checkOrder(ids, perm);
    const base = new Base(ids, first, perm, lazy);
    if (cold !== undefined) {
      if (this.cold === null || cold.length !== base.n) throw new Error('cold refs for a table not held as bytes, or not one a record');
      base.objs = Array.from(cold);
    }
    this.base = base;
  }

  get size(): number { return this.map.size + (this.base?.live ?? 0); }

  has(id: string): boolean { return this.map.has(id) || (this.base !== null && this.base.find(id) >= 0); }

  /** The record `id` (parsed on its first read, or at each read when held as bytes), or undefined. */
  get(id: string): object | undefined {
    const v = this.map.get(id);
    if (typeof v === 'number') return this.cold!.parse(v);
    if (v !== undefined || this.base === null) return v;
    const at = this.base.find(id);
    return at < 0 ? undefined : this.base.value(at, this.cold);
  }

  /**
   * Where the bytes record `id` is held as are: a ref of the arena (`cold`, held since it was
   * written) or of the snapshot block's buffers (`block`, while unread and unchanged); null when
   * it is absent or held as an object.
   */
  private held(id: string): { cold: number } | { block: number } | null {
    const v = this.map.get(id);
    if (typeof v === 'number') return { cold: v };
    if (v !== undefined || this.base === null) return null;
    const b = this.base;
    const at = b.find(id);
    if (at < 0) return null;
    const e = b.objs?.[at];
    if (typeof e === 'number') return { cold: e };
    return e === undefined ? { block: b.first + at } : null;
  }

  /**
   * The JSON text record `id` is held as — its bytes held since it was written, or those of the
   * snapshot block while it is unchanged — or undefined when it is absent or held as an object
   * (docs/storage.md#memory).
   */
  text(id: string): string | undefined {
    const h = this.held(id);
    if (h === null) return undefined;
    return 'cold' in h ? this.cold!.text(h.cold) : this.base!.lazy.text(h.block);
  }

  /**
   * Like {@link text}, as bytes: a new Buffer of `before` + the text's length bytes, the text
   * copied in after the first `before` (left for the caller to fill) — no decoding, no string.
   */
  textBytes(id: string, before: number): Buffer | undefined {
    const h = this.held(id);
    if (h === null) return undefined;
    if ('cold' in h) {
      const out = Buffer.allocUnsafe(before + this.cold!.length(h.cold));
      this.cold!.copyTo(h.cold, out, before);
      return out;
    }
    const bytes = this.base!.lazy.bytes(h.block);
    const out = Buffer.allocUnsafe(before + bytes.length);
    bytes.copy(out, before);
    return out;
  }

  /** Puts `value` as record `id`, or deletes it (undefined); returns the previous record, parsed. */
  set(id: string, value: object | undefined): object | undefined {
    const base = this.base;
    if (base !== null && !this.map.has(id)) {
      const at = base.find(id);
      if (at >= 0) {
        const prev = base.value(at, this.cold);
        const was = base.objs?.[at];
        if (typeof was === 'number') this.cold!.free(was);
        if (value !== undefined) base.put(at, value);
        else { if (base.objs !== null) base.objs[at] = undefined; base.dead[at] = 1; base.live--; }
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
   * Turns record `id` into bytes when the table holds `value` for it — the object a transaction
   * on disk put (docs/storage.md#memory): `bytes()` copies its text into the arena and gives the
   * ref kept in its place. Does nothing (and does not call `bytes`) when the record changed since
   * or is gone, or when the type is not held as bytes. Returns whether it was turned.
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
   * Removes record `id` when it is still what a capture saw (`held`, `obj`, `ref`, as in
   * {@link Captured}): compaction dropped it by its type's retention rule
   * (docs/storage.md#compaction). Its cold bytes are freed. Returns whether it was removed.
   */
  dropIf(id: string, held: Held, obj: object | undefined, ref: number): boolean {
    const v = this.map.get(id);
    if (v !== undefined) {
      if (held === HELD_OBJECT ? v !== obj : held !== HELD_COLD || v !== ref) return false;
      if (typeof v === 'number') this.cold!.free(v);
      this.map.delete(id);
      return true;
    }
    const b = this.base;
    if (b === null) return false;
    const at = b.find(id);
    if (at < 0) return false;
    const e = b.objs?.[at];
    const same = held === HELD_OBJECT ? e === obj && obj !== undefined : held === HELD_COLD ? e === ref : e === undefined && ref === b.first + at;
    if (!same) return false;
    if (typeof e === 'number') this.cold!.free(e);
    if (b.objs !== null) b.objs[at] = undefined;
    b.dead[at] = 1;
    b.live--;
    return true;
  }

  /** Every (id, record), as {@link entries}. */
  [Symbol.iterator](): Generator<[string, object]> { return this.entries(); }

  /** Every id, in iteration order. */
  *keys(): Generator<string> {
    const b = this.base;
    if (b !== null) for (let i = 0; i < b.n; i++) if (b.dead[i] === 0) yield b.id(i);
    yield* this.map.keys();
  }

  /** Every (id, record), in iteration order; base records and records held as bytes are parsed as they are reached. */
  *entries(): Generator<[string, object]> {
    const b = this.base;
    const cold = this.cold;
    if (b !== null) for (let i = 0; i < b.n; i++) if (b.dead[i] === 0) yield [b.id(i), b.value(i, cold)];
    for (const [id, v] of this.map) yield [id, typeof v === 'number' ? cold!.parse(v) : v];
  }

  /**
   * Every record as compaction captures it ({@link Captured}), in iteration order — records held
   * as bytes as their refs, nothing parsed.
   */
  capture(): Captured {
    const n = this.size;
    const out: Captured = { ids: new Array<string>(n), held: new Uint8Array(n), objs: new Array<object | undefined>(n), refs: new Uint32Array(n), loaded: new Int32Array(n).fill(-1) };
    let k = 0;
    const b = this.base;
    if (b !== null) {
      for (let i = 0; i < b.n; i++) {
        if (b.dead[i] === 1) continue;
        out.ids[k] = b.id(i);
        const e = b.objs?.[i];
        if (typeof e === 'object') out.objs[k] = e;
        else if (typeof e === 'number') { out.held[k] = HELD_COLD; out.refs[k] = e; }
        else { out.held[k] = HELD_BLOCK; out.refs[k] = b.first + i; }
        out.loaded[k] = b.first + i;
        k++;
      }
    }
    for (const [id, v] of this.map) {
      out.ids[k] = id;
      if (typeof v === 'number') { out.held[k] = HELD_COLD; out.refs[k] = v; } else out.objs[k] = v;
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
