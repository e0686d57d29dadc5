/**
 * A route is data (docs/decisions.md#the-route-table-is-the-single-description): method, path template, scope, query and body schemas
 * and the success response schema. The pipeline validates with these and the OpenAPI
 * document is generated from the same objects.
 */
import type { Static, TObject, TRef, TSchema } from './schema.js';
import type { KeyRec, Store } from '../store/store.js';
import type { Db } from '../store/db.js';
import type { CursorCodec } from './cursor.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/**
 * What the HTTP layer needs of a workspace: its id and its log, whatever record types the log
 * holds (`Db<any>`: the layer begins and commits transactions, it never reads records). The
 * domain's `Workspace` (src/domain/workspace.ts) is one, and binds itself into {@link Ctx}
 * through {@link routeFor}: this layer names no module above it (docs/decisions.md#layers).
 */
export interface WorkspaceLike { readonly id: string; readonly db: Db<any> }

/**
 * What a handler sees: the key's workspace, validated input, and a transaction to write in.
 * A handler writes only through `tx()`, and never commits by itself: the pipeline commits
 * (docs/decisions.md#one-write-path-per-request).
 */
export interface Ctx<Q = unknown, B = unknown, W extends WorkspaceLike = WorkspaceLike> {
  ws: W;
  key: KeyRec;
  store: Store;
  params: Record<string, string>;
  query: Q;
  body: B;
  /**
   * The JSON text (UTF-8) of the body's long top-level string members, by name, when the body
   * was parsed off the main thread (src/http/largeBody.ts); empty otherwise. A handler that
   * stores such a member passes these bytes to `Tx.put` rather than serializing it again.
   */
  bodyJson: ReadonlyMap<string, Uint8Array>;
  /** Request time, ms since the epoch (the injected clock). */
  now: number;
  requestId: string;
  /** The request's transaction (created on first use); the pipeline commits it before answering. */
  tx(): ReturnType<W['db']['begin']>;
  /**
   * Has the pipeline make what `tx()` holds durable now, mid-request, for a state that must be
   * visible and survive a crash while a long step runs (a source's `processing` record during
   * its ingestion). The next `tx()` is a new transaction, committed before the answer; a later
   * failure undoes only that one. Resolves once the line is on disk.
   * @throws StorageFailedError and fs errors of the write (its changes are undone).
   */
  commit(): Promise<void>;
  cursors: CursorCodec;
}

export interface Result {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** `body` already serialized (a cached view, as text or as UTF-8 bytes): sent as is. */
  json?: string | Buffer;
  /**
   * What an idempotent replay of this answer returns instead of `body` (docs/api.md#idempotency):
   * an answer that shows a secret once stores it without the secret, so that it is never kept
   * in clear (a webhook endpoint's `secret`, docs/api.md#webhook-endpoint-object).
   */
  replayBody?: unknown;
}

interface RouteBase {
  method: Method;
  path: string;
  operationId: string;
  summary: string;
  /** API area (OpenAPI tag). */
  tag: string;
  /** Required scope; null for routes without authentication. */
  scope: string | null;
  /** The body may be left out entirely (then it is `{}`); when sent it must match `body`. */
  bodyOptional?: boolean;
  /** Body byte limit (docs/api.md#request-bodies: 1 MiB, 16 MiB for create source). */
  bodyLimit?: number;
  /** Success status and body schema. */
  success: { status: number; schema: TSchema; description: string };
  /** Error statuses besides the ones the pipeline derives (auth, validation, 404 for `{id}` paths). */
  errors?: number[];
}

/** A request body schema: an object, or a named one (a component of the OpenAPI document). */
export type BodySchema = TObject | TRef<TObject>;

/** A route with its input types erased, as the router and the OpenAPI generator hold it. */
export interface Route extends RouteBase {
  query?: TObject;
  body?: BodySchema;
  // The handler's input was validated against `query` and `body`; `route()` typed it.
  // The workspace type is erased with the input types (`any`: a handler of any workspace type).
  handler: (ctx: Ctx<never, never, any>) => Result | Promise<Result>;
}

/** How a route is declared: its handler's input types inferred from the schemas. */
export type RouteDeclarer<W extends WorkspaceLike> = <Q extends TObject = TObject<{}>, B extends BodySchema = TObject<{}>>(
  r: RouteBase & { query?: Q; body?: B; handler: (ctx: Ctx<Static<Q>, Static<B>, W>) => Result | Promise<Result> },
) => Route;

/**
 * The route declarer for handlers that see workspaces of type `W` (the domain layer makes the
 * one its areas use: src/domain/route.ts).
 */
export function routeFor<W extends WorkspaceLike>(): RouteDeclarer<W> {
  return (r) => r as unknown as Route;
}

export const MiB = 1024 * 1024;
