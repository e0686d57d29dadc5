/**
 * A route is data (docs/decisions.md#the-route-table-is-the-single-description): method, path template, scope, query
 * and body schemas and the success schema; requests are validated and the OpenAPI document made from them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Static, TObject, TRef, TSchema } from './schema.js';
import type { KeyRec, Store } from '../store/store.js';
import type { Db } from '../store/db.js';
import type { CursorCodec } from './cursor.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/**
 * What the HTTP layer needs of a workspace: its id and its log (`Db<any>`: it begins and commits, never reads). The
 * domain's `Workspace` binds itself through {@link routeFor}: this layer names no module above it
 * (docs/decisions.md#layers).
 */
export interface WorkspaceLike { readonly id: string; readonly db: Db<any> }

/**
 * What a handler sees: the key's workspace, validated input, and a transaction it writes through; the request pipeline
 * commits it (docs/decisions.md#one-write-path-per-request).
 */
export interface Ctx<Q = unknown, B = unknown, W extends WorkspaceLike = WorkspaceLike> {
  ws: W;
  key: KeyRec;
  store: Store;
  params: Record<string, string>;
  query: Q;
  body: B;
  /** The JSON text of the body's long top-level string members when parsed off-thread, for `Tx.put`; else empty. */
  bodyJson: ReadonlyMap<string, Uint8Array>;
  /** Request time, ms since the epoch (the injected clock). */
  now: number;
  requestId: string;
  /** The request's transaction (created on first use); the pipeline commits it before answering. */
  tx(): ReturnType<W['db']['begin']>;
  /**
   * Makes what `tx()` holds durable now, mid-request, for a state that must survive a crash while a long step runs; the
   * next `tx()` is a new transaction. Resolves once the line is on disk.
   * @throws StorageFailedError and fs errors of the write (its changes are undone).
   */
  commit(): Promise<void>;
  cursors: CursorCodec;
  /** Who a route with its own {@link RouteAuth} authenticated (a widget session); undefined on API-key routes. */
  principal?: unknown;
}

/** Whom a {@link RouteAuth} found: the workspace, the id its requests are limited by, and what the handler reads. */
export interface Principal { workspaceId: string; limitKey: string; data: unknown }

/**
 * A route's own authentication instead of API keys (the widget API, docs/api.md#live-chat): `scheme` names the
 * OpenAPI security scheme; `authenticate` may add answer headers (CORS) to `headers`, kept on error answers too.
 */
export interface RouteAuth {
  scheme: string;
  authenticate(req: IncomingMessage, headers: string[]): Principal;
}

export interface Result {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** `body` already serialized (a cached view, as text or as UTF-8 bytes): sent as is. */
  json?: string | Buffer;
  /** What an idempotent replay returns instead of `body`: a secret shown once is never stored in clear. */
  replayBody?: unknown;
  /** A `text/event-stream` answer: after the head, `res` is the stream's (src/areas/events/stream.ts). */
  stream?: (res: ServerResponse, req: IncomingMessage) => void;
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
  /** Authentication other than API keys (then `scope` is only a label, never checked). */
  auth?: RouteAuth;
  /** The body may be left out entirely (then it is `{}`); when sent it must match `body`. */
  bodyOptional?: boolean;
  /** Body byte limit (docs/api.md#request-bodies: 1 MiB, 16 MiB for create source). */
  bodyLimit?: number;
  /** Success status and body schema. */
  success: { status: number; schema: TSchema; description: string; contentType?: 'text/event-stream' };
  /** Error statuses besides the ones the pipeline derives (auth, validation, 404 for `{id}` paths). */
  errors?: number[];
}

/** A request body schema: an object, or a named one (a component of the OpenAPI document). */
export type BodySchema = TObject | TRef<TObject>;

/** A route with its input types erased, as the router and the OpenAPI generator hold it. */
export interface Route extends RouteBase {
  query?: TObject;
  body?: BodySchema;
  // Input was validated against `query` and `body` and typed by `route()`; the workspace type is erased too.
  handler: (ctx: Ctx<never, never, any>) => Result | Promise<Result>;
}

/** How a route is declared: its handler's input types inferred from the schemas. */
export type RouteDeclarer<W extends WorkspaceLike> = <Q extends TObject = TObject<{}>, B extends BodySchema =
  TObject<{}>>(
  r: RouteBase & { query?: Q; body?: B; handler: (ctx: Ctx<Static<Q>, Static<B>, W>) => Result | Promise<Result> },
) => Route;

/** The route declarer for handlers that see workspaces of type `W` (src/domain/route.ts makes the one in use). */
export function routeFor<W extends WorkspaceLike>(): RouteDeclarer<W> {
  return (r) => r as unknown as Route;
}

export const MiB = 1024 * 1024;
