/**
 * The store's file-system seam (docs/decisions.md#time-and-the-file-system-are-injected): every
 * call through which the append log reaches the disk. Tests replace single methods to inject
 * `ENOSPC`, `EIO` or an `fdatasync` failure (docs/storage.md#faults); production uses {@link nodeFs}.
 */
import * as fs from 'node:fs';
import { promisify } from 'node:util';

export interface StoreFs {
  /** Opens `path` for reading and positional writing, creating it when missing; returns the fd. */
  open(path: string): Promise<number>;
  /**
   * Opens `path` for reading and *synchronized* positional writing (`O_DSYNC`), creating it when
   * missing; returns the fd: each `write` returns once its bytes are on the device — a write and an
   * `fdatasync` in one system call (docs/decisions.md#durable-writes-in-one-system-call). Linux only.
   */
  openSynced?(path: string): Promise<number>;
  /**
   * Writes all of `data` at byte `position`, several buffers as one vectored write (`pwritev`): on
   * an `O_DSYNC` descriptor one device flush. A short write is carried on; an error rejects (part
   * of `data` may be in the file); a write that makes no progress rejects (`EIO`).
   */
  // A property, not a method: a test's stand-in must then take a list too (parameters of methods
  // are checked loosely).
  write: (fd: number, data: Buffer | readonly Buffer[], position: number) => Promise<void>;
  /** Flushes the file's data (and the metadata needed to read it back) to the device. */
  fdatasync(fd: number): Promise<void>;
  /** Cuts the file to `length` bytes. */
  ftruncate(fd: number, length: number): Promise<void>;
  close(fd: number): Promise<void>;
  /** Atomically replaces `to` by `from`. */
  rename(from: string, to: string): Promise<void>;
  /** fsyncs a directory, so that a rename or a new file in it survives a crash. */
  fsyncDir(dir: string): Promise<void>;
}

const pwritev = (fd: number, bufs: readonly Buffer[], pos: number) =>
  new Promise<number>((resolve, reject) => fs.writev(fd, bufs, pos, (err, n) => (err ? reject(err) : resolve(n))));

/** A write that wrote nothing with bytes left (some file systems may): an I/O error, not a loop. */
function noProgress(): NodeJS.ErrnoException {
  return Object.assign(new Error('EIO: a write made no progress'), { code: 'EIO' });
}

/** `bufs` without their first `n` bytes (whole buffers, empty ones too, dropped; the one cut into sliced). */
function after(bufs: readonly Buffer[], n: number): readonly Buffer[] {
  let i = 0;
  while (i < bufs.length && n >= bufs[i].length) n -= bufs[i++].length;
  if (i === bufs.length) return [];
  return n === 0 ? bufs.slice(i) : [bufs[i].subarray(n), ...bufs.slice(i + 1)];
}

// Made once: `promisify` builds a new function at every call.
const fdatasync = promisify(fs.fdatasync);
const ftruncate = promisify(fs.ftruncate);
const close = promisify(fs.close);
const rename = promisify(fs.rename);

export const nodeFs: StoreFs = {
  open: async (path) => {
    // 'a+' would force O_APPEND (positional writes ignored on Linux); create then reopen r+.
    fs.closeSync(fs.openSync(path, 'a', 0o600));
    return promisify(fs.open)(path, 'r+');
  },
  // Linux only: on macOS Node's fdatasync is F_FULLFSYNC and an O_DSYNC write is not; Windows has
  // no O_DSYNC. Elsewhere the log fdatasyncs its batches.
  ...(process.platform !== 'linux' || fs.constants.O_DSYNC === undefined ? {} : {
    openSynced: (path: string) => promisify(fs.open)(path,
      fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_DSYNC, 0o600),
  }),
  write: async (fd, data, position) => {
    // libuv writes in slices of IOV_MAX buffers and reports a later failed slice as a short
    // count: what is left is written again, and a lasting error then rejects.
    let at = position;
    for (let left = after(Buffer.isBuffer(data) ? [data] : data, 0); left.length > 0;) {
      const n = await pwritev(fd, left, at);
      if (n === 0) throw noProgress();
      at += n;
      left = after(left, n);
    }
  },
  fdatasync: (fd) => fdatasync(fd),
  ftruncate: (fd, length) => ftruncate(fd, length),
  close: (fd) => close(fd),
  rename: (from, to) => rename(from, to),
  fsyncDir: async (dir) => {
    const fd = await promisify(fs.open)(dir, 'r');
    try { await promisify(fs.fsync)(fd); } finally { await promisify(fs.close)(fd); }
  },
};

/** Whether `err` is a write refused for lack of space (`ENOSPC`, `EDQUOT`): writes go on once space is freed. */
export function isOutOfSpace(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}
