/**
 * `GET /widget.js` (docs/widget.md#the-script): the chat widget's script for any site to embed, served whether or
 * not the settings area is on (docs/decisions.md#the-widget-script-is-served-without-the-settings-area). Its URL
 * stays the same in pasted snippets, so it is revalidated by ETag after 5 minutes; gzip when the client takes it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHash, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { WIDGET_JS } from './widgetScript.js';
import type { Logger } from '../../core/logger.js';

/** The script's path. */
export const WIDGET_PATH = '/widget.js';

const BODY = Buffer.from(WIDGET_JS);
const GZIPPED = gzipSync(BODY, { level: 9 });
/** A short hash of the script's text: its ETag, and the `v` of a versioned URL. */
export const WIDGET_VERSION = createHash('sha256').update(BODY).digest('base64url').slice(0, 16);
const ETAG = `"${WIDGET_VERSION}"`;

/** Whether the request `url` (path and query) is the widget script's. */
export function isWidgetScript(url: string): boolean {
  const q = url.indexOf('?');
  return (q === -1 ? url : url.slice(0, q)) === WIDGET_PATH;
}

/** Whether an `Accept-Encoding` value takes gzip (named with a q above 0). */
function takesGzip(accept: string): boolean {
  return accept.split(',').some((part) => {
    const [name, ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    if (name !== 'gzip' && name !== 'x-gzip') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * Answers a request for the widget script: 200 with the script (gzip when `Accept-Encoding` names it), 304 when
 * `If-None-Match` names its ETag, 405 for a method other than GET and HEAD. Public: `Access-Control-Allow-Origin: *`
 * and `Cross-Origin-Resource-Policy: cross-origin`, so pages of any origin (and isolation policy) may load it.
 * One access-log line like the API's when `logger` logs `info`.
 */
export function serveWidgetScript(req: IncomingMessage, res: ServerResponse, logger: Logger): void {
  const started = performance.now();
  const given = req.headers['x-request-id'];
  const requestId = typeof given === 'string' && /^[\x20-\x7e]{1,128}$/.test(given) ? given : randomUUID();
  const headers: Record<string, string> = { 'X-Request-Id': requestId, 'X-Content-Type-Options': 'nosniff',
    'Access-Control-Allow-Origin': '*', 'Cross-Origin-Resource-Policy': 'cross-origin' };
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { ...headers, Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' })
      .end('Method not allowed.\n');
  } else {
    Object.assign(headers, { ETag: ETAG, 'Cache-Control': 'public, max-age=300', Vary: 'Accept-Encoding' });
    const asked = req.headers['if-none-match'];
    const named = (t: string) => t.trim() === '*' || t.trim().replace(/^W\//, '') === ETAG;
    if (asked !== undefined && asked.split(',').some(named)) {
      res.writeHead(304, headers).end();
    } else {
      const gzip = takesGzip(String(req.headers['accept-encoding'] ?? ''));
      const body = gzip ? GZIPPED : BODY;
      if (gzip) headers['Content-Encoding'] = 'gzip';
      res.writeHead(200, { ...headers, 'Content-Type': 'text/javascript; charset=utf-8',
        'Content-Length': String(body.length) });
      res.end(req.method === 'HEAD' ? undefined : body);
    }
  }
  if (logger.enabled('info')) {
    logger.info('request', { requestId, method: req.method, route: WIDGET_PATH, status: res.statusCode,
      durationMs: Math.round((performance.now() - started) * 100) / 100 });
  }
}
