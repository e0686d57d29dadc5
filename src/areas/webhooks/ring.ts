/**
 * A single-producer, single-consumer ring of byte records in a SharedArrayBuffer: how attempts
 * go to the delivery worker and outcomes come back (docs/decisions.md#shared-memory-between-the-api-thread-and-the-delivery-worker).
 *
 * A `postMessage` serializes its value and wakes the other thread; on a small virtual machine
 * both cost more than the attempt's own data. Here a record is its bytes copied into shared
 * memory, and the reader takes what is there when it looks — nobody is woken. The reader looks
 * on a short timer while there is work in flight; when it has none it says so ({@link sleeping})
 * and the writer then wakes it once, with a message (the caller's).
 *
 * Layout: an Int32Array of control words (write offset, read offset, sleeping flag) and the
 * data area of `capacity` bytes. A record is a 4-byte little-endian length and its bytes; it
 * never wraps: when it does not fit before the end of the area, a skip mark (length
 * 0xFFFFFFFF, or fewer than 4 bytes left) sends the reader back to the start. One byte always
 * stays free, so equal offsets mean empty. Offsets are published with `Atomics.store` after the
 * bytes are written, and read with `Atomics.load` before the bytes are read (the JS memory
 * model orders the plain accesses around them).
 */

const W = 0;
const R = 1;
const SLEEPING = 2;
const CONTROL_WORDS = 4;
const SKIP = 0xffffffff;

/** The shared memory of one ring: pass it to the other thread (it is not copied). */
export interface RingMemory { control: SharedArrayBuffer; data: SharedArrayBuffer }

/** One end of a ring (see the module's comment); each thread makes its own over the same memory. */
export class ByteRing {
  private readonly control: Int32Array;
  private readonly data: Buffer;
  private readonly capacity: number;

  /** A new ring's memory, `capacity` bytes of data (at least 64). */
  static memory(capacity: number): RingMemory {
    if (!Number.isInteger(capacity) || capacity < 64) throw new RangeError('a ring holds at least 64 bytes');
    return { control: new SharedArrayBuffer(CONTROL_WORDS * 4), data: new SharedArrayBuffer(capacity) };
  }

  constructor(memory: RingMemory) {
    this.control = new Int32Array(memory.control);
    this.data = Buffer.from(memory.data);
    this.capacity = memory.data.byteLength;
  }

  /**
   * Writes one record made of `head` (latin1 text: no character above U+00FF) and `body`
   * (a string written as UTF-8, or bytes copied as they are); false when it does not fit now (the reader is behind: try again later). Producer only.
   * @throws RangeError when the record could never fit (larger than half the ring).
   */
  write(head: string, body: string | Uint8Array): boolean {
    const headBytes = head.length;
    const size = 4 + headBytes + (typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength);
    if (size > this.capacity >> 1) throw new RangeError(`a record of ${size} bytes does not fit a ring of ${this.capacity}`);
    const w = Atomics.load(this.control, W);
    const r = Atomics.load(this.control, R);
    let at: number;
    if (w >= r) {
      // Free: from w to the end (keeping one byte when the reader is at 0), then from 0 to r - 1.
      if (this.capacity - w - (r === 0 ? 1 : 0) >= size) at = w;
      else if (r - 1 >= size) {
        if (this.capacity - w >= 4) this.data.writeUInt32LE(SKIP, w);
        at = 0;
      } else return false;
    } else if (r - w - 1 >= size) at = w;
    else return false;
    this.data.writeUInt32LE(size - 4, at);
    this.data.write(head, at + 4, 'latin1');
    if (typeof body === 'string') this.data.write(body, at + 4 + headBytes, 'utf8');
    else this.data.set(body, at + 4 + headBytes);
    const next = at + size;
    Atomics.store(this.control, W, next === this.capacity ? 0 : next);
    return true;
  }

  /**
   * Takes every record written so far, in order: as its bytes (copies), or, with `decode`, as
   * what `decode` makes of a view of its bytes in the ring — valid only during that call, before
   * the records are released to the writer (no copy, no second object per record). `decode` must
   * keep nothing of the view (copy what it keeps) and must not throw: the records are released
   * only after the last one is decoded. Consumer only.
   */
  readAll(): Buffer[];
  readAll<T>(decode: (rec: Buffer) => T): T[];
  readAll<T>(decode?: (rec: Buffer) => T): Array<T | Buffer> {
    const out: Array<T | Buffer> = [];
    const w = Atomics.load(this.control, W);
    let r = Atomics.load(this.control, R);
    while (r !== w) {
      if (this.capacity - r < 4) { r = 0; continue; }
      const len = this.data.readUInt32LE(r);
      if (len === SKIP) { r = 0; continue; }
      const view = this.data.subarray(r + 4, r + 4 + len);
      out.push(decode === undefined ? Buffer.from(view) : decode(view));
      r += 4 + len;
      if (r === this.capacity) r = 0;
    }
    Atomics.store(this.control, R, r);
    return out;
  }

  /** Whether records are waiting to be read. */
  get pending(): boolean { return Atomics.load(this.control, W) !== Atomics.load(this.control, R); }

  /**
   * The reader is about to stop looking: it marks itself sleeping, then looks once more, so a
   * record written meanwhile is never left behind (the writer checks the mark after writing).
   * @returns true when it may sleep (nothing came); false when it must read again (it stays awake).
   */
  trySleep(): boolean {
    Atomics.store(this.control, SLEEPING, 1);
    if (!this.pending) return true;
    Atomics.store(this.control, SLEEPING, 0);
    return false;
  }

  /**
   * The writer, after writing: true when the reader was sleeping and must be woken (by the
   * caller's message) — true once per sleep, since the mark is taken back here.
   */
  takeSleeper(): boolean {
    return Atomics.compareExchange(this.control, SLEEPING, 1, 0) === 1;
  }

  /** The reader, when woken or busy again: it looks on its own from now on. */
  awake(): void { Atomics.store(this.control, SLEEPING, 0); }
}
