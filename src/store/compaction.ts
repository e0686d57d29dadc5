/**
 * Writing a compacted log (docs/storage.md#compaction, docs/storage.md#snapshots): the live
 * records as put lines, then the snapshot block that describes them — where each record's
 * JSON lies, and the saved state of every persisted index — to a temp file beside the log,
 * fdatasync'd. src/store/compactor.ts then copies the lines appended to the log meanwhile, syncs
 * again, renames the file over the log and fsyncs the folder. A crash at any point leaves
 * either the old log or the new one, complete; a leftover temp file is removed at the next
 * start.
 */
import { dirname, join } from 'node:path';
import { promises as fsp } from 'node:fs';
import { LINE_BYTES, encodeLine } from './log.js';
import { endJson, headJson, jsonSlices, packNumbers, writeCrc, type Columns } from './snapshot.js';
import type { LazyRecords } from './lazy.js';
import type { ByteArena } from './arena.js';
import { HELD_BLOCK, HELD_OBJECT, type Captured } from './table.js';
import { packableWidth } from './ids.js';
import type { StoreFs } from './fs.js';
import { nextTurn } from '../core/turns.js';

/** Bytes gathered before a write: large enough for few system calls, small enough to yield to requests often. */
const WRITE_BYTES = 4 << 20;

/**
 * Compaction's synchronous work on the API thread runs in slices of about this many ms of the
 * clock; between two, the event loop serves requests (docs/storage.md#compaction).
 */
export const SLICE_MS = 4;

/**
 * The time slices of a long task on the event loop's thread: {@link due} is true once
 * `ms` of `now` (ms) have passed since the slice began — looked at on every 32nd call, so a
 * loop over records can ask at each one — and {@link yield} waits for the next main-thread turn
 * (src/core/turns.ts: shared first come first served with ingestion's steps and other
 * compactions, the event loop polling for I/O in between) and begins the next slice; {@link begin} begins one after another wait (a
 * write). `yields` counts the yields (tests).
 */
export class Slices {
  yields = 0;
  private calls = 0;
  private began: number;
  constructor(private readonly now: () => number = () => performance.now(), private readonly ms: number = SLICE_MS) { this.began = now(); }
  due(): boolean { return (++this.calls & 31) === 0 && this.now() - this.began >= this.ms; }
  async yield(): Promise<void> {
    this.yields++;
    await nextTurn();
    this.begin();
  }
  begin(): void { this.began = this.now(); }
}

/**
 * The longest snapshot block line (within the log's bound): its JSON text, parsed at start, is
 * a short-lived string of the young generation — a longer one goes to V8's large-object space,
 * where it stays until a full collection (docs/storage.md#snapshots).
 */
export const BLOCK_LINE_BYTES = 64 * 1024;

/** Maps a record to its position in the snapshot block being written (its ref), -1 when it is not in it. */
export interface SaveContext {
  /** The record (type, id). */
  ref(type: string, id: string): number;
  /** The record whose ref in the block the log was loaded from is `loaded` (a packed index's entry: no id to look up). */
  refOfLoaded(loaded: number): number;
}

/** A persisted state taken at the capture point, turned into columns once the records are written. */
export interface CapturedState { name: string; save: (ctx: SaveContext) => Columns }

/** One table as captured ({@link Captured}: records held as objects or as bytes, by position). */
export interface CapturedTable extends Captured {
  type: string;
  /**
   * Called with the text a record held as an object was just serialized to for the new file
   * (position `i`): a type held as bytes keeps it, when the record is on disk and unchanged
   * (docs/storage.md#memory).
   */
  hold?: (i: number, text: string) => void;
}

/** What compaction writes: every table as it was at the capture point, and the persisted states taken then. */
export interface Capture {
  tables: CapturedTable[];
  states: CapturedState[];
  /** Called with each record a retention rule left out (table `t` of {@link tables}, position `i`), parsed. */
  dropped?: (t: number, i: number, rec: object) => void;
}

/** Where the written file is: open (`fd`, for appending at `size`) under its temp name. */
export interface Written { fd: number; size: number; tmp: string; records: number }

/**
 * An output file written through a buffer of whole lines: {@link beginLine}, the line's bytes,
 * {@link endLine} (which checksums it), and {@link flush} when enough has gathered.
 */
