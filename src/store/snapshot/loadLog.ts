/**
 * Loading a log into memory (docs/storage.md#recovery, docs/storage.md#snapshots): from its
 * snapshot block when it has a sound one ({@link loadBlock}), then the lines after it; else by a
 * full replay of its lines ({@link loadLog}). Also the {@link RestoreContext} a persisted state's
 * restore gets.
 */
import { mkdirSync, readdirSync, unlinkSync, closeSync, fstatSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { checkCrc, checkNotCutInPuts, CorruptLogError, eachLine, openIfExists, replayLog,
  type ReplayResult } from '../log/recovery.js';
import { readBlock, type Block, type Column } from './snapshot.js';
import type { ByteArena } from '../memory/arena.js';
import type { Table } from '../memory/table.js';
import { STATELESS, type Persist, type RestoreContext } from './states.js';

/** How a log was loaded (the start-up log line, tests, the benchmark). */
export interface LoadInfo {
  /** Whether the snapshot block was used: records left unparsed, indexes restored. */
  snapshot: boolean;
  /** Why a snapshot block was not used (a warning): damaged, cut, counts off… */
  ignoredBlock?: string;
  /** Records loaded from the block, and how many of them are held as bytes (not replayed through listeners). */
  records: number;
  lazy: number;
  /** Record types whose listeners had no saved state: parsed and replayed at start. */
  replayedTypes: string[];
  /** Operations replayed from lines (after the block, or all of them in a full replay). */
  replayedOps: number;
  ms: number;
}

/** What {@link loadLog} is told of `DbOptions`: whether to use the snapshot block, and the clock (ms). */
export interface LoadOptions { readonly snapshot?: 'use' | 'ignore'; readonly now?: () => number }

/** What {@link loadBlock} reads of the log it loads, and how it installs what it loaded (`Db` gives it). */
export interface BlockTarget {
  /** Whether `DbOptions.listeners` are registered: then every type is parsed and replayed. */
  readonly listensToAll: boolean;
  /** Per record type, how each of its listeners' state is saved (undefined: it is not; see `Db.on`). */
  readonly persisted: ReadonlyMap<string, ReadonlyArray<Persist | typeof STATELESS | undefined>>;
  /** The log's arena (made when it has none), where the block's unparsed records go. */
  arena(): ByteArena;
  /** A new table for `type`, held as bytes when the type is (`Db.holdAsBytes`). */
  newTable(type: string): Table;
  /** Installs the block's tables; the log holds `live` records. */
  install(tables: ReadonlyMap<string, Table>, live: number): void;
  /** Sets a record of a replayed type, through its listeners (`Db.set`). */
  set(type: string, id: string, value: object): void;
  /** The records the log holds. */
  live(): number;
  /** The block covers the file's first `ops` operations (told before the lines after it are replayed). */
  covered(ops: number): void;
}

/** A block loaded: where the lines after it begin, and what {@link LoadInfo} tells. */
interface LoadedBlock { tail: { offset: number; line: number }; records: number; lazy: number; replayedTypes: string[] }

/**
 * Reads `path` (creating its folder when missing) into `into`, applying each replayed line's
 * operations with `apply` (docs/storage.md#recovery): removes the temp files of a compaction cut
 * short, loads the snapshot block when there is a sound one ({@link loadBlock}) and replays the
 * lines after it; else — no block, a damaged one (a warning in the {@link LoadInfo}), or
 * `snapshot: 'ignore'` — replays every line. The caller opens the log at `replay.size` and sets `ms`.
 * @throws CorruptLogError for a complete line that fails its check (an incomplete last line is a
 *   torn write, cut off), and for a compacted log cut short inside its put lines (records are missing).
 */
export function loadLog(path: string, opts: LoadOptions, into: BlockTarget, apply: (tx: unknown) => void): {
  replay: ReplayResult; info: LoadInfo } {
  mkdirSync(dirname(path), { recursive: true });
  for (const f of readdirSync(dirname(path))) {
    if (f.startsWith(`${basename(path)}.compact-`)) unlinkSync(join(dirname(path), f)); // a compaction cut short
  }
  let replayedOps = 0;
  const applyCounted = (tx: unknown) => { replayedOps += (tx as unknown[]).length; apply(tx); };
  const fast = opts.snapshot === 'ignore' ? null : loadBlock(path, into);
  const used = fast !== null && 'tail' in fast ? fast : null;
  if (used !== null) into.covered(used.records);
  else checkNotCutInPuts(path); // a compacted log cut inside its put lines would replay as a partial workspace
  const replay = replayLog(path, applyCounted, opts.now?.(), used?.tail);
  const info: LoadInfo = { snapshot: used !== null, records: used?.records ?? 0, lazy: used?.lazy ?? 0,
    replayedTypes: used?.replayedTypes ?? [], replayedOps, ms: 0 };
  if (fast !== null && 'reason' in fast && fast.reason !== null) info.ignoredBlock = fast.reason;
  return { replay, info };
}

/**
 * Loads the records and persisted states of `path`'s snapshot block into `into` (docs/storage.md#snapshots):
 * the block is read and checked, then the put lines ({@link walkPuts}) while the records' bytes are
 * copied out; only then is anything installed — tables of the records' refs, the saved states, and,
 * for a type whose listeners are not all persisted, its records parsed and given to them in file order.
 * @returns where the lines after the block begin and how many records it holds (every operation of the
 *   file so far), or why the block was not used (null: there is none) — then nothing is installed.
 * @throws CorruptLogError for a put line whose checksum fails (a full replay would stop there too).
 */
export function loadBlock(path: string, into: BlockTarget): LoadedBlock | { reason: string | null } {
  const fd = openIfExists(path, 'r');
  if (fd === null) return { reason: null };
  try {
    const block = readBlock(fd, fstatSync(fd).size);
    if ('reason' in block) return { reason: block.reason.startsWith('no snapshot block') ? null : block.reason };
    const n = block.gaps.length;
    const runs = block.runs;
    // A type stays unparsed when every listener's state and its ids' order restore; others are replayed.
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
        try { const p = ctx.numbers(order); perms.set(t, p instanceof Uint32Array ? p : Uint32Array.from(p)); } catch {
          return false; }
      }
      installs.push(...mine);
      return true;
    };
    const lazyType = block.types.map((type, t) => decide(type, t));
    const replayedTypes = block.types.filter((_, t) => !lazyType[t]);
    // Listened types without records in the block: their (empty) states are restored too.
    for (const type of into.persisted.keys()) if (!block.types.includes(type)) decide(type, -1);
    // Unparsed types' bytes go into the arena, a record's ref its position in the block (docs/storage.md#memory).
    let lazyCount = 0;
    for (let t = 0; t < runs.length; t++) if (lazyType[t]) lazyCount += runs[t].count;
    const arena = lazyCount > 0 ? into.arena() : null;
    arena?.reserve(block.lengths, lazyType.every((l) => l) ? () => true : (ref) => lazyType[typeAt(runs, ref)]);
    /** Empties the arena again, when the block is not used after all. */
    const unused = (reason: string | null) => { arena?.clear(); return { reason }; };
    const parsed: Array<[number, number, object]> = [];
    let bad: string | null = null;
    const walked = walkPuts(path, fd, block, (rec, t, buf, start, end) => {
      if (lazyType[t]) { arena!.fill(rec, buf, start, end); return; }
      try { parsed.push([rec, t, JSON.parse(buf.toString('utf8', start, end)) as object]); } catch {
        bad ??= `snapshot record ${rec} does not parse`; }
    });
    if (walked !== null || bad !== null) return unused(walked ?? bad);
    // Tables, checked before anything is installed.
    const tables = new Map<string, Table>();
    for (let t = 0; t < runs.length; t++) {
      const table = into.newTable(block.types[t]);
      tables.set(block.types[t], table);
      if (!lazyType[t]) continue;
      try {
        table.setBase(runs[t].ids, perms.get(t)!, runs[t].from, arena!);
      } catch (e) {
        return unused(`the snapshot block's records of ${block.types[t]}: ${(e as Error).message}`);
      }
    }
    // Install: tables first, so that restored states and replayed listeners see every record.
    into.install(tables, lazyCount);
    for (const install of installs) install();
    for (const [rec, t, value] of parsed) into.set(block.types[t], runs[t].ids.at(rec - runs[t].from), value);
    if (into.live() !== n) throw new Error(`${path}: the snapshot block names a record twice`);
    return { tail: { offset: block.tailOffset, line: block.puts + block.lines + 1 }, records: n, lazy: lazyCount,
      replayedTypes };
  } finally {
    closeSync(fd);
  }
}

