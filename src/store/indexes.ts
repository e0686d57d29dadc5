/**
 * Secondary indexes declared as data, after nedb's `ensureIndex` (docs/storage.md#indexes). An
 * area names, for one record type, the indexes it reads and the key each one takes from a
 * record:
 *
 * - {@link orderBy}: the records by (key, id), for keyset pagination ({@link SortedIndex});
 * - {@link uniqueBy}: key → the one record id that has it ({@link UniqueIndex});
 * - {@link groupBy}: key → the ids of the records that have it ({@link GroupIndex}).
 *
 * {@link attachIndexes} builds them on a log and keeps them current through its listener hook
 * ({@link Db.on}) on every put, delete, replay and undo — adding an indexed field is one
 * declaration. A key that is undefined, null or empty leaves the record out of a unique or
 * group index. Indexes that are not a function of one record (per-conversation message
 * orders, client aggregates, the search index) register their own listeners with `Db.on`.
 */
import { SortedIndex } from './sorted.js';
import type { Db, RecordMap, TypeOf } from './db.js';

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
  private readonly ids = new Map<string, string>();
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
}

/** Key → the ids of every record that has it. */
export class GroupIndex {
  private readonly groups = new Map<string, Set<string>>();
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
}

/** The index each declaration of `D` builds. */
export type Built<D> = {
  readonly [N in keyof D]: D[N] extends { kind: 'order' } ? SortedIndex : D[N] extends { kind: 'unique' } ? UniqueIndex : GroupIndex;
};

/** A record's key in a unique or group index: undefined when it has none. */
const keyOf = <V>(key: KeyOf<V>, rec: V | undefined): string | undefined => {
  if (rec === undefined) return undefined;
  const k = key(rec);
  return k === null || k === '' ? undefined : k;
};

/**
 * Builds the indexes `decls` declares over the records of `type` in `db`, and keeps them
 * current from now on (register before {@link Db.load}: the replay fills them).
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
        // An update that keeps the key (the usual case: createdAt never changes) costs nothing;
        // a remove + add would splice the whole array.
        if (before === after) return;
        if (before !== undefined) sorted.remove(before, id);
        if (after !== undefined) sorted.add(after, id);
      });
      built[name] = sorted;
    } else {
      const index = decl.kind === 'unique' ? new UniqueIndex() : new GroupIndex();
      const key = decl.key;
      db.on(type, (id, prev, next) => index.apply(id, keyOf(key, prev), keyOf(key, next)));
      built[name] = index;
    }
  }
  return built as Built<D>;
}
