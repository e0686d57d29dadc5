/**
 * Loading a log into memory (docs/storage.md#recovery, docs/storage.md#snapshots): from its
 * snapshot block when it has a sound one ({@link loadBlock}: the block is read and checked, the
 * put lines walked while the records' bytes are copied out, and only then is anything installed
 * into the log, {@link BlockTarget}: the `Db`'s tables and counts), then the lines after it;
 * else by a full replay of its lines ({@link loadLog}). Also the {@link RestoreContext} a
 * persisted state's restore gets.
 */
import { mkdirSync, readdirSync, unlinkSync, openSync, closeSync, fstatSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { replayLog, type ReplayResult } from './recovery.js';
import { readBlock, walkPuts, type Block, type Column } from './snapshot.js';
import { LazyRecords } from './lazy.js';
import type { ByteArena } from './arena.js';
import type { Table } from './table.js';
import { STATELESS, type DbOptions, type LoadInfo, type Persist, type RestoreContext } from './dbTypes.js';

/** What {@link loadBlock} reads of the log it loads, and how it installs what it loaded (`Db` gives it). */
export interface BlockTarget {
  /** Whether listeners of every change of every type are registered (`DbOptions.listeners`): then every type is parsed and replayed. */
  readonly listensToAll: boolean;
  /** Per record type, how each of its listeners' state is saved (undefined: it is not; see `Db.on`). */
  readonly persisted: ReadonlyMap<string, ReadonlyArray<Persist | typeof STATELESS | undefined>>;
  /** The arena of records held as bytes, and the types held so (`Db.holdAsBytes`). */
  readonly arena: ByteArena | null;
  readonly coldTypes: ReadonlyMap<string, unknown>;
  /** A new table for `type`, held as bytes when the type is. */
  newTable(type: string): Table;
  /** Installs the block's tables and the bytes of its unparsed records: the log then holds `live` records. */
  install(tables: ReadonlyMap<string, Table>, lazy: LazyRecords, live: number): void;
  /** Sets a record of a replayed type, through its listeners (`Db.set`). */
  set(type: string, id: string, value: object): void;
  /** The records the log holds. */
  live(): number;
  /** The block covers the file's first `ops` operations (its records): told before the lines after it are replayed. */
  covered(ops: number): void;
}

/** A block loaded: where the lines after it begin, and what the start-up log line tells ({@link LoadInfo}). */
export interface LoadedBlock { tail: { offset: number; line: number }; records: number; lazy: number; replayedTypes: string[] }

/**
 * Reads `path` (creating its folder when missing) into `into`, applying each replayed line's
 * operations with `apply` (docs/storage.md#recovery): removes the temp files of a compaction
 * cut short, loads the snapshot block when there is a sound one ({@link loadBlock}) and replays
 * the lines after it; else — no block, one found damaged (a warning in the {@link LoadInfo}), or
 * `snapshot: 'ignore'` — replays every line. The caller opens the log for appending at
 * `replay.size` and sets the info's `ms`.
 * @throws CorruptLogError for a complete line that fails its check (only an incomplete
 *   last line is a torn write, cut off by the replay).
 */
export function loadLog(path: string, opts: Pick<DbOptions, 'snapshot' | 'now'>, into: BlockTarget, apply: (tx: unknown) => void): { replay: ReplayResult; info: LoadInfo } {
  mkdirSync(dirname(path), { recursive: true });
  for (const f of readdirSync(dirname(path))) {
    if (f.startsWith(`${basename(path)}.compact-`)) unlinkSync(join(dirname(path), f)); // a compaction cut short
  }
  let replayedOps = 0;
  const applyCounted = (tx: unknown) => { replayedOps += (tx as unknown[]).length; apply(tx); };
  const fast = opts.snapshot === 'ignore' ? null : loadBlock(path, into);
  let replay: ReplayResult;
  let info: LoadInfo;
  if (fast !== null && 'tail' in fast) {
    into.covered(fast.records);
    replay = replayLog(path, applyCounted, opts.now?.(), fast.tail);
    info = { snapshot: true, records: fast.records, lazy: fast.lazy, replayedTypes: fast.replayedTypes, replayedOps, ms: 0 };
  } else {
    replay = replayLog(path, applyCounted, opts.now?.());
    info = { snapshot: false, records: 0, lazy: 0, replayedTypes: [], replayedOps, ms: 0 };
    if (fast !== null && fast.reason !== null) info.ignoredBlock = fast.reason;
  }
  info.replayedOps = replayedOps;
  return { replay, info };
}

/**
 * Loads the records and persisted states of `path`'s snapshot block into `into` (docs/storage.md#snapshots):
 * the block is read and checked, then the put lines (their checksums, and that each record
 * lies where the block says) while the records' bytes are copied out; only then is anything
 * installed — tables of lazy refs, the saved states, and, for a type whose listeners are not
 * all persisted, its records parsed and given to them in file order.
 * @returns where the lines after the block begin (to be replayed) and how many records it holds
 *   (the file's operations so far, every one covered by the block), or why the block was not
 *   used (`reason` null: there is none) — nothing is installed then, and a full replay follows.
 * @throws CorruptLogError for a put line whose checksum fails (a full replay would stop there too).
 */
export function loadBlock(path: string, into: BlockTarget): LoadedBlock | { reason: string | null } {
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
      if (into.listensToAll) return false;
      const mine: Array<() => void> = [];
      for (const p of into.persisted.get(type) ?? []) {
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
    for (const type of into.persisted.keys()) if (!block.types.includes(type)) decide(type, -1);
    // The records: bytes copied out for unparsed types, parsed now for the others.
    const typeAt = (ref: number) => { let t = 0; while (ref >= runs[t].from + runs[t].count) t++; return t; };
    let lazyCount = 0;
    for (let t = 0; t < runs.length; t++) if (lazyType[t]) lazyCount += runs[t].count;
    // The unparsed records of a type held as bytes go to the arena (docs/storage.md#memory),
    // where an overwrite, a delete or a drop frees them; the others to the block's buffers.
    const arena = into.arena;
    const coldRefs = runs.map((r, t) => (lazyType[t] && into.coldTypes.has(block.types[t]) ? new Uint32Array(r.count) : null));
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
      const table = into.newTable(block.types[t]);
      tables.set(block.types[t], table);
      if (!lazyType[t]) continue;
      try {
        table.setBase(runs[t].ids, perms.get(t)!, runs[t].from, lazy, coldRefs[t] ?? undefined);
      } catch (e) {
        return unused(`the snapshot block's records of ${block.types[t]}: ${(e as Error).message}`);
      }
    }
    // Install: tables first, so that restored states and replayed listeners see every record.
    into.install(tables, lazy, lazyCount);
    for (const install of installs) install();
    for (const [rec, t, value] of parsed) into.set(block.types[t], runs[t].ids.at(rec - runs[t].from), value);
    if (into.live() !== n) throw new Error(`${path}: the snapshot block names a record twice`);
    return { tail: { offset: block.tailOffset, line: block.puts + block.lines + 1 }, records: n, lazy: lazyCount, replayedTypes };
  } finally {
    closeSync(fd);
  }
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
