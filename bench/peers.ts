/**
 * The peers of the reads comparison that are not ours (bench/README.md, "Peers"):
 *
 *  - fastify 5, installed by `npm install` into a folder under os.tmpdir() — never into the
 *    project, its package.json or its lock file — and run by bench/fastify-server.ts, which
 *    loads it from that folder;
 *  - CPU pinning with `taskset`: the servers on one core, the load generator on another.
 *
 * Neither is needed for the bench to run: without the registry the fastify column is left out
 * with one line saying why, and without `taskset` (or with one core) nothing is pinned.
 */
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';

/** What the peer install gave: a folder to load fastify from, or why there is none. */
export type PeerInstall =
  | { ok: true; dir: string; version: string; how: string }
  | { ok: false; line: string };

/** The folder the peer is installed in: outside the project, reused by later runs. */
export const PEER_DIR = join(os.tmpdir(), 'sw-bench-peers');
/** An install older than this is replaced (a new fastify 5.x may have come out meanwhile). */
const REUSE_MS = 24 * 3600_000;
const INSTALL_TIMEOUT_MS = 120_000;

/** The version of fastify installed in `dir`, when it is a 5.x. */
function installedVersion(dir: string): string | undefined {
  try {
    const v = (JSON.parse(fs.readFileSync(join(dir, 'node_modules', 'fastify', 'package.json'), 'utf8')) as { version?: string }).version;
    return typeof v === 'string' && v.startsWith('5.') ? v : undefined;
  } catch { return undefined; }
}

/**
 * Installs `fastify@5` into {@link PEER_DIR} (or reuses the install a run of the last 24 hours
 * left there): `npm install --no-save --no-audit --no-fund`, run from that folder, at most
 * 120 s. Never throws: a failure comes back as the one line the run prints instead.
 */
export async function installFastify(): Promise<PeerInstall> {
  const dir = PEER_DIR;
  const stamp = join(dir, '.installed-at');
  const have = installedVersion(dir);
  if (have) {
    try {
      const at = Number(fs.readFileSync(stamp, 'utf8'));
      if (Date.now() - at < REUSE_MS) return { ok: true, dir, version: have, how: `reused the install of ${new Date(at).toISOString()} in ${dir}` };
    } catch { /* no stamp: install again */ }
  }
  fs.mkdirSync(dir, { recursive: true });
  // A package.json of its own, so npm takes this folder as the project root and never walks
  // up to another one.
  fs.writeFileSync(join(dir, 'package.json'), '{"name":"sw-bench-peers","private":true,"description":"fastify for the support-workspace bench; safe to delete"}\n');
  const t0 = performance.now();
  // One retry after a failed fetch (npm's default, two with up to a minute between them, makes
  // an unreachable registry cost ~70 s).
  const args = ['install', 'fastify@5', '--prefix', dir, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error', '--fetch-retries=1', '--fetch-retry-maxtimeout=10000'];
  const result = await new Promise<{ err: (Error & { code?: unknown; killed?: boolean }) | null; stderr: string }>((resolve) => {
    execFile('npm', args, { cwd: dir, timeout: INSTALL_TIMEOUT_MS, killSignal: 'SIGKILL', encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
      (err, _stdout, stderr) => resolve({ err, stderr: String(stderr ?? '') }));
  });
  const version = installedVersion(dir);
  if (!result.err && version) {
    fs.writeFileSync(stamp, String(Date.now()));
    return { ok: true, dir, version, how: `installed with npm into ${dir} in ${((performance.now() - t0) / 1000).toFixed(1)} s` };
  }
  if (have && installedVersion(dir)) {
    // The registry did not answer this time, but an older install is still there: use it.
    return { ok: true, dir, version: have, how: `reused the older install in ${dir} (npm install failed this time: ${(result.err?.message ?? '').split('\n')[0].slice(0, 120)})` };
  }
  const text = `${result.stderr}\n${result.err?.message ?? ''}`;
  if (result.err?.killed) return { ok: false, line: `fastify: not measured — the npm registry could not be reached (npm install did not finish within ${INSTALL_TIMEOUT_MS / 1000} s)` };
  if ((result.err as { code?: unknown } | null)?.code === 'ENOENT') return { ok: false, line: 'fastify: not measured — npm was not found on PATH' };
  const net = /\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|ERR_SOCKET_TIMEOUT|ECONNABORTED)\b/.exec(text)?.[1];
  if (net) return { ok: false, line: `fastify: not measured — the npm registry could not be reached (npm install: ${net})` };
  // npm's own words: `npm error code E404` and the line after it, not the pointer to its log.
  const lines = text.split('\n').map((l) => l.replace(/^npm (error|ERR!) ?/, '').trim()).filter((l) => l && !/complete log of this run/.test(l));
  const npmCode = /^code (\S+)/.exec(lines[0] ?? '')?.[1];
  const said = npmCode ? `${npmCode}: ${lines[1] ?? ''}` : lines[0] ?? 'no output';
  return { ok: false, line: `fastify: not measured — installing it failed (npm install: ${said.slice(0, 160)})` };
}

// ---------------------------------------------------------------------------------------------
// Pinning

/** Where the reads scenario runs things: `server` and `load` are taskset CPU lists. */
export type PinPlan = { on: true; server: string; load: string; all: string; line: string } | { on: false; line: string };

/**
 * `--pin on|off|auto` (auto: on when `taskset` runs and the machine has at least 2 cores).
 * On: every server of the reads scenario on CPU 0, the load generator on CPU 1.
 */
export function pinPlan(wanted: string | undefined): PinPlan {
  const cores = os.cpus().length;
  if (wanted === 'off') return { on: false, line: 'pinning: off (--pin off); the scheduler places the servers and the load generator' };
  let taskset = false;
  try { execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' }); taskset = true; } catch { taskset = false; }
  const why = !taskset ? 'taskset is not available' : cores < 2 ? `only ${cores} core` : '';
  if (why) {
    if (wanted === 'on') throw new Error(`--pin on: ${why}`);
    return { on: false, line: `pinning: off (${why}); the scheduler places the servers and the load generator` };
  }
  return { on: true, server: '0', load: '1', all: `0-${cores - 1}`, line: `pinning (reads and list): each server on CPU 0, the load generator on CPU 1, with taskset${wanted === 'on' ? '' : ' (default when taskset exists and there are ≥ 2 cores; --pin off to disable)'}` };
}

/** Sets the CPU affinity of every thread of `pid` (taskset -a -p). */
export function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}
