/**
 * The request pipeline (docs/api.md, Check order): route → authentication (401) → rate limit (429) → scope (403) →
 * request validation (400/413/415) → idempotency → handler (404, 409) → commit (durable before the answer) → response,
 * plus the headers every response carries and one JSON access-log line per request. A 403 spends a token like any other
 * authenticated answer, so once the key's bucket is empty its refusals are 429 too.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { ApiError, MOVE_RETRY_AFTER_SECONDS, STORAGE_FULL_RETRY_AFTER_SECONDS, domainAnswer, invalid, type ErrorCode }
  from './errors.js';
import { DomainError, InvalidInputError } from '../core/errors.js';
import { Router } from './router.js';
import { ClientAbortError, bodyRequired, validateBodyHeaders, readJsonBody } from './body.js';
import type { BodyParser } from './largeBody.js';
import { assertValid, assertValidInput, integerReason, type TObject } from './schema.js';
import { TokenBucketLimiter, type TakeResult } from './ratelimit.js';
import { CursorCodec } from './cursor.js';
import { Idempotency, requestFingerprint, type IdempotencyTicket } from './idempotency.js';
import { Authenticator } from '../auth/authenticate.js';
import { ClientAddresses } from './clientAddress.js';
import { MiB, type Ctx, type Principal, type Result, type Route, type WorkspaceLike } from './route.js';
import { StorageFailedError } from '../store/log/log.js';
import { isOutOfSpace } from '../store/log/fs.js';
import type { Tx } from '../store/db.js';
import type { NotOwned } from '../metrics/serverMetrics.js';
import { WorkspaceMovedError, WorkspaceUnavailableError, type KeyRec, type Store } from '../store/store.js';
import type { Clock } from '../core/clock.js';
import type { Config } from '../core/config.js';
import type { Logger } from '../core/logger.js';

export const API_VERSION = '2026-06-29';
const REQUEST_ID = /^[\x20-\x7e]{1,128}$/;
/** The long string members of a request without a body: none. */
const NO_MEMBERS: ReadonlyMap<string, Uint8Array> = new Map();

export interface AppOptions {
  store: Store<WorkspaceLike>;
  config: Config;
  clock: Clock;
  logger: Logger;
  routes: Route[];
  /** Called once per authenticated request, before scope and rate limit (usage counting). */
  onAuthenticated?: (workspaceId: string) => void;
  /** Parses bodies over 256 KiB off the main thread (src/http/largeBody.ts); without one, in turns of their own. */
  bodyParser?: BodyParser;
  /** Told of each answered request (metrics): its route's path template (null: none matched), status, ms. */
  onAnswered?: Answered;
  /** Told of each request for a workspace this server does not serve (metrics, docs/deployment.md). */
  onNotOwned?: NotOwned;
  /** Answers an `OPTIONS` (CORS preflight) for `path`, or undefined to leave it to the router (405). */
  preflight?: (req: IncomingMessage, path: string) => Result | undefined;
}

/**
 * Told of one answered request: `method` as received, `template` the matched route's path template (null: none),
 * `status` the answer's (499: the client left before one), `ms` from arrival to the answer written.
 */
export type Answered = (method: string, template: string | null, status: number, ms: number) => void;

export class App {
  readonly router = new Router<Route>();
  readonly limiter: TokenBucketLimiter;
  readonly cursors: CursorCodec;
  readonly auth: Authenticator;
  readonly idempotency: Idempotency;
  /** The client address of a request (`TRUST_PROXY`), for the limits kept per address. */
  readonly clients: ClientAddresses;
  /** Set on shutdown: new requests get 503 with `Connection: close`. */
  draining = false;
  private inFlight = 0;
  private readonly capacityText: string;
  /** `METHOD /template` per route, for the access log. */
  private readonly routeNames = new Map<Route, string>();
  /** One access-log line per request (LOG_LEVEL info or debug). */
  private readonly accessLog: boolean;
  private idle: (() => void) | null = null;

  constructor(private readonly opts: AppOptions) {
    for (const r of opts.routes) { this.router.add(r.method, r.path, r); this.routeNames.set(r,
      `${r.method} ${r.path}`); }
    this.accessLog = opts.logger.enabled('info');
    this.limiter = new TokenBucketLimiter(opts.config.rateLimitBurst, opts.config.rateLimitPerMinute, opts.clock);
    this.capacityText = String(opts.config.rateLimitBurst);
    this.cursors = new CursorCodec(opts.store.secret);
    this.clients = new ClientAddresses(opts.config.trustProxy);
    this.auth = new Authenticator(opts.store, opts.clock, opts.logger, (req) => this.clients.clientKey(req));
    this.idempotency = new Idempotency();
  }

