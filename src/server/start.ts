/**
 * Starting and stopping the server (docs/configuration.md#starting-and-stopping): bind the port, open the data dir,
 * bootstrap a first workspace and key, serve the admin socket and the API, and shut down gracefully.
 */
import * as http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { readdirSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { App } from '../http/pipeline.js';
import { docsModel } from '../web/docsModel.js';
import { ConnectionGuard, type Handler } from '../http/connections.js';
import { Admin } from '../admin/operations.js';
import { adminSocketPath, listenAdminSocket } from '../admin/socket.js';
import { buildRoutes } from './routes.js';
import { countingAnalyzer } from './metrics.js';
import { ServerMetrics } from '../metrics/serverMetrics.js';
import { listenMetrics } from '../metrics/listener.js';
import { widgetPreflight } from '../areas/widget/widget.js';
import { SecretBox } from '../core/secrets.js';
import { WorkerAnalyzer } from '../ingest/workers/pool.js';
import { WorkerBodyParser } from '../http/largeBody.js';
import { UsageCounter } from '../areas/usage/counter.js';
import { WebhookDispatcher } from '../areas/webhooks/dispatcher.js';
import { EventStreams } from '../areas/events/stream.js';
import type { Analyzer } from '../ingest/analyze.js';
import { MiB, type Route } from '../http/route.js';
import { DataDirError, type Store } from '../store/store.js';
import { openStore, type Workspace } from '../domain/workspace.js';
import { ERRORS, errorMessage, type ErrorCode } from '../http/errors.js';
import { publicBaseUrl, type Config } from '../core/config.js';
import { SECURITY_HEADERS, WebApp } from '../web/app.js';
import { isWidgetScript, serveWidgetScript } from '../web/widget/serve.js';
import { ClientAddresses } from '../http/clientAddress.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { StoreFs } from '../store/log/fs.js';
import { AutoReplies } from '../areas/answers/autoReply.js';
import { CellSync } from './cellSync.js';
import { CellApi, moveWorkspace } from './cellMove.js';
import type { RouteDeps } from '../areas/common.js';

export interface ServerDeps {
  clock: Clock;
  logger: Logger;
  fs?: StoreFs;
  /** Where the bootstrap key is printed (default: stderr). */
  announce?: (text: string) => void;
  compactionSlack?: number;
  /** Where ingestion parses (default: the worker pool). */
  analyzer?: Analyzer;
  /** Test seam of the default worker pool: a module each worker runs before every job. */
  ingestHook?: string;
  /**
   * Per-connection output limits (README "Limits"): unsent bytes above which further requests wait (default 1 MiB), how
   * long output may not progress before closing (default 30 s, on `clock`), and the check's period (default 1 s; 0:
   * tests call `connections.sweep()`).
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
  /** The open event streams (docs/api.md#event-stream). */
  streams: EventStreams;
  /** The agents' answers to live-chat customers (docs/api.md#agent-modes). */
  replies: AutoReplies;
  /** The admin socket's server (docs/storage.md#admin-socket). */
  adminSocket: http.Server;
  /** The route table this server serves. */
  routes: Route[];
  /** Sends webhook deliveries (docs/api.md#webhook-deliveries); tests call `runDue()` after advancing the clock. */
  webhooks: WebhookDispatcher;
  /** The bound port of `GET /metrics` (docs/deployment.md#monitoring); null without `METRICS_PORT`. */
  metricsPort: number | null;
  /** Graceful stop: refuse new requests (503), finish in-flight ones, flush, close. */
  close(): Promise<void>;
}

/** Answers a request the HTTP parser refused, then closes; a HEAD request gets no body (RFC 9110 §9.3.2). */
function rawError(socket: Socket, code: ErrorCode, detail: string | undefined, rawPacket: Buffer | undefined): void {
  const body = JSON.stringify({ code, error: errorMessage(code, detail) });
  const status = ERRORS[code].status;
  const head = rawPacket !== undefined && rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nApi-Version: 2026-06-29\r\nX-Request-Id: ${randomUUID()}\r\n` +
    `${RAW_SECURITY_HEADERS}Connection: close\r\n\r\n${head ? '' : body}`);
}
/** The pages' security headers (docs/security.md#headers), also on answers written before a request was read. */
const RAW_SECURITY_HEADERS = Object.entries(SECURITY_HEADERS).map(([k, v]) => `${k}: ${v}\r\n`).join('');

/** Thrown when the HTTP port or the metrics port cannot be listened on; the message names the setting at fault. */
export class ListenError extends Error {}

/** Why `host`:`port` cannot be listened on, naming HOST or PORT (`METRICS_`: METRICS_HOST or METRICS_PORT). */
function listenFailure(e: NodeJS.ErrnoException, host: string, port: number, prefix: '' | 'METRICS_' = ''):
  ListenError {
  const h = `${prefix}HOST ${JSON.stringify(host)}`;
  const p = `${prefix}PORT ${port}`;
  switch (e.code) {
    case 'ENOTFOUND': case 'EAI_NONAME': case 'EAI_AGAIN': case 'EAI_FAIL': case 'EAI_NODATA':
      return new ListenError(`${h} does not resolve to an address (${e.code})`);
    case 'EADDRNOTAVAIL': return new ListenError(`${h} is not an address of this machine (EADDRNOTAVAIL)`);
    case 'EADDRINUSE': return new ListenError(`${p} is already in use on ${JSON.stringify(host)} (EADDRINUSE)`);
    case 'EACCES': return new ListenError(
      `${p} on ${JSON.stringify(host)} needs privileges this process does not have (EACCES)`);
    default: return new ListenError(`cannot listen on ${h}, ${p}: ${e.message}`);
  }
}

/** What answers a request once the server is ready: the API, or the settings area in front of it. */
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
  /** The open event streams (docs/api.md#event-stream). */
  streams: EventStreams;
  /** The agents' answers to live-chat customers (docs/api.md#agent-modes). */
  replies: AutoReplies;
  cellSync: CellSync | null;
}

/**
 * Opens the data dir (lock, replay), bootstraps an empty one, and starts the ingestion workers, usage counter, route
 * table and admin socket. On failure it closes what it opened, the lock included, and rethrows.
 * @throws LockedError, DataDirError, CorruptLogError (system log), or a failure to listen on the admin socket.
 */
async function openServices(config: Config, deps: ServerDeps, publicUrl: string, metrics: ServerMetrics | null):
  Promise<Services> {
  const { clock, logger } = deps;
  let store: Store<Workspace> | undefined;
  let analyzer: Analyzer | undefined;
  let usage: UsageCounter | undefined;
  try {
    store = await openStore({ dataDir: config.dataDir, sync: config.sync === 'always', clock, fs: deps.fs,
      onError: (e) => logger.error('background store error', { error: e.message }),
        compactionSlack: deps.compactionSlack, snapshot: config.startupSnapshot, onBatch: metrics?.batch });
    for (const db of [store.system, ...[...store.workspaces.values()].map((w) => w.db)]) {
      const r = db.replay;
      const l = db.loadInfo;
      // How each log was loaded: from its snapshot block or by a full replay (docs/storage.md#snapshots).
      logger.info('log loaded', { file: db.path, snapshot: l.snapshot, records: l.records, lazyRecords: l.lazy,
        replayedOps: l.replayedOps, replayedTypes: l.replayedTypes, ms: Math.round(l.ms) });
      if (l.ignoredBlock) logger.warn('snapshot block not used: the log was replayed in full',
        { file: db.path, reason: l.ignoredBlock });
      if (r.damagedSnapshotLines) logger.warn('damaged snapshot lines skipped',
        { file: db.path, lines: r.damagedSnapshotLines.map((d) => d.line) });
      // A torn last line was cut off during replay: say so, never drop it quietly (docs/storage.md#torn-tail).
      if (r.tornTailSavedTo) logger.warn('torn log tail set aside',
        { file: db.path, keptBytes: r.size, savedTo: r.tornTailSavedTo });
    }
    // A workspace whose log has a corrupt line is offline (503 `storage_failed`); the others serve.
    for (const [workspaceId, e] of store.quarantined) {
      logger.error('workspace offline: its log is corrupt', { workspaceId, file: e.file, line: e.line,
        offset: e.offset, reason: e.reason, fix: `cli repair --workspace ${workspaceId}` });
    }
    const secrets = SecretBox.load(config.dataDir);
    const admin = new Admin(store, clock, secrets, publicUrl);
    // The caller bound the port first: a start that cannot serve leaves no bootstrap key behind.
    if (store.empty && config.bootstrap) {
      refuseUnsafeBootstrap(config.dataDir, store);
      const boot = await admin.bootstrap();
      (deps.announce ?? ((t) => announceOnStderr(t, logger)))(
        `Created workspace "${boot.name}" (${boot.workspaceId}) and a full-access API key.\n` +
        `API key (shown only this once — keep it somewhere safe): ${boot.key}\n` +
        (config.webUi ? `Settings area: set the password of ${boot.ownerEmail} at ${boot.ownerActivationUrl} ` +
          '(valid 24 hours, usable once).\n' : ''));
    }
    analyzer = deps.analyzer ?? new WorkerAnalyzer({ timeoutMs: config.ingestTimeoutMs, hook: deps.ingestHook });
    usage = new UsageCounter(store, clock, logger);
    usage.start();
    const streams = new EventStreams(config.sseMaxStreams);
    const routeDeps: RouteDeps = { store, config, secrets, logger, usage, publicUrl, streams, clock,
      clients: new ClientAddresses(config.trustProxy),
      analyzer: metrics ? countingAnalyzer(analyzer, metrics) : analyzer,
      docsLinks: (src, idx) => docsModel(src, idx).links };
    const routes = buildRoutes(routeDeps);
    // Agents in `reply` or `suggest` mode answer live-chat customers (docs/api.md#agent-modes).
    const replies = new AutoReplies(routeDeps, () => clock.now());
    store.eachWorkspace((ws) => replies.watch(ws));
    // A cell tells HAProxy of what it now owns (docs/deployment.md#several-machines).
    const cellSync = config.cell ? new CellSync(config.cell, logger) : null;
    cellSync?.watch(store);
    admin.mover = (id, to) => moveWorkspace({ store: store!, cell: config.cell, streams, clock, logger }, id, to);
    const adminServer = await listenAdminSocket(config.dataDir, admin, logger);
    const webhooks = new WebhookDispatcher({ store, clock, logger, secrets, config, random: deps.webhookRandom,
      onOutcome: metrics ? (s) => metrics.webhookOutcome(s === 'pending' ? 'retrying' : s) : undefined });
    if (metrics) metrics.sources = { ...metrics.sources, webhookQueue: () => webhooks.queued(),
      webhooksInFlight: () => webhooks.inFlight, streams: () => streams.open };
    return { store, admin, analyzer, usage, routes, adminServer, webhooks, secrets, streams, replies, cellSync };
  } catch (e) {
    if (!deps.analyzer) await analyzer?.close().catch(() => {});
    await usage?.close().catch(() => {});
    await store?.close().catch(() => {});
    throw e;
  }
}

/** Whether `host` (HOST) names this machine's loopback interface only. */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Refuses a data dir its group or others may write (docs/security.md#data-dir): whoever can write it can replace its
 * logs, key or admin socket. Runs before the port is bound, so nothing is written.
 * @throws DataDirError naming the dir and its mode (`… is group- and world-writable (mode 0777); run chmod go-w`).
 */
export function refuseWritableByOthers(dir: string): void {
  let mode: number;
  try { mode = statSync(dir).mode; } catch { return; }
  const by = [(mode & 0o020) !== 0 && 'group-', (mode & 0o002) !== 0 && 'world-'].filter(Boolean);
  if (by.length === 0) return;
  const octal = (mode & 0o7777).toString(8).padStart(4, '0');
  throw new DataDirError(`data dir ${dir} is ${by.join(' and ')}writable (mode ${octal}); run chmod go-w on it`);
}

/**
 * Starts the server. The port is bound first: a HOST or PORT that cannot be listened on stops the start with the data
 * dir untouched (not created, locked or bootstrapped). Requests arriving before the data dir is open wait.
 * @throws ListenError, LockedError, DataDirError, CorruptLogError (system log), AdminError (socket path too long): the
 *   caller prints one line and exits 2.
 */
export async function startServer(config: Config, deps: ServerDeps): Promise<RunningServer> {
  const { clock, logger } = deps;
  // A data dir whose socket path cannot be bound stops the start here, before anything is written.
  adminSocketPath(config.dataDir);
  refuseWritableByOthers(config.dataDir);
  // Requests arriving before the application exists wait for it; a failed start drops them.
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
  connections.attach(server);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable) { socket.destroy(); return; }
    if (err.code === 'HPE_HEADER_OVERFLOW') rawError(socket, 'request_header_fields_too_large', undefined,
      (err as { rawPacket?: Buffer }).rawPacket);
    else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') socket.destroy();
    else rawError(socket, 'invalid_request', 'the HTTP request is malformed',
      (err as { rawPacket?: Buffer }).rawPacket);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        // An error of the listening server (ENFILE, ENOMEM…) is logged, not thrown: an unheard 'error' event would end
        // the process.
        server.on('error', (e: NodeJS.ErrnoException) => logger.error('the HTTP server failed to accept a connection', {
          error: e.message, code: e.code }));
        resolve();
      });
    });
  } catch (e) {
    connections.close();
    throw listenFailure(e as NodeJS.ErrnoException, config.host, config.port);
  }
  // The metrics port, off the API port (docs/deployment.md#monitoring), is bound before the data dir is touched too.
  const metrics = config.metricsPort === null ? null : new ServerMetrics();
  let metricsServer: { server: http.Server; port: number } | null = null;
  if (metrics) {
    try { metricsServer = await listenMetrics(metrics, config.metricsHost, config.metricsPort!); } catch (e) {
      metrics.close();
      server.close();
      connections.close();
      throw listenFailure(e as NodeJS.ErrnoException, config.metricsHost, config.metricsPort!, 'METRICS_');
    }
  }
  const closeMetrics = () => {
    metrics?.close();
    metricsServer?.server.close();
    metricsServer?.server.closeAllConnections();
  };

  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const publicUrl = publicBaseUrl(config, port);
  let services: Services;
  try {
    services = await openServices(config, deps, publicUrl, metrics);
  } catch (e) {
    closeMetrics();
    // Release the port and the connections that came meanwhile (openServices released the data dir).
    failed(e);
    server.close();
    server.closeAllConnections();
    connections.close();
    throw e;
  }
  const { store, admin, analyzer, usage, routes, adminServer, webhooks, secrets, streams, replies, cellSync } =
    services;
  const bodyParser = new WorkerBodyParser();
  const theApp = new App({ store, config, clock, logger, routes, bodyParser, onAuthenticated: (wsId) =>
    usage.countRequest(wsId), onAnswered: metrics?.request, onNotOwned: metrics?.notOwned,
    preflight: widgetPreflight(store) });
  // The settings area answers its own paths; every other request goes to the API.
  const web = config.webUi ? new WebApp({ store, clock, logger, clients: new ClientAddresses(config.trustProxy),
    publicUrl, secrets, webhookAllowPrivate: config.webhookAllowPrivate,
    docsViewsPerMinute: config.docsViewsPerMinute, routes, streams, onAnswered: metrics?.request,
    cell: config.cell?.name ?? null, onNotOwned: metrics?.notOwned }) : null;
  // Cells move workspaces to each other over /cell/v1/ (docs/deployment.md#moving-a-workspace).
  const cellApi = config.cell ? new CellApi(store, cellSync, clock, logger) : null;
  // The widget script is public and served with or without the settings area (docs/widget.md#the-script).
  const front: Front = { handle: (req, res) => {
    const url = req.url ?? '/';
    if (cellApi && CellApi.claims(url)) { cellApi.handle(req, res); return undefined; }
    if (isWidgetScript(url)) { serveWidgetScript(req, res, logger); return undefined; }
    return web && WebApp.claims(url) ? web.handle(req, res) : theApp.handle(req, res);
  } };
  app = front;
  ready(front);
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  logger.info('listening', { url, port, dataDir: config.dataDir, sync: config.sync });
  if (metricsServer) logger.info('metrics listening', { host: config.metricsHost, port: metricsServer.port });
  // Printed links (activation, docs URLs) use PUBLIC_URL; without it they name the bound address, which on
  // 0.0.0.0 or a private address is not what people open (docs/deployment.md#public-url).
  if (config.publicUrl === null && !isLoopback(config.host)) logger.warn('PUBLIC_URL is not set', { host: config.host,
    links: url, fix: 'set PUBLIC_URL to the address people open, such as https://support.example.com' });
  // Deliveries left pending (by a restart, or made before now) are sent from here on, off the request path.
  webhooks.start();

  let closing: Promise<void> | null = null;
  const close = () => closing ??= (async () => {
    theApp.draining = true;
    if (web) web.draining = true;
    server.close();
    adminServer.close();
    server.closeIdleConnections();
    streams.close();
    const deadline = new Promise<void>((r) => setTimeout(r, config.shutdownTimeoutMs).unref());
    await Promise.race([Promise.all([theApp.whenIdle(), web?.whenIdle()]), deadline]);
    server.closeAllConnections();
    connections.close();
    await replies.settled();
    cellSync?.close();
    await webhooks.close();
    await analyzer.close();
    await bodyParser.close();
    await usage.close();
    await store.close();
    closeMetrics();
    logger.info('stopped', {});
  })();
  return { url, port, app: theApp, web, publicUrl, store, admin, http: server, adminSocket: adminServer, routes, usage,
    connections, webhooks, streams, replies, metricsPort: metricsServer?.port ?? null, close };
}

/**
 * Stops a bootstrap on a data dir that held data (docs/security.md): an empty system log beside workspace logs, or one
 * whose torn tail was just set aside, is a damaged one — a new workspace and key would be made while every existing key
 * answered 401.
 * @throws DataDirError naming the file that shows it.
 */
function refuseUnsafeBootstrap(dataDir: string, store: Store<Workspace>): void {
  const system = store.system.path;
  const tail = store.system.replay.tornTailSavedTo;
  if (tail !== undefined) {
    throw new DataDirError(`${system} holds no workspace but its torn tail was set aside in ${tail}: `
      + 'not bootstrapping; restore the system log from a backup or run "cli repair --system"');
  }
  const dir = join(dataDir, 'workspaces');
  const log = readdirSync(dir).find((f) => f.endsWith('.log'));
  if (log !== undefined) {
    throw new DataDirError(`${system} holds no workspace but ${join(dir, log)} exists: not bootstrapping; `
      + 'restore the system log from a backup');
  }
}

/**
 * Prints the bootstrap announcement `text` on stderr in one synchronous write. A stderr that cannot be written loses
 * it, not the process: a `warn` line (without the key) says so; `key create` makes another
 * (docs/configuration.md#admin-cli).
 */
function announceOnStderr(text: string, logger: Logger): void {
  try { writeSync(2, text); } catch (e) {
    logger.warn('the bootstrap key could not be printed on stderr; make one with the CLI (key create)',
      { code: (e as NodeJS.ErrnoException).code });
  }
}
