/**
 * HTTP conventions, black-box over a real socket (docs/api.md#conventions): routing errors, the headers every
 * response carries, Api-Version, body limits and parsing, header limits and slow clients, and
 * 500s that never leak a stack.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { once } from 'node:events';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';
import { App } from '../src/http/pipeline.js';
import { loadConfig } from '../src/core/config.js';
import { createLogger, batchedWriter, writeHundredths, LOG_FLUSH_BYTES, LOG_FLUSH_MS } from '../src/core/logger.js';
import { ManualClock } from '../src/core/clock.js';
import type { Route } from '../src/http/route.js';
import { route } from '../src/domain/route.js';
import { s } from '../src/http/schema.js';
import type { ConversationAnswer, ErrorAnswer, Ingestion } from './helpers/answers.js';

const MiB = 1024 * 1024;
const JSON_CT = { 'Content-Type': 'application/json' };
const validConversation = { subject: 'Printer on fire', customer: { email: 'ada@example.com' } };

async function withServer(fn: (srv: TestServer) => Promise<void>, env?: Record<string, string>): Promise<void> {
  const srv = await startTestServer({ env });
  try { await fn(srv); } finally { await srv.close(); }
}

interface RawResponse { status: number; headers: Record<string, string>; body: unknown; text: string }

/** Parses the first HTTP/1.1 response in `data` (Content-Length framed, or up to the end). */
function parseRaw(data: Buffer): RawResponse {
  const text = data.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  assert.ok(end > 0, `no complete response head in ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) { const i = l.indexOf(':'); headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim(); }
  const len = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
  const raw = data.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  const bodyText = (len === undefined ? raw : raw.subarray(0, len)).toString('utf8');
  let body: unknown;
  try { body = bodyText ? JSON.parse(bodyText) : undefined; } catch { body = undefined; }
  return { status: Number(statusLine.split(' ')[1]), headers, body, text: bodyText };
}

/**
 * Sends `head` (and then `chunks`, one by one, while the server still reads) on a raw socket
 * and resolves with everything the server sent once it closes the connection.
 */
async function rawExchange(port: number, head: string | Buffer, chunks: Buffer[] = [], timeoutMs = 10_000): Promise<{ data: Buffer; chunksSent: number }> {
  const sock = net.connect(port, '127.0.0.1');
  const got: Buffer[] = [];
  let chunksSent = 0;
  sock.on('data', (d) => got.push(d));
  sock.on('error', () => { /* EPIPE/ECONNRESET once the server hangs up mid-upload is expected */ });
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  const timer = setTimeout(() => sock.destroy(new Error('raw exchange timed out')), timeoutMs);
  try {
    await once(sock, 'connect');
    sock.write(head);
    for (const c of chunks) {
      if (got.length > 0 || sock.destroyed) break; // the server has answered
      if (!sock.write(c)) await Promise.race([new Promise((r) => sock.once('drain', r)), closed]);
      chunksSent++;
    }
    await closed;
  } finally { clearTimeout(timer); }
  return { data: Buffer.concat(got), chunksSent };
}

const authHead = (srv: TestServer, method: string, path: string, extra: string[]) =>
  [`${method} ${path} HTTP/1.1`, 'Host: localhost', `Authorization: Bearer ${srv.key}`, ...extra, '', ''].join('\r\n');

// ---------------------------------------------------------------- routing

test('GET /nope → 404 not_found naming the method and path', () => withServer(async (srv) => {
  const r = await srv.call('GET', '/nope');
  assert.equal(r.status, 404);
  assert.deepEqual(r.body, { code: 'not_found', error: 'Record not found: no route matches GET /nope.' });
  assert.match(r.headers.get('content-type') ?? '', /^application\/json; charset=utf-8$/);
}));

test('an unknown path is 404 before authentication (no key needed to learn it)', () => withServer(async (srv) => {
  const r = await srv.call('POST', '/api/v1/nothing-here', { key: null, raw: 'not json' });
  assert.equal(r.status, 404);
  assert.deepEqual(r.body, { code: 'not_found', error: 'Record not found: no route matches POST /api/v1/nothing-here.' });
}));

test('a very long unknown path is truncated to 200 characters in the 404 message', () => withServer(async (srv) => {
  const path = '/' + 'a'.repeat(300);
  const r = await srv.call('GET', path);
  assert.equal(r.status, 404);
  assert.deepEqual(r.body, { code: 'not_found', error: `Record not found: no route matches GET ${path.slice(0, 200)}….` });
}));

test('DELETE /api/v1/conversations → 405 method_not_allowed with Allow: GET, POST, HEAD', () => withServer(async (srv) => {
  const r = await srv.call('DELETE', '/api/v1/conversations');
  assert.equal(r.status, 405);
  assert.equal(r.headers.get('allow'), 'GET, POST, HEAD');
  assert.deepEqual(r.body, { code: 'method_not_allowed', error: 'This method is not allowed on this path: use GET, POST, HEAD.' });
}));

test('PUT /api/v1/issues/{id} → 405 with Allow: GET, PATCH, HEAD (before authentication)', () => withServer(async (srv) => {
  const r = await srv.call('PUT', '/api/v1/issues/x', { key: null });
  assert.equal(r.status, 405);
  assert.equal(r.headers.get('allow'), 'GET, PATCH, HEAD');
  assert.deepEqual(r.body, { code: 'method_not_allowed', error: 'This method is not allowed on this path: use GET, PATCH, HEAD.' });
}));

test('HEAD /healthz answers like GET, without a body', () => withServer(async (srv) => {
  const r = await srv.call('HEAD', '/healthz', { key: null });
  assert.equal(r.status, 200);
  assert.equal(r.text, '');
  assert.equal(r.headers.get('content-length'), String(JSON.stringify({ status: 'ok' }).length));
  assert.equal(r.headers.get('api-version'), '2026-06-29');
}));

test('a malformed percent-encoding in a path parameter → 404 not_found', () => withServer(async (srv) => {
  const r = await srv.call('GET', '/api/v1/issues/%E2%82');
  assert.equal(r.status, 404);
  assert.deepEqual(r.body, { code: 'not_found', error: 'Record not found: no route matches GET /api/v1/issues/%E2%82.' });
}));

test('a query string does not take part in routing', () => withServer(async (srv) => {
  const r = await srv.call('GET', '/healthz?x=1', { key: null });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { status: 'ok' });
}));

// ---------------------------------------------------------------- headers on every response

test('every response carries X-Request-Id and Api-Version: 2026-06-29 (2xx, 4xx, unauthenticated)', () => withServer(async (srv) => {
  const answers = [
    await srv.call('GET', '/healthz', { key: null }),
    await srv.call('GET', '/nope'),
    await srv.call('DELETE', '/healthz'),
    await srv.call('GET', '/api/v1/conversations', { key: null }),
    await srv.call('GET', '/api/v1/conversations'),
    await srv.call('POST', '/api/v1/conversations', { raw: '{', headers: JSON_CT }),
  ];
  assert.deepEqual(answers.map((r) => r.status), [200, 404, 405, 401, 200, 400]);
  const ids = new Set<string>();
  for (const r of answers) {
    assert.equal(r.headers.get('api-version'), '2026-06-29');
    const id = r.headers.get('x-request-id') ?? '';
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    ids.add(id);
  }
  assert.equal(ids.size, answers.length, 'each request gets its own id');
}));

test('a valid client X-Request-Id (≤ 128 printable ASCII) is echoed', () => withServer(async (srv) => {
  for (const id of ['req-123', 'a'.repeat(128), '!~{}[]<>"\'=+/\\|', 'trace 42 / span 7']) {
    const r = await srv.call('GET', '/healthz', { key: null, headers: { 'X-Request-Id': id } });
    assert.equal(r.headers.get('x-request-id'), id);
    const e = await srv.call('GET', '/nope', { headers: { 'X-Request-Id': id } });
    assert.equal(e.headers.get('x-request-id'), id);
  }
}));

test('an X-Request-Id over 128 characters or with non-printable/non-ASCII bytes is replaced', () => withServer(async (srv) => {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  for (const id of ['a'.repeat(129), 'tab\there', 'caf\u00e9', 'x'.repeat(100) + '\u00ff'.repeat(10)]) {
    // fetch refuses some of these values, so use a raw socket.
    const head = Buffer.from(`GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Request-Id: ${id}\r\n\r\n`, 'latin1');
    const res = parseRaw((await rawExchange(srv.port, head)).data);
    assert.equal(res.status, 200, id);
    assert.match(res.headers['x-request-id'], uuid, id);
    assert.notEqual(res.headers['x-request-id'], id);
  }
}));

// ---------------------------------------------------------------- Api-Version

test('Api-Version: 2026-06-29 is accepted', () => withServer(async (srv) => {
  const r = await srv.call('GET', '/api/v1/conversations', { headers: { 'Api-Version': '2026-06-29' } });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { object: 'list', hasMore: false, nextCursor: null, conversations: [] });
}));

test('Api-Version: 2020-01-01 → 400 invalid_request naming the supported version', () => withServer(async (srv) => {
  for (const v of ['2020-01-01', '2026-06-30', 'latest']) {
    const r = await srv.call('GET', '/api/v1/conversations', { headers: { 'Api-Version': v } });
    assert.equal(r.status, 400, v);
    assert.deepEqual(r.body, { code: 'invalid_request', error: 'Header Api-Version must be 2026-06-29.' });
    assert.equal(r.headers.get('api-version'), '2026-06-29');
  }
}));

test('a wrong Api-Version on an unauthenticated request is still 401 (authentication comes first)', () => withServer(async (srv) => {
  const r = await srv.call('GET', '/api/v1/conversations', { key: null, headers: { 'Api-Version': '2020-01-01' } });
  assert.equal(r.status, 401);
  assert.deepEqual(r.body, { code: 'unauthorized', error: 'A valid workspace API key is required.' });
}));

// ---------------------------------------------------------------- media type and encoding

test('POST with Content-Type text/plain → 415 unsupported_media_type', () => withServer(async (srv) => {
  const r = await srv.call('POST', '/api/v1/conversations', { raw: JSON.stringify(validConversation), headers: { 'Content-Type': 'text/plain' } });
  assert.equal(r.status, 415);
  assert.deepEqual(r.body, { code: 'unsupported_media_type', error: 'The request body must be application/json.' });
}));

test('POST without a Content-Type → 415 unsupported_media_type', () => withServer(async (srv) => {
  const r = await srv.call('POST', '/api/v1/conversations', { raw: Buffer.from(JSON.stringify(validConversation)) });
  assert.equal(r.status, 415);
  assert.deepEqual(r.body, { code: 'unsupported_media_type', error: 'The request body must be application/json.' });
}));

test('every route whose body is required: no body (no Content-Type, or one that is not JSON) → 400 "a JSON body is required"; a route whose body is optional takes none', () => withServer(async (srv) => {
  const NO_BODY = { code: 'invalid_request', error: 'Request body is invalid: a JSON body is required.' };
  // The widget API answers 401 before the body without a session (test/widget-api.test.ts covers its bodies).
  const required = srv.routes.filter((r) => r.body && !r.bodyOptional && r.auth === undefined);
  const optional = srv.routes.filter((r) => r.body && r.bodyOptional && r.auth === undefined);
  assert.ok(required.length >= 6 && optional.length >= 1, `${required.length} required, ${optional.length} optional`);
  for (const r of required) {
    // Validation comes before existence: a made-up id is fine here.
    const path = r.path.replace(/\{\w+\}/g, 'no-such-id');
    for (const headers of [{}, { 'Content-Type': 'text/plain' }, JSON_CT]) {
      const res = await srv.call(r.method, path, { headers });
      assert.deepEqual({ status: res.status, body: res.body }, { status: 400, body: NO_BODY }, `${r.method} ${r.path} ${JSON.stringify(headers)}`);
    }
    // A body that is not JSON is still a 415.
    const typed = await srv.call(r.method, path, { raw: '{}', headers: { 'Content-Type': 'text/plain' } });
    assert.equal(typed.status, 415, `${r.method} ${r.path}`);
  }
  for (const r of optional) {
    const res = await srv.call(r.method, r.path.replace(/\{\w+\}/g, 'no-such-id'));
    assert.deepEqual({ status: res.status, body: res.body }, { status: 404, body: { code: 'not_found', error: 'Record not found.' } }, `${r.method} ${r.path}`);
  }
}));

test('POST with application/json; charset=latin1 → 415; charset=UTF-8 and parameters are accepted', () => withServer(async (srv) => {
  const bad = await srv.call('POST', '/api/v1/conversations', { raw: JSON.stringify(validConversation), headers: { 'Content-Type': 'application/json; charset=latin1' } });
  assert.equal(bad.status, 415);
  assert.deepEqual(bad.body, { code: 'unsupported_media_type', error: 'The request body must be application/json: the only charset accepted is utf-8.' });
  for (const ct of ['application/json; charset=UTF-8', 'Application/JSON', 'application/json;charset="utf-8"']) {
    const ok = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { raw: JSON.stringify(validConversation), headers: { 'Content-Type': ct } });
    assert.equal(ok.status, 201, ct);
    assert.equal(ok.body.conversation.subject, 'Printer on fire');
  }
}));

test('POST with Content-Encoding: gzip → 415 unsupported_media_type', () => withServer(async (srv) => {
  const r = await srv.call('POST', '/api/v1/conversations', { raw: JSON.stringify(validConversation), headers: { ...JSON_CT, 'Content-Encoding': 'gzip' } });
  assert.equal(r.status, 415);
  assert.deepEqual(r.body, { code: 'unsupported_media_type', error: 'The request body must be application/json: Content-Encoding is not supported; send the body uncompressed.' });
}));

// ---------------------------------------------------------------- body size

const tooLarge = { code: 'payload_too_large', error: 'The request body is too large: the limit for this request is 1048576 bytes.' };

test('a Content-Length over 1 MiB → 413 payload_too_large before any body byte is read', () => withServer(async (srv) => {
  const head = authHead(srv, 'POST', '/api/v1/conversations', ['Content-Type: application/json', `Content-Length: ${MiB + 1}`]);
  const res = parseRaw((await rawExchange(srv.port, head)).data);
  assert.equal(res.status, 413);
  assert.deepEqual(res.body, tooLarge);
  assert.equal(res.headers['connection'], 'close');
  assert.equal(res.headers['api-version'], '2026-06-29');
}));

test('a chunked body without Content-Length is cut off at 1 MiB → 413 payload_too_large', () => withServer(async (srv) => {
  const head = authHead(srv, 'POST', '/api/v1/conversations', ['Content-Type: application/json', 'Transfer-Encoding: chunked']);
  const piece = Buffer.alloc(64 * 1024, 0x20);
  const chunk = Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
  // 64 chunks of 64 KiB = 4 MiB offered; the server must answer after a little over 1 MiB.
  const { data, chunksSent } = await rawExchange(srv.port, head, Array.from({ length: 64 }, () => chunk));
  const res = parseRaw(data);
  assert.equal(res.status, 413);
  assert.deepEqual(res.body, tooLarge);
  assert.ok(chunksSent < 64, `the server read the whole 4 MiB (${chunksSent} chunks) before answering`);
}));

test('a body of exactly 1 MiB is read and parsed (not 413)', () => withServer(async (srv) => {
  const json = JSON.stringify(validConversation);
  const raw = json + ' '.repeat(MiB - Buffer.byteLength(json));
  assert.equal(Buffer.byteLength(raw), MiB);
  const r = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { raw, headers: JSON_CT });
  assert.equal(r.status, 201);
  assert.equal(r.body.conversation.subject, 'Printer on fire');
}));

test('the server still serves new requests after cutting a too-large body off', () => withServer(async (srv) => {
  const r = await srv.call('POST', '/api/v1/conversations', { raw: Buffer.alloc(MiB + 10, 0x20), headers: JSON_CT });
  assert.equal(r.status, 413);
  assert.deepEqual(r.body, tooLarge);
  const h = await srv.call('GET', '/healthz', { key: null });
  assert.deepEqual(h.body, { status: 'ok' });
}));

// ---------------------------------------------------------------- body parsing

test('an empty body → 400 invalid_request (a JSON body is required)', () => withServer(async (srv) => {
  const r = await srv.call('POST', '/api/v1/conversations', { raw: '', headers: JSON_CT });
  assert.equal(r.status, 400);
  assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: a JSON body is required.' });
}));

test('invalid JSON → 400 invalid_request', () => withServer(async (srv) => {
  for (const raw of ['{', '{"subject": }', "{'a':1}", '{"a":1} x', 'NaN']) {
    const r = await srv.call('POST', '/api/v1/conversations', { raw, headers: JSON_CT });
    assert.equal(r.status, 400, raw);
    assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: the body is not valid JSON.' });
  }
}));

test('invalid UTF-8 bytes in the body → 400 invalid_request', () => withServer(async (srv) => {
  const cases = [
    Buffer.from([0x7b, 0x22, 0x73, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), // {"s":"\xff"}
    Buffer.from([0x7b, 0x22, 0x73, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]), // overlong "/"
    Buffer.from([0x7b, 0x22, 0x73, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]), // a surrogate
  ];
  for (const raw of cases) {
    const r = await srv.call('POST', '/api/v1/conversations', { raw, headers: JSON_CT });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: the body is not valid UTF-8.' });
  }
}));

test('a body over 256 KiB (decoded and parsed in turns of their own) → the same 400s for invalid UTF-8, invalid JSON and a forbidden key, and a valid one is created', () => withServer(async (srv) => {
  const pad = 'x'.repeat(300 * 1024);
  const cases: Array<[Buffer, string]> = [
    [Buffer.concat([Buffer.from(`{"content":"${pad}`), Buffer.from([0xff]), Buffer.from('"}')]), 'the body is not valid UTF-8'],
    [Buffer.from(`{"content":"${pad}"`), 'the body is not valid JSON'],
    [Buffer.from(`{"content":"${pad}","__proto__":{}}`), 'the key __proto__ is not allowed'],
  ];
  for (const [raw, why] of cases) {
    const r = await srv.call('POST', '/api/v1/sources', { raw, headers: JSON_CT });
    assert.equal(r.status, 400, why);
    assert.deepEqual(r.body, { code: 'invalid_request', error: `Request body is invalid: ${why}.` });
  }
  const ok = await srv.call<Ingestion>('POST', '/api/v1/sources', { raw: Buffer.from(JSON.stringify({ content: `# Big\n\n${pad}` })), headers: JSON_CT });
  assert.equal(ok.status, 201, ok.text.slice(0, 300));
  assert.equal(ok.body.source.status, 'ready');
}));

