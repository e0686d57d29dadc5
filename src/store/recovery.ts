/**
 * Reading a log back (docs/storage.md#recovery): every line is checked against its crc32 and
 * parsed; a frame's lines (docs/storage.md#frames) are applied only once its commit marker is
 * read.
 *
 * Only an incomplete last transaction is a torn write: bytes after the last newline, or a frame
 * whose commit marker was never written (a crash in the middle of a big transaction). A crash
 * can cut the final writes short, never complete a line with wrong bytes. The torn tail is cut
 * off at start (and kept aside in a `.corrupt-<time>` file). Any complete line that fails its
 * check — the last one included — or breaks the frame rules is corruption: replay stops with
 * file, line number and byte offset, and the file is left untouched. {@link repairLog} is the
 * explicit way out: it keeps a copy of the damaged file and cuts it at the last good
 * transaction.
 *
 * Snapshot lines (docs/storage.md#snapshots) are JSON objects `{"snapshot":…}`: no transaction,
 * so a replay passes over them. One whose checksum fails is skipped with a warning rather than
 * taken for corruption: no state depends on it, and the put lines it describes suffice.
 */
import * as fs from 'node:fs';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import type { FrameMarker } from './log.js';

/** A complete line that fails its checksum or does not parse: the log cannot be replayed past it. */
export class CorruptLogError extends Error {
  /**
   * @param line 1-based line number; @param offset byte offset of the line's first byte.
   * @param consequence what the caller does about it and how to fix it, appended to the message.
   */
  constructor(readonly file: string, readonly line: number, readonly offset: number, readonly reason: string, consequence?: string) {
    super(`${file}: line ${line} (byte offset ${offset}) is corrupt: ${reason}${consequence ? `; ${consequence}` : ''}`);
    this.name = 'CorruptLogError';
  }
}

export interface ReplayResult {
  /** Bytes of valid log (the file is truncated to this when the tail was torn). */
  size: number;
  /** Lines replayed (a frame's markers included), counted from the start of the file. */
  lines: number;
  /** The `.corrupt-*` file the torn tail (an incomplete line, or a frame without its commit marker) was moved to, if any. */
  tornTailSavedTo?: string;
  /** Snapshot lines whose checksum failed, skipped (docs/storage.md#snapshots): line number and byte offset. */
  damagedSnapshotLines?: Array<{ line: number; offset: number }>;
}

/** Bytes read at a time. */
export const CHUNK = 4 * 1024 * 1024;

/** `{"snapshot":`: how every snapshot line's JSON begins (docs/storage.md#snapshots). */
const SNAPSHOT_PREFIX = Buffer.from('{"snapshot":');

/** Whether the JSON of the line `buf[start, end)` begins as a snapshot line's does (its checksum unchecked). */
export function looksLikeSnapshotLine(buf: Buffer, start: number, end: number): boolean {
  return end - start >= 9 + SNAPSHOT_PREFIX.length && buf.compare(SNAPSHOT_PREFIX, 0, SNAPSHOT_PREFIX.length, start + 9, start + 9 + SNAPSHOT_PREFIX.length) === 0;
}

/** A snapshot line's JSON, parsed: an object whose `snapshot` member names its kind. */
export interface SnapshotLine { readonly snapshot: string; readonly [k: string]: unknown }

/** Whether `v` is a snapshot line (docs/storage.md#snapshots): a JSON object whose `snapshot` member is a string. */
export function isSnapshotLine(v: unknown): v is SnapshotLine {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as { snapshot?: unknown }).snapshot === 'string';
}

/** Whether `v` is a frame marker (docs/storage.md#frames): `{"frame":"begin"|"commit","lines":L,"ops":N}`, L and N ≥ 1. */
function isMarker(v: unknown): v is FrameMarker {
  if (typeof v !== 'object' || v === null) return false;
  const m = v as Record<string, unknown>;
  return (m.frame === 'begin' || m.frame === 'commit') && Number.isSafeInteger(m.lines) && (m.lines as number) >= 1
    && Number.isSafeInteger(m.ops) && (m.ops as number) >= 1 && Object.keys(m).length === 3;
}

/**
 * Checks one line's checksum (`buf[start, end)`, without its newline); returns why it fails, or
 * null when it matches. No JSON is parsed.
 */
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

/**
 * Checks one line (`buf[start, end)`, without its newline): its checksum, its JSON, and that it
 * is a line of operations (an array), a frame marker or a snapshot line.
 */
export function checkLine(buf: Buffer, start: number, end: number): { value?: unknown[] | FrameMarker | SnapshotLine; reason?: string } {
  const bad = checkCrc(buf, start, end);
  if (bad !== null) return { reason: bad };
  const body = buf.subarray(start + 9, end);
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return { reason: 'checksum matches but the JSON does not parse' };
  }
  if (!Array.isArray(value) && !isMarker(value) && !isSnapshotLine(value)) return { reason: 'checksum matches but the line is not a transaction' };
  return { value };
}

