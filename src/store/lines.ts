/**
 * The log's line format (docs/storage.md#line-format, docs/storage.md#frames): a line is
 * `<crc32 of the JSON bytes, 8 lowercase hex> <JSON>\n`; a transaction is one line when its
 * operations fit in {@link LINE_BYTES}, else a frame — a begin marker, lines of operations, a
 * commit marker. Encoding only: writing them is src/store/log.ts, reading them
 * src/store/recovery.ts.
 */
import { crc32 } from 'node:zlib';

/**
 * JSON text, whole or in pieces to be joined: strings, and UTF-8 bytes made elsewhere (a worker
 * thread serialized a large value, so the main thread only copies its bytes into the line).
 */
export type JsonText = string | Uint8Array | ReadonlyArray<string | Uint8Array>;

/**
 * Encodes one transaction's JSON text as a log line: `json`'s pieces are written straight into
 * the line, one after the other (no intermediate string or copy: a pasted source makes 2 MB lines).
 */
export function encodeLine(json: JsonText): Buffer {
  const pieces: ReadonlyArray<string | Uint8Array> = typeof json === 'string' || json instanceof Uint8Array ? [json] : json;
  let n = 0;
  for (const p of pieces) n += typeof p === 'string' ? Buffer.byteLength(p, 'utf8') : p.byteLength;
  const line = Buffer.allocUnsafe(n + 10);
  let at = 9;
  for (const p of pieces) {
    if (typeof p === 'string') at += line.write(p, at, 'utf8');
    else { line.set(p, at); at += p.byteLength; }
  }
  line.write((crc32(line.subarray(9, 9 + n)) >>> 0).toString(16).padStart(8, '0'), 0, 'latin1');
  line[8] = 0x20;
  line[line.length - 1] = 0x0a;
  return line;
}

/**
 * One transaction's line as the parts to be written one after the other: the `<crc32> ` head,
 * the JSON text's pieces as bytes (a worker-made piece is used as it is, never copied), and the
 * closing line feed. For a line whose JSON text came from a worker: the main thread neither
 * joins nor copies its megabytes (a 2 MB copy into fresh memory costs ~10 ms on a virtual
 * machine, most of it page faults).
 */
export function encodeLineParts(json: JsonText): Buffer[] {
  if (typeof json === 'string') return [encodeLine(json)];
  const pieces: ReadonlyArray<string | Uint8Array> = json instanceof Uint8Array ? [json] : json;
  const parts: Buffer[] = [Buffer.allocUnsafe(9)];
  let crc = 0;
  for (const p of pieces) {
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
 * The longest line a transaction is written in, in bytes (checksum, space and newline
 * included): a transaction whose operations do not fit in one line of this size is written as
 * a frame of lines that each fit — except a single operation larger than this, which is a line
 * of its own (a pasted 2 MB source is one record). Compaction's lines keep to it too
 * (docs/storage.md#frames). `Db`'s `lineBytes` option overrides it (tests).
 */
export const LINE_BYTES = 1024 * 1024;

/**
 * A frame marker line's JSON (docs/storage.md#frames): `{"frame":"begin"|"commit","lines":L,"ops":N}`,
 * L the lines of operations between the markers, N the operations in them. A JSON object, so it
 * can never be taken for a line of operations (a JSON array).
 */
export interface FrameMarker { readonly frame: 'begin' | 'commit'; readonly lines: number; readonly ops: number }

/** The bytes a line adds around its JSON: 8 hex digits of checksum, a space, a newline. */
const LINE_OVERHEAD = 10;

/** UTF-8 bytes of a JSON text, whole or in pieces. */
export function jsonBytes(json: JsonText): number {
  if (typeof json === 'string') return Buffer.byteLength(json, 'utf8');
  if (json instanceof Uint8Array) return json.byteLength;
  let n = 0;
  for (const p of json) n += typeof p === 'string' ? Buffer.byteLength(p, 'utf8') : p.byteLength;
  return n;
}

/**
 * Packs operations' JSON texts into lines of at most `lineBytes` bytes each (checksum and
 * newline included): `[op,op,…]`, in order. An operation too large for a line alone is a line
 * of its own. Give each operation with {@link add}, then {@link finish}; each call returns the
 * lines it closed, encoded ({@link encodeLine}, or {@link encodeLineParts} when a line holds
 * bytes made elsewhere, so that they are written from where they are, never copied).
 */
export class LinePacker {
  private pieces: Array<string | Uint8Array> = [];
  /** The open line's JSON so far, as one string while it holds no bytes made elsewhere. */
  private text = '';
  private bytes = 0;
  private count = 0;
  constructor(private readonly lineBytes: number = LINE_BYTES) {}

  /**
   * Adds one operation's JSON text (`bytes`: its UTF-8 length, {@link jsonBytes}); returns the
   * line it closed to make room, if any.
   */
  add(json: JsonText, bytes: number): Buffer | Buffer[] | undefined {
    let closed: Buffer | Buffer[] | undefined;
    if (this.count > 0 && LINE_OVERHEAD + 2 + this.bytes + 1 + bytes > this.lineBytes) closed = this.close();
    if (this.count > 0) { this.text += ','; this.bytes++; }
    if (typeof json === 'string') this.text += json;
    else {
      const pieces = json instanceof Uint8Array ? [json] : json;
      for (const p of pieces) {
        if (typeof p === 'string') this.text += p;
        else { this.pieces.push(this.text, p); this.text = ''; }
      }
    }
    this.bytes += bytes;
    this.count++;
    return closed;
  }

  /** Closes the open line, if it holds any operation, and returns it. */
  finish(): Buffer | Buffer[] | undefined {
    return this.count > 0 ? this.close() : undefined;
  }

  private close(): Buffer | Buffer[] {
    const line = this.pieces.length === 0 ? encodeLine(`[${this.text}]`) : encodeLineParts(['[', ...this.pieces.filter((p) => p !== ''), `${this.text}]`]);
    this.pieces = [];
    this.text = '';
    this.bytes = 0;
    this.count = 0;
    return line;
  }
}

/**
 * Encodes one transaction, given as its operations' JSON texts (each `["p",type,id,record]` or
 * `["d",type,id]`), as the lines it is written in (docs/storage.md#frames): one line
 * `[op,…]` when it fits in `lineBytes`; else a frame — a begin marker, lines of operations each
 * within `lineBytes` (a larger single operation alone on its line), a commit marker.
 * @returns the lines in order, each a Buffer or the parts of one (see {@link encodeLineParts});
 *   none for no operations.
 */
export function encodeTransaction(ops: ReadonlyArray<JsonText>, lineBytes: number = LINE_BYTES): Array<Buffer | Buffer[]> {
  const packer = new LinePacker(lineBytes);
  const lines: Array<Buffer | Buffer[]> = [];
  for (const op of ops) {
    const closed = packer.add(op, jsonBytes(op));
    if (closed !== undefined) lines.push(closed);
  }
  const last = packer.finish();
  if (last !== undefined) lines.push(last);
  if (lines.length <= 1) return lines;
  const marker = (frame: FrameMarker['frame']) => encodeLine(JSON.stringify({ frame, lines: lines.length, ops: ops.length } satisfies FrameMarker));
  return [marker('begin'), ...lines, marker('commit')];
}