/**
 * Walks the put lines of `block` (the log open as `fd`): checks every line's checksum, that it is
 * a line of puts, and that each record lies where the block says (`{` right after a `,`, `}`
 * right before a `]`). Calls `take` with each record in file order: its position in the block,
 * its type's index, and its value's bytes `buf[start, end)` (the buffer is reused).
 * @returns null when the put lines are as the block describes, else why not (a full replay follows).
 * @throws CorruptLogError for a put line whose checksum fails (docs/storage.md#corruption).
 */
function walkPuts(file: string, fd: number, block: Block,
  take: (rec: number, type: number, buf: Buffer, start: number, end: number) => void): string | null {
  const { gaps, lengths, runs } = block;
  const n = gaps.length;
  let rec = 0;
  let t = 0;
  let next = n > 0 ? gaps[0] : 0; // the file offset of record `rec`'s value
  let lines = 0;
  let problem: string | null = null;
  eachLine(fd, block.putsTo, (buf, start, stop, offset, lineNo) => {
    const bad = checkCrc(buf, start, stop);
    if (bad !== null) throw new CorruptLogError(file, lineNo, offset, bad);
    lines++;
    // `<crc> [["p",`: a line of puts.
    if (buf[start + 9] !== 0x5b || buf[start + 10] !== 0x5b || buf[start + 11] !== 0x22 || buf[start + 12] !== 0x70 ||
      buf[start + 13] !== 0x22) {
      problem = `line ${lineNo} (byte offset ${offset}) before the snapshot block is not a line of puts`;
      return false;
    }
    const lineEnd = offset + (stop - start);
    while (rec < n && next < lineEnd) {
      const vs = next - offset + start;
      const ve = vs + lengths[rec];
      if (next < offset + 14 || ve > stop - 1 || buf[vs - 1] !== 0x2c || buf[vs] !== 0x7b || buf[ve - 1] !== 0x7d ||
        buf[ve] !== 0x5d) {
        problem = `snapshot record ${rec} (byte offset ${next}) is not where the block places it`;
        return false;
      }
      while (rec >= runs[t].from + runs[t].count) t++;
      take(rec, t, buf, vs, ve);
      next += lengths[rec] + (rec + 1 < n ? gaps[rec + 1] : 0);
      rec++;
    }
    return true;
  }, block.putsFrom, 2);
  if (problem !== null) return problem;
  if (lines !== block.puts) return `the snapshot block counts ${block.puts} put lines, the log has ${lines} before it`;
  if (rec !== n) return `${n - rec} snapshot records lie past the put lines`;
  return null;
}

