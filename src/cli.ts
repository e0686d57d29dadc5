/**
 * Admin CLI (docs/configuration.md#admin-cli): `node dist/cli.js <command> [--data-dir DIR] …`, JSON on stdout,
 * errors on stderr, exit 1 on failure (2 for usage). Through the admin socket of a server holding the data dir,
 * else on the files; a refusal is the same error object either way, worded by src/admin/cliMessages.ts.
 */
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Admin, AdminError, repairView } from './admin/operations.js';
import { callAdminSocket } from './admin/socket.js';
import { restoreFrom } from './admin/backup.js';
import { writeHaproxy } from './admin/cellsFiles.js';
import { parseCells } from './admin/cells.js';
import { cliMessage } from './admin/cliMessages.js';
import { LockedError, acquireLock, lockHolder } from './store/log/lock.js';
import { repairLog } from './store/log/repair.js';
import { openStore } from './domain/workspace.js';
import { refuseWritableByOthers } from './server/start.js';
import { systemClock } from './core/clock.js';
import { loadConfig, publicBaseUrl } from './core/config.js';
import { SecretBox } from './core/secrets.js';

const USAGE = `usage: cli.js <command> [--data-dir DIR]
  workspace create --name NAME
  workspace list
  workspace identity-secret --workspace ID
  key create --workspace ID [--name N] [--scopes s1,s2|*] [--expires-at ISO]
  key list --workspace ID
  key revoke KEY_ID
  webhook list --workspace ID
  user create --workspace ID --email E
  user link --email E
  import --workspace ID FILE
  custom-field create --workspace ID --label L --type T [--fill-mode M] [--description D] [--options a,b]
  tag create --workspace ID --name N
  agent create --workspace ID --name N [--description D]
  custom-field|tag|agent disable --workspace ID ITEM_ID
  secrets rotate
  repair --workspace ID | --system
  compact --workspace ID | --system
  export --workspace ID
  backup --to DIR
  restore --from DIR --data-dir NEW
  cells routes --cell NAME
  workspace move --workspace ID --to NAME --cells NAME=HOST:PORT,…
  cells haproxy --cells NAME=HOST:PORT,… --routes FILE,… --out DIR [--bind ADDR] [--runtime ADDR] [--maps-dir DIR]`;

class UsageError extends Error {}

/** `repair --system`: runs in the CLI itself, since no server can start on a corrupt system log. */
const SYSTEM_REPAIR = 'system.repair';
/** `restore`: runs in the CLI itself, into a data dir no server holds (it must be empty). */
const RESTORE = 'restore';
/** `cells haproxy`: runs in the CLI itself, on the proxy's machine, from the cells' `cells routes` files. */
const CELLS_HAPROXY = 'cells.haproxy';

