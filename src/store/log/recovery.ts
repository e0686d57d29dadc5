/**
 * Reading a log back (docs/storage.md#recovery): every line is checked against its crc32; a frame
 * is applied only once its commit marker is read. An incomplete last transaction is a torn tail,
 * cut off and kept aside; any other failing line is corruption, reported with file, line and
 * offset, the file untouched (repair.ts is the explicit way out). A damaged snapshot line is
 * skipped with a warning: the put lines it describes suffice.
 */
import * as fs from 'node:fs';
import { crc32 } from 'node:zlib';
import type { FrameMarker } from './log.js';

/** A complete line that fails its checksum or does not parse: the log cannot be replayed past it. */
export class CorruptLogError extends Error {
  /** `line` is 1-based, `offset` the line's first byte; `consequence` (what to do) is appended to the message. */
  constructor(readonly file: string, readonly line: number, readonly offset: number, readonly reason: string,
    consequence?: string) {
    super(`${file}: line ${line} (byte offset ${offset}) is corrupt: ${reason}${consequence ? `; ${
      consequence}` : ''}`);
    this.name = 'CorruptLogError';
  }
}

export interface ReplayResult {
  /** Bytes of valid log (the file is truncated to this when the tail was torn). */
  size: number;
  /** Lines replayed (a frame's markers included), counted from the start of the file. */
  lines: number;
  /** The `.corrupt-*` file the torn tail (an incomplete line, or an uncommitted frame) was moved to, if any. */
  tornTailSavedTo?: string;
  /** Snapshot lines whose checksum failed, skipped (docs/storage.md#snapshots): line number and byte offset. */
  damagedSnapshotLines?: Array<{ line: number; offset: number }>;
}

/** Bytes read at a time. */
const CHUNK = 4 * 1024 * 1024;

/**
 * `file` opened with `flags`, or null when it does not exist.
 * @throws fs errors other than ENOENT.
 */