test('a body over 256 KiB parsed off the main thread keeps its content byte for byte: after a restart a rescan of it finds the same documents', async () => {
  const dataDir = tempDir();
  // Non-ASCII, quotes, backslashes and escapes: the content's JSON text is made by the body worker.
  const content = Array.from({ length: 300 }, (_, i) => `## Ünïcödé section ${i} 😀\n\n"quoted" \\ back\\slash\ttab ${'pad '.repeat(250)}\n\n`).join('');
  assert.ok(Buffer.byteLength(JSON.stringify({ content })) > 256 * 1024);
  const srv = await startTestServer({ dataDir });
  const created = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { content } });
  assert.equal(created.status, 201, created.text.slice(0, 300));
  await srv.close();
  const again = await startTestServer({ dataDir });
  try {
    const r = await again.call<Ingestion>('POST', `/api/v1/sources/${created.body.source.id}/rescan`, { key: srv.key });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.deepEqual(r.body.counts, created.body.counts);
    assert.deepEqual(r.body.documents.map((d) => d.title), created.body.documents.map((d) => d.title));
    assert.equal(r.body.documents[7].title, 'Ünïcödé section 7 😀');
  } finally { await again.close(); }
});

test('a leading UTF-8 byte-order mark is ignored (RFC 8259 §8.1 allows it)', () => withServer(async (srv) => {
  const raw = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(validConversation))]);
  const r = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { raw, headers: JSON_CT });
  assert.equal(r.status, 201);
  assert.equal(r.body.conversation.subject, 'Printer on fire');
}));

