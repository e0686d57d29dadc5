/**
 * One log's in-memory state: tables of records keyed by (type, id), changed through transactions
 * applied to memory at once and made durable by the {@link AppendLog} (docs/storage.md#transactions).
 * Applying first keeps handling serializable; a failed write undoes that transaction and every
 * later one. Indexes listen through {@link Db.on}; the API types are in dbTypes.ts, transactions in
 * tx.ts and txText.ts, loading and compaction in snapshot/.
 */
import { AppendLog, LINE_BYTES, encodeTransaction, type JsonText } from './log/log.js';
import type { ReplayResult } from './log/recovery.js';
import { loadLog, type BlockTarget, type LoadInfo } from './snapshot/loadLog.js';
import { runCompaction, type CompactionHost } from './snapshot/compactionRun.js';
import { Retention } from './snapshot/retention.js';
import { ByteArena, CHUNK_BYTES, type ArenaStats } from './memory/arena.js';
import { Table, TableView } from './memory/table.js';
import { Tx, type CommitHook, type Derive, type DeriveHook, type TxOwner } from './tx.js';
import { writtenTexts } from './txText.js';
import { STATELESS, type Persist } from './snapshot/states.js';
import type { Change, ChangeListener, DbOptions, Op, PreparedOf, Rec, RecordMap, TypeOf, Untyped } from './dbTypes.js';

export type { Column, Columns } from './snapshot/snapshot.js';
export { STATELESS, type Persist, type RestoreContext, type SaveContext } from './snapshot/states.js';
export type { LoadInfo } from './snapshot/loadLog.js';
export type { Change, ChangeListener, DbOptions, Op, PreparedOf, Rec, RecordMap, TypeOf, Untyped,
  WithPrepared } from './dbTypes.js';
export { Tx, type Derive } from './tx.js';

export class Db<R extends RecordMap<R> = Untyped> implements TxOwner<R> {
  private readonly tables = new Map<string, Table>();
  private readonly views = new Map<string, TableView<object>>();
  /** The bytes of the records held as bytes (docs/storage.md#memory); made with the first. */
  private arena: ByteArena | null = null;
  /** The types held as bytes, each with its condition (null: every record). */
  private readonly coldTypes = new Map<string, ((rec: object) => boolean) | null>();
  private readonly listeners: ChangeListener[];
  private readonly onChange = new Map<string, Array<Change<object>>>();
  /** Per record type, parallel to {@link onChange}: how each listener's state is saved (undefined: it is not). */
  private readonly persisted = new Map<string, Array<Persist | typeof STATELESS | undefined>>();
  private readonly persistNames = new Set<string>();
  private readonly onPut = new Map<string, Array<DeriveHook<R>>>();
  private readonly retention = new Retention();
  private readonly durable: Array<CommitHook<R>> = [];
  private loaded = false;
  private log!: AppendLog;
  private readonly inflight = new Set<Tx<R>>();
  /** Transactions with changes in memory that are not yet handed to the log. */
  private readonly open = new Set<Tx<R>>();
  private live = 0;
  /** Ops in the log file (live + dead). */
  private ops = 0;
  /** Ops of the file the snapshot block covers (its records); the others are parsed at start. */
  private covered = 0;
  /** Transactions handed to the log so far (their number orders them against a capture point). */
  private handed = 0;
  /** The last transaction the current file's snapshot holds: later ones add their ops to the file's. */
  private coveredThrough = 0;
  /** The running compaction's capture point: transactions handed after `handed` add their ops to `after`. */
  private capturing: { handed: number; after: number } | null = null;
  private compacting: Promise<void> | null = null;
  private closing = false;
  /** Why commits are refused now (a workspace being moved, docs/deployment.md#moving-a-workspace), or null. */
  private refusal: Error | null = null;
  /** Checks every commit passes first (see {@link checkCommits}). */
  private readonly checks: Array<(tx: Tx<R>) => void> = [];
  /** Resolvers waiting for no transaction to be in flight. */
  private drainWaiters: Array<() => void> = [];
  replay!: ReplayResult;
  loadInfo!: LoadInfo;

