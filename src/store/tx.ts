/**
 * A transaction (docs/storage.md#transactions): the changes a request makes, applied to its
 * log's memory at once and kept, in order, for undo; made durable by `Db.commit`
 * (src/store/db.ts). It reaches its log only through the narrow {@link TxOwner}.
 */
import type { AppendLog, JsonText } from './log/log.js';
import type { Op, PreparedOf, RecordMap, TypeOf, Untyped } from './dbTypes.js';
import { writtenTexts } from './txText.js';

/**
 * What a {@link Tx} needs of its log (`Db`, which implements it): the bookkeeping of open
 * transactions, the change itself (told to the listeners) and the derive hooks.
 */
export interface TxOwner<R extends RecordMap<R>> {
  /** `tx` has changes in memory not yet handed to the log. */
  opened(tx: Tx<R>): void;
  /** `tx` is no longer open (aborted). */
  closed(tx: Tx<R>): void;
  /** Sets or (with undefined) deletes a record, tells the listeners; returns the previous value. */
  set(type: string, id: string, value: object | undefined, prepared?: unknown): object | undefined;
  /** Runs the derive hooks of `type` for a put or delete in `tx`. */
  derived(tx: Tx<R>, type: string, id: string, prev: object | undefined, next: object | undefined): void;
}

/**
 * A set of changes that becomes durable together: one log line, or one frame of lines for a
 * big one (docs/storage.md#transactions). In memory every operation is kept, in order, for
 * undo; the log holds each record once ({@link Tx.written}).
 */
export class Tx<R extends RecordMap<R> = Untyped> {
  readonly ops: Op[] = [];
  /** Pre-serialized values by op index (see {@link put}); undefined while there is none. */
  raw: Array<JsonText | undefined> | undefined;
  /** (type, id, previous value) per change, for undo and compaction. */
  readonly undo: Array<readonly [string, string, object | undefined]> = [];
  undone = false;
  /**
   * Set on a bulk import (the admin CLI's): hooks that tell integrations about changes (events,
   * docs/api.md#events) skip this transaction; indexes and derived counters do not.
   */
  bulk = false;
  /**
   * Set for a transaction whose loss in a crash only repeats work (a webhook attempt's outcome):
   * written with the next batch of others, not a write of its own ({@link AppendLog.appendFrame}'s
   * `lazy`, docs/storage.md#group-commit); its commit still resolves once it is on disk.
   */
  lazy = false;
  constructor(private readonly db: TxOwner<R>) {}
  /**
   * The JSON texts of the operations this transaction's log line holds, in order: each record once,
   * as last put or deleted; one created and deleted here not at all (docs/storage.md#transactions).
   */
  written(): JsonText[] {
    return writtenTexts(this);
  }
  /**
   * Puts `value` as the record (type, id); visible to readers at once. `json`, when given, is
   * `JSON.stringify(value)` made elsewhere (a worker; see {@link JsonText}): the log line takes it
   * as it is. `prepared` goes to the type's listeners with this change only ({@link WithPrepared}).
   */
  put<K extends TypeOf<R>>(type: K, id: string, value: R[K], json?: JsonText, prepared?: PreparedOf<R[K]>): void {
    this.db.opened(this);
    const prev = this.db.set(type, id, value, prepared);
    this.undo.push([type, id, prev]);
    if (json !== undefined) (this.raw ??= [])[this.ops.length] = json;
    this.ops.push(['p', type, id, value]);
    this.db.derived(this, type, id, prev, value);
  }
  /** Deletes the record (type, id) if present. */
  del(type: TypeOf<R>, id: string): void {
    const prev = this.db.set(type, id, undefined);
    if (prev === undefined) return;
    this.db.opened(this);
    this.undo.push([type, id, prev]);
    this.ops.push(['d', type, id]);
    this.db.derived(this, type, id, prev, undefined);
  }
  /** Reverts this transaction's changes in memory (before or instead of commit). */
  abort(): void {
    if (this.undone) return;
    this.undone = true;
    this.db.closed(this);
    for (let i = this.undo.length - 1; i >= 0; i--) {
      const [type, id, prev] = this.undo[i];
      this.db.set(type, id, prev);
    }
  }
}

/** Called for every put of a record of one type in a transaction (see `Db.derive`). */
export type Derive<R extends RecordMap<R>, V> = (tx: Tx<R>, id: string, prev: V | undefined, next: V) => void;

/**
 * A registered {@link Derive}. A method, so that its transaction parameter is compared both
 * ways: a log of a wider record map can be passed where one of fewer types is expected.
 */
export interface DeriveHook<R extends RecordMap<R>> { derive(tx: Tx<R>, id: string, prev: object | undefined,
  next: object | undefined): void }

/** A registered `Db.afterCommit` listener (a method, for the same reason as {@link DeriveHook}). */
export interface CommitHook<R extends RecordMap<R>> { committed(tx: Tx<R>): void }
