/**
 * The log's line format (docs/storage.md#line-format, docs/storage.md#frames): a line is
 * `<crc32 of the JSON bytes, 8 lowercase hex> <JSON>\n`; a transaction is one line when its
 * operations fit in {@link LINE_BYTES}, else a frame — a begin marker, lines of operations, a
 * commit marker. Encoding only: writing them is src/store/log/log.ts, reading them
 * src/store/log/recovery.ts.
 */
import { crc32 } from 'node:zlib';

/**
 * JSON text, whole or in pieces to be joined: strings, and UTF-8 bytes made elsewhere (a worker
 * thread serialized a large value, so the main thread only copies its bytes into the line).
 */
export type JsonText = string | Uint8Array | ReadonlyArray<string | Uint8Array>;

/** `json`'s pieces. */
const piecesOf = (json: JsonText): ReadonlyArray<string | Uint8Array> =>
  typeof json === 'string' || json instanceof Uint8Array ? [json] : json;

/**
 * Encodes one transaction's JSON text as a log line, its pieces written straight into the line
 * (no intermediate string or copy: a pasted source makes 2 MB lines).
 */
export function encodeLine(json: JsonText): Buffer {
  const n = jsonBytes(json);
  const line = Buffer.allocUnsafe(n + LINE_OVERHEAD);
  let at = 9;
  for (const p of piecesOf(json)) {
    if (typeof p === 'string') at += line.write(p, at, 'utf8');
    else { line.set(p, at); at += p.byteLength; }
  }
  writeCrc(line, 0, 9, 9 + n);
  line[8] = 0x20;
  line[line.length - 1] = 0x0a;
  return line;
}

/** The CRC-32 of `buf[start, end)` as 8 lower-case hex digits, written at `buf[at]`. */
export function writeCrc(buf: Buffer, at: number, start: number, end: number): void {
  buf.write((crc32(buf.subarray(start, end)) >>> 0).toString(16).padStart(8, '0'), at, 'latin1');
}

/**
 * One transaction's line as parts to be written one after the other: the `<crc32> ` head, the
 * JSON text's pieces as bytes (a worker-made piece used as it is: a 2 MB copy into fresh memory
 * costs ~10 ms on a virtual machine), and the closing line feed.
 */
export function encodeLineParts(json: JsonText): Buffer[] {
  if (typeof json === 'string') return [encodeLine(json)];
  const parts: Buffer[] = [Buffer.allocUnsafe(9)];
  let crc = 0;
  for (const p of piecesOf(json)) {
    const b = typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p.buffer, p.byteOffset, p.byteLength);
    crc = crc32(b, crc);
    parts.push(b);
  }
  parts[0].write((crc >>> 0).toString(16).padStart(8, '0'), 0, 'latin1');
  parts[0][8] = 0x20;
  parts.push(Buffer.from([0x0a]));
  return parts;
}

/**
 * The longest line a transaction is written in, in bytes (checksum, space and newline included):
 * a transaction that does not fit is a frame of lines that do, but a single larger operation is a
 * line of its own. Compaction's lines keep to it too (docs/storage.md#frames); `DbOptions.lineBytes`
 * overrides it (tests).
 */
export const LINE_BYTES = 1024 * 1024;

/**
 * A frame marker line's JSON (docs/storage.md#frames): `{"frame":"begin"|"commit","lines":L,"ops":N}`,
 * L the lines of operations between the markers, N the operations in them (an object: never a line of operations).
 */
export interface FrameMarker { readonly frame: 'begin' | 'commit'; readonly lines: number; readonly ops: number }

/** The bytes a line adds around its JSON: 8 hex digits of checksum, a space, a newline. */
const LINE_OVERHEAD = 10;

/** UTF-8 bytes of a JSON text, whole or in pieces. */
export function jsonBytes(json: JsonText): number {
  let n = 0;
  for (const p of piecesOf(json)) n += typeof p === 'string' ? Buffer.byteLength(p, 'utf8') : p.byteLength;
  return n;
}

/**
 * Encodes one transaction, given as its operations' JSON texts (each `["p",type,id,record]` or
 * `["d",type,id]`), as the lines it is written in (docs/storage.md#frames): one line `[op,…]` when
 * it fits in `lineBytes`; else a frame — a begin marker, lines of operations each within
 * `lineBytes` (a larger single operation alone on its line), a commit marker. A line that holds
 * bytes made elsewhere is its parts ({@link encodeLineParts}), so they are never copied.
 * @returns the lines in order, each a Buffer or the parts of one; none for no operations.
 */
export function encodeTransaction(ops: ReadonlyArray<JsonText>, lineBytes: number =
  LINE_BYTES): Array<Buffer | Buffer[]> {
  const lines: Array<Buffer | Buffer[]> = [];
  /** The open line: its pieces of bytes made elsewhere, the JSON since as one string, its size. */
  let pieces: Array<string | Uint8Array> = [];
  let text = '';
  let bytes = 0;
  let count = 0;
  const close = () => {
    lines.push(pieces.length === 0 ? encodeLine(`[${text}]`) : encodeLineParts(
      ['[', ...pieces.filter((p) => p !== ''), `${text}]`]));
    pieces = [];
    text = '';
    bytes = 0;
    count = 0;
  };
  for (const op of ops) {
    const opBytes = jsonBytes(op);
    if (count > 0 && LINE_OVERHEAD + 2 + bytes + 1 + opBytes > lineBytes) close();
    if (count > 0) { text += ','; bytes++; }
    for (const p of piecesOf(op)) {
      if (typeof p === 'string') text += p;
      else { pieces.push(text, p); text = ''; }
    }
    bytes += opBytes;
    count++;
  }
  if (count > 0) close();
  if (lines.length <= 1) return lines;
  const marker = (frame: FrameMarker['frame']) => encodeLine(JSON.stringify({ frame, lines: lines.length,
    ops: ops.length } satisfies FrameMarker));
  return [marker('begin'), ...lines, marker('commit')];
}
