/**
 * The data dir (docs/storage.md#data-dir-layout): `LOCK`, `system.log` (workspaces, API keys,
 * settings-area users and sessions), `workspaces/<id>.log` and `secret` (the HMAC key for cursors).
 * Opening it takes the lock and replays every log; the caller gives the function that opens a
 * workspace (src/domain/workspace.ts `openStore`).
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { Db, type Tx } from './db.js';
import { nodeFs, type StoreFs } from './log/fs.js';
import { acquireLock } from './log/lock.js';
import { CorruptLogError } from './log/recovery.js';
import type { BatchTiming } from './log/log.js';
import { repairLog, type RepairResult } from './log/repair.js';
import { attachIndexes, uniqueBy, type Built } from './indexes.js';
import type { Clock } from '../core/clock.js';
import { iso } from '../core/clock.js';

export interface WorkspaceRec { id: string; name: string; createdAt: string }
export interface KeyRec {
  id: string; workspaceId: string; name: string | null; prefix: string; hash: string;
  scopes: string[]; createdAt: string; expiresAt: string | null; revokedAt: string | null; lastUsedAt: string | null;
}
/**
 * A person who signs in to the settings area (docs/web.md#users): one workspace, an email unique
 * on the server (kept as given, compared lower-cased), and an scrypt hash of the password
 * (docs/security.md#passwords); null until the activation link was used.
 */
export interface UserRec {
  id: string; workspaceId: string; email: string; passwordHash: string | null;
  createdAt: string; activatedAt: string | null;
  /** `owner` or `member` (docs/web.md#people); a record without one (made before roles) is an owner. */
  role?: UserRole;
}
/** A settings-area user's role (docs/web.md#people). */
export type UserRole = 'owner' | 'member';
/** A single-use activation link (docs/web.md#users); the id is the SHA-256 (hex) of its token. */
export interface ActivationRec {
  id: string; userId: string; createdAt: string; expiresAt: string; usedAt: string | null }
/**
 * A signed-in browser (docs/security.md#sessions); the id is the SHA-256 (hex) of the cookie's
 * token, which is never stored. `lastSeenAt` is written at most once a minute.
 */
export interface SessionRec { id: string; userId: string; workspaceId: string; createdAt: string; lastSeenAt: string }
/**
 * A workspace that moved to another cell (docs/deployment.md#moving-a-workspace): this cell answers its requests 503
 * `moved` (the tombstone) and keeps its routing keys that are not credentials, to know them for its own.
 */
export interface MovedRec { id: string; to: string; movedAt: string; widgetKeys: string[]; slugs: string[] }
/** The record types of the system log. */
export interface SystemRecords {
  workspace: WorkspaceRec; key: KeyRec; user: UserRec; activation: ActivationRec; session: SessionRec;
  moved: MovedRec }
/** A workspace's records in the system log: what moves with it to another cell. */
export interface WorkspaceSystemRecords {
  workspace: WorkspaceRec; keys: KeyRec[]; users: UserRec[]; activations: ActivationRec[]; sessions: SessionRec[] }

/** What the store needs of a workspace it serves: its id and its log. */
export interface ServedWorkspace {
  readonly id: string;
  readonly db: Pick<Db,
    'path' | 'replay' | 'loadInfo' | 'failed' | 'close' | 'compact' | 'backupCut' | 'compactionSettled'
    | 'refuseWrites'>;
}

/** How a workspace's log is opened. */
export interface LogOptions {
  fs: StoreFs;
  sync: boolean;
  /** The clock's `now` (ms). */
  now: () => number;
  onError?: (err: Error) => void;
  compactionSlack?: number;
  /** `ignore`: load with a full replay, the snapshot block unused (docs/storage.md#snapshots). */
  snapshot?: 'use' | 'ignore';
  /** Told of each group-commit batch's durations (metrics, docs/deployment.md#monitoring). */
  onBatch?: BatchTiming;
}

/** The store's settings: those of every log (`snapshot` from `STARTUP_SNAPSHOT`), and the data dir's. */
export interface StoreOptions<W extends ServedWorkspace = ServedWorkspace> extends Omit<LogOptions, 'fs' | 'now'> {
  dataDir: string;
  clock: Clock;
  fs?: StoreFs;
  /**
   * Opens workspace `id` from its log at `path` (created when missing), with all it derives from it.
   * @throws CorruptLogError for a log with a corrupt line (the workspace is quarantined).
   */
  openWorkspace: (id: string, path: string, opts: LogOptions) => Promise<W>;
}

