/**
 * The compacted file of a log (docs/storage.md#compaction, docs/storage.md#snapshots): its live
 * records as put lines, then the snapshot block that describes them, written to a temp file beside
 * the log and fdatasync'd. A compaction run (compactionRun.ts) then copies the lines appended
 * meanwhile, renames the file over the log and fsyncs the folder: a crash at any point leaves the
 * old log or the new one, complete (a leftover temp file is removed at the next start).
 */
import { dirname, join } from 'node:path';
import { promises as fsp } from 'node:fs';
import { LINE_BYTES, encodeLine, writeCrc } from '../log/log.js';
import { endJson, headJson, packNumbers, type Columns } from './snapshot.js';
import type { SaveContext } from './states.js';
import type { ByteArena } from '../memory/arena.js';
import { HELD_OBJECT, type Captured } from '../memory/table.js';
import { packableWidth } from '../memory/ids.js';
import type { StoreFs } from '../log/fs.js';
import type { Retention } from './retention.js';
import { nextTurn } from '../../core/turns.js';

/** Bytes gathered before a write: large enough for few system calls, small enough to yield to requests often. */
const WRITE_BYTES = 4 << 20;

/** Compaction's synchronous work runs in slices of about this many ms; between two, requests are served. */
export const SLICE_MS = 4;

/**
 * The time slices of a long task on the event loop's thread: {@link due} is true once `ms` of
 * `now` have passed since the slice began (looked at every 32nd call, so a loop can ask at each
 * record); {@link yield} waits for the next main-thread turn (src/core/turns.ts) and begins the
 * next slice; {@link begin} begins one after another wait (a write). `yields` counts (tests).
 */
export class Slices {
  yields = 0;
  private calls = 0;
  private began: number;
  constructor(private readonly now: () => number = () => performance.now(), private readonly ms: number = SLICE_MS) {
    this.began = now(); }
  due(): boolean { return (++this.calls & 31) === 0 && this.now() - this.began >= this.ms; }
  async yield(): Promise<void> {
    this.yields++;
    await nextTurn();
    this.begin();
  }
  begin(): void { this.began = this.now(); }
}

/**
 * The longest snapshot block line: parsed at start, it stays a young-generation string (a longer
 * one would sit in V8's large-object space until a full collection; docs/storage.md#snapshots).
 */
export const BLOCK_LINE_BYTES = 64 * 1024;

/** A persisted state taken at the capture point, turned into columns once the records are written. */
export interface CapturedState { name: string; save: (ctx: SaveContext) => Columns }

/** One table as captured ({@link Captured}: records held as objects or as bytes, by position). */
export interface CapturedTable extends Captured {
  type: string;
  /** Called with the text record `i`, held as an object, was serialized to: a type held as bytes may keep it. */
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

/** An output file written through a buffer of whole lines: {@link beginLine}, bytes, {@link endLine}, {@link flush}. */
class Out {
  buf = Buffer.allocUnsafe(WRITE_BYTES * 2);
  pos = 0;
  /** File offset of `buf[0]`. */
  base = 0;
  lineStart = -1;
  constructor(private readonly fs: StoreFs, readonly fd: number) {}

