/**
 * One writer per data dir (issue #2 point 4): the server holds `DATA_DIR/LOCK`, holding its
 * pid. A lock whose pid is no longer running (the server was killed) is taken over.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

export class LockedError extends Error {
  constructor(readonly pid: number, dir: string) {
    super(`data dir ${dir} is in use by process ${pid}`);
  }
}

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
}

/** The pid holding `dir`'s lock when that process runs, else null. */
export function lockHolder(dir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(join(dir, 'LOCK'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) ? pid : null;
  } catch { return null; }
}

/**
 * Takes `dir`'s lock for this process; returns a release function.
 *
 * The lock file appears atomically with its content: the pid is written to a private temp
 * file, which is then hard-linked to `LOCK` (link fails when `LOCK` exists). So no process
 * can ever read an empty lock and take it for a stale one. A lock whose pid no longer runs is
 * moved aside with a rename — only one taker's rename succeeds — and checked to be the stale
 * one that was read before it is discarded.
 * @throws LockedError when another running process holds it; fs errors (EACCES, EROFS…) as they are.
 */
export function acquireLock(dir: string): () => void {
  const path = join(dir, 'LOCK');
  const mine = `${process.pid}\n`;
  const tmp = join(dir, `LOCK.${process.pid}.${randomBytes(6).toString('hex')}`);
  fs.writeFileSync(tmp, mine, { mode: 0o600 });
  try {
    const fd = fs.openSync(tmp, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        fs.linkSync(tmp, path);
        return () => {
          try { if (fs.readFileSync(path, 'utf8') === mine) fs.unlinkSync(path); } catch { /* already gone */ }
        };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      let seen: string;
      try { seen = fs.readFileSync(path, 'utf8'); } catch { continue; } // released meanwhile: try again
      const pid = Number(seen.trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) throw new LockedError(pid, dir);
      const aside = join(dir, `LOCK.stale.${process.pid}.${randomBytes(6).toString('hex')}`);
      try { fs.renameSync(path, aside); } catch { continue; } // another taker moved it first
      const moved = fs.readFileSync(aside, 'utf8');
      if (moved !== seen) {
        // We moved a lock taken since we read: put it back if we still can, and yield.
        try { fs.linkSync(aside, path); } catch { /* its owner will notice nothing: LOCK is its */ }
        fs.unlinkSync(aside);
        const other = Number(moved.trim());
        throw new LockedError(other, dir);
      }
      fs.unlinkSync(aside);
    }
    throw new Error(`could not take the lock on ${dir}`);
  } finally {
    try { fs.unlinkSync(tmp); } catch { /* gone */ }
  }
}
