/**
 * The settings area's dispatcher (docs/web.md): the server hands it every request under
 * `/settings`, `/docs` and `/assets` when `WEB_UI` is on, and everything else to the API
 * pipeline (src/http/pipeline.ts), whose answers it never touches. Pages are HTML; every answer
 * here carries the security headers (docs/security.md#headers), an `X-Request-Id`, and one
 * access-log line like the API's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { WebCtx, SignInRequired, pageAnswer, redirect, type WebAnswer, type WebServices } from './context.js';
import { WebError, overHttps } from './forms.js';
import { errorPage } from './layout.js';
import { Sessions } from './sessions.js';
import { SignInLimits } from './signInLimits.js';
import { TokenBucketLimiter } from '../http/ratelimit.js';
import { Passwords } from './passwords.js';
import { sharedHashLanes } from './hashLanes.js';
import { getActivate, getLogin, postActivate, postLogin, postLogout } from './authPages.js';
import { getKeyCreated, getKeys, getRevoke, postKeys, postRevoke } from './keysPage.js';
import { getDocs, getDocsIndex, getDocsSearch } from './docsPage.js';
import type { SharedPage } from './docsCache.js';
import { getSources, postPublish, postUnpublish } from './sourcesPage.js';
import { getDeleteSource, getSource, postAddSource, postDeleteSource, postRescan } from './sourcePage.js';
import { getWebhookCreated, getWebhooks, postDeleteWebhook, postSetEnabled, postWebhooks } from './webhooksPage.js';
import { getAccount, postAccountEmail, postAccountPassword } from './accountPage.js';
import { getInvited, getRemoveUser, getUsers, postRemoveUser, postUsers } from './usersPage.js';
import { getHome } from './homePage.js';
import { getConversation, getInbox, getInboxStream, postReply, postStatus, type StreamAnswer } from './inboxPage.js';
import { getAgents, postAgentAnswering, postAgentOrigins } from './agentsPage.js';
import { ShownOnce } from './shownOnce.js';
import { Operations } from './operations.js';
import { CursorCodec } from '../http/cursor.js';
import type { Route } from '../http/route.js';
import type { Answered } from '../http/pipeline.js';
import { COPY_JS, STYLE_CSS } from './assets.js';
import { INBOX_CSS, INBOX_JS } from './inboxAssets.js';
import type { EventStreams } from '../areas/events/stream.js';
import type { ClientAddresses } from '../http/clientAddress.js';
import type { NotOwned } from '../metrics/serverMetrics.js';
import { WorkspaceMovedError, type Store } from '../store/store.js';
import { MOVE_RETRY_AFTER_SECONDS } from '../http/errors.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { SecretBox } from '../core/secrets.js';

/** The headers on every answer of the settings area and the public docs (docs/security.md#headers). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
};

/** What a route answers: a page or a redirect, a cached docs page sent as its shared buffer, or an event stream. */
type Answer = WebAnswer | SharedPage | StreamAnswer;
type Handler = (ctx: WebCtx, param: string) => Answer | Promise<Answer>;
/** A page route; `public`: it answers without a session (the others send a visitor without one to the sign-in page). */
interface WebRoute { pattern: RegExp; name: string; GET?: Handler; POST?: Handler; public?: true }

/** An id in a page's path. */
const ID = '([^/]{1,100})';
const at = (path: string) => new RegExp(`^${path.replace(/\//g, '\\/')}$`);