/** The index of the run holding record `ref` of a block. */
function typeAt(runs: Block['runs'], ref: number): number {
  let lo = 0;
  let hi = runs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (runs[mid].from <= ref) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/** The {@link RestoreContext} of `block`. */
function restoreContext(block: Block): RestoreContext {
  const n = block.gaps.length;
  const { runs } = block;
  const typeIndex = new Map(block.types.map((t, i) => [t, i]));
  const runOf = (type: string) => {
    const t = typeIndex.get(type);
    if (t === undefined) throw new Error(`no record of ${type} in the block`);
    return runs[t];
  };
  const refs = (col: Column | undefined): Uint32Array => {
    if (col instanceof Uint32Array) { for (let i = 0; i < col.length; i++) if (col[i] >= n) throw new Error(
      `not a ref: ${col[i]}`); return col; }
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
      for (let i = 0; i < r.length; i++) { const run = runs[typeAt(runs, r[i])]; out[i] = run.ids.at(r[i] - run.from); }
      return out;
    },
    strings(values) {
      if (!Array.isArray(values)) throw new Error('not a column of strings');
      for (const v of values) if (typeof v !== 'string') throw new Error('not a string');
      return values as string[];
    },
    numbers(values) {
      if (values instanceof Uint32Array) return values;
      if (values instanceof Float64Array) { for (const v of values) if (!Number.isFinite(v)) throw new Error(
        'not a number'); return values; }
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
