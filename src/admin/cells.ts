/**
 * Cells (docs/deployment.md#several-machines): what HAProxy needs to route each request to the cell that owns its
 * workspace from the request alone — map files from credential hashes (SHA-256 hex, as stored), widget keys, sign-in
 * emails and docs slugs to a cell's backend, and the HAProxy configuration that reads them. Credentials made later
 * reach HAProxy through its runtime API (src/server/cellSync.ts); nothing here holds a secret.
 */
import type { Store } from '../store/store.js';
import type { Workspace } from '../domain/workspace.js';

/** One cell: a name (`[a-z0-9-]{1,32}`) and the address HAProxy reaches it at (`host:port`). */
export interface Cell { name: string; address: string }

/** The routing keys of one cell, by map. */
export interface CellRoutes {
  /** SHA-256 (hex) of API keys, settings sessions and activation tokens: the stored ids and hashes. */
  tokens: string[];
  /** Widget keys (`svcw_…`, public). */
  widgetKeys: string[];
  /** Users' emails, lower case: the sign-in form goes to the user's cell. */
  emails: string[];
  /** Slugs of published docs. */
  slugs: string[];
  /** Workspace ids. */
  workspaces: string[];
}

/** The map files, named after the fields of {@link CellRoutes}. */
export const MAP_FILES: Record<keyof CellRoutes, string> = {
  tokens: 'tokens.map', widgetKeys: 'widget-keys.map', emails: 'emails.map', slugs: 'slugs.map',
  workspaces: 'workspaces.map',
};

const NAME = /^[a-z0-9-]{1,32}$/;
const ADDRESS = /^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9A-Fa-f:]+\]:\d{1,5}$/;

/** The HAProxy backend of cell `name`. */
export const backendOf = (name: string) => `cell_${name}`;

/**
 * Parses `a=10.0.0.1:3000,b=10.0.0.2:3000`.
 * @throws Error naming the bad entry (a name outside `[a-z0-9-]{1,32}`, an address not `host:port`, a repeat).
 */
export function parseCells(text: string): Cell[] {
  const cells: Cell[] = [];
  for (const part of text.split(',').filter((p) => p !== '')) {
    const at = part.indexOf('=');
    const name = part.slice(0, at);
    const address = part.slice(at + 1);
    if (at < 1 || !NAME.test(name)) throw new Error(`cell "${part}": the name must match [a-z0-9-]{1,32}`);
    if (!ADDRESS.test(address)) throw new Error(`cell "${part}": the address must be host:port`);
    if (cells.some((c) => c.name === name)) throw new Error(`cell "${name}" is named twice`);
    cells.push({ name, address });
  }
  if (cells.length === 0) throw new Error('no cell given (--cells name=host:port,…)');
  return cells;
}

/**
 * The routing keys of the workspaces `store` serves, or of workspace `only` (revoked keys, used or expired
 * activations left out; a workspace moved away is another cell's).
 */
export function cellRoutes(store: Store<Workspace>, now: number, only?: string): CellRoutes {
  const sys = store.system;
  const mine = (id: string) => (only === undefined ? store.workspaces.has(id) || store.quarantined.has(id)
    : id === only);
  const users = [...sys.table('user').values()].filter((u) => mine(u.workspaceId));
  const userIds = new Set(users.map((u) => u.id));
  const tokens = [
    ...[...sys.table('key').values()].filter((k) => k.revokedAt === null && mine(k.workspaceId)).map((k) => k.hash),
    ...[...sys.table('session').values()].filter((s) => mine(s.workspaceId)).map((s) => s.id),
    ...[...sys.table('activation').values()].filter((a) => a.usedAt === null && Date.parse(a.expiresAt) > now
      && userIds.has(a.userId)).map((a) => a.id),
  ];
  const widgetKeys: string[] = [];
  const slugs: string[] = [];
  const workspaces = only === undefined ? [...store.workspaces.keys()] : [only];
  for (const id of workspaces) {
    const ws = store.workspaces.get(id);
    if (ws === undefined) continue;
    for (const a of ws.db.table('agent').values()) widgetKeys.push(a.widgetKey);
    for (const src of ws.db.table('source').values()) if (src.publicDocs.slug) slugs.push(src.publicDocs.slug);
  }
  return { tokens, widgetKeys, emails: users.map((u) => u.email.toLowerCase()), slugs, workspaces };
}