const nested = (depth: number, inner = '{}') => '{"a":'.repeat(depth - 1) + inner + '}'.repeat(depth - 1);

test('a body nested 65 levels deep → 400 invalid_request', () => withServer(async (srv) => {
  for (const raw of [nested(65), '['.repeat(65) + ']'.repeat(65), `{"subject":"s","customer":${nested(64)}}`]) {
    const r = await srv.call('POST', '/api/v1/conversations', { raw, headers: JSON_CT });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: the body is nested deeper than 64 levels.' });
  }
}));

test('a body nested 64 levels deep passes the structure check and reaches schema validation', () => withServer(async (srv) => {
  const r = await srv.call('POST', '/api/v1/conversations', { raw: nested(64), headers: JSON_CT });
  assert.equal(r.status, 400);
  assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: a is not an allowed property.' });
  const arr = await srv.call('POST', '/api/v1/conversations', { raw: '['.repeat(64) + ']'.repeat(64), headers: JSON_CT });
  assert.deepEqual(arr.body, { code: 'invalid_request', error: 'Request body is invalid: the body must be a JSON object.' });
}));

test('a pathologically deep body (500 000 levels, under 1 MiB) → 400, never a 500 or a crash', () => withServer(async (srv) => {
  const raw = '['.repeat(500_000) + ']'.repeat(500_000);
  const r = await srv.call<ErrorAnswer>('POST', '/api/v1/conversations', { raw, headers: JSON_CT });
  assert.equal(r.status, 400);
  assert.equal(r.body.code, 'invalid_request');
  assert.deepEqual((await srv.call('GET', '/healthz', { key: null })).body, { status: 'ok' });
}));

