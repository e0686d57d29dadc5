/**
 * A local HTTP server standing in for customers' APIs and docs sites (URL sources, crawls,
 * live checks), so the fuzzer never reaches the network.
 */
import * as http from 'node:http';
import * as net from 'node:net';

/** A small OpenAPI document served by the upstream (`n` varies it). */
export function openapiDoc(base: string, n: number): Record<string, unknown> {
  return {
    openapi: '3.0.3', info: { title: `Fuzz Shop API ${n}`, version: '1.0.0', description: 'Orders, items and refunds.' },
    servers: [{ url: `${base}/api` }],
    paths: {
      '/items': {
        get: { operationId: 'listItems', summary: 'List items', parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer' } }], responses: { 200: { description: 'ok' } } },
        post: { operationId: 'createItem', summary: 'Create an item', requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { name: { type: 'string' } } } } } }, responses: { 201: { description: 'created' } } },
      },
      '/items/{id}': {
        get: { operationId: 'getItem', summary: 'Retrieve an item', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], responses: { 200: { description: 'ok' } } },
        delete: { operationId: 'deleteItem', summary: 'Delete an item', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], responses: { 204: { description: 'gone' } } },
      },
      '/refunds/{refundId}': { get: { summary: 'Refund status', responses: { 200: { description: 'ok' } } } },
    },
  };
}

/** The local upstream: its base URL, the requests it served, and how to stop it. */
export interface Upstream { url: string; requests: number; close(): Promise<void> }

/** A local HTTP server standing in for customers' APIs and docs sites (URL sources, crawls, live checks). */
export async function startUpstream(): Promise<Upstream> {
  let base = '';
  const up: Upstream = { url: '', requests: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    up.requests++;
    const u = new URL(req.url ?? '/', 'http://x');
    const json = (status: number, body: unknown) => { const t = JSON.stringify(body); res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(t) }); res.end(t); };
    req.resume();
    if (u.pathname === '/openapi.json') return json(200, openapiDoc(base, Number(u.searchParams.get('v') ?? 0)));
    if (u.pathname.startsWith('/docs')) {
      const html = `<!doctype html><html><head><title>Docs ${u.pathname}</title></head><body><h1>Help center</h1><p>How to reset a password and export invoices as CSV.</p>`
        + `<a href="/docs/a">A</a> <a href="/docs/b">B</a> <a href="/docs/c?x=1">C</a> <a href="http://example.invalid/">out</a></body></html>`;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }); return res.end(html);
    }
    if (u.pathname === '/text') { res.writeHead(200, { 'content-type': 'text/plain' }); return res.end('Plain text help: refunds take 5 days.'); }
    if (u.pathname.startsWith('/api/')) {
      if (u.pathname.endsWith('/401')) return json(401, { error: 'unauthorized' });
      return json(200, { ok: true, method: req.method, path: u.pathname, query: u.search, auth: req.headers.authorization ? 'present' : 'absent' });
    }
    if (u.pathname.startsWith('/repos/')) return json(404, { message: 'Not Found' });
    json(404, { error: 'not found' });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address() as net.AddressInfo;
  base = `http://127.0.0.1:${addr.port}`;
  up.url = base;
  up.close = () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
  return up;
}
