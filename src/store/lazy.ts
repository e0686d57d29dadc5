/**
 * Records kept as their JSON bytes until first read (docs/storage.md#snapshots): a log loaded
 * from its snapshot block does not parse its records at start. A table holds, instead of the
 * record object, a small integer — a *lazy ref* — into {@link LazyRecords}; the first read
 * parses the bytes and the table keeps the object from then on.
 *
 * The bytes live in a few large arenas (`Buffer`s of at most {@link ARENA_BYTES}): one JSON
 * value after the other, only the values (none of the log line around them), so memory holds
 * the live records' JSON and little else. Each ref is three numbers in typed arrays (arena,
 * offset, length): no JavaScript object per record.
 */

/** The largest arena: a record never straddles two, and a Buffer on Node 20 holds at most 4 GiB. */
export const ARENA_BYTES = 256 * 1024 * 1024;

/** Node's own UTF-8 decoder of a Buffer range, without `toString`'s argument checks. */
type Utf8Slice = (this: Buffer, start: number, end: number) => string;
const utf8Slice: Utf8Slice = (Buffer.prototype as unknown as { utf8Slice?: Utf8Slice }).utf8Slice
  ?? function (this: Buffer, start: number, end: number) { return this.toString('utf8', start, end); };

/**
 * The bytes of every lazily held record of one log, by the record's position in the snapshot
 * block it was loaded from (its *ref*; records of types loaded otherwise have no bytes here). A
 * ref stays valid for the life of the process (the arenas are memory, not the file, so a
 * compaction that replaces the file leaves them as they are).
 */
export class LazyRecords {
  private readonly arenas: Buffer[];
  /** The first ref of each arena, in order. */
  private readonly arenaFrom: number[];
  private readonly offsetOf: Uint32Array;
  /** Records parsed on first read since the load (tests and the start-up log). */
  parsed = 0;

  /**
   * Room for the records `0…lengths.length-1` whose `held(ref)` is true, of those byte
   * lengths (the array is kept, not copied), each copied in with {@link add}. The arenas are cut
   * so that none passes {@link ARENA_BYTES} and no record straddles two (a record longer than
   * that has an arena of its own).
   */
  constructor(private readonly lengths: Uint32Array, held: (ref: number) => boolean, arenaBytes: number = ARENA_BYTES) {
    const n = lengths.length;
    this.offsetOf = new Uint32Array(n);
    const sizes: number[] = [];
    this.arenaFrom = [];
    let size = 0;
    for (let i = 0; i < n; i++) {
      if (!held(i)) continue;
      const len = lengths[i];
      if (this.arenaFrom.length === 0 || (size > 0 && size + len > arenaBytes)) {
        if (this.arenaFrom.length > 0) sizes.push(size);
        this.arenaFrom.push(i);
        size = 0;
      }
      this.offsetOf[i] = size;
      size += len;
    }
    if (this.arenaFrom.length > 0) sizes.push(size);
    this.arenas = sizes.map((s) => Buffer.allocUnsafeSlow(s));
  }

  /** The arena of ref `ref`. */
  private arena(ref: number): Buffer {
    const from = this.arenaFrom;
    let lo = 0, hi = from.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (from[mid] <= ref) lo = mid; else hi = mid - 1;
    }
    return this.arenas[lo];
  }

  /**
   * Copies record `ref`'s bytes, `src[start, end)`, into its place.
   * @throws RangeError when the length differs from the one announced to the constructor.
   */
  add(ref: number, src: Uint8Array, start: number, end: number): void {
    if (end - start !== this.lengths[ref]) throw new RangeError(`record ${ref} has ${end - start} bytes, ${this.lengths[ref]} were announced`);
    // A plain Uint8Array view: Buffer's own subarray costs several times more (a million records).
    this.arena(ref).set(new Uint8Array(src.buffer, src.byteOffset + start, end - start), this.offsetOf[ref]);
  }

  /** The JSON bytes of record `ref` (a view: do not change them). */
  bytes(ref: number): Buffer {
    const off = this.offsetOf[ref];
    return this.arena(ref).subarray(off, off + this.lengths[ref]);
  }

  /** The byte length of record `ref`'s JSON. */
  length(ref: number): number { return this.lengths[ref]; }

  /** Parses record `ref` (a new object each call; the caller keeps it). */
  parse(ref: number): object {
    this.parsed++;
    return this.peek(ref);
  }

  /**
   * Parses record `ref` without counting it as read (compaction checking a retention rule, a
   * read of a type held as bytes, docs/storage.md#memory).
   */
  peek(ref: number): object {
    return JSON.parse(this.text(ref)) as object;
  }

  /** Record `ref`'s JSON text, decoded. */
  text(ref: number): string {
    const off = this.offsetOf[ref];
    return utf8Slice.call(this.arena(ref), off, off + this.lengths[ref]);
  }

  /** Refs 0…size-1 (the records of the block loaded, held here or not). */
  get size(): number { return this.lengths.length; }
}