export function openIfExists(file: string, flags: string): number | null {
  try { return fs.openSync(file, flags); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** `{"snapshot":`: how every snapshot line's JSON begins (docs/storage.md#snapshots). */
const SNAPSHOT_PREFIX = Buffer.from('{"snapshot":');

/** Whether the JSON of the line `buf[start, end)` begins as a snapshot line's does (its checksum unchecked). */
export function looksLikeSnapshotLine(buf: Buffer, start: number, end: number): boolean {
  return end - start >= 9 + SNAPSHOT_PREFIX.length && buf.compare(SNAPSHOT_PREFIX, 0, SNAPSHOT_PREFIX.length,
    start + 9, start + 9 + SNAPSHOT_PREFIX.length) === 0;
}

/** A snapshot line's JSON, parsed: an object whose `snapshot` member names its kind. */
export interface SnapshotLine { readonly snapshot: string; readonly [k: string]: unknown }

/** Whether `v` is a snapshot line (docs/storage.md#snapshots): a JSON object whose `snapshot` member is a string. */
export function isSnapshotLine(v: unknown): v is SnapshotLine {
  return typeof v === 'object' && v !== null && !Array.isArray(v) &&
    typeof (v as { snapshot?: unknown }).snapshot === 'string';
}

/** Whether `v` is a frame marker (docs/storage.md#frames), its counts ≥ 1. */
function isMarker(v: unknown): v is FrameMarker {
  if (typeof v !== 'object' || v === null) return false;
  const m = v as Record<string, unknown>;
  return (m.frame === 'begin' || m.frame === 'commit') && Number.isSafeInteger(m.lines) && (m.lines as number) >= 1
    && Number.isSafeInteger(m.ops) && (m.ops as number) >= 1 && Object.keys(m).length === 3;
}

/** Checks one line's checksum (`buf[start, end)`, without its newline): why it fails, or null. */
export function checkCrc(buf: Buffer, start: number, end: number): string | null {
  if (end - start < 10 || buf[start + 8] !== 0x20) return 'missing checksum';
  // The 8 hex digits are read from the bytes: no string, no regex per line (a start replays millions).
  let want = 0;
  for (let i = start; i < start + 8; i++) {
    const c = buf[i];
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
    if (d < 0) return 'malformed checksum';
    want = want * 16 + d;
  }
  if ((crc32(buf.subarray(start + 9, end)) >>> 0) !== want) return 'checksum mismatch';
  return null;
}

/** Checks one line's checksum and JSON: a line of operations (an array), a frame marker or a snapshot line. */
export function checkLine(buf: Buffer, start: number, end: number): {
  value?: unknown[] | FrameMarker | SnapshotLine; reason?: string } {
  const bad = checkCrc(buf, start, end);
  if (bad !== null) return { reason: bad };
  const body = buf.subarray(start + 9, end);
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return { reason: 'checksum matches but the JSON does not parse' };
  }
  if (!Array.isArray(value) && !isMarker(value) && !isSnapshotLine(value)) return {
    reason: 'checksum matches but the line is not a transaction' };
  return { value };
}

/** A frame being read: its begin marker's line number, byte offset and value, and its lines so far. */
interface OpenFrame { line: number; offset: number; marker: FrameMarker; lines: unknown[][]; ops: number }

/**
 * Groups a log's checked lines into transactions (docs/storage.md#frames): a line of operations
 * outside a frame is one; a frame's lines are held until its commit marker, which must match.
 */
export class Transactions {
  open: OpenFrame | null = null;

  /**
   * Takes the next checked line: returns the lines of operations of the transaction it completes,
   * none while a frame is read, or why the line breaks the frame rules (corruption).
   */
  take(value: unknown[] | FrameMarker | SnapshotLine, lineNo: number, offset: number): {
    tx?: unknown[][]; reason?: string } {
    const f = this.open;
    if (isSnapshotLine(value)) return f === null ? {} : {
      reason: `a snapshot line inside the frame begun at line ${f.line}` };
    if (Array.isArray(value)) {
      if (f === null) return { tx: [value] };
      if (f.lines.length === f.marker.lines) return {
        reason: `the frame begun at line ${f.line} has its ${f.marker.lines} lines, but this line is not its commit ` +
          `marker` };
      f.lines.push(value);
      f.ops += value.length;
      return {};
    }
    if (value.frame === 'begin') {
      if (f !== null) return { reason: `a frame begins inside the frame begun at line ${f.line}` };
      this.open = { line: lineNo, offset, marker: value, lines: [], ops: 0 };
      return {};
    }
    if (f === null) return { reason: 'a frame commit marker without its begin marker' };
    if (value.lines !== f.marker.lines || value.ops !== f.marker.ops || f.lines.length !== f.marker.lines ||
      f.ops !== f.marker.ops) {
      return { reason: `the commit marker (${value.lines} lines, ${value.ops} operations) does not match the frame ` +
        `begun at line ${f.line} (${f.marker.lines} lines, ${f.marker.ops} operations; read ${f.lines.length} ` +
          `lines, ${f.ops} operations)` };
    }
    this.open = null;
    return { tx: f.lines };
  }
}

/**
 * Calls `visit` with every complete (newline-terminated) line of the open file `fd` from byte
 * `from` (a line start; line number `firstLine`) up to byte `total`, in order, until `visit`
 * returns false. `buf[start, end)` is the line without its newline, `offset` its byte offset; the
 * buffer is reused, so `visit` copies what it keeps. Returns the byte offset where the unvisited
 * rest begins: the line `visit` stopped at, or the incomplete last line (`total` if none).
 */
export function eachLine(fd: number, total: number, visit: (buf: Buffer, start: number, end: number, offset: number,
  lineNo: number) => boolean, from = 0, firstLine = 1): number {
  let buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(total - from, 1)));
  let filled = 0; // bytes of buf holding data
  let fileOffset = from; // file offset of buf[0]
  let readPos = from;
  let lineNo = firstLine - 1;
  for (;;) {
    if (filled === buf.length) { const bigger = Buffer.allocUnsafe(buf.length * 2); buf.copy(bigger, 0, 0,
      filled); buf = bigger; }
    const n = readPos < total ? fs.readSync(fd, buf, filled, Math.min(buf.length - filled, total - readPos),
      readPos) : 0;
    readPos += n;
    filled += n;
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(0x0a, start);
      if (nl === -1 || nl >= filled) break;
      lineNo++;
      if (!visit(buf, start, nl, fileOffset + start, lineNo)) return fileOffset + start;
      start = nl + 1;
    }
    if (n === 0) return fileOffset + start;
    buf.copy(buf, 0, start, filled);
    fileOffset += start;
    filled -= start;
  }
}

/**
 * Reads `file` and calls `apply` with each line of operations (a parsed array of
 * `["p",type,id,record]` / `["d",type,id]`) and its line number, in order — a frame's lines once
 * its commit marker is read (docs/storage.md#recovery). A missing file replays as empty. The torn
 * tail — an incomplete last line, or an uncommitted frame at the end — is copied to
 * `<file>.corrupt-<now>` (mode 0600) and cut off (fsync'd). Snapshot lines are passed over; a
 * damaged one is named in `damagedSnapshotLines`. `from`: a line boundary to start at (after a
 * snapshot block).
 * @throws CorruptLogError for a complete line that fails its check or breaks the frame rules
 *   (the file is not changed); errors of `apply` propagate.
 */
