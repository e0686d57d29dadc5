/**
 * The ids of the records a snapshot block holds, one list per record type
 * (docs/storage.md#snapshots). A type whose ids all have the same length and are plain ASCII
 * (UUIDs, dates) keeps them *packed*: a few long strings of ids one after the other, 36 bytes
 * an id instead of a string of its own (~56 bytes and a pointer); {@link IdList.at} slices one
 * out when it is read (a V8 sliced string: no copy). Other types keep an array of strings.
 */

/** A list of ids by position. */
export interface IdList {
  readonly length: number;
  /** The id at position `i` (0 ≤ i < length). */
  at(i: number): string;
  /** How the id at position `i` compares with `id` (as JavaScript compares strings): negative, 0 or positive. No string is made. */
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

/** Node's own Latin-1 decoder of a Buffer range, without `toString`'s argument checks. */
type Slice = (this: Buffer, start: number, end: number) => string;
const latin1Slice: Slice = (Buffer.prototype as unknown as { latin1Slice?: Slice }).latin1Slice
  ?? function (this: Buffer, start: number, end: number) { return this.toString('latin1', start, end); };

/**
 * Ids of one width, packed as ASCII bytes one after the other in Buffers of at most 2^30 bytes
 * (outside V8's heap); {@link at} makes the string of one when it is read.
 */
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
      if (this.used === this.perBuf * w) { this.bufs.push(this.last); this.last = Buffer.allocUnsafeSlow(Math.min(this.perBuf, Math.max(16, (end - start) / w)) * w); this.used = 0; }
      const room = this.perBuf * w - this.used;
      if (this.last.length - this.used < Math.min(room, end - start)) {
        const bigger = Buffer.allocUnsafeSlow(Math.min(this.perBuf * w, Math.max(this.last.length * 2, this.used + (end - start))));
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

  at(i: number): string {
    const per = this.perBuf;
    const b = (i / per) | 0;
    const o = (i - b * per) * this.width;
    return latin1Slice.call(b === this.bufs.length ? this.last : this.bufs[b], o, o + this.width);
  }

  compare(i: number, id: string): number {
    const per = this.perBuf;
    const b = (i / per) | 0;
    const w = this.width;
    const o = (i - b * per) * w;
    const buf = b === this.bufs.length ? this.last : this.bufs[b];
    // The packed ids are ASCII: a byte is the UTF-16 code unit of its character.
    const n = Math.min(w, id.length);
    for (let k = 0; k < n; k++) {
      const d = buf[o + k] - id.charCodeAt(k);
      if (d !== 0) return d;
    }
    return w - id.length;
  }

  compareAt(i: number, j: number): number {
    const per = this.perBuf;
    const w = this.width;
    const bi = (i / per) | 0;
    const bj = (j / per) | 0;
    const a = bi === this.bufs.length ? this.last : this.bufs[bi];
    const b = bj === this.bufs.length ? this.last : this.bufs[bj];
    const oa = (i - bi * per) * w;
    const ob = (j - bj * per) * w;
    for (let k = 0; k < w; k++) {
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