class Out {
  buf = Buffer.allocUnsafe(WRITE_BYTES * 2);
  pos = 0;
  /** File offset of `buf[0]`. */
  base = 0;
  lineStart = -1;
  constructor(private readonly fs: StoreFs, readonly fd: number) {}

  /** Makes room for `n` more bytes in the buffer (growing it: a line longer than it, a record of megabytes). */
  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }
  /** Writes the whole lines gathered so far; an open line moves to the buffer's start. */
  async flush(): Promise<void> {
    const upTo = this.lineStart >= 0 ? this.lineStart : this.pos;
    if (upTo === 0) return;
    await this.fs.write(this.fd, this.buf.subarray(0, upTo), this.base);
    this.base += upTo;
    if (this.pos > upTo) this.buf.copy(this.buf, 0, upTo, this.pos);
    this.pos -= upTo;
    if (this.lineStart >= 0) this.lineStart = 0;
    if (this.buf.length > WRITE_BYTES * 2 && this.pos < WRITE_BYTES) this.buf = Buffer.from(this.buf.subarray(0, Math.max(this.pos, WRITE_BYTES * 2)));
  }
  beginLine(): void {
    this.room(9);
    this.lineStart = this.pos;
    this.pos += 9;
  }
  endLine(): void {
    this.room(1);
    const start = this.lineStart;
    this.buf[start + 8] = 0x20;
    writeCrc(this.buf, start, start + 9, this.pos);
    this.buf[this.pos++] = 0x0a;
    this.lineStart = -1;
  }
  /** Appends a whole line made elsewhere. */
  line(bytes: Buffer): void {
    this.room(bytes.length);
    bytes.copy(this.buf, this.pos);
    this.pos += bytes.length;
  }
  get offset(): number { return this.base + this.pos; }
}

/**
 * Writes the compacted log of `capture` to `<dir of path>/<tmpName>` and fdatasyncs it
 * (docs/storage.md#compaction, docs/storage.md#snapshots): a head line, the live records as
 * put lines of at most `lineBytes` (a record longer than that alone on its line; each line a
 * transaction of its own: the file replaces the log whole, by a rename, so it needs no frame),
 * then the snapshot block — records lines, state lines, the end line — and the head line
 * rewritten with the block's offset. A record whose type's `retained` says no is left out (and
 * out of every state: {@link SaveContext.ref} gives -1 for it), and told to `capture.dropped`.
 * Records held as bytes — refs of the loaded block's `lazy` records, or of the `cold` arena
 * (docs/storage.md#memory) — are copied from their bytes, never serialized: for a type with
 * retention rules (`hasRetention`), the type's `retainedText` (null: it has none) answers from
 * the text, and a record is parsed only when it does not tell (or when it is dropped, for
 * `capture.dropped`). Records held as objects are serialized, and the text offered to their
 * table's `hold`. The refs read must stay valid meanwhile (the caller pins `cold`).
 * Yields to the event loop between writes and, within the records and the block's lines, once
 * each of `slices`' time slices ({@link SLICE_MS}) is used up; a persisted state's save and a
 * type's sort of its ids run whole.
 * @returns the open file, its size and how many records it holds.
 * @throws fs errors (the temp file is removed first).
 */
