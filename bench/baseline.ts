/**
 * The baseline (README "Performance"): a bare `node:http` server answering the same records as the real
 * server behind a bearer check, nothing else (no routing table, no rate limit, no logging).
 *
 *   BASELINE_MODE=stringify  `JSON.stringify` per request (the 1.00× reference)
 *   BASELINE_MODE=buffer     each answer pre-serialized to a Buffer once, at start
 *
 * `BASELINE_DATA` is a JSON file `{ authorization, issues: {id: issueView}, conversationsPage }`
 * written by bench/run.ts from the real server's own answers, so both serve the same bytes.
 * Prints `{"msg":"listening","port":…}` on stdout like the server. Listens on 127.0.0.1 only.
 */
import * as http from 'node:http';
import { readFileSync } from 'node:fs';

interface Data { authorization: string; issues: Record<string, unknown>; conversationsPage: unknown }

const mode = process.env.BASELINE_MODE === 'buffer' ? 'buffer' : 'stringify';
const data = JSON.parse(readFileSync(process.env.BASELINE_DATA!, 'utf8')) as Data;
const expected = data.authorization;
const issues = new Map<string, unknown>(Object.entries(data.issues));
const issueBuffers = new Map<string, Buffer>();
if (mode === 'buffer') for (const [id, rec] of issues) issueBuffers.set(id, Buffer.from(JSON.stringify({ issue: rec })));
const pageBuffer = Buffer.from(JSON.stringify(data.conversationsPage));
const ISSUES = '/api/v1/issues/';
const CONVERSATIONS = '/api/v1/conversations';
const HEADERS = (len: number) => ({ 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': len });

function send(res: http.ServerResponse, status: number, body: string | Buffer): void {
  res.writeHead(status, HEADERS(typeof body === 'string' ? Buffer.byteLength(body) : body.length));
  res.end(body);
}

const server = http.createServer({ keepAliveTimeout: 5000 }, (req, res) => {
  if (req.headers.authorization !== expected) { send(res, 401, '{"code":"unauthorized","error":"Missing or invalid API key."}'); return; }
  const url = req.url ?? '/';
  if (url.startsWith(ISSUES)) {
    const id = url.slice(ISSUES.length);
    if (mode === 'buffer') {
      const buf = issueBuffers.get(id);
      if (buf) { send(res, 200, buf); return; }
    } else {
      const rec = issues.get(id);
      if (rec) { send(res, 200, JSON.stringify({ issue: rec })); return; }
    }
  } else if (url.startsWith(CONVERSATIONS)) {
    send(res, 200, mode === 'buffer' ? pageBuffer : JSON.stringify(data.conversationsPage));
    return;
  }
  send(res, 404, '{"code":"not_found","error":"Not found."}');
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: typeof addr === 'object' && addr ? addr.port : 0, mode })}\n`);
});
process.on('SIGTERM', () => { server.close(); server.closeAllConnections(); process.exit(0); });
