/**
 * Admin operations (docs/configuration.md#admin-cli): workspaces, API keys and import. The CLI runs them on the data
 * dir's files when no server runs, and through the running server's admin socket otherwise, so two processes never
 * write one file. They refuse with domain errors (src/core/errors.ts: an invalid input with its field path, a record
 * not found, a conflict) or, for what only an operator meets (a damaged workspace, a full disk), an {@link AdminError};
 * the CLI words them (src/admin/cliMessages.ts).
 */
import { iso, type Clock } from '../core/clock.js';
import { makeKey, revokeKey, type NewKeyInput } from '../auth/keyRecords.js';
import { s, validateInput, type Static } from '../http/schema.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../core/errors.js';
import { SecretBox, type Sealed } from '../core/secrets.js';
import { rotateIdentitySecret } from '../areas/widget/identity.js';
import { WorkspaceUnavailableError, type KeyRec, type Store } from '../store/store.js';
import type { Workspace } from '../domain/workspace.js';
import { isOutOfSpace } from '../store/log/fs.js';
import type { RepairResult } from '../store/log/repair.js';
import { useTags } from '../areas/issues.js';
import { checkCustomFieldOptions, createCustomField, customFieldInput, customFieldView, type CustomField,
  type Tag } from '../areas/definitions.js';
import { agentInput, agentView, checkSources, createAgent, type Agent } from '../areas/agents.js';
import { endpointView, secretContext } from '../areas/webhooks/model.js';
import { activationUrl, addUser, newActivationLink, userView, OWNER_EMAIL } from '../web/users.js';
import { importFile } from './import.js';
import { cellRoutes, type Cell } from './cells.js';
import { BackupError, backupTo } from './backup.js';
import { exportWorkspace } from './export.js';

export type DefinitionKind = 'customField' | 'tag' | 'agent';
const DEFINITION_TYPES = { customField: 'custom_field', tag: 'tag', agent: 'agent' } as const;
const DEFINITION_INPUTS = { customField: customFieldInput, tag: s.object({ name: s.string({ minLength: 1,
  maxLength: 64 }) }), agent: agentInput };

/**
 * The CLI's answer to a repair: which log, the first corrupt line (null when only a torn tail, or nothing, was cut),
 * what was kept and dropped, and where the copy of the damaged log is; for a compacted log also `skippedLines` and
 * `salvagedOps` (docs/storage.md#damaged-compacted-logs).
 */
export function repairView(r: RepairResult, which: { workspaceId: string } | { log: 'system' }) {
  return {
    object: 'repair', ...which, file: r.file,
    corruptLine: r.firstBad ? { line: r.firstBad.line, offset: r.firstBad.offset, reason: r.firstBad.reason } : null,
    keptLines: r.goodLines, keptBytes: r.goodBytes,
    droppedLines: r.droppedLines, droppedValidLines: r.droppedValidLines, droppedBytes: r.droppedBytes,
    damagedCopy: r.damagedCopy,
    // A compacted log: the bad put lines left out, and the whole records kept from a cut one.
    ...(r.skippedLines !== undefined ? { skippedLines: r.skippedLines, salvagedOps: r.salvagedOps ?? 0 } : {}),
  };
}

/**
 * A refused admin operation that is none of the domain errors (a workspace that is offline or not damaged, a full disk,
 * a failed repair…); `message` is the sentence the CLI prints, and `cause` the error it wraps, if any.
 */
export class AdminError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'AdminError';
  }
}

/** The refusal for a workspace id that names none. */
const noWorkspace = (id: string | undefined) => new NotFoundError({ entity: 'workspace', id: id ?? '' });

export const keyView = (k: KeyRec) => ({
  object: 'api_key', id: k.id, workspaceId: k.workspaceId, name: k.name, prefix: k.prefix, scopes: k.scopes,
  createdAt: k.createdAt, expiresAt: k.expiresAt, revokedAt: k.revokedAt, lastUsedAt: k.lastUsedAt,
});


/** The admin commands, by name, with their arguments as the CLI passes them. */
export class Admin {
  /** Moves a workspace to another cell (set by the running server, src/server/cellMove.ts). */
  mover?: (workspaceId: string, to: Cell) => Promise<unknown>;