test('__proto__ and constructor keys, at any depth → 400 invalid_request naming the key', () => withServer(async (srv) => {
  const cases: Array<[string, string]> = [
    ['{"__proto__":{"admin":true}}', '__proto__'],
    ['{"constructor":{"prototype":{}}}', 'constructor'],
    ['{"subject":"s","customer":{"email":"a@b.co","__proto__":{"x":1}}}', '__proto__'],
    ['{"subject":"s","customer":{"email":"a@b.co"},"x":[{"constructor":1}]}', 'constructor'],
  ];
  for (const [raw, k] of cases) {
    const r = await srv.call('POST', '/api/v1/conversations', { raw, headers: JSON_CT });
    assert.equal(r.status, 400, raw);
    assert.deepEqual(r.body, { code: 'invalid_request', error: `Request body is invalid: the key ${k} is not allowed.` });
  }
  assert.equal(({} as Record<string, unknown>).admin, undefined, 'Object.prototype untouched');
}));

test('a JSON body that is an array, string, number or null → 400 (the body must be a JSON object)', () => withServer(async (srv) => {
  for (const raw of ['[]', '[{"subject":"s"}]', '"text"', '42', 'null', 'true']) {
    const r = await srv.call('POST', '/api/v1/conversations', { raw, headers: JSON_CT });
    assert.equal(r.status, 400, raw);
    assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: the body must be a JSON object.' });
  }
}));

