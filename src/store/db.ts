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
 *
 * A compacted log ends its put lines with a snapshot block (docs/storage.md#snapshots): loaded
 * from it, the tables hold lazy refs to the records' bytes ({@link LazyRecords}) instead of
 * parsed objects, and each persisted index restores its saved state instead of seeing every
 * record; every read still gives parsed records ({@link Db.get}, {@link Db.table}).
 *
 * Records of a type declared with {@link Db.holdAsBytes} (events, settled webhook deliveries)
 * are held as the bytes of their JSON once their transaction is on disk, in the log's
 * {@link ByteArena}, and parsed at each read (docs/storage.md#memory).
 *
 * This module keeps the `Db`'s state and public API; its parts live beside it: the types of the
 * API (dbTypes.ts, every name re-exported here), the {@link Tx} class and its hooks (tx.ts), which
 * operations a transaction's line holds and their texts (txText.ts), loading a log from its
 * snapshot block or by a full replay (loadLog.ts), the compaction run (compactor.ts) and the
 * retention rules (retention.ts).
 */
import { AppendLog, LINE_BYTES, encodeTransaction, type JsonText } from './log.js';
import type { ReplayResult } from './recovery.js';
import { loadLog, type BlockTarget } from './loadLog.js';
import { runCompaction, type CompactionHost } from './compactor.js';
import { Retention } from './retention.js';
import { ByteArena, CHUNK_BYTES, type ArenaStats } from './arena.js';
import { Table, TableView } from './table.js';
import { Tx, type CommitHook, type Derive, type DeriveHook, type TxOwner } from './tx.js';
import { writtenTexts } from './txText.js';
import {
  STATELESS, type Change, type ChangeListener, type DbOptions, type LoadInfo, type Op, type Persist,
  type PreparedOf, type Rec, type RecordMap, type TypeOf, type Untyped,
} from './dbTypes.js';
import type { LazyRecords } from './lazy.js';

export type { SaveContext } from './compaction.js';
export type { Column, Columns } from './snapshot.js';
export { STATELESS } from './dbTypes.js';
export type {
  Change, ChangeListener, DbOptions, LoadInfo, Op, Persist, PreparedOf, Rec, RecordMap, RestoreContext, TypeOf, Untyped, WithPrepared,
} from './dbTypes.js';
export { Tx, type Derive } from './tx.js';

export class Db<R extends RecordMap<R> = Untyped> implements TxOwner<R> {
  /** Records by type and id (a table's base: records loaded from the snapshot block, parsed on first read). */
  private readonly tables = new Map<string, Table>();
  private readonly views = new Map<string, TableView<object>>();
  /** The bytes of the records loaded from a snapshot block and not read yet (docs/storage.md#snapshots). */
  private lazy: LazyRecords | null = null;
  /** The bytes of the records of types held as bytes ({@link holdAsBytes}); made with the first such type. */
  private arena: ByteArena | null = null;
  /** The types held as bytes, each with its condition (null: every record). */
  private readonly coldTypes = new Map<string, ((rec: object) => boolean) | null>();
  private readonly listeners: ChangeListener[];
  /** The hooks registered per record type (see {@link on}, {@link derive}, {@link retain}). */
  private readonly onChange = new Map<string, Array<Change<object>>>();
  /** Per record type, parallel to {@link onChange}: how each listener's state is saved (undefined: it is not). */
  private readonly persisted = new Map<string, Array<Persist | typeof STATELESS | undefined>>();
  private readonly persistNames = new Set<string>();
  private readonly onPut = new Map<string, Array<DeriveHook<R>>>();
  /** The retention rules (see {@link retain}). */
  private readonly retention = new Retention();
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
  /** Ops of the file the snapshot block covers (its records); the others are parsed at start. */
  private covered = 0;
  /** Transactions handed to the log so far (their number orders them against a capture point). */
  private handed = 0;
  /** The last transaction the current file's snapshot holds: later ones add their ops to the file's. */
  private coveredThrough = 0;
  /** The compaction in progress, from its capture point: transactions handed after `handed` add their ops to `after`. */
  private capturing: { handed: number; after: number } | null = null;
  private compacting: Promise<void> | null = null;
  private closing = false;
  replay!: ReplayResult;
  /** How the log was loaded (see {@link LoadInfo}). */
  loadInfo!: LoadInfo;

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
   * Loads `path` (creating it when missing) and opens it for appending: from its snapshot block
   * when it has a sound one, then the lines after it; else — no block, one found damaged (a
   * warning in {@link loadInfo}), or `snapshot: 'ignore'` — by a full replay of its lines
   * (docs/storage.md#recovery, docs/storage.md#snapshots).
   * @throws CorruptLogError for a complete line that fails its check (only an incomplete
   *   last line is a torn write, cut off by the replay).
   */
  async load(): Promise<this> {
    if (this.loaded) throw new Error(`${this.path} is already loaded`);
    this.loaded = true;
    const t0 = performance.now();
    const { path, opts } = this;
    ({ replay: this.replay, info: this.loadInfo } = loadLog(path, opts, this.blockTarget(), (tx) => this.applyLine(tx)));
    // A store that syncs writes its batches through an O_DSYNC descriptor where there is one
    // (docs/decisions.md#durable-writes-in-one-system-call).
    const synced = opts.sync && opts.fs.openSynced !== undefined;
    const fd = synced ? await opts.fs.openSynced!(path) : await opts.fs.open(path);
    this.log = new AppendLog(path, fd, this.replay.size, opts.fs, opts.sync, synced);
    this.loadInfo.ms = performance.now() - t0;
    return this;
  }

  /** What loading from a snapshot block reads of this log and installs into it ({@link loadLog}). */
  private blockTarget(): BlockTarget {
    return {
      listensToAll: this.listeners.length > 0, persisted: this.persisted, arena: this.arena, coldTypes: this.coldTypes,
      newTable: (type) => this.newTable(type),
      install: (tables, lazy, live) => { for (const [type, table] of tables) this.tables.set(type, table); this.lazy = lazy; this.live = live; },
      set: (type, id, value) => { this.set(type, id, value); },
      live: () => this.live,
      covered: (ops) => { this.ops = ops; this.covered = ops; },
    };
  }

  /**
   * Calls `listener` on every change of a record of `type` — put, delete, replay, undo — after
   * the change is in memory, in the order listeners were registered. A listener registered
   * after {@link load} sees only later changes (it reads {@link table} for the earlier ones).
   * Listeners keep derived state in memory; they must not throw, nor write.
   *
   * `persist` saves the listener's state in the snapshot block, so that a start restores it
   * instead of calling the listener with every record (docs/storage.md#snapshots); {@link STATELESS}
   * for a listener with nothing to restore. A type with a listener registered before
   * {@link load} without one is parsed and replayed through its listeners at every start.
   * @throws Error when another persisted state of this log has the same name.
   */
  on<K extends TypeOf<R>>(type: K, listener: Change<R[K]>, persist?: Persist | typeof STATELESS): void {
    if (persist !== undefined && persist !== STATELESS) {
      if (this.persistNames.has(persist.name)) throw new Error(`${this.path}: two persisted states are named ${persist.name}`);
      this.persistNames.add(persist.name);
    }
    push(this.onChange, type, listener as Change<object>);
    push(this.persisted, type, persist);
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

  /**
   * Holds the records of `type` as bytes (docs/storage.md#memory): once the transaction that put
   * a record is on disk (its commit's write succeeded), the record's JSON — the very text its log
   * line holds, `Tx.put`'s `json` or the text the line serialized, not serialized again — is
   * copied into the log's arena of chunks ({@link ByteArena}) and the object is dropped; each read
   * ({@link get}, {@link table}) parses it again, a new object each time. With `when`, only the
   * records it accepts (a webhook delivery once it is no longer pending); the others stay
   * objects. A put not on disk yet, or of a transaction that failed or was aborted, stays an
   * object (undo puts the previous values back as objects). Records replayed at load become
   * bytes at the next compaction, which serializes them anyway; a compaction copies records held
   * as bytes into the new file from their bytes (docs/storage.md#compaction), and those its
   * retention rule drops are dropped from memory too, through the type's listeners, their bytes
   * freed. Call it before {@link load}, with the other hooks.
   */
  holdAsBytes<K extends TypeOf<R>>(type: K, when?: (rec: R[K]) => boolean): void {
    this.arena ??= new ByteArena(this.opts.chunkBytes ?? CHUNK_BYTES);
    this.coldTypes.set(type, (when as ((rec: object) => boolean) | undefined) ?? null);
    this.tables.get(type)?.holdAsBytes(this.arena);
  }

  /**
   * The JSON text record (type, id) is held as — its bytes since its transaction was on disk
   * ({@link holdAsBytes}), or those of the snapshot block while it is unread — exactly as its
   * log line holds it, decoded but not parsed (docs/storage.md#memory). Undefined when the
   * record is absent or held as an object: then {@link get} it.
   */
  text(type: TypeOf<R>, id: string): string | undefined {
    return this.tables.get(type)?.text(id);
  }

  /**
   * {@link text} as UTF-8 bytes, copied (not decoded) into a new Buffer after `before` bytes of
   * room for the caller (a delivery body's prefix); undefined when {@link text} would be.
   */
  textBytes(type: TypeOf<R>, id: string, before = 0): Buffer | undefined {
    return this.tables.get(type)?.textBytes(id, before);
  }

  /** What the arena of records held as bytes holds (null: no type is; tests, the memory script). */
  arenaStats(): ArenaStats | null { return this.arena?.stats() ?? null; }

  /** A new table for `type`, held as bytes when the type is. */
  private newTable(type: string): Table {
    const t = new Table();
    if (this.coldTypes.has(type)) t.holdAsBytes(this.arena!);
    return t;
  }

  /** Whether a record of `type` is to be held as bytes once it is on disk. */
  private heldAsBytes(type: string, rec: object): boolean {
    const when = this.coldTypes.get(type);
    return when !== undefined && (when === null || when(rec));
  }

  /**
   * Compaction keeps a record of `type` only when every `keep` of its type says so (e.g. drops
   * expired idempotency records; docs/storage.md#compaction). `keepText`, when given, answers
   * the same question from the record's JSON text, for a record held as bytes (docs/storage.md#memory),
   * without parsing it: true or false, or undefined when the text does not tell (`keep` then
   * gets the record, parsed). It must never answer otherwise than `keep` would.
   */
  retain<K extends TypeOf<R>>(type: K, keep: (rec: R[K]) => boolean, keepText?: (json: string) => boolean | undefined): void {
    this.retention.add(type, keep as (rec: object) => boolean, keepText);
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
    if (!table) { table = this.newTable(type); this.tables.set(type, table); }
    const prev = table.set(id, value);
    if (value === undefined) { if (prev !== undefined) this.live--; }
    else if (prev === undefined) this.live++;
    const typed = this.onChange.get(type);
    if (typed !== undefined) for (const l of typed) l(id, prev, value, prepared);
    for (const l of this.listeners) l(type, id, prev as Rec | undefined, value as Rec | undefined);
    return prev;
  }

  /**
   * The record (type, id), or undefined. A record loaded from a snapshot block is parsed on its
   * first read; one of a type held as bytes ({@link holdAsBytes}) at each read, a new object each time.
   */
  get<K extends TypeOf<R>>(type: K, id: string): R[K] | undefined {
    return this.tables.get(type)?.get(id) as R[K] | undefined;
  }

  /** All records of `type` by id (a live view: do not change it); records held as bytes are parsed as they are read. */
  table<K extends TypeOf<R>>(type: K): ReadonlyMap<string, R[K]> {
    let view = this.views.get(type);
    if (view === undefined) this.views.set(type, (view = new TableView(() => this.tables.get(type))));
    return view as unknown as ReadonlyMap<string, R[K]>;
  }

  /** Records loaded from the snapshot block and parsed since, on their first read (tests, the start-up log). */
  get parsedSinceLoad(): number { return this.lazy?.parsed ?? 0; }

  /** A new transaction (nothing is written until {@link commit}). */
  begin(): Tx<R> { return new Tx<R>(this); }
  /** @internal bookkeeping of {@link Tx}. */
  opened(tx: Tx<R>): void { this.open.add(tx); }
  /** @internal */
  closed(tx: Tx<R>): void { this.open.delete(tx); this.closedOne(); }
  /** @internal */
  nextSeq(): number { return ++this.seq; }
  /** @internal */
  derived(tx: Tx<R>, type: string, id: string, prev: object | undefined, next: object | undefined): void {
    const fns = this.onPut.get(type);
    if (fns !== undefined) for (const f of fns) f.derive(tx, id, prev, next);
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
    let n = 0;
    let handed = 0;
    /** The puts of records to hold as bytes once on disk: (index in tx.ops, the value's text in the line). */
    const held: Array<[number, JsonText]> = [];
    try {
      const ops = this.coldTypes.size === 0 ? tx.written() : writtenTexts(tx, (i, value) => {
        const op = tx.ops[i];
        if (op[0] === 'p' && this.heldAsBytes(op[1], op[3])) held.push([i, value()]);
      });
      n = ops.length;
      const lines = encodeTransaction(ops, this.opts.lineBytes ?? LINE_BYTES);
      const written = this.log.appendFrame(lines.length === 0 ? [[]] : lines, tx, tx.lazy);
      handed = ++this.handed;
      this.open.delete(tx); // now queued: compaction sees it through the log's queue
      this.closedOne();
      await written;
      // The operations in the file: dead and live ones (docs/storage.md#compaction). A
      // transaction the current file's snapshot already holds (handed before its capture point)
      // is in it as records, not as its own line.
      if (handed > this.coveredThrough) {
        this.ops += n;
        if (this.capturing !== null && handed > this.capturing.handed) this.capturing.after += n;
      }
    } catch (err) {
      const later = [...this.inflight];
      for (let i = later.length - 1; i >= 0 && later[i] !== tx; i--) later[i].abort();
      tx.abort();
      throw err;
    } finally {
      this.inflight.delete(tx);
    }
    if (held.length > 0 && !tx.undone) this.holdWritten(tx, held);
    for (const h of this.durable) h.committed(tx);
    if (!this.compacting && this.shouldCompact()) this.compact().catch((e) => this.opts.onError?.(e as Error));
  }

  /**
   * Turns the records `tx` put, now on disk, into their bytes (docs/storage.md#memory): each one
   * the table still holds as the object `tx` put (a later put or delete changed nothing yet).
   */
  private holdWritten(tx: Tx<R>, held: ReadonlyArray<[number, JsonText]>): void {
    const arena = this.arena!;
    for (const [i, text] of held) {
      const op = tx.ops[i] as readonly ['p', string, string, object];
      this.tables.get(op[1])?.hold(op[2], op[3], () => arena.add(text));
    }
  }

  /**
   * Whether the log should compact by itself (docs/storage.md#compaction): dead operations past
   * half the live records (plus the slack) — with events, every update also adds a live record,
   * so "dead outnumber live" would never come; dead operations at half the file's; or the
   * operations written after the snapshot block (parsed at every start) past twice those it
   * covers — twice, so that under updates this rule comes no sooner than the first one, and a
   * start parses at most two thirds of a log that only grows.
   */
  private shouldCompact(): boolean {
    const slack = this.opts.compactionSlack ?? 1000;
    const dead = this.ops - this.live;
    if (dead > this.live / 2 + slack) return true;
    if (dead > slack && dead >= this.ops / 2) return true;
    return this.ops - this.covered > 2 * this.covered + (this.opts.tailSlack ?? slack);
  }

  /** Live and total op counts, and the ops the snapshot block covers (for compaction decisions and tests). */
  stats(): { live: number; ops: number; bytes: number; covered: number } {
    return { live: this.live, ops: this.ops, bytes: this.log.size, covered: this.covered };
  }

  /**
   * Rewrites the log to its live records and a snapshot block describing them, crash-safely —
   * temp file, fdatasync, rename, fsync the folder (docs/storage.md#compaction,
   * docs/storage.md#snapshots). Writes go on meanwhile: the records and states are taken at a
   * moment with no transaction open, the lines appended after it are copied to the new file,
   * and writing pauses only for the last of them, the sync and the rename. A compaction whose
   * capture point a failed write undid is abandoned (the log stays as it was). Asked for while one
   * runs, it runs after it, from a capture point of its own.
   * A failed folder fsync after the rename does not reject: the new file is the log, and the
   * log then refuses writes, as after a failed fdatasync (docs/storage.md#faults).
   * @throws fs errors of the new file (the log is untouched).
   */
  compact(): Promise<void> {
    // One running already took its capture point earlier: this call's comes after it (calls
    // made meanwhile share that one).
    if (this.compacting) return (this.nextCompaction ??= this.compacting.catch(() => {}).then(() => { this.nextCompaction = null; return this.compact(); }));
    this.compacting = runCompaction(this.compactionHost()).finally(() => { this.compacting = null; this.capturing = null; });
    return this.compacting;
  }

  /** A compaction asked for while one runs: it starts when that one ends. */
  private nextCompaction: Promise<void> | null = null;

  /** Resolvers of {@link quiet}, called once no transaction is open. */
  private quietWaiters: Array<() => void> = [];

  /** Called when a transaction is no longer open (queued, or aborted): wakes a waiting capture. */
  private closedOne(): void {
    if (this.open.size > 0 || this.quietWaiters.length === 0) return;
    const w = this.quietWaiters;
    this.quietWaiters = [];
    for (const f of w) f();
  }

  /**
   * Resolves at a moment with no transaction open (every change in memory handed to the log),
   * or false after `ms` (a transaction held open that long, e.g. across a slow step) or when
   * the log is being closed.
   */
  private async quiet(ms = 30_000): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.open.size > 0) {
      if (this.closing || Date.now() > deadline) return false;
      await new Promise<void>((r) => { this.quietWaiters.push(r); setTimeout(r, 50).unref(); });
    }
    return true;
  }

  /** What a compaction run ({@link runCompaction}) reads and changes of this log. */
  private compactionHost(): CompactionHost {
    const db = this; // for `lazy` and `arena`, read when the run reads them
    return {
      path: this.path, fs: this.opts.fs, lineBytes: this.opts.lineBytes, log: this.log,
      closing: () => this.closing, quiet: () => this.quiet(), handed: () => this.handed,
      capturing: (mark) => { this.capturing = mark; },
      tables: this.tables, get lazy() { return db.lazy; }, get arena() { return db.arena; }, coldTypes: this.coldTypes,
      heldAsBytes: (type, rec) => this.heldAsBytes(type, rec), inflight: this.inflight,
      persisted: this.persisted, retention: this.retention,
      replaced: (handed, ops, covered) => { this.coveredThrough = handed; this.ops = ops; this.covered = covered; },
      dropped: (type, id, rec) => {
        this.live--;
        const typed = this.onChange.get(type);
        if (typed !== undefined) for (const l of typed) l(id, rec, undefined);
        for (const l of this.listeners) l(type, id, rec as Rec, undefined);
      },
    };
  }

  /** Waits for compaction and pending writes, then closes the log. */
  async close(): Promise<void> {
    this.closing = true;
    while (this.compacting || this.nextCompaction) await (this.nextCompaction ?? this.compacting)!.catch(() => {});
    await this.log.close();
  }
}

/** Appends `fn` to the list of `type` in `hooks`. */
function push<F>(hooks: Map<string, F[]>, type: string, fn: F): void {
  const list = hooks.get(type);
  if (list === undefined) hooks.set(type, [fn]); else list.push(fn);
}
