/**
 * Moving a workspace between cells (docs/deployment.md#moving-a-workspace): the source cell copies the workspace's log
 * to the target while writes go on, pauses its writes (503 `moving`), sends the rest and its system records;
 * the target serves it and points HAProxy's maps at itself; the source keeps a tombstone (503 `moved`).
 * Cells talk over `/cell/v1/` on their HTTP port, authenticated with a token derived from the shared `secret`.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import { createHash, createHmac, timingSafeEqual, type Hash } from 'node:crypto';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { cellRoutes, type Cell } from '../admin/cells.js';
import { AdminError } from '../admin/operations.js';
import { NotFoundError } from '../core/errors.js';
import { iso, type Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { CellConfig } from '../core/config.js';
import { WorkspaceMovedError, type Store, type WorkspaceSystemRecords } from '../store/store.js';
import type { Workspace } from '../domain/workspace.js';
import type { EventStreams } from '../areas/events/stream.js';
import type { CellSync } from './cellSync.js';

/** Bytes per `PUT /cell/v1/incoming/{id}` request. */
const CHUNK = 4 * 1024 * 1024;
/** The copy goes on while writes run until what is left to send is under this (bytes), or after {@link ROUNDS}. */
const CAUGHT_UP = 1024 * 1024;
const ROUNDS = 20;
const ID = /^[0-9a-f-]{36}$/;

/** What a move did (the CLI prints it). */
export interface MoveReport {
  object: 'workspace_move'; workspaceId: string; from: string; to: string;
  /** Bytes of log sent, copy rounds before the pause, and how long writes were paused (ms). */
  bytes: number; rounds: number; pauseMs: number;
  /** HAProxy runtime APIs the target told, and those it could not (their map files need `cli cells haproxy`). */
  routersTold: string[]; routersMissed: string[];
}

/** The bearer token cells send each other: an HMAC of the shared `secret` (hex). */
export const cellToken = (secret: Buffer): string => createHmac('sha256', secret).update('cell-api/v1').digest('hex');

/** One request to another cell's `/cell/v1/` API; resolves with its status and JSON body. @throws network errors */
function cellRequest(address: string, token: string, method: string, path: string, body: Buffer | string):
  Promise<{ status: number; body: Record<string, unknown> }> {
  const at = address.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    const req = http.request({ host: address.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(address.slice(at + 1)),
      method, path, agent: false, timeout: 30_000,
      headers: { Authorization: `Cell ${token}`, 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let parsed: Record<string, unknown> = {};
        try { parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>; } catch { /**/ }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('the target cell did not answer in 30 s')));
    req.on('error', reject);
    req.end(body);
  });
}

/** A consistent cut of `ws`'s log: a descriptor of the file it writes now and the length after its answered writes. */
async function cutOf(ws: Workspace): Promise<{ fd: number; end: number; ino: number }> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const cut = ws.db.backupCut();
    if (cut !== null) {
      const fd = fs.openSync(ws.db.path, 'r');
      const a = fs.fstatSync(fd);
      const b = fs.fstatSync(cut.fd);
      if (a.ino === b.ino && a.dev === b.dev) return { fd, end: cut.end, ino: a.ino };
      fs.closeSync(fd);
    }
    await ws.db.compactionSettled();
  }
  throw new AdminError(`the log of workspace ${ws.id} could not be cut (compactions kept swapping it)`);
}

/**
 * Moves workspace `id` from this cell to `to` (docs/deployment.md#moving-a-workspace).
 * @throws NotFoundError for a workspace not served here; AdminError when this server is not a cell, `to` is this
 *   cell, or the target refused (writes then resume here and nothing changed); fs and network errors likewise.
 */
export async function moveWorkspace(o: { store: Store<Workspace>; cell: CellConfig | null; streams: EventStreams;
  clock: Clock; logger: Logger }, id: string, to: Cell): Promise<MoveReport> {
  const { store, cell } = o;
  if (cell === null) throw new AdminError('this server is not a cell: start it with CELL_NAME to move workspaces');
  if (to.name === cell.name) throw new AdminError(`workspace ${id} is on cell ${cell.name} already`);
  const ws = store.workspace(id);
  if (ws === undefined) throw new NotFoundError({ entity: 'workspace', id });
  if (store.moving.has(id)) throw new AdminError(`workspace ${id} is being moved already`);
  const token = cellToken(store.secret);
  let sent = 0;
  let ino = -1;
  let bytes = 0;
  let hash: Hash = createHash('sha256');
  /** Sends the log from where the last round ended (from 0 when a compaction replaced the file) up to a new cut. */
  const round = async (): Promise<number> => {
    const cut = await cutOf(ws);
    try {
      if (cut.ino !== ino) { sent = 0; ino = cut.ino; hash = createHash('sha256'); }
      const left = cut.end - sent;
      for (let offset = sent; offset < cut.end || offset === 0; offset += CHUNK) {
        const n = Math.min(CHUNK, cut.end - offset);
        const buf = Buffer.alloc(n);
        if (n > 0) fs.readSync(cut.fd, buf, 0, n, offset);
        const r = await cellRequest(to.address, token, 'PUT', `/cell/v1/incoming/${id}?offset=${offset}`, buf);
        if (r.status !== 200) {
          throw new AdminError(`cell ${to.name} refused the log: ${String(r.body.error ?? r.status)}`);
        }
        hash.update(buf);
        bytes += n;
        if (n === 0) break;
      }
      sent = cut.end;
      return left;
    } finally {
      fs.closeSync(cut.fd);
    }
  };
  let rounds = 0;
  while (rounds < ROUNDS) { rounds++; if (await round() < CAUGHT_UP) break; }
  // The pause: writes answer 503 `moving` until the target serves the workspace.
  const paused = performance.now();
  store.moving.add(id);
  try {
    await ws.db.refuseWrites(new WorkspaceMovedError(id, true));
    await ws.db.compactionSettled();
    await round();
    const records = store.systemRecordsOf(id)!;
    const r = await cellRequest(to.address, token, 'POST', `/cell/v1/incoming/${id}/adopt`,
      JSON.stringify({ records, bytes: sent, sha256: hash.copy().digest('hex') }));
    if (r.status !== 200) throw new AdminError(`cell ${to.name} did not take workspace ${id}: ${
      String(r.body.error ?? r.status)}`);
    const movedAt = iso(o.clock.now());
    const routes = cellRoutes(store, o.clock.now(), id);
    await store.retireWorkspace({ id, to: to.name, movedAt, widgetKeys: routes.widgetKeys, slugs: routes.slugs });
    o.streams.closeWorkspace(ws);
    const pauseMs = Math.round(performance.now() - paused);
    o.logger.info('workspace moved', { workspaceId: id, to: to.name, bytes, rounds, pauseMs });
    return { object: 'workspace_move', workspaceId: id, from: cell.name, to: to.name, bytes, rounds, pauseMs,
      routersTold: r.body.told as string[], routersMissed: r.body.missed as string[] };
  } catch (e) {
    if (store.workspaces.has(id)) { store.moving.delete(id); await ws.db.refuseWrites(null); }
    throw e;
  }
}

