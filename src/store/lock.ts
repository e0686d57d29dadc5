/**
 * One writer per data dir: the server (or a CLI working on the files) holds `DATA_DIR/LOCK`.
 *
 * The lock names its holder by pid and, where Linux's /proc gives it, by the process's start
 * time (field 22 `starttime` of `/proc/<pid>/stat`, clock ticks since boot):
 *
 *     12345
 *     starttime 98765432
 *
 * A pid alone does not identify a process: after a crash and a reboot (or a long uptime) the
 * pid of the dead holder is often reused by an unrelated process, and a lock that trusted the
 * pid would refuse every start. So a lock is held only while a process with that pid runs AND
 * started at the recorded time. Where the start time cannot be compared (a lock written in the
 * older pid-only format, or no /proc), the holder must answer on the data dir's admin socket.
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

/**
 * The start time of process `pid` (`self` for this one): field 22 of `/proc/<pid>/stat`, in
 * clock ticks since boot, as decimal text; null without /proc or when the process is gone.
 */
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
    // Only "nobody listens" makes the holder stale. A listener that is slow to accept, or
    // refuses us for another reason (a full backlog, EACCES), is busy, not gone: count it live.
    const timer = setTimeout(() => done(true), PROBE_TIMEOUT_MS);
    sock.once('connect', () => done(true));
    sock.once('error', (e: NodeJS.ErrnoException) => done(!NO_LISTENER.has(e.code ?? '')));
  });
}

/**
 * Whether the lock content `holder` names a running process that is its holder: the pid runs
 * and, when both start times are known, started when the lock says; otherwise its admin
 * socket answers. This process's own pid counts as not running (a lock left by an earlier
 * instance of this pid).
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
 * Takes `dir`'s lock for this process; resolves with a release function.
 *
 * The lock file appears atomically with its content: pid and start time are written to a
 * private temp file, which is then hard-linked to `LOCK` (link fails when `LOCK` exists). So
 * no process can ever read an empty lock and take it for a stale one. A stale lock (its pid
 * gone, reused by another process, or — pid-only format — not answering on the admin socket)
 * is moved aside with a rename — only one taker's rename succeeds — and checked to be the
 * stale one that was read before it is discarded.
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
