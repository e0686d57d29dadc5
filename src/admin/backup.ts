/**
 * Online backup and restore (docs/storage.md#backup): every log copied up to a consistent cut — the byte length it
 * had after its last answered transaction — with `master.keys` and `secret`, each file fsync'd, then a
 * `manifest.json` of sizes and SHA-256 checksums, written last. A restore checks every file against the manifest
 * before it writes anything into an empty data dir.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { promises as fsp } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Store } from '../store/store.js';

/** The manifest of a backup: its format, when it was taken, and every file with its size and checksum. */
export interface BackupManifest {
  object: 'backup'; format: 1; takenAt: string;
  files: { path: string; bytes: number; sha256: string }[];
}

/** A refused backup or restore: `message` is the sentence the CLI prints (the admin socket passes it on). */
export class BackupError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'BackupError';
  }
}

const CHUNK = 1024 * 1024;
/** Files copied whole beside the logs, when present. */
const SIDE_FILES = ['master.keys', 'secret'];

/** A log's cut: the file to read (a descriptor of its own, on the same file the log writes) and how much of it. */
interface Cut { path: string; fd: number; end: number }

/** Whether `dir` is missing or an empty folder. @throws BackupError when it is a file. */
function emptyDir(dir: string): boolean {
  let names: string[];
  try { names = fs.readdirSync(dir); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw new BackupError(`${dir} cannot be read as a folder: ${(e as Error).message}`, { cause: e });
  }
  return names.length === 0;
}

/**
 * Opens `file` for reading and checks it is the file `logFd` writes: a compaction may have renamed a new file over
 * the path (the descriptor then differs; try again). Synchronous, so `end` read in the same turn is its cut.
 */
function openSame(file: string, logFd: number): number | null {
  const fd = fs.openSync(file, 'r');
  const a = fs.fstatSync(fd);
  let b: fs.Stats | null = null;
  try { b = fs.fstatSync(logFd); } catch { /* closed by a compaction that just swapped it */ }
  if (b !== null && a.ino === b.ino && a.dev === b.dev) return fd;
  fs.closeSync(fd);
  return null;
}

/** What a cut needs of a log. */
interface CutSource { backupCut(): { fd: number; end: number } | null; compactionSettled(): Promise<void> }

/**
 * Every log's cut, all taken in one turn of the event loop; a quarantined workspace's log is taken whole. A log
 * whose compaction has renamed its new file but not yet switched to it cannot be cut: the attempt waits for that
 * compaction to settle and takes every cut again.
 */
async function takeCuts(store: Store): Promise<Cut[]> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const cuts: Cut[] = [];
    let swapped: CutSource | null = null;
    const dbs: [string, CutSource][] = [['system.log', store.system]];
    for (const [id, ws] of store.workspaces) dbs.push([join('workspaces', `${id}.log`), ws.db]);
    for (const [rel, db] of dbs) {
      const cut = db.backupCut();
      const fd = cut === null ? null : openSame(join(store.opts.dataDir, rel), cut.fd);
      if (cut === null || fd === null) { swapped = db; break; }
      cuts.push({ path: rel, fd, end: cut.end });
    }
    if (swapped === null) {
      for (const id of store.quarantined.keys()) {
        const rel = join('workspaces', `${id}.log`);
        const fd = fs.openSync(join(store.opts.dataDir, rel), 'r');
        cuts.push({ path: rel, fd, end: fs.fstatSync(fd).size });
      }
      return cuts;
    }
    for (const c of cuts) fs.closeSync(c.fd);
    await swapped.compactionSettled(); // taken again at once, before another compaction can reach its rename
  }
  throw new BackupError('the logs kept being compacted while the backup tried to cut them; try again');
}

/** Copies `bytes` bytes of `fd` from its start to a new file `to` (mode 0600), fsync'd; returns the SHA-256. */
async function copyRange(fd: number, bytes: number, to: string): Promise<string> {
  const hash = createHash('sha256');
  const out = await fsp.open(to, 'wx', 0o600);
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    for (let at = 0; at < bytes;) {
      const { bytesRead } = await new Promise<{ bytesRead: number }>((res, rej) => fs.read(fd, buf, 0,
        Math.min(CHUNK, bytes - at), at, (e, n) => (e ? rej(e) : res({ bytesRead: n }))));
      if (bytesRead === 0) throw new Error(`${to}: the source ended at byte ${at} of ${bytes}`);
      hash.update(buf.subarray(0, bytesRead));
      await out.write(buf, 0, bytesRead, at);
      at += bytesRead;
    }
    await out.sync();
  } finally { await out.close(); }
  return hash.digest('hex');
}

/** fsyncs a folder, so the names created in it survive a crash. */
function syncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try { fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
}

/**
 * Writes a backup of `store`'s data dir to `to` (docs/storage.md#backup): the logs up to their cuts, taken together
 * when the call begins (every transaction answered before then is in it), `master.keys` and `secret`, then
 * `manifest.json`. Writes go on meanwhile.
 * @returns `{object:"backup", to, files, bytes, ms}`.
 * @throws BackupError when `to` is not an empty (or missing) folder; fs errors as they are.
 */
