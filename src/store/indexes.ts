/**
 * Secondary indexes declared as data (docs/storage.md#indexes): an area names for one record type
 * {@link orderBy}, {@link uniqueBy} or {@link groupBy} indexes and the key each takes from a record;
 * {@link attachIndexes} keeps them current. An undefined, null or empty key leaves the record out
 * of a unique or group index.
 */
import { SortedIndex, isoMs, type Packed, type SortedCopy } from './memory/sorted.js';
import type { Columns, Db, Persist, RecordMap, RestoreContext, SaveContext, TypeOf } from './db.js';

/** The key a record has in an index; undefined, null or empty: none. */
export type KeyOf<V> = (rec: V) => string | null | undefined;

/** The records by (key, id). The key should be a string the record holds (no copy is made then). */
export interface OrderDecl<V> { readonly kind: 'order'; readonly key: (rec: V) => string }
/** Key → the one id that has it; the area keeps keys unique (a second record with the key takes it over). */
export interface UniqueDecl<V> { readonly kind: 'unique'; readonly key: KeyOf<V> }
/** Key → the ids of every record that has it. */
export interface GroupDecl<V> { readonly kind: 'group'; readonly key: KeyOf<V> }
export type IndexDecl<V> = OrderDecl<V> | UniqueDecl<V> | GroupDecl<V>;

/** Declares a sort order of records by (`key`, id). */
export const orderBy = <V>(key: (rec: V) => string): OrderDecl<V> => ({ kind: 'order', key });
/** Declares a unique index: `key` → the id of the record that has it. */
export const uniqueBy = <V>(key: KeyOf<V>): UniqueDecl<V> => ({ kind: 'unique', key });
/** Declares a group index: `key` → the ids of the records that have it. */
export const groupBy = <V>(key: KeyOf<V>): GroupDecl<V> => ({ kind: 'group', key });

/** Key → the one id that has it. */
export class UniqueIndex {
  private ids = new Map<string, string>();
  /** The number of keys. */
  get size(): number { return this.ids.size; }
  /** The id of the record whose key is `key`, or undefined. */
  get(key: string): string | undefined { return this.ids.get(key); }
  /** Whether a record has the key `key`. */
  has(key: string): boolean { return this.ids.has(key); }
  /** @internal */
  apply(id: string, before: string | undefined, after: string | undefined): void {
    // Only the owner's entry is removed: a key taken over by another record stays with it.
    if (before !== undefined && before !== after && this.ids.get(before) === id) this.ids.delete(before);
    if (after !== undefined) this.ids.set(after, id);
  }
  /** @internal the entries, copied (compaction's capture). */
  copy(): { keys: string[]; ids: string[] } { return { keys: [...this.ids.keys()], ids: [...this.ids.values()] }; }
  /** @internal replaces every entry (a restored snapshot state). */
  replace(keys: string[], ids: string[]): void {
    const m = new Map<string, string>();
    for (let i = 0; i < keys.length; i++) m.set(keys[i], ids[i]);
    this.ids = m;
  }
}

/** Key → the ids of every record that has it. */
export class GroupIndex {
  private groups = new Map<string, Set<string>>();
  /** The number of keys. */
  get size(): number { return this.groups.size; }
  /** The ids of the records whose key is `key` (a live view: do not change it), or undefined. */
  get(key: string): ReadonlySet<string> | undefined { return this.groups.get(key); }
  /** @internal */
  apply(id: string, before: string | undefined, after: string | undefined): void {
    if (before === after) return;
    if (before !== undefined) {
      const g = this.groups.get(before);
      if (g !== undefined && g.delete(id) && g.size === 0) this.groups.delete(before);
    }
    if (after !== undefined) {
      const g = this.groups.get(after);
      if (g === undefined) this.groups.set(after, new Set([id])); else g.add(id);
    }
  }
  /** @internal the groups, copied (compaction's capture). */
  copy(): Array<[string, string[]]> { return [...this.groups].map(([k, g]) => [k, [...g]]); }
  /** @internal replaces every group (a restored snapshot state). */
  replace(groups: Map<string, Set<string>>): void { this.groups = groups; }
}

/**
 * The columns of a sorted index's entries of records of `type` (docs/storage.md#snapshots): `ms`,
 * each sort key as epoch ms when it is a canonical ISO time, else NaN; `keys`, the other sort
 * keys, in order; `refs`, the records. Entries of records not in the block are left out.
 */