/** The text of each map file for cells' routes (`cell name → routes`): one `key backend` line per entry. */
export function mapFiles(routes: ReadonlyMap<string, CellRoutes>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, file] of Object.entries(MAP_FILES) as Array<[keyof CellRoutes, string]>) {
    let text = '';
    for (const [cell, r] of routes) for (const k of r[field]) text += `${k} ${backendOf(cell)}\n`;
    out[file] = text;
  }
  return out;
}

/**
 * The HAProxy (2.6+) configuration: one frontend on `bind`, the runtime API on `runtime` (level admin, for the cells'
 * updates), one backend per cell with a `/healthz` check. A request goes to the cell of, in order: its bearer
 * credential (an API key by its SHA-256, a widget key as is, a widget session by the workspace id it starts with),
 * its `sw_session` cookie, the `sw_cell` cookie of the cell that signed it in (a session too new for the maps), an
 * activation link's token, the sign-in form's email, or a docs slug; else to the first
 * cell (health checks, the landing page, unknown credentials, which every cell refuses alike).
 */
export function haproxyConfig(o: { cells: Cell[]; mapsDir: string; bind: string; runtime: string }): string {
  const map = (field: keyof CellRoutes) => `map(${o.mapsDir}/${MAP_FILES[field]})`;
  /** The cell from `sample` when no earlier rule found one and `when` holds. */
  const unset = (sample: string, when: string) =>
    `http-request set-var(txn.cell) ${sample} if !{ var(txn.cell) -m found } ${when}`;
  const backends = o.cells.map((c) => `backend ${backendOf(c.name)}
  option httpchk GET /healthz
  server ${c.name} ${c.address} check inter 2s fall 2 rise 1
`).join('\n');
  return `# Written by \`cli cells haproxy\` (docs/deployment.md#several-machines): regenerate it, do not edit it.
global
  stats socket ipv4@${o.runtime} level admin
  stats timeout 30s

defaults
  mode http
  option forwardfor
  timeout connect 5s
  timeout client 75s
  timeout server 75s
  timeout http-request 10s
  timeout tunnel 1h

frontend support_workspace
  bind ${o.bind}
  option http-buffer-request
  http-request deny deny_status 404 if { path_beg /cell/ }
  http-request set-var(txn.cred) req.hdr(authorization),word(2,' ')
  http-request set-var(txn.cell) var(txn.cred),sha2(256),hex,lower,${map('tokens')} if { var(txn.cred) -m beg svck_ }
  http-request set-var(txn.cell) var(txn.cred),${map('widgetKeys')} if { var(txn.cred) -m beg svcw_ }
  http-request set-var(txn.sess) url_param(session) if { path_beg /widget/v1/ } !{ var(txn.cred) -m found }
  http-request set-var(txn.sess) var(txn.cred) if { var(txn.cred) -m beg svcs_ }
  http-request set-var(txn.cell) var(txn.sess),field(2,_),field(1,.),${map('workspaces')} if { var(txn.sess) -m found }
  ${unset('req.cook(sw_session),sha2(256),hex,lower,' + map('tokens'), '{ req.cook(sw_session) -m found }')}
  ${unset('req.cook(sw_cell)', `{ req.cook(sw_cell) -m str ${o.cells.map((c) => backendOf(c.name)).join(' ')} }`)}
  ${unset('url_param(token),sha2(256),hex,lower,' + map('tokens'), '{ path /settings/activate }')}
  ${unset('req.body_param(email),url_dec,lower,' + map('emails'), '{ path /settings/login } METH_POST')}
  ${unset('path,field(3,/),' + map('slugs'), '{ path_beg /docs/ }')}
  use_backend %[var(txn.cell)] if { var(txn.cell) -m found }
  default_backend ${backendOf(o.cells[0].name)}

${backends}`;
}
