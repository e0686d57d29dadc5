/**
 * One compaction run of a log (docs/storage.md#compaction): the capture point and the state taken
 * there, the compacted file written ({@link writeCompactedFile}), the lines appended meanwhile
 * copied, the pause, the rename and the folder fsync, and what retention drops from memory after.
 * `Db` decides when to compact; a run reads and changes it through {@link CompactionHost}.
 */
import { read as readCb } from 'node:fs';
import { promisify } from 'node:util';
import { dirname, basename } from 'node:path';
import { StorageFailedError, type AppendLog } from '../log/log.js';
import { discard, writeCompactedFile, type Capture, type CapturedTable } from './compactedFile.js';
import type { ByteArena } from '../memory/arena.js';
import type { Held, Table } from '../memory/table.js';
import type { StoreFs } from '../log/fs.js';
import type { Retention } from './retention.js';
import { STATELESS, type Persist } from './states.js';

/** What a compaction run reads and changes of its log (`Db` gives it, one per run). */
export interface CompactionHost {
  readonly path: string;
  readonly fs: StoreFs;
  /** The longest line of the new file (`DbOptions.lineBytes`; undefined: the default). */
  readonly lineBytes: number | undefined;
  readonly log: AppendLog;
  /** Whether the log is being closed. */
  closing(): boolean;
  /** Resolves true at a moment with no transaction open, or false (`Db.quiet`). */
  quiet(): Promise<boolean>;
  /** Transactions handed to the log so far. */
  handed(): number;
  /** Marks the capture point: transactions handed after `mark.handed` add their ops to `mark.after` (`Db.commit`). */
  capturing(mark: { handed: number; after: number }): void;
  /** The log's tables by type, and its arena of records held as bytes (null: none yet). */
  readonly tables: ReadonlyMap<string, Table>;
  readonly arena: ByteArena | null;
  /** The types held as bytes (`Db.holdAsBytes`), and whether a record of one is to be. */
  readonly coldTypes: ReadonlyMap<string, unknown>;
  heldAsBytes(type: string, rec: object): boolean;
  /** The transactions handed to the log and not on disk yet. */
  readonly inflight: Iterable<{ readonly undo: ReadonlyArray<readonly [string, string, object | undefined]> }>;
  /** Per record type, how each of its listeners' state is saved (`Db.on`). */
  readonly persisted: ReadonlyMap<string, ReadonlyArray<Persist | typeof STATELESS | undefined>>;
  /** The log's retention rules (`Db.retain`). */
  readonly retention: Retention;
  /** The new file is the log: it holds transactions through `handed` as records, `ops` operations, `covered` in
   * its block. */
  replaced(handed: number, ops: number, covered: number): void;
  /** Record (type, id), `rec`, was dropped by its table: its listeners see it deleted (nothing is written). */
  dropped(type: string, id: string, rec: object): void;
}

/**
 * The state at the capture point, synchronously: every table's ids and entries (records are
 * immutable; the arena is pinned) and every persisted state's copy. For a type held as bytes, a
 * record the new file serializes becomes bytes when it is on disk and unchanged, and one its
 * retention rule drops is added to `drops`.
 */
function capture(db: CompactionHost, drops: Array<[number, number, object]>): Capture {
  /** Records of types held as bytes put by transactions not on disk yet, as `type\0id`. */
  let unsure: Set<string> | null = null;
  if (db.coldTypes.size > 0) {
    for (const tx of db.inflight) for (const [type, id] of tx.undo) if (db.coldTypes.has(type)) (
      unsure ??= new Set()).add(`${type}\u0000${id}`);
  }
  const tables: CapturedTable[] = [];
  for (const [type, table] of db.tables) {
    if (table.size === 0) continue;
    const c: CapturedTable = { type, ...table.capture() };
    if (db.coldTypes.has(type)) {
      c.hold = (i, text) => {
        const obj = c.objs[i]!;
        if (!db.heldAsBytes(type, obj) || unsure?.has(`${type}\u0000${c.ids[i]}`)) return;
        table.hold(c.ids[i], obj, () => db.arena!.add(text));
      };
    }
    tables.push(c);
  }
  const states: Capture['states'] = [];
  for (const list of db.persisted.values()) {
    for (const p of list) if (p !== undefined && p !== STATELESS) states.push({ name: p.name, save: p.capture() });
  }
  const dropped = db.coldTypes.size === 0 ? undefined : (t: number, i: number, rec: object) =>
    { if (db.coldTypes.has(tables[t].type)) drops.push([t, i, rec]); };
  return { tables, states, dropped };
}

/**
 * Removes from memory the records of types held as bytes that retention dropped from the new
 * file (`drops`), each one still as captured: through its listeners, a delete that is not written.
 */