  /** `publicUrl`: the base of printed activation links (docs/configuration.md#settings), no trailing slash. */
  constructor(private readonly store: Store<Workspace>, private readonly clock: Clock,
    private readonly secrets?: SecretBox,
    private readonly publicUrl = 'http://127.0.0.1:3000') {}

  /**
   * Runs one command by name (the admin socket's and the CLI's entry point).
   * @throws InvalidInputError, NotFoundError or ConflictError for a refused command; AdminError when it needs a
   *   quarantined workspace, or the disk is full (messages that say what to do), or the command is unknown; other
   *   errors as they are.
   */
  async execute(op: string, args: Record<string, unknown>): Promise<unknown> {
    try {
      return await this.dispatch(op, args);
    } catch (e) {
      if (e instanceof WorkspaceUnavailableError) throw new AdminError(e.message, { cause: e });
      if (isOutOfSpace(e)) throw new AdminError(
        `the disk is full (${(e as Error).message}): nothing was changed; free some space and try again`, { cause: e });
      throw e;
    }
  }

  private dispatch(op: string, args: Record<string, unknown>): Promise<unknown> {
    switch (op) {
      case 'workspace.repair': return this.repairWorkspace(String(args.workspace ?? ''));
      case 'log.compact': return this.compactLog(args.system === true ? null : String(args.workspace ?? ''));
      case 'workspace.create': return this.createWorkspace(String(args.name ?? ''));
      case 'workspace.move': {
        const to = args.to as Cell;
        if (this.mover === undefined) return Promise.reject(new AdminError(
          'moving a workspace needs its running server (the source cell): start it, then run the move again'));
        return this.mover(String(args.workspace ?? ''), to);
      }
      case 'workspace.list': return Promise.resolve(this.listWorkspaces());
      case 'workspace.identitySecret': return this.identitySecret(String(args.workspace ?? ''));
      case 'key.create': return this.createKey(args as Parameters<Admin['createKey']>[0]);
      case 'key.list': return Promise.resolve(this.listKeys(String(args.workspace ?? '')));
      case 'key.revoke': return this.revokeKey(String(args.id ?? ''));
      case 'webhook.list': return Promise.resolve(this.listWebhooks(String(args.workspace ?? '')));
      case 'user.create': return this.createUser(args.workspace as string | undefined,
        args.email as string | undefined);
      case 'user.link': return this.userLink(String(args.email ?? ''));
      case 'import': return this.importData(String(args.workspace ?? ''), args.data);
      case 'secrets.rotate': return this.rotateSecrets();
      case 'cells.routes': return Promise.resolve({ object: 'cell_routes', cell: String(args.cell ?? ''),
        routes: cellRoutes(this.store, this.clock.now()) });
      case 'export': { const ws = this.store.workspace(String(args.workspace ?? ''));
        if (!ws) return Promise.reject(noWorkspace(String(args.workspace ?? '')));
        return Promise.resolve(exportWorkspace(ws)); }
      case 'backup': return backupTo(this.store, String(args.to ?? '')).catch((e: unknown) => {
        throw e instanceof BackupError ? new AdminError(e.message, { cause: e }) : e; });
      case 'customField.create': case 'tag.create': case 'agent.create':
        return this.createDefinition(op.split('.')[0] as DefinitionKind, String(args.workspace ?? ''), args.input);
      case 'customField.disable': case 'tag.disable': case 'agent.disable':
        return this.disableDefinition(op.split('.')[0] as DefinitionKind, String(args.workspace ?? ''),
          String(args.id ?? ''));
      default: return Promise.reject(new AdminError(`unknown admin operation ${op}`));
    }
  }

  /** @throws InvalidInputError about `name` when it is blank or over 200 characters. */
  async createWorkspace(name: string) {
    if (name.trim() === '' || name.length > 200) throw new InvalidInputError(['name'],
      'is required (1 to 200 characters)');
    const ws = await this.store.createWorkspace(name);
    return { object: 'workspace', ...ws };
  }