/** The target side of a move: `/cell/v1/` on the HTTP port of a cell (docs/deployment.md#moving-a-workspace). */
export class CellApi {
  private readonly token: Buffer;
  /** Incoming logs being received: their running SHA-256 and length. */
  private readonly incoming = new Map<string, { hash: Hash; bytes: number }>();

  constructor(private readonly store: Store<Workspace>, private readonly sync: CellSync | null,
    private readonly clock: Clock, private readonly logger: Logger) {
    this.token = Buffer.from(cellToken(store.secret));
  }

  /** Whether a request for `url` is the cell API's. */
  static claims(url: string): boolean { return url.startsWith('/cell/v1/'); }

  /** Answers one request; never rejects. */
  handle = (req: IncomingMessage, res: ServerResponse): void => {
    const answer = (status: number, body: object) => {
      res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    const given = Buffer.from((req.headers.authorization ?? '').replace(/^Cell /, ''));
    if (given.length !== this.token.length || !timingSafeEqual(given, this.token)) {
      req.resume();
      answer(401, { error: 'a cell token is required' });
      return;
    }
    const url = new URL(req.url ?? '/', 'http://cell');
    const m = /^\/cell\/v1\/incoming\/([^/]+)(\/adopt)?$/.exec(url.pathname);
    if (m === null || !ID.test(m[1])) { req.resume(); answer(404, { error: 'no such cell operation' }); return; }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => { size += c.length; if (size <= CHUNK + 1024 * 1024) chunks.push(c); });
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const run = m[2] ? this.adopt(m[1], body) : this.receive(m[1], Number(url.searchParams.get('offset')), body);
      run.then((r) => answer(r.status, r.body), (e: Error) => {
        this.logger.error('cell operation failed', { path: url.pathname, error: e.message });
        answer(500, { error: e.message });
      });
    });
  };

  private path(id: string): string { return join(this.store.opts.dataDir, 'incoming', `${id}.log`); }

  /** Writes `body` at `offset` of the incoming log of `id` (offset 0 starts it again). */
  private async receive(id: string, offset: number, body: Buffer): Promise<{ status: number; body: object }> {
    if (this.store.workspaces.has(id)) return { status: 409, body: { error: `workspace ${id} is served here` } };
    let state = this.incoming.get(id);
    if (offset === 0) {
      fs.mkdirSync(join(this.store.opts.dataDir, 'incoming'), { recursive: true, mode: 0o700 });
      fs.writeFileSync(this.path(id), '', { mode: 0o600 });
      this.incoming.set(id, state = { hash: createHash('sha256'), bytes: 0 });
    }
    if (state === undefined || offset !== state.bytes) {
      return { status: 409, body: { error: `expected offset ${state?.bytes ?? 0}, got ${offset}` } };
    }
    fs.appendFileSync(this.path(id), body);
    state.hash.update(body);
    state.bytes += body.length;
    return { status: 200, body: { bytes: state.bytes } };
  }

  /** Checks the incoming log, puts it in place and serves the workspace, then points the routers here. */
  private async adopt(id: string, body: Buffer): Promise<{ status: number; body: object }> {
    const state = this.incoming.get(id);
    const given = JSON.parse(body.toString('utf8')) as { records: WorkspaceSystemRecords; bytes: number;
      sha256: string };
    if (state === undefined || state.bytes !== given.bytes || state.hash.digest('hex') !== given.sha256) {
      this.incoming.delete(id);
      return { status: 409, body: { error: 'the log received differs from the one sent' } };
    }
    this.incoming.delete(id);
    const fd = fs.openSync(this.path(id), 'r+');
    try { fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
    fs.renameSync(this.path(id), this.store.workspaceLog(id));
    await this.store.adoptWorkspace(given.records);
    const routes = cellRoutes(this.store, this.clock.now(), id);
    const told = this.sync ? await this.sync.claim(routes) : { told: [], missed: [] };
    return { status: 200, body: told };
  }
}