export async function backupTo(store: Store, to: string, now: () => Date = () => new Date()) {
  if (!emptyDir(to)) throw new BackupError(`the backup folder ${to} is not empty`);
  const t0 = performance.now();
  const takenAt = now().toISOString();
  const cuts = await takeCuts(store);
  const files: BackupManifest['files'] = [];
  try {
    fs.mkdirSync(join(to, 'workspaces'), { recursive: true, mode: 0o700 });
    for (const c of cuts) files.push({ path: c.path, bytes: c.end, sha256: await copyRange(c.fd, c.end,
      join(to, c.path)) });
  } finally { for (const c of cuts) fs.closeSync(c.fd); }
  for (const name of SIDE_FILES) {
    let fd: number;
    try { fd = fs.openSync(join(store.opts.dataDir, name), 'r'); } catch { continue; }
    try { files.push({ path: name, bytes: fs.fstatSync(fd).size, sha256: await copyRange(fd, fs.fstatSync(fd).size,
      join(to, name)) }); } finally { fs.closeSync(fd); }
  }
  syncDir(join(to, 'workspaces'));
  const manifest: BackupManifest = { object: 'backup', format: 1, takenAt, files };
  const tmp = join(to, 'manifest.json.tmp');
  fs.writeFileSync(tmp, JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  const mfd = fs.openSync(tmp, 'r+');
  try { fs.fsyncSync(mfd); } finally { fs.closeSync(mfd); }
  fs.renameSync(tmp, join(to, 'manifest.json'));
  syncDir(to);
  return { object: 'backup', to, takenAt, files: files.length, bytes: files.reduce((n, f) => n + f.bytes, 0),
    ms: Math.round(performance.now() - t0) };
}

/** Reads and checks the shape of `from/manifest.json`. @throws BackupError naming what is wrong. */
function readManifest(from: string): BackupManifest {
  let m: BackupManifest;
  try { m = JSON.parse(fs.readFileSync(join(from, 'manifest.json'), 'utf8')) as BackupManifest; } catch (e) {
    throw new BackupError(`${from} is not a backup: manifest.json cannot be read (${(e as Error).message})`,
      { cause: e });
  }
  const safe = (p: unknown) => typeof p === 'string' && /^(workspaces\/)?[A-Za-z0-9_.-]+$/.test(p) && !p.includes('..');
  if (m?.object !== 'backup' || m.format !== 1 || !Array.isArray(m.files) || !m.files.every((f) => safe(f?.path) &&
    Number.isSafeInteger(f.bytes) && typeof f.sha256 === 'string')) {
    throw new BackupError(`${from} is not a backup: manifest.json is not a backup manifest of format 1`);
  }
  return m;
}

/** The SHA-256 and size of `file`, read in chunks. */
async function digest(file: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of fs.createReadStream(file, { highWaterMark: CHUNK })) {
    hash.update(chunk as Buffer); bytes += (chunk as Buffer).length; }
  return { bytes, sha256: hash.digest('hex') };
}

/**
 * Restores the backup in `from` into the new data dir `dataDir` (docs/storage.md#backup): checks every file's size
 * and SHA-256 against the manifest first, then copies them (mode 0600, folders 0700), each fsync'd.
 * @returns `{object:"restore", dataDir, files, bytes}`.
 * @throws BackupError when `dataDir` is not empty, the manifest is missing or invalid, or a file is missing or
 *   differs from the manifest (nothing is written then).
 */
export async function restoreFrom(from: string, dataDir: string) {
  if (!emptyDir(dataDir)) throw new BackupError(`the data dir ${dataDir} is not empty: restore into a new folder`);
  const m = readManifest(from);
  for (const f of m.files) {
    let got;
    try { got = await digest(join(from, f.path)); } catch (e) {
      throw new BackupError(`the backup is damaged: ${f.path} cannot be read (${(e as Error).message})`, { cause: e });
    }
    if (got.bytes !== f.bytes) throw new BackupError(
      `the backup is damaged: ${f.path} has ${got.bytes} bytes, the manifest says ${f.bytes}`);
    if (got.sha256 !== f.sha256) throw new BackupError(
      `the backup is damaged: the SHA-256 of ${f.path} does not match the manifest`);
  }
  fs.mkdirSync(join(dataDir, 'workspaces'), { recursive: true, mode: 0o700 });
  fs.chmodSync(dataDir, 0o700);
  for (const f of m.files) {
    const fd = fs.openSync(join(from, f.path), 'r');
    try {
      if (await copyRange(fd, f.bytes, join(dataDir, f.path)) !== f.sha256) throw new BackupError(
        `the backup changed while it was restored: ${f.path}`);
    } finally { fs.closeSync(fd); }
  }
  syncDir(join(dataDir, 'workspaces'));
  syncDir(dataDir);
  syncDir(dirname(dataDir));
  return { object: 'restore', from, dataDir, files: m.files.length, bytes: m.files.reduce((n, f) => n + f.bytes, 0) };
}
