/**
 * The vocabulary of a log's API (src/store/db.ts): records and record maps, the operations a
 * transaction writes, change listeners and a log's options. Types only, shared by db.ts and its
 * parts (tx.ts, txText.ts); db.ts re-exports every name.
 */
import type { StoreFs } from './log/fs.js';
import type { BatchTiming } from './log/log.js';

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
 * The shape `V` of a record type whose puts may bring its listeners a `P` derived from the record
 * elsewhere (search postings made on a worker thread). Only a type: no record holds it.
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
  /** Told of each group-commit batch's durations (metrics; {@link BatchTiming}). */
  onBatch?: BatchTiming;
  /** fdatasync every batch (SYNC=always). */
  sync: boolean;
  /** Listeners of every change of every type (tests and tools; indexes use {@link Db.on}). */
  listeners?: ChangeListener[];
  /** Compact by itself when dead records exceed half the live ones by this many (default 1000). */
  compactionSlack?: number;
  /** Reports background compaction failures. */
  onError?: (err: Error) => void;
  now?: () => number;
  /** The longest line of a transaction or of a compacted log, in bytes (default {@link LINE_BYTES}). */
  lineBytes?: number;
  /**
   * Compact by itself when the operations after the snapshot block exceed twice those it covers by
   * this many (default: `compactionSlack`, else 1000; docs/storage.md#compaction).
   */
  tailSlack?: number;
  /** `ignore`: load with a full replay even with a snapshot block (`STARTUP_SNAPSHOT`, docs/configuration.md). */
  snapshot?: 'use' | 'ignore';
  /** The size of a chunk of the arena of records held as bytes (default {@link CHUNK_BYTES}). */
  chunkBytes?: number;
}
