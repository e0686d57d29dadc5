/**
 * The bytes of records held as bytes once written (docs/storage.md#memory): a record of a type
 * declared with `Db.holdAsBytes` leaves memory as an object once its transaction is on disk, and
 * stays here as the JSON text its log line holds, until it is overwritten, deleted or dropped.
 *
 * An append-only arena of chunks: `Buffer`s of {@link CHUNK_BYTES} filled one record after the
 * other (a record longer than a chunk gets a chunk of its own). A record is named by a *cold
 * ref*: a small whole number, the index of a slot of three typed arrays (chunk, offset, length)
 * — no JavaScript object per record. Freed slots are reused.
 *
 * Each chunk counts its live bytes. A chunk whose records are all dead is released at once (the
 * chunk being filled is rewound instead). When the chunks hold more than twice the live bytes
 * plus two chunks, the live records of the chunks less than half live are moved to the chunk
 * being filled and those chunks released: a ref names a slot, not a place, so a move changes no
 * table. So the chunks hold at most twice the live bytes plus three chunks (the two of slack, and
 * one chunk opened since the last check), whatever the order records die in; the bytes moved are
 * never more than the dead bytes released with them.
 *
 * While a compaction reads refs it captured ({@link pin}), frees wait: a slot a compaction will
 * read is neither reused nor moved until {@link unpin}.
 */
import { jsonBytes, type JsonText } from './log.js';

/** The size of a chunk: large enough to hold hundreds of records, small enough to be released soon. */
export const CHUNK_BYTES = 1024 * 1024;

/** A slot's chunk when the slot is free. */
const FREE = 0xffffffff;

/** Node's own UTF-8 decoder of a Buffer range, without `toString`'s argument checks. */
type Utf8Slice = (this: Buffer, start: number, end: number) => string;
const utf8Slice: Utf8Slice = (Buffer.prototype as unknown as { utf8Slice?: Utf8Slice }).utf8Slice
  ?? function (this: Buffer, start: number, end: number) { return this.toString('utf8', start, end); };

/** What the arena holds (tests, the memory script, docs/storage.md#memory). */
export interface ArenaStats {
  /** Refs in use. */
  refs: number;
  /** Bytes of the records in use. */
  liveBytes: number;
  /** Chunks held, and their bytes. */
  chunks: number;
  chunkBytes: number;
  /** Bytes of the slot arrays (their capacity). */
  slotBytes: number;
}

export class ByteArena {
  private readonly chunks: Array<Buffer | null> = [];
  /** Live bytes per chunk index (its records not freed). */
  private chunkLive: number[] = [];
  /** Indexes of released chunks, for reuse. */
  private readonly freeChunks: number[] = [];
  /** The chunk being filled (-1: none yet), and how far. */
  private open = -1;
  private openUsed = 0;

  private chunkOf = new Uint32Array(1024);
  private offsetOf = new Uint32Array(1024);
  private lengthOf = new Uint32Array(1024);
  /** Slots ever used: 0…slots-1. */
  private slots = 0;
  /** Free slots, a stack. */
  private freeSlots = new Uint32Array(1024);
  private freeCount = 0;

  private liveBytes = 0;
  private heldBytes = 0;
  private refCount = 0;

  /** Compactions reading captured refs; frees wait while any does. */
  private pins = 0;
  private deferred: number[] = [];

  /** @param chunkBytes the size of a chunk (tests make it small); at least 16. */
  constructor(private readonly chunkBytes: number = CHUNK_BYTES) {
    if (!(chunkBytes >= 16 && chunkBytes <= 0x7fffffff)) throw new RangeError(`a chunk of ${chunkBytes} bytes`);
  }

  /**
   * Copies `text` (a JSON text, whole or in pieces, as a log line holds it) in; returns its ref.
   * @throws RangeError for an empty text, or one of 4 GiB or more.
   */
  add(text: JsonText): number {
    // A string that surely fits (3 UTF-8 bytes at most per UTF-16 unit) is written without measuring it first.
    if (typeof text === 'string' && this.open >= 0 && this.openUsed + text.length * 3 <= this.chunkBytes) {
      const buf = this.chunks[this.open]!;
      const n = buf.write(text, this.openUsed, 'utf8');
      if (n === 0) throw new RangeError('an empty record');
      return this.slot(this.open, this.openUsedThen(n), n);
    }
    const n = jsonBytes(text);
    if (n === 0) throw new RangeError('an empty record');
    if (n > 0xfffffffe) throw new RangeError(`a record of ${n} bytes`);
    const [c, off] = this.place(n);
    const buf = this.chunks[c]!;
    let at = off;
    for (const p of typeof text === 'string' || text instanceof Uint8Array ? [text] : text) {
      if (typeof p === 'string') at += buf.write(p, at, 'utf8');
      else { buf.set(p, at); at += p.byteLength; }
    }
    return this.slot(c, off, n);
  }

  /** The byte length of ref `ref`'s text. */
  length(ref: number): number { return this.lengthOf[ref]; }

  /** Copies ref `ref`'s bytes into `dst` at `at` (room must be there). */
  copyTo(ref: number, dst: Buffer, at: number): void {
    const off = this.offsetOf[ref];
    this.chunks[this.chunkOf[ref]]!.copy(dst, at, off, off + this.lengthOf[ref]);
  }

  /** Ref `ref`'s JSON text, decoded. */
  text(ref: number): string {
    const off = this.offsetOf[ref];
    return utf8Slice.call(this.chunks[this.chunkOf[ref]]!, off, off + this.lengthOf[ref]);
  }

  /** Ref `ref`'s record, parsed (a new object each call). */
  parse(ref: number): object { return JSON.parse(this.text(ref)) as object; }

