/**
 * A cell keeps HAProxy's maps current (docs/deployment.md#several-machines): each credential, widget key, user email,
 * docs slug or workspace made on this cell is sent to every configured HAProxy runtime API (`add map`, `del map`)
 * as soon as it is on disk, so a request with it is routed here within a second, without a reload. Unreachable
 * runtime APIs are retried every second with what is still owed (bounded); `cli cells haproxy` rebuilds the files.
 */
import * as net from 'node:net';
import { backendOf, MAP_FILES, type CellRoutes } from '../admin/cells.js';
import type { CellConfig } from '../core/config.js';
import type { Logger } from '../core/logger.js';
import type { Store } from '../store/store.js';
import type { Workspace } from '../domain/workspace.js';

/** Commands owed to one runtime API past which the oldest are dropped (the next `cli cells haproxy` has them). */
const MAX_OWED = 100_000;
const RETRY_MS = 1000;

export class CellSync {
  private readonly owed = new Map<string, string[]>();
  private readonly sending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly cell: CellConfig, private readonly logger: Logger) {
    for (const a of cell.haproxyRuntime) this.owed.set(a, []);
  }

  /** Hooks the system log and every workspace's log of `store`. */
  watch(store: Store<Workspace>): void {
    store.system.afterCommit((tx) => {
      for (const op of tx.ops) {
        const [kind, type, id] = op;
        if (type === 'key') {
          const k = store.system.get('key', id);
          if (kind === 'p' && k && k.revokedAt === null) this.add('tokens', k.hash);
          else if (k) this.del('tokens', k.hash);
        } else if (type === 'session' || type === 'activation') {
          if (kind === 'p') this.add('tokens', id); else this.del('tokens', id);
        } else if (type === 'user' && kind === 'p') {
          const u = store.system.get('user', id);
          if (u) this.add('emails', u.email.toLowerCase());
        } else if (type === 'workspace' && kind === 'p') this.add('workspaces', id);
      }
    });
    store.eachWorkspace((ws) => ws.db.afterCommit((tx) => {
      for (const [kind, type, id] of tx.ops) {
        if (kind !== 'p') continue;
        if (type === 'agent') { const a = ws.get('agent', id); if (a) this.add('widgetKeys', a.widgetKey); }
        if (type === 'source') {
          const slug = ws.get('source', id)?.publicDocs.slug;
          if (slug) this.add('slugs', slug);
        }
      }
    }));
  }

  /**
   * Points every key of `routes` at this cell on every runtime API (`set map`, or `add map` where HAProxy has no
   * entry for it), after a workspace moved here (docs/deployment.md#moving-a-workspace): 8 commands at a time per
   * runtime, each runtime tried for up to `deadlineMs`. @returns the runtime APIs told and those that could not be.
   */
  async claim(routes: CellRoutes, deadlineMs = 3000): Promise<{ told: string[]; missed: string[] }> {
    const commands: Array<[string, string]> = [];
    for (const [field, file] of Object.entries(MAP_FILES) as Array<[keyof CellRoutes, string]>) {
      for (const key of routes[field]) commands.push([`${this.cell.mapsDir}/${file}`, key]);
    }
    const backend = backendOf(this.cell.name);
    const told: string[] = [];
    const missed: string[] = [];
    await Promise.all(this.cell.haproxyRuntime.map(async (address) => {
      const until = Date.now() + deadlineMs;
      let next = 0;
      const worker = async () => {
        while (next < commands.length) {
          const [map, key] = commands[next++];
          const answer = await runtimeCommand(address, `set map ${map} ${key} ${backend}`, until);
          if (/not found/i.test(answer)) await runtimeCommand(address, `add map ${map} ${key} ${backend}`, until);
        }
      };
      try {
        await Promise.all(Array.from({ length: 8 }, worker));
        told.push(address);
      } catch (e) {
        this.logger.warn('HAProxy runtime API not told of a moved workspace', { address, error: (e as Error).message });
        missed.push(address);
      }
    }));
    return { told, missed };
  }

  /** Stops retrying (shutdown). */
  close(): void { this.closed = true; clearTimeout(this.timer); }

  private add(map: keyof CellRoutes, key: string): void {
    this.queue(`add map ${this.cell.mapsDir}/${MAP_FILES[map]} ${key} ${backendOf(this.cell.name)}`);
  }

  private del(map: keyof CellRoutes, key: string): void {
    this.queue(`del map ${this.cell.mapsDir}/${MAP_FILES[map]} ${key}`);
  }

  private queue(command: string): void {
    for (const [address, list] of this.owed) {
      list.push(command);
      if (list.length > MAX_OWED) list.splice(0, list.length - MAX_OWED);
      this.flush(address);
    }
  }

  /** Sends what `address` is owed on one connection (commands joined by `;`, HAProxy's non-interactive form). */
  private flush(address: string): void {
    const list = this.owed.get(address)!;
    if (this.closed || this.sending.has(address) || list.length === 0) return;
    const batch = list.splice(0, 200);
    this.sending.add(address);
    const at = address.lastIndexOf(':');
    const socket = net.connect(Number(address.slice(at + 1)), address.slice(0, at));
    let failed = false;
    socket.setTimeout(5000, () => socket.destroy(new Error('timed out')));
    socket.on('error', (e) => {
      failed = true;
      this.logger.warn('HAProxy runtime API unreachable',
        { address, error: e.message, owed: list.length + batch.length });
    });
    socket.resume();
    socket.on('close', () => {
      this.sending.delete(address);
      if (failed) {
        list.unshift(...batch);
        clearTimeout(this.timer);
        this.timer = setTimeout(() => { for (const a of this.owed.keys()) this.flush(a); }, RETRY_MS);
        this.timer.unref();
      } else this.flush(address);
    });
    socket.end(`${batch.join('; ')}\n`);
  }
}

/**
 * Sends one command to the HAProxy runtime API at `address` (`host:port`) and resolves with its answer; retried every
 * 100 ms while unreachable, until `until` (ms since the epoch). @throws Error once `until` passed.
 */
async function runtimeCommand(address: string, command: string, until: number): Promise<string> {
  const at = address.lastIndexOf(':');
  for (;;) {
    try {
      return await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(address.slice(at + 1)), address.slice(0, at));
        const chunks: Buffer[] = [];
        socket.setTimeout(Math.max(100, until - Date.now()), () => socket.destroy(new Error('timed out')));
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('error', reject);
        socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        socket.end(`${command}\n`);
      });
    } catch (e) {
      if (Date.now() + 100 > until) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
