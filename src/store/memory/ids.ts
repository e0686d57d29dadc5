/**
 * The ids of the records a snapshot block holds, one list per record type (docs/storage.md#snapshots).
 * Ids of one length in plain ASCII (UUIDs, dates) are kept *packed*, one after the other: 36
 * bytes an id instead of a string of its own (~56 bytes and a pointer). Others keep an array.
 */

/** A list of ids by position. */
export interface IdList {
  readonly length: number;
  /** The id at position `i` (0 ≤ i < length). */
  at(i: number): string;
  /** How the id at position `i` compares with `id`, as strings compare: negative, 0 or positive. */
  compare(i: number, id: string): number;
  /** How the ids at positions `i` and `j` compare, likewise. */
  compareAt(i: number, j: number): number;
}

/** Ids in an array of strings. */
export class ArrayIds implements IdList {
  constructor(private readonly ids: readonly string[]) {}
  get length(): number { return this.ids.length; }
  at(i: number): string { return this.ids[i]; }
  compare(i: number, id: string): number { const k = this.ids[i]; return k < id ? -1 : k > id ? 1 : 0; }
  compareAt(i: number, j: number): number { return this.compare(i, this.ids[j]); }
}

/** Ids of one width, packed as ASCII bytes in Buffers of at most 2^30 bytes (outside V8's heap). */
export class PackedIds implements IdList {
  private readonly bufs: Buffer[] = [];
  private readonly perBuf: number;
  private last: Buffer;
  private used = 0;
  /** Ids added so far. */
  length = 0;

  /** An empty list of ids of `width` characters, with room for about `expect` of them. */
  constructor(private readonly width: number, expect = 1024) {
    if (!(width >= 1 && width <= 64)) throw new Error('a packed id list needs a width from 1 to 64');
    this.perBuf = Math.floor((1 << 30) / width);
    this.last = Buffer.allocUnsafeSlow(Math.min(this.perBuf, Math.max(16, expect)) * width);
  }

  /**
   * Adds the ids in `src[start, end)` (ASCII, `width` bytes each, one after the other).
   * @throws Error when the range is not a whole number of ids.
   */
  add(src: Buffer, start: number, end: number): void {
    const w = this.width;
    if ((end - start) % w !== 0) throw new Error('packed ids do not divide by their width');
    while (start < end) {
      if (this.used === this.perBuf * w) { this.bufs.push(this.last); this.last =
        Buffer.allocUnsafeSlow(Math.min(this.perBuf, Math.max(16, (end - start) / w)) * w); this.used = 0; }
      const room = this.perBuf * w - this.used;
      if (this.last.length - this.used < Math.min(room, end - start)) {
        const bigger = Buffer.allocUnsafeSlow(Math.min(this.perBuf * w, Math.max(this.last.length * 2, this.used + (
          end - start))));
        this.last.copy(bigger, 0, 0, this.used);
        this.last = bigger;
      }
      const n = Math.min(room, end - start);
      src.copy(this.last, this.used, start, start + n);
      this.used += n;
      start += n;
      this.length += n / w;
    }
  }

  /** The buffer holding id `i`. */
  private buf(i: number): Buffer {
    const b = (i / this.perBuf) | 0;
    return b === this.bufs.length ? this.last : this.bufs[b];
  }

  /** The offset of id `i` in {@link buf}. */
  private off(i: number): number { return (i % this.perBuf) * this.width; }

  at(i: number): string {
    const o = this.off(i);
    return this.buf(i).toString('latin1', o, o + this.width);
  }

  compare(i: number, id: string): number {
    const w = this.width;
    const buf = this.buf(i);
    const o = this.off(i);
    // The packed ids are ASCII: a byte is the UTF-16 code unit of its character.
    const n = Math.min(w, id.length);
    for (let k = 0; k < n; k++) {
      const d = buf[o + k] - id.charCodeAt(k);
      if (d !== 0) return d;
    }
    return w - id.length;
  }

  compareAt(i: number, j: number): number {
    const a = this.buf(i);
    const b = this.buf(j);
    const oa = this.off(i);
    const ob = this.off(j);
    for (let k = 0; k < this.width; k++) {
      const d = a[oa + k] - b[ob + k];
      if (d !== 0) return d;
    }
    return 0;
  }
}

/**
 * Whether `ids[from, to)` can be packed: all of one length (returned), and every character
 * printable ASCII but `"` and `\` (so that their JSON text is the characters themselves); else 0.
 */
export function packableWidth(ids: readonly string[], from = 0, to = ids.length): number {
  if (to <= from) return 0;
  const w = ids[from].length;
  if (w === 0 || w > 64) return 0;
  for (let j = from; j < to; j++) {
    const id = ids[j];
    if (id.length !== w) return 0;
    for (let i = 0; i < w; i++) {
      const c = id.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return 0;
    }
  }
  return w;
}
