/**
 * Crash-safe rewrite of a log to its live records (docs/storage.md#compaction): write a temp file beside the
 * log, fdatasync it, rename it over the log, fsync the folder. A crash at any point leaves
 * either the old log or the new one, complete; a leftover temp file is removed at the next
 * start.
 */
import { dirname, join } from 'node:path';
import { encodeLine } from './log.js';
import type { StoreFs } from './fs.js';

/** Records per snapshot line and bytes per write: small enough to yield to requests often. */
const OPS_PER_LINE = 256;
const WRITE_BYTES = 1 << 20;

/**
 * Writes `records` as put-transactions to `<dir>/<tmpName>`, then atomically replaces `path`.
 * Yields to the event loop between writes. Returns the new file's fd (open for appending) and
 * size. A failure before the rename removes the temp file and throws; `path` is untouched. A
 * failed folder fsync after the rename is returned as `dirSyncError`: the new file is the log.
 */
export async function writeSnapshot(
  path: string,
  records: ReadonlyArray<readonly [string, string, object]>,
  fs: StoreFs,
  tmpName: string,
): Promise<{ fd: number; size: number; dirSyncError?: Error }> {
  const tmp = join(dirname(path), tmpName);
  const fd = await fs.open(tmp);
  let size = 0;
  try {
    await fs.ftruncate(fd, 0);
    let parts: Buffer[] = [];
    let partBytes = 0;
    for (let i = 0; i < records.length; i += OPS_PER_LINE) {
      const ops = records.slice(i, i + OPS_PER_LINE).map(([type, id, rec]) => ['p', type, id, rec]);
      const line = encodeLine(JSON.stringify(ops));
      parts.push(line);
      partBytes += line.length;
      if (partBytes >= WRITE_BYTES) {
        await fs.write(fd, Buffer.concat(parts), size);
        size += partBytes;
        parts = [];
        partBytes = 0;
      }
    }
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
