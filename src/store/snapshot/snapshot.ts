/**
 * The snapshot block of a compacted log (docs/storage.md#snapshots): lines after the put lines
 * that say where each record's JSON lies and hold every persisted index's state, so a start loads
 * a log without parsing its records. A full replay passes over them. This module reads a block
 * ({@link readBlock}); loadLog.ts walks its put lines, compactedFile.ts writes them.
 */
import { endianness } from 'node:os';
import { checkCrc, eachLine, isSnapshotLine } from '../log/recovery.js';
import { ArrayIds, PackedIds, type IdList } from '../memory/ids.js';

/** The format version a block declares in its head and end lines; a block of another version is not used. */
export const SNAPSHOT_VERSION = 1;

/** One column: JSON values, or numbers packed as `u32` or `f64`. */
export type Column = unknown[] | Uint32Array | Float64Array;
/** Named columns: one persisted state as the block holds it. */
export type Columns = Record<string, Column>;

const BIG_ENDIAN = endianness() === 'BE';

/** The base64 of `a`'s elements, little-endian. */
export function packNumbers(a: Uint32Array | Float64Array): string {
  const b = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  if (!BIG_ENDIAN) return b.toString('base64');
  const c = Buffer.from(b);
  if (a instanceof Float64Array) c.swap64(); else c.swap32();
  return c.toString('base64');
}



/** What {@link readBlock} found: the block, checked, ready to be used. */
export interface Block {
  /** Byte offset of the head line's end: the put lines begin here. */
  putsFrom: number;
  /** Byte offset of the first block line: the put lines end here. */
  putsTo: number;
  /** Put lines the end line announces. */
  puts: number;
  /** Record types, in file order. */
  types: string[];
  /** Per type (same index as `types`): its records, one run of the block, and their ids. */
  runs: Array<{ from: number; count: number; ids: IdList }>;
  /** Per record, in file order: bytes from the end of the previous value to its value, and its length. */
  gaps: Uint32Array;
  lengths: Uint32Array;
  /** Persisted states by name. */
  states: Map<string, Columns>;
  /** Lines of the block, head and end lines included. */
  lines: number;
  /** Where the block's end line ends: later transactions begin here. */
  tailOffset: number;
}

/** The head line's JSON text: where the block and its end line begin, fixed width (rewritten in place). */
export function headJson(block: number, end: number): string {
  return `{"snapshot":"head","v":${SNAPSHOT_VERSION},"block":${String(block).padEnd(16, ' ')},` +
    `"end":${String(end).padEnd(16, ' ')}}`;
}

/** The end line's JSON text: put lines, block lines, records, records per type, and every state column's length. */
export function endJson(puts: number, lines: number, records: number, types: Array<[string, number]>,
  states: Record<string, Record<string, number>>): string {
  return JSON.stringify({ snapshot: 'end', v: SNAPSHOT_VERSION, puts, lines, records, types, states });
}

const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * The fields of the JSON object `buf[start, end)` when it is *flat* — every value an ASCII string
 * without escapes, or a whole number, as the bulky block lines are written — strings as byte
 * ranges (a long one is used from the bytes, never a JavaScript string). Null for any other shape.
 */
function flatFields(buf: Buffer, start: number, end: number): Map<string, number | [number, number]> | null {
  const out = new Map<string, number | [number, number]>();
  let i = start;
  if (buf[i++] !== 0x7b) return null;
  for (;;) {
    if (buf[i++] !== 0x22) return null;
    const k0 = i;
    while (i < end && buf[i] !== 0x22) { if (buf[i] === 0x5c || buf[i] >= 0x80) return null; i++; }
    const key = buf.toString('latin1', k0, i);
    i++;
    if (buf[i++] !== 0x3a) return null;
    if (buf[i] === 0x22) {
      const v0 = ++i;
      const q = buf.indexOf(0x22, i);
      if (q === -1 || q >= end) return null;
      // No escape anywhere; a short value (a name) also all ASCII. A long one is a payload — base64,
      // or ids the writer packs only when they are printable ASCII — used as its bytes.
      if (buf.subarray(v0, q).indexOf(0x5c) !== -1) return null;
      if (q - v0 <= 256) for (let j = v0; j < q; j++) if (buf[j] >= 0x80) return null;
      out.set(key, [v0, q]);
      i = q + 1;
    } else {
      let v = 0;
      const d0 = i;
      while (i < end && buf[i] >= 0x30 && buf[i] <= 0x39) { v = v * 10 + buf[i] - 0x30; i++; }
      if (i === d0 || i - d0 > 15) return null;
      out.set(key, v);
    }
    if (buf[i] === 0x2c) { i++; continue; }
    if (buf[i] === 0x7d && i + 1 === end) return out;
    return null;
  }
}