  /** Resolves when no request is being handled (graceful shutdown). */
  whenIdle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((r) => { this.idle = r; });
  }

  /**
   * The `node:http` request listener; never throws: every failure becomes a `{code, error}` answer.
   * @returns undefined when answered within the call (synchronous handlers), else a promise resolved once answered.
   */
  handle = (req: IncomingMessage, res: ServerResponse): Promise<void> | undefined => {
    this.inFlight++;
    const given = req.headers['x-request-id'];
    const ownId = !(typeof given === 'string' && REQUEST_ID.test(given));
    const requestId = ownId ? randomUUID() : given as string;
    // Response headers are gathered here and written with one writeHead (no per-header setHeader).
    const exchange: Exchange = { req, res, headers: ['X-Request-Id', requestId, 'Api-Version', API_VERSION], requestId,
      ownId, started: performance.now(), route: '-', template: null };
    let pending: Promise<void> | void = undefined;
    // A request that declares a body goes async from the start, so an early answer (401, 404…) is sent after the parser
    // took in what already arrived: a body that came with the headers keeps the connection alive.
    try { pending = declaresBody(req) ? this.dispatchAfterBody(exchange) : this.dispatch(exchange); } catch (err) {
      this.fail(exchange, err); }
    if (pending) return pending.then(() => this.done(exchange), (err) =>
      { this.fail(exchange, err); this.done(exchange); });
    this.done(exchange);
    return undefined;
  };

  /** After the answer: the in-flight count (graceful shutdown) and the access-log line. */
  private done(exchange: Exchange): void {
    this.inFlight--;
    if (this.inFlight === 0 && this.idle) { const r = this.idle; this.idle = null; r(); }
    if (this.opts.onAnswered) this.opts.onAnswered(exchange.req.method ?? '-', exchange.template,
      exchange.res.headersSent ? exchange.res.statusCode : 499, performance.now() - exchange.started);
    if (this.accessLog) {
      // The method is a token the parser accepted; the logger escapes a client's X-Request-Id when JSON needs it.
      this.opts.logger.request(exchange.requestId, exchange.req.method ?? '-', exchange.route, exchange.res.statusCode,
        performance.now() - exchange.started, exchange.ownId);
    }
  }

  private async dispatchAfterBody(exchange: Exchange): Promise<void> { return this.dispatch(exchange); }

  /** Route → auth → rate limit → scope → query; then the body (async) or straight to the handler. */
  private dispatch(exchange: Exchange): Promise<void> | void {
    const { req, headers } = exchange;
    if (this.draining) {
      headers.push('Connection', 'close');
      throw new ApiError('service_unavailable', 'the server is shutting down');
    }
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (req.method === 'OPTIONS' && this.opts.preflight) {
      const answer = this.opts.preflight(req, path);
      if (answer) return this.send(exchange, answer);
    }
    const match = this.router.find(req.method ?? 'GET', path);
    if (match.kind === 'not_found') throw new ApiError('not_found',
      `no route matches ${req.method} ${path.length > 200 ? path.slice(0, 200) + '…' : path}`);
    if (match.kind === 'method_not_allowed') {
      throw new ApiError('method_not_allowed', `use ${match.allow.join(', ')}`, { Allow: match.allow.join(', ') });
    }
    const route = match.value;
    exchange.route = this.routeNames.get(route)!;
    exchange.template = route.path;
    if (route.scope === null) {
      validateApiVersion(req);
      const result = route.handler({ params: match.params, now: this.opts.clock.now(),
        requestId: exchange.requestId } as Ctx<never, never>);
      if (result instanceof Promise) return result.then((r) => this.send(exchange, r));
      return this.send(exchange, result);
    }

    // A route with its own authentication (the widget API) names its principal; it never takes an API key.
    const principal = route.auth?.authenticate(req, headers);
    const key = principal ? principalKey(principal) : this.auth.authenticate(req);
    const ws = this.opts.store.workspace(key.workspaceId);
    if (!ws) throw new ApiError('unauthorized');
    // A workspace moving to another cell reads on, but writes wait for it there (docs/deployment.md).
    if (req.method !== 'GET' && req.method !== 'HEAD' && this.opts.store.moving.has(ws.id)) {
      throw new WorkspaceMovedError(ws.id, true);
    }
    // Usage counts every authenticated request, and every authenticated answer spends a token, a 403 included: a key
    // hammering routes outside its scopes is limited like any other.
    this.opts.onAuthenticated?.(ws.id);
    const rl = this.limiter.take(key.id);
    this.setRateHeaders(headers, rl);
    if (!rl.allowed) throw new ApiError('rate_limited', undefined, { 'Retry-After': String(rl.retryAfterSeconds) });
    if (!principal && !this.auth.hasScope(key, route.scope)) throw new ApiError('insufficient_scope',
      `this operation needs ${route.scope}`);

    validateApiVersion(req);
    const query = parseQuery(route.query, q === -1 ? '' : url.slice(q + 1));
    const input: Input = { route, ws, key, principal: principal?.data, params: match.params, query, path,
      body: undefined, json: NO_MEMBERS,
      fingerprint: () => requestFingerprint(`${route.method} ${path}`) };
    if (!route.body) return this.execute(exchange, input);
    // A request without a body is judged on its absence, whatever its Content-Type says: a route that needs a body
    // refuses it as such (400), one with an optional body takes it as `{}`.
    if (!declaresBody(req)) {
      if (!route.bodyOptional) throw bodyRequired();
      input.body = {};
      return this.execute(exchange, input);
    }
    return this.readBody(exchange, input);
  }

  /** Reads, parses and validates the JSON body (400/413/415), then runs the handler. */
  private async readBody(exchange: Exchange, input: Input): Promise<void> {
    const limit = input.route.bodyLimit ?? MiB;
    validateBodyHeaders(exchange.req, limit);
    const read = await readJsonBody(exchange.req, limit, `${input.route.method} ${input.path}`, this.opts.bodyParser);
    input.body = read.value;
    input.json = read.json;
    input.fingerprint = read.fingerprint;
    assertValid(input.route.body!, input.body);
    return this.execute(exchange, input);
  }

  /** Idempotency, then the handler; a synchronous handler that wrote nothing is answered at once. */
  private execute(exchange: Exchange, input: Input): Promise<void> | void {
    const { route, ws } = input;
    const idem = route.method === 'POST' ? this.idempotency.begin(exchange.req, ws, input.key, input.fingerprint,
      this.opts.clock.now()) : null;
    if (idem?.replay) return this.send(exchange, idem.replay);
    let tx: Tx | undefined;
    const ctx: Ctx<unknown, unknown> = {
      ws, key: input.key, store: this.opts.store, params: input.params, query: input.query, body: input.body,
        bodyJson: input.json,
      now: this.opts.clock.now(), requestId: exchange.requestId, tx: () => (tx ??= ws.db.begin()),
        cursors: this.cursors, principal: input.principal,
      // A durable step mid-request: what was written so far, then a new transaction for the rest.
      commit: async () => { const done = tx; tx = undefined; if (done) await ws.db.commit(done); },
    };
    let result: Result | Promise<Result>;
    try {
      result = route.handler(ctx as Ctx<never, never>);
    } catch (err) {
      tx?.abort();
      idem?.end();
      throw err;
    }
    if (idem === null && tx === undefined && !(result instanceof Promise)) return this.send(exchange, result);
    return this.commit(exchange, ctx, () => tx, result, idem);
  }

  /** Awaits the handler, stores the idempotent answer, commits (durable before the answer), answers. */
  private async commit(exchange: Exchange, ctx: Ctx<unknown, unknown>, tx: () => Tx | undefined,
    pending: Result | Promise<Result>, idem: IdempotencyTicket | null): Promise<void> {
    try {
      const result = await pending;
      if (idem && result.status < 300) idem.store(ctx.tx(), result, ctx.now);
      const t = tx();
      if (t) await ctx.ws.db.commit(t);
      this.send(exchange, result);
    } catch (err) {
      tx()?.abort();
      throw err;
    } finally {
      idem?.end();
    }
  }

  private setRateHeaders(headers: string[], rl: TakeResult): void {
    headers.push('RateLimit-Limit', this.capacityText, 'RateLimit-Remaining', String(rl.remaining), 'RateLimit-Reset',
      String(rl.resetSeconds));
  }

  /** Writes the answer: `result.json` (pre-serialized) or `result.body` serialized, with every gathered header. */
  private send(exchange: Exchange, result: Result): void {
    const { headers } = exchange;
    const json = result.json ?? (result.body === null ? '' : JSON.stringify(result.body));
    // An answer refused by writeHead (a bad header value) leaves only the common headers for fail()'s answer.
    const common = headers.length;
    try { this.writeAnswer(exchange, result, json); } catch (e) { headers.length = common; throw e; }
  }

  /** {@link send}'s writing: the answer's own headers, Content-Type and Content-Length, then the head and body. */
  private writeAnswer(exchange: Exchange, result: Result, json: string | Buffer): void {
    const { res, headers } = exchange;
    if (result.headers) for (const k in result.headers) headers.push(k, result.headers[k]);
    if (result.stream) {
      // No length and no proxy buffering: events go out as they come (docs/api.md#event-stream).
      headers.push('Content-Type', 'text/event-stream; charset=utf-8', 'Cache-Control', 'no-store',
        'X-Accel-Buffering', 'no');
      res.writeHead(result.status, headers);
      if (res.req.method === 'HEAD') res.end(); else result.stream(res, res.req);
      return;
    }
    headers.push('Content-Type', 'application/json; charset=utf-8', 'Content-Length',
      String(typeof json === 'string' ? Buffer.byteLength(json) : json.length));
    // A body still on its way (answered before it was read): close after the answer, or node:http would read and
    // discard as much as the client cares to send to keep the connection alive.
    if (!res.req.complete && declaresBody(res.req)) {
      if (!headers.includes('Connection')) headers.push('Connection', 'close');
      lingeringClose(res);
    }
    res.writeHead(result.status, headers);
    res.end(json);
  }

  private fail(exchange: Exchange, err: unknown): void {
    const { res, requestId } = exchange;
    let apiErr: ApiError;
    if (err instanceof ClientAbortError) {
      // The client hung up mid-body: nobody is left to answer.
      this.opts.logger.debug('client aborted the request', { requestId });
      res.destroy();
      return;
    }
    if (err instanceof ApiError) apiErr = err;
    else if (err instanceof DomainError) apiErr = domainAnswer(err);
    else if (err instanceof WorkspaceUnavailableError) {
      // Logged with file, line and offset once, when the workspace was quarantined at start.
      this.opts.logger.debug('workspace offline', { requestId, workspaceId: err.workspaceId });
      apiErr = new ApiError('storage_failed');
    } else if (err instanceof WorkspaceMovedError) {
      apiErr = new ApiError(err.moving ? 'moving' : 'moved', undefined,
        { 'Retry-After': String(MOVE_RETRY_AFTER_SECONDS) });
    } else if (isOutOfSpace(err)) {
      // The log cut the failed write back and stays writable: a 503 to retry once space is freed, not a 500.
      this.opts.logger.warn('write refused: out of disk space', { requestId, error: (err as Error).message });
      apiErr = new ApiError('storage_full', undefined, { 'Retry-After': String(STORAGE_FULL_RETRY_AFTER_SECONDS) });
    } else if (err instanceof StorageFailedError) {
      this.opts.logger.error('storage failed', { requestId, error: err.message });
      apiErr = new ApiError('service_unavailable', 'writes are refused after a storage failure; see the server log');
    } else {
      this.opts.logger.error('unexpected error', { requestId, error: (err as Error)?.stack ?? String(err) });
      apiErr = new ApiError('internal_error' as ErrorCode);
    }
    if (this.opts.onNotOwned) {
      const presented = exchange.req.headers.authorization !== undefined || exchange.req.url?.includes('session=');
      if (apiErr.code === 'moved') this.opts.onNotOwned('moved');
      else if (presented && (apiErr.code === 'unauthorized' || apiErr.code === 'widget_unauthorized')) {
        this.opts.onNotOwned('unknown_credential');
      }
    }
    if (res.headersSent) { res.destroy(); return; }
    this.send(exchange, { status: apiErr.status, body: apiErr.body(), headers: apiErr.headers });
  }
}

