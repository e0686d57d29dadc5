/**
 * The snapshot block of a compacted log (docs/storage.md#snapshots): what lets a start load a
 * log without parsing its records. A compacted log is
 *
 * ```
 * <crc> {"snapshot":"head","v":1,"block":B          }     ← where the block begins (B)
 * <crc> [["p",type,id,record],…]                           ← put lines: the live records
 * …
 * <crc> {"snapshot":"records","type":T,"ids":[…],"gaps":[…],"lens":[…]}    ← at byte B
 * …
 * <crc> {"snapshot":"state","name":N,"column":C,"from":i,"values":[…]}
 * …
 * <crc> {"snapshot":"end","v":1,"puts":P,"lines":L,"records":R,"states":{N:{C:length}}}
 * later transactions…
 * ```
 *
 * The put lines alone give the state (a full replay reads them and passes over the snapshot
 * lines). The block says, for each record of the put lines in file order, its type, id and
 * where its JSON value lies (`gaps[i]`: bytes from the end of the previous value — the start of
 * the file for the first — to this one's first byte; `lens[i]`: its length); and the saved
 * state of every persisted index or listener, as named columns of JSON values (record ids as
 * *refs*: a record's position in the block, 0…R-1). Every line is at most the log's line bound
 * (a single value longer than that is alone on its line) and carries its checksum.
 *
 * This module reads a block ({@link readBlock}) and walks the put lines it describes
 * ({@link walkPuts}); src/store/compaction.ts writes them, src/store/db.ts decides what to do
 * with them.
 */
import { crc32 } from 'node:zlib';
import { checkCrc, CorruptLogError, eachLine, isSnapshotLine } from './recovery.js';

/** The format version a block declares in its head and end lines; a block of another version is not used. */
export const SNAPSHOT_VERSION = 1;

/** Named columns of JSON values: one persisted state as the block holds it. */
export type Columns = Record<string, unknown[]>;

/** What {@link readBlock} found: the block, checked, ready to be used. */
export interface Block {
  /** Byte offset of the head line's end: the put lines begin here. */
  putsFrom: number;
  /** Byte offset of the first block line: the put lines end here. */
  putsTo: number;
  /** Put lines the end line announces. */
  puts: number;
  /** Records, in file order: type (index into `types`), id, value offset in the file, value length. */
  types: string[];
  typeOf: Uint16Array;
  ids: string[];
  offsets: Float64Array;
  lengths: Uint32Array;
  /** Persisted states by name. */
  states: Map<string, Columns>;
  /** Lines of the block, head and end lines included. */
  lines: number;
  /** Where the block's end line ends: later transactions begin here. */
  tailOffset: number;
}

/** The head line's JSON text, fixed width whatever `block` is (so that it can be rewritten in place). */
export function headJson(block: number): string {
  return `{"snapshot":"head","v":${SNAPSHOT_VERSION},"block":${String(block).padEnd(20, ' ')}}`;
}

/** The JSON text of the block's end line. */
export function endJson(puts: number, lines: number, records: number, states: Record<string, Record<string, number>>): string {
  return JSON.stringify({ snapshot: 'end', v: SNAPSHOT_VERSION, puts, lines, records, states });
}

const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * Reads and checks the snapshot block of the log open as `fd` (`size` bytes): the head line,
 * then every block line from where the head says, up to the end line. Nothing about the put
 * lines is checked here but their count's place ({@link walkPuts} does the rest).
 * @returns the block, or why it cannot be used — no head line, a line whose checksum fails, a
 *   file cut inside the block, counts that do not match, another format version… — for a
 *   warning and a full replay. Never throws for what the file holds.
 */