test('an unknown body property → 400 naming it', () => withServer(async (srv) => {
  const r = await srv.call('POST', '/api/v1/conversations', { body: { ...validConversation, extra: 1 } });
  assert.equal(r.status, 400);
  assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: extra is not an allowed property.' });
}));

// ---------------------------------------------------------------- connection-level limits

test('request headers over 16 KiB → 431 with a JSON {code, error} body', () => withServer(async (srv) => {
  const r = await srv.call('GET', '/healthz', { key: null, headers: { 'X-Big': 'a'.repeat(17 * 1024) } });
  assert.equal(r.status, 431);
  assert.deepEqual(r.body, { code: 'request_header_fields_too_large', error: 'The request headers are too large.' });
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(r.headers.get('api-version'), '2026-06-29');
  // Written before the path is known (it may be a page's): the pages' security headers too.
  const page = await srv.call('GET', '/settings/login', { key: null, headers: { 'X-Big': 'a'.repeat(17 * 1024) } });
  assert.equal(page.status, 431);
  assert.equal(page.headers.get('content-security-policy'), "default-src 'self'; frame-ancestors 'none'; form-action 'self'");
  assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(page.headers.get('referrer-policy'), 'same-origin');
}));

test('headers just under the limit are accepted', () => withServer(async (srv) => {
  const r = await srv.call('GET', '/healthz', { key: null, headers: { 'X-Big': 'a'.repeat(15 * 1024) } });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { status: 'ok' });
}));

test('a malformed request line → 400 invalid_request as JSON', () => withServer(async (srv) => {
  const res = parseRaw((await rawExchange(srv.port, 'GARBAGE\r\n\r\n')).data);
  assert.equal(res.status, 400);
  assert.deepEqual(res.body, { code: 'invalid_request', error: 'Request body is invalid: the HTTP request is malformed.' });
}));

test('a client that sends half a request line and stalls is disconnected (HEADERS_TIMEOUT_MS=1000)', () => withServer(async (srv) => {
  const sock = net.connect(srv.port, '127.0.0.1');
  sock.on('error', () => {});
  sock.resume();
  await once(sock, 'connect');
  sock.write('GET /heal');
  const closed = once(sock, 'close').then(() => 'closed' as const);
  let timer: NodeJS.Timeout | undefined;
  // 8 s: generous for a 1 s timeout checked every second, yet shorter than the 10 s default.
  const bound = new Promise<'still open'>((r) => { timer = setTimeout(() => r('still open'), 8_000); });
  const outcome = await Promise.race([closed, bound]);
  clearTimeout(timer);
  sock.destroy();
  assert.equal(outcome, 'closed', 'the server kept a stalled connection open for 8 s');
}, { HEADERS_TIMEOUT_MS: '1000' }));

// ---------------------------------------------------------------- 500s

