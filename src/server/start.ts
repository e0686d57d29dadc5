/**
 * Starting and stopping the server (docs/configuration.md#starting-and-stopping): bind the port
 * (with timeouts that cut slow clients off), then open the data dir, bootstrap a first
 * workspace and key, serve the admin socket and the API, and shut down gracefully.
 */
import * as http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { writeSync } from 'node:fs';
import { App } from '../http/pipeline.js';
import { ConnectionGuard, type Handler } from '../http/connections.js';
import { FastPath } from '../http/fastPath.js';
import { Admin } from '../admin/operations.js';
import { adminSocketPath, listenAdminSocket } from '../admin/socket.js';
import { buildRoutes } from './routes.js';
import { SecretBox } from '../core/secrets.js';
import { WorkerAnalyzer } from '../ingest/workers/pool.js';
import { WorkerBodyParser } from '../http/largeBody.js';
import { UsageCounter } from '../areas/usage/counter.js';
import { WebhookDispatcher } from '../areas/webhooks/dispatcher.js';
import type { Analyzer } from '../ingest/analyze.js';
import { MiB, type Route } from '../http/route.js';
import type { Store } from '../store/store.js';
import { openStore, type Workspace } from '../domain/workspace.js';
import { ERRORS, errorMessage, type ErrorCode } from '../http/errors.js';
import { publicBaseUrl, type Config } from '../core/config.js';
import { SECURITY_HEADERS, WebApp } from '../web/app.js';
import { ClientAddresses } from '../http/clientAddress.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { StoreFs } from '../store/fs.js';

export interface ServerDeps {
  clock: Clock;
  logger: Logger;
  fs?: StoreFs;
  /** Where the bootstrap key is printed (default: stderr). */
  announce?: (text: string) => void;
  compactionSlack?: number;
  /** Where ingestion parses (default: the worker pool). */
  analyzer?: Analyzer;
  /** Test seam of the default worker pool: a module each worker runs before every job (see src/ingest/workers/worker.ts). */
  ingestHook?: string;
  /**
   * Per-connection output limits (README "Limits"): unsent bytes above which a connection's
   * pipelined requests wait (default 1 MiB), how long its pending output may make no progress
   * before it is closed (default 30 s, on `clock`), and how often that is checked (default 1 s;
   * 0: never by itself, tests call `connections.sweep()`).
   */
  output?: { maxUnsentBytes?: number; stallMs?: number; sweepMs?: number };
  /** The webhook dispatcher's jitter source, a number in [0, 1) (default Math.random; tests fix it). */
  webhookRandom?: () => number;
}

export interface RunningServer {
  url: string;
  port: number;
  app: App;
  /** The settings area (docs/web.md); null when `WEB_UI` is false. */
  web: WebApp | null;
  /** `PUBLIC_URL`, or `http://HOST:PORT` with the bound port: the base of printed links. */
  publicUrl: string;
  store: Store<Workspace>;
  admin: Admin;
  http: http.Server;
  usage: UsageCounter;
  /** Admission per connection: the output bound, stalled connections, the per-address cap. */
  connections: ConnectionGuard;
  /** The admin socket's server (docs/storage.md#admin-socket). */
  adminSocket: http.Server;
  /** The fast path for plain reads (null with `HTTP_FAST_PATH=false`): its counters, for tests and benchmarks. */
  fast: FastPath | null;
  /** The route table this server serves. */
  routes: Route[];
  /** Sends webhook deliveries (docs/api.md#webhook-deliveries); tests call `runDue()` after advancing the clock. */
  webhooks: WebhookDispatcher;
  /** Graceful stop: refuse new requests (503), finish in-flight ones, flush, close. */
  close(): Promise<void>;
}

/**
 * Answers a request the HTTP parser refused, before any routing, then closes. A HEAD request
 * (judged from the packet being parsed) gets the headers without the body (RFC 9110 §9.3.2).
 */
