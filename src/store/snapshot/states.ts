/**
 * The persisted states of a snapshot block (docs/storage.md#snapshots): how a listener's state is
 * saved into the block at compaction ({@link SaveContext}) and restored at start ({@link RestoreContext})
 * instead of the listener seeing every record again. Re-exported by src/store/db.ts.
 */
import type { Column, Columns } from './snapshot.js';
import type { IdList } from '../memory/ids.js';

/** Maps a record to its position in the snapshot block being written (its ref), -1 when it is not in it. */
export interface SaveContext {
  /** The record (type, id). */
  ref(type: string, id: string): number;
  /** The record whose ref in the block the log was loaded from is `loaded` (no id to look up). */
  refOfLoaded(loaded: number): number;
}

/** What a persisted state's restore gets (docs/storage.md#snapshots): the block's record ids by ref, checked. */
export interface RestoreContext {
  /** Records in the block (refs are 0…records-1). */
  readonly records: number;
  /** The ids of the block's records of `type`, by position in its run. @throws Error when it has none. */
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
 * How a listener's state is kept in the snapshot block (docs/storage.md#snapshots):
 * - `capture()`, at compaction's capture point (synchronous): copies the state and returns the
 *   function that turns the copy into columns once the records are written, naming records by
 *   ref ({@link SaveContext.ref}; -1 for a record compaction dropped, which leaves the state);
 * - `restore(columns, ctx)`: checks the columns and returns the function that installs them, called
 *   only when every state of the type's listeners checked out; a malformed state changes nothing
 *   (the type is replayed through its listeners instead).
 * `name` is unique in a log and changes (a version suffix) with the columns' meaning. The state must
 * be a function of the live records alone, each on its own.
 */
export interface Persist {
  readonly name: string;
  capture(): (ctx: SaveContext) => Columns;
  restore(columns: Columns, ctx: RestoreContext): () => void;
}

/** A listener that keeps no state a start must rebuild (it only drops what others keep): nothing to save. */
export const STATELESS = 'stateless' as const;