/** An App over a running test server's store, with extra routes, on its own http server. */
async function appWith(routes: Route[]): Promise<{ url: string; logs: string[]; stop(): Promise<void>; key: string }> {
  const srv = await startTestServer();
  const logs: string[] = [];
  const app = new App({
    store: srv.store, config: loadConfig({ PORT: '0', DATA_DIR: srv.dataDir }), clock: new ManualClock(),
    logger: createLogger('debug', (l) => logs.push(l)), routes,
  });
  const server = http.createServer(app.handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`, logs, key: srv.key,
    stop: async () => { server.close(); server.closeAllConnections(); await srv.close(); },
  };
}

const ok = { status: 200, schema: s.object({}), description: 'x' };
const boomRoutes: Route[] = [
  route({ method: 'GET', path: '/boom', operationId: 'boom', summary: '', tag: 'T', scope: null, success: ok,
    handler: () => { throw new Error('secret at /srv/app/data/workspaces/x.log'); } }),
  route({ method: 'GET', path: '/boom-async', operationId: 'boomAsync', summary: '', tag: 'T', scope: 'conversations:read', success: ok,
    handler: async () => { await Promise.resolve(); throw new TypeError("Cannot read properties of undefined (reading 'id')"); } }),
  route({ method: 'GET', path: '/boom-string', operationId: 'boomString', summary: '', tag: 'T', scope: null, success: ok,
    handler: () => { throw 'a bare string'; } }),
];

test('an unexpected error → 500 internal_error with no stack, message or path; logged with the request id', async () => {
  const a = await appWith(boomRoutes);
  try {
    for (const [path, auth] of [['/boom', false], ['/boom-async', true], ['/boom-string', false]] as const) {
      const res = await fetch(a.url + path, { headers: { 'X-Request-Id': `rid-${path.slice(1)}`, ...(auth ? { Authorization: `Bearer ${a.key}` } : {}) } });
      const text = await res.text();
      assert.equal(res.status, 500, path);
      assert.deepEqual(JSON.parse(text), { code: 'internal_error', error: 'The API request could not be completed.' });
      assert.doesNotMatch(text, /secret|\/srv|Cannot read|at |bare string|\.ts/);
      assert.equal(res.headers.get('x-request-id'), `rid-${path.slice(1)}`);
      assert.equal(res.headers.get('api-version'), '2026-06-29');
      const logged = a.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'unexpected error' && l.requestId === `rid-${path.slice(1)}`);
      assert.ok(logged, `no error log line for ${path}`);
      assert.equal(logged.level, 'error');
    }
    const first = a.logs.map((l) => JSON.parse(l)).find((l) => l.requestId === 'rid-boom' && l.msg === 'unexpected error');
    assert.match(first.error, /secret at \/srv\/app\/data\/workspaces\/x\.log/);
  } finally { await a.stop(); }
});

test('an answer whose header value node:http refuses → 500 internal_error with one Content-Type and one Content-Length, none of the refused answer\'s headers', async () => {
  const a = await appWith([
    route({ method: 'GET', path: '/bad-header', operationId: 'badHeader', summary: '', tag: 'T', scope: null, success: ok,
      handler: () => ({ status: 200, body: { ok: true }, headers: { 'X-Bad': 'a\r\nSet-Cookie: x=1', Location: '/elsewhere' } }) }),
  ]);
  try {
    const { data } = await rawExchange(Number(new URL(a.url).port), 'GET /bad-header HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid-bad\r\nConnection: close\r\n\r\n');
    const [head, body] = data.toString('latin1').split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 500 /);
    assert.deepEqual(JSON.parse(body), { code: 'internal_error', error: 'The API request could not be completed.' });
    const names = head.split('\r\n').slice(1).map((l) => l.slice(0, l.indexOf(':')).toLowerCase());
    assert.equal(names.filter((n) => n === 'content-length').length, 1, head);
    assert.equal(names.filter((n) => n === 'content-type').length, 1, head);
    assert.ok(!names.includes('x-bad') && !names.includes('location') && !names.includes('set-cookie'), head);
    assert.ok(head.includes('\r\nX-Request-Id: rid-bad\r\n'), head);
    assert.equal(Number(/\r\ncontent-length: (\d+)/i.exec(head)![1]), Buffer.byteLength(body));
    assert.ok(a.logs.some((l) => JSON.parse(l).msg === 'unexpected error' && JSON.parse(l).requestId === 'rid-bad'));
  } finally { await a.stop(); }
});

test('access log: one line per request, sync and async handlers alike; an X-Request-Id with " and \\ is escaped', async () => {
  const a = await appWith(boomRoutes);
  try {
    const id = 'a"b\\c {"x":1}';
    for (const [path, rid] of [['/boom', id], ['/nowhere', 'rid-404'], ['/boom-async', 'rid-async']] as const) {
      const res = await fetch(a.url + path, { headers: { 'X-Request-Id': rid, Authorization: `Bearer ${a.key}` } });
      await res.arrayBuffer();
      assert.equal(res.headers.get('x-request-id'), rid);
    }
    await new Promise((r) => setImmediate(r));
    const lines = a.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request');
    const pick = (l: Record<string, unknown>) => ({ level: l.level, requestId: l.requestId, method: l.method, route: l.route, status: l.status, ms: typeof l.durationMs });
    assert.deepEqual(lines.map(pick), [
      { level: 'info', requestId: id, method: 'GET', route: 'GET /boom', status: 500, ms: 'number' },
      { level: 'info', requestId: 'rid-404', method: 'GET', route: '-', status: 404, ms: 'number' },
      { level: 'info', requestId: 'rid-async', method: 'GET', route: 'GET /boom-async', status: 500, ms: 'number' },
    ]);
    for (const l of lines) assert.match(String(l.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  } finally { await a.stop(); }
});

test('pipelined requests in one packet, answered synchronously and asynchronously, come back in order', () => withServer(async (srv) => {
  const { connect } = await import('node:net');
  const url = new URL(srv.url);
  const body = JSON.stringify({ subject: 'Pipelined', customer: { email: 'pipe@example.com' } });
  const auth = `Authorization: Bearer ${srv.key}\r\n`;
  const reqs = [
    'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: p1\r\n\r\n',
    `POST /api/v1/conversations HTTP/1.1\r\nHost: x\r\n${auth}X-Request-Id: p2\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    `GET /api/v1/issues/00000000-0000-7000-8000-000000000000 HTTP/1.1\r\nHost: x\r\n${auth}X-Request-Id: p3\r\n\r\n`,
    `GET /api/v1/tags HTTP/1.1\r\nHost: x\r\n${auth}X-Request-Id: p4\r\nConnection: close\r\n\r\n`,
  ];
  const raw = await new Promise<string>((resolve, reject) => {
    const sock = connect(Number(url.port), url.hostname, () => sock.write(reqs.join('')));
    let data = '';
    sock.on('data', (c) => { data += c.toString('utf8'); });
    sock.on('close', () => resolve(data));
    sock.on('error', reject);
  });
  const answers = [...raw.matchAll(/HTTP\/1\.1 (\d{3}) [^\r]*\r\n((?:[^\r]+\r\n)*)\r\n/g)].map((m) => ({ status: Number(m[1]), id: /^x-request-id: (.*)$/im.exec(m[2])?.[1] }));
  assert.deepEqual(answers, [{ status: 200, id: 'p1' }, { status: 201, id: 'p2' }, { status: 404, id: 'p3' }, { status: 200, id: 'p4' }]);
}));