/**
 * Reads and checks the snapshot block of the log open as `fd` (`size` bytes): the head line, then
 * every block line up to the end line (the put lines are walked by loadLog.ts). The bulky lines
 * are read from their bytes ({@link flatFields}), every other one with `JSON.parse`.
 * @returns the block, or why it cannot be used (no head line, a damaged line, a file cut inside the
 *   block, counts that do not match, another version…) for a warning and a full replay. Never throws.
 */
export function readBlock(fd: number, size: number): Block | { reason: string } {
  // The head line, then the end line it points to.
  const first = (from: number, upTo: number): { json: Record<string, unknown> | null; end: number; reason?: string } =>
    {
    let got: { json: Record<string, unknown> | null; end: number; reason?: string } =
      { json: null, end: from, reason: 'missing' };
    eachLine(fd, upTo, (buf, start, end, offset) => {
      if (checkCrc(buf, start, end) !== null) { got = { json: null, end: 0, reason: 'damaged' }; return false; }
      let v: unknown;
      try { v = JSON.parse(buf.toString('utf8', start + 9, end)); } catch { v = null; }
      got = { json: isSnapshotLine(v) ? (v as Record<string, unknown>) : null, end: offset + (end - start) + 1 };
      return false;
    }, from);
    return got;
  };
  const head = first(0, Math.min(size, 4096));
  if (head.reason === 'damaged') return { reason: 'the snapshot head line is damaged (checksum mismatch)' };
  const h = head.json;
  if (h === null || h.snapshot !== 'head') return {
    reason: 'no snapshot block (the log does not begin with a snapshot head line)' };
  if (h.v !== SNAPSHOT_VERSION) return {
    reason: `the snapshot block has format version ${String(h.v)}, not ${SNAPSHOT_VERSION}` };
  if (!isCount(h.block) || !isCount(h.end) || h.block < head.end || h.end < h.block) return {
    reason: 'the snapshot head line is malformed' };
  if (h.end >= size) return {
    reason: `the file ends inside the snapshot block (its end line would be at byte ${h.end}; the file has ${size} ` +
      `bytes)` };
  const endLine = first(h.end, size);
  if (endLine.reason !== undefined) return {
    reason: endLine.reason === 'damaged' ? 'the snapshot end line is damaged (checksum ' +
      'mismatch)' : 'the snapshot end line is missing (the file ends inside the block)' };
  const e = endLine.json;
  if (e === null || e.snapshot !== 'end' || e.v !== SNAPSHOT_VERSION) return {
    reason: 'the snapshot end line is not where the head line says' };
  const records = e.records;
  const typeList = e.types;
  const declared = e.states;
  if (!isCount(e.puts) || !isCount(e.lines) || !isCount(records) || !Array.isArray(typeList) ||
    typeof declared !== 'object' || declared === null || Array.isArray(declared)) {
    return { reason: 'the snapshot end line is malformed' };
  }

  // Everything is sized from the end line before a block line is read.
  const types: string[] = [];
  const typeIndex = new Map<string, number>();
  const runs: Block['runs'] = [];
  const expected: number[] = [];
  let total = 0;
  for (const entry of typeList) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || !isCount(entry[1]) || typeIndex.has(entry[0])) return {
      reason: 'the snapshot end line\'s types are malformed' };
    typeIndex.set(entry[0], types.length);
    types.push(entry[0]);
    expected.push(entry[1]);
    runs.push({ from: total, count: 0, ids: new ArrayIds([]) });
    total += entry[1];
  }
  if (total !== records) return { reason: `the snapshot end line counts ${records} records, its types ${total}` };
  const gaps = new Uint32Array(records);
  const lengths = new Uint32Array(records);
  const gapBytes = Buffer.from(gaps.buffer, gaps.byteOffset, gaps.byteLength);
  const lenBytes = Buffer.from(lengths.buffer, lengths.byteOffset, lengths.byteLength);
  const idLists: Array<PackedIds | string[] | null> = types.map(() => null);
  /** Per state and column: its declared length, then what was read. */
  const stateCols = new Map<string, Map<string, {
    len: number; kind: 'values' | 'u32' | 'f64' | null; parts: unknown[][]; arr: Uint32Array | Float64Array | null;
      bytes: Buffer | null; count: number }>>();
  for (const [name, cols] of Object.entries(declared as Record<string, unknown>)) {
    if (typeof cols !== 'object' || cols === null) return {
      reason: `the snapshot end line's state ${name} is malformed` };
    const m = new Map();
    for (const [col, len] of Object.entries(cols as Record<string, unknown>)) {
      if (!isCount(len)) return { reason: `the snapshot end line's state ${name} is malformed` };
      m.set(col, { len, kind: null, parts: [], arr: null, bytes: null, count: 0 });
    }
    stateCols.set(name, m);
  }

  let blockLines = 0;
  let recs = 0; // records read so far
  let lastType = -1;
  let problem: string | null = null;
  const text = (buf: Buffer, r: [number, number]): string => buf.toString('latin1', r[0], r[1]);
  /** Decodes base64 `b64` into `into` at byte `at`; false unless it is exactly `len` bytes. */
  const decodeInto = (into: Buffer, at: number, b64: string, len: number, size: number): boolean => {
    if (at + len > into.length || into.write(b64, at, len, 'base64') !== len ||
      Math.ceil(len / 3) * 4 !== b64.length) return false;
    if (BIG_ENDIAN) { const b = into.subarray(at, at + len); if (size === 8) b.swap64(); else b.swap32(); }
    return true;
  };
  /**
   * Takes a records line of `count` records of `type`, with their gaps and lengths (base64): the
   * type's index, or -1 when they do not continue the block in order or do not decode.
   */
  const takeRecords = (type: string, count: number, g: string, l: string): number => {
    const t = typeIndex.get(type);
    if (t === undefined || (t !== lastType && (t !== lastType + 1 || runs[t].count !== 0)) ||
      runs[t].count + count > expected[t]) return -1;
    if (t !== lastType && lastType >= 0 && runs[lastType].count !== expected[lastType]) return -1;
    if (!decodeInto(gapBytes, recs * 4, g, count * 4, 4) || !decodeInto(lenBytes, recs * 4, l, count * 4, 4)) return -1;
    lastType = t;
    return t;
  };
  const stateColumn = (name: string, col: string, from: number, kind: 'values' | 'u32' | 'f64', count: number) => {
    const c = stateCols.get(name)?.get(col);
    if (c === undefined || from !== c.count || (c.kind !== null && c.kind !== kind) ||
      c.count + count > c.len) return null;
    if (c.kind === null) {
      c.kind = kind;
      if (kind !== 'values') {
        c.arr = kind === 'u32' ? new Uint32Array(c.len) : new Float64Array(c.len);
        c.bytes = Buffer.from(c.arr.buffer, c.arr.byteOffset, c.arr.byteLength);
      }
    }
    return c;
  };

  eachLine(fd, h.end, (buf, start, stop, offset) => {
    if (checkCrc(buf, start, stop) !== null) { problem =
      `snapshot line at byte offset ${offset} is damaged (checksum mismatch)`; return false; }
    const bad = (what: string) => { problem =
      `the snapshot ${what} line at byte offset ${offset} is malformed`; return false; };
    blockLines++;
    const f = flatFields(buf, start + 9, stop);
    const kind = f?.get('snapshot');
    const kindName = Array.isArray(kind) ? text(buf, kind) : null;
    // Packed ids and numbers, read from the bytes.
    if (f !== null && kindName === 'records' && f.has('idp')) {
      const type = f.get('type'), idw = f.get('idw'), idp = f.get('idp'), g = f.get('gaps'), l = f.get('lens');
      if (!Array.isArray(type) || typeof idw !== 'number' || idw < 1 || idw > 64 || !Array.isArray(idp) ||
        !Array.isArray(g) || !Array.isArray(l) || f.size !== 6) return bad('records');
      const count = (idp[1] - idp[0]) / idw;
      const t = Number.isInteger(count) ? takeRecords(text(buf, type), count, text(buf, g), text(buf, l)) : -1;
      if (t < 0) return bad('records');
      let list = idLists[t];
      if (list === null) idLists[t] = list = new PackedIds(idw, expected[t]);
      if (Array.isArray(list)) { problem = `the snapshot ids of ${types[t]} are of mixed forms`; return false; }
      try { list.add(buf, idp[0], idp[1]); } catch { return bad('records'); }
      runs[t].count += count;
      recs += count;
      return true;
    }
    if (f !== null && kindName === 'state' && (f.has('u32') || f.has('f64'))) {
      const name = f.get('name'), col = f.get('column'), from = f.get('from');
      const packed = f.has('u32') ? 'u32' : 'f64';
      const payload = f.get(packed);
      if (!Array.isArray(name) || !Array.isArray(col) || typeof from !== 'number' || !Array.isArray(payload) ||
        f.size !== 5) return bad('state');
      const b64 = text(buf, payload);
      const size = packed === 'u32' ? 4 : 8;
      const pad = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
      const len = (b64.length / 4) * 3 - pad;
      if (len % size !== 0) return bad('state');
      const c = stateColumn(text(buf, name), text(buf, col), from, packed, len / size);
      if (c === null || !decodeInto(c.bytes!, c.count * size, b64, len, size)) return bad('state');
      c.count += len / size;
      return true;
    }
    let v: unknown;
    try { v = JSON.parse(buf.toString('utf8', start + 9, stop)); } catch { problem =
      `snapshot line at byte offset ${offset} does not parse`; return false; }
    if (!isSnapshotLine(v)) { problem =
      `the snapshot block ends at byte offset ${offset} before its end line`; return false; }
    if (v.snapshot === 'records') {
      const { type, ids, gaps: g, lens: l } = v as Record<string, unknown>;
      if (typeof type !== 'string' || !Array.isArray(ids) || !ids.every((id) => typeof id === 'string') ||
        typeof g !== 'string' || typeof l !== 'string') return bad('records');
      const t = takeRecords(type, ids.length, g, l);
      if (t < 0) return bad('records');
      let list = idLists[t];
      if (list === null) idLists[t] = list = [];
      if (!Array.isArray(list)) { problem = `the snapshot ids of ${type} are of mixed forms`; return false; }
      for (const id of ids as string[]) list.push(id);
      runs[t].count += ids.length;
      recs += ids.length;
      return true;
    }
    if (v.snapshot === 'state') {
      const { name, column: col, from, values } = v as Record<string, unknown>;
      if (typeof name !== 'string' || typeof col !== 'string' || !isCount(from) || !Array.isArray(values)) return bad(
        'state');
      const c = stateColumn(name, col, from, 'values', values.length);
      if (c === null) return bad('state');
      c.parts.push(values);
      c.count += values.length;
      return true;
    }
    problem = `the snapshot line at byte offset ${offset} is of an unknown kind (${JSON.stringify(v.snapshot)})`;
    return false;
  }, h.block, 1);
  if (problem !== null) return { reason: problem };
  if (e.lines !== blockLines || recs !== records || runs.some((r, t) => r.count !== expected[t])) {
    return { reason: `the snapshot end line's counts (${String(e.lines)} lines, ${String(records)} records) do not ` +
      `match the block (${blockLines} lines, ${recs} records)` };
  }
  const states = new Map<string, Columns>();
  for (const [name, cols] of stateCols) {
    const out: Columns = {};
    for (const [col, c] of cols) {
      if (c.count !== c.len) return {
        reason: `the snapshot state ${name}.${col} has ${c.count} values, its end line says ${c.len}` };
      out[col] = c.arr ?? (c.parts.length === 1 ? c.parts[0] : ([] as unknown[]).concat(...c.parts));
    }
    states.set(name, out);
  }
  for (let t = 0; t < types.length; t++) {
    const list = idLists[t];
    runs[t].ids = list === null ? new ArrayIds([]) : Array.isArray(list) ? new ArrayIds(list) : list;
  }
  let at = 0;
  for (let j = 0; j < records; j++) {
    if (lengths[j] < 2) return { reason: `the snapshot record ${j} is malformed` };
    at += gaps[j] + lengths[j];
  }
  if (at > h.block) return { reason: 'the snapshot records reach past the put lines' };
  return { putsFrom: head.end, putsTo: h.block, puts: e.puts, types, runs, gaps, lengths, states,
    lines: blockLines + 2, tailOffset: endLine.end };
}
