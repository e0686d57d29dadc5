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
 * The bytes of every lazily held record of one log. Refs are 0…count-1 in the order the
 * records were added; a ref stays valid for the life of the process (the arenas are memory,
 * not the file, so a compaction that replaces the file leaves them as they are).
 */
export class LazyRecords {
  private readonly arenas: Buffer[];
  private readonly arenaOf: Uint16Array;
  private readonly offsetOf: Uint32Array;
  private readonly lengthOf: Uint32Array;
  /** Records added so far (refs handed out). */
  private count = 0;
  /** Where the next record goes: its arena and offset. */
  private arena = 0;
  private at = 0;
  /** Records parsed on first read since the load (tests and the start-up log). */
  parsed = 0;

  /**
   * Room for `lengths.length` records of those byte lengths, added in that order with
   * {@link add}. The arenas are cut so that none passes {@link ARENA_BYTES} and no record
   * straddles two (a record longer than that has an arena of its own).
   */
  constructor(lengths: ArrayLike<number>, arenaBytes: number = ARENA_BYTES) {
    const n = lengths.length;
    this.arenaOf = new Uint16Array(n);
    this.offsetOf = new Uint32Array(n);
    this.lengthOf = new Uint32Array(n);
    const sizes: number[] = [];
    let size = 0;
    for (let i = 0; i < n; i++) {
      const len = lengths[i];
      if (size > 0 && size + len > arenaBytes) { sizes.push(size); size = 0; }
      this.arenaOf[i] = sizes.length;
      this.offsetOf[i] = size;
      this.lengthOf[i] = len;
      size += len;
    }
    if (size > 0 || sizes.length === 0) sizes.push(size);
    if (sizes.length > 0xffff) throw new RangeError('too many arenas');
    this.arenas = sizes.map((s) => Buffer.allocUnsafeSlow(s));
  }

  /** The number of records added. */
  get size(): number { return this.count; }

  /**
   * Copies the next record's bytes, `src[start, end)`, into its place; returns its ref.
   * @throws RangeError when the length differs from the one announced to the constructor.
   */
  add(src: Buffer, start: number, end: number): number {
    const ref = this.count;
    if (end - start !== this.lengthOf[ref]) throw new RangeError(`record ${ref} has ${end - start} bytes, ${this.lengthOf[ref]} were announced`);
    this.arenas[this.arenaOf[ref]].set(src.subarray(start, end), this.offsetOf[ref]);
    this.count++;
    return ref;
  }

  /** The JSON bytes of record `ref` (a view: do not change them). */
  bytes(ref: number): Buffer {
    const off = this.offsetOf[ref];
    return this.arenas[this.arenaOf[ref]].subarray(off, off + this.lengthOf[ref]);
  }

  /** The byte length of record `ref`'s JSON. */
  length(ref: number): number { return this.lengthOf[ref]; }

  /** Parses record `ref` (a new object each call; the caller keeps it). */
  parse(ref: number): object {
    const off = this.offsetOf[ref];
    this.parsed++;
    return JSON.parse(utf8Slice.call(this.arenas[this.arenaOf[ref]], off, off + this.lengthOf[ref])) as object;
  }

  /** Parses record `ref` without counting it as read (compaction checking a retention rule). */
  peek(ref: number): object {
    const off = this.offsetOf[ref];
    return JSON.parse(utf8Slice.call(this.arenas[this.arenaOf[ref]], off, off + this.lengthOf[ref])) as object;
  }

  /** Bytes held in the arenas. */
  get bytesHeld(): number {
    let n = 0;
    for (const a of this.arenas) n += a.length;
    return n;
  }
}

/** A table's entry: the record, or the lazy ref of its bytes. */
export type Entry = object | number;

/**
 * A read-only view of one table that parses lazy entries as they are read and keeps the
 * objects in the table ({@link LazyRecords}): `get`, iteration, `forEach` — every read gives
 * records, never refs. Live: it sees later changes of the table.
 */
export class TableView<V> implements ReadonlyMap<string, V> {
  constructor(private readonly map: Map<string, Entry>, private readonly lazy: () => LazyRecords | null) {}

  get size(): number { return this.map.size; }
  has(id: string): boolean { return this.map.has(id); }

  get(id: string): V | undefined {
    const v = this.map.get(id);
    if (typeof v !== 'number') return v as V | undefined;
    const rec = this.lazy()!.parse(v);
    this.map.set(id, rec);
    return rec as V;
  }

  keys(): MapIterator<string> { return this.map.keys(); }

  *values(): MapIterator<V> {
    for (const [id, v] of this.map) yield (typeof v === 'number' ? this.get(id) : v) as V;
  }

  *entries(): MapIterator<[string, V]> {
    for (const [id, v] of this.map) yield [id, (typeof v === 'number' ? this.get(id) : v) as V];
  }

  [Symbol.iterator](): MapIterator<[string, V]> { return this.entries(); }

  forEach(fn: (value: V, key: string, map: ReadonlyMap<string, V>) => void, thisArg?: unknown): void {
    for (const [id, v] of this.entries()) fn.call(thisArg, v, id, this);
  }
}