/** The page routes; `streams`: the server's event streams (only the inbox's stream asks for them). */
const routesOf = (streams: () => EventStreams): WebRoute[] => [
  { pattern: /^\/$/, name: '/', public: true, GET: getHome },
  { pattern: /^\/settings\/?$/, name: '/settings', GET: (ctx) =>
    redirect(ctx.session() ? '/settings/keys' : '/settings/login') },
  { pattern: at('/settings/login'), name: '/settings/login', public: true, GET: getLogin, POST: postLogin },
  { pattern: at('/settings/logout'), name: '/settings/logout', POST: postLogout },
  { pattern: at('/settings/activate'), name: '/settings/activate', public: true, GET: getActivate, POST: postActivate },
  { pattern: at('/settings/inbox'), name: '/settings/inbox', GET: getInbox },
  { pattern: at('/settings/inbox/stream'), name: '/settings/inbox/stream', GET: getInboxStream(streams) },
  { pattern: at(`/settings/inbox/${ID}`), name: '/settings/inbox/{id}', GET: getConversation },
  { pattern: at(`/settings/inbox/${ID}/reply`), name: '/settings/inbox/{id}/reply', POST: postReply },
  { pattern: at(`/settings/inbox/${ID}/status`), name: '/settings/inbox/{id}/status', POST: postStatus },
  { pattern: at('/settings/agents'), name: '/settings/agents', GET: getAgents },
  { pattern: at(`/settings/agents/${ID}/origins`), name: '/settings/agents/{id}/origins', POST: postAgentOrigins },
  { pattern: at(`/settings/agents/${ID}/answering`), name: '/settings/agents/{id}/answering',
    POST: postAgentAnswering },
  { pattern: at('/settings/keys'), name: '/settings/keys', GET: getKeys, POST: postKeys },
  { pattern: at(`/settings/keys/${ID}/created`), name: '/settings/keys/{id}/created', GET: getKeyCreated },
  { pattern: at(`/settings/keys/${ID}/revoke`), name: '/settings/keys/{id}/revoke', GET: getRevoke, POST: postRevoke },
  { pattern: at('/settings/sources'), name: '/settings/sources', GET: getSources, POST: postAddSource },
  { pattern: at(`/settings/sources/${ID}`), name: '/settings/sources/{id}', GET: getSource },
  { pattern: at(`/settings/sources/${ID}/publish`), name: '/settings/sources/{id}/publish', POST: postPublish },
  { pattern: at(`/settings/sources/${ID}/unpublish`), name: '/settings/sources/{id}/unpublish', POST: postUnpublish },
  { pattern: at(`/settings/sources/${ID}/rescan`), name: '/settings/sources/{id}/rescan', POST: postRescan },
  { pattern: at(`/settings/sources/${ID}/delete`), name: '/settings/sources/{id}/delete', GET: getDeleteSource,
    POST: postDeleteSource },
  { pattern: at('/settings/webhooks'), name: '/settings/webhooks', GET: getWebhooks, POST: postWebhooks },
  { pattern: at(`/settings/webhooks/${ID}/created`), name: '/settings/webhooks/{id}/created',
    GET: getWebhookCreated },
  { pattern: at(`/settings/webhooks/${ID}/enable`), name: '/settings/webhooks/{id}/enable',
    POST: postSetEnabled(true) },
  { pattern: at(`/settings/webhooks/${ID}/disable`), name: '/settings/webhooks/{id}/disable',
    POST: postSetEnabled(false) },
  { pattern: at(`/settings/webhooks/${ID}/delete`), name: '/settings/webhooks/{id}/delete',
    POST: postDeleteWebhook },
  { pattern: at('/settings/account'), name: '/settings/account', GET: getAccount },
  { pattern: at('/settings/account/email'), name: '/settings/account/email', POST: postAccountEmail },
  { pattern: at('/settings/account/password'), name: '/settings/account/password', POST: postAccountPassword },
  { pattern: at('/settings/users'), name: '/settings/users', GET: getUsers, POST: postUsers },
  { pattern: at(`/settings/users/${ID}/invited`), name: '/settings/users/{id}/invited', GET: getInvited },
  { pattern: at(`/settings/users/${ID}/remove`), name: '/settings/users/{id}/remove', GET: getRemoveUser,
    POST: postRemoveUser },
  { pattern: /^\/docs\/?$/, name: '/docs', public: true, GET: getDocsIndex },
  { pattern: /^\/docs\/([^/]{1,100})$/, name: '/docs/{slug}', public: true, GET: getDocs },
  { pattern: /^\/docs\/([^/]{1,100})\/search$/, name: '/docs/{slug}/search', public: true, GET: getDocsSearch },
];

/** The static files: path → type and body (src/web/assets.ts). */
const ASSETS = new Map<string, { type: string; body: Buffer }>([
  ['/assets/style.css', { type: 'text/css; charset=utf-8', body: Buffer.from(STYLE_CSS + INBOX_CSS) }],
  ['/assets/copy.js', { type: 'text/javascript; charset=utf-8', body: Buffer.from(COPY_JS) }],
  ['/assets/inbox.js', { type: 'text/javascript; charset=utf-8', body: Buffer.from(INBOX_JS) }],
]);

