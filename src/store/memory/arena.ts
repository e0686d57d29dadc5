/**
 * The records a log holds as the bytes of their JSON (docs/storage.md#memory): those loaded from
 * the snapshot block and not read yet, and those of a type declared with `Db.holdAsBytes` once
 * their transaction is on disk. One arena of chunks a log, each record named by a small whole
 * number — its *ref* — so a table holds a number, not an object.
 */
import { jsonBytes, type JsonText } from '../log/lines.js';

/** The size of a chunk: large enough to hold hundreds of records, small enough to be released soon. */
export const CHUNK_BYTES = 1024 * 1024;

/** A slot's chunk when the slot is free. */
const FREE = 0xffffffff;

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

/**
 * An append-only arena of chunks: `Buffer`s of {@link CHUNK_BYTES} filled one record after the
 * other (a longer record gets a chunk of its own). A ref is the index of a slot of three typed
 * arrays (chunk, offset, length): no object per record. Freed slots are reused; a snapshot
 * block's records take the slots 0…n-1 ({@link reserve}).
 *
 * A chunk whose records are all dead is released at once (the one being filled is rewound).
 * When the chunks hold more than twice the live bytes plus two chunks, the live records of the
 * chunks less than half live are moved to the chunk being filled and those released (a ref names
 * a slot, not a place): so the chunks hold at most twice the live bytes plus three chunks,
 * whatever the order records die in, and no more bytes are moved than dead ones released.
 * While a compaction reads refs it captured ({@link pin}), frees wait until {@link unpin}.
 */
export class ByteArena {
  private chunks!: Array<Buffer | null>;
  /** Live bytes per chunk index. */
  private chunkLive!: number[];
  private freeChunks!: number[];
  /** The chunk being filled (-1: none yet), and how far. */
  private open!: number;
  private openUsed!: number;
  private chunkOf!: Uint32Array;
  private offsetOf!: Uint32Array;
  private lengthOf!: Uint32Array;
  /** Slots ever used: 0…slots-1. */
  private slots!: number;
  private freeSlots!: Uint32Array;
  private freeCount!: number;
  private liveBytes!: number;
  private heldBytes!: number;
  private refCount!: number;

  /** Records of the block loaded taken out as objects ({@link take}; tests and the start-up log). */
  taken = 0;

  /** Compactions reading captured refs; frees wait while any does. */
  private pins = 0;
  private deferred!: number[];

  /** @param chunkBytes the size of a chunk (tests make it small); at least 16. */
  constructor(private readonly chunkBytes: number = CHUNK_BYTES) {
    if (!(chunkBytes >= 16 && chunkBytes <= 0x7fffffff)) throw new RangeError(`a chunk of ${chunkBytes} bytes`);
    this.clear();
  }

  /**
   * Makes room for the records of a snapshot block: refs 0…n-1 are its records by position, of
   * byte lengths `lengths`; those `held(ref)` keeps get room ({@link fill}), the others are free slots.
   * @throws Error when the arena already holds a ref; RangeError for an empty record.
   */
  reserve(lengths: Uint32Array, held: (ref: number) => boolean): void {
    if (this.slots !== 0) throw new Error('a block\'s records go into an empty arena');
    const n = lengths.length;
    const cap = Math.max(n, 1024);
    this.chunkOf = new Uint32Array(cap);
    this.offsetOf = new Uint32Array(cap);
    this.lengthOf = new Uint32Array(cap);
    this.slots = n;
    for (let ref = n - 1; ref >= 0; ref--) if (!held(ref)) { this.chunkOf[ref] = FREE; this.pushFree(ref); }
    for (let ref = 0; ref < n; ref++) {
      if (this.chunkOf[ref] === FREE) continue;
      const len = lengths[ref];
      if (len === 0) throw new RangeError(`record ${ref} is empty`);
      const [c, off] = this.place(len);
      this.chunkOf[ref] = c;
      this.offsetOf[ref] = off;
      this.lengthOf[ref] = len;
      this.liveBytes += len;
      this.refCount++;
    }
  }

  /**
   * Copies the bytes of reserved record `ref`, `src[start, end)`, into its room ({@link reserve}).
   * @throws RangeError when `ref` has no room, or of another length.
   */
  fill(ref: number, src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    if (!(ref < this.slots) || this.chunkOf[ref] === FREE || n !== this.lengthOf[ref]) {
      throw new RangeError(`record ${ref} has ${n} bytes, ${ref < this.slots ? this.lengthOf[ref] : 0} were reserved`);
    }
    // A plain Uint8Array view: Buffer's own subarray costs several times more.
    this.chunks[this.chunkOf[ref]]!.set(new Uint8Array(src.buffer, src.byteOffset + start, n), this.offsetOf[ref]);
  }

  /** Empties the arena (also a block reserved, then not used): every ref is void. */
  clear(): void {
    this.chunks = [];
    this.chunkLive = [];
    this.freeChunks = [];
    this.open = -1;
    this.openUsed = 0;
    this.chunkOf = new Uint32Array(1024);
    this.offsetOf = new Uint32Array(1024);
    this.lengthOf = new Uint32Array(1024);
    this.slots = 0;
    this.freeSlots = new Uint32Array(1024);
    this.freeCount = 0;
    this.liveBytes = 0;
    this.heldBytes = 0;
    this.refCount = 0;
    this.deferred = [];
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
    return this.chunks[this.chunkOf[ref]]!.toString('utf8', off, off + this.lengthOf[ref]);
  }

  /** Ref `ref`'s record, parsed (a new object each call). */
  parse(ref: number): object { return JSON.parse(this.text(ref)) as object; }

  /** Ref `ref`'s record, parsed, for its table to keep: the ref is freed and counted in {@link taken}. */
  take(ref: number): object {
    const rec = this.parse(ref);
    this.taken++;
    this.free(ref);
    return rec;
  }

  /**
   * Frees ref `ref` (its record was overwritten, deleted or dropped); while {@link pin}ned, the free waits.
   * @throws Error for a ref that is not in use.
   */
  free(ref: number): void {
    if (!(ref < this.slots) || this.chunkOf[ref] === FREE) throw new Error(`ref ${ref} is not in use`);
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
    // Doubled while small; by a quarter past that (a block's million slots).
    const was = this.chunkOf.length;
    const cap = was < 65536 ? was * 2 : was + (was >> 2);
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
    this.pushFree(ref);
    this.liveBytes -= n;
    this.refCount--;
    if ((this.chunkLive[c] -= n) > 0) return;
    if (c === this.open) this.openUsed = 0;
    else this.dropChunk(c);
  }

  private pushFree(ref: number): void {
    if (this.freeCount === this.freeSlots.length) {
      const b = new Uint32Array(this.freeSlots.length * 2);
      b.set(this.freeSlots);
      this.freeSlots = b;
    }
    this.freeSlots[this.freeCount++] = ref;
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
