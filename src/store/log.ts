/**
 * An append-only JSON-lines log with a checksum per line and group commit (DESIGN §7,
 * issue #2 point 4).
 *
 * Line format: `<crc32 of the JSON bytes, 8 lowercase hex> <JSON>\n`. One line is one
 * transaction, so a torn write can only ever cut the last transaction, never half of one.
 *
 * Group commit: every line appended in the same event-loop turn is written with one positional
 * `write` and made durable with one `fdatasync`; lines appended while that batch is on its way
 * form the next batch. `append` resolves only once its line is on disk (with `sync: true`).
 */
import { crc32 } from 'node:zlib';
import type { StoreFs } from './fs.js';

/** Encodes one transaction's JSON text as a log line. */
export function encodeLine(json: string): Buffer {
  const body = Buffer.from(json, 'utf8');
  const line = Buffer.allocUnsafe(body.length + 10);
  line.write((crc32(body) >>> 0).toString(16).padStart(8, '0'), 0, 'latin1');
  line[8] = 0x20;
  body.copy(line, 9);
  line[line.length - 1] = 0x0a;
  return line;
}

/** Why the log refuses writes; set once and never cleared (an fdatasync failure is final). */
export class StorageFailedError extends Error {}

interface Pending { buf: Buffer; tag: unknown; resolve: () => void; reject: (e: Error) => void }

/**
 * A log file opened for appending at byte `size`.
 * Errors: `append` rejects with the file-system error when the write fails (the partial batch
 * is truncated away first); after an `fdatasync` failure, or a failed truncate, every later
 * `append` rejects with {@link StorageFailedError}.
 */
export class AppendLog {
  private queue: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  private paused = false;
  private failure: Error | null = null;

  constructor(
    readonly path: string,
    private fd: number,
    /** Bytes in the file; the next batch is written here. */
    public size: number,
    private readonly fs: StoreFs,
    private readonly sync: boolean,
  ) {}

  /** Stops accepting writes for good (a durability failure seen elsewhere, e.g. a folder fsync). */
  fail(err: StorageFailedError): void {
    this.failure ??= err;
  }

  /** Why the log stopped accepting writes, or null while it is healthy. */
  get failed(): Error | null { return this.failure; }

  /**
   * Appends one line; resolves when it is written (and fdatasync'd when `sync`). `tag` is
   * returned by {@link queuedTags} while the line waits to be written.
   */
  append(line: Buffer, tag?: unknown): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.queue.push({ buf: line, tag, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing || this.paused) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.flushing && !this.paused && this.queue.length) this.flushing = this.flush().finally(() => {
        this.flushing = null;
        if (this.queue.length) this.schedule();
      });
    });
  }

  private async flush(): Promise<void> {
    const batch = this.queue;
    this.queue = [];
    if (this.failure) { for (const p of batch) p.reject(this.failure); return; }
    const buf = batch.length === 1 ? batch[0].buf : Buffer.concat(batch.map((p) => p.buf));
    const start = this.size;
    try {
      await this.fs.write(this.fd, buf, start);
    } catch (err) {
      // Cut the partial batch so the file still parses, then fail this batch and everything
      // queued behind it (those transactions were built on top of this batch's state) —
      // including lines appended while the truncate ran: the Db undoes every transaction
      // committed after a failed one, so none of them may be written.
      try {
        await this.fs.ftruncate(this.fd, start);
      } catch (terr) {
        this.failure = new StorageFailedError(`could not truncate ${this.path} after a failed write: ${(terr as Error).message}`);
      }
      const failed = batch.concat(this.queue);
      this.queue = [];
      for (const p of failed) p.reject(err as Error);
      return;
    }
    this.size = start + buf.length;
    if (this.sync) {
      try {
        await this.fs.fdatasync(this.fd);
      } catch (err) {
        // After a failed fdatasync the page cache may claim data the disk lost; never retry
        // and carry on (the "fsyncgate" lesson): stop accepting writes.
        this.failure = new StorageFailedError(`fdatasync failed on ${this.path}: ${(err as Error).message}; writes are refused until restart`);
        // The batch is answered as failed and undone in memory: cut it from the file too (best
        // effort), so that it does not come back at the next start as a write that was refused.
        await this.fs.ftruncate(this.fd, start).then(() => { this.size = start; }, () => {});
        const failed = batch.concat(this.queue);
        this.queue = [];
        for (const p of failed) p.reject(this.failure);
        return;
      }
    }
    for (const p of batch) p.resolve();
  }

  /** Stops starting new batches and waits for the one in flight (compaction's barrier). */
  async pause(): Promise<void> {
    this.paused = true;
    while (this.flushing) await this.flushing;
  }

  /** Starts writing batches again, to `fd` at `size` when the file was replaced meanwhile. */
  resume(replacement?: { fd: number; size: number }): void {
    if (replacement) { this.fd = replacement.fd; this.size = replacement.size; }
    this.paused = false;
    if (this.queue.length) this.schedule();
  }

  /** Tags of the lines queued but not yet handed to `write`, oldest first. */
  queuedTags(): unknown[] { return this.queue.map((p) => p.tag); }

  /** The current file descriptor (compaction closes it after swapping files). */
  get descriptor(): number { return this.fd; }

  /** Waits until everything appended so far is written, then closes the file. */
  async close(): Promise<void> {
    while (this.flushing || this.queue.length || this.scheduled) {
      if (this.flushing) await this.flushing;
      else await new Promise((r) => setImmediate(r));
    }
    await this.fs.close(this.fd);
  }
}
