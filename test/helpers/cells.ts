/**
 * Cells behind a real HAProxy for the tests (docs/deployment.md#several-machines): cells as child servers with data
 * dirs of their own sharing `secret` and `master.keys`, and HAProxy started from `cli cells routes` and
 * `cli cells haproxy` as an operator runs them.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { join } from 'node:path';
import { callAdminSocket } from '../../src/admin/socket.js';
import { runCli, startServer, tempDir, type RunningChild } from './child.js';
import { within } from './poll.js';

/** Whether `haproxy` is missing; prints the loud banner then. */
export function haproxyMissing(what: string): boolean {
  const missing = spawnSync('haproxy', ['-v'], { encoding: 'utf8' }).status !== 0;
  if (missing) {
    const line = '!'.repeat(78);
    process.stderr.write(`${line}\n!!! SKIPPED: haproxy is not installed: ${what} NOT tested behind HAProxy `
      + `(apt-get install haproxy)\n${line}\n`);
  }
  return missing;
}

/**
 * A loopback port held by a listener until `release()`: no other listener, and no outgoing connection of a
 * test running beside, is given it meanwhile. Released just before the process that binds it starts.
 */
export async function reservePort(): Promise<{ port: number; release: () => Promise<void> }> {
  // A connection meanwhile (a cell reaching for the runtime API) is reset at once, as a closed port would refuse it.
  const s = net.createServer((socket) => socket.resetAndDestroy());
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  return { port, release: async () => { if (s.listening) await new Promise((r) => s.close(r)); } };
}

export interface Cells {
  names: string[];
  cells: Record<string, RunningChild>;
  /** The proxy's address, `http://127.0.0.1:PORT`. */
  url: string;
  confDir: string;
  /** `--cells` of the CLI: `a=127.0.0.1:PORT,…`. */
  list: string;
  admin(cell: string, op: string, args: Record<string, unknown>): Promise<any>;
  /** The cell's `requests_not_owned_total` by reason, scraped from its metrics port. */
  notOwned(cell: string): Promise<Record<string, number>>;
  /** Writes the proxy's files from every cell's routes and (re)starts HAProxy on them. */
  startProxy(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts cells `names` (none bootstraps), with `env` added to each. */
export async function startCells(names: string[], env: Record<string, string> = {}): Promise<Cells> {
  // HAProxy's two ports are written into the cells' settings before it runs, so they are held until it starts.
  const runtimePort = await reservePort();
  const frontPort = await reservePort();
  const [runtime, front] = [runtimePort.port, frontPort.port];
  const confDir = tempDir('sw-cells-haproxy-');
  const cells: Record<string, RunningChild> = {};
  let proxy: ChildProcess | undefined;
  const metricsPorts: Record<string, number> = {};
  const envOf = (name: string) => ({ CELL_NAME: name, METRICS_PORT: '0', CELL_HAPROXY_RUNTIME: `127.0.0.1:${runtime}`,
    CELL_MAPS_DIR: confDir, PUBLIC_URL: `http://127.0.0.1:${front}`, BOOTSTRAP: 'false', LOG_LEVEL: 'info',
    RATE_LIMIT_BURST: '100000', RATE_LIMIT_PER_MINUTE: '1000000', WEBHOOK_ALLOW_PRIVATE: 'true', ...env });
  const url = `http://127.0.0.1:${front}`;
  const stop = async () => {
    proxy?.kill('SIGKILL');
    await Promise.all([runtimePort.release(), frontPort.release()]);
    for (const c of Object.values(cells)) await c.stop();
  };
  /** Starts a cell and reads its metrics port (METRICS_PORT=0) from its "metrics listening" line. */
  const startCell = async (name: string, dataDir?: string) => {
    cells[name] = await startServer({ dataDir, env: envOf(name) });
    metricsPorts[name] = Number((await cells[name].waitForLine('metrics listening')).port);
  };
  try {
    await startCell(names[0]);
    // The cells of one deployment share the data dir's two secrets (docs/deployment.md#several-machines).
    for (const name of names.slice(1)) {
      const dir = tempDir(`sw-cell-${name}-`);
      for (const f of ['secret', 'master.keys']) copyFileSync(join(cells[names[0]].dataDir, f), join(dir, f));
      await startCell(name, dir);
    }
  } catch (e) { await stop(); throw e; }
  const list = names.map((n) => `${n}=127.0.0.1:${cells[n].port}`).join(',');
  return {
    names, cells, url, confDir, list, stop,
    admin: (cell, op, args) => callAdminSocket(cells[cell].dataDir, op, args) as Promise<any>,
    notOwned: async (cell) => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPorts[cell]}/metrics`)).text();
      const out: Record<string, number> = {};
      for (const m of text.matchAll(/^requests_not_owned_total\{reason="([a-z_]+)"\} (\d+)$/gm)) out[m[1]] = Number(m[2]);
      return out;
    },
    startProxy: async () => {
      proxy?.kill('SIGKILL');
      const files: string[] = [];
      for (const name of names) {
        const r = await runCli(cells[name].dataDir, ['cells', 'routes', '--cell', name]);
        assert.equal(r.code, 0, r.stderr);
        const file = join(confDir, `${name}.routes.json`);
        writeFileSync(file, r.stdout);
        files.push(file);
      }
      const written = await runCli(null, ['cells', 'haproxy', '--cells', list, '--routes', files.join(','),
        '--out', confDir, '--bind', `127.0.0.1:${front}`, '--runtime', `127.0.0.1:${runtime}`]);
      assert.equal(written.code, 0, written.stderr);
      const check = spawnSync('haproxy', ['-c', '-f', join(confDir, 'haproxy.cfg')], { encoding: 'utf8' });
      assert.equal(check.status, 0, check.stdout + check.stderr);
      await Promise.all([runtimePort.release(), frontPort.release()]);
      proxy = spawn('haproxy', ['-db', '-f', join(confDir, 'haproxy.cfg')], { stdio: ['ignore', 'ignore', 'pipe'] });
      await within(10_000, 'HAProxy answering', async () =>
        (await fetch(`${url}/healthz`).catch(() => null))?.status === 200);
    },
  };
}