/** One route of the settings area and the public docs, as {@link PAGE_ROUTES} describes it. */
export interface PageRoute {
  /** The path with its parameters in braces, as in the table of docs/web.md#routes-and-forms:
   * `/settings/keys/{id}/revoke`. */
  readonly name: string;
  /** The methods it takes (`HEAD` is answered like `GET`; any other method answers 405). */
  readonly methods: ReadonlyArray<'GET' | 'POST'>;
  /** Whether it answers without a session (the others answer 303 to `/settings/login` without one). */
  readonly public: boolean;
}

/**
 * Every page route and static file of the settings area and the public docs
 * (docs/web.md#routes-and-forms), described for generated tests: the tenant-isolation sweep
 * and the fuzzer iterate it, so a new page is covered, or fails them until it is
 * (docs/security.md#tenant-isolation).
 */
export const PAGE_ROUTES: ReadonlyArray<PageRoute> = Object.freeze([
  ...routesOf(() => { throw new Error('a description serves nothing'); }).map((r): PageRoute => ({ name: r.name,
    methods: [...(r.GET ? ['GET' as const] : []), ...(r.POST ? [
    'POST' as const] : [])], public: r.public === true })),
  ...[...ASSETS.keys()].map((name): PageRoute => ({ name, methods: ['GET'], public: true })),
]);

export interface WebAppOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  clients: ClientAddresses;
  /** `PUBLIC_URL` (or `http://HOST:PORT` with the bound port), without a trailing slash. */
  publicUrl: string;
  /** Seals the secrets of webhook endpoints made on the webhooks page. */
  secrets: SecretBox;
  /** `WEBHOOK_ALLOW_PRIVATE`: whether an endpoint URL may lead to a private address (docs/security.md#fetching). */
  webhookAllowPrivate: boolean;
  /** The API's route table, whose source operations the sources pages run (src/web/operations.ts). */
  routes: readonly Route[];
  /** `DOCS_VIEWS_PER_MINUTE` (docs/security.md#public-docs). */
  docsViewsPerMinute: number;
  /** `CELL_NAME` (docs/deployment.md#several-machines), or null outside a cell. */
  cell?: string | null;
  /** Told of each request for a workspace this server does not serve (metrics). */
  onNotOwned?: NotOwned;
  /** Told of each answered request (metrics): the page's path template (null: no page matched), status, ms. */
  onAnswered?: Answered;
  /** The server's event streams (`SSE_MAX_STREAMS`), which the inbox's stream joins (docs/web.md#inbox). */
  streams: EventStreams;
}

/**
 * After a `Connection: close` answer to a request whose body is still arriving (a 413), close
 * only our side and read and discard what the client still sends, for at most 1 s and 1 MiB,
 * before destroying the socket: closing with unread data makes the kernel send a reset, which
 * can make the client lose the answer (RFC 9112 §9.6, as the API pipeline does).
 */
function lingeringClose(req: IncomingMessage, res: ServerResponse): void {
  const sock = req.socket;
  sock.destroySoon = () => { sock.end(); };
  res.once('finish', () => {
    let discarded = 0;
    const timer = setTimeout(() => sock.destroy(), 1000);
    timer.unref();
    sock.once('close', () => clearTimeout(timer));
    req.on('data', (c: Buffer) => { discarded += c.length; if (discarded > 1024 * 1024) sock.destroy(); });
    req.resume();
  });
}

export class WebApp {
  /** Set on shutdown: new requests get a 503 page with `Connection: close`. */
  draining = false;
  private inFlight = 0;
  private idle: (() => void) | null = null;
  private readonly services: WebServices;
  private readonly accessLog: boolean;
  /** Public docs pages per client address: a bucket of half `DOCS_VIEWS_PER_MINUTE`, refilled at that rate. */
  private readonly docsViews: TokenBucketLimiter;
  private readonly routes: WebRoute[];

  constructor(private readonly opts: WebAppOptions) {
    const sessions = new Sessions(opts.store, opts.clock, opts.logger, opts.store.secret);
    this.services = { store: opts.store, clock: opts.clock, logger: opts.logger, sessions,
      limits: new SignInLimits(opts.clock), eventLogBudget: new TokenBucketLimiter(1, 1, opts.clock, 10_000),
      passwords: new Passwords(sharedHashLanes()), publicUrl: opts.publicUrl,
      secrets: opts.secrets, webhookAllowPrivate: opts.webhookAllowPrivate, cell: opts.cell ?? null,
      notOwned: opts.onNotOwned, shownOnce: new ShownOnce(),
      operations: new Operations(opts.routes, opts.store, new CursorCodec(opts.store.secret)) };
    this.accessLog = opts.logger.enabled('info');
    this.routes = routesOf(() => opts.streams);
    this.docsViews = new TokenBucketLimiter(Math.max(1, Math.floor(opts.docsViewsPerMinute / 2)),
      opts.docsViewsPerMinute, opts.clock);
  }