  /** Makes room for `n` more bytes in the buffer (growing it for a long line). */
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
    if (this.buf.length > WRITE_BYTES * 2 && this.pos < WRITE_BYTES) this.buf =
      Buffer.from(this.buf.subarray(0, Math.max(this.pos, WRITE_BYTES * 2)));
  }
  byte(b: number): void {
    this.room(1);
    this.buf[this.pos++] = b;
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
 * (docs/storage.md#compaction, docs/storage.md#snapshots): a head line, the live records as put
 * lines of at most `lineBytes` (a longer record alone on its line; no frames: the file replaces
 * the log whole), the snapshot block — records lines, state lines, the end line — and the head
 * line rewritten with the block's offset. A record `retention` drops is left out (of every state
 * too: {@link SaveContext.ref} gives -1) and told to `capture.dropped`. Records held as bytes (refs
 * of `bytes`, pinned by the caller) are copied from their bytes, never serialized, and parsed only
 * when `retention` cannot tell from their text. Records held as objects
 * are serialized, the text offered to their table's `hold`. Yields between writes and once each
 * of `slices`' time slices is used up.
 * @returns the open file, its size and how many records it holds.
 * @throws fs errors (the temp file is removed first).
 */
export async function writeCompactedFile(
  path: string,
  capture: Capture,
  bytes: ByteArena | null,
  retention: Retention,
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

    // The put lines; the block's columns gathered on the way, typed (no million-number arrays).
    let total = 0;
    for (const t of capture.tables) total += t.ids.length;
    const runs: Array<{ type: string; from: number; to: number }> = [];
    const recId: string[] = [];
    const recGap = new Uint32Array(total);
    const recLen = new Uint32Array(total);
    /** Position in the block the log was loaded from → ref in this block (-1: not written). */
    let loadedEnd = 0;
    for (const { loaded } of capture.tables) for (const r of loaded) loadedEnd = Math.max(loadedEnd, r + 1);
    const ofLoaded = new Int32Array(loadedEnd).fill(-1);
    let lastEnd = 0;
    let puts = 0;
    let lineBytesSoFar = 0;
    let lineOps = 0;
    const closeLine = () => {
      out.byte(0x5d); // ]
      out.endLine();
      puts++;
      lineOps = 0;
    };
    for (let ti = 0; ti < capture.tables.length; ti++) {
      const table = capture.tables[ti];
      const { type, ids, held, objs, refs, loaded } = table;
      const run = { type, from: recId.length, to: recId.length };
      runs.push(run);
      const typeJson = JSON.stringify(type);
      const keeps = retention.has(type);
      const byText = keeps ? retention.retainedText(type) : null;
      for (let i = 0; i < ids.length; i++) {
        if (slices.due()) await slices.yield();
        const from = held[i];
        const ref = refs[i];
        const obj = from === HELD_OBJECT ? objs[i]! : undefined;
        if (keeps) {
          let rec = obj;
          let keep = obj === undefined && byText !== null ? byText(bytes!.text(ref)) : undefined;
          if (keep === undefined) keep = retention.retained(type, (rec ??= bytes!.parse(ref)));
          if (!keep) {
            capture.dropped?.(ti, i, rec ?? bytes!.parse(ref));
            continue;
          }
        }
        const id = ids[i];
        const head = `["p",${typeJson},${JSON.stringify(id)},`;
        const headBytes = Buffer.byteLength(head, 'utf8');
        const text = obj === undefined ? null : JSON.stringify(obj);
        const valueBytes = text !== null ? Buffer.byteLength(text, 'utf8') : bytes!.length(ref);
        const opBytes = headBytes + valueBytes + 1;
        if (lineOps > 0 && lineBytesSoFar + 1 + opBytes + 2 > lineBytes) closeLine();
        if (lineOps === 0) {
          if (out.pos >= WRITE_BYTES) { await out.flush(); slices.begin(); }
          out.beginLine();
          out.byte(0x5b); // [
          lineBytesSoFar = 10;
        } else {
          out.byte(0x2c); // ,
          lineBytesSoFar++;
        }
        out.room(opBytes);
        out.pos += out.buf.write(head, out.pos, 'utf8');
        const at = out.offset;
        if (text !== null) { out.pos += out.buf.write(text, out.pos, 'utf8'); table.hold?.(i, text); }
        else { bytes!.copyTo(ref, out.buf, out.pos); out.pos += valueBytes; }
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
    for (const { type, from, to } of runs) {
      if (to === from) continue;
      // Ids of one width are packed (src/store/memory/ids.ts): one string per line, not one per id.
      const width = packableWidth(recId, from, to);
      const prefix = `{"snapshot":"records","type":${JSON.stringify(type)},`;
      const line = (i: number, count: number) => {
        const at = from + i;
        const ids = recId.slice(at, at + count);
        const idJson = width > 0 ? `"idw":${width},"idp":"${ids.join('')}"` : `"ids":${JSON.stringify(ids)}`;
        return `${prefix}${idJson},"gaps":"${packNumbers(recGap.subarray(at, at + count))}",` +
          `"lens":"${packNumbers(recLen.subarray(at, at + count))}"}`;
      };
      for (const { json } of fitSlices(to - from, budget, line, 64, budget - prefix.length)) await blockLine(json);
    }

    // The states, column by column, with record ids as refs.
    const refsOf = new Map<string, Map<string, number>>();
    const ctx: SaveContext = {
      ref(type, id) {
        let refs = refsOf.get(type);
        if (refs === undefined) {
          refs = new Map();
          const run = runs.find((r) => r.type === type);
          if (run !== undefined) for (let i = run.from; i < run.to; i++) refs.set(recId[i], i);
          refsOf.set(type, refs);
        }
        return refs.get(id) ?? -1;
      },
      refOfLoaded: (r) => (r < ofLoaded.length ? ofLoaded[r] : -1),
    };
    // Each type's ids in order, for the lookups of a table loaded from the block: `table:<type>/1`, `perm`.
    const orders: CapturedState[] = [];
    for (const { type, from: lo, to } of runs) {
      if (to === lo) continue;
      const perm = Array.from({ length: to - lo }, (_, i) => i);
      perm.sort((a, b) => { const x = recId[lo + a]; const y = recId[lo + b]; return x < y ? -1 : x > y ? 1 : 0; });
      orders.push({ name: `table:${type}/1`, save: () => ({ perm: Uint32Array.from(perm) }) });
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
          const slice = (from: number, count: number) => JSON.stringify(values.slice(from, from + count));
          for (const { from, json } of fitSlices(values.length, room, slice)) {
            await blockLine(`${prefix}${from},"values":${json}}`);
          }
        } else {
          const kind = values instanceof Float64Array ? 'f64' : 'u32';
          const per = Math.max(1, Math.floor((room * 3) / 4 / values.BYTES_PER_ELEMENT));
          for (let from = 0; from < values.length; from += per) await blockLine(
            `${prefix}${from},"${kind}":"${packNumbers(values.subarray(from, from + per))}"}`);
        }
      }
      await slices.yield();
    }
    const typeCounts = runs.filter((r) => r.to > r.from).map((r): [string, number] => [r.type, r.to - r.from]);
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

/**
 * Splits `n` values into slices whose text `make(from, count)` is at most `maxBytes` UTF-8 bytes —
 * a single value longer than that alone in its slice — and yields each slice's text with its
 * start. Slices are sized from the bytes per value seen so far (`per` at first, against `room`
 * bytes), and shrunk when one comes out too long.
 */
function* fitSlices(n: number, maxBytes: number, make: (from: number, count: number) => string, per = 16,
  room = maxBytes): Generator<{ from: number; json: string }> {
  let from = 0;
  while (from < n) {
    let count = Math.max(1, Math.min(n - from, Math.floor(room / per)));
    for (;;) {
      const json = make(from, count);
      const bytes = Buffer.byteLength(json, 'utf8');
      if (bytes <= maxBytes || count === 1) {
        yield { from, json };
        per = Math.max(1, Math.ceil(bytes / count));
        from += count;
        break;
      }
      count = Math.max(1, Math.floor(count * (maxBytes / bytes) * 0.9));
    }
  }
}

/** Closes and removes an unfinished compacted file (best effort). */
export async function discard(fs: StoreFs, fd: number, tmp: string): Promise<void> {
  await fs.close(fd).catch(() => {});
  await fsp.unlink(tmp).catch(() => {});
}