  private constructor(readonly path: string, private readonly opts: DbOptions) {
    this.listeners = opts.listeners ?? [];
  }

  /** A log at `path`, not read yet: register its hooks ({@link on}…), then {@link load} it. */
  static create<R extends RecordMap<R> = Untyped>(path: string, opts: DbOptions): Db<R> {
    return new Db<R>(path, opts);
  }

  /** {@link create} then {@link load}: a log without hooks registered before its replay. */
  static async open<R extends RecordMap<R> = Untyped>(path: string, opts: DbOptions): Promise<Db<R>> {
    return Db.create<R>(path, opts).load();
  }

  /**
   * Loads `path` (creating it when missing) as {@link loadLog} does, and opens it for appending
   * (docs/storage.md#recovery, docs/storage.md#snapshots).
   * @throws CorruptLogError for a complete line that fails its check (see {@link loadLog}).
   */
  async load(): Promise<this> {
    if (this.loaded) throw new Error(`${this.path} is already loaded`);
    this.loaded = true;
    const t0 = performance.now();
    const { path, opts } = this;
    ({ replay: this.replay, info: this.loadInfo } = loadLog(path, opts, this.blockTarget(), (tx) => {
      for (const op of tx as Op[]) { this.set(op[1], op[2], op[0] === 'p' ? op[3] : undefined); this.ops++; }
    }));
    // Synced writes go through O_DSYNC where there is one (docs/decisions.md#durable-writes-in-one-system-call).
    const synced = opts.sync && opts.fs.openSynced !== undefined;
    const fd = synced ? await opts.fs.openSynced!(path) : await opts.fs.open(path);
    this.log = new AppendLog(path, fd, this.replay.size, opts.fs, opts.sync, synced, opts.onBatch ?? null);
    this.loadInfo.ms = performance.now() - t0;
    return this;
  }

  /** What loading from a snapshot block reads of this log and installs into it ({@link loadLog}). */
  private blockTarget(): BlockTarget {
    return {
      listensToAll: this.listeners.length > 0, persisted: this.persisted,
      arena: () => (this.arena ??= new ByteArena(this.opts.chunkBytes ?? CHUNK_BYTES)),
      newTable: (type) => this.newTable(type),
      install: (tables, live) => {
        for (const [type, table] of tables) this.tables.set(type, table);
        this.live = live;
      },
      set: (type, id, value) => { this.set(type, id, value); },
      live: () => this.live,
      covered: (ops) => { this.ops = ops; this.covered = ops; },
    };
  }

  /**
   * Calls `listener` on every change of a record of `type` — put, delete, replay, undo — once it
   * is in memory, in registration order; one registered after {@link load} sees only later
   * changes. Listeners keep derived state in memory; they must not throw, nor write.
   * `persist` saves its state in the snapshot block so a start restores it instead of replaying
   * every record (docs/storage.md#snapshots); {@link STATELESS}: nothing to restore. Without it,
   * the type is parsed and replayed through its listeners at every start.
   * @throws Error when another persisted state of this log has the same name.
   */
  on<K extends TypeOf<R>>(type: K, listener: Change<R[K]>, persist?: Persist | typeof STATELESS): void {
    if (persist !== undefined && persist !== STATELESS) {
      if (this.persistNames.has(persist.name)) throw new Error(
        `${this.path}: two persisted states are named ${persist.name}`);
      this.persistNames.add(persist.name);
    }
    push(this.onChange, type, listener as Change<object>);
    push(this.persisted, type, persist);
  }

  /**
   * Calls `derive` after every put of a record of `type` in a transaction, to add records derived
   * from it (daily counters) to the same transaction, written and undone with it. Not on replay.
   */
  derive<K extends TypeOf<R>>(type: K, derive: Derive<R, R[K]>): void {
    push(this.onPut, type, { derive: (tx, id, prev, next) => { if (next !== undefined) derive(tx, id, prev as R[
      K] | undefined, next as R[K]); } });
  }

