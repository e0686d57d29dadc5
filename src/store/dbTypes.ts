/**
 * The vocabulary of a log's API (src/store/db.ts): records and record maps, the operations a
 * transaction writes, change listeners, how a listener's state is persisted in the snapshot
 * block and restored from it (docs/storage.md#snapshots), a log's options and how it was loaded.
 * Types only, but for {@link STATELESS}: shared by db.ts and its parts (tx.ts, txText.ts,
 * loadLog.ts, compactor.ts), which so need not import db.ts; db.ts re-exports every name.
 */
import type { SaveContext } from './compaction.js';
import type { Column, Columns } from './snapshot.js';
import type { IdList } from './ids.js';
import type { StoreFs } from './fs.js';

/** What a persisted state's restore gets (docs/storage.md#snapshots): the block's record ids by ref, checked. */
export interface RestoreContext {
  /** Records in the block (refs are 0…records-1). */
  readonly records: number;
  /** The ids of the block's records of `type`, by position in its run (the list the table shares). @throws Error when the block has no record of `type`. */
  typeIds(type: string): IdList;
  /** `refs`, checked to be refs of records of `type`, as positions in {@link typeIds}. @throws Error otherwise. */
  positions(type: string, refs: Column | undefined): Uint32Array;
  /** The ref of position 0 of {@link typeIds}. */
  firstRef(type: string): number;
  /** The id of each ref of `refs` — the very strings the tables hold. @throws Error for a value that is not a ref. */
  ids(refs: Column | undefined): string[];
  /** `refs`, checked to be refs (a packed column). @throws Error otherwise. */
  refs(refs: Column | undefined): Uint32Array;
  /** `values`, checked to be strings. @throws Error otherwise. */
  strings(values: Column | undefined): string[];
  /** `values`, checked to be finite numbers. @throws Error otherwise. */
  numbers(values: Column | undefined): ArrayLike<number>;
  /** `values`, checked to be a packed `f64` column. @throws Error otherwise. */
  float64(values: Column | undefined): Float64Array;
}

/**
 * How a listener's state is kept in the snapshot block (docs/storage.md#snapshots), so that a
 * start restores it instead of calling the listener with every record:
 *
 * - `capture()`, at compaction's capture point (synchronous, with no transaction open): takes a
 *   copy of the state — records are immutable, so copying arrays of ids and keys is enough —
 *   and returns the function that turns that copy into columns once the records are written,
 *   naming records by ref ({@link SaveContext.ref}; a record compaction dropped has none, -1,
 *   and leaves the state);
 * - `restore(columns, ctx)`: checks the columns and returns the function that installs them,
 *   called only when the record type stays unparsed — every state of its listeners checked out —
 *   and before anything else is installed; a malformed state changes nothing (its type is
 *   replayed through its listeners instead).
 *
 * `name` identifies the state in the block: unique in a log, and changed (a version suffix)
 * whenever the columns' meaning changes — a block without it falls back to the listener.
 * The state must be a function of the live records alone, each on its own (what replaying them
 * in any order would build).
 */
export interface Persist {
  readonly name: string;
  capture(): (ctx: SaveContext) => Columns;
  restore(columns: Columns, ctx: RestoreContext): () => void;
}

/** A listener that keeps no state a start must rebuild (it only drops what others keep): nothing to save. */
export const STATELESS = 'stateless' as const;

/** A stored record: a JSON object, never mutated after it was put. */
export type Rec = Readonly<Record<string, unknown>>;
/** A record map: record type name → the shape of its records (every shape a JSON object). */
export type RecordMap<R> = { [K in keyof R]: object };
/** The record map of a log whose types are not declared: any name, any JSON object. */
export type Untyped = Record<string, Rec>;
/** A record type name of the map `R`. */
export type TypeOf<R> = keyof R & string;

declare const PREPARED: unique symbol;
/**
 * The shape `V` of a record type whose puts may bring a `P` to its listeners: a value derived
 * from the record that was prepared elsewhere (search postings made on a worker thread), so
 * that the listener does not derive it again on the main thread. Only a type: no record holds it.
 */
export type WithPrepared<V, P> = V & { readonly [PREPARED]?: P };
/** What a put of a `V` may bring to its listeners (see {@link WithPrepared}); nothing for other shapes. */
export type PreparedOf<V> = V extends { readonly [PREPARED]?: infer P } ? P : never;
/** One change of a transaction as written in the log: put (`p`) or delete (`d`). */
export type Op = readonly ['p', string, string, object] | readonly ['d', string, string];
/** Called for every change of a record of any type: `next` undefined means deleted. */
export type ChangeListener = (type: string, id: string, prev: Rec | undefined, next: Rec | undefined) => void;
/**
 * Called for every change of a record of one type (see {@link Db.on}): `next` undefined means
 * deleted. `prepared` is what the put brought along ({@link WithPrepared}); never on replay or undo.
 */
export type Change<V> = (id: string, prev: V | undefined, next: V | undefined, prepared?: PreparedOf<V>) => void;

export interface DbOptions {
  fs: StoreFs;
  /** fdatasync every batch (SYNC=always). */
  sync: boolean;
  /** Listeners of every change of every type (tests and tools; indexes use {@link Db.on}). */
  listeners?: ChangeListener[];
  /** Compact by itself when dead records exceed half the live ones by this many (default 1000). */
  compactionSlack?: number;
  /** Reports background compaction failures. */
  onError?: (err: Error) => void;
  now?: () => number;
  /** The longest line of a transaction or of a compacted log, in bytes (default {@link LINE_BYTES}; tests set it small). */
  lineBytes?: number;
  /**
   * Compact by itself when the operations written after the snapshot block exceed twice those it
   * covers by this many (default: `compactionSlack`, else 1000): what bounds the parsing at start
   * (docs/storage.md#compaction). Tests set it high to watch the other rules alone.
   */
  tailSlack?: number;
  /**
   * `ignore`: load with a full replay even when the log has a snapshot block (tests and
   * benchmarks: `STARTUP_SNAPSHOT=ignore`, docs/configuration.md). Default `use`.
   */
  snapshot?: 'use' | 'ignore';
  /** The size of a chunk of the arena of records held as bytes, in bytes (default {@link CHUNK_BYTES}; tests set it small). */
  chunkBytes?: number;
}

/** How a log was loaded (the start-up log line, tests, the benchmark). */
export interface LoadInfo {
  /** Whether the snapshot block was used: records left unparsed, indexes restored. */
  snapshot: boolean;
  /** Why a snapshot block was not used (a warning): damaged, cut, counts off… Absent when there was none or it was used. */
  ignoredBlock?: string;
  /** Records loaded from the block, and how many of them are held as bytes (the rest: types replayed through their listeners). */
  records: number;
  lazy: number;
  /** Record types whose listeners had no saved state: parsed and replayed at start. */
  replayedTypes: string[];
  /** Operations replayed from lines (after the block, or all of them in a full replay). */
  replayedOps: number;
  /** Milliseconds the load took. */
  ms: number;
}