export function sortedColumns(type: string, copy: SortedCopy, ctx: SaveContext): {
  ms: Float64Array; keys: string[]; refs: Uint32Array } {
  const n = copy.loaded !== undefined ? copy.loaded.length : copy.ids.length;
  const ms = new Float64Array(n);
  const refs = new Uint32Array(n);
  const keys: string[] = [];
  let k = 0;
  for (let i = 0; i < n; i++) {
    const r = copy.loaded !== undefined ? ctx.refOfLoaded(copy.loaded[i]) : ctx.ref(type, copy.ids[i]);
    if (r < 0) continue;
    refs[k] = r;
    if (copy.ms !== undefined) ms[k] = copy.ms[i];
    else {
      ms[k] = isoMs(copy.keys[i]);
      if (ms[k] !== ms[k]) keys.push(copy.keys[i]);
    }
    k++;
  }
  return { ms: ms.slice(0, k), keys, refs: refs.slice(0, k) };
}

/**
 * Reads back {@link sortedColumns}: packed entries (every key a canonical time), else arrays.
 * @throws Error when malformed.
 */
export function restoreSorted(cols: Columns, ctx: RestoreContext, type: string): { packed: Packed } | {
  keys: string[]; ids: string[] } {
  const ms = ctx.float64(cols.ms);
  const odd = ctx.strings(cols.keys);
  if (ms.length === 0) return { keys: [], ids: [] };
  const refs = ctx.positions(type, cols.refs);
  if (ms.length !== refs.length) throw new Error('times and refs differ in length');
  const list = ctx.typeIds(type);
  if (odd.length === 0) {
    for (let i = 0; i < ms.length; i++) if (!(ms[i] >= 0)) throw new Error('a time is missing');
    return { packed: { ms, refs, ids: list, first: ctx.firstRef(type) } };
  }
  const keys = new Array<string>(ms.length);
  const ids = new Array<string>(ms.length);
  let o = 0;
  for (let i = 0; i < ms.length; i++) {
    if (ms[i] === ms[i]) keys[i] = new Date(ms[i]).toISOString();
    else if (o < odd.length) keys[i] = odd[o++];
    else throw new Error('a key is missing');
    ids[i] = list.at(refs[i]);
  }
  if (o !== odd.length) throw new Error('keys left over');
  return { keys, ids };
}

/** Installs what {@link restoreSorted} read into `index`. */
function install(index: SortedIndex, r: ReturnType<typeof restoreSorted>, start = 0, count?: number): void {
  if ('packed' in r) index.replacePacked(r.packed, start, count ?? r.packed.ms.length);
  else index.replace(r.keys.slice(start, count === undefined ? undefined : start + count),
    r.ids.slice(start, count === undefined ? undefined : start + count));
}

/** How a {@link SortedIndex} of records of `type` is saved in the snapshot block under `name`. */
export function persistSorted(name: string, type: string, index: () => SortedIndex): Persist {
  return {
    name,
    capture() { const copy = index().copy(); return (ctx) => sortedColumns(type, copy, ctx); },
    restore(cols, ctx) { const r = restoreSorted(cols, ctx, type); return () => install(index(), r); },
  };
}

/** How a {@link UniqueIndex} of records of `type` is saved under `name`: `keys`, and `refs` naming the records. */
function persistUnique(name: string, type: string, index: UniqueIndex): Persist {
  return {
    name,
    capture() {
      const { keys, ids } = index.copy();
      return (ctx) => {
        const outKeys: string[] = [];
        const refs: number[] = [];
        for (let i = 0; i < ids.length; i++) { const r = ctx.ref(type, ids[i]); if (r >= 0) { outKeys.push(keys[
          i]); refs.push(r); } }
        return { keys: outKeys, refs: Uint32Array.from(refs) };
      };
    },
    restore(cols, ctx) {
      const keys = ctx.strings(cols.keys);
      const ids = ctx.ids(cols.refs);
      if (keys.length !== ids.length) throw new Error('keys and refs differ in length');
      return () => index.replace(keys, ids);
    },
  };
}

/** How a {@link GroupIndex} of records of `type` is saved under `name`: `keys`, `counts` (ids per key), `refs`. */
function persistGroup(name: string, type: string, index: GroupIndex): Persist {
  return {
    name,
    capture() {
      const groups = index.copy();
      return (ctx) => {
        const keys: string[] = [];
        const counts: number[] = [];
        const refs: number[] = [];
        for (const [k, ids] of groups) {
          let n = 0;
          for (const id of ids) { const r = ctx.ref(type, id); if (r >= 0) { refs.push(r); n++; } }
          if (n > 0) { keys.push(k); counts.push(n); }
        }
        return { keys, counts: Uint32Array.from(counts), refs: Uint32Array.from(refs) };
      };
    },
    restore(cols, ctx) {
      const keys = ctx.strings(cols.keys);
      const counts = ctx.numbers(cols.counts);
      const ids = ctx.ids(cols.refs);
      let sum = 0;
      for (let i = 0; i < counts.length; i++) sum += counts[i];
      if (keys.length !== counts.length || sum !== ids.length) throw new Error('group counts do not add up');
      const groups = new Map<string, Set<string>>();
      let at = 0;
      for (let i = 0; i < keys.length; i++) { groups.set(keys[i], new Set(ids.slice(at, at + counts[i]))); at += counts[
        i]; }
      return () => index.replace(groups);
    },
  };
}