function plan(argv: string[]): { dataDir: string; op: string; args: Record<string, unknown> } {
  const { values, positionals } = parseArgs({
    args: argv, allowPositionals: true, strict: true,
    options: {
      'data-dir': { type: 'string' }, name: { type: 'string' }, workspace: { type: 'string' },
      scopes: { type: 'string' }, 'expires-at': { type: 'string' }, help: { type: 'boolean' },
      label: { type: 'string' }, type: { type: 'string' }, 'fill-mode': { type: 'string' },
        description: { type: 'string' }, options: { type: 'string' },
      system: { type: 'boolean' }, email: { type: 'string' }, to: { type: 'string' }, from: { type: 'string' },
      cell: { type: 'string' }, cells: { type: 'string' }, routes: { type: 'string' }, out: { type: 'string' },
      bind: { type: 'string' }, runtime: { type: 'string' }, 'maps-dir': { type: 'string' },
    },
  });
  if (values.help) throw new UsageError('');
  const dataDir = resolve(values['data-dir'] ?? loadConfig().dataDir);
  const [area, verb, arg] = positionals;
  const need = (v: string | undefined, flag: string) => { if (!v) throw new UsageError(
    `${flag} is required`); return v; };
  if (area === 'workspace' && verb === 'create') return { dataDir, op: 'workspace.create',
    args: { name: need(values.name, '--name') } };
  if (area === 'workspace' && verb === 'move') {
    const name = need(values.to, '--to');
    const to = parseCells(need(values.cells, '--cells')).find((c) => c.name === name);
    if (to === undefined) throw new UsageError(`--to ${name} is not one of --cells`);
    return { dataDir, op: 'workspace.move', args: { workspace: need(values.workspace, '--workspace'), to } };
  }
  if (area === 'workspace' && verb === 'list') return { dataDir, op: 'workspace.list', args: {} };
  if (area === 'workspace' && verb === 'identity-secret') return { dataDir, op: 'workspace.identitySecret',
    args: { workspace: need(values.workspace, '--workspace') } };
  if (area === 'key' && verb === 'create') return { dataDir, op: 'key.create',
    args: { workspace: need(values.workspace, '--workspace'), name: values.name, scopes: values.scopes,
    expiresAt: values['expires-at'] } };
  if (area === 'key' && verb === 'list') return { dataDir, op: 'key.list',
    args: { workspace: need(values.workspace, '--workspace') } };
  if (area === 'webhook' && verb === 'list') return { dataDir, op: 'webhook.list',
    args: { workspace: need(values.workspace, '--workspace') } };
  if (area === 'key' && verb === 'revoke') return { dataDir, op: 'key.revoke', args: { id: need(arg, 'KEY_ID') } };
  if (area === 'user' && verb === 'create') return { dataDir, op: 'user.create',
    args: { workspace: need(values.workspace, '--workspace'), email: need(values.email, '--email') } };
  if (area === 'user' && verb === 'link') return { dataDir, op: 'user.link',
    args: { email: need(values.email, '--email') } };
  if (area === 'import') {
    const file = need(verb, 'FILE');
    let data: unknown;
    try { data = JSON.parse(readFileSync(file, 'utf8')); } catch (e) {
      throw new AdminError(`cannot read ${file}: ${(e as Error).message}`, { cause: e }); }
    return { dataDir, op: 'import', args: { workspace: need(values.workspace, '--workspace'), data } };
  }
  if (area === 'export' && verb === undefined) return { dataDir, op: 'export', args: { workspace: need(
    values.workspace, '--workspace') } };
  if (area === 'backup' && verb === undefined) return { dataDir, op: 'backup', args: { to: resolve(need(values.to,
    '--to')) } };
  if (area === 'restore' && verb === undefined) {
    if (values['data-dir'] === undefined) throw new UsageError('--data-dir NEW is required');
    return { dataDir, op: RESTORE, args: { from: resolve(need(values.from, '--from')) } };
  }
  if (area === 'cells' && verb === 'routes') return { dataDir, op: 'cells.routes',
    args: { cell: need(values.cell, '--cell') } };
  if (area === 'cells' && verb === 'haproxy') {
    const out = resolve(need(values.out, '--out'));
    return { dataDir, op: CELLS_HAPROXY, args: { cells: need(values.cells, '--cells'), out,
      routes: need(values.routes, '--routes').split(',').filter(Boolean), bind: values.bind ?? '0.0.0.0:80',
      runtime: values.runtime ?? '127.0.0.1:9999', mapsDir: resolve(values['maps-dir'] ?? out) } };
  }
  if (area === 'secrets' && verb === 'rotate') return { dataDir, op: 'secrets.rotate', args: {} };
  if (area === 'repair' && verb === undefined) {
    if (values.system && values.workspace !== undefined) throw new UsageError(
      'give --workspace ID or --system, not both');
    if (values.system) return { dataDir, op: SYSTEM_REPAIR, args: {} };
    return { dataDir, op: 'workspace.repair', args: { workspace: need(values.workspace,
      '--workspace (or --system)') } };
  }
  if (area === 'compact' && verb === undefined) {
    if (values.system && values.workspace !== undefined) throw new UsageError(
      'give --workspace ID or --system, not both');
    return { dataDir, op: 'log.compact', args: values.system ? { system: true } : { workspace: need(values.workspace,
      '--workspace (or --system)') } };
  }
  const kinds: Record<string, string> = { 'custom-field': 'customField', tag: 'tag', agent: 'agent' };
  if (area in kinds && verb === 'create') {
    const workspace = need(values.workspace, '--workspace');
    const input = area === 'custom-field'
      ? { label: need(values.label, '--label'), type: need(values.type, '--type'), fillMode: values['fill-mode'],
        description: values.description,
          options: values.options === undefined ? undefined : values.options.split(',').map((o) => o.trim()).filter(
            Boolean) }
      : area === 'tag' ? { name: need(values.name, '--name') } : { name: need(values.name, '--name'),
        description: values.description };
    return { dataDir, op: `${kinds[area]}.create`, args: { workspace, input: JSON.parse(JSON.stringify(input)) } };
  }
  if (area in kinds && verb === 'disable') return { dataDir, op: `${kinds[area]}.disable`,
    args: { workspace: need(values.workspace, '--workspace'), id: need(arg, 'ITEM_ID') } };
  throw new UsageError(area ? `unknown command ${positionals.join(' ')}` : 'a command is required');
}

