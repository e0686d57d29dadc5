/**
 * Live API checks through the HTTP API (docs/api.md#live-checks, docs/sources.md#live-checks):
 * `POST /api/v1/sources/{id}/checks` against local upstream servers — the credential sent
 * exactly (bearer, custom header, basic) and only to the source's origin (a cross-origin
 * redirect reaches the other server without it), path and query parameters, a JSON body,
 * allow-listed headers, truncation, no answer (timeout, size limit), auth status updates,
 * usage counting, redaction of every form of an echoed secret — and every refusal: 400 with
 * nothing sent, 403 without the scope, 404 for another workspace's source, private addresses
 * refused without SOURCE_FETCH_ALLOW_PRIVATE with the same text as an unknown host.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';
import type { Ingestion, LiveCheck, Usage } from './helpers/answers.js';

const S = '/api/v1/sources';
const RATE = { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' };
const NOW = '2026-06-29T12:00:00.000Z';
const NOT_FOUND = { code: 'not_found', error: 'Record not found.' };
const bad = (detail: string) => ({ code: 'invalid_request', error: `Request body is invalid: ${detail}.` });

// ---------------------------------------------------------------------------------------------
// Local upstream servers

interface Seen { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }
type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;
interface Local { origin: string; port: number; seen: Seen[]; connections: number; close(): Promise<void> }
const locals: Local[] = [];

async function serve(handler: Handler): Promise<Local> {
  const server = http.createServer();
  const local: Local = {
    origin: '', port: 0, seen: [], connections: 0,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
  server.on('connection', () => { local.connections++; });
  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      local.seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  local.port = (server.address() as AddressInfo).port;
  local.origin = `http://127.0.0.1:${local.port}`;
  locals.push(local);
  return local;
}

function reply(res: http.ServerResponse, status: number, body: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

const EXPECTED_AUTH = new Map<string, string>(); // header name → value the /secure path wants

// The second origin: a redirect target that must never see the credential.
const other = await serve((_req, res) => reply(res, 200, '{"landed":true}'));

const upstream = await serve((req, res, body) => {
  const u = new URL(req.url ?? '/', 'http://x');
  const p = u.pathname;
  if (p === '/v1/pets' && req.method === 'POST') return reply(res, 201, JSON.stringify({ created: JSON.parse(body), type: req.headers['content-type'] }));
  if (p === '/v1/pets') return reply(res, 200, '[]', { 'x-request-id': 'up-1' });
  if (p.startsWith('/v1/pets/')) {
    return reply(res, 200, '{"id":1}', {
      'set-cookie': 'session=abc; HttpOnly', 'x-powered-by': 'Express', etag: '"v1"', 'cache-control': 'no-store',
      'x-request-id': 'up-2', 'ratelimit-remaining': '9', 'x-ratelimit-limit': '10', 'last-modified': 'Mon, 29 Jun 2026 10:00:00 GMT',
    });
  }
  if (p === '/v1/secure') {
    const ok = [...EXPECTED_AUTH].every(([k, v]) => req.headers[k] === v) && EXPECTED_AUTH.size > 0;
    return ok ? reply(res, 200, '{"ok":true}') : reply(res, 401, '{"error":"bad token"}', { 'www-authenticate': 'Bearer' });
  }
  if (p === '/v1/forbidden') return reply(res, 403, '{}');
  if (p === '/v1/broken') return reply(res, 500, '{}');
  if (p === '/v1/echo-forms') return reply(res, 200, echoForms(String(req.headers.authorization).slice('Bearer '.length)), {
    'content-type': 'text/plain', 'x-request-id': Buffer.from(String(req.headers.authorization).slice('Bearer '.length)).toString('base64url'),
  });
  if (p === '/v1/echo') return reply(res, 200, JSON.stringify({ headers: req.headers }), { 'x-request-id': String(req.headers.authorization ?? req.headers['x-api-key'] ?? 'none') });
  if (p === '/v1/big') return reply(res, 200, 'a'.repeat(40_000), { 'content-type': 'text/plain' });
  if (p === '/v1/euro') return reply(res, 200, '€'.repeat(10_000), { 'content-type': 'text/plain; charset=utf-8' });
  if (p === '/v1/huge') return reply(res, 200, 'x'.repeat(1_100_000), { 'content-type': 'text/plain' });
  if (p === '/v1/redirect') { res.writeHead(302, { location: `${other.origin}/landing` }); return res.end(); }
  if (p === '/v1/redirect-same') { res.writeHead(302, { location: '/v1/secure' }); return res.end(); }
  if (p === '/v1/slow') return; // never answers
  if (p === '/v1/head') { res.writeHead(204, { etag: '"h"' }); return res.end(); }
  if (p === '/spec/relative.json') return reply(res, 200, JSON.stringify(openapi('/api/v3')));
  if (p === '/api/v3/pets') return reply(res, 200, '["relative"]');
  reply(res, 404, '{"error":"no such path"}');
});

/** The forms of a secret an upstream may echo, one `name: form` line each. */
function formsOf(secret: string): Array<[string, string]> {
  const b64 = (x: string) => Buffer.from(x).toString('base64');
  const hexLower = (x: string) => x.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
  const allEscaped = [...secret].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`).join('');
  return [
    ['raw', secret], ['lower', secret.toLowerCase()], ['upper', secret.toUpperCase()],
    ['json', JSON.stringify(secret)], ['json-slash', JSON.stringify(secret).replaceAll('/', '\\/')], ['json-unicode', allEscaped],
    ['url', encodeURIComponent(secret)], ['url-lower-hex', hexLower(encodeURIComponent(secret))], ['form', encodeURIComponent(secret).replaceAll('%20', '+')],
    ['url-lower', encodeURIComponent(secret).toLowerCase()],
    ['base64', b64(secret)], ['base64-unpadded', b64(secret).replace(/=+$/, '')], ['base64url', Buffer.from(secret).toString('base64url')],
    ['base64-user', b64(`user:${secret}`)], ['base64-in-1', b64(`x${secret}yz`)], ['base64-in-2', b64(`xy${secret}z`)],
    ['base64-url-encoded', encodeURIComponent(b64(secret))],
  ];
}
const echoForms = (secret: string): string => formsOf(secret).map(([name, form]) => `${name}: ${form}\n`).join('');

/** An OpenAPI 3.0 document whose servers[0].url is `server` (none when undefined). */
function openapi(server: string | undefined, title = 'Pets'): Record<string, unknown> {
  const op = (summary: string) => ({ summary, responses: { 200: { description: 'ok' } } });
  return {
    openapi: '3.0.3', info: { title, version: '1' },
    ...(server === undefined ? {} : { servers: [{ url: server }] }),
    paths: {
      '/pets': { get: op('List pets'), post: op('Create a pet') },
      '/pets/{petId}': { get: op('Get a pet') },
      '/secure': { get: op('Secure') }, '/forbidden': { get: op('Forbidden') }, '/broken': { get: op('Broken') },
      '/echo': { get: op('Echo') }, '/big': { get: op('Big') }, '/euro': { get: op('Euro') }, '/huge': { get: op('Huge') },
      '/echo-forms': { get: op('Echo forms') }, '/redirect': { get: op('Redirect') }, '/redirect-same': { get: op('Redirect same') }, '/slow': { get: op('Slow') },
      '/head': { head: op('Head') },
    },
  };
}

// ---------------------------------------------------------------------------------------------

let srv: TestServer;
let pets: Made;
before(async () => {
  srv = await startTestServer({ env: { ...RATE, SOURCE_FETCH_ALLOW_PRIVATE: 'true', SOURCE_FETCH_TIMEOUT_MS: '1000' } });
  pets = await source(srv, { content: JSON.stringify(openapi(`${upstream.origin}/v1`)) });
});
after(async () => {
  await srv?.close();
  await Promise.all(locals.map((l) => l.close()));
});

interface Made { id: string; ep: Record<string, string>; body: any }

/** Creates a source from pasted content (or a url); `ep` maps `METHOD path` → endpoint id. */
async function source(t: TestServer, body: Record<string, unknown>, key?: string): Promise<Made> {
  const r = await t.call<Ingestion>('POST', S, { body, key });
  assert.equal(r.status, 201, r.text.slice(0, 500));
  assert.equal(r.body.source.status, 'ready', r.text.slice(0, 500));
  const ep: Record<string, string> = {};
  for (const e of r.body.endpoints) ep[`${e.method} ${e.path}`] = e.id;
  return { id: r.body.source.id, ep, body: r.body };
}

const check = (t: TestServer, id: string, body: unknown, key?: string): Promise<CallResult<LiveCheck>> => t.call<LiveCheck>('POST', `${S}/${id}/checks`, { body, key });

/** The check's body without `durationMs`, after asserting it is a non-negative integer. */
function result(r: CallResult<LiveCheck>): Record<string, unknown> {
  assert.equal(r.status, 200, r.text.slice(0, 500));
  const { durationMs, ...rest } = r.body;
  assert.ok(Number.isInteger(durationMs) && durationMs >= 0, `durationMs ${durationMs}`);
  return rest;
}

const authOf = async (id: string) => (await srv.call<Ingestion>('GET', `${S}/${id}`)).body.source.auth;
const liveChecks = async () => (await srv.call<Usage>('GET', '/api/v1/usage')).body.liveApiChecks as number;
const setAuth = async (id: string, auth: unknown) => {
  const r = await srv.call('PATCH', `${S}/${id}`, { body: { auth } });
  assert.equal(r.status, 200, r.text);
};
/** The request headers the upstream saw, minus the ones every request carries. */
function extraHeaders(h: http.IncomingHttpHeaders): Record<string, unknown> {
  const { host, 'user-agent': ua, accept, 'accept-encoding': ae, connection, ...rest } = h;
  assert.equal(host, `127.0.0.1:${upstream.port}`);
  assert.equal(ua, 'support-workspace-source-fetcher/0.1');
  assert.deepEqual([accept, ae, connection], ['*/*', 'gzip, deflate, br', 'close']);
  return rest;
}


describe('a live check calls the endpoint at the server URL', () => {
  test('path parameters substituted (URL-encoded), the rest as query; allow-listed headers; no credential configured', async () => {
    upstream.seen.length = 0;
    const r = await check(srv, pets.id, { endpointId: pets.ep['GET /pets/{petId}'], parameters: { petId: 'a b/c', verbose: true, limit: 5 } });
    const url = `${upstream.origin}/v1/pets/a%20b%2Fc?verbose=true&limit=5`;
    assert.deepEqual(result(r), {
      object: 'live_check', endpointId: pets.ep['GET /pets/{petId}'], method: 'GET', url, status: 200,
      headers: {
        'content-type': 'application/json', 'content-length': '8', etag: '"v1"', 'cache-control': 'no-store', 'x-request-id': 'up-2',
        'ratelimit-remaining': '9', 'x-ratelimit-limit': '10', 'last-modified': 'Mon, 29 Jun 2026 10:00:00 GMT',
      },
      body: '{"id":1}', truncated: false,
    });
    assert.equal(upstream.seen.length, 1);
    assert.equal(upstream.seen[0].url, '/v1/pets/a%20b%2Fc?verbose=true&limit=5');
    assert.deepEqual(extraHeaders(upstream.seen[0].headers), {});
    // No credential: only lastVerifiedAt changes.
    assert.deepEqual(await authOf(pets.id), { configured: false, hasSecret: false, lastError: null, lastVerifiedAt: NOW, status: 'not_configured', type: null });
  });

  test('POST sends the JSON body as application/json; the upstream status (201) is the result', async () => {
    upstream.seen.length = 0;
    const r = await check(srv, pets.id, { endpointId: pets.ep['POST /pets'], body: { name: 'Rex', tags: ['a'] } });
    const echoed = '{"created":{"name":"Rex","tags":["a"]},"type":"application/json"}';
    assert.deepEqual(result(r), {
      object: 'live_check', endpointId: pets.ep['POST /pets'], method: 'POST', url: `${upstream.origin}/v1/pets`, status: 201,
      headers: { 'content-type': 'application/json', 'content-length': String(echoed.length) },
      body: echoed, truncated: false,
    });
    assert.equal(upstream.seen[0].method, 'POST');
    assert.equal(upstream.seen[0].body, '{"name":"Rex","tags":["a"]}');
    assert.deepEqual(extraHeaders(upstream.seen[0].headers), { 'content-type': 'application/json', 'content-length': '27' });
  });

  test('HEAD: no body', async () => {
    const r = await check(srv, pets.id, { endpointId: pets.ep['HEAD /head'] });
    assert.deepEqual(result(r), {
      object: 'live_check', endpointId: pets.ep['HEAD /head'], method: 'HEAD', url: `${upstream.origin}/v1/head`, status: 204,
      headers: { etag: '"h"' }, body: '', truncated: false,
    });
  });

  test('the body is truncated to 16 KiB, on a character boundary', async () => {
    const big = result(await check(srv, pets.id, { endpointId: pets.ep['GET /big'] }));
    assert.equal(big.body, 'a'.repeat(16384));
    assert.equal(big.truncated, true);
    assert.deepEqual(big.headers, { 'content-type': 'text/plain', 'content-length': '40000' });
    const euro = result(await check(srv, pets.id, { endpointId: pets.ep['GET /euro'] }));
    assert.equal(euro.body, '€'.repeat(5461)); // 16,383 bytes: the 5,462nd € would pass 16,384
    assert.equal(euro.truncated, true);
  });

  test('no HTTP answer: status null with error — over the 1 MiB limit, timeout', async () => {
    const huge = await check(srv, pets.id, { endpointId: pets.ep['GET /huge'] });
    assert.deepEqual(result(huge), {
      object: 'live_check', endpointId: pets.ep['GET /huge'], method: 'GET', url: `${upstream.origin}/v1/huge`, status: null,
      headers: {}, body: null, truncated: false, error: `${upstream.origin}/v1/huge is larger than the limit of 1048576 bytes`,
    });
    const slow = await check(srv, pets.id, { endpointId: pets.ep['GET /slow'] });
    assert.deepEqual(result(slow), {
      object: 'live_check', endpointId: pets.ep['GET /slow'], method: 'GET', url: `${upstream.origin}/v1/slow`, status: null,
      headers: {}, body: null, truncated: false, error: `fetching ${upstream.origin}/v1/slow took longer than 1000 ms`,
    });
    assert.ok(slow.body.durationMs >= 900, String(slow.body.durationMs));
  });

  test('a relative server URL is resolved against the source URL', async () => {
    const rel = await source(srv, { url: `${upstream.origin}/spec/relative.json` });
    upstream.seen.length = 0;
    const r = result(await check(srv, rel.id, { endpointId: rel.ep['GET /pets'] }));
    assert.equal(r.url, `${upstream.origin}/api/v3/pets`);
    assert.equal(r.status, 200);
    assert.equal(r.body, '["relative"]');
    assert.deepEqual(upstream.seen.map((x) => x.url), ['/api/v3/pets']);
  });

  test('Postman: {{baseUrl}} variable as server URL, :id and {{var}} path parameters', async () => {
    const collection = {
      info: { name: 'Pets collection', schema: 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json' },
      variable: [{ key: 'baseUrl', value: `${upstream.origin}/v1` }],
      item: [{ name: 'Get pet', request: { method: 'GET', url: { raw: '{{baseUrl}}/pets/:id/{{part}}', host: ['{{baseUrl}}'], path: ['pets', ':id', '{{part}}'] } } }],
    };
    const pm = await source(srv, { type: 'postman', content: JSON.stringify(collection) });
    const [id] = Object.values(pm.ep);
    assert.deepEqual(Object.keys(pm.ep), ['GET /pets/:id/{{part}}']);
    upstream.seen.length = 0;
    const r = result(await check(srv, pm.id, { endpointId: id, parameters: { id: 7, part: 'x y', q: 'z' } }));
    assert.equal(r.url, `${upstream.origin}/v1/pets/7/x%20y?q=z`);
    assert.equal(r.status, 200);
    assert.deepEqual(upstream.seen.map((x) => x.url), ['/v1/pets/7/x%20y?q=z']);
  });
});

describe('credentials', () => {
  let src: Made;
  before(async () => { src = await source(srv, { content: JSON.stringify(openapi(`${upstream.origin}/v1`, 'Secure pets')) }); });

  test('bearer: the upstream gets exactly Authorization: Bearer …; 401 → invalid, 200 → valid, 500 keeps the status', async () => {
    await setAuth(src.id, { type: 'bearer', secret: 'tok' });
    EXPECTED_AUTH.clear(); EXPECTED_AUTH.set('authorization', 'Bearer other');
    upstream.seen.length = 0;
    const denied = await check(srv, src.id, { endpointId: src.ep['GET /secure'] });
    // A non-2xx answer is the check's result, with its (allow-listed) headers and body.
    assert.deepEqual(result(denied), {
      object: 'live_check', endpointId: src.ep['GET /secure'], method: 'GET', url: `${upstream.origin}/v1/secure`, status: 401,
      headers: { 'content-length': '21', 'content-type': 'application/json' }, body: '{"error":"bad token"}', truncated: false,
    });
    assert.deepEqual(extraHeaders(upstream.seen[0].headers), { authorization: 'Bearer tok' });
    assert.deepEqual(await authOf(src.id), { configured: true, hasSecret: true, lastError: 'upstream answered 401', lastVerifiedAt: NOW, status: 'invalid', type: 'bearer' });

    EXPECTED_AUTH.set('authorization', 'Bearer tok');
    srv.clock.advance(1000);
    assert.equal(result(await check(srv, src.id, { endpointId: src.ep['GET /secure'] })).status, 200);
    const valid = { configured: true, hasSecret: true, lastError: null, lastVerifiedAt: '2026-06-29T12:00:01.000Z', status: 'valid', type: 'bearer' };
    assert.deepEqual(await authOf(src.id), valid);

    srv.clock.advance(1000);
    assert.equal(result(await check(srv, src.id, { endpointId: src.ep['GET /broken'] })).status, 500);
    assert.deepEqual(await authOf(src.id), { ...valid, lastVerifiedAt: '2026-06-29T12:00:02.000Z' });

    assert.equal(result(await check(srv, src.id, { endpointId: src.ep['GET /forbidden'] })).status, 403);
    assert.deepEqual(await authOf(src.id), { ...valid, lastVerifiedAt: '2026-06-29T12:00:02.000Z', status: 'invalid', lastError: 'upstream answered 403' });
  });

  test('no answer sets lastError and keeps the status', async () => {
    await setAuth(src.id, { type: 'bearer', secret: 'tok' });
    assert.equal(result(await check(srv, src.id, { endpointId: src.ep['GET /slow'] })).status, null);
    assert.deepEqual(await authOf(src.id), {
      configured: true, hasSecret: true, lastError: `fetching ${upstream.origin}/v1/slow took longer than 1000 ms`,
      lastVerifiedAt: new Date(srv.clock.now()).toISOString(), status: 'unverified', type: 'bearer',
    });
  });

  test('custom header: exactly that header, no Authorization', async () => {
    await setAuth(src.id, { type: 'header', headerName: 'X-Api-Key', secret: 'tok' });
    EXPECTED_AUTH.clear(); EXPECTED_AUTH.set('x-api-key', 'tok');
    upstream.seen.length = 0;
    assert.equal(result(await check(srv, src.id, { endpointId: src.ep['GET /secure'] })).status, 200);
    assert.deepEqual(extraHeaders(upstream.seen[0].headers), { 'x-api-key': 'tok' });
    assert.equal((await authOf(src.id))?.status, 'valid');
  });

  test('basic: Authorization: Basic base64(username:secret)', async () => {
    await setAuth(src.id, { type: 'basic', username: 'ann', secret: 'pa:ss' });
    const expected = `Basic ${Buffer.from('ann:pa:ss').toString('base64')}`;
    EXPECTED_AUTH.clear(); EXPECTED_AUTH.set('authorization', expected);
    upstream.seen.length = 0;
    assert.equal(result(await check(srv, src.id, { endpointId: src.ep['GET /secure'] })).status, 200);
    assert.deepEqual(extraHeaders(upstream.seen[0].headers), { authorization: expected });
    assert.deepEqual(await authOf(src.id), { configured: true, hasSecret: true, lastError: null, lastVerifiedAt: new Date(srv.clock.now()).toISOString(), status: 'valid', type: 'basic' });
  });

  test('a credential echoed by the upstream is redacted from the body and headers', async () => {
    await setAuth(src.id, { type: 'bearer', secret: 'tok' });
    const r = result(await check(srv, src.id, { endpointId: src.ep['GET /echo'] }));
    assert.equal(r.status, 200);
    assert.ok(!JSON.stringify(r).includes('tok'), JSON.stringify(r));
    assert.equal(JSON.parse(r.body as string).headers.authorization, '[redacted]');
    assert.equal((r.headers as Record<string, string>)['x-request-id'], '[redacted]');
    await setAuth(src.id, { type: 'header', headerName: 'X-Api-Key', secret: 'long-secret-value' });
    const h = result(await check(srv, src.id, { endpointId: src.ep['GET /echo'] }));
    assert.ok(!JSON.stringify(h).includes('long-secret-value'));
    assert.equal(JSON.parse(h.body as string).headers['x-api-key'], '[redacted]');
  });

  test('every form of an echoed secret is redacted: JSON-escaped, URL-encoded, base64 (alone, in user:secret, at each alignment), any case', async () => {
    const secret = 'Se/cr+et "Q" x~1';
    await setAuth(src.id, { type: 'bearer', secret });
    const r = result(await check(srv, src.id, { endpointId: src.ep['GET /echo-forms'] }));
    assert.equal(r.status, 200);
    /** A base64 string of `before + secret + after` with the characters depending only on the secret redacted. */
    const inside = (before: string, after: string): string => {
      const enc = Buffer.from(before + secret + after).toString('base64');
      const k = before.length;
      return `${enc.slice(0, Math.ceil((8 * k) / 6))}[redacted]${enc.slice(Math.floor((8 * (k + secret.length)) / 6))}`;
    };
    const expected: Record<string, string> = {
      json: '"[redacted]"', 'json-slash': '"[redacted]"', 'base64-user': inside('user:', ''), 'base64-in-1': inside('x', 'yz'), 'base64-in-2': inside('xy', 'z'),
    };
    assert.equal(r.body, formsOf(secret).map(([name]) => `${name}: ${expected[name] ?? '[redacted]'}\n`).join(''));
    assert.equal((r.headers as Record<string, string>)['x-request-id'], '[redacted]');
    for (const [name, form] of formsOf(secret)) assert.ok(!String(r.body).toLowerCase().includes(form.toLowerCase()), name);
  });

  test('a redirect to another origin: followed without Authorization; a same-origin redirect keeps it', async () => {
    await setAuth(src.id, { type: 'bearer', secret: 'tok' });
    other.seen.length = 0;
    upstream.seen.length = 0;
    const r = result(await check(srv, src.id, { endpointId: src.ep['GET /redirect'] }));
    assert.deepEqual(r, {
      object: 'live_check', endpointId: src.ep['GET /redirect'], method: 'GET', url: `${upstream.origin}/v1/redirect`, status: 200,
      headers: { 'content-type': 'application/json', 'content-length': '15' }, body: '{"landed":true}', truncated: false,
    });
    assert.equal(upstream.seen[0].headers.authorization, 'Bearer tok');
    assert.equal(other.seen.length, 1);
    assert.equal(other.seen[0].url, '/landing');
    assert.equal(other.seen[0].headers.authorization, undefined);

    EXPECTED_AUTH.clear(); EXPECTED_AUTH.set('authorization', 'Bearer tok');
    upstream.seen.length = 0;
    assert.equal(result(await check(srv, src.id, { endpointId: src.ep['GET /redirect-same'] })).status, 200);
    assert.deepEqual(upstream.seen.map((x) => [x.url, x.headers.authorization]), [['/v1/redirect-same', 'Bearer tok'], ['/v1/secure', 'Bearer tok']]);
  });

  test('a custom-header credential is dropped when a redirect leaves the origin: the other origin gets no X-Api-Key', async () => {
    await setAuth(src.id, { type: 'header', headerName: 'X-Api-Key', secret: 'tok' });
    other.seen.length = 0;
    const r = result(await check(srv, src.id, { endpointId: src.ep['GET /redirect'] }));
    assert.equal(r.status, 200);
    assert.equal(r.body, '{"landed":true}');
    assert.equal(other.seen.length, 1);
    assert.equal(other.seen[0].headers['x-api-key'], undefined);
    assert.equal(other.seen[0].headers.authorization, undefined);
  });

  test('a custom header that would change the request itself (Host, Content-Length…) is refused when auth is set', async () => {
    for (const headerName of ['Host', 'Content-Length', 'Transfer-Encoding', 'Connection']) {
      const r = await srv.call('PATCH', `/api/v1/sources/${src.id}`, { body: { auth: { type: 'header', headerName, secret: 'tok' } } });
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, { code: 'invalid_request', error: `Request body is invalid: auth.headerName ${headerName} cannot carry a credential.` });
    }
  });

  test('removing the credential: nothing sent but the request', async () => {
    await setAuth(src.id, null);
    upstream.seen.length = 0;
    assert.equal(result(await check(srv, src.id, { endpointId: src.ep['GET /secure'] })).status, 401);
    assert.deepEqual(extraHeaders(upstream.seen[0].headers), {});
    const a = await authOf(src.id);
    assert.deepEqual({ ...a, lastVerifiedAt: null }, { configured: false, hasSecret: false, lastError: null, lastVerifiedAt: null, status: 'not_configured', type: null });
  });
});

describe('usage', () => {
  test('every sent check counts, failed ones too; refused ones do not', async () => {
    const before = await liveChecks();
    await check(srv, pets.id, { endpointId: pets.ep['GET /pets'] });
    await check(srv, pets.id, { endpointId: pets.ep['GET /huge'] });
    assert.equal((await check(srv, pets.id, { endpointId: 'nope' })).status, 400);
    assert.equal(await liveChecks(), before + 2);
  });
});

describe('bad input: 400 and nothing sent', () => {
  let proto: Made;
  let graphql: Made;
  let noServer: Made;
  let templated: Made;
  before(async () => {
    proto = await source(srv, { type: 'grpc', content: 'syntax = "proto3";\npackage demo;\nservice Greeter { rpc Hello (Req) returns (Res); }\nmessage Req { string name = 1; }\nmessage Res { string text = 1; }\n' });
    graphql = await source(srv, { type: 'graphql', content: 'type Query { hello: String }\n' });
    noServer = await source(srv, { content: JSON.stringify(openapi(undefined, 'No server')) });
    templated = await source(srv, { content: JSON.stringify(openapi('https://{region}.example.com/v1', 'Templated')) });
  });

  const cases: Array<[string, () => [string, unknown], unknown]> = [
    ['unknown endpointId', () => [pets.id, { endpointId: '00000000-0000-4000-8000-000000000000' }], bad('endpointId is not an endpoint of this source')],
    ['endpoint of another source', () => [pets.id, { endpointId: noServer.ep['GET /pets'] }], bad('endpointId is not an endpoint of this source')],
    ['missing endpointId', () => [pets.id, {}], bad('endpointId is required')],
    ['unknown property', () => [pets.id, { endpointId: pets.ep['GET /pets'], headers: {} }], bad('headers is not an allowed property')],
    ['missing path parameter', () => [pets.id, { endpointId: pets.ep['GET /pets/{petId}'], parameters: { other: 1 } }], bad('parameters.petId is required by the endpoint path /pets/{petId}')],
    ['path parameter ..', () => [pets.id, { endpointId: pets.ep['GET /pets/{petId}'], parameters: { petId: '..' } }], bad('parameters.petId cannot be "." or ".."')],
    ['lone surrogate in a path parameter', () => [pets.id, { endpointId: pets.ep['GET /pets/{petId}'], parameters: { petId: 'a\ud800' } }], bad('parameters.petId must be well-formed Unicode text (it has a lone surrogate)')],
    ['lone surrogate in a query parameter name', () => [pets.id, { endpointId: pets.ep['GET /pets'], parameters: { 'q\udc00': 1 } }], bad('parameters has a name that is not well-formed Unicode text (it has a lone surrogate)')],
    ['parameter not a scalar', () => [pets.id, { endpointId: pets.ep['GET /pets'], parameters: { q: { a: 1 } } }], bad('parameters.q must be a string, number or boolean')],
    ['parameters not an object', () => [pets.id, { endpointId: pets.ep['GET /pets'], parameters: 'x' }], bad('parameters must be a JSON object')],
    ['body with GET', () => [pets.id, { endpointId: pets.ep['GET /pets'], body: { a: 1 } }], bad('body cannot be sent with a GET request')],
    ['gRPC endpoint', () => [proto.id, { endpointId: Object.values(proto.ep)[0] }], bad('live checks need an HTTP endpoint (GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS); this endpoint is RPC')],
    ['GraphQL endpoint', () => [graphql.id, { endpointId: graphql.ep['QUERY hello'] }], bad('live checks need an HTTP endpoint (GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS); this endpoint is QUERY')],
    ['no server URL', () => [noServer.id, { endpointId: noServer.ep['GET /pets'] }], bad('the source names no server URL to call')],
    ['server URL with variables', () => [templated.id, { endpointId: templated.ep['GET /pets'] }], bad('the server URL https://{region}.example.com/v1 has unresolved {variables}')],
  ];
  for (const [name, input, expected] of cases) {
    test(name, async () => {
      const [id, body] = input();
      const sent = upstream.seen.length;
      const counted = await liveChecks();
      const r = await check(srv, id, body);
      assert.equal(r.status, 400, r.text);
      assert.deepEqual(r.body, expected);
      assert.equal(upstream.seen.length, sent);
      assert.equal(await liveChecks(), counted);
    });
  }

  test('the endpoints of the proto and GraphQL sources are what the cases use', () => {
    assert.deepEqual(Object.keys(proto.ep), ['RPC /demo.Greeter/Hello']);
    assert.deepEqual(Object.keys(graphql.ep), ['QUERY hello']);
  });
});

describe('access', () => {
  test('a sources:read key → 403; another workspace\'s source → 404; unknown source → 404', async () => {
    const read = await srv.newKey({ scopes: 'sources:read' });
    const sent = upstream.seen.length;
    const r = await check(srv, pets.id, { endpointId: pets.ep['GET /pets'] }, read);
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs sources:write.' });
    const write = await srv.newKey({ scopes: 'sources:write' });
    assert.equal((await check(srv, pets.id, { endpointId: pets.ep['GET /pets'] }, write)).status, 200);

    const otherWs = await srv.newWorkspace();
    const x = await check(srv, pets.id, { endpointId: pets.ep['GET /pets'] }, otherWs.key);
    assert.equal(x.status, 404);
    assert.deepEqual(x.body, NOT_FOUND);
    const u = await check(srv, '00000000-0000-4000-8000-000000000000', { endpointId: pets.ep['GET /pets'] });
    assert.equal(u.status, 404);
    assert.deepEqual(u.body, NOT_FOUND);
    assert.equal(upstream.seen.length, sent + 1);
  });
});

describe('without SOURCE_FETCH_ALLOW_PRIVATE', () => {
  let closed: TestServer;
  let target: Local;
  before(async () => {
    closed = await startTestServer({ env: RATE });
    target = await serve((_req, res) => reply(res, 200, '{}'));
  });
  after(async () => { await closed?.close(); });

  // An unknown host reads the same as a private one: a check cannot tell whether an internal name exists.
  for (const host of ['127.0.0.1', 'localhost', '[::1]', '[::ffff:127.0.0.1]', 'no-such-host.invalid']) {
    test(`a server URL at ${host} → 400 "cannot be reached", no connection, not counted`, async () => {
      const src = await source(closed, { content: JSON.stringify(openapi(`http://${host}:${target.port}/v1`)) });
      await closed.call('PATCH', `${S}/${src.id}`, { body: { auth: { type: 'bearer', secret: 'tok' } } });
      const r = await check(closed, src.id, { endpointId: src.ep['GET /pets'] });
      assert.equal(r.status, 400, r.text);
      assert.deepEqual(r.body, bad(`the host of ${new URL(`http://${host}:${target.port}/v1/pets`).href} cannot be reached from this server`));
      assert.equal(target.connections, 0);
      assert.equal((await closed.call<Usage>('GET', '/api/v1/usage')).body.liveApiChecks, 0);
      const auth = (await closed.call<Ingestion>('GET', `${S}/${src.id}`)).body.source.auth;
      assert.deepEqual(auth, { configured: true, hasSecret: true, lastError: null, lastVerifiedAt: null, status: 'unverified', type: 'bearer' });
    });
  }
});