  /**
   * Repairs a quarantined workspace (one whose log has a corrupt line): keeps a copy of the log, cuts it at its last
   * good line and serves the workspace again. Prints what was dropped.
   * @throws NotFoundError for an unknown workspace; AdminError when it is not damaged or the repair fails.
   */
  async repairWorkspace(workspaceId: string) {
    if (!this.store.workspaceRec(workspaceId)) throw noWorkspace(workspaceId);
    if (!this.store.quarantined.has(workspaceId)) {
      throw new AdminError(
        `workspace ${workspaceId} is not damaged: its log was read without error, so there is nothing to repair`);
    }
    let r;
    try { r = await this.store.repairWorkspace(workspaceId); } catch (e) {
      throw new AdminError(
        `the repair of workspace ${workspaceId} failed: ${(e as Error).message}; the workspace stays offline`,
        { cause: e });
    }
    return repairView(r, { workspaceId });
  }

  /**
   * Compacts a workspace's log (or, with null, the system log) now (docs/storage.md#compaction): its live records and a
   * snapshot block, written beside it and renamed over it; writes go on meanwhile. Resolves once the new file is the
   * log.
   * @returns `{object:"compaction", workspaceId | log:"system", file, records, bytesBefore, bytesAfter, ms}`.
   * @throws NotFoundError for an unknown workspace; WorkspaceUnavailableError when it is offline; the log's errors (a
   *   full disk: the log stays as it was).
   */
  async compactLog(workspaceId: string | null) {
    let db;
    if (workspaceId === null) db = this.store.system;
    else {
      if (!this.store.workspaceRec(workspaceId)) throw noWorkspace(workspaceId);
      db = this.store.workspace(workspaceId)!.db;
    }
    const before = db.stats().bytes;
    const t0 = performance.now();
    await db.compact();
    const after = db.stats();
    return {
      object: 'compaction', ...(workspaceId === null ? { log: 'system' } : { workspaceId }), file: db.path,
      records: after.covered, bytesBefore: before, bytesAfter: after.bytes, ms: Math.round(performance.now() - t0),
    };
  }

  listWorkspaces() {
    return { object: 'list', workspaces: [...this.store.system.table('workspace').values()].map((w) => ({
      object: 'workspace', ...w })) };
  }

  /**
   * Makes workspace `workspaceId`'s identity secret for verified widget visitors (docs/api.md#identity-verification),
   * replacing the one before; the only answer that ever holds it. @throws NotFoundError for an unknown workspace.
   */
  async identitySecret(workspaceId: string) {
    const ws = this.store.workspace(workspaceId);
    if (!ws) throw noWorkspace(workspaceId);
    if (!this.secrets) throw new AdminError('secrets are not available here');
    const made = await rotateIdentitySecret(ws.db, ws.id, this.secrets, this.clock.now());
    return { object: 'identity_secret', workspaceId: ws.id, secret: made.secret, createdAt: made.createdAt };
  }

  /** Creates a key; the only answer that ever holds the full `key`. */
  async createKey(a: { workspace?: string; name?: string; scopes?: string; expiresAt?: string }) {
    const { rec, key } = this.newKey(a);
    const tx = this.store.system.begin();
    tx.put('key', rec.id, rec);
    await this.store.system.commit(tx);
    return { object: 'api_key', id: rec.id, key, prefix: rec.prefix, scopes: rec.scopes, expiresAt: rec.expiresAt,
      workspaceId: rec.workspaceId, name: rec.name, createdAt: rec.createdAt };
  }

  /**
   * The first start (docs/configuration.md#starting-and-stopping): a workspace and a full-access key in one
   * transaction, so a crash between the two cannot leave a workspace nobody can reach.
   */
  async bootstrap(): Promise<{
    workspaceId: string; name: string; key: string; ownerEmail: string; ownerActivationUrl: string }> {
    let key = '';
    let token = '';
    const ws = await this.store.createWorkspace('Default workspace', (tx, w) => {
      const k = this.newKey({ workspace: w.id, name: 'bootstrap', scopes: '*' });
      tx.put('key', k.rec.id, k.rec);
      key = k.key;
      token = addUser(this.store, tx, this.clock.now(), w.id, OWNER_EMAIL).token;
    });
    return { workspaceId: ws.id, name: ws.name, key, ownerEmail: OWNER_EMAIL,
      ownerActivationUrl: activationUrl(this.publicUrl, token) };
  }

