/**
 * The explicit way out of a corrupt log (docs/storage.md#recovery, `cli repair`): {@link scanLog}
 * finds where its good prefix ends, {@link repairLog} keeps a byte-for-byte copy and cuts it there
 * — or, for a compacted log, whose put lines are independent, leaves out only the bad ones
 * (docs/storage.md#damaged-compacted-logs).
 */
import * as fs from 'node:fs';
import { dirname } from 'node:path';
import { encodeLine } from './lines.js';
import { checkLine, eachLine, isSnapshotLine, looksLikeSnapshotLine, openIfExists, readCompactedHead,
  Transactions } from './recovery.js';

/** What {@link scanLog} found in a log, without changing it. */
export interface ScanResult {
  size: number;
  /** Lines of the whole transactions before the first bad line (or the torn tail): what a repair keeps. */
  goodLines: number;
  /** Bytes of those lines: where a repair cuts. */
  goodBytes: number;
  /** The first complete line that fails its check, if any. */
  firstBad?: { line: number; offset: number; reason: string };
  /** Lines from the cut on: the bad one's frame, the bad one, every later one, and a torn tail. */
  droppedLines: number;
  /** How many of the dropped complete lines pass their own check (lost with the cut all the same). */
  droppedValidLines: number;
}

/**
 * Reads `file` through and reports where its good prefix ends: after the last whole transaction
 * before the first bad line (a bad line takes its whole frame with it) or the torn tail. Later
 * lines go too: each transaction is built on every one before it, so skipping one could replay a
 * message whose conversation never existed. A missing file scans as empty.
 */
export function scanLog(file: string): ScanResult {
  const fd = openIfExists(file, 'r');
  if (fd === null) return { size: 0, goodLines: 0, goodBytes: 0, droppedLines: 0, droppedValidLines: 0 };
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
  /** A compacted log's bad put lines, left out while the others were kept (docs/storage.md#damaged-compacted-logs). */
  skippedLines?: SkippedLine[];
  /** Whole operations kept from the incomplete last put line of a compacted log cut short. */
  salvagedOps?: number;
}

/**
 * Cuts `file` at the end of its last good transaction ({@link scanLog}), after keeping a
 * byte-for-byte copy `<file>.damaged-<now>`, fsync'd before the cut (a crash leaves one of the two
 * complete); a sound log is left as it is. A compacted log is repaired line by line instead
 * ({@link repairCompacted}). The caller holds the data dir's lock, the log not open for writing.
 * @throws fs errors (ENOSPC for the copy, EACCES…) with the log unchanged.
 */
export function repairLog(file: string, now: number = Date.now()): RepairResult {
  const compacted = repairCompacted(file, now);
  if (compacted !== null) return compacted;
  const scan = scanLog(file);
  const droppedBytes = scan.size - scan.goodBytes;
  if (droppedBytes === 0) return { ...scan, file, droppedBytes, damagedCopy: null };
  const copy = keepDamagedCopy(file, now);
  const fd = fs.openSync(file, 'r+');
  try {
    fs.ftruncateSync(fd, scan.goodBytes);
    fs.fsyncSync(fd);
  } finally { fs.closeSync(fd); }
  fsyncPath(dirname(file));
  return { ...scan, file, droppedBytes, damagedCopy: copy };
}

/** A put line of a compacted log that a repair left out (docs/storage.md#damaged-compacted-logs). */
export interface SkippedLine { line: number; offset: number; reason: string }

/**
 * The whole operations of an incomplete put line `buf[start, end)` (`<crc> [op,op,…` cut short):
 * a truncation, not damage, so each `["p",type,id,value]` before the cut is kept unchecked.
 */
function wholeOps(buf: Buffer, start: number, end: number): string[] {
  const ops: string[] = [];
  let i = start + 9;
  if (buf[i++] !== 0x5b) return ops;
  for (;;) {
    if (buf[i] !== 0x5b) return ops;
    const from = i;
    let depth = 0;
    let inString = false;
    for (; i < end; i++) {
      const c = buf[i];
      if (inString) { if (c === 0x5c) i++; else if (c === 0x22) inString = false; continue; }
      if (c === 0x22) inString = true;
      else if (c === 0x5b || c === 0x7b) depth++;
      else if ((c === 0x5d || c === 0x7d) && --depth === 0) break;
    }
    if (i >= end) return ops;
    const text = buf.toString('utf8', from, ++i);
    try {
      const op = JSON.parse(text) as unknown;
      if (!Array.isArray(op) || op[0] !== 'p' || op.length !== 4) return ops;
    } catch { return ops; }
    ops.push(text);
    if (buf[i] !== 0x2c) return ops;
    i++;
  }
}