  /** Like {@link derive}, for every delete of a record of `type`: `derive` gets the deleted record. */
  deriveOnDelete<K extends TypeOf<R>>(type: K, derive: (tx: Tx<R>, id: string, prev: R[K]) => void): void {
    push(this.onPut, type, { derive: (tx, id, prev, next) => { if (next === undefined && prev !== undefined) derive(tx,
      id, prev as R[K]); } });
  }

  /**
   * Holds the records of `type` as bytes (docs/storage.md#memory): once the transaction that put a
   * record is on disk, the text its log line holds is copied into the log's {@link ByteArena} and
   * the object dropped; each read parses it again, a new object each time. With `when`, only the
   * records it accepts; the others stay objects, as do puts not on disk yet or undone. Records
   * replayed at load become bytes at the next compaction, which copies them from their bytes and
   * drops from memory, through the listeners, those its retention rule drops. Call before {@link load}.
   */
  holdAsBytes<K extends TypeOf<R>>(type: K, when?: (rec: R[K]) => boolean): void {
    this.arena ??= new ByteArena(this.opts.chunkBytes ?? CHUNK_BYTES);
    this.coldTypes.set(type, (when as ((rec: object) => boolean) | undefined) ?? null);
    this.tables.get(type)?.holdAsBytes(this.arena);
  }

  /**
   * The JSON text record (type, id) is held as, exactly as its log line holds it, not parsed
   * (docs/storage.md#memory); undefined when it is absent or held as an object ({@link get} it).
   */
  text(type: TypeOf<R>, id: string): string | undefined {
    return this.tables.get(type)?.text(id);
  }

  /** {@link text} as UTF-8 bytes, copied into a new Buffer after `before` bytes of room for the caller. */
  textBytes(type: TypeOf<R>, id: string, before = 0): Buffer | undefined {
    return this.tables.get(type)?.textBytes(id, before);
  }