  /**
   * Makes a settings-area user (docs/web.md#users) with an activation link (valid 24 h, usable once).
   * @throws NotFoundError for an unknown workspace; InvalidInputError about `email`; ConflictError for an email a user
   *   of any workspace has.
   */
  async createUser(workspace: string | undefined, email: string | undefined) {
    const tx = this.store.system.begin();
    let made;
    try { made = addUser(this.store, tx, this.clock.now(), workspace, email); } catch (e) { tx.abort(); throw e; }
    await this.store.system.commit(tx);
    return userView(made.user, activationUrl(this.publicUrl, made.token));
  }

  /** A new activation link for the user with `email` (a lost link or password). @throws NotFoundError for an unknown
   * email. */
  async userLink(email: string) {
    const made = await newActivationLink(this.store, this.clock.now(), email);
    return userView(made.user, activationUrl(this.publicUrl, made.token));
  }

  /** Makes a key's record and secret (not stored). @throws NotFoundError, InvalidInputError (`scopes`, `expiresAt`,
   * `name`). */
  private newKey(a: NewKeyInput): { rec: KeyRec; key: string } {
    return makeKey(this.store, this.clock.now(), a);
  }

  /** @throws NotFoundError for an unknown workspace. */
  listKeys(workspace: string) {
    if (!this.store.workspaceRec(workspace)) throw noWorkspace(workspace);
    const keys = [...this.store.system.table('key').values()].filter((k) => k.workspaceId === workspace);
    return { object: 'list', keys: keys.map(keyView) };
  }

  /**
   * The webhook endpoints of a workspace, oldest first, as the API shows them: never a secret
   * (docs/api.md#webhook-endpoint-object). @throws NotFoundError for an unknown workspace.
   */
  listWebhooks(workspaceId: string) {
    const ws = this.store.workspace(workspaceId);
    if (!ws) throw noWorkspace(workspaceId);
    const order = ws.webhooks.endpoints;
    const endpoints = [...order.asc()].flatMap((at) => ws.get('webhook_endpoint', order.idAt(at)) ?? []);
    return { object: 'list', webhookEndpoints: endpoints.map(endpointView) };
  }

  /** Revokes a key (a revoked one is left as it is). @throws NotFoundError for an unknown key. */
  async revokeKey(id: string) {
    return keyView(await revokeKey(this.store, this.clock.now(), id));
  }

  /**
   * Imports `data` (docs/configuration.md#import-file) into a workspace as one transaction (src/admin/import.ts).
   * @throws NotFoundError for an unknown workspace; the refusals of {@link importFile}.
   */
  async importData(workspaceId: string, data: unknown) {
    const ws = this.store.workspace(workspaceId);
    if (!ws) throw noWorkspace(workspaceId);
    return importFile(ws, data, this.clock.now());
  }

  /**
   * Creates a custom field, tag or agent (docs/configuration.md#admin-cli) and returns it as the API shows it (an agent
   * with its new widget key).
   * @throws NotFoundError for an unknown workspace; InvalidInputError naming the field; ConflictError for a tag name in
   *   use.
   */
  async createDefinition(kind: DefinitionKind, workspaceId: string, input: unknown) {
    const ws = this.store.workspace(workspaceId);
    if (!ws) throw noWorkspace(workspaceId);
    validateInput(DEFINITION_INPUTS[kind], input);
    if (kind === 'customField') checkCustomFieldOptions(input as { type: string; options?: string[] });
    const now = this.clock.now();
    const tx = ws.db.begin();
    let out: Record<string, unknown>;
    if (kind === 'customField') out = customFieldView(createCustomField(ws, tx,
      input as Static<typeof customFieldInput>, now));
    else if (kind === 'agent') {
      const a = input as Static<typeof agentInput>;
      const sources = a.sources && checkSources(a.sources, (id) => ws.get('source', id) !== undefined);
      out = agentView(createAgent(tx, sources ? { ...a, sources } : a, now));
    }
    else {
      const name = (input as { name: string }).name;
      const existing = ws.tags.byName.get(name.toLowerCase());
      const tag = existing === undefined ? undefined : ws.get('tag', existing);
      if (tag && tag.enabled !== false) { tx.abort(); throw new ConflictError(
        `a tag named ${JSON.stringify(name)} already exists`); }
      if (tag) {
        // Creating a disabled tag again enables it (keeping its id and first spelling).
        const { enabled: _off, ...on } = tag;
        tx.put('tag', tag.id, on);
        out = { object: 'tag', id: tag.id, name: tag.name };
      } else {
        useTags(ws, tx, [name], now);
        const id = ws.tags.byName.get(name.toLowerCase())!;
        out = { object: 'tag', id, name };
      }
    }
    await ws.db.commit(tx);
    return out;
  }