/**
 * Repairs a compacted log (docs/storage.md#damaged-compacted-logs), whose put lines are independent:
 * writes beside it every sound put line (naming the bad ones) and the whole operations of an
 * incomplete last one, leaves out the head line and the snapshot block, then the lines after the
 * block up to the first bad transaction, as {@link scanLog} keeps them. The result replaces `file`
 * by a rename once fsync'd, after a copy `<file>.damaged-<now>` is kept. Null when not compacted.
 * @throws fs errors with the log unchanged.
 */
function repairCompacted(file: string, now: number): RepairResult | null {
  const fd = fs.openSync(file, 'r');
  const kept: Buffer[] = [];
  let result: RepairResult;
  try {
    const size = fs.fstatSync(fd).size;
    const head = readCompactedHead(fd, size);
    if (head === null) return null;
    const skipped: SkippedLine[] = [];
    const r: RepairResult = {
      size, goodLines: 0, goodBytes: 0, droppedLines: 0, droppedValidLines: 0,
      file, droppedBytes: 0, damagedCopy: null, skippedLines: skipped,
    };
    const txs = new Transactions();
    let held: Buffer[] = [];
    let tailBad = false;
    const keep = (b: Buffer) => { kept.push(Buffer.from(b)); r.goodLines++; r.goodBytes += b.length; };
    const end = eachLine(fd, size, (buf, start, stop, offset, lineNo) => {
      const bytes = buf.subarray(start, stop + 1);
      const c = checkLine(buf, start, stop);
      if (lineNo === 1) return true; // the head line
      if (offset < head.block) {
        if (c.reason !== undefined || !Array.isArray(c.value)) {
          skipped.push({ line: lineNo, offset, reason: c.reason ?? 'not a line of operations' });
          r.firstBad ??= skipped[0];
          r.droppedLines++;
        } else keep(bytes);
        return true;
      }
      // The block's lines: left out.
      const blockLine = c.reason === undefined ? isSnapshotLine(c.value) : looksLikeSnapshotLine(buf, start, stop);
      if (offset <= head.end && txs.open === null && blockLine) return true;
      if (tailBad) { r.droppedLines++; if (c.reason === undefined) r.droppedValidLines++; return true; }
      const t = c.reason === undefined ? txs.take(c.value!, lineNo, offset) : { reason: c.reason, tx: undefined };
      if (t.reason !== undefined) {
        tailBad = true;
        r.firstBad ??= { line: lineNo, offset, reason: t.reason };
        r.droppedLines += held.length + 1;
        r.droppedValidLines += held.length;
        held = [];
      } else if (txs.open !== null) held.push(Buffer.from(bytes));
      else if (t.tx !== undefined) { for (const h of held) keep(h); held = []; keep(bytes); }
      return true; // (a snapshot line outside a frame is left out)
    });
    r.droppedLines += held.length;
    r.droppedValidLines += held.length;
    if (end < size) {
      r.droppedLines++;
      if (end < head.block) {
        // Cut inside the put lines: the incomplete line's whole operations are kept.
        const rest = Buffer.allocUnsafe(size - end);
        fs.readSync(fd, rest, 0, rest.length, end);
        const ops = wholeOps(rest, 0, rest.length);
        if (ops.length > 0) { keep(encodeLine(`[${ops.join(',')}]`)); r.salvagedOps = ops.length; }
      }
    }
    r.droppedBytes = size - r.goodBytes;
    if (skipped.length === 0 && !tailBad && held.length === 0 && end === size) return r; // nothing to repair
    result = r;
  } finally {
    fs.closeSync(fd);
  }
  const copy = keepDamagedCopy(file, now);
  const tmp = `${file}.repair-${now}`;
  const out = fs.openSync(tmp, 'w', 0o600);
  try {
    for (const b of kept) fs.writeSync(out, b);
    fs.fsyncSync(out);
  } finally { fs.closeSync(out); }
  fs.renameSync(tmp, file);
  fsyncPath(dirname(file));
  return { ...result, damagedCopy: copy };
}

/** Copies `file` to `<file>.damaged-<now>` (mode 0600, never over an existing file), fsync'd; returns its path. */
function keepDamagedCopy(file: string, now: number): string {
  const copy = `${file}.damaged-${now}`;
  fs.copyFileSync(file, copy, fs.constants.COPYFILE_EXCL);
  fs.chmodSync(copy, 0o600);
  fsyncPath(copy);
  return copy;
}

/** fsyncs the file or folder at `path`. */
function fsyncPath(path: string): void {
  const fd = fs.openSync(path, 'r');
  try { fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
}