  /** What the arena of records held as bytes holds (null: none; tests, the memory script). */
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
   * expired idempotency records; docs/storage.md#compaction). `keepText` answers the same from a
   * record's JSON text when it can (undefined: it cannot, `keep` gets the record parsed), for
   * records held as bytes (docs/storage.md#memory); it must never answer otherwise than `keep`.
   */
  retain<K extends TypeOf<R>>(type: K, keep: (rec: R[K]) => boolean, keepText?: (json: string) =>
    boolean | undefined): void {
    this.retention.add(type, keep as (rec: object) => boolean, keepText);
  }

  /**
   * Calls `fn` with each transaction once its line is on disk, before {@link commit} resolves: for
   * work that must start only from durable changes, such as a webhook delivery
   * (docs/storage.md#indexes). Not on replay, nor for a failed or empty transaction. Must not throw.
   */
  afterCommit(fn: (tx: Tx<R>) => void): void {
    this.durable.push({ committed: fn });
  }

  /** Sets or (with undefined) deletes a record, tells the listeners; returns the previous value. */
  set(type: string, id: string, value: object | undefined, prepared?: unknown): object | undefined {
    let table = this.tables.get(type);
    if (!table) { table = this.newTable(type); this.tables.set(type, table); }
    const prev = table.set(id, value);
    if (value === undefined) { if (prev !== undefined) this.live--; }
    else if (prev === undefined) this.live++;
    this.tell(type, id, prev, value, prepared);
    return prev;
  }

  /** Tells the listeners of `type`, then those of every type, of a change. */
  private tell(type: string, id: string, prev: object | undefined, next: object | undefined, prepared?: unknown): void {
    const typed = this.onChange.get(type);
    if (typed !== undefined) for (const l of typed) l(id, prev, next, prepared);
    for (const l of this.listeners) l(type, id, prev as Rec | undefined, next as Rec | undefined);
  }

  /** The record (type, id), or undefined; one held as bytes is parsed at each read, a new object each time. */
  get<K extends TypeOf<R>>(type: K, id: string): R[K] | undefined {
    return this.tables.get(type)?.get(id) as R[K] | undefined;
  }

  /** All records of `type` by id (a live view: do not change it); records held as bytes are parsed as they are read. */
  table<K extends TypeOf<R>>(type: K): ReadonlyMap<string, R[K]> {
    let view = this.views.get(type);
    if (view === undefined) this.views.set(type, (view = new TableView(() => this.tables.get(type))));
    return view as unknown as ReadonlyMap<string, R[K]>;
  }

  /** Records loaded from the snapshot block and parsed since (tests, the start-up log). */
  get parsedSinceLoad(): number { return this.arena?.taken ?? 0; }

  /** A new transaction (nothing is written until {@link commit}). */
  begin(): Tx<R> { return new Tx<R>(this); }
  /** @internal bookkeeping of {@link Tx}. */
  opened(tx: Tx<R>): void { this.open.add(tx); }
  /** @internal */
  closed(tx: Tx<R>): void { this.open.delete(tx); this.closedOne(); }
  /** @internal */
  derived(tx: Tx<R>, type: string, id: string, prev: object | undefined, next: object | undefined): void {
    const fns = this.onPut.get(type);
    if (fns !== undefined) for (const f of fns) f.derive(tx, id, prev, next);
  }

  /** Why this log refuses writes, or null. */
  get failed(): Error | null { return this.log.failed; }

  /**
   * Makes `tx` durable; resolves once its line — or its frame's commit marker — is on disk
   * (docs/storage.md#transactions, docs/storage.md#frames), and never before the transactions
   * committed before it, even when its changes cancel out. On a write failure it, and every later
   * one still waiting, is undone, and the error is thrown.
   * @throws Error when `tx` was aborted; the log's write errors (StorageFailedError, ENOSPC…).
   */
  async commit(tx: Tx<R>): Promise<void> {
    if (tx.undone) throw new Error('transaction was aborted');
    if (tx.ops.length === 0) return;
    if (this.refusal !== null) { tx.abort(); throw this.refusal; }
    try { for (const check of this.checks) check(tx); } catch (e) { tx.abort(); throw e; }
    this.inflight.add(tx);
    let n = 0;
    let handed = 0;
    /** Puts to hold as bytes once on disk: (index in tx.ops, the value's text). */
    const held: Array<[number, JsonText]> = [];
    try {
      const ops = this.coldTypes.size === 0 ? tx.written() : writtenTexts(tx, (i, value) => {
        const op = tx.ops[i];
        if (op[0] === 'p' && this.heldAsBytes(op[1], op[3])) held.push([i, value()]);
      });
      n = ops.length;
      const lines = encodeTransaction(ops, this.opts.lineBytes ?? LINE_BYTES);
      const written = this.log.appendFrame(lines.length === 0 ? [[]] : lines, tx.lazy);
      handed = ++this.handed;
      this.open.delete(tx); // now queued: compaction sees it through the log's queue
      this.closedOne();
      await written;
      // A transaction handed before the current file's capture point is in it as records, not as a line.
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
      if (this.inflight.size === 0 && this.drainWaiters.length > 0) {
        const w = this.drainWaiters;
        this.drainWaiters = [];
        for (const f of w) f();
      }
    }
    // The records `tx` put, now on disk, become bytes where the table still holds that object.
    if (!tx.undone) {
      for (const [i, text] of held) {
        const op = tx.ops[i] as readonly ['p', string, string, object];
        this.tables.get(op[1])?.hold(op[2], op[3], () => this.arena!.add(text));
      }
    }
    for (const h of this.durable) h.committed(tx);
    if (!this.compacting && this.shouldCompact()) this.compact().catch((e) => this.opts.onError?.(e as Error));
  }

  /**
   * Whether the log should compact by itself (docs/storage.md#compaction): dead operations past
   * half the live records plus the slack, or at half the file's; or the operations after the
   * snapshot block (parsed at every start) past twice those it covers, so a start parses at most
   * two thirds of a log that only grows.
   */
  private shouldCompact(): boolean {
    const slack = this.opts.compactionSlack ?? 1000;
    const dead = this.ops - this.live;
    if (dead > this.live / 2 + slack) return true;
    if (dead > slack && dead >= this.ops / 2) return true;
    return this.ops - this.covered > 2 * this.covered + (this.opts.tailSlack ?? slack);
  }

  /** Live and total op counts, and the ops the snapshot block covers. */
  stats(): { live: number; ops: number; bytes: number; covered: number } {
    return { live: this.live, ops: this.ops, bytes: this.log.size, covered: this.covered };
  }

  /**
   * Rewrites the log to its live records and a snapshot block, crash-safely, while writes go on
   * ({@link runCompaction}; docs/storage.md#compaction). Asked for while one runs, it runs after
   * it, from a capture point of its own (calls made meanwhile share it). A failed folder fsync
   * after the rename does not reject: the log then refuses writes (docs/storage.md#faults).
   * @throws fs errors of the new file (the log is untouched).
   */
  compact(): Promise<void> {
    if (this.compacting) return (this.nextCompaction ??= this.compacting.catch(() => {}).then(() => {
      this.nextCompaction = null; return this.compact(); }));
    this.compacting = runCompaction(this.compactionHost()).finally(() =>
      { this.compacting = null; this.capturing = null; });
    return this.compacting;
  }

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
   * Resolves true at a moment with no transaction open (every change in memory handed to the
   * log), false after `ms` (a transaction held open that long) or when the log is closing.
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
    const db = this; // for `arena`, read when the run reads it
    return {
      path: this.path, fs: this.opts.fs, lineBytes: this.opts.lineBytes, log: this.log,
      closing: () => this.closing, quiet: () => this.quiet(), handed: () => this.handed,
      capturing: (mark) => { this.capturing = mark; },
      tables: this.tables, get arena() { return db.arena; }, coldTypes: this.coldTypes,
      heldAsBytes: (type, rec) => this.heldAsBytes(type, rec), inflight: this.inflight,
      persisted: this.persisted, retention: this.retention,
      replaced: (handed, ops, covered) => { this.coveredThrough = handed; this.ops = ops; this.covered = covered; },
      dropped: (type, id, rec) => { this.live--; this.tell(type, id, rec, undefined); },
    };
  }