test('GET /healthz with Api-Version 2020-01-01 → 400 like every other route', () => withServer(async (srv) => {
  const r = await srv.call('GET', '/healthz', { key: null, headers: { 'Api-Version': '2020-01-01' } });
  assert.equal(r.status, 400);
  assert.deepEqual(r.body, { code: 'invalid_request', error: 'Header Api-Version must be 2026-06-29.' });
}));

test('HEAD with oversized headers → 431 headers without a body (RFC 9110 §9.3.2); a lone surrogate in a string → 400', () => withServer(async (srv) => {
  const { connect } = await import('node:net');
  const url = new URL(srv.url);
  const raw = await new Promise<string>((resolve, reject) => {
    const sock = connect(Number(url.port), url.hostname, () => sock.end(`HEAD /api/v1/tags?cursor=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`));
    let data = '';
    sock.on('data', (c) => { data += c.toString('latin1'); });
    sock.on('close', () => resolve(data));
    sock.on('error', reject);
  });
  assert.match(raw, /^HTTP\/1\.1 431 /);
  assert.ok(raw.endsWith('\r\n\r\n'), `no body after the headers: ${JSON.stringify(raw.slice(-60))}`);
  const r = await srv.call('POST', '/api/v1/conversations', { raw: '{"subject":"x\\ud800","customer":{"email":"a@b.co"}}', headers: { 'Content-Type': 'application/json' } });
  assert.equal(r.status, 400);
  assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: subject must be well-formed Unicode text (it has a lone surrogate).' });
}));

test('log lines are written in batches: every LOG_FLUSH_MS, or at once when the next might not fit LOG_FLUSH_BYTES, never one write per line', () => {
  const writes: string[] = [];
  const timers: Array<() => void> = [];
  const out = batchedWriter((b) => writes.push(b.toString('utf8')), (fn, ms) => { assert.equal(ms, LOG_FLUSH_MS); timers.push(fn); });
  out.write('a\n');
  out.write('é\n');
  assert.deepEqual([writes, timers.length], [[], 1], 'nothing written yet, one timer armed');
  timers[0]();
  assert.deepEqual(writes, ['a\né\n']);
  // Lines that fill the buffer: written when the next might not fit; a line longer than the buffer alone.
  const line = 'x'.repeat(1000) + '\n';
  for (let i = 0; i < 70; i++) out.write(line);
  assert.equal(writes.length, 2, 'one write of the lines that fit');
  assert.ok(writes[1].length > LOG_FLUSH_BYTES / 2 && writes[1].length <= LOG_FLUSH_BYTES && writes[1].length % line.length === 0);
  out.write('y'.repeat(LOG_FLUSH_BYTES));
  assert.equal(writes.length, 4, 'what was pending, then the long line alone');
  assert.equal(writes[3].length, LOG_FLUSH_BYTES);
  out.write('d\n');
  assert.equal(out.take().toString(), 'd\n', 'what is pending at exit is taken and written synchronously by the caller');
  assert.equal(writes.join('').length, 4 + 70 * line.length + LOG_FLUSH_BYTES);
});

test('the batch buffer is filled again after each flush, not replaced: the sink is given the same memory every time', () => {
  const given: Buffer[] = [];
  const texts: string[] = [];
  const out = batchedWriter((b) => { given.push(b); texts.push(b.toString('utf8')); }, () => {});
  const log = createLogger('info', out);
  const buf = out.buf;
  for (let batch = 0; batch < 3; batch++) {
    log.request(`id-${batch}`, 'GET', 'GET /x', 200, 1, true);
    out.write(`line ${batch}\n`);
    out.flush();
  }
  // Lines that fill the buffer: written when the next might not fit, from the same buffer.
  for (let i = 0; i < 70; i++) out.write('x'.repeat(1000) + '\n');
  out.flush();
  assert.equal(out.buf, buf, 'the same buffer');
  assert.equal(given.length, 5);
  for (const b of given) assert.equal(b.buffer, buf.buffer, 'each batch is a view of it');
  assert.deepEqual(texts.slice(0, 3).map((t) => t.split('\n').slice(0, 2).map((l, i) => (i === 0 ? (JSON.parse(l) as { requestId: string }).requestId : l))), [['id-0', 'line 0'], ['id-1', 'line 1'], ['id-2', 'line 2']]);
  assert.equal(texts.slice(3).join(''), ('x'.repeat(1000) + '\n').repeat(70), 'every line once, in order');
});