const BUSY_WAIT_MS = 10_000;

/**
 * Runs one admin operation: through the socket of the server holding the data dir's lock, or on the files (taking
 * the lock). A lock holder not answering yet (replaying, or another CLI) is waited for up to 10 s; the operation had
 * not reached it, so retrying cannot apply it twice.
 */
async function execute(dataDir: string, op: string, args: Record<string, unknown>): Promise<unknown> {
  const deadline = Date.now() + BUSY_WAIT_MS;
  for (;;) {
    const holder = await lockHolder(dataDir);
    try {
      if (holder !== null) return await callAdminSocket(dataDir, op, args);
      const store = await openStore({ dataDir, sync: true, clock: systemClock });
      try { return await new Admin(store, systemClock, SecretBox.load(dataDir), publicBaseUrl(loadConfig())).execute(
        op, args); } finally { await store.close(); }
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const busy = e instanceof LockedError || (holder !== null && (code === 'ENOENT' || code === 'ECONNREFUSED'));
      if (!busy) throw e;
      if (Date.now() >= deadline) {
        throw new AdminError(
          `the data dir ${dataDir} is in use by process ${e instanceof LockedError ? e.pid : holder}, which does ` +
            `not answer on its admin socket`, { cause: e });
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * Repairs the system log with the data dir's lock held: keeps a copy and cuts it at the last good line
 * ({@link repairLog}). A server holding the lock has read its system log: nothing to repair.
 * @throws AdminError when a server or another CLI holds the data dir; fs errors as they are.
 */
async function repairSystemLog(dataDir: string): Promise<unknown> {
  let release: () => void;
  try { release = await acquireLock(dataDir); } catch (e) {
    if (e instanceof LockedError) throw new AdminError(
      `the data dir ${dataDir} is in use by process ${e.pid}: a running server has read its system log, so there is ` +
        `nothing to repair`, { cause: e });
    throw e;
  }
  try {
    return repairView(repairLog(join(dataDir, 'system.log')), { log: 'system' });
  } finally { release(); }
}

/** Runs the CLI with `argv` (without node and script); returns the exit code. */
export async function runCli(argv: string[], out = process.stdout, err = process.stderr): Promise<number> {
  let p;
  try { p = plan(argv); } catch (e) {
    if (e instanceof UsageError || (e as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      err.write(`${e instanceof UsageError && e.message ? e.message + '\n' :
        (e as Error).message ? (e as Error).message + '\n' : ''}${USAGE}\n`);
      return 2;
    }
    err.write(`error: ${(e as Error).message}\n`);
    return 1;
  }
  try {
    // Whoever can write the data dir can replace its logs or admin socket: the CLI trusts it no more than the server.
    if (p.op === RESTORE) {
      out.write(JSON.stringify(await restoreFrom(String(p.args.from), p.dataDir), null, 2) + '\n');
      return 0;
    }
    if (p.op === CELLS_HAPROXY) {
      out.write(JSON.stringify(writeHaproxy(p.args as Parameters<typeof writeHaproxy>[0]), null, 2) + '\n');
      return 0;
    }
    refuseWritableByOthers(p.dataDir);
    const result = p.op === SYSTEM_REPAIR ? await repairSystemLog(p.dataDir) : await execute(p.dataDir, p.op, p.args);
    out.write(JSON.stringify(result, null, 2) + '\n');
    return 0;
  } catch (e) {
    err.write(`error: ${cliMessage(p.op, e)}\n`);
    return 1;
  }
}

runCli(process.argv.slice(2)).then((code) => { process.exitCode = code; });