function dropRetained(db: CompactionHost, capture: Capture, drops: ReadonlyArray<[number, number, object]>): void {
  for (const [t, i, rec] of drops) {
    const c = capture.tables[t];
    const id = c.ids[i];
    const table = db.tables.get(c.type);
    if (table === undefined || !table.dropIf(id, c.held[i] as Held, c.objs[i], c.refs[i])) continue;
    db.dropped(c.type, id, rec);
  }
}

/**
 * One compaction of `db`'s log (docs/storage.md#compaction, steps 1–6): waits for a capture point,
 * takes the state there, writes the new file, copies the lines appended meanwhile, pauses writing
 * for the last of them, the sync and the rename, fsyncs the folder and resumes on the new file.
 * Returns without a change when the log is closing, no capture point comes, or a write fails
 * before the rename (abandoned: the temp file is removed).
 * @throws fs errors of the new file (the log is untouched).
 */
export async function runCompaction(db: CompactionHost): Promise<void> {
  const log = db.log;
  if (db.closing() || !(await db.quiet()) || log.failed) return;
  // The capture point: memory now equals the file plus the lines handed to the log so far.
  const drops: Array<[number, number, object]> = [];
  const captured = capture(db, drops);
  const from = log.handedEnd;
  const failures = log.failures;
  const mark = { handed: db.handed(), after: 0 };
  db.capturing(mark);
  const fs = db.fs;
  const oldFd = log.descriptor;
  // The refs of bytes captured stay valid until the file is written: their frees wait.
  const arena = db.arena;
  arena?.pin();
  let written: Awaited<ReturnType<typeof writeCompactedFile>>;
  try {
    written = await writeCompactedFile(db.path, captured, arena, db.retention, fs,
      `${basename(db.path)}.compact-${process.pid}`, db.lineBytes);
  } finally {
    arena?.unpin();
  }
  let replacement: { fd: number; size: number } | undefined;
  let renamed = false;
  // A synced log goes on through an O_DSYNC descriptor (docs/decisions.md#durable-writes-in-one-system-call).
  let syncedFd: number | undefined;
  const abandoned = () => log.failures !== failures || log.failed !== null || log.descriptor !== oldFd;
  try {
    if (log.synced) syncedFd = await fs.openSynced!(written.tmp);
    // Catch up with the lines appended meanwhile, without stopping writes, until little is left.
    let copied = from;
    for (let round = 0; round < 10 && !abandoned(); round++) {
      const upTo = log.size;
      if (round > 0 && upTo - copied < CATCH_UP_BYTES) break;
      written.size += await copyRange(oldFd, fs, written.fd, copied, upTo, written.size);
      copied = upTo;
    }
    if (abandoned()) return;
    if (copied > from) await fs.fdatasync(written.fd);
    // The last lines: writing pauses (a frame partly written is finished first) for them, the sync and the rename.
    await log.pause();
    try {
      if (abandoned()) return;
      if (log.size > copied) {
        written.size += await copyRange(oldFd, fs, written.fd, copied, log.size, written.size);
        await fs.fdatasync(written.fd);
      }
      await fs.rename(written.tmp, db.path);
      renamed = true;
      replacement = { fd: syncedFd ?? written.fd, size: written.size };
      db.replaced(mark.handed, written.records + mark.after, written.records);
      await fs.close(oldFd).catch(() => {});
      if (syncedFd !== undefined) await fs.close(written.fd).catch(() => {});
      // Without the folder's fsync the rename may not survive a crash: refuse writes (docs/storage.md#faults).
      try {
        await fs.fsyncDir(dirname(db.path));
      } catch (err) {
        log.fail(new StorageFailedError(
          `fsync of ${dirname(db.path)} after compacting ${db.path} failed: ${(err as Error).message}; writes are ` +
            `refused until restart`));
      }
    } finally {
      log.resume(replacement);
    }
    if (renamed) dropRetained(db, captured, drops);
  } finally {
    if (!renamed) {
      if (syncedFd !== undefined) await fs.close(syncedFd).catch(() => {});
      await discard(fs, written.fd, written.tmp);
    }
  }
}

/** Below this many bytes appended during a compaction, the rest is copied with writes paused. */
const CATCH_UP_BYTES = 256 * 1024;

const readAt = promisify(readCb);

/**
 * Copies bytes [from, to) of `src` to `dst` at `at`, 4 MiB at a time; returns how many were copied.
 * @throws fs errors; Error when `src` ends before `to`.
 */
async function copyRange(src: number, fs: StoreFs, dst: number, from: number, to: number, at: number): Promise<number> {
  const buf = Buffer.allocUnsafe(Math.min(4 << 20, Math.max(to - from, 1)));
  let done = 0;
  while (from + done < to) {
    const { bytesRead } = await readAt(src, buf, 0, Math.min(buf.length, to - from - done), from + done);
    if (bytesRead === 0) throw new Error('the log ended before the lines to copy');
    await fs.write(dst, buf.subarray(0, bytesRead), at + done);
    done += bytesRead;
  }
  return done;
}
