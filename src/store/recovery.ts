/**
 * Replaying a log at start (DESIGN §7, issue #2 point 4): every line is checked against its
 * crc32 and parsed; a torn last line is cut off (and kept aside in a `.corrupt-<time>` file);
 * any other bad line stops the start with file, line number and byte offset.
 */
import * as fs from 'node:fs';
import { crc32 } from 'node:zlib';

/** A bad line that is not the torn tail: the start must stop. */
export class CorruptLogError extends Error {
  constructor(readonly file: string, readonly line: number, readonly offset: number, reason: string) {
    super(`${file}: line ${line} (byte offset ${offset}) is corrupt: ${reason}; refusing to start (restore the file from a backup, or cut the log at that line to accept losing what follows)`);
    this.name = 'CorruptLogError';
  }
}

export interface ReplayResult {
  /** Bytes of valid log (the file is truncated to this when the tail was torn). */
  size: number;
  /** Lines replayed. */
  lines: number;
  /** The `.corrupt-*` file the torn tail was moved to, if any. */
  tornTailSavedTo?: string;
}

const CHUNK = 4 * 1024 * 1024;

function checkLine(buf: Buffer, start: number, end: number): { value?: unknown; reason?: string } {
  if (end - start < 10 || buf[start + 8] !== 0x20) return { reason: 'missing checksum' };
  // The 8 hex digits are read from the bytes: no string, no regex per line (a start replays millions).
  let want = 0;
  for (let i = start; i < start + 8; i++) {
    const c = buf[i];
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
    if (d < 0) return { reason: 'malformed checksum' };
    want = want * 16 + d;
  }
  const body = buf.subarray(start + 9, end);
  if ((crc32(body) >>> 0) !== want) return { reason: 'checksum mismatch' };
  try {
    return { value: JSON.parse(body.toString('utf8')) };
  } catch {
    return { reason: 'checksum matches but the JSON does not parse' };
  }
}

/**
 * Reads `file` line by line in 4 MiB chunks and calls `apply` with each transaction's parsed
 * JSON. A missing file replays as empty. `now` names the `.corrupt-*` file.
 * @throws CorruptLogError for a bad line that is not the last one; errors of `apply` propagate.
 */
export function replayLog(file: string, apply: (tx: unknown, line: number) => void, now: number = Date.now()): ReplayResult {
  let fd: number;
  try { fd = fs.openSync(file, 'r+'); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { size: 0, lines: 0 };
    throw e;
  }
  try {
    const total = fs.fstatSync(fd).size;
    let buf = Buffer.allocUnsafe(CHUNK);
    let filled = 0; // bytes of buf holding data
    let fileOffset = 0; // file offset of buf[0]
    let readPos = 0;
    let lineNo = 0;
    let good = 0;
    let pendingBad: { line: number; offset: number; reason: string } | null = null;
    for (;;) {
      if (filled === buf.length) { const bigger = Buffer.allocUnsafe(buf.length * 2); buf.copy(bigger, 0, 0, filled); buf = bigger; }
      const n = readPos < total ? fs.readSync(fd, buf, filled, buf.length - filled, readPos) : 0;
      readPos += n;
      filled += n;
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(0x0a, start);
        if (nl === -1 || nl >= filled) break;
        lineNo++;
        if (pendingBad) throw new CorruptLogError(file, pendingBad.line, pendingBad.offset, pendingBad.reason);
        const r = checkLine(buf, start, nl);
        if (r.reason) pendingBad = { line: lineNo, offset: fileOffset + start, reason: r.reason };
        else { apply(r.value, lineNo); good++; }
        start = nl + 1;
      }
      if (n === 0) {
        // End of file: what is left has no newline, so it is a torn tail; a bad final line
        // (with its newline) is a torn tail too. Both are set aside and cut off.
        let validEnd = fileOffset + start;
        if (pendingBad) {
          if (start < filled) throw new CorruptLogError(file, pendingBad.line, pendingBad.offset, pendingBad.reason);
          validEnd = pendingBad.offset;
        }
        if (validEnd < total) {
          const saved = `${file}.corrupt-${now}`;
          const tail = Buffer.allocUnsafe(total - validEnd);
          fs.readSync(fd, tail, 0, tail.length, validEnd);
          fs.writeFileSync(saved, tail, { mode: 0o600 });
          fs.ftruncateSync(fd, validEnd);
          fs.fsyncSync(fd);
          return { size: validEnd, lines: good, tornTailSavedTo: saved };
        }
        return { size: total, lines: good };
      }
      buf.copy(buf, 0, start, filled);
      fileOffset += start;
      filled -= start;
    }
  } finally {
    fs.closeSync(fd);
  }
}