export async function writeCompacted(
  path: string,
  capture: Capture,
  lazy: LazyRecords | null,
  cold: ByteArena | null,
  retained: (type: string, rec: object) => boolean,
  hasRetention: (type: string) => boolean,
  retainedText: (type: string) => ((json: string) => boolean | undefined) | null,
  fs: StoreFs,
  tmpName: string,
  lineBytes: number = LINE_BYTES,
  slices: Slices = new Slices(),
): Promise<Written> {
  const tmp = join(dirname(path), tmpName);
  const fd = await fs.open(tmp);
  try {
    await fs.ftruncate(fd, 0);
    const out = new Out(fs, fd);
    out.line(encodeLine(headJson(0, 0)));

    // The put lines; the block's columns gathered on the way.
    // Typed where they can be: a compaction of a million records makes no million-number arrays.
    let total = 0;
    for (const t of capture.tables) total += t.ids.length;
    const runs: Array<{ t: number; from: number; to: number }> = [];
    const recId: string[] = [];
    const recGap = new Uint32Array(total);
    const recLen = new Uint32Array(total);
    /** Loaded ref → ref in this block (-1: not written). */
    const ofLoaded = new Int32Array(lazy?.size ?? 0).fill(-1);
    const typeNames: string[] = [];
    let lastEnd = 0;
    let puts = 0;
    let lineBytesSoFar = 0;
    let lineOps = 0;
    const closeLine = () => {
      out.room(1);
      out.buf[out.pos++] = 0x5d; // ]
      out.endLine();
      puts++;
      lineOps = 0;
    };
    for (let ti = 0; ti < capture.tables.length; ti++) {
      const table = capture.tables[ti];
      const { type, ids, held, objs, refs, loaded } = table;
      const t = typeNames.length;
      typeNames.push(type);
      const run = { t, from: recId.length, to: recId.length };
      runs.push(run);
      const typeJson = JSON.stringify(type);
      const keeps = hasRetention(type);
      const byText = keeps ? retainedText(type) : null;
      for (let i = 0; i < ids.length; i++) {
        if (slices.due()) await slices.yield();
        const from = held[i];
        const ref = refs[i];
        const obj = from === HELD_OBJECT ? objs[i]! : undefined;
        if (keeps) {
          let rec = obj;
          let keep = obj === undefined && byText !== null ? byText(from === HELD_BLOCK ? lazy!.text(ref) : cold!.text(ref)) : undefined;
          if (keep === undefined) keep = retained(type, (rec ??= from === HELD_BLOCK ? lazy!.peek(ref) : cold!.parse(ref)));
          if (!keep) {
            capture.dropped?.(ti, i, rec ?? (from === HELD_BLOCK ? lazy!.peek(ref) : cold!.parse(ref)));
            continue;
          }
        }
        const id = ids[i];
        const head = `["p",${typeJson},${JSON.stringify(id)},`;
        const headBytes = Buffer.byteLength(head, 'utf8');
        const text = obj === undefined ? null : JSON.stringify(obj);
        const valueBytes = text !== null ? Buffer.byteLength(text, 'utf8') : from === HELD_BLOCK ? lazy!.length(ref) : cold!.length(ref);
        const opBytes = headBytes + valueBytes + 1;
        // `<crc> [` + ops joined by `,` + `]\n`
        if (lineOps > 0 && lineBytesSoFar + 1 + opBytes + 2 > lineBytes) closeLine();
        if (lineOps === 0) {
          if (out.pos >= WRITE_BYTES) { await out.flush(); slices.begin(); }
          out.beginLine();
          out.room(1);
          out.buf[out.pos++] = 0x5b; // [
          lineBytesSoFar = 10;
        } else {
          out.room(1);
          out.buf[out.pos++] = 0x2c; // ,
          lineBytesSoFar++;
        }
        out.room(opBytes);
        out.pos += out.buf.write(head, out.pos, 'utf8');
        const at = out.offset;
        if (text !== null) { out.pos += out.buf.write(text, out.pos, 'utf8'); table.hold?.(i, text); }
        else if (from === HELD_BLOCK) { out.buf.set(lazy!.bytes(ref), out.pos); out.pos += valueBytes; }
        else { cold!.copyTo(ref, out.buf, out.pos); out.pos += valueBytes; }
        out.buf[out.pos++] = 0x5d; // ]
        lineBytesSoFar += opBytes;
        lineOps++;
        if (at - lastEnd > 0xffffffff) throw new Error('a record id too long for the snapshot block');
        recGap[recId.length] = at - lastEnd;
        recLen[recId.length] = valueBytes;
        if (loaded[i] >= 0) ofLoaded[loaded[i]] = recId.length;
        recId.push(id);
        run.to = recId.length;
        lastEnd = at + valueBytes;
      }
    }
    if (lineOps > 0) closeLine();
    await out.flush();
    const blockAt = out.offset;

    // The block: records lines, type by type, each line within the bound.
    let blockLines = 0;
    const blockLine = async (json: string) => {
      out.line(encodeLine(json));
      blockLines++;
      if (out.pos >= WRITE_BYTES) { await out.flush(); slices.begin(); } else if (slices.due()) await slices.yield();
    };
    const budget = Math.max(64, Math.min(lineBytes, BLOCK_LINE_BYTES) - 10);
    for (const { t, from, to } of runs) {
      if (to === from) continue;
      // Ids of one width are packed (src/store/ids.ts): one string per line, not one per id.
      const width = packableWidth(recId, from, to);
      const prefix = `{"snapshot":"records","type":${JSON.stringify(typeNames[t])},`;
      let at = from;
      let per = 64;
      while (at < to) {
        let count = Math.max(1, Math.min(to - at, Math.floor((budget - prefix.length) / per)));
        for (;;) {
          const ids = recId.slice(at, at + count);
          const idJson = width > 0 ? `"idw":${width},"idp":"${ids.join('')}"` : `"ids":${JSON.stringify(ids)}`;
          const json = `${prefix}${idJson},"gaps":"${packNumbers(recGap.subarray(at, at + count))}","lens":"${packNumbers(recLen.subarray(at, at + count))}"}`;
          const bytes = Buffer.byteLength(json, 'utf8');
          if (bytes <= budget || count === 1) {
            await blockLine(json);
            per = Math.max(1, Math.ceil(bytes / count));
            at += count;
            break;
          }
          count = Math.max(1, Math.floor(count * (budget / bytes) * 0.9));
        }
      }
    }

    // The states, column by column, with record ids as refs.
    const refsOf = new Map<string, Map<string, number>>();
    const ctx: SaveContext = {
      ref(type, id) {
        let refs = refsOf.get(type);
        if (refs === undefined) {
          refs = new Map();
          const run = runs.find((r) => typeNames[r.t] === type);
          if (run !== undefined) for (let i = run.from; i < run.to; i++) refs.set(recId[i], i);
          refsOf.set(type, refs);
        }
        return refs.get(id) ?? -1;
      },
      refOfLoaded: (r) => (r < ofLoaded.length ? ofLoaded[r] : -1),
    };
    // Each type's ids in order (positions within the type's records), for the lookups of a
    // table loaded from the block (src/store/table.ts): `table:<type>/1`, column `perm`.
    const orders: CapturedState[] = [];
    for (const { t, from: lo, to } of runs) {
      if (to === lo) continue;
      const perm = Array.from({ length: to - lo }, (_, i) => i);
      perm.sort((a, b) => { const x = recId[lo + a]; const y = recId[lo + b]; return x < y ? -1 : x > y ? 1 : 0; });
      orders.push({ name: `table:${typeNames[t]}/1`, save: () => ({ perm: Uint32Array.from(perm) }) });
      await slices.yield();
    }
    const declared: Record<string, Record<string, number>> = {};
    for (const { name, save } of [...orders, ...capture.states]) {
      const cols = save(ctx);
      declared[name] = {};
      for (const [column, values] of Object.entries(cols)) {
        declared[name][column] = values.length;
        if (values.length === 0) continue;
        const prefix = `{"snapshot":"state","name":${JSON.stringify(name)},"column":${JSON.stringify(column)},"from":`;
        const room = Math.max(16, budget - prefix.length - 40);
        if (Array.isArray(values)) {
          for (const { from, json } of jsonSlices(values, room)) await blockLine(`${prefix}${from},"values":${json}}`);
        } else {
          const kind = values instanceof Float64Array ? 'f64' : 'u32';
          const per = Math.max(1, Math.floor((room * 3) / 4 / values.BYTES_PER_ELEMENT));
          for (let from = 0; from < values.length; from += per) await blockLine(`${prefix}${from},"${kind}":"${packNumbers(values.subarray(from, from + per))}"}`);
        }
      }
      await slices.yield();
    }
    const typeCounts: Array<[string, number]> = runs.filter((r) => r.to > r.from).map((r) => [typeNames[r.t], r.to - r.from]);
    const endAt = out.offset;
    await blockLine(endJson(puts, blockLines, recId.length, typeCounts, declared));
    await out.flush();
    // The head, rewritten in place (same width) with the block's offset.
    await fs.write(fd, encodeLine(headJson(blockAt, endAt)), 0);
    await fs.fdatasync(fd);
    return { fd, size: out.offset, tmp, records: recId.length };
  } catch (err) {
    await discard(fs, fd, tmp);
    throw err;
  }
}

/** Closes and removes an unfinished compacted file (best effort). */
export async function discard(fs: StoreFs, fd: number, tmp: string): Promise<void> {
  await fs.close(fd).catch(() => {});
  await fsp.unlink(tmp).catch(() => {});
}