/** The indexes of API keys: by the SHA-256 of the key (authentication looks keys up by it). */
const keyIndexes = { byHash: uniqueBy((k: KeyRec) => k.hash) };
/** The index of users: by email, lower-cased (sign-in looks users up by it; emails are unique on the server). */
const userIndexes = { byEmail: uniqueBy((u: UserRec) => u.email.toLowerCase()) };

/** Thrown when the data dir cannot be used at all (missing permissions, not a directory…). */
export class DataDirError extends Error {}

/**
 * A workspace that exists but is offline: its log has a corrupt line, so none of its data is served
 * (a prefix could contradict what clients were told): 503 `storage_failed` until `cli repair`.
 */
export class WorkspaceUnavailableError extends Error {
  constructor(readonly workspaceId: string, readonly corrupt: CorruptLogError) {
    super(`workspace ${workspaceId} is offline: ${corrupt.message}; run "cli repair --workspace ${workspaceId}" to ` +
      `keep a copy of the log and cut it at the last good line`);
    this.name = 'WorkspaceUnavailableError';
  }
}

/**
 * A workspace this cell does not serve now (docs/deployment.md#moving-a-workspace): being moved (`moving`: its writes
 * paused, 503 `moving`) or moved away (503 `moved`, until the routers send it elsewhere).
 */
export class WorkspaceMovedError extends Error {
  constructor(readonly workspaceId: string, readonly moving: boolean) {
    super(moving ? `workspace ${workspaceId} is being moved to another cell` : `workspace ${workspaceId} has moved`);
    this.name = 'WorkspaceMovedError';
  }
}

export class Store<W extends ServedWorkspace = ServedWorkspace> {
  /** Of {@link eachWorkspace}; typed apart from `W` so that a Store<Workspace> is a Store of its base type. */
  private readonly watchers: Array<(ws: never) => void> = [];
  system!: Db<SystemRecords>;
  /** The workspaces being served, by id. */
  readonly workspaces = new Map<string, W>();
  /** Workspaces whose log could not be replayed (a corrupt line), by id: offline until repaired. */
  readonly quarantined = new Map<string, CorruptLogError>();
  /** Workspaces whose writes are paused while they move to another cell (docs/deployment.md#moving-a-workspace). */
  readonly moving = new Set<string>();
  /** Workspaces a repair is bringing back (their logs are being cut and replayed). */
  private readonly repairing = new Set<string>();
  private keys!: Built<typeof keyIndexes>;
  private users!: Built<typeof userIndexes>;
  secret!: Buffer;
  private releaseLock: () => void = () => {};

  private constructor(readonly opts: StoreOptions<W>) {}

