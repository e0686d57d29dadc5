/**
 * The bare baselines of the reads comparison (README "Performance", bench/README.md): a bare
 * `node:http` server answering the same records as our server, behind the same key check
 * (bench/peerAuth.ts: bearer key → SHA-256 → Map lookup → scope), and nothing else (no
 * routing table, no rate limit, no logging, no extra headers).
 *
 *   BASELINE_MODE=stringify  `JSON.stringify` of the answer object per request (the 1.00× reference)
 *   BASELINE_MODE=buffer     each answer serialized once at start into a ready Buffer (the ceiling)
 *
 * `PEER_DATA` is the data file bench/reads.ts writes from our server's own answers, so every
 * peer serves the same bytes with the same `Content-Type`. Prints `{"msg":"listening","port":…}`
 * on stdout like the server. Listens on 127.0.0.1 only.
 */
import * as http from 'node:http';
import { Bookkeeping, JSON_TYPE, NOT_FOUND, UNAUTHORIZED, checkKey, forbidden, hasScope, loadPeerData } from './peerAuth.js';

const mode = process.env.BASELINE_MODE === 'buffer' ? 'buffer' : 'stringify';
const { data, keys } = loadPeerData();
const issues = new Map<string, unknown>(Object.entries(data.issues));
const issueBuffers = new Map<string, Buffer>();
if (mode === 'buffer') for (const [id, rec] of issues) issueBuffers.set(id, Buffer.from(JSON.stringify({ issue: rec })));
const pageBuffer = Buffer.from(JSON.stringify(data.conversationsPage));
const ISSUES = '/api/v1/issues/';
const CONVERSATIONS = '/api/v1/conversations';

const books = new Bookkeeping();

/** Answers with our server's header set: `head` (the bookkeeping's), then the type and length. */
function send(res: http.ServerResponse, status: number, head: string[], body: string | Buffer): void {
  head.push('Content-Type', JSON_TYPE, 'Content-Length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.length));
  res.writeHead(status, head);
  res.end(body);
}

const server = http.createServer({ keepAliveTimeout: 5000 }, (req, res) => {
  const key = checkKey(keys, req.headers.authorization);
  if (!key) { send(res, 401, books.anonymous(), UNAUTHORIZED); return; }
  const head = books.headers(key);
  const url = req.url ?? '/';
  if (url.startsWith(ISSUES)) {
    if (!hasScope(key, 'issues:read')) { send(res, 403, head, forbidden('issues:read')); return; }
    const id = url.slice(ISSUES.length);
    if (mode === 'buffer') {
      const buf = issueBuffers.get(id);
      if (buf) { send(res, 200, head, buf); return; }
    } else {
      const rec = issues.get(id);
      if (rec) { send(res, 200, head, JSON.stringify({ issue: rec })); return; }
    }
  } else if (url.startsWith(CONVERSATIONS)) {
    if (!hasScope(key, 'conversations:read')) { send(res, 403, head, forbidden('conversations:read')); return; }
    send(res, 200, head, mode === 'buffer' ? pageBuffer : JSON.stringify(data.conversationsPage));
    return;
  }
  send(res, 404, head, NOT_FOUND);
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: typeof addr === 'object' && addr ? addr.port : 0, mode })}\n`);
});
process.on('SIGTERM', () => { server.close(); server.closeAllConnections(); process.exit(0); });