  /**
   * Disables a custom field (listed with `enabled:false`), a tag (left out of the list) or an agent (`enabled:false`).
   * @throws NotFoundError for an unknown workspace, or an id that is not one of its definitions of `kind`.
   */
  async disableDefinition(kind: DefinitionKind, workspaceId: string, id: string) {
    const ws = this.store.workspace(workspaceId);
    if (!ws) throw noWorkspace(workspaceId);
    const type = DEFINITION_TYPES[kind];
    const rec = ws.get(type, id);
    if (!rec) throw new NotFoundError({ entity: kind === 'customField' ? 'custom field' : kind, id,
      inWorkspace: true });
    // Already disabled: nothing changes (an agent keeps its updatedAt).
    const unchanged = rec.enabled === false;
    const next = unchanged ? rec : { ...rec, enabled: false,
      ...(kind === 'agent' ? { updatedAt: iso(this.clock.now()) } : {}) };
    if (!unchanged) {
      const tx = ws.db.begin();
      tx.put(type, id, next);
      await ws.db.commit(tx);
    }
    if (kind === 'customField') return customFieldView(next as CustomField);
    if (kind === 'tag') return { object: 'tag', id, name: (next as Tag).name, enabled: false };
    return agentView(next as Agent);
  }

  /**
   * Rotates the master key (docs/storage.md#secrets-at-rest): a new key becomes active in `master.keys` and every
   * stored source credential and webhook signing secret is decrypted with its old key and sealed again with the new
   * one, one transaction per workspace. Old keys stay in the file (backups of the logs still need them); they no longer
   * seal anything.
   * @throws AdminError when a credential cannot be opened (tampered, or its key is missing).
   */
  async rotateSecrets() {
    if (!this.secrets) throw new AdminError('secrets are not available here');
    const dir = this.store.opts.dataDir;
    const kid = SecretBox.addKey(dir);
    this.secrets.reload(dir);
    let count = 0;
    for (const ws of this.store.workspaces.values()) {
      const tx = ws.db.begin();
      for (const [id, rec] of ws.db.table('source')) {
        const cred = rec.credential;
        if (!cred) continue;
        let plain: string;
        try { plain = this.secrets.open(cred.sealed, `${ws.id}/${id}`); } catch (e) {
          tx.abort();
          throw new AdminError(`source ${id} of workspace ${ws.id}: ${(e as Error).message}`, { cause: e });
        }
        tx.put('source', id, { ...rec, credential: { ...cred, sealed: this.secrets.seal(plain, `${ws.id}/${id}`) } });
        count++;
      }
      // Webhook signing secrets, and a previous one still signing after a rotation (docs/api.md#webhook-signatures).
      for (const [id, rec] of ws.db.table('webhook_endpoint')) {
        const context = secretContext(ws.id, id);
        const reseal = (sealed: Sealed): Sealed => {
          try { return this.secrets!.seal(this.secrets!.open(sealed, context), context); } catch (e) {
            throw new AdminError(`webhook endpoint ${id} of workspace ${ws.id}: ${(e as Error).message}`, { cause: e });
          }
        };
        let next;
        try {
          next = { ...rec, secret: reseal(rec.secret), ...(rec.previousSecret ? { previousSecret: {
            ...rec.previousSecret, sealed: reseal(rec.previousSecret.sealed) } } : {}) };
        } catch (e) { tx.abort(); throw e; }
        tx.put('webhook_endpoint', id, next);
        count++;
      }
      await ws.db.commit(tx);
    }
    // `credentialsResealed` counts source credentials and webhook endpoints alike.
    return { object: 'secrets_rotation', activeKeyId: kid, credentialsResealed: count };
  }
}