function rawError(socket: Socket, code: ErrorCode, detail: string | undefined, rawPacket: Buffer | undefined): void {
  const body = JSON.stringify({ code, error: errorMessage(code, detail) });
  const status = ERRORS[code].status;
  const head = rawPacket !== undefined && rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nApi-Version: 2026-06-29\r\nX-Request-Id: ${randomUUID()}\r\n${RAW_SECURITY_HEADERS}Connection: close\r\n\r\n${head ? '' : body}`);
}
/**
 * The pages' security headers (docs/security.md#headers), on the answers written before any
 * request was read too: the request may have been for a page, and on an API answer they do no harm.
 */
const RAW_SECURITY_HEADERS = Object.entries(SECURITY_HEADERS).map(([k, v]) => `${k}: ${v}\r\n`).join('');

/** Thrown when the HTTP port cannot be listened on; the message names the setting at fault. */
export class ListenError extends Error {}

/** Why `host`:`port` cannot be listened on, naming HOST or PORT. */
function listenFailure(e: NodeJS.ErrnoException, host: string, port: number): ListenError {
  const h = JSON.stringify(host);
  switch (e.code) {
    case 'ENOTFOUND': case 'EAI_NONAME': case 'EAI_AGAIN': case 'EAI_FAIL': case 'EAI_NODATA':
      return new ListenError(`HOST ${h} does not resolve to an address (${e.code})`);
    case 'EADDRNOTAVAIL': return new ListenError(`HOST ${h} is not an address of this machine (EADDRNOTAVAIL)`);
    case 'EADDRINUSE': return new ListenError(`PORT ${port} is already in use on ${h} (EADDRINUSE)`);
    case 'EACCES': return new ListenError(`PORT ${port} on ${h} needs privileges this process does not have (EACCES)`);
    default: return new ListenError(`cannot listen on HOST ${h}, PORT ${port}: ${e.message}`);
  }
}

/** What answers a request once the server is ready: the API pipeline, or the settings area in front of it. */
interface Front { handle: Handler }

/** What serves the API once the data dir is open. */
interface Services {
  store: Store<Workspace>;
  admin: Admin;
  analyzer: Analyzer;
  usage: UsageCounter;
  routes: Route[];
  adminServer: http.Server;
  webhooks: WebhookDispatcher;
  /** The server's secret box (webhook secrets are sealed with it, by the API and the settings area). */
  secrets: SecretBox;
}

/**
 * Opens the data dir (lock, replay), bootstraps an empty one, and starts what the API needs:
 * the ingestion workers, the usage counter, the route table and the admin socket. On failure
 * it closes what it opened — the data dir and its lock included — and rethrows.
 * @throws LockedError, DataDirError, CorruptLogError (of the system log), or a failure to listen on the admin socket.
 */
async function openServices(config: Config, deps: ServerDeps, publicUrl: string): Promise<Services> {
  const { clock, logger } = deps;
  let store: Store<Workspace> | undefined;
  let analyzer: Analyzer | undefined;
  let usage: UsageCounter | undefined;
  try {
    store = await openStore({ dataDir: config.dataDir, sync: config.sync === 'always', clock, fs: deps.fs,
      onError: (e) => logger.error('background store error', { error: e.message }), compactionSlack: deps.compactionSlack, snapshot: config.startupSnapshot });
    for (const db of [store.system, ...[...store.workspaces.values()].map((w) => w.db)]) {
      const r = db.replay;
      const l = db.loadInfo;
      // How each log was loaded: from its snapshot block (records left as bytes) or by a full replay (docs/storage.md#snapshots).
      logger.info('log loaded', { file: db.path, snapshot: l.snapshot, records: l.records, lazyRecords: l.lazy, replayedOps: l.replayedOps, replayedTypes: l.replayedTypes, ms: Math.round(l.ms) });
      if (l.ignoredBlock) logger.warn('snapshot block not used: the log was replayed in full', { file: db.path, reason: l.ignoredBlock });
      if (r.damagedSnapshotLines) logger.warn('damaged snapshot lines skipped', { file: db.path, lines: r.damagedSnapshotLines.map((d) => d.line) });
      // A torn last line was cut off during replay: say so, never drop it quietly (docs/storage.md#torn-tail).
      if (r.tornTailSavedTo) logger.warn('torn log tail set aside', { file: db.path, keptBytes: r.size, savedTo: r.tornTailSavedTo });
    }
    // A workspace whose log has a corrupt line is offline (503 `storage_failed`); the others serve.
    for (const [workspaceId, e] of store.quarantined) {
      logger.error('workspace offline: its log is corrupt', { workspaceId, file: e.file, line: e.line, offset: e.offset, reason: e.reason, fix: `cli repair --workspace ${workspaceId}` });
    }
    const secrets = SecretBox.load(config.dataDir);
    const admin = new Admin(store, clock, secrets, publicUrl);
    // The caller bound the port first: a start that cannot serve leaves no bootstrap key behind.
    if (store.empty && config.bootstrap) {
      const boot = await admin.bootstrap();
      (deps.announce ?? ((t) => announceOnStderr(t, logger)))(
        `Created workspace "${boot.name}" (${boot.workspaceId}) and a full-access API key.\n` +
        `API key (shown only this once — keep it somewhere safe): ${boot.key}\n` +
        (config.webUi ? `Settings area: set the password of ${boot.ownerEmail} at ${boot.ownerActivationUrl} (valid 24 hours, usable once).\n` : ''));
    }
    analyzer = deps.analyzer ?? new WorkerAnalyzer({ timeoutMs: config.ingestTimeoutMs, hook: deps.ingestHook });
    usage = new UsageCounter(store, clock, logger);
    usage.start();
    const routes = buildRoutes({ store, config, secrets, logger, analyzer, usage, publicUrl });
    const adminServer = await listenAdminSocket(config.dataDir, admin, logger);
    const webhooks = new WebhookDispatcher({ store, clock, logger, secrets, config, random: deps.webhookRandom });
    return { store, admin, analyzer, usage, routes, adminServer, webhooks, secrets };
  } catch (e) {
    if (!deps.analyzer) await analyzer?.close().catch(() => {});
    await usage?.close().catch(() => {});
    await store?.close().catch(() => {});
    throw e;
  }
}

/**
 * Starts the server. The port is bound first, before anything is written: a HOST or PORT that
 * cannot be listened on (a name that does not resolve, an address not of this machine, a port
 * in use) stops the start with the data dir untouched — not created, not locked, no bootstrap
 * key. Then the data dir is opened (and bootstrapped), and only then are requests answered:
 * requests that arrive in between wait for it.
 * @throws ListenError, LockedError, DataDirError, CorruptLogError (of the system log),
 *   AdminError (admin socket path too long) — the caller prints one line and exits 2.
 */
export async function startServer(config: Config, deps: ServerDeps): Promise<RunningServer> {
  const { clock, logger } = deps;
  adminSocketPath(config.dataDir); // a data dir whose socket path cannot be bound stops the start here, before anything is written
  // Requests that arrive before the application exists wait for it; if the start fails they
  // are dropped with their connections.
  let app: Front | undefined;
  let ready!: (app: Front) => void;
  let failed!: (err: unknown) => void;
  const starting = new Promise<Front>((resolve, reject) => { ready = resolve; failed = reject; });
  starting.catch(() => {}); // a failed start is reported by the throw below, not here
  const handler: Handler = (req, res) => app
    ? app.handle(req, res)
    : starting.then((a) => a.handle(req, res), () => { res.destroy(); });
  // The request timeout covers the headers too; node:http throws when headersTimeout exceeds it.
  const headersTimeout = Math.min(config.headersTimeoutMs, config.requestTimeoutMs);
  const connections = new ConnectionGuard(handler, {
    maxUnsentBytes: deps.output?.maxUnsentBytes ?? MiB,
    stallMs: deps.output?.stallMs ?? 30_000,
    sweepMs: deps.output?.sweepMs ?? 1000,
    maxPerAddress: config.maxConnectionsPerAddress,
  }, clock, logger);
  const server = http.createServer({
    headersTimeout,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, headersTimeout),
    maxHeaderSize: 16 * 1024,
  }, connections.handle);
  server.maxConnections = config.maxConnections;
  // The fast path takes the server's 'connection' event before the guard listens to it: a
  // connection handed over later goes to node:http's own listener only, and the guard (which
  // may refuse it) counts it once, as it arrives.
  let api: App | undefined;
  const fast = config.httpFastPath ? new FastPath(server, {
    accepts: (url) => url.startsWith('/api/') && !(config.webUi && WebApp.claims(url)),
    handler: () => (api === undefined ? undefined : connections.handle),
    keepAliveTimeoutMs: config.keepAliveTimeoutMs,
    headersTimeoutMs: headersTimeout,
  }) : null;
  connections.attach(server);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable) { socket.destroy(); return; }
    if (err.code === 'HPE_HEADER_OVERFLOW') rawError(socket, 'request_header_fields_too_large', undefined, (err as { rawPacket?: Buffer }).rawPacket);
    else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') socket.destroy();
    else rawError(socket, 'invalid_request', 'the HTTP request is malformed', (err as { rawPacket?: Buffer }).rawPacket);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        // Listening: an error of the server itself (accepting a connection failed: ENFILE,
        // ENOMEM…) is said, not thrown — an 'error' event nobody listens for ends the process.
        server.on('error', (e: NodeJS.ErrnoException) => logger.error('the HTTP server failed to accept a connection', { error: e.message, code: e.code }));
        resolve();
      });
    });
  } catch (e) {
    connections.close();
    throw listenFailure(e as NodeJS.ErrnoException, config.host, config.port);
  }

  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const publicUrl = publicBaseUrl(config, port);
  let services: Services;
  try {
    services = await openServices(config, deps, publicUrl);
  } catch (e) {
    // Release the port and the connections that came meanwhile (openServices released the data dir).
    failed(e);
    server.close();
    server.closeAllConnections();
    connections.close();
    throw e;
  }
  const { store, admin, analyzer, usage, routes, adminServer, webhooks, secrets } = services;
  const bodyParser = new WorkerBodyParser();
  const theApp = new App({ store, config, clock, logger, routes, bodyParser, onAuthenticated: (wsId) => usage.countRequest(wsId) });
  // The settings area answers its own paths; every other request goes to the API pipeline as it is.
  const web = config.webUi ? new WebApp({ store, clock, logger, clients: new ClientAddresses(config.trustProxy), publicUrl, secrets, webhookAllowPrivate: config.webhookAllowPrivate }) : null;
  const front: Front = web
    // (The fast path takes no path of the settings area: its requests all come from node:http.)
    ? { handle: (req, res) => (req instanceof http.IncomingMessage && res instanceof http.ServerResponse && WebApp.claims(req.url ?? '/') ? web.handle(req, res) : theApp.handle(req, res)) }
    : theApp;
  app = front;
  api = theApp;
  ready(front);
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  logger.info('listening', { url, port, dataDir: config.dataDir, sync: config.sync });
  // Deliveries left pending (by a restart, or made before now) are sent from here on, off the request path.
  webhooks.start();

  let closing: Promise<void> | null = null;
  const close = () => closing ??= (async () => {
    theApp.draining = true;
    if (web) web.draining = true;
    server.close();
    adminServer.close();
    server.closeIdleConnections();
    fast?.closeIdle();
    const deadline = new Promise<void>((r) => setTimeout(r, config.shutdownTimeoutMs).unref());
    await Promise.race([Promise.all([theApp.whenIdle(), web?.whenIdle()]), deadline]);
    server.closeAllConnections();
    fast?.closeAll();
    connections.close();
    await webhooks.close();
    await analyzer.close();
    await bodyParser.close();
    await usage.close();
    await store.close();
    logger.info('stopped', {});
  })();
  return { url, port, app: theApp, web, publicUrl, store, admin, http: server, adminSocket: adminServer, fast, routes, usage, connections, webhooks, close };
}

/**
 * Prints the bootstrap announcement `text` on standard error with one synchronous write. A
 * standard error that cannot be written (EPIPE: nobody reads it) loses the announcement, not
 * the process: a `warn` line says so — without the key — and the operator makes another key
 * with the CLI's `key create` (docs/configuration.md#admin-cli).
 */
function announceOnStderr(text: string, logger: Logger): void {
  try { writeSync(2, text); } catch (e) {
    logger.warn('the bootstrap key could not be printed on stderr; make one with the CLI (key create)', { code: (e as NodeJS.ErrnoException).code });
  }
}
