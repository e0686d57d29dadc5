/**
 * Crash-safe rewrite of a log to its live records (docs/storage.md#compaction): write a temp file beside the
 * log, fdatasync it, rename it over the log, fsync the folder. A crash at any point leaves
 * either the old log or the new one, complete; a leftover temp file is removed at the next
 * start.
 */
import { dirname, join } from 'node:path';
import { LINE_BYTES, LinePacker } from './log.js';
import type { StoreFs } from './fs.js';

/** Bytes per write: small enough to yield to requests often. */
const WRITE_BYTES = 1 << 20;

/**
 * Writes `records` as put-transactions to `<dir>/<tmpName>`, then atomically replaces `path`.
 * Each line holds as many records as fit in `lineBytes` (a record larger than that is a line of
 * its own), and is a transaction of its own: the file replaces the log whole, by a rename, so
 * it needs no frame (docs/storage.md#compaction). Yields to the event loop between writes.
 * Returns the new file's fd (open for appending) and size. A failure before the rename removes
 * the temp file and throws; `path` is untouched. A failed folder fsync after the rename is
 * returned as `dirSyncError`: the new file is the log.
 */
export async function writeSnapshot(
  path: string,
  records: ReadonlyArray<readonly [string, string, object]>,
  fs: StoreFs,
  tmpName: string,
  lineBytes: number = LINE_BYTES,
): Promise<{ fd: number; size: number; dirSyncError?: Error }> {
  const tmp = join(dirname(path), tmpName);
  const fd = await fs.open(tmp);
  let size = 0;
  try {
    await fs.ftruncate(fd, 0);
    let parts: Buffer[] = [];
    let partBytes = 0;
    const take = async (line: Buffer | Buffer[]) => {
      for (const b of Buffer.isBuffer(line) ? [line] : line) { parts.push(b); partBytes += b.length; }
      if (partBytes >= WRITE_BYTES) {
        await fs.write(fd, Buffer.concat(parts), size);
        size += partBytes;
        parts = [];
        partBytes = 0;
      }
    };
    const packer = new LinePacker(lineBytes);
    for (const [type, id, rec] of records) {
      const op = JSON.stringify(['p', type, id, rec]);
      const line = packer.add(op, Buffer.byteLength(op, 'utf8'));
      if (line !== undefined) await take(line);
    }
    const last = packer.finish();
    if (last !== undefined) await take(last);
    if (parts.length) { await fs.write(fd, Buffer.concat(parts), size); size += partBytes; }
    await fs.fdatasync(fd);
    await fs.rename(tmp, path);
  } catch (err) {
    await fs.close(fd).catch(() => {});
    await import('node:fs').then((m) => m.promises.unlink(tmp)).catch(() => {});
    throw err;
  }
  // The rename is done: from here on the new file is the log, whatever happens next. A failed
  // folder fsync means the rename may not survive a crash; the caller must stop writing.
  try {
    await fs.fsyncDir(dirname(path));
  } catch (err) {
    return { fd, size, dirSyncError: err as Error };
  }
  return { fd, size };
}
