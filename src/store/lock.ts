/**
 * One writer per data dir (issue #2 point 4): the server holds `DATA_DIR/LOCK`, holding its
 * pid. A lock whose pid is no longer running (the server was killed) is taken over.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';

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
 * @throws LockedError when another running process holds it; fs errors (EACCES, EROFS…) as they are.
 */
export function acquireLock(dir: string): () => void {
  const path = join(dir, 'LOCK');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(path, 'wx', 0o600);
      fs.writeSync(fd, `${process.pid}\n`);
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      return () => {
        try { if (fs.readFileSync(path, 'utf8').trim() === String(process.pid)) fs.unlinkSync(path); } catch { /* already gone */ }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = lockHolder(dir);
      if (holder !== null) throw new LockedError(holder, dir);
      try { fs.unlinkSync(path); } catch { /* raced with another taker */ }
    }
  }
  throw new Error(`could not take the lock on ${dir}`);
}