  /**
   * Takes the data dir's lock, replays the system log and every workspace log. A workspace log
   * with a corrupt line puts only that workspace in {@link quarantined}; a corrupt system log
   * (workspaces and keys: nothing can be served without it) stops the open.
   * @throws LockedError, DataDirError, CorruptLogError (system log only).
   */
  static async open<W extends ServedWorkspace>(opts: StoreOptions<W>): Promise<Store<W>> {
    const st = new Store<W>(opts);
    const dir = opts.dataDir;
    try {
      fs.mkdirSync(join(dir, 'workspaces'), { recursive: true, mode: 0o700 });
      fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
    } catch (e) {
      throw new DataDirError(
        `data dir ${dir} is not usable: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    st.releaseLock = await acquireLock(dir);
    try {
      st.secret = loadSecret(join(dir, 'secret'));
      const system = Db.create<SystemRecords>(join(dir, 'system.log'), st.logOptions());
      st.keys = attachIndexes(system, 'key', keyIndexes);
      st.users = attachIndexes(system, 'user', userIndexes);
      st.system = await loadSystemLog(system);
      system.checkCommits((tx) => st.refuseMovedChanges(tx));
      for (const id of st.system.table('workspace').keys()) {
        if (st.system.get('moved', id) !== undefined) continue;
        try { await st.openWorkspace(id); } catch (e) {
          if (!(e instanceof CorruptLogError)) throw e;
          st.quarantined.set(id, e);
        }
      }
    } catch (e) {
      st.releaseLock();
      throw e;
    }
    return st;
  }

  /** The log file of workspace `id`. */
  workspaceLog(id: string): string { return join(this.opts.dataDir, 'workspaces', `${id}.log`); }

  /** How every log of the data dir is opened. */
  private logOptions(): LogOptions {
    const { opts } = this;
    return { fs: opts.fs ?? nodeFs, sync: opts.sync, now: () => opts.clock.now(), onError: opts.onError,
      compactionSlack: opts.compactionSlack, snapshot: opts.snapshot, onBatch: opts.onBatch };
  }

  private async openWorkspace(id: string): Promise<W> {
    const ws = await this.opts.openWorkspace(id, this.workspaceLog(id), this.logOptions());
    this.workspaces.set(id, ws);
    for (const fn of this.watchers) (fn as (ws: W) => void)(ws);
    return ws;
  }

  /** Calls `fn` with every open workspace now and with each one opened (created) from now on. */
  eachWorkspace(fn: (ws: W) => void): void {
    this.watchers.push(fn);
    for (const ws of this.workspaces.values()) fn(ws);
  }

  /** True when no workspace exists yet (bootstrap decides on this). */
  get empty(): boolean { return this.system.table('workspace').size === 0; }

  /**
   * Creates a workspace and its (empty) log; resolves once durable. `within` may add records
   * (a first key) to the same system-log transaction, so both exist or neither does.
   */
  async createWorkspace(name: string, within?: (tx: Tx<SystemRecords>, ws: WorkspaceRec) =>
    void): Promise<WorkspaceRec> {
    const rec: WorkspaceRec = { id: randomUUID(), name, createdAt: iso(this.opts.clock.now()) };
    await this.openWorkspace(rec.id);
    const tx = this.system.begin();
    tx.put('workspace', rec.id, rec);
    try { within?.(tx, rec); } catch (e) { tx.abort(); throw e; }
    await this.system.commit(tx);
    return rec;
  }

  /**
   * The workspace `id` when it is served; undefined when there is none.
   * @throws WorkspaceUnavailableError when it exists but is quarantined (its log is corrupt).
   */
  workspace(id: string): W | undefined {
    const ws = this.workspaces.get(id);
    if (ws !== undefined) return ws;
    const bad = this.quarantined.get(id);
    if (bad !== undefined) throw new WorkspaceUnavailableError(id, bad);
    if (this.system.get('moved', id) !== undefined) throw new WorkspaceMovedError(id, false);
    return undefined;
  }

  /** Whether workspace `id`'s writes are refused because it is moving or has moved (docs/deployment.md). */
  movedOrMoving(id: string): WorkspaceMovedError | null {
    if (this.moving.has(id)) return new WorkspaceMovedError(id, true);
    return this.system.get('moved', id) !== undefined ? new WorkspaceMovedError(id, false) : null;
  }

  /**
   * Refuses a system-log change to a key, user, session or activation of a workspace that is moving or moved: its
   * records went with it (docs/deployment.md#moving-a-workspace). @throws WorkspaceMovedError
   */
  private refuseMovedChanges(tx: Tx<SystemRecords>): void {
    if (this.moving.size === 0 && this.system.table('moved').size === 0) return;
    for (const op of tx.ops) {
      const [, type, id] = op;
      const rec = (op[0] === 'p' ? op[3] : this.system.get(type as keyof SystemRecords, id)) as
        { workspaceId?: string; userId?: string } | undefined;
      let wsId = rec?.workspaceId;
      if (type === 'activation' && rec?.userId !== undefined) wsId = this.system.get('user', rec.userId)?.workspaceId;
      if (type === 'workspace') wsId = id;
      if (type === 'moved' || wsId === undefined) continue;
      const refusal = this.movedOrMoving(wsId);
      if (refusal !== null) throw refusal;
    }
  }

  /** The tombstone holding widget key or docs slug `value`, if a workspace with it moved away. */
  movedWith(field: 'widgetKeys' | 'slugs', value: string): MovedRec | undefined {
    for (const m of this.system.table('moved').values()) if (m[field].includes(value)) return m;
    return undefined;
  }

  /** Workspace `id`'s records in the system log (docs/deployment.md#moving-a-workspace); undefined for none. */
  systemRecordsOf(id: string): WorkspaceSystemRecords | undefined {
    const workspace = this.workspaceRec(id);
    if (workspace === undefined) return undefined;
    const sys = this.system;
    const users = [...sys.table('user').values()].filter((u) => u.workspaceId === id);
    const userIds = new Set(users.map((u) => u.id));
    return { workspace, keys: [...sys.table('key').values()].filter((k) => k.workspaceId === id), users,
      activations: [...sys.table('activation').values()].filter((a) => userIds.has(a.userId)),
      sessions: [...sys.table('session').values()].filter((s) => s.workspaceId === id) };
  }

  /**
   * Serves a workspace moved here (docs/deployment.md#moving-a-workspace): its log is already at
   * {@link workspaceLog}; opens it, then writes its system records (and drops a tombstone of an earlier move away)
   * in one transaction. @throws Error when the workspace is served here already; the log's open errors.
   */
  async adoptWorkspace(rec: WorkspaceSystemRecords): Promise<W> {
    const id = rec.workspace.id;
    if (this.workspaces.has(id)) throw new Error(`workspace ${id} is served here already`);
    const ws = await this.openWorkspace(id);
    const tx = this.system.begin();
    tx.put('workspace', id, rec.workspace);
    for (const k of rec.keys) tx.put('key', k.id, k);
    for (const u of rec.users) tx.put('user', u.id, u);
    for (const a of rec.activations) tx.put('activation', a.id, a);
    for (const s of rec.sessions) tx.put('session', s.id, s);
    if (this.system.get('moved', id) !== undefined) tx.del('moved', id);
    await this.system.commit(tx);
    return ws;
  }

  /**
   * Stops serving workspace `id`, moved to another cell: writes its tombstone, closes its log and keeps the file
   * beside the logs as `<id>.log.moved` (docs/deployment.md#moving-a-workspace). Its other system records stay.
   */
  async retireWorkspace(moved: MovedRec): Promise<void> {
    const ws = this.workspaces.get(moved.id);
    const tx = this.system.begin();
    tx.put('moved', moved.id, moved);
    await this.system.commit(tx);
    this.workspaces.delete(moved.id);
    this.moving.delete(moved.id);
    if (ws === undefined) return;
    await ws.db.close();
    fs.renameSync(this.workspaceLog(moved.id), `${this.workspaceLog(moved.id)}.moved`);
  }

  /**
   * Repairs quarantined workspace `id` ({@link repairLog}) and serves it again; until the repaired
   * log is replayed, requests for it still answer as quarantined.
   * @throws Error when `id` is not quarantined or is being repaired; fs errors of the repair.
   */
  async repairWorkspace(id: string): Promise<RepairResult> {
    if (!this.quarantined.has(id)) throw new Error(`workspace ${id} is not quarantined`);
    if (this.repairing.has(id)) throw new Error(`workspace ${id} is being repaired`);
    this.repairing.add(id);
    try {
      const result = repairLog(this.workspaceLog(id), this.opts.clock.now());
      try {
        await this.openWorkspace(id);
      } catch (e) {
        if (e instanceof CorruptLogError) this.quarantined.set(id, e);
        throw e;
      }
      this.quarantined.delete(id);
      return result;
    } finally {
      this.repairing.delete(id);
    }
  }
  workspaceRec(id: string): WorkspaceRec | undefined { return this.system.get('workspace', id); }
  key(id: string): KeyRec | undefined { return this.system.get('key', id); }
  keyByHash(hash: string): KeyRec | undefined {
    const id = this.keys.byHash.get(hash);
    return id === undefined ? undefined : this.key(id);
  }
  /** The user whose email is `email`, compared without letter case. */
  userByEmail(email: string): UserRec | undefined {
    const id = this.users.byEmail.get(email.toLowerCase());
    return id === undefined ? undefined : this.system.get('user', id);
  }

  /** Flushes and closes every log, then releases the lock. */
  async close(): Promise<void> {
    await this.system.close();
    for (const ws of this.workspaces.values()) await ws.db.close();
    this.releaseLock();
  }
}

/** Loads the system log; a corrupt line stops the open with what to do about it. */
async function loadSystemLog(system: Db<SystemRecords>): Promise<Db<SystemRecords>> {
  try {
    return await system.load();
  } catch (e) {
    if (!(e instanceof CorruptLogError)) throw e;
    throw new CorruptLogError(e.file, e.line, e.offset, e.reason,
      'the system log holds every workspace and key, so nothing can be served: restore it from a backup, or run ' +
        '"cli repair --system" to keep a copy and cut it at the last good line (losing every later line)');
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
