/**
 * The metrics port (docs/deployment.md#monitoring): a node:http server of its own on `METRICS_HOST`:`METRICS_PORT`
 * answering `GET /metrics` with the exposition text, apart from the API port so that it is never public by accident.
 */
import * as http from 'node:http';
import { EXPOSITION_TYPE } from './exposition.js';
import type { ServerMetrics } from './serverMetrics.js';

/** Answers one request of the metrics port: `GET`/`HEAD /metrics` (a query is ignored), else 404 or 405 as text. */
function answer(metrics: ServerMetrics, req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const text = (status: number, body: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body),
      ...extra });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  if (path !== '/metrics') return text(404, 'Not found: the metrics are at /metrics.\n');
  if (req.method !== 'GET' && req.method !== 'HEAD') return text(405, 'Use GET.\n', { Allow: 'GET, HEAD' });
  const body = metrics.render();
  res.writeHead(200, { 'Content-Type': EXPOSITION_TYPE, 'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/**
 * Listens on `host`:`port` (0: a free port) and serves `metrics` there.
 * @returns the server and the bound port. @throws the listen error (EADDRINUSE, EACCES…) as node:net gives it.
 */
export async function listenMetrics(metrics: ServerMetrics, host: string, port: number):
  Promise<{ server: http.Server; port: number }> {
  const server = http.createServer({ headersTimeout: 10_000, requestTimeout: 10_000, keepAliveTimeout: 5_000 },
    (req, res) => answer(metrics, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => { server.off('error', reject); resolve(); });
  });
  server.on('error', () => {}); // an accept failure (ENFILE…) must not end the process; the API port reports its own
  const addr = server.address();
  return { server, port: typeof addr === 'object' && addr ? addr.port : port };
}