export function replayLog(file: string, apply: (tx: unknown, line: number) => void, now: number = Date.now(),
  from: { offset: number; line: number } = { offset: 0, line: 1 }): ReplayResult {
  const fd = openIfExists(file, 'r+');
  if (fd === null) return { size: 0, lines: 0 };
  try {
    const total = fs.fstatSync(fd).size;
    let good = from.line - 1;
    const txs = new Transactions();
    const damaged: Array<{ line: number; offset: number }> = [];
    const lineEnd = eachLine(fd, total, (buf, start, end, offset, lineNo) => {
      const r = checkLine(buf, start, end);
      if (r.reason) {
        if (txs.open === null && looksLikeSnapshotLine(buf, start, end)) {
          damaged.push({ line: lineNo, offset }); good++; return true; }
        throw new CorruptLogError(file, lineNo, offset, r.reason);
      }
      const t = txs.take(r.value!, lineNo, offset);
      if (t.reason) throw new CorruptLogError(file, lineNo, offset, t.reason);
      if (t.tx) {
        // A frame's lines of operations are the lines just before its commit marker.
        const first = Array.isArray(r.value) ? lineNo : lineNo - t.tx.length;
        for (let i = 0; i < t.tx.length; i++) apply(t.tx[i], first + i);
      }
      good++;
      return true;
    }, from.offset, from.line);
    const extra = damaged.length > 0 ? { damagedSnapshotLines: damaged } : {};
    // A frame still open at the end: its commit marker was never written (docs/storage.md#frames).
    const validEnd = txs.open === null ? lineEnd : txs.open.offset;
    if (txs.open !== null) good = txs.open.line - 1;
    if (validEnd < total) {
      const saved = `${file}.corrupt-${now}`;
      // Copied in pieces: an unfinished frame can be as large as an import.
      const out = fs.openSync(saved, 'w', 0o600);
      try {
        const piece = Buffer.allocUnsafe(Math.min(CHUNK, total - validEnd));
        for (let at = validEnd; at < total;) {
          const n = fs.readSync(fd, piece, 0, Math.min(piece.length, total - at), at);
          if (n === 0) break;
          fs.writeSync(out, piece, 0, n);
          at += n;
        }
      } finally { fs.closeSync(out); }
      fs.ftruncateSync(fd, validEnd);
      fs.fsyncSync(fd);
      return { size: validEnd, lines: good, tornTailSavedTo: saved, ...extra };
    }
    return { size: total, lines: good, ...extra };
  } finally {
    fs.closeSync(fd);
  }
}

/** Where a compacted log's parts are, from its head line (docs/storage.md#snapshots): bytes. */
export interface CompactedHead { headEnd: number; block: number; end: number }

/** The head line of the log open as `fd` when it begins with a sound one (a compacted log), else null. */
export function readCompactedHead(fd: number, size: number): CompactedHead | null {
  let head: CompactedHead | null = null;
  eachLine(fd, Math.min(size, 4096), (buf, start, end) => {
    if (checkCrc(buf, start, end) !== null) return false;
    let v: unknown;
    try { v = JSON.parse(buf.toString('utf8', start + 9, end)); } catch { return false; }
    const h = v as { snapshot?: unknown; block?: unknown; end?: unknown };
    const whole = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
    const headEnd = end - start + 1;
    const sound = isSnapshotLine(v) && h.snapshot === 'head' && whole(h.block) && whole(h.end) && h.block >= headEnd;
    if (sound) head = { headEnd, block: h.block as number, end: h.end as number };
    return false;
  });
  return head;
}

/**
 * Throws when `file` is a compacted log cut short inside its put lines (docs/storage.md#recovery):
 * its head line places the snapshot block past the file's end, so a replay would miss records.
 * @throws CorruptLogError naming the line the file ends in.
 */
export function checkNotCutInPuts(file: string): void {
  const fd = openIfExists(file, 'r');
  if (fd === null) return;
  try {
    const size = fs.fstatSync(fd).size;
    const head = readCompactedHead(fd, size);
    if (head === null || size >= head.block) return;
    let lines = 0;
    const rest = eachLine(fd, size, () => { lines++; return true; });
    throw new CorruptLogError(file, lines + 1, rest,
      `the compacted log ends inside its put lines at byte ${size} (its snapshot block begins at byte ${head.block}): `
      + 'records are missing');
  } finally {
    fs.closeSync(fd);
  }
}

