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
 */
import { mkdirSync, readdirSync, unlinkSync, openSync, closeSync, fstatSync, read as readCb } from 'node:fs';
import { promisify } from 'node:util';
import { dirname, basename, join } from 'node:path';
import { AppendLog, LINE_BYTES, StorageFailedError, encodeTransaction, type JsonText } from './log.js';
import { replayLog, type ReplayResult } from './recovery.js';
import { discard, writeCompacted, type Capture, type CapturedTable, type SaveContext } from './compaction.js';
import { readBlock, walkPuts, type Block, type Column, type Columns } from './snapshot.js';
import { LazyRecords } from './lazy.js';
import { ByteArena, CHUNK_BYTES, type ArenaStats } from './arena.js';
import { Table, TableView, type Held } from './table.js';
import type { IdList } from './ids.js';
import type { StoreFs } from './fs.js';

export type { SaveContext } from './compaction.js';
export type { Column, Columns } from './snapshot.js';

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
  // A request's transaction has a handful of operations: whether any record repeats is found by
  // comparing them pairwise, without a key string and a Map per operation (the common case: none).
  if (ops.length <= 16) {
    let repeats = false;
    for (let i = 1; i < ops.length && !repeats; i++) {
      for (let j = 0; j < i; j++) if (ops[i][2] === ops[j][2] && ops[i][1] === ops[j][1]) { repeats = true; break; }
    }
    if (!repeats) return null;
  }
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
 * The value's JSON text inside `text`, the text {@link opJson} made for put `op` with `raw`: the
 * pre-serialized value as it was given, or the part of `JSON.stringify(op)` after its head
 * `["p",<type>,<id>,` and before its closing `]` — the same characters, not serialized again.
 */
function putValueText(op: Op, raw: JsonText | undefined, text: JsonText): JsonText {
  if (raw !== undefined) return raw;
  const s = text as string;
  return s.slice(5 + JSON.stringify(op[1]).length + 1 + JSON.stringify(op[2]).length + 1, s.length - 1);
}

/**
 * The JSON texts of the operations `tx`'s log line holds, in order ({@link Tx.written}); for each
 * written put, `put(i, value text)` is called when given (`i` its index in `tx.ops`).
 */
