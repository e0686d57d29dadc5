/**
 * The data dir (DESIGN §7): `LOCK`, `system.log` (workspaces and API keys),
 * `workspaces/<id>.log` (one log per workspace) and `secret` (the server's HMAC key for
 * cursors). Opening it takes the lock and replays every log into memory.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { Db, type Rec, type Tx } from './db.js';
import { nodeFs, type StoreFs } from './fs.js';
import { acquireLock } from './lock.js';
import { Workspace } from '../workspace.js';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { ChangeListener } from './db.js';

export interface WorkspaceRec { id: string; name: string; createdAt: string }
export interface KeyRec {
  id: string; workspaceId: string; name: string | null; prefix: string; hash: string;
  scopes: string[]; createdAt: string; expiresAt: string | null; revokedAt: string | null; lastUsedAt: string | null;
}

export interface StoreOptions {
  dataDir: string;
  sync: boolean;
  clock: Clock;
  fs?: StoreFs;
  onError?: (err: Error) => void;
  /** Listeners of later areas' indexes, made per workspace. */
  workspaceListeners?: (workspaceId: string) => ChangeListener[];
  compactionSlack?: number;
}

/** Thrown when the data dir cannot be used at all (missing permissions, not a directory…). */
export class DataDirError extends Error {}

export class Store {
  system!: Db;
  readonly workspaces = new Map<string, Workspace>();
  /** SHA-256 of a key → key id. */
  readonly keyIdByHash = new Map<string, string>();
  secret!: Buffer;
  private releaseLock: () => void = () => {};

  private constructor(readonly opts: StoreOptions) {}

  /**
   * Takes the data dir's lock, replays the system log and every workspace log.
   * @throws LockedError, DataDirError, CorruptLogError.
   */
  static async open(opts: StoreOptions): Promise<Store> {
    const st = new Store(opts);
    const dir = opts.dataDir;
    try {
      fs.mkdirSync(join(dir, 'workspaces'), { recursive: true, mode: 0o700 });
      fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
    } catch (e) {
      throw new DataDirError(`data dir ${dir} is not usable: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    st.releaseLock = acquireLock(dir);
    try {
      st.secret = loadSecret(join(dir, 'secret'));
      const sfs = opts.fs ?? nodeFs;
      st.system = await Db.open(join(dir, 'system.log'), {
        fs: sfs, sync: opts.sync, now: () => opts.clock.now(), onError: opts.onError, compactionSlack: opts.compactionSlack,
        listeners: [(type, id, prev, next) => {
          if (type !== 'key') return;
          if (prev) st.keyIdByHash.delete(prev.hash as string);
          if (next) st.keyIdByHash.set(next.hash as string, id);
        }],
      });
      for (const id of st.system.table('workspace').keys()) await st.openWorkspace(id);
    } catch (e) {
      st.releaseLock();
      throw e;
    }
    return st;
  }

  private async openWorkspace(id: string): Promise<Workspace> {
    const ws = await Workspace.open(id, join(this.opts.dataDir, 'workspaces', `${id}.log`), {
      fs: this.opts.fs ?? nodeFs,
      sync: this.opts.sync,
      now: () => this.opts.clock.now(),
      onError: this.opts.onError,
      listeners: this.opts.workspaceListeners?.(id),
      compactionSlack: this.opts.compactionSlack,
    });
    this.workspaces.set(id, ws);
    return ws;
  }

  /** True when no workspace exists yet (bootstrap decides on this). */
  get empty(): boolean { return this.system.table('workspace').size === 0; }

  /**
   * Creates a workspace and its (empty) log; resolves once durable. `within` may add records
   * (a first key) to the same system-log transaction, so both exist or neither does.
   */
  async createWorkspace(name: string, within?: (tx: Tx, ws: WorkspaceRec) => void): Promise<WorkspaceRec> {
    const rec: WorkspaceRec = { id: randomUUID(), name, createdAt: iso(this.opts.clock.now()) };
    await this.openWorkspace(rec.id);
    const tx = this.system.begin();
    tx.put('workspace', rec.id, rec as unknown as Rec);
    try { within?.(tx, rec); } catch (e) { tx.abort(); throw e; }
    await this.system.commit(tx);
    return rec;
  }

  workspace(id: string): Workspace | undefined { return this.workspaces.get(id); }
  workspaceRec(id: string): WorkspaceRec | undefined { return this.system.get('workspace', id) as WorkspaceRec | undefined; }
  key(id: string): KeyRec | undefined { return this.system.get('key', id) as KeyRec | undefined; }
  keyByHash(hash: string): KeyRec | undefined {
    const id = this.keyIdByHash.get(hash);
    return id === undefined ? undefined : this.key(id);
  }

  /** Flushes and closes every log, then releases the lock. */
  async close(): Promise<void> {
    await this.system.close();
    for (const ws of this.workspaces.values()) await ws.db.close();
    this.releaseLock();
  }
}

function loadSecret(path: string): Buffer {
  try {
    const hex = fs.readFileSync(path, 'utf8').trim();
    if (/^[0-9a-f]{64}$/.test(hex)) return Buffer.from(hex, 'hex');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const secret = randomBytes(32);
  fs.writeFileSync(path, secret.toString('hex') + '\n', { mode: 0o600 });
  return secret;
}