export function readBlock(fd: number, size: number): Block | { reason: string } {
  let head: { block: number; end: number } | { reason: string } | null = null;
  eachLine(fd, Math.min(size, 4096), (buf, start, end) => {
    if (checkCrc(buf, start, end) !== null) { head = { reason: 'the snapshot head line is damaged' }; return false; }
    let v: unknown;
    try { v = JSON.parse(buf.toString('utf8', start + 9, end)); } catch { v = null; }
    if (!isSnapshotLine(v) || v.snapshot !== 'head') { head = { reason: 'no snapshot block (the log does not begin with a snapshot head line)' }; return false; }
    if (v.v !== SNAPSHOT_VERSION) { head = { reason: `the snapshot block has format version ${String(v.v)}, not ${SNAPSHOT_VERSION}` }; return false; }
    if (!isCount(v.block)) { head = { reason: 'the snapshot head line has no block offset' }; return false; }
    head = { block: v.block, end: end + 1 };
    return false;
  });
  const h = head as { block: number; end: number } | { reason: string } | null;
  if (h === null) return { reason: 'no snapshot block (the log does not begin with a snapshot head line)' };
  if ('reason' in h) return h;
  if (h.block < h.end || h.block > size) return { reason: `the snapshot block should begin at byte ${h.block}, past the end of the file (${size} bytes) or before its head line ends` };

  const types: string[] = [];
  const typeIndex = new Map<string, number>();
  const recTypes: number[] = [];
  const idParts: string[][] = [];
  const gapParts: number[][] = [];
  const lenParts: number[][] = [];
  const stateParts = new Map<string, Map<string, unknown[][]>>();
  let blockLines = 0;
  let problem: string | null = null;
  let end: Record<string, unknown> | null = null;
  let tailOffset = 0;
  eachLine(fd, size, (buf, start, stop, offset) => {
    if (checkCrc(buf, start, stop) !== null) { problem = `snapshot line at byte offset ${offset} is damaged (checksum mismatch)`; return false; }
    let v: unknown;
    try { v = JSON.parse(buf.toString('utf8', start + 9, stop)); } catch { problem = `snapshot line at byte offset ${offset} does not parse`; return false; }
    if (!isSnapshotLine(v)) { problem = `the snapshot block ends at byte offset ${offset} without its end line`; return false; }
    if (v.snapshot === 'end') { end = v as Record<string, unknown>; tailOffset = offset + (stop - start) + 1; return false; }
    blockLines++;
    if (v.snapshot === 'records') {
      const { type, ids, gaps, lens } = v as Record<string, unknown>;
      if (typeof type !== 'string' || !Array.isArray(ids) || !Array.isArray(gaps) || !Array.isArray(lens) || ids.length !== gaps.length || ids.length !== lens.length) {
        problem = `the snapshot records line at byte offset ${offset} is malformed`; return false;
      }
      let t = typeIndex.get(type);
      if (t === undefined) { t = types.length; types.push(type); typeIndex.set(type, t); }
      for (let i = 0; i < ids.length; i++) recTypes.push(t);
      idParts.push(ids as string[]);
      gapParts.push(gaps as number[]);
      lenParts.push(lens as number[]);
      return true;
    }
    if (v.snapshot === 'state') {
      const { name, column, from, values } = v as Record<string, unknown>;
      if (typeof name !== 'string' || typeof column !== 'string' || !isCount(from) || !Array.isArray(values)) { problem = `the snapshot state line at byte offset ${offset} is malformed`; return false; }
      let cols = stateParts.get(name);
      if (cols === undefined) stateParts.set(name, (cols = new Map()));
      let parts = cols.get(column);
      if (parts === undefined) cols.set(column, (parts = []));
      const have = parts.reduce((n, p) => n + p.length, 0);
      if (from !== have) { problem = `the snapshot state line at byte offset ${offset} continues ${name}.${column} at ${from}, not ${have}`; return false; }
      parts.push(values);
      return true;
    }
    problem = `the snapshot line at byte offset ${offset} is of an unknown kind (${JSON.stringify(v.snapshot)})`;
    return false;
  }, h.block, 1);
  if (problem !== null) return { reason: problem };
  const e = end as Record<string, unknown> | null;
  if (e === null) return { reason: 'the snapshot block has no end line (the file ends inside it)' };
  if (e.v !== SNAPSHOT_VERSION) return { reason: `the snapshot end line has format version ${String(e.v)}` };
  const records = recTypes.length;
  if (!isCount(e.puts) || e.lines !== blockLines || e.records !== records) {
    return { reason: `the snapshot end line's counts (${String(e.lines)} lines, ${String(e.records)} records) do not match the block (${blockLines} lines, ${records} records)` };
  }
  const declared = e.states;
  if (typeof declared !== 'object' || declared === null || Array.isArray(declared)) return { reason: 'the snapshot end line does not list its states' };
  const states = new Map<string, Columns>();
  for (const [name, cols] of Object.entries(declared as Record<string, unknown>)) {
    if (typeof cols !== 'object' || cols === null) return { reason: `the snapshot end line's state ${name} is malformed` };
    const out: Columns = {};
    for (const [col, len] of Object.entries(cols as Record<string, unknown>)) {
      const parts = stateParts.get(name)?.get(col) ?? [];
      const values = parts.length === 1 ? parts[0] : ([] as unknown[]).concat(...parts);
      if (values.length !== len) return { reason: `the snapshot state ${name}.${col} has ${values.length} values, its end line says ${String(len)}` };
      out[col] = values;
    }
    states.set(name, out);
  }
  for (const name of stateParts.keys()) if (!states.has(name)) return { reason: `the snapshot state ${name} is not listed in the end line` };

  const ids = idParts.length === 1 ? idParts[0] : ([] as string[]).concat(...idParts);
  const offsets = new Float64Array(records);
  const lengths = new Uint32Array(records);
  let at = 0;
  let i = 0;
  for (let p = 0; p < gapParts.length; p++) {
    const gaps = gapParts[p];
    const lens = lenParts[p];
    const part = idParts[p];
    for (let j = 0; j < gaps.length; j++, i++) {
      const gap = gaps[j];
      const len = lens[j];
      if (!isCount(gap) || !isCount(len) || len < 2 || typeof part[j] !== 'string') return { reason: `the snapshot record ${i} is malformed` };
      at += gap;
      offsets[i] = at;
      lengths[i] = len;
      at += len;
    }
  }
  if (at > h.block) return { reason: 'the snapshot records reach past the put lines' };
  return {
    putsFrom: h.end, putsTo: h.block, puts: e.puts as number, types, typeOf: Uint16Array.from(recTypes), ids, offsets, lengths, states,
    lines: blockLines + 2, tailOffset,
  };
}