  /**
   * The log's consistent cut now (docs/storage.md#backup): the descriptor it writes through and the byte length the
   * file had after its last answered transaction. Read both in one turn: a compaction may swap the file later.
   * Null while writing is paused for a compaction's swap: the path may already name the new file while the log
   * still writes the old one, whose descriptor number may be closed and reused (wait for
   * {@link compactionSettled} and ask again).
   */
  backupCut(): { fd: number; end: number } | null {
    return this.log.isPaused ? null : { fd: this.log.descriptor, end: this.log.committedEnd };
  }

  /** Runs `check` before each commit: what it throws refuses the transaction (undone in memory, then thrown). */
  checkCommits(check: (tx: Tx<R>) => void): void { this.checks.push(check); }

  /**
   * Refuses every commit from now on with `err` (undone in memory, `err` thrown), or accepts them again (`null`);
   * resolves once no transaction handed to the log before is still waiting for the disk, so the file's
   * {@link backupCut} then holds every answered one (docs/deployment.md#moving-a-workspace).
   */
  refuseWrites(err: Error | null): Promise<void> {
    this.refusal = err;
    if (err === null || this.inflight.size === 0) return Promise.resolve();
    return new Promise((r) => this.drainWaiters.push(r));
  }

  /** Settles when the compaction running now (if any) has swapped its file in or failed; never rejects. */
  compactionSettled(): Promise<void> { return (this.compacting ?? Promise.resolve()).catch(() => {}); }

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
