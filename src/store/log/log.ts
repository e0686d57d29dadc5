/**
 * An append-only JSON-lines log with a checksum per line and group commit
 * (docs/storage.md#the-log, docs/storage.md#group-commit): lines appended in one event-loop turn
 * are written with one `write` and made durable together (with `O_DSYNC`, the write is the sync;
 * docs/decisions.md#durable-writes-in-one-system-call). A big transaction is a frame, applied only
 * once its commit marker is read, so a torn write only ever cuts the last transaction.
 */
import { isOutOfSpace, type StoreFs } from './fs.js';
import { LINE_BYTES } from './lines.js';

export { LINE_BYTES, encodeLine, encodeTransaction, writeCrc, type FrameMarker, type JsonText } from './lines.js';

/** Parts at least this large are written as they are; smaller consecutive parts are joined first. */
const OWN_WRITE_BYTES = 64 * 1024;

/**
 * The most a batch takes (but at least one line): ten 2 MB lines arriving together (pasted
 * sources) are not one 20 MB copy on the main thread that stalls every other request.
 */
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;

/** Why the log refuses writes; set once and never cleared (an fdatasync failure is final). */
export class StorageFailedError extends Error {}

/**
 * One queued line. `continues`: the next queued line belongs to the same frame; `lazy`: it starts
 * no batch of its own (see {@link AppendLog.appendFrame}).
 */
interface Pending { parts: readonly Buffer[]; bytes: number; continues: boolean; lazy: boolean;
  resolve: () => void; reject: (e: Error) => void }

/**
 * The longest a lazily appended line waits for a batch of other lines to go with, wall ms: past
 * it, it is written in a batch of its own (docs/storage.md#group-commit).
 */
export const LAZY_WRITE_MS = 20;

const ignore = () => {};

/**
 * Told of each group-commit batch written (docs/deployment.md#monitoring): seconds from its write to durable, and of
 * them the fdatasync's (on an `O_DSYNC` file, the write's; null without sync). Unset: no clock is read.
 */
export type BatchTiming = (commitSeconds: number, fsyncSeconds: number | null) => void;

/**
 * A log file opened for appending at byte `size`. `append` rejects with the file-system error when
 * the write fails (the partial batch cut away first); after an `fdatasync` failure, a failed write
 * on a `synced` file other than for lack of space, or a failed truncate, it and every later one
 * reject with {@link StorageFailedError}.
 */
export class AppendLog {
  private queue: Pending[] = [];
  /** The batch write in flight (at most one: each starts where the previous one ended). */
  private writing: Promise<void> | null = null;
  /** Settles when the latest started batch is settled; true when it poisons later batches. */
  private tail: Promise<boolean> = Promise.resolve(false);
  /** Batches started and not yet settled. */
  private unsettled = 0;
  private scheduled = false;
  private paused = false;
  /** Set while a batch whose write failed waits to be settled: no batch may start. */
  private holding = false;
  private failure: Error | null = null;
  /**
   * Where a frame partly written begins (null: the file ends at a transaction boundary): a failed
   * write cuts back to it, and a pause waits for its commit marker (docs/storage.md#frames).
   */
  private openFrameAt: number | null = null;
  /** Lines queued that were not appended lazily: each asks for a batch. */
  private eager = 0;
  /** Set when the lazily appended lines waited {@link LAZY_WRITE_MS}: they ask for a batch too. */
  private lazyDue = false;
  private lazyTimer: NodeJS.Timeout | null = null;
  /** Set by {@link close}: whatever is queued is written now. */
  private closing = false;
  /**
   * Where the file will end once every line handed to {@link appendFrame} so far is written: at
   * compaction's capture point, lines from here on are copied to the new file (docs/storage.md#compaction).
   */
  handedEnd: number;
  /** Batches that failed (a write or an fdatasync) so far: a compaction that saw this change abandons. */
  failures = 0;
  /**
   * Where the file ends after its last answered transaction: the end of the last complete transaction of the last
   * batch settled successfully (docs/storage.md#backup). Bytes before it are never cut or changed.
   */
  committedEnd: number;

  constructor(
    readonly path: string,
    private fd: number,
    /** Bytes in the file; the next batch is written here. */
    public size: number,
    private readonly fs: StoreFs,
    private readonly sync: boolean,
    /**
     * `fd` (and every replacement given to {@link resume}) was opened with `O_DSYNC`
     * ({@link StoreFs.openSynced}): a write returns once it is durable, so none is fdatasync'd.
     */
    readonly synced = false,
    private readonly timing: BatchTiming | null = null,
  ) { this.handedEnd = size; this.committedEnd = size; }

  /** Stops accepting writes for good (a durability failure seen elsewhere, e.g. a folder fsync). */
  fail(err: StorageFailedError): void {
    this.failure ??= err;
  }

  /** Why the log stopped accepting writes, or null while it is healthy. */
  get failed(): Error | null { return this.failure; }

  /** Appends one line; resolves when it is written (and fdatasync'd when `sync`). */
  append(line: Buffer | readonly Buffer[]): Promise<void> {
    return this.appendFrame([line]);
  }