/** The index each declaration of `D` builds. */
export type Built<D> = {
  readonly [N in keyof D]: D[N] extends { kind: 'order' } ? SortedIndex : D[N] extends {
    kind: 'unique' } ? UniqueIndex : GroupIndex;
};

/** A record's key in a unique or group index: undefined when it has none. */
const keyOf = <V>(key: KeyOf<V>, rec: V | undefined): string | undefined => {
  if (rec === undefined) return undefined;
  const k = key(rec);
  return k === null || k === '' ? undefined : k;
};

/**
 * Builds the indexes `decls` declares over the records of `type` in `db` and keeps them current
 * (register before {@link Db.load}; each is saved in the snapshot block as `<type>.<name>/1`).
 * @returns the indexes, by the names of their declarations.
 */
export function attachIndexes<R extends RecordMap<R>, K extends TypeOf<R>, D extends Record<string, IndexDecl<R[K]>>>(
  db: Db<R>, type: K, decls: D,
): Built<D> {
  const built: Record<string, SortedIndex | UniqueIndex | GroupIndex> = {};
  for (const [name, decl] of Object.entries(decls) as Array<[string, IndexDecl<R[K]>]>) {
    if (decl.kind === 'order') {
      const sorted = new SortedIndex();
      const key = decl.key;
      db.on(type, (id, prev, next) => {
        const before = prev === undefined ? undefined : key(prev);
        const after = next === undefined ? undefined : key(next);
        // An update that keeps the key (the usual case) costs nothing.
        if (before === after) return;
        if (before !== undefined) sorted.remove(before, id);
        if (after !== undefined) sorted.add(after, id);
      }, persistSorted(`${type}.${name}/1`, type, () => sorted));
      built[name] = sorted;
    } else if (decl.kind === 'unique') {
      const index = new UniqueIndex();
      const key = decl.key;
      db.on(type, (id, prev, next) => index.apply(id, keyOf(key, prev), keyOf(key, next)),
        persistUnique(`${type}.${name}/1`, type, index));
      built[name] = index;
    } else {
      const index = new GroupIndex();
      const key = decl.key;
      db.on(type, (id, prev, next) => index.apply(id, keyOf(key, prev), keyOf(key, next)),
        persistGroup(`${type}.${name}/1`, type, index));
      built[name] = index;
    }
  }
  return built as Built<D>;
}

/**
 * How a map of sorted indexes of records of `type` (each conversation's messages…) is saved under
 * `name` (docs/storage.md#snapshots): `names`, `counts` (entries per index), and every index's
 * entries one after the other. Restored, `make(name)` builds each index; empty ones are left out.
 */
export function persistSortedMap<I extends SortedIndex>(name: string, type: string, map: () => Map<string, I>,
  make: (key: string) => I): Persist {
  return {
    name,
    capture() {
      const copies: Array<[string, SortedCopy]> = [];
      for (const [k, idx] of map()) copies.push([k, idx.copy()]);
      return (ctx) => {
        const names: string[] = [];
        const counts: number[] = [];
        const parts: Array<ReturnType<typeof sortedColumns>> = [];
        let total = 0;
        for (const [k, c] of copies) {
          const cols = sortedColumns(type, c, ctx);
          if (cols.refs.length === 0) continue;
          names.push(k);
          counts.push(cols.refs.length);
          parts.push(cols);
          total += cols.refs.length;
        }
        const ms = new Float64Array(total);
        const refs = new Uint32Array(total);
        const keys: string[] = [];
        let at = 0;
        for (const p of parts) { ms.set(p.ms, at); refs.set(p.refs, at); for (const k of p.keys) keys.push(
          k); at += p.refs.length; }
        return { names, counts: Uint32Array.from(counts), ms, keys, refs };
      };
    },
    restore(cols, ctx) {
      const names = ctx.strings(cols.names);
      const counts = ctx.numbers(cols.counts);
      const r = restoreSorted(cols, ctx, type);
      let sum = 0;
      for (let i = 0; i < counts.length; i++) sum += counts[i];
      if (names.length !== counts.length || sum !== ctx.refs(cols.refs).length) throw new Error(
        'index counts do not add up');
      const built: Array<[string, I]> = [];
      let at = 0;
      for (let i = 0; i < names.length; i++) {
        const idx = make(names[i]);
        install(idx, r, at, counts[i]);
        built.push([names[i], idx]);
        at += counts[i];
      }
      return () => {
        const m = map();
        m.clear();
        for (const [k, idx] of built) m.set(k, idx);
      };
    },
  };
}
