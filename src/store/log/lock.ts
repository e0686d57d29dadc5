/**
 * One writer per data dir (docs/storage.md#lock-file): the server or a CLI holds `DATA_DIR/LOCK`,
 * naming its pid and, from /proc, its start time. A pid alone can be reused by an unrelated process
 * after a crash, so a lock is held only while that pid runs and started at the recorded time; where
 * that cannot be compared, the holder must answer on the admin socket.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { socketPathIn } from './adminPath.js';

export class LockedError extends Error {
  constructor(readonly pid: number, dir: string) {
    super(`data dir ${dir} is in use by process ${pid}`);
  }
}

/** A lock's content: the holder's pid and start time (null in the pid-only format). */
interface Holder { pid: number; start: string | null }

/** How long a holder has to accept a connection on its admin socket before it counts as live anyway. */
const PROBE_TIMEOUT_MS = 2000;
/** Connect errors that mean no process listens on the socket path. */
const NO_LISTENER = new Set(['ECONNREFUSED', 'ENOENT', 'ENOTDIR', 'ENOTSOCK']);

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
}

/** The start time of process `pid` (field 22 of `/proc/<pid>/stat`, as text); null without /proc or the process. */
export function processStartTime(pid: number | 'self'): string | null {
  let stat: string;
  try { stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1'); } catch { return null; }
  // Field 2 (the command name, in parentheses) may hold spaces and parentheses: count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const start = fields[22 - 3];
  return start !== undefined && /^\d+$/.test(start) ? start : null;
}

/** Parses a lock's content; null for an empty or unreadable one (a stale lock). */
function parseLock(text: string): Holder | null {
  const m = /^\s*(\d+)\s*(?:\n\s*starttime\s+(\d+)\s*)?$/.exec(text);
  if (!m) return null;
  const pid = Number(m[1]);
  return Number.isSafeInteger(pid) && pid > 0 ? { pid, start: m[2] ?? null } : null;
}

/** Whether a connection to `dir`'s admin socket is accepted (a running server listens there). */
function adminSocketAnswers(dir: string): Promise<boolean> {
  const path = socketPathIn(dir);
  if (path === null) return Promise.resolve(false);
  return new Promise((resolve) => {
    const sock = net.connect(path);
    const done = (answered: boolean) => { clearTimeout(timer); sock.destroy(); resolve(answered); };
    // Only "nobody listens" makes the holder stale: a slow or refusing listener is busy, not gone.
    const timer = setTimeout(() => done(true), PROBE_TIMEOUT_MS);
    sock.once('connect', () => done(true));
    sock.once('error', (e: NodeJS.ErrnoException) => done(!NO_LISTENER.has(e.code ?? '')));
  });
}

/**
 * Whether `holder` names a running process that holds the lock: the pid runs and started when the
 * lock says, or, without start times, its admin socket answers. This process's own pid does not.
 */
async function held(holder: Holder | null, dir: string): Promise<boolean> {
  if (holder === null || holder.pid === process.pid || !alive(holder.pid)) return false;
  const start = holder.start === null ? null : processStartTime(holder.pid);
  if (start !== null) return start === holder.start;
  return adminSocketAnswers(dir);
}

/** The pid holding `dir`'s lock when that process runs and is the holder (see {@link acquireLock}), else null. */
export async function lockHolder(dir: string): Promise<number | null> {
  let holder: Holder | null;
  try { holder = parseLock(fs.readFileSync(join(dir, 'LOCK'), 'utf8')); } catch { return null; }
  return holder !== null && await held(holder, dir) ? holder.pid : null;
}

/**
 * Takes `dir`'s lock for this process; resolves with a release function. The lock appears with
 * its content: a private temp file hard-linked to `LOCK` (which fails when it exists), so no one
 * reads an empty lock. A stale lock is moved aside by a rename (one taker wins) and checked to be
 * the one read before it is discarded.
 * @throws LockedError when another running process holds it; fs errors (EACCES, EROFS…) as they are.
 */
export async function acquireLock(dir: string): Promise<() => void> {
  const path = join(dir, 'LOCK');
  const start = processStartTime('self');
  const mine = `${process.pid}\n${start === null ? '' : `starttime ${start}\n`}`;
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
      const holder = parseLock(seen);
      if (await held(holder, dir)) throw new LockedError(holder!.pid, dir);
      const aside = join(dir, `LOCK.stale.${process.pid}.${randomBytes(6).toString('hex')}`);
      try { fs.renameSync(path, aside); } catch { continue; } // another taker moved it first
      const moved = fs.readFileSync(aside, 'utf8');
      if (moved !== seen) {
        // We moved a lock taken since we read: put it back if we still can, and yield.
        try { fs.linkSync(aside, path); } catch { /* its owner will notice nothing: LOCK is its */ }
        fs.unlinkSync(aside);
        throw new LockedError(parseLock(moved)?.pid ?? 0, dir);
      }
      fs.unlinkSync(aside);
    }
    throw new Error(`could not take the lock on ${dir}`);
  } finally {
    try { fs.unlinkSync(tmp); } catch { /* gone */ }
  }
}