  /**
   * Appends the lines of one frame (docs/storage.md#frames), queued at once with no other line
   * between them; resolves when the last one (the commit marker) is written (and fdatasync'd when
   * `sync`), rejects as {@link append} does. The lines may span batches; a {@link pause} never
   * stops inside them, and a failed write cuts the file back to the first of them.
   *
   * `lazy` lines start no write of their own: they go out with the next batch other lines start,
   * or after {@link LAZY_WRITE_MS} alone — for writes whose loss in a crash only repeats work (a
   * webhook attempt's outcome: docs/storage.md#group-commit), so under load they add no fdatasync.
   */
  appendFrame(lines: ReadonlyArray<Buffer | readonly Buffer[]>, lazy = false): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i];
        const parts = Buffer.isBuffer(line) ? [line] : line;
        let bytes = 0;
        for (const b of parts) bytes += b.length;
        this.handedEnd += bytes;
        const last = i === lines.length - 1;
        this.queue.push({ parts, bytes, continues: !last, lazy, resolve: last ? resolve : ignore,
          reject: last ? reject : ignore });
      }
      if (!lazy) { this.eager += lines.length; this.schedule(); return; }
      this.lazyTimer ??= setTimeout(() => { this.lazyTimer = null; this.lazyDue = true; this.schedule(); },
        LAZY_WRITE_MS);
    });
  }

  /** Whether a batch may start: none is in flight or held after a failure, and not paused but to end a frame. */
  private mayStart(): boolean {
    return !this.writing && !this.holding && (!this.paused || this.openFrameAt !== null) && this.queue.length > 0
      && (this.eager > 0 || this.lazyDue || this.openFrameAt !== null || this.closing);
  }

  private schedule(): void {
    if (this.scheduled || !this.mayStart()) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.mayStart()) this.startBatch();
    });
  }

  /**
   * Takes the queue as one batch (up to {@link MAX_BATCH_BYTES}) and chains its settlement after
   * the previous batch's. While paused, only the rest of a partly written frame is taken.
   */
  private startBatch(): void {
    let n = 0;
    let bytes = 0;
    while (n < this.queue.length && (n === 0 || bytes + this.queue[n].bytes <= MAX_BATCH_BYTES)) {
      bytes += this.queue[n++].bytes;
      if (this.paused && !this.queue[n - 1].continues) break;
    }
    const batch = n === this.queue.length ? this.queue : this.queue.slice(0, n);
    this.queue = n === this.queue.length ? [] : this.queue.slice(n);
    for (const p of batch) if (!p.lazy) this.eager--;
    if (!this.queue.some((p) => p.lazy)) {
      this.lazyDue = false;
      if (this.lazyTimer !== null) { clearTimeout(this.lazyTimer); this.lazyTimer = null; }
    }
    const prev = this.tail;
    let written!: () => void;
    this.writing = new Promise<void>((r) => { written = r; });
    this.unsettled++;
    this.tail = this.writeBatch(batch, prev, () => {
      this.writing = null;
      written();
      if (this.queue.length) this.schedule();
    }).finally(() => { this.unsettled--; });
  }

  /**
   * Writes and syncs one batch, then settles it after `prev`. `released` is called once the
   * write is over (successful or not), so the next batch may start writing. Returns whether
   * later batches must fail (this batch's sync failed, or an earlier one's did).
   */
  private async writeBatch(batch: Pending[], prev: Promise<boolean>, released: () => void): Promise<boolean> {
    const fail = async (err: Error, poison: boolean, extra: Pending[] = []) => {
      await prev;
      for (const p of batch.concat(extra)) p.reject(err);
      return poison;
    };
    if (this.failure) { this.openFrameAt = null; released(); return fail(this.failure, true); }
    const writes = batchWrites(batch);
    const start = this.size;
    // A failed batch that goes on with a frame begun earlier is cut back to that frame's begin
    // marker: the file must never keep lines of a frame that will not be committed (docs/storage.md#frames).
    const cutAt = this.openFrameAt ?? start;
    let frameAt = this.openFrameAt;
    let at = start;
    let boundary: number | null = null;
    for (const p of batch) {
      if (frameAt === null && p.continues) frameAt = at;
      at += p.bytes;
      if (!p.continues) { frameAt = null; boundary = at; }
    }
    let end = start;
    for (const buf of writes) end += buf.length;
    const timed = this.timing !== null;
    const t0 = timed ? performance.now() : 0;
    let fsyncMs: number | null = null;
    try {
      // One write of the batch's buffers: on a synchronized file, one device flush.
      if (writes.length > 0) await this.fs.write(this.fd, writes, start);
    } catch (err) {
      this.failures++;
      // On a synchronized file the write was also the sync: after an I/O error, as after a failed
      // fdatasync, no write is tried again (docs/storage.md#faults). Lack of space stays a failed
      // write: the range is cut (the cut synced, below), and nothing acknowledged depends on it.
      const final = this.synced && !isOutOfSpace(err);
      if (final) this.failure ??= new StorageFailedError(
        `synchronized write failed on ${this.path}: ${(err as Error).message}; writes are refused until restart`);
      const why = final ? this.failure! : err as Error;
      // Cut the partial batch so the file still parses, then fail it and everything queued
      // behind it, lines appended during the truncate too: the Db undoes every transaction
      // committed after a failed one, so none may be written.
      this.openFrameAt = null;
      let cut = false;
      try {
        await this.fs.ftruncate(this.fd, cutAt);
        this.size = cutAt;
        cut = true;
      } catch (terr) {
        this.failure = new StorageFailedError(
          `could not truncate ${this.path} after a failed write: ${(terr as Error).message}`);
      }
      // On a synchronized file what a failed write did write is on disk already: the cut must be
      // too, or a crash could bring back part of a batch answered as failed.
      if (this.synced && cut) {
        try {
          await this.fs.fdatasync(this.fd);
        } catch (serr) {
          this.failure ??= new StorageFailedError(
            `fdatasync failed on ${this.path} after cutting a failed write: ${(serr as Error).message}; writes are ` +
              `refused until restart`);
        }
      }
      // Our I/O is over, but no batch may start until this one is settled.
      this.holding = true;
      released();
      await prev;
      const failed = batch.concat(this.queue);
      this.queue = [];
      this.eager = 0;
      this.handedEnd = this.size;
      for (const p of failed) p.reject(why);
      this.holding = false;
      if (this.queue.length) this.schedule();
      return this.failure !== null;
    }
    this.size = end;
    this.openFrameAt = frameAt;
    released();
    if (timed && this.synced) fsyncMs = performance.now() - t0;
    // A batch that wrote nothing (changes that cancel out) has nothing to sync, but settles in order.
    if (this.sync && !this.synced && end > start) {
      const s0 = timed ? performance.now() : 0;
      try {
        await this.fs.fdatasync(this.fd);
        if (timed) fsyncMs = performance.now() - s0;
      } catch (err) {
        this.failures++;
        // After a failed fdatasync the page cache may claim data the disk lost: never retry
        // ("fsyncgate"), stop accepting writes.
        this.failure ??= new StorageFailedError(
          `fdatasync failed on ${this.path}: ${(err as Error).message}; writes are refused until restart`);
        // Cut the batch, and any later one already written, from the file too (best effort), so
        // a refused write does not come back at the next start; a write in flight is waited for.
        while (this.writing) await this.writing;
        this.openFrameAt = null;
        await this.fs.ftruncate(this.fd, cutAt).then(() => { this.size = cutAt; }, () => {});
        const queued = this.queue;
        this.queue = [];
        this.handedEnd = this.size;
        return fail(this.failure, true, queued);
      }
    }
    if (await prev) {
      for (const p of batch) p.reject(this.failure!);
      return true;
    }
    if (boundary !== null) this.committedEnd = boundary;
    if (timed && end > start) this.timing!((performance.now() - t0) / 1000, fsyncMs === null ? null : fsyncMs / 1000);
    for (const p of batch) p.resolve();
    return false;
  }

  /**
   * Stops starting new batches and waits for those in flight to settle (compaction's barrier).
   * A frame partly written is finished first: the file is left at a transaction boundary.
   */
  async pause(): Promise<void> {
    this.paused = true;
    while (this.writing || this.unsettled || this.openFrameAt !== null) {
      if (this.writing) await this.writing;
      else if (this.openFrameAt !== null) { this.schedule(); await new Promise((r) => setImmediate(r)); }
      else await this.tail;
    }
  }

  /** Starts writing batches again, to `fd` at `size` when the file was replaced meanwhile. */
  resume(replacement?: { fd: number; size: number }): void {
    if (replacement) { this.handedEnd += replacement.size - this.size; this.fd = replacement.fd; this.size =
      replacement.size; this.committedEnd = replacement.size; }
    this.paused = false;
    if (this.queue.length) this.schedule();
  }

  /** Whether writing is paused (a compaction's last lines, rename and switch are under way). */
  get isPaused(): boolean { return this.paused; }

  /** The current file descriptor (compaction closes it after swapping files). */
  get descriptor(): number { return this.fd; }

  /** Waits until everything appended so far is written, then closes the file. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.queue.length) this.schedule();
    while (this.writing || this.unsettled || this.queue.length || this.scheduled || this.holding) {
      if (this.writing) await this.writing;
      else if (this.unsettled) await this.tail;
      else await new Promise((r) => setImmediate(r));
    }
    await this.fs.close(this.fd);
  }
}

/**
 * The buffers of a batch, in file order, for one vectored write: consecutive small parts joined,
 * parts of {@link OWN_WRITE_BYTES} and up taken as they are (a pasted document is never copied).
 */
function batchWrites(batch: readonly Pending[]): Buffer[] {
  const out: Buffer[] = [];
  let small: Buffer[] = [];
  const flush = () => {
    if (small.length > 0) out.push(small.length === 1 ? small[0] : Buffer.concat(small));
    small = [];
  };
  for (const p of batch) {
    for (const b of p.parts) {
      if (b.length >= OWN_WRITE_BYTES) { flush(); out.push(b); } else small.push(b);
    }
  }
  flush();
  return out;
}
