/**
 * One log's in-memory state: tables of records keyed by (type, id), changed through
 * transactions that are applied at once and made durable by the {@link AppendLog}
 * (docs/storage.md#transactions).
 *
 * Applying a transaction to memory before it is on disk keeps request handling serializable
 * (JavaScript runs one handler at a time, so uniqueness checks and read-modify-write cannot
 * race), while the response still waits for durability. When a write fails, the failed
 * transaction and every later one not yet written are undone in reverse order.
 *
 * Records are immutable: a change always puts a new object. Secondary indexes (sort orders,
 * by email, by conversation…) are kept by listeners registered per record type with
 * {@link Db.on}: they see every change, including replay and undo (docs/storage.md#indexes).
 *
 * A log is typed by its record map `R` (record type name → record shape, e.g.
 * `{ conversation: Conversation; message: Message }`): `get`, `table` and `Tx.put` take a name
 * of `R` and give or take that shape. A log opened without a map ({@link Untyped}) takes any
 * name and any JSON object.
 */
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { AppendLog, LINE_BYTES, StorageFailedError, encodeTransaction, type JsonText } from './log.js';
import { replayLog, type ReplayResult } from './recovery.js';
import { writeSnapshot } from './compaction.js';
import type { StoreFs } from './fs.js';

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
/** Called for every put of a record of one type in a transaction (see {@link Db.derive}). */
export type Derive<R extends RecordMap<R>, V> = (tx: Tx<R>, id: string, prev: V | undefined, next: V) => void;

/**
 * A registered {@link Derive}. A method, so that its transaction parameter is compared both
 * ways: a log of a wider record map can be passed where one of fewer types is expected.
 */
interface DeriveHook<R extends RecordMap<R>> { derive(tx: Tx<R>, id: string, prev: object | undefined, next: object | undefined): void }

/** A registered {@link Db.afterCommit} listener (a method, for the same reason as {@link DeriveHook}). */
interface CommitHook<R extends RecordMap<R>> { committed(tx: Tx<R>): void }

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
}

/**
 * Which operations of a transaction its log line holds, in order (docs/storage.md#transactions):
 * each record (type, id) once, as the last thing the transaction did to it — a put of its final
 * value, or a delete. A record the transaction both created and deleted (it did not exist
 * before, `undo` says, and its last operation is a delete) is left out entirely: replay would
 * only add and remove it again.
 *
 * Each record is written at the place of the transaction's first operation on it. A record is
 * usually touched first when it is created, so a record still comes before the records the
 * transaction made after it and that point to it (a conversation before its messages, an
 * event before its deliveries), as when the transaction was made; placed at its last operation
 * instead, a conversation re-put by each of its messages would come after all of them. Replay
 * gives the same records either way (each key appears once), and the same indexes: every
 * listener keeps state per record, from its (previous, next) values, and no two records hold a
 * unique key at once, so no index depends on which of two records came last
 * (docs/storage.md#indexes).
 *
 * `ops` and `undo` are parallel (one undo entry per operation). Returns the indexes into
 * `ops` of the operations to write, or null when no record repeats (the common case): then
 * every operation is written, in order.
 */
function writtenOps(ops: readonly Op[], undo: ReadonlyArray<readonly [string, string, object | undefined, number]>): readonly number[] | null {
  if (ops.length < 2) return null;
  /** Per record, in the order of the first operation on it: [first, last] operation index. */
  const slots: Array<[number, number]> = [];
  const byKey = new Map<string, number>();
  for (let i = 0; i < ops.length; i++) {
    const key = `${ops[i][1]}\u0000${ops[i][2]}`;
    const slot = byKey.get(key);
    if (slot === undefined) { byKey.set(key, slots.length); slots.push([i, i]); } else slots[slot][1] = i;
  }
  if (slots.length === ops.length) return null;
  const out: number[] = [];
  for (const [first, last] of slots) {
    if (ops[last][0] === 'd' && undo[first][2] === undefined) continue; // created and deleted here
    out.push(last);
  }
  return out;
}

/**
 * The JSON text of operation `op`, taking its pre-serialized value `raw` when it has one (a put
 * whose record was serialized elsewhere: its pieces are spliced in as they are, never joined).
 */
