/**
 * API operations run for a settings page (docs/web.md#sources-in-the-browser): a page that adds,
 * rescans or deletes a source runs the API's own route handler (src/areas/sources/sources.ts) for the
 * session's workspace, with the body checked against the route's schema, its transaction committed
 * before the answer, as the API pipeline does, so the rules, events and messages are the API's.
 */
import { assertValid } from '../http/schema.js';
import type { Ctx, Result, Route } from '../http/route.js';
import type { CursorCodec } from '../http/cursor.js';
import type { KeyRec, Store } from '../store/store.js';
import type { Workspace } from '../domain/workspace.js';
import type { Tx } from '../store/db.js';

/** What a page asks of an operation: the workspace, the path's parameters and the body. */
export interface OperationCall {
  ws: Workspace;
  params?: Record<string, string>;
  body?: unknown;
  /** The user acting, named in the stand-in key the handler sees (`settings:USER_ID`). */
  userId: string;
  now: number;
  requestId: string;
}

/** Runs operations of the API's route table by operation id. */
export class Operations {
  private readonly byId = new Map<string, Route>();

  constructor(routes: readonly Route[], private readonly store: Store, private readonly cursors: CursorCodec) {
    for (const r of routes) this.byId.set(r.operationId, r);
  }

  /**
   * Runs operation `operationId` (`createSource`, `rescanSource`, `deleteSource`…) and commits what it wrote.
   * @throws ApiError as the API answers it (400 invalid body, 404, 409…); Error for an unknown operation id.
   */
  async run(operationId: string, call: OperationCall): Promise<Result> {
    const route = this.byId.get(operationId);
    if (!route) throw new Error(`no operation ${operationId}`);
    const body = call.body ?? {};
    if (route.body) assertValid(route.body, body);
    const { ws } = call;
    let tx: Tx<any> | undefined;
    const key: KeyRec = { id: `settings:${call.userId}`, workspaceId: ws.id, name: 'settings area', prefix: '',
      hash: '', scopes: [route.scope ?? '*'], createdAt: new Date(call.now).toISOString(), expiresAt: null,
      revokedAt: null, lastUsedAt: null };
    const ctx: Ctx<unknown, unknown, Workspace> = {
      ws, key, store: this.store, params: call.params ?? {}, query: {}, body, bodyJson: new Map(), now: call.now,
      requestId: call.requestId, cursors: this.cursors, tx: () => (tx ??= ws.db.begin()),
      commit: async () => { const done = tx; tx = undefined; if (done) await ws.db.commit(done); },
    };
    try {
      const result = await route.handler(ctx as unknown as Ctx<never, never>);
      if (tx) await ws.db.commit(tx);
      return result;
    } catch (e) {
      tx?.abort();
      throw e;
    }
  }
}