function writtenTexts(tx: { readonly ops: readonly Op[]; readonly raw: ReadonlyArray<JsonText | undefined> | undefined; readonly undo: ReadonlyArray<readonly [string, string, object | undefined, number]> }, put?: (i: number, value: () => JsonText) => void): JsonText[] {
  const { ops, raw } = tx;
  const order = writtenOps(ops, tx.undo);
  const n = order === null ? ops.length : order.length;
  const out = new Array<JsonText>(n);
  for (let k = 0; k < n; k++) {
    const i = order === null ? k : order[k];
    const op = ops[i];
    const text = opJson(op, raw?.[i]);
    out[k] = text;
    if (put !== undefined && op[0] === 'p') put(i, () => putValueText(op, raw?.[i], text));
  }
  return out;
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
    return writtenTexts(this);
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
    mkdirSync(dirname(path), { recursive: true });
    for (const f of readdirSync(dirname(path))) {
      if (f.startsWith(`${basename(path)}.compact-`)) unlinkSync(join(dirname(path), f)); // a compaction cut short
    }
    let replayedOps = 0;
    const apply = (tx: unknown) => { replayedOps += (tx as unknown[]).length; this.applyLine(tx); };
    const fast = opts.snapshot === 'ignore' ? null : this.loadSnapshot(path);
    if (fast !== null && 'tail' in fast) {
      this.replay = replayLog(path, apply, opts.now?.(), fast.tail);
      this.loadInfo = { snapshot: true, records: fast.records, lazy: fast.lazy, replayedTypes: fast.replayedTypes, replayedOps, ms: 0 };
    } else {
      this.replay = replayLog(path, apply, opts.now?.());
      this.loadInfo = { snapshot: false, records: 0, lazy: 0, replayedTypes: [], replayedOps, ms: 0 };
      if (fast !== null && fast.reason !== null) this.loadInfo.ignoredBlock = fast.reason;
    }
    this.loadInfo.replayedOps = replayedOps;
    const fd = await opts.fs.open(path);
    this.log = new AppendLog(path, fd, this.replay.size, opts.fs, opts.sync);
    this.loadInfo.ms = performance.now() - t0;
    return this;
  }

  /**
   * Loads the records and persisted states of `path`'s snapshot block (docs/storage.md#snapshots):
   * the block is read and checked, then the put lines (their checksums, and that each record
   * lies where the block says) while the records' bytes are copied out; only then is anything
   * installed — tables of lazy refs, the saved states, and, for a type whose listeners are not
   * all persisted, its records parsed and given to them in file order.
   * @returns where the lines after the block begin (to be replayed), or why the block was not
   *   used (`reason` null: there is none) — nothing is installed then, and a full replay follows.
   * @throws CorruptLogError for a put line whose checksum fails (a full replay would stop there too).
   */
  private loadSnapshot(path: string): { tail: { offset: number; line: number }; records: number; lazy: number; replayedTypes: string[] } | { reason: string | null } {
    let fd: number;
    try { fd = openSync(path, 'r'); } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { reason: null };
      throw e;
    }
    try {
      const block = readBlock(fd, fstatSync(fd).size);
      if ('reason' in block) return { reason: block.reason.startsWith('no snapshot block') ? null : block.reason };
      const n = block.gaps.length;
      const runs = block.runs;
      // Which types stay unparsed: every listener of theirs persisted, its state restorable,
      // and the block's order of their ids there. The others are parsed and replayed.
      const ctx = restoreContext(block);
      const installs: Array<() => void> = [];
      const perms = new Map<number, Uint32Array>();
      const decide = (type: string, t: number): boolean => {
        if (this.listeners.length > 0) return false;
        const mine: Array<() => void> = [];
        for (const p of this.persisted.get(type) ?? []) {
          if (p === undefined) return false;
          if (p === STATELESS) continue;
          const cols = block.states.get(p.name);
          if (cols === undefined) return false;
          try { mine.push(p.restore(cols, ctx)); } catch { return false; }
        }
        if (t >= 0) {
          const order = block.states.get(`table:${type}/1`)?.perm;
          if (order === undefined || order.length !== runs[t].count) return false;
          try { const p = ctx.numbers(order); perms.set(t, p instanceof Uint32Array ? p : Uint32Array.from(p)); } catch { return false; }
        }
        installs.push(...mine);
        return true;
      };
      const lazyType = block.types.map((type, t) => decide(type, t));
      const replayedTypes = block.types.filter((_, t) => !lazyType[t]);
      // Listened types without records in the block: their (empty) states are restored too.
      for (const type of this.persisted.keys()) if (!block.types.includes(type)) decide(type, -1);
      // The records: bytes copied out for unparsed types, parsed now for the others.
      const typeAt = (ref: number) => { let t = 0; while (ref >= runs[t].from + runs[t].count) t++; return t; };
      let lazyCount = 0;
      for (let t = 0; t < runs.length; t++) if (lazyType[t]) lazyCount += runs[t].count;
      // The unparsed records of a type held as bytes go to the arena (docs/storage.md#memory),
      // where an overwrite, a delete or a drop frees them; the others to the block's buffers.
      const arena = this.arena;
      const coldRefs = runs.map((r, t) => (lazyType[t] && this.coldTypes.has(block.types[t]) ? new Uint32Array(r.count) : null));
      const inBlock = (t: number) => lazyType[t] && coldRefs[t] === null;
      const lazy = new LazyRecords(block.lengths, coldRefs.every((c, t) => c === null && lazyType[t]) ? () => true : (ref) => inBlock(typeAt(ref)));
      const filled = new Array<number>(runs.length).fill(0);
      /** Frees what the arena took, when the block is not used after all. */
      const unused = (reason: string | null) => {
        for (let t = 0; t < runs.length; t++) for (let i = 0; i < filled[t]; i++) arena!.free(coldRefs[t]![i]);
        return { reason };
      };
      const parsed: Array<[number, number, object]> = [];
      let bad: string | null = null;
      const walked = walkPuts(path, fd, block, (rec, t, buf, start, end) => {
        const cold = coldRefs[t];
        if (cold !== null) { cold[rec - runs[t].from] = arena!.add(new Uint8Array(buf.buffer, buf.byteOffset + start, end - start)); filled[t]++; return; }
        if (lazyType[t]) { lazy.add(rec, buf, start, end); return; }
        try { parsed.push([rec, t, JSON.parse(buf.toString('utf8', start, end)) as object]); } catch { bad ??= `snapshot record ${rec} does not parse`; }
      });
      if (walked !== null || bad !== null) return unused(walked ?? bad);
      // Tables, checked before anything is installed.
      const tables = new Map<string, Table>();
      for (let t = 0; t < runs.length; t++) {
        const table = this.newTable(block.types[t]);
        tables.set(block.types[t], table);
        if (!lazyType[t]) continue;
        try {
          table.setBase(runs[t].ids, perms.get(t)!, runs[t].from, lazy, coldRefs[t] ?? undefined);
        } catch (e) {
          return unused(`the snapshot block's records of ${block.types[t]}: ${(e as Error).message}`);
        }
      }
      // Install: tables first, so that restored states and replayed listeners see every record.
      for (const [type, table] of tables) this.tables.set(type, table);
      this.lazy = lazy;
      this.live = lazyCount;
      for (const install of installs) install();
      for (const [rec, t, value] of parsed) this.set(block.types[t], runs[t].ids.at(rec - runs[t].from), value);
      if (this.live !== n) throw new Error(`${path}: the snapshot block names a record twice`);
      this.ops = n;
      this.covered = n;
      return { tail: { offset: block.tailOffset, line: block.puts + block.lines + 1 }, records: n, lazy: lazyCount, replayedTypes };
    } finally {
      closeSync(fd);
    }
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
    push(this.keep, type, keep as (rec: object) => boolean);
    push(this.keepText, type, keepText);
  }
  /** Per type, parallel to {@link keep}: each rule's answer from a text, when it has one. */
  private readonly keepText = new Map<string, Array<((json: string) => boolean | undefined) | undefined>>();

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

  /** Whether compaction keeps `rec` (see {@link retain}). */
  private retained(type: string, rec: object): boolean {
    const fns = this.keep.get(type);
    return fns === undefined || fns.every((f) => f(rec));
  }

  /**
   * Whether compaction keeps a record of `type` from its JSON text alone (undefined: a rule
   * cannot tell), or null when a rule of `type` has no text answer (see {@link retain}).
   */
  private retainedText(type: string): ((json: string) => boolean | undefined) | null {
    const fns = this.keepText.get(type);
    if (fns === undefined) return () => true;
    if (fns.some((f) => f === undefined)) return null;
    return (json) => {
      let all: boolean | undefined = true;
      for (const f of fns) {
        const keep = f!(json);
        if (keep === false) return false;
        if (keep === undefined) all = undefined;
      }
      return all;
    };
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
   * @throws fs errors of the new file (the log is untouched), or of the folder fsync (the new
   *   file is the log; it then refuses writes, as after a failed fdatasync).
   */
  compact(): Promise<void> {
    // One running already took its capture point earlier: this call's comes after it (calls
    // made meanwhile share that one).
    if (this.compacting) return (this.nextCompaction ??= this.compacting.catch(() => {}).then(() => { this.nextCompaction = null; return this.compact(); }));
    this.compacting = this.runCompaction().finally(() => { this.compacting = null; this.capturing = null; });
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

  /**
   * The state at the capture point (docs/storage.md#compaction): every table's ids and entries
   * (records are immutable, so references are enough; refs of bytes stay valid: the arena is
   * pinned until the file is written) and every persisted state's copy. Synchronous: nothing
   * changes meanwhile. For a type held as bytes, a record the new file serializes becomes bytes
   * when it is on disk already (not put by a transaction still being written) and unchanged; a
   * record its retention rule drops is added to `drops`.
   */
  private capture(drops: Array<[number, number, object]>): Capture {
    /** Records of types held as bytes put by transactions not on disk yet, as `type\0id`. */
    let unsure: Set<string> | null = null;
    if (this.coldTypes.size > 0) {
      for (const tx of this.inflight) for (const [type, id] of tx.undo) if (this.coldTypes.has(type)) (unsure ??= new Set()).add(`${type}\u0000${id}`);
    }
    const tables: CapturedTable[] = [];
    for (const [type, table] of this.tables) {
      if (table.size === 0) continue;
      const c: CapturedTable = { type, ...table.capture() };
      if (this.coldTypes.has(type)) {
        c.hold = (i, text) => {
          const obj = c.objs[i]!;
          if (!this.heldAsBytes(type, obj) || unsure?.has(`${type}\u0000${c.ids[i]}`)) return;
          table.hold(c.ids[i], obj, () => this.arena!.add(text));
        };
      }
      tables.push(c);
    }
    const states: Capture['states'] = [];
    for (const list of this.persisted.values()) {
      for (const p of list) if (p !== undefined && p !== STATELESS) states.push({ name: p.name, save: p.capture() });
    }
    const dropped = this.coldTypes.size === 0 ? undefined : (t: number, i: number, rec: object) => { if (this.coldTypes.has(tables[t].type)) drops.push([t, i, rec]); };
    return { tables, states, dropped };
  }

  /**
   * Removes from memory the records of types held as bytes that the compaction just installed
   * dropped by their retention rule (`drops`, of `capture`), each one memory still holds as it
   * was captured — through the type's listeners, as a delete that is not written (the new file
   * no longer holds it), its bytes freed (docs/storage.md#memory).
   */
  private dropRetained(capture: Capture, drops: ReadonlyArray<[number, number, object]>): void {
    for (const [t, i, rec] of drops) {
      const c = capture.tables[t];
      const id = c.ids[i];
      const table = this.tables.get(c.type);
      if (table === undefined || !table.dropIf(id, c.held[i] as Held, c.objs[i], c.refs[i])) continue;
      this.live--;
      const typed = this.onChange.get(c.type);
      if (typed !== undefined) for (const l of typed) l(id, rec, undefined);
      for (const l of this.listeners) l(c.type, id, rec as Rec, undefined);
    }
  }

  private async runCompaction(): Promise<void> {
    const log = this.log;
    if (this.closing || !(await this.quiet()) || log.failed) return;
    // The capture point: memory now equals the file plus the lines handed to the log so far.
    const drops: Array<[number, number, object]> = [];
    const capture = this.capture(drops);
    const from = log.handedEnd;
    const failures = log.failures;
    const mark = { handed: this.handed, after: 0 };
    this.capturing = mark;
    const fs = this.opts.fs;
    const oldFd = log.descriptor;
    // The refs of bytes captured stay valid until the file is written: their frees wait.
    const arena = this.arena;
    arena?.pin();
    let written: Awaited<ReturnType<typeof writeCompacted>>;
    try {
      written = await writeCompacted(this.path, capture, this.lazy, arena, (type, rec) => this.retained(type, rec), (type) => this.keep.has(type),
        (type) => this.retainedText(type),
        fs, `${basename(this.path)}.compact-${process.pid}`, this.opts.lineBytes);
    } finally {
      arena?.unpin();
    }
    let replacement: { fd: number; size: number } | undefined;
    let renamed = false;
    const abandoned = () => log.failures !== failures || log.failed !== null || log.descriptor !== oldFd;
    try {
      // Catch up with the lines appended meanwhile, without stopping writes, until little is left.
      let copied = from;
      for (let round = 0; round < 10 && !abandoned(); round++) {
        const upTo = log.size;
        if (round > 0 && upTo - copied < CATCH_UP_BYTES) break;
        written.size += await copyRange(oldFd, fs, written.fd, copied, upTo, written.size);
        copied = upTo;
      }
      if (abandoned()) return;
      if (copied > from) await fs.fdatasync(written.fd);
      // The last lines: writing pauses (a frame partly written is finished first) for them, the sync and the rename.
      await log.pause();
      try {
        if (abandoned()) return;
        if (log.size > copied) {
          written.size += await copyRange(oldFd, fs, written.fd, copied, log.size, written.size);
          await fs.fdatasync(written.fd);
        }
        await fs.rename(written.tmp, this.path);
        renamed = true;
        replacement = { fd: written.fd, size: written.size };
        this.coveredThrough = mark.handed;
        this.ops = written.records + mark.after;
        this.covered = written.records;
        await fs.close(oldFd).catch(() => {});
        // The rename may not survive a crash until the folder is synced: like a failed fdatasync,
        // a failure here refuses further writes (docs/storage.md#faults).
        try {
          await fs.fsyncDir(dirname(this.path));
        } catch (err) {
          log.fail(new StorageFailedError(`fsync of ${dirname(this.path)} after compacting ${this.path} failed: ${(err as Error).message}; writes are refused until restart`));
        }
      } finally {
        log.resume(replacement);
      }
      if (renamed) this.dropRetained(capture, drops);
    } finally {
      if (!renamed) await discard(fs, written.fd, written.tmp);
    }
  }

  /** Waits for compaction and pending writes, then closes the log. */
  async close(): Promise<void> {
    this.closing = true;
    while (this.compacting || this.nextCompaction) await (this.nextCompaction ?? this.compacting)!.catch(() => {});
    await this.log.close();
  }
}

/** Below this many bytes appended during a compaction, the rest is copied with writes paused. */
const CATCH_UP_BYTES = 256 * 1024;

const readAt = promisify(readCb);

/**
 * Copies bytes [from, to) of the file open as `src` to `dst` at `at`, 4 MiB at a time;
 * returns how many were copied.
 * @throws fs errors; Error when `src` ends before `to`.
 */
async function copyRange(src: number, fs: StoreFs, dst: number, from: number, to: number, at: number): Promise<number> {
  const buf = Buffer.allocUnsafe(Math.min(4 << 20, Math.max(to - from, 1)));
  let done = 0;
  while (from + done < to) {
    const { bytesRead } = await readAt(src, buf, 0, Math.min(buf.length, to - from - done), from + done);
    if (bytesRead === 0) throw new Error('the log ended before the lines to copy');
    await fs.write(dst, buf.subarray(0, bytesRead), at + done);
    done += bytesRead;
  }
  return done;
}

/** The {@link RestoreContext} of `block`. */
function restoreContext(block: Block): RestoreContext {
  const n = block.gaps.length;
  const { runs } = block;
  const typeAt = (ref: number) => { let lo = 0, hi = runs.length - 1; while (lo < hi) { const mid = (lo + hi + 1) >>> 1; if (runs[mid].from <= ref) lo = mid; else hi = mid - 1; } return lo; };
  const typeIndex = new Map(block.types.map((t, i) => [t, i]));
  const runOf = (type: string) => {
    const t = typeIndex.get(type);
    if (t === undefined) throw new Error(`no record of ${type} in the block`);
    return runs[t];
  };
  const refs = (col: Column | undefined): Uint32Array => {
    if (col instanceof Uint32Array) { for (let i = 0; i < col.length; i++) if (col[i] >= n) throw new Error(`not a ref: ${col[i]}`); return col; }
    if (!Array.isArray(col)) throw new Error('not a column of refs');
    const out = new Uint32Array(col.length);
    for (let i = 0; i < col.length; i++) {
      const r = col[i];
      if (typeof r !== 'number' || !(r >= 0 && r < n) || r % 1 !== 0) throw new Error(`not a ref: ${String(r)}`);
      out[i] = r;
    }
    return out;
  };
  return {
    records: n,
    refs,
    typeIds: (type) => runOf(type).ids,
    firstRef: (type) => runOf(type).from,
    positions(type, col) {
      const run = runOf(type);
      const r = refs(col);
      const out = new Uint32Array(r.length);
      for (let i = 0; i < r.length; i++) {
        const at = r[i] - run.from;
        if (!(at >= 0 && at < run.count)) throw new Error(`ref ${r[i]} is not a record of ${type}`);
        out[i] = at;
      }
      return out;
    },
    ids(col) {
      const r = refs(col);
      const out = new Array<string>(r.length);
      for (let i = 0; i < r.length; i++) { const run = runs[typeAt(r[i])]; out[i] = run.ids.at(r[i] - run.from); }
      return out;
    },
    strings(values) {
      if (!Array.isArray(values)) throw new Error('not a column of strings');
      for (const v of values) if (typeof v !== 'string') throw new Error('not a string');
      return values as string[];
    },
    numbers(values) {
      if (values instanceof Uint32Array) return values;
      if (values instanceof Float64Array) { for (const v of values) if (!Number.isFinite(v)) throw new Error('not a number'); return values; }
      if (!Array.isArray(values)) throw new Error('not a column of numbers');
      for (const v of values) if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error('not a number');
      return values as number[];
    },
    float64(values) {
      // An empty column has no line to say its kind: it reads as an empty array.
      if (Array.isArray(values) && values.length === 0) return new Float64Array(0);
      if (!(values instanceof Float64Array)) throw new Error('not a packed column of f64');
      return values;
    },
  };
}

/** Appends `fn` to the list of `type` in `hooks`. */
function push<F>(hooks: Map<string, F[]>, type: string, fn: F): void {
  const list = hooks.get(type);
  if (list === undefined) hooks.set(type, [fn]); else list.push(fn);
}