  /**
   * Frees ref `ref` (its record was overwritten, deleted or dropped): its bytes are dead, its
   * chunk released once none of its bytes is live. While {@link pin}ned, the free waits.
   * @throws Error for a ref that is not in use.
   */
  free(ref: number): void {
    if (!(ref < this.slots) || this.chunkOf[ref] === FREE) throw new Error(`cold ref ${ref} is not in use`);
    if (this.pins > 0) { this.deferred.push(ref); return; }
    this.release(ref);
    this.tidy();
  }

  /** Frees wait until the matching {@link unpin}: a compaction reads the refs it captured meanwhile. */
  pin(): void { this.pins++; }

  /** Ends a {@link pin}; the last one applies the frees that waited. */
  unpin(): void {
    if (this.pins === 0) throw new Error('the arena is not pinned');
    if (--this.pins > 0) return;
    const waited = this.deferred;
    this.deferred = [];
    for (const ref of waited) this.release(ref);
    this.tidy();
  }

  /** What the arena holds now. */
  stats(): ArenaStats {
    const cap = this.chunkOf.length;
    return {
      refs: this.refCount, liveBytes: this.liveBytes, chunks: this.chunks.length - this.freeChunks.length,
      chunkBytes: this.heldBytes, slotBytes: cap * 12 + this.freeSlots.length * 4,
    };
  }

  /** Advances the open chunk past `n` bytes just written at its end; returns where they began. */
  private openUsedThen(n: number): number {
    const off = this.openUsed;
    this.openUsed += n;
    this.chunkLive[this.open] += n;
    return off;
  }

  /** Room for `n` bytes: (chunk, offset), counted live. A new chunk may be opened. */
  private place(n: number): [number, number] {
    if (n > this.chunkBytes) {
      const c = this.newChunk(n);
      this.chunkLive[c] = n;
      return [c, 0];
    }
    if (this.open < 0 || this.openUsed + n > this.chunkBytes) {
      // The chunk being filled is sealed (released now when nothing in it is live) and another opened.
      const sealed = this.open;
      this.open = this.newChunk(this.chunkBytes);
      this.openUsed = 0;
      if (sealed >= 0 && this.chunkLive[sealed] === 0) this.dropChunk(sealed);
    }
    return [this.open, this.openUsedThen(n)];
  }

  private newChunk(size: number): number {
    const buf = Buffer.allocUnsafeSlow(size);
    this.heldBytes += size;
    const c = this.freeChunks.pop();
    if (c !== undefined) { this.chunks[c] = buf; this.chunkLive[c] = 0; return c; }
    this.chunks.push(buf);
    this.chunkLive.push(0);
    return this.chunks.length - 1;
  }

  private dropChunk(c: number): void {
    this.heldBytes -= this.chunks[c]!.length;
    this.chunks[c] = null;
    this.freeChunks.push(c);
  }

  /** A slot for (chunk, offset, length), the bytes counted live already. */
  private slot(c: number, off: number, n: number): number {
    let ref: number;
    if (this.freeCount > 0) ref = this.freeSlots[--this.freeCount];
    else {
      if (this.slots === this.chunkOf.length) this.grow();
      ref = this.slots++;
    }
    this.chunkOf[ref] = c;
    this.offsetOf[ref] = off;
    this.lengthOf[ref] = n;
    this.liveBytes += n;
    this.refCount++;
    return ref;
  }

  private grow(): void {
    const cap = this.chunkOf.length * 2;
    const more = (a: Uint32Array) => { const b = new Uint32Array(cap); b.set(a); return b; };
    this.chunkOf = more(this.chunkOf);
    this.offsetOf = more(this.offsetOf);
    this.lengthOf = more(this.lengthOf);
  }

  /** Frees the slot and its bytes; a chunk left without live bytes is released (the open one rewound). */
  private release(ref: number): void {
    const c = this.chunkOf[ref];
    const n = this.lengthOf[ref];
    this.chunkOf[ref] = FREE;
    if (this.freeCount === this.freeSlots.length) { const b = new Uint32Array(this.freeSlots.length * 2); b.set(this.freeSlots); this.freeSlots = b; }
    this.freeSlots[this.freeCount++] = ref;
    this.liveBytes -= n;
    this.refCount--;
    if ((this.chunkLive[c] -= n) > 0) return;
    if (c === this.open) this.openUsed = 0;
    else this.dropChunk(c);
  }

  /**
   * When the chunks hold more than twice the live bytes plus two chunks: moves the live records
   * of every sealed chunk less than half live into the open chunk, and releases those chunks.
   */
  private tidy(): void {
    if (this.pins > 0 || this.heldBytes <= 2 * this.liveBytes + 2 * this.chunkBytes) return;
    const sparse = new Uint8Array(this.chunks.length);
    let any = false;
    for (let c = 0; c < this.chunks.length; c++) {
      const buf = this.chunks[c];
      if (buf === null || c === this.open || this.chunkLive[c] * 2 >= buf.length) continue;
      sparse[c] = 1;
      any = true;
    }
    if (!any) return;
    for (let ref = 0; ref < this.slots; ref++) {
      const c = this.chunkOf[ref];
      // Chunks opened by the moves themselves lie past `sparse` (or reuse a released index): not sparse.
      if (c === FREE || sparse[c] !== 1) continue;
      const n = this.lengthOf[ref];
      const from = this.chunks[c]!;
      const off = this.offsetOf[ref];
      const [to, at] = this.place(n);
      from.copy(this.chunks[to]!, at, off, off + n);
      this.chunkOf[ref] = to;
      this.offsetOf[ref] = at;
      this.chunkLive[c] -= n;
    }
    for (let c = 0; c < sparse.length; c++) if (sparse[c] === 1) this.dropChunk(c);
  }
}