test("the access line's time is the ISO text of its millisecond, across milliseconds, seconds and years of any length", (t) => {
  const times = [1732489205998, 1732489205999, 1732489206000, 1732489206000, 1732489206007, 1732489207089, 946684800000, 253402300799999, 253402300800001];
  let i = 0;
  t.mock.method(Date, 'now', () => times[i]);
  const writes: string[] = [];
  const out = batchedWriter((b) => writes.push(b.toString('utf8')), () => {});
  const log = createLogger('info', out);
  for (i = 0; i < times.length; i++) log.request(`id-${i}`, 'GET', 'GET /x', 200, 1, true);
  out.flush();
  assert.deepEqual(writes.join('').trim().split('\n').map((l) => (JSON.parse(l) as { time: string }).time), times.map((ms) => new Date(ms).toISOString()));
});

test('writeHundredths writes h / 100 as JSON writes the number: every h below 100,000, then samples up to 1e11 - 1', () => {
  const buf = Buffer.alloc(32);
  const check = (h: number) => {
    const end = writeHundredths(buf, 3, h);
    assert.equal(buf.toString('latin1', 3, end), JSON.stringify(h / 100), `h = ${h}`);
  };
  for (let h = 0; h < 100_000; h++) check(h);
  for (let h = 100_000; h < 1e11; h = Math.floor(h * 1.37) + 7) check(h);
  check(1e11 - 1);
});

test('access lines are written as bytes into the batch, in order with the other lines, as the same text a string logger makes: escaped ids, any status, durations as JSON numbers', () => {
  const writes: string[] = [];
  const timers: Array<() => void> = [];
  const out = batchedWriter((b) => writes.push(b.toString('utf8')), (fn, ms) => { assert.equal(ms, LOG_FLUSH_MS); timers.push(fn); });
  const kept = createLogger('info', out);
  const strings: string[] = [];
  const asString = createLogger('info', (l) => strings.push(l));
  const cases: Array<[string, string, string, number, number]> = [
    ['0197b5e5-3a01-7b22-9d10-4e5f6a7b8c91', 'GET', 'GET /api/v1/issues/{id}', 200, 0.12],
    ['client "quoted" id \\ too', 'POST', 'POST /api/v1/conversations', 201, 12.5],
    ['caf\u00e9-\u{1F600}\u0001', 'PATCH', '-', 404, 3],
    ['a', 'HEAD', 'GET /api/v1/issues/{id}', 200, 0],
    ['b', 'GET', 'GET /api/v1/issues/{id}', 404, 0.07],
    ['c', 'GET', 'GET /api/v1/issues/{id}', 200, 123456.78],
    ['d', 'BREW', '-', 405, 1.1],
    ['e'.repeat(128), 'GET', 'GET /api/v1/issues/{id}', 200, 10],
    ['f'.repeat(5000), 'GET', 'GET /api/v1/issues/{id}', 200, 1],
    // Durations as the pipeline measures them, unrounded: written in hundredths either way.
    ['g', 'GET', 'GET /api/v1/issues/{id}', 200, 0.123456],
    ['h', 'GET', 'GET /api/v1/issues/{id}', 200, 7.005000001],
    ['client "quoted" id', 'GET', 'GET /api/v1/issues/{id}', 200, 2.999],
  ];
  kept.request(...cases[0]); asString.request(...cases[0]);
  kept.warn('in between', { n: 1 }); asString.warn('in between', { n: 1 });
  for (const c of cases.slice(1)) { kept.request(...c); asString.request(...c); }
  // An id the server made (ownId): written as it is, the same text.
  kept.request('0197b5e5-3a01-7b22-9d10-4e5f6a7b8c92', 'GET', 'GET /api/v1/issues/{id}', 200, 0.5, true);
  asString.request('0197b5e5-3a01-7b22-9d10-4e5f6a7b8c92', 'GET', 'GET /api/v1/issues/{id}', 200, 0.5, true);
  assert.deepEqual(writes, [], 'nothing written before the timer');
  assert.equal(timers.length, 1, 'one timer for the batch');
  for (const t of timers.splice(0)) t();
  const noTime = (l: string) => l.replace(/^\{"time":"[^"]+"/, '{"time":""');
  assert.deepEqual(writes.join('').split(/(?<=\n)/).map(noTime), strings.map(noTime), 'the same lines, the warning after the first request');
  assert.equal(JSON.parse(strings[2]).requestId, 'client "quoted" id \\ too');
  assert.deepEqual(Object.keys(JSON.parse(strings[0])), ['time', 'level', 'msg', 'requestId', 'method', 'route', 'status', 'durationMs']);
  assert.deepEqual(writes.join('').trim().split('\n').map((l) => (JSON.parse(l) as { durationMs?: number }).durationMs), [0.12, undefined, 12.5, 3, 0, 0.07, 123456.78, 1.1, 10, 1, 0.12, 7.01, 3, 0.5]);
  // A full buffer is written before the line that would not fit it; nothing is lost or reordered.
  writes.length = 0;
  for (let i = 0; i < 2000; i++) kept.request(`id-${i}`, 'GET', 'GET /x', 200, i / 100);
  assert.ok(writes.length >= 3, 'written when the buffer filled, before the timer');
  out.flush();
  assert.deepEqual(writes.join('').trim().split('\n').map((l) => (JSON.parse(l) as { requestId: string }).requestId), Array.from({ length: 2000 }, (_, i) => `id-${i}`));
  // Below info: nothing written.
  const quiet = createLogger('warn', out);
  writes.length = 0;
  quiet.request('a', 'GET', 'GET /x', 200, 1);
  for (const t of timers.splice(0)) t();
  out.flush();
  assert.deepEqual(writes, []);
});