  /** Whether a request for `url` (path and query) is the settings area's, not the API's. */
  static claims(url: string): boolean {
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    return path === '/' || path === '/settings' || path.startsWith('/settings/') || path === '/docs' ||
      path.startsWith('/docs/') || path.startsWith('/assets/');
  }

  /** Resolves when no request of the settings area is being handled (graceful shutdown). */
  whenIdle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((r) => { this.idle = r; });
  }

  /** The request listener for claimed requests; never rejects. */
  handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    this.inFlight++;
    const started = performance.now();
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && /^[\x20-\x7e]{1,128}$/.test(given) ? given : randomUUID();
    let routeName = '-';
    let template: string | null = null;
    try {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q === -1 ? url : url.slice(0, q);
      const method = req.method === 'HEAD' ? 'GET' : req.method ?? 'GET';
      const asset = ASSETS.get(path);
      if (asset) {
        routeName = template = path;
        this.sendAsset(req, res, requestId, asset, method);
        return;
      }
      const https = overHttps(req, this.opts.clients);
      const ctx = new WebCtx(req, path, new URLSearchParams(q === -1 ? '' : url.slice(q + 1)), https, this.services,
        requestId, this.opts.clients.clientKey(req));
      let answer: Answer;
      try {
        answer = await this.dispatch(ctx, method, path,
          (name) => { template = name; routeName = `${method} ${name}`; });
      } catch (e) {
        answer = this.failure(ctx, e);
      }
      this.send(req, res, requestId, answer, ctx.setCookies);
    } catch (e) {
      this.opts.logger.error('unexpected error in the settings area',
        { requestId, error: (e as Error)?.stack ?? String(e) });
      if (!res.headersSent) res.writeHead(500, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8',
        'X-Request-Id': requestId }).end('Something went wrong.\n');
      else res.destroy();
    } finally {
      this.inFlight--;
      if (this.inFlight === 0 && this.idle) { const r = this.idle; this.idle = null; r(); }
      this.opts.onAnswered?.(req.method ?? '-', template, res.headersSent ? res.statusCode : 499,
        performance.now() - started);
      if (this.accessLog) {
        const ms = Math.round((performance.now() - started) * 100) / 100;
        this.opts.logger.info('request', { requestId, method: req.method, route: routeName, status: res.statusCode,
          durationMs: ms });
      }
    }
  };

  private async dispatch(ctx: WebCtx, method: string, path: string, named: (name: string) => void): Promise<Answer> {
    if (this.draining) throw new WebError(503, 'The server is shutting down. Try again in a moment.',
      { Connection: 'close' });
    for (const route of this.routes) {
      const m = route.pattern.exec(path);
      if (!m) continue;
      named(route.name);
      if (route.name.startsWith('/docs/')) this.admitDocsView(ctx);
      const handler = method === 'GET' ? route.GET : method === 'POST' ? route.POST : undefined;
      if (!handler) {
        const allow = [route.GET ? 'GET, HEAD' : '', route.POST ? 'POST' : ''].filter(Boolean).join(', ');
        throw new WebError(405, `This page does not take ${method} requests.`, { Allow: allow });
      }
      // A workspace moving to another cell reads on; its changes wait for it there (docs/deployment.md).
      const signedIn = method === 'POST' ? ctx.session() : undefined;
      if (signedIn && this.opts.store.moving.has(signedIn.user.workspaceId)) {
        throw new WorkspaceMovedError(signedIn.user.workspaceId, true);
      }
      let param = m[1] ?? '';
      try { param = decodeURIComponent(param); } catch { throw new WebError(404, 'There is no page here.'); }
      return handler(ctx, param);
    }
    throw new WebError(404, 'There is no page here.');
  }

  /**
   * Takes one of the client address's docs views (docs/security.md#public-docs): a reader never runs out, a loop
   * over the pages from one address gets 429 once past the burst, at the refill rate.
   * @throws WebError 429 with `Retry-After` when the address has none left.
   */
  private admitDocsView(ctx: WebCtx): void {
    const r = this.docsViews.take(ctx.client);
    const n = r.retryAfterSeconds;
    if (!r.allowed) throw new WebError(429, `Too many docs pages from this address. Try again in ${n} second${
      n === 1 ? '' : 's'}.`, { 'Retry-After': String(n) });
  }

  /** The answer to a refusal or an unexpected error: an error page (or the sign-in redirect). */
  private failure(ctx: WebCtx, e: unknown): WebAnswer {
    if (e instanceof SignInRequired) return redirect('/settings/login');
    const viewer = (() => { try { const s = ctx.session(); return s ? ctx.viewer(s) : undefined; } catch {
      return undefined; } })();
    if (e instanceof WebError) return pageAnswer(e.status, errorPage(e.status, e.message, viewer), e.headers);
    if (e instanceof WorkspaceMovedError && !e.moving) this.opts.onNotOwned?.('moved');
    if (e instanceof WorkspaceMovedError) return pageAnswer(503, errorPage(503, e.moving
      ? 'This workspace is being moved to another machine. Try again in a moment.'
      : 'This workspace has moved to another machine. Try again in a moment.', viewer),
    { 'Retry-After': String(MOVE_RETRY_AFTER_SECONDS) });
    this.opts.logger.error('unexpected error in the settings area',
      { requestId: ctx.requestId, error: (e as Error)?.stack ?? String(e) });
    return pageAnswer(500, errorPage(500,
      'The server could not complete this request; nothing was changed. See the server log.', viewer));
  }

  private send(req: IncomingMessage, res: ServerResponse, requestId: string, answer: Answer, cookies: string[]): void {
    if (answer.kind === 'shared') { this.sendShared(req, res, requestId, answer); return; }
    if (answer.kind === 'stream') {
      res.writeHead(200, { ...SECURITY_HEADERS, 'X-Request-Id': requestId, 'Cache-Control': 'no-store',
        'Content-Type': 'text/event-stream; charset=utf-8', 'X-Accel-Buffering': 'no' });
      if (req.method === 'HEAD') { res.end(); return; }
      answer.start(res);
      return;
    }
    const headers: Record<string, string | string[]> = { ...SECURITY_HEADERS, 'X-Request-Id': requestId,
      'Cache-Control': 'no-store' };
    if (cookies.length) headers['Set-Cookie'] = cookies;
    if (answer.kind === 'redirect') {
      res.writeHead(303, { ...headers, Location: answer.location, 'Content-Length': '0' }).end();
      return;
    }
    const body = Buffer.from(answer.body.text);
    Object.assign(headers, answer.headers, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': String(
      body.length) });
    res.writeHead(answer.status, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
    if (headers.Connection === 'close' && !req.complete) lingeringClose(req, res);
  }

  /**
   * A cached docs page (docs/web.md#docs-page-cache): the same buffer for every client, never a
   * copy; revalidated by its ETag (304 without a body when `If-None-Match` names it).
   */
  private sendShared(req: IncomingMessage, res: ServerResponse, requestId: string, page: SharedPage): void {
    const headers = { ...SECURITY_HEADERS, 'X-Request-Id': requestId, 'Cache-Control': 'no-cache', ETag: page.etag };
    const asked = req.headers['if-none-match'];
    const named = (tag: string) => tag.trim() === '*' || tag.trim().replace(/^W\//, '') === page.etag;
    if (asked !== undefined && asked.split(',').some(named)) {
      res.writeHead(304, headers).end();
      return;
    }
    const length = String(page.body.length);
    res.writeHead(200, { ...headers, 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': length });
    res.end(req.method === 'HEAD' ? undefined : page.body);
  }

  private sendAsset(req: IncomingMessage, res: ServerResponse, requestId: string,
    asset: { type: string; body: Buffer }, method: string): void {
    const base = { ...SECURITY_HEADERS, 'X-Request-Id': requestId };
    if (method !== 'GET') {
      res.writeHead(405, { ...base, Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end(
        'Method not allowed.\n');
      return;
    }
    res.writeHead(200, { ...base, 'Content-Type': asset.type, 'Content-Length': String(asset.body.length),
      'Cache-Control': 'public, max-age=3600' });
    res.end(req.method === 'HEAD' ? undefined : asset.body);
  }
}