function opJson(op: Op, raw: JsonText | undefined): JsonText {
  if (raw === undefined) return JSON.stringify(op);
  const head = `["p",${JSON.stringify(op[1])},${JSON.stringify(op[2])},`;
  if (typeof raw === 'string') return head + raw + ']';
  return raw instanceof Uint8Array ? [head, raw, ']'] : [head, ...raw, ']'];
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
  /** (type, id, previous value, db-wide sequence number) per change, for undo and compaction. */
  readonly undo: Array<readonly [string, string, object | undefined, number]> = [];
  undone = false;
  /**
   * Set on a bulk import (the admin CLI's): hooks that tell integrations about changes (events,
   * docs/api.md#events) skip this transaction; indexes and derived counters do not.
   */
  bulk = false;
  /**
   * Set for a transaction whose loss in a crash only repeats work (a webhook attempt's outcome):
   * it is written with the next batch of other transactions, or on its own after a few ms, not
   * in a write and fdatasync of its own ({@link AppendLog.appendLazy},
   * docs/storage.md#group-commit). Its commit still resolves once it is on disk.
   */
  lazy = false;
  constructor(private readonly db: Db<R>) {}
  /**
   * The JSON texts of the operations this transaction's log line holds, in order: each record
   * once, with its last value or as deleted; a record created and deleted here not at all
   * (docs/storage.md#transactions). A pre-serialized value is taken for the operation it was
   * given with, so a value replaced by a later plain put is not written.
   */
  written(): JsonText[] {
    const raw = this.raw;
    const order = writtenOps(this.ops, this.undo);
    if (order === null) return this.ops.map((op, i) => opJson(op, raw?.[i]));
    return order.map((i) => opJson(this.ops[i], raw?.[i]));
  }
  /**
   * Puts `value` as the record (type, id); visible to readers at once. `json`, when given, must be
   * the text of `JSON.stringify(value)` (whole, or in pieces — see {@link JsonText}), made
   * elsewhere (an ingestion or body worker): the log line then takes it as it is instead of
   * serializing a large record on the main thread. `prepared` goes to the type's listeners
   * with this change only ({@link WithPrepared}); it is not stored.
   */
  put<K extends TypeOf<R>>(type: K, id: string, value: R[K], json?: JsonText, prepared?: PreparedOf<R[K]>): void {
    this.db.opened(this);
    const prev = this.db.set(type, id, value, prepared);
    this.undo.push([type, id, prev, this.db.nextSeq()]);
    if (json !== undefined) (this.raw ??= [])[this.ops.length] = json;
    this.ops.push(['p', type, id, value]);
    this.db.derived(this, type, id, prev, value);
  }
  /** Deletes the record (type, id) if present. */
  del(type: TypeOf<R>, id: string): void {
    const prev = this.db.set(type, id, undefined);
    if (prev === undefined) return;
    this.db.opened(this);
    this.undo.push([type, id, prev, this.db.nextSeq()]);
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

export class Db<R extends RecordMap<R> = Untyped> {
  private readonly tables = new Map<string, Map<string, object>>();
  private readonly listeners: ChangeListener[];
  /** The hooks registered per record type (see {@link on}, {@link derive}, {@link retain}). */
  private readonly onChange = new Map<string, Array<Change<object>>>();
  private readonly onPut = new Map<string, Array<DeriveHook<R>>>();
  private readonly keep = new Map<string, Array<(rec: object) => boolean>>();
  private readonly durable: Array<CommitHook<R>> = [];
  private loaded = false;
  private log!: AppendLog;
  private readonly inflight = new Set<Tx<R>>();
  /** Transactions with changes in memory that are not yet handed to the log. */
  private readonly open = new Set<Tx<R>>();
  private seq = 0;
  private live = 0;
  /** Ops in the log file (live + dead). */
  private ops = 0;
  private compacting: Promise<void> | null = null;
  replay!: ReplayResult;

  private constructor(readonly path: string, private readonly opts: DbOptions) {
    this.listeners = opts.listeners ?? [];
  }

  /**
   * A log at `path`, not read yet: register its hooks ({@link on}, {@link derive},
   * {@link retain}), then {@link load} it, so that every index sees every replayed record.
   */
  static create<R extends RecordMap<R> = Untyped>(path: string, opts: DbOptions): Db<R> {
    return new Db<R>(path, opts);
  }

  /** {@link create} then {@link load}: a log without hooks registered before its replay. */
  static async open<R extends RecordMap<R> = Untyped>(path: string, opts: DbOptions): Promise<Db<R>> {
    return Db.create<R>(path, opts).load();
  }

  /**
   * Replays `path` (creating it when missing) and opens it for appending.
   * @throws CorruptLogError for a complete line that fails its check (only an incomplete
   *   last line is a torn write, cut off by the replay).
   */
  async load(): Promise<this> {
    if (this.loaded) throw new Error(`${this.path} is already loaded`);
    this.loaded = true;
    const { path, opts } = this;
    mkdirSync(dirname(path), { recursive: true });
    for (const f of readdirSync(dirname(path))) {
      if (f.startsWith(`${basename(path)}.compact-`)) unlinkSync(join(dirname(path), f)); // a compaction cut short
    }
    this.replay = replayLog(path, (tx) => this.applyLine(tx), opts.now?.());
    const fd = await opts.fs.open(path);
    this.log = new AppendLog(path, fd, this.replay.size, opts.fs, opts.sync);
    return this;
  }

  /**
   * Calls `listener` on every change of a record of `type` — put, delete, replay, undo — after
   * the change is in memory, in the order listeners were registered. A listener registered
   * after {@link load} sees only later changes (it reads {@link table} for the earlier ones).
   * Listeners keep derived state in memory; they must not throw, nor write.
   */
  on<K extends TypeOf<R>>(type: K, listener: Change<R[K]>): void {
    push(this.onChange, type, listener as Change<object>);
  }

  /**
   * Calls `derive` after every put of a record of `type` in a transaction, to add records
   * derived from it (daily counters) to the same transaction — so they are written, and
   * undone, together with what caused them. Replay does not call it: derived records are in
   * the log already.
   */
  derive<K extends TypeOf<R>>(type: K, derive: Derive<R, R[K]>): void {
    push(this.onPut, type, { derive: (tx, id, prev, next) => { if (next !== undefined) derive(tx, id, prev as R[K] | undefined, next as R[K]); } });
  }

  /**
   * Like {@link derive}, for every delete of a record of `type` in a transaction: `derive` gets
   * the deleted record (an event telling that a source was deleted).
   */
  deriveOnDelete<K extends TypeOf<R>>(type: K, derive: (tx: Tx<R>, id: string, prev: R[K]) => void): void {
    push(this.onPut, type, { derive: (tx, id, prev, next) => { if (next === undefined && prev !== undefined) derive(tx, id, prev as R[K]); } });
  }

  /** Compaction keeps a record of `type` only when every `keep` of its type says so (e.g. drops expired idempotency records). */
  retain<K extends TypeOf<R>>(type: K, keep: (rec: R[K]) => boolean): void {
    push(this.keep, type, keep as (rec: object) => boolean);
  }

  /**
   * Calls `fn` with each transaction once its line is on disk (after {@link commit}'s write
   * succeeded, before it resolves): for work that must only start from durable changes, such
   * as sending a webhook delivery (docs/storage.md#indexes). Not called on replay (what is
   * replayed is durable already) nor for a failed or empty transaction. It must not throw.
   */
  afterCommit(fn: (tx: Tx<R>) => void): void {
    this.durable.push({ committed: fn });
  }

  /** Applies one replayed transaction (the replay checked it is an array). */
  private applyLine(tx: unknown): void {
    for (const op of tx as Op[]) {
      if (op[0] === 'p') this.set(op[1], op[2], op[3]);
      else this.set(op[1], op[2], undefined);
      this.ops++;
    }
  }

  /**
   * Sets or (with undefined) deletes a record, tells the listeners (with `prepared`, see
   * {@link Tx.put}); returns the previous value.
   */
  set(type: string, id: string, value: object | undefined, prepared?: unknown): object | undefined {
    let table = this.tables.get(type);
    if (!table) { table = new Map(); this.tables.set(type, table); }
    const prev = table.get(id);
    if (value === undefined) { if (prev !== undefined) { table.delete(id); this.live--; } }
    else { table.set(id, value); if (prev === undefined) this.live++; }
    const typed = this.onChange.get(type);
    if (typed !== undefined) for (const l of typed) l(id, prev, value, prepared);
    for (const l of this.listeners) l(type, id, prev as Rec | undefined, value as Rec | undefined);
    return prev;
  }

  /** The record (type, id), or undefined. */
  get<K extends TypeOf<R>>(type: K, id: string): R[K] | undefined {
    return this.tables.get(type)?.get(id) as R[K] | undefined;
  }

  /** All records of `type` by id (a live view: do not change it). */
  table<K extends TypeOf<R>>(type: K): ReadonlyMap<string, R[K]> {
    return (this.tables.get(type) ?? new Map()) as ReadonlyMap<string, R[K]>;
  }

  /** A new transaction (nothing is written until {@link commit}). */
  begin(): Tx<R> { return new Tx<R>(this); }
  /** @internal bookkeeping of {@link Tx}. */
  opened(tx: Tx<R>): void { this.open.add(tx); }
  /** @internal */
  closed(tx: Tx<R>): void { this.open.delete(tx); }
  /** @internal */
  nextSeq(): number { return ++this.seq; }
  /** @internal */
  derived(tx: Tx<R>, type: string, id: string, prev: object | undefined, next: object | undefined): void {
    const fns = this.onPut.get(type);
    if (fns !== undefined) for (const f of fns) f.derive(tx, id, prev, next);
  }

  /** Whether compaction keeps `rec` (see {@link retain}). */
  private retained(type: string, rec: object): boolean {
    const fns = this.keep.get(type);
    return fns === undefined || fns.every((f) => f(rec));
  }

  /** Why this log refuses writes, or null. */
  get failed(): Error | null { return this.log.failed; }

  /**
   * Makes `tx` durable; resolves once its line — or its frame's commit marker — is on disk
   * (docs/storage.md#transactions, docs/storage.md#frames). Each record is written once, with
   * its last value ({@link Tx.written}); a transaction whose changes cancel out writes nothing but
   * still resolves only after every transaction committed before it. On a write failure the
   * transaction, and every later one still waiting, is undone, and the error is thrown.
   * @throws Error when `tx` was aborted; the log's write errors (StorageFailedError, ENOSPC…).
   */
  async commit(tx: Tx<R>): Promise<void> {
    if (tx.undone) throw new Error('transaction was aborted');
    if (tx.ops.length === 0) return;
    this.inflight.add(tx);
    try {
      const ops = tx.written();
      const lines = encodeTransaction(ops, this.opts.lineBytes ?? LINE_BYTES);
      const written = this.log.appendFrame(lines.length === 0 ? [[]] : lines, tx, tx.lazy);
      this.open.delete(tx); // now queued: compaction sees it through the log's queue
      await written;
      this.ops += ops.length; // the operations in the file: dead and live ones (docs/storage.md#compaction)
    } catch (err) {
      const later = [...this.inflight];
      for (let i = later.length - 1; i >= 0 && later[i] !== tx; i--) later[i].abort();
      tx.abort();
      throw err;
    } finally {
      this.inflight.delete(tx);
    }
    for (const h of this.durable) h.committed(tx);
    // Dead operations past a third of the log (docs/storage.md#compaction): with events, every
    // update also adds a live record, so "dead outnumber live" would never come.
    if (!this.compacting && this.ops - this.live > this.live / 2 + (this.opts.compactionSlack ?? 1000)) {
      this.compact().catch((e) => this.opts.onError?.(e as Error));
    }
  }

  /** Live and total op counts (for compaction decisions and tests). */
  stats(): { live: number; ops: number; bytes: number } {
    return { live: this.live, ops: this.ops, bytes: this.log.size };
  }

  /**
   * Rewrites the log to its live records, crash-safely: temp file, fsync, rename, fsync the
   * folder (docs/storage.md#compaction). Writes wait meanwhile and go to the new file afterwards.
   */
  compact(): Promise<void> {
    if (this.compacting) return this.compacting;
    this.compacting = this.runCompaction().finally(() => { this.compacting = null; });
    return this.compacting;
  }

  private async runCompaction(): Promise<void> {
    await this.log.pause();
    let replacement: { fd: number; size: number } | undefined;
    try {
      // Memory holds changes not yet on disk — queued lines and transactions still open; the
      // snapshot must be the durable state, so take each record they touched as it was
      // before the earliest of those changes.
      const before = new Map<string, { prev: object | undefined; seq: number }>();
      // A frame's lines all carry its transaction: each transaction once.
      for (const tx of new Set([...(this.log.queuedTags() as Array<Tx<R>>), ...this.open])) {
        for (const [type, id, prev, seq] of tx.undo) {
          const k = `${type}\u0000${id}`;
          const seen = before.get(k);
          if (!seen || seq < seen.seq) before.set(k, { prev, seq });
        }
      }
      const records: Array<readonly [string, string, object]> = [];
      for (const [type, table] of this.tables) {
        for (const [id, rec] of table) {
          const k = `${type}\u0000${id}`;
          const value = before.has(k) ? before.get(k)!.prev : rec;
          if (value !== undefined && this.retained(type, value)) records.push([type, id, value]);
        }
      }
      for (const [k, { prev }] of before) {
        const [type, id] = k.split('\u0000');
        if (prev !== undefined && !this.tables.get(type)?.has(id) && this.retained(type, prev)) records.push([type, id, prev]);
      }
      const oldFd = this.log.descriptor;
      const written = await writeSnapshot(this.path, records, this.opts.fs, `${basename(this.path)}.compact-${process.pid}`, this.opts.lineBytes);
      replacement = { fd: written.fd, size: written.size };
      await this.opts.fs.close(oldFd).catch(() => {});
      // The renamed log may not survive a crash: like a failed fdatasync, refuse further writes.
      if (written.dirSyncError) this.log.fail(new StorageFailedError(`fsync of ${dirname(this.path)} after compacting ${this.path} failed: ${written.dirSyncError.message}; writes are refused until restart`));
      this.ops = records.length; // queued transactions add theirs when they are written
    } finally {
      this.log.resume(replacement);
    }
  }

  /** Waits for compaction and pending writes, then closes the log. */
  async close(): Promise<void> {
    if (this.compacting) await this.compacting.catch(() => {});
    await this.log.close();
  }
}

/** Appends `fn` to the list of `type` in `hooks`. */
function push<F>(hooks: Map<string, F[]>, type: string, fn: F): void {
  const list = hooks.get(type);
  if (list === undefined) hooks.set(type, [fn]); else list.push(fn);
}