/**
 * Walks the put lines of `block` (the log open as `fd`): checks every line's checksum, that
 * it is a line of puts, and that the records the block places in it lie where it says — each
 * value opens with `{` right after a `,` and closes with `}` right before a `]`. Calls `take`
 * with each record (its position in the block, and the line's bytes holding its value at
 * `buf[start, end)`; the buffer is reused, so `take` copies what it keeps), in file order.
 * @returns null when the put lines are as the block describes, else why not (a warning, and a
 *   full replay). `lineAfter` is set to the first block line's number.
 * @throws CorruptLogError for a put line whose checksum fails: the log is corrupt there, as a
 *   full replay would find (docs/storage.md#corruption).
 */
export function walkPuts(file: string, fd: number, block: Block, take: (rec: number, buf: Buffer, start: number, end: number) => void): { reason: string | null; blockLine: number } {
  const { offsets, lengths } = block;
  const n = offsets.length;
  let rec = 0;
  let lines = 0;
  let problem: string | null = null;
  let lastLine = 1;
  eachLine(fd, block.putsTo, (buf, start, stop, offset, lineNo) => {
    lastLine = lineNo;
    const bad = checkCrc(buf, start, stop);
    if (bad !== null) throw new CorruptLogError(file, lineNo, offset, bad);
    lines++;
    // `<crc> [["p",`: a line of puts.
    if (buf[start + 9] !== 0x5b || buf[start + 10] !== 0x5b || buf[start + 11] !== 0x22 || buf[start + 12] !== 0x70 || buf[start + 13] !== 0x22) {
      problem = `line ${lineNo} (byte offset ${offset}) before the snapshot block is not a line of puts`;
      return false;
    }
    const lineEnd = offset + (stop - start);
    while (rec < n && offsets[rec] < lineEnd) {
      const vs = offsets[rec] - offset + start;
      const ve = vs + lengths[rec];
      if (offsets[rec] < offset + 14 || ve > stop - 1 || buf[vs - 1] !== 0x2c || buf[vs] !== 0x7b || buf[ve - 1] !== 0x7d || buf[ve] !== 0x5d) {
        problem = `snapshot record ${rec} (byte offset ${offsets[rec]}) is not where the block places it`;
        return false;
      }
      take(rec, buf, vs, ve);
      rec++;
    }
    return true;
  }, block.putsFrom, 2);
  if (problem !== null) return { reason: problem, blockLine: 0 };
  if (lines !== block.puts) return { reason: `the snapshot block counts ${block.puts} put lines, the log has ${lines} before it`, blockLine: 0 };
  if (rec !== n) return { reason: `${n - rec} snapshot records lie past the put lines`, blockLine: 0 };
  return { reason: null, blockLine: lines === 0 ? 2 : lastLine + 1 };
}

/**
 * Splits `values` into slices whose JSON text (`JSON.stringify(slice)`) is at most `maxBytes`
 * UTF-8 bytes — a single value longer than that alone in its slice — and returns each slice's
 * JSON text with its start index. Slices are sized from the bytes per value seen so far, and
 * halved when one comes out too long.
 */
export function* jsonSlices(values: readonly unknown[], maxBytes: number): Generator<{ from: number; json: string }> {
  let from = 0;
  let perValue = 16;
  while (from < values.length) {
    let count = Math.max(1, Math.min(values.length - from, Math.floor(maxBytes / perValue)));
    for (;;) {
      const json = JSON.stringify(values.slice(from, from + count));
      const bytes = Buffer.byteLength(json, 'utf8');
      if (bytes <= maxBytes || count === 1) {
        yield { from, json };
        perValue = Math.max(1, Math.ceil(bytes / count));
        from += count;
        break;
      }
      count = Math.max(1, Math.floor(count * (maxBytes / bytes) * 0.9));
    }
  }
  if (values.length === 0) yield { from: 0, json: '[]' };
}

/** The CRC-32 of `buf[start, end)` as 8 lower-case hex digits, written at `buf[at]`. */
export function writeCrc(buf: Buffer, at: number, start: number, end: number): void {
  buf.write((crc32(buf.subarray(start, end)) >>> 0).toString(16).padStart(8, '0'), at, 'latin1');
}