/** One request in the pipeline: what every stage may add to or read. */
interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  /** Response headers gathered so far, as name/value pairs for writeHead. */
  headers: string[];
  requestId: string;
  /** The request id is one the server made (not the client's X-Request-Id): the access log need not check it. */
  ownId: boolean;
  /** performance.now() at arrival (ms). */
  started: number;
  /** The matched route as `METHOD /template` (access log), `-` before routing. */
  route: string;
  /** The matched route's path template (metrics), null before routing. */
  template: string | null;
}

/** What the handler is called with, once authenticated and validated. */
interface Input {
  route: Route;
  ws: WorkspaceLike;
  key: KeyRec;
  /** What a route's own authentication found ({@link RouteAuth}). */
  principal: unknown;
  params: Record<string, string>;
  query: unknown;
  path: string;
  body: unknown;
  /** The request's idempotency fingerprint (src/http/idempotency.ts), computed when asked. */
  fingerprint: () => string;
  /** The JSON text of the body's long top-level string members (see {@link Ctx.bodyJson}). */
  json: ReadonlyMap<string, Uint8Array>;
}

/**
 * A principal as the key record the rate limit and idempotency are kept by: its `limitKey` as id, no scopes (its
 * route checks none).
 */
function principalKey(p: Principal): KeyRec {
  return { id: p.limitKey, workspaceId: p.workspaceId, name: null, prefix: '', hash: '', scopes: [], createdAt: '',
    expiresAt: null, revokedAt: null, lastUsedAt: null };
}