/** Where a frame began: its begin marker's line number and byte offset, and the marker. */
interface OpenFrame { line: number; offset: number; marker: FrameMarker; lines: unknown[][]; ops: number }

/**
 * Groups a log's checked lines into transactions (docs/storage.md#frames): a line of operations
 * outside a frame is a transaction; a frame's lines are held until its commit marker, which
 * must match its begin marker and what was read between them.
 */
class Transactions {
  /** The frame being read (its commit marker not read yet), or null. */
  open: OpenFrame | null = null;

  /**
   * Takes the next complete, checked line (`lineNo`, at byte `offset`). Returns the lines of
   * operations of the transaction it completes (one, or a frame's), none while a frame is
   * being read, or the reason the line breaks the frame rules (corruption).
   */
  take(value: unknown[] | FrameMarker | SnapshotLine, lineNo: number, offset: number): { tx?: unknown[][]; reason?: string } {
    const f = this.open;
    if (isSnapshotLine(value)) return f === null ? {} : { reason: `a snapshot line inside the frame begun at line ${f.line}` };
    if (Array.isArray(value)) {
      if (f === null) return { tx: [value] };
      if (f.lines.length === f.marker.lines) return { reason: `the frame begun at line ${f.line} has its ${f.marker.lines} lines, but this line is not its commit marker` };
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
    if (value.lines !== f.marker.lines || value.ops !== f.marker.ops || f.lines.length !== f.marker.lines || f.ops !== f.marker.ops) {
      return { reason: `the commit marker (${value.lines} lines, ${value.ops} operations) does not match the frame begun at line ${f.line} (${f.marker.lines} lines, ${f.marker.ops} operations; read ${f.lines.length} lines, ${f.ops} operations)` };
    }
    this.open = null;
    return { tx: f.lines };
  }
}

/**
 * Calls `visit` with every complete (newline-terminated) line of the open file `fd` from byte
 * `from` (a line start; line number `firstLine`) up to byte `total`, in order, reading 4 MiB at
 * a time (more for a longer line), until `visit` returns false. `buf[start, end)` is the line
 * without its newline, `offset` its byte offset in the file; the buffer is reused, so `visit`
 * copies what it keeps. Returns the byte offset where the unvisited rest begins: the line
 * `visit` stopped at, or the incomplete last line (= `total` when the file ends with a newline).
 */
export function eachLine(fd: number, total: number, visit: (buf: Buffer, start: number, end: number, offset: number, lineNo: number) => boolean, from = 0, firstLine = 1): number {
  let buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(total - from, 1)));
  let filled = 0; // bytes of buf holding data
  let fileOffset = from; // file offset of buf[0]
  let readPos = from;
  let lineNo = firstLine - 1;
  for (;;) {
    if (filled === buf.length) { const bigger = Buffer.allocUnsafe(buf.length * 2); buf.copy(bigger, 0, 0, filled); buf = bigger; }
    const n = readPos < total ? fs.readSync(fd, buf, filled, Math.min(buf.length - filled, total - readPos), readPos) : 0;
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
 * Reads `file` line by line and calls `apply` with each line of operations (a parsed JSON array
 * of `["p",type,id,record]` / `["d",type,id]`) and its 1-based line number, in order — a frame's
 * lines only once its commit marker is read, one after the other (docs/storage.md#recovery). A
 * missing file replays as empty. The torn tail — an incomplete last line, and a frame whose
 * commit marker is missing at the end of the file, from its begin marker on — is copied to
 * `<file>.corrupt-<now>` (mode 0600) and cut off (the file is fsync'd). Snapshot lines are
 * passed over; one whose checksum fails is skipped and named in `damagedSnapshotLines`
 * (docs/storage.md#snapshots).
 *
 * `from` starts the replay at a line boundary other than the file's start (after a snapshot
 * block, whose records were loaded from it): byte `offset`, line number `line`.
 * @throws CorruptLogError for a complete line that fails its check or breaks the frame rules
 *   (the file is not changed); errors of `apply` propagate.
 */
export function replayLog(file: string, apply: (tx: unknown, line: number) => void, now: number = Date.now(), from: { offset: number; line: number } = { offset: 0, line: 1 }): ReplayResult {
  let fd: number;
  try { fd = fs.openSync(file, 'r+'); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { size: 0, lines: 0 };
    throw e;
  }
  try {
    const total = fs.fstatSync(fd).size;
    let good = from.line - 1;
    const txs = new Transactions();
    const damaged: Array<{ line: number; offset: number }> = [];
    const lineEnd = eachLine(fd, total, (buf, start, end, offset, lineNo) => {
      const r = checkLine(buf, start, end);
      if (r.reason) {
        if (txs.open === null && looksLikeSnapshotLine(buf, start, end)) { damaged.push({ line: lineNo, offset }); good++; return true; }
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

/** What {@link scanLog} found in a log, without changing it. */
export interface ScanResult {
  /** The file's size in bytes. */
  size: number;
  /** Lines of the whole transactions before the first bad line (or the torn tail): what a repair keeps. */
  goodLines: number;
  /** Bytes of those lines: where a repair cuts. */
  goodBytes: number;
  /** The first complete line that fails its check, if any. */
  firstBad?: { line: number; offset: number; reason: string };
  /** Lines from the cut on (the lines of the frame the bad one is in, the bad one, every later one, and a torn tail). */
  droppedLines: number;
  /** How many of the dropped complete lines pass their own check (lost with the cut all the same). */
  droppedValidLines: number;
}

/**
 * Reads `file` through and reports where its good prefix ends: after the last whole
 * transaction before the first bad line — a bad line inside a frame takes the whole frame with
 * it (docs/storage.md#frames) — or before the torn tail. A missing file scans as empty.
 * Later lines are dropped together with the first bad one because each transaction is built
 * on the state of every one before it: skipping one could replay a message whose conversation
 * never existed.
 */
export function scanLog(file: string): ScanResult {
  let fd: number;
  try { fd = fs.openSync(file, 'r'); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { size: 0, goodLines: 0, goodBytes: 0, droppedLines: 0, droppedValidLines: 0 };
    throw e;
  }
  try {
    const size = fs.fstatSync(fd).size;
    const r: ScanResult = { size, goodLines: 0, goodBytes: 0, droppedLines: 0, droppedValidLines: 0 };
    const txs = new Transactions();
    /** Lines of the frame being read (its begin marker included): kept only with its commit marker. */
    let held = 0;
    const end = eachLine(fd, size, (buf, start, stop, offset, lineNo) => {
      const c = checkLine(buf, start, stop);
      if (r.firstBad) { r.droppedLines++; if (!c.reason) r.droppedValidLines++; return true; }
      // A damaged snapshot line is skipped by a replay, not corruption (docs/storage.md#snapshots).
      const skipped = c.reason !== undefined && txs.open === null && looksLikeSnapshotLine(buf, start, stop);
      const bad = skipped ? undefined : c.reason ?? txs.take(c.value!, lineNo, offset).reason;
      if (bad) {
        // The cut is at a transaction boundary: before the frame the bad line is in, if any.
        r.firstBad = { line: lineNo, offset, reason: bad };
        r.goodBytes = txs.open?.offset ?? offset;
        r.droppedLines += held + 1;
        r.droppedValidLines += held;
      } else if (txs.open !== null) held++;
      else { r.goodLines += held + 1; held = 0; }
      return true;
    });
    if (!r.firstBad) {
      // A frame without its commit marker at the end is a torn tail, from its begin marker on.
      r.goodBytes = txs.open?.offset ?? end;
      r.droppedLines += held;
      r.droppedValidLines += held;
    }
    if (end < size) r.droppedLines++; // the incomplete last line
    return r;
  } finally {
    fs.closeSync(fd);
  }
}

/** What {@link repairLog} did. */
export interface RepairResult extends ScanResult {
  file: string;
  /** Bytes cut off the end of the log. */
  droppedBytes: number;
  /** The byte-for-byte copy of the damaged log, or null when nothing had to be cut. */
  damagedCopy: string | null;
}

/**
 * Cuts `file` at the end of its last good transaction ({@link scanLog}), after keeping a byte-for-byte copy of it as
 * `<file>.damaged-<now>` (written and fsync'd before the cut, so a crash leaves at least one
 * of the two complete). A log without a bad line or torn tail is left as it is. The caller
 * must be the only process with the file open (it holds the data dir's lock, and the log is
 * not open for writing).
 * @throws fs errors (ENOSPC for the copy, EACCES…) with the log unchanged.
 */
export function repairLog(file: string, now: number = Date.now()): RepairResult {
  const scan = scanLog(file);
  const droppedBytes = scan.size - scan.goodBytes;
  if (droppedBytes === 0) return { ...scan, file, droppedBytes, damagedCopy: null };
  const copy = `${file}.damaged-${now}`;
  fs.copyFileSync(file, copy, fs.constants.COPYFILE_EXCL);
  fs.chmodSync(copy, 0o600);
  const cfd = fs.openSync(copy, 'r');
  try { fs.fsyncSync(cfd); } finally { fs.closeSync(cfd); }
  const fd = fs.openSync(file, 'r+');
  try {
    fs.ftruncateSync(fd, scan.goodBytes);
    fs.fsyncSync(fd);
  } finally { fs.closeSync(fd); }
  const dfd = fs.openSync(dirname(file), 'r');
  try { fs.fsyncSync(dfd); } finally { fs.closeSync(dfd); }
  return { ...scan, file, droppedBytes, damagedCopy: copy };
}