/** Whether the request announces a body (`Content-Length` other than 0, or `Transfer-Encoding`). */
function declaresBody(req: IncomingMessage): boolean {
  const cl = req.headers['content-length'];
  return (cl !== undefined && cl !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** How long, and how much, a closing connection still reads after its answer. */
const LINGER_MS = 1000;
const LINGER_BYTES = 16 * MiB;

/**
 * Lingering close (RFC 9112 §9.6): closing a socket whose client still sends makes the kernel reset it, which can make
 * the client drop an unread answer. So only our side is closed and the rest is read and discarded, for at most
 * LINGER_MS and LINGER_BYTES, before the socket is destroyed.
 */
function lingeringClose(res: ServerResponse): void {
  const req = res.req;
  const sock = req.socket;
  if (!sock) return;
  // node:http calls destroySoon() after a `Connection: close` answer: make that a half-close.
  sock.destroySoon = () => { sock.end(); };
  res.once('finish', () => {
    let discarded = 0;
    const kill = () => sock.destroy();
    const timer = setTimeout(kill, LINGER_MS);
    timer.unref();
    sock.once('close', () => clearTimeout(timer));
    req.on('data', (c: Buffer) => { discarded += c.length; if (discarded > LINGER_BYTES) kill(); });
    req.resume();
  });
}

/** A request may pin `Api-Version`; any other value than ours is a 400 (docs/api.md#base-path-and-versioning). */
function validateApiVersion(req: IncomingMessage): void {
  const version = req.headers['api-version'];
  if (version !== undefined && version !== API_VERSION) throw invalid(`Api-Version must be ${API_VERSION}`, 'header');
}

/**
 * Parses a query string against `schema`: each parameter at most once, integers and booleans coerced, unknown ones
 * refused (docs/api.md).
 * @throws ApiError 400 `invalid_request` (`Query parameter limit must be …`) naming the parameter.
 */
export function parseQuery(schema: TObject | undefined, qs: string): unknown {
  try {
    return readQuery(schema, qs);
  } catch (e) {
    throw e instanceof InvalidInputError ? domainAnswer(e, 'query') : e;
  }
}

/** {@link parseQuery}'s work. @throws InvalidInputError with the parameter's name as path. */
function readQuery(schema: TObject | undefined, qs: string): unknown {
  const out: Record<string, unknown> = {};
  const props = schema?.properties ?? {};
  for (const [k, v] of qs ? new URLSearchParams(qs) : []) {
    // Own properties only: `hasOwnProperty=x` names no parameter, whatever Object.prototype holds.
    const prop = Object.hasOwn(props, k) ? props[k] : undefined;
    if (!prop) throw new InvalidInputError([k], 'is not supported');
    if (Object.hasOwn(out, k)) throw new InvalidInputError([k], 'must be given once');
    if (prop.kind === 'integer') {
      if (!/^-?\d{1,15}$/.test(v)) throw new InvalidInputError([k], integerReason(prop));
      out[k] = Number(v);
    } else if (prop.kind === 'boolean') {
      if (v !== 'true' && v !== 'false') throw new InvalidInputError([k], 'must be true or false');
      out[k] = v === 'true';
    } else out[k] = v;
  }
  if (schema) assertValidInput(schema, out);
  return out;
}
