/**
 * The delivery worker's HTTP/1.1 client (src/areas/webhooks/http1.ts,
 * docs/decisions.md#a-lean-http-client-for-deliveries): the answer reader on every framing of
 * RFC 9112 §6.3, fed whole, split at every byte and one byte at a time, and its refusals with
 * their exact messages; the request's bytes; and attempts against real local servers — keep-alive
 * reuse, `Connection: close`, a receiver closing an idle connection, the pool's address and idle
 * rules (on injected instants), a body that never ends, oversized headers, a refused port, and
 * HTTPS with a fixture certificate (trusted, untrusted, wrong name).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { IDLE_MS, headerLines, requestBytes } from '../src/areas/webhooks/http1.js';
import { ConnectionPool, connectionsInUse, setConnectionLimit } from '../src/areas/webhooks/pool.js';
import { AnswerReader, MAX_HEAD_BYTES } from '../src/areas/webhooks/answer.js';
import { sendAttempt } from '../src/areas/webhooks/send.js';

const FIXTURES = join(import.meta.dirname, 'fixtures', 'tls');
const CERT = readFileSync(join(FIXTURES, 'localhost.crt'));
const KEY = readFileSync(join(FIXTURES, 'localhost.key'));

interface Read { status: number; reason: string; keepAlive: boolean; state: string; headers: Record<string, string> }

/**
 * Feeds `answer` cut into `pieces`, then `end()` when `close`; the reader's view. With `reused`,
 * each piece comes in one buffer that is overwritten after each feed, as a connection's reads
 * come through `onread` (the reader must copy what it keeps).
 */
function read(pieces: Buffer[], close = false, reused = false): Read {
  const r = new AnswerReader();
  const scratch = Buffer.alloc(1024);
  for (const p of pieces) {
    if (!reused) { r.feed(p); continue; }
    p.copy(scratch);
    r.feed(scratch.subarray(0, p.length));
    scratch.fill(0x58);
  }
  if (close) r.end();
  assert.ok(r.head, 'a head was read');
  return { status: r.head.status, reason: r.head.reason, keepAlive: r.keepAlive, state: r.state, headers: Object.fromEntries(r.head.headers) };
}

/** Every way to cut `text` in two, and one byte at a time. */
function cuts(text: string): Buffer[][] {
  const b = Buffer.from(text, 'latin1');
  const out: Buffer[][] = [[b]];
  for (let i = 1; i < b.length; i++) out.push([b.subarray(0, i), b.subarray(i)]);
  out.push([...b].map((x) => Buffer.from([x])));
  return out;
}

const FRAMINGS: Array<{ name: string; text: string; close?: boolean; want: Partial<Read> }> = [
  { name: 'Content-Length', text: 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello', want: { status: 200, reason: 'OK', keepAlive: true, state: 'done' } },
  { name: 'Content-Length 0', text: 'HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n', want: { status: 202, keepAlive: true, state: 'done' } },
  { name: 'repeated equal Content-Length', text: 'HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 02\r\n\r\nhi', want: { status: 200, keepAlive: true, state: 'done' } },
  { name: 'chunked, with extensions and trailers', text: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\nA \r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n', want: { status: 200, keepAlive: true, state: 'done' } },
  { name: 'chunked after another coding', text: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n', want: { status: 200, keepAlive: true, state: 'done' } },
  { name: '204 has no body', text: 'HTTP/1.1 204 No Content\r\n\r\n', want: { status: 204, reason: 'No Content', keepAlive: true, state: 'done' } },
  { name: '304 has no body even with a length', text: 'HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n', want: { status: 304, keepAlive: true, state: 'done' } },
  { name: 'interim answers are skipped', text: 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n', want: { status: 201, reason: 'Created', state: 'done', headers: { 'content-length': '0' } } },
  { name: 'framed by the close', text: 'HTTP/1.1 200 OK\r\n\r\nabc', close: true, want: { status: 200, keepAlive: false, state: 'done' } },
  { name: 'another coding: until the close', text: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxyz', close: true, want: { status: 200, keepAlive: false, state: 'done' } },
  { name: 'Transfer-Encoding and Content-Length: chunked, then closed', text: 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n', want: { status: 200, keepAlive: false, state: 'done' } },
  { name: 'Connection: close', text: 'HTTP/1.1 500 Internal Server Error\r\nConnection: keep-alive, close\r\nContent-Length: 1\r\n\r\nx', want: { status: 500, reason: 'Internal Server Error', keepAlive: false, state: 'done' } },
  { name: 'HTTP/1.0', text: 'HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx', want: { keepAlive: false, state: 'done' } },
  { name: 'HTTP/1.0 keep-alive', text: 'HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx', want: { keepAlive: true, state: 'done' } },
  { name: 'bare LF line ends and an empty line first', text: '\r\nHTTP/1.1 200 OK\nContent-Length: 2\n\nok', want: { status: 200, keepAlive: true, state: 'done' } },
  { name: 'no reason phrase', text: 'HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n', want: { status: 200, reason: '', state: 'done' } },
  { name: 'control characters left out of the reason', text: 'HTTP/1.1 418 I\x01m a\x7f teapot\r\nContent-Length: 0\r\n\r\n', want: { status: 418, reason: 'Im a teapot' } },
  { name: 'a repeated Retry-After keeps the first (a date holds a comma)', text: 'HTTP/1.1 503 Service Unavailable\r\nRetry-After: Wed, 21 Oct 2026 07:28:00 GMT\r\nRetry-After: 5\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 0\r\n\r\n', want: { headers: { 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT', 'x-a': '1, 2', 'content-length': '0' } } },
];

for (const f of FRAMINGS) {
  test(`answer reader: ${f.name}, whole, cut anywhere, byte by byte; also through one reused read buffer`, () => {
    for (const reused of [false, true]) {
      for (const pieces of cuts(f.text)) {
        const got = read(pieces, f.close, reused);
        for (const [k, v] of Object.entries(f.want)) assert.deepEqual(got[k as keyof Read], v, `${k} with ${pieces.length} pieces${reused ? ', reused buffer' : ''}`);
      }
    }
  });
}

test('answer reader: the outcome is known at the head, before the body ends', () => {
  const r = new AnswerReader();
  r.feed(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc'));
  assert.equal(r.head?.status, 200);
  assert.equal(r.state, 'fixed');
  assert.throws(() => r.end(), { message: "the connection closed before the answer's body ended" });
});

const REFUSED: Array<{ name: string; text: string; close?: boolean; message: string }> = [
  { name: 'not HTTP/1.x', text: 'HTTP/2 200\r\n\r\n', message: 'the status line is not HTTP/1.0 or HTTP/1.1' },
  { name: 'not HTTP at all', text: 'SSH-2.0-OpenSSH_9.2\r\n\r\n', message: 'the status line is not HTTP/1.0 or HTTP/1.1' },
  { name: 'a status out of range', text: 'HTTP/1.1 099 Low\r\n\r\n', message: 'the status 099 is not an HTTP status' },
  { name: 'a status above 599', text: 'HTTP/1.1 600 High\r\n\r\n', message: 'the status 600 is not an HTTP status' },
  { name: 'a folded header', text: 'HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\n\r\n', message: 'a header is folded over lines (obsolete line folding)' },
  { name: 'a header without a colon', text: 'HTTP/1.1 200 OK\r\nno colon here\r\n\r\n', message: 'a header line is not a name and a value' },
  { name: 'a header name with a space', text: 'HTTP/1.1 200 OK\r\nX A: 1\r\n\r\n', message: 'a header line is not a name and a value' },
  { name: 'two Content-Lengths', text: 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n', message: 'the Content-Length is not one number' },
  { name: 'a negative Content-Length', text: 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n', message: 'the Content-Length is not one number' },
  { name: 'a Content-Length of letters', text: 'HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n', message: 'the Content-Length is not one number' },
  { name: 'an upgrade not asked for', text: 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n', message: 'the endpoint switched protocols, which was not asked for' },
  { name: 'a bad chunk size', text: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', message: 'a chunk-size line is not valid' },
  { name: 'a chunk longer than its size', text: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n', message: 'a chunk does not end where its size says' },
  { name: 'a chunk-size line without end', text: `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;${'x'.repeat(2000)}`, message: 'a chunk-size line is too long' },
  { name: 'headers over the limit', text: `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`, message: `the answer's status line and headers exceed ${MAX_HEAD_BYTES} bytes` },
  { name: 'trailers over the limit', text: `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`, message: `the answer's trailers exceed ${MAX_HEAD_BYTES} bytes` },
  { name: 'a close before any answer', text: '', close: true, message: 'the connection closed before an answer came' },
  { name: 'a close inside the head', text: 'HTTP/1.1 200 OK\r\nContent-Le', close: true, message: 'the connection closed before an answer came' },
  { name: 'a close inside a chunk', text: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab', close: true, message: "the connection closed before the answer's body ended" },
];

for (const f of REFUSED) {
  test(`answer reader refuses ${f.name}`, () => {
    for (const pieces of f.text.length > 4000 ? [[Buffer.from(f.text, 'latin1')]] : cuts(f.text)) {
      const r = new AnswerReader();
      assert.throws(() => { for (const p of pieces) r.feed(p); if (f.close) r.end(); }, { message: f.message }, `${pieces.length} pieces`);
    }
  });
}

test('the request: POST, host with its port, path and query as the URL has them, then the body', () => {
  const body = '{"a":"é"}';
  const bytes = requestBytes(new URL('http://[::1]:8080/hook/a%20b?x=1&y'), { 'webhook-id': 'evt_1', 'content-type': 'application/json' }, body);
  assert.equal(bytes.toString('utf8'), 'POST /hook/a%20b?x=1&y HTTP/1.1\r\nhost: [::1]:8080\r\nwebhook-id: evt_1\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n{"a":"é"}');
  assert.equal(requestBytes(new URL('https://example.com/'), {}, '').toString(), 'POST / HTTP/1.1\r\nhost: example.com\r\ncontent-length: 0\r\n\r\n');
  assert.throws(() => requestBytes(new URL('http://example.com/'), { 'x-a': 'one\r\nx-b: two' }, ''), { message: 'the header "x-a" cannot be sent' });
  assert.throws(() => requestBytes(new URL('http://example.com/'), { 'x a': 'one' }, ''), { message: 'the header "x a" cannot be sent' });
  // Lines made once (the headers every attempt sends) go after the attempt's own, before the length.
  const fixed = headerLines({ 'content-type': 'application/json', 'user-agent': 'ua/1' });
  assert.equal(fixed, 'content-type: application/json\r\nuser-agent: ua/1\r\n');
  assert.equal(requestBytes(new URL('http://example.com/h'), { 'webhook-id': 'e1' }, '{}', fixed).toString(),
    'POST /h HTTP/1.1\r\nhost: example.com\r\nwebhook-id: e1\r\ncontent-type: application/json\r\nuser-agent: ua/1\r\ncontent-length: 2\r\n\r\n{}');
  assert.throws(() => headerLines({ 'user-agent': 'a\nb' }), { message: 'the header "user-agent" cannot be sent' });
});

/** A node:http server on 127.0.0.1 counting connections and requests; `answer` writes each answer. */
async function httpServer(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<{ url: string; connections: () => number; requests: string[]; close: () => Promise<void> }> {
  let connections = 0;
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => { requests.push(body); answer(req, res); });
  });
  server.on('connection', () => { connections++; });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`,
    connections: () => connections, requests,
    close: () => { server.closeAllConnections(); return new Promise((ok) => server.close(() => ok())); },
  };
}

/** A raw TCP server: `onRequest(socket, n)` is called for the n-th request (1-based, per connection) once its head and body are in. */
async function rawServer(onRequest: (socket: net.Socket, n: number) => void): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buf = '';
    let n = 0;
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end === -1) return;
        const length = Number(/content-length: (\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        buf = buf.slice(end + 4 + length);
        onRequest(socket, ++n);
      }
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`,
    connections: () => connections,
    close: () => { for (const s of sockets) s.destroy(); return new Promise((ok) => server.close(() => ok())); },
  };
}

const opts = (pool?: ConnectionPool) => ({ timeoutMs: 5000, allowPrivate: true, pool });
const ADDR = [{ address: '127.0.0.1', family: 4 }];

test('keep-alive: twenty attempts in a row go over one connection, each body whole', async () => {
  const s = await httpServer((_q, res) => res.writeHead(200, { 'content-length': '7' }).end('thanks!'));
  const pool = new ConnectionPool();
  try {
    for (let i = 0; i < 20; i++) {
      const out = await sendAttempt(s.url, `{"n":${i}}`, { 'webhook-id': `evt_${i}` }, opts(pool));
      assert.deepEqual({ ...out, durationMs: 0 }, { ok: true, status: 200, error: null, durationMs: 0 });
    }
    assert.equal(s.connections(), 1);
    assert.deepEqual(s.requests, Array.from({ length: 20 }, (_, i) => `{"n":${i}}`));
    assert.equal(pool.size, 1);
  } finally { pool.close(); await s.close(); }
});

test('an attempt takes its URL as text or parsed once (the worker parses an endpoint\'s URL per pool); text that does not parse is an outcome', async () => {
  const seen: string[] = [];
  const s = await httpServer((q, res) => { seen.push(`${q.method} ${q.url} ${q.headers['content-type']} ${q.headers['user-agent']}`); res.writeHead(204).end(); });
  try {
    const parsed = new URL('/other?a=1', s.url);
    for (let i = 0; i < 2; i++) assert.equal((await sendAttempt(parsed, '{}', {}, opts())).ok, true, 'the same URL object, twice');
    assert.equal(parsed.href, new URL('/other?a=1', s.url).href, 'left as it was');
    assert.deepEqual(seen, Array(2).fill('POST /other?a=1 application/json support-workspace-webhooks/1.0'));
    const bad = await sendAttempt('not a url', '{}', {}, opts());
    assert.deepEqual([bad.ok, bad.status, bad.error], [false, null, 'the endpoint URL is not a valid URL']);
  } finally { await s.close(); }
});

test('chunked answers and 204s leave the connection reusable; Connection: close and no pool do not', async () => {
  let mode = 'chunked';
  const s = await httpServer((_q, res) => {
    if (mode === 'chunked') { res.writeHead(200); res.write('part one,'); res.end('part two'); } else if (mode === '204') res.writeHead(204).end();
    else res.writeHead(200, { connection: 'close', 'content-length': '2' }).end('ok');
  });
  const pool = new ConnectionPool();
  try {
    for (const m of ['chunked', 'chunked', '204', '204']) { mode = m; assert.equal((await sendAttempt(s.url, '{}', {}, opts(pool))).ok, true); }
    assert.equal(s.connections(), 1, 'chunked and 204 kept the connection');
    mode = 'close';
    for (let i = 0; i < 3; i++) assert.equal((await sendAttempt(s.url, '{}', {}, opts(pool))).ok, true);
    assert.equal(s.connections(), 3, 'each Connection: close answer ended its connection (the kept one carried the first)');
    mode = '204';
    for (let i = 0; i < 3; i++) assert.equal((await sendAttempt(s.url, '{}', {}, opts())).ok, true);
    assert.equal(s.connections(), 6, 'without a pool every attempt has a connection of its own');
  } finally { pool.close(); await s.close(); }
});

test('a receiver that closes an idle connection as the next attempt goes out: the attempt is made once more on a new connection', async () => {
  // The second request on each connection is met by a close without an answer (the race of a
  // keep-alive timeout on the receiver's side).
  const s = await rawServer((socket, n) => { if (n === 1) socket.write('HTTP/1.1 204 No Content\r\n\r\n'); else socket.destroy(); });
  const pool = new ConnectionPool();
  try {
    for (let i = 0; i < 3; i++) {
      const out = await sendAttempt(s.url, '{}', {}, opts(pool));
      assert.equal(out.status, 204, `attempt ${i}: ${out.error}`);
    }
    assert.equal(s.connections(), 3, 'one new connection for each attempt after the first');
  } finally { pool.close(); await s.close(); }
});

test('a connection that closes before any answer is not retried when it was new', async () => {
  const s = await rawServer((socket) => socket.destroy());
  try {
    const out = await sendAttempt(s.url, '{}', {}, opts(new ConnectionPool()));
    assert.deepEqual({ ...out, durationMs: 0 }, { ok: false, status: null, error: "the endpoint's answer is not valid HTTP/1.1: the connection closed before an answer came", retryAfter: undefined, durationMs: 0 });
    assert.equal(s.connections(), 1);
  } finally { await s.close(); }
});

test('the pool: a connection is taken again only to a checked address and within its idle time (instants injected)', async () => {
  const s = await httpServer((_q, res) => res.writeHead(204).end());
  const pool = new ConnectionPool();
  try {
    assert.equal((await sendAttempt(s.url, '{}', {}, opts(pool))).ok, true);
    assert.equal(pool.size, 1);
    const now = performance.now();
    const c = pool.take(ADDR, now);
    assert.ok(typeof c === 'object', 'taken: same address, just idle');
    assert.equal(c.behind, false);
    pool.give(c.c, now);
    assert.equal(pool.take([{ address: '127.0.0.2', family: 4 }], now), 'open', 'not to an address the check did not return');
    assert.equal(pool.size, 0, 'and it was closed');
    assert.equal((await sendAttempt(s.url, '{}', {}, opts(pool))).ok, true);
    const later = performance.now();
    assert.equal(pool.take(ADDR, later + IDLE_MS + 1), 'open', 'not once idle past its time');
    assert.equal(s.connections(), 2);
  } finally { pool.close(); await s.close(); }
});

test("the pool: a receiver's shorter Keep-Alive timeout wins, less one second; timeout=1 keeps nothing", async () => {
  let hint = 'timeout=3';
  const s = await httpServer((_q, res) => res.writeHead(204, { 'keep-alive': hint }).end());
  const pool = new ConnectionPool();
  try {
    assert.equal((await sendAttempt(s.url, '{}', {}, opts(pool))).ok, true);
    const now = performance.now();
    assert.equal(pool.take(ADDR, now + 2100), 'open', 'idle 2.1 s of a 3 s hint: closed');
    assert.equal((await sendAttempt(s.url, '{}', {}, opts(pool))).ok, true);
    const c = pool.take(ADDR, performance.now() + 1900);
    assert.ok(typeof c === 'object', 'idle 1.9 s of a 3 s hint: taken');
    pool.give(c.c, performance.now());
    hint = 'max=5, timeout=1';
    pool.close();
    const next = new ConnectionPool();
    assert.equal((await sendAttempt(s.url, '{}', {}, opts(next))).ok, true);
    assert.equal(next.size, 0);
  } finally { pool.close(); await s.close(); }
});

test('a body that never ends: the outcome is the status line, the time limit then closes the connection, which is not reused', async () => {
  const s = await rawServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial'));
  const pool = new ConnectionPool();
  try {
    const out = await sendAttempt(s.url, '{}', {}, { timeoutMs: 100, allowPrivate: true, pool });
    assert.equal(out.ok, true);
    assert.equal(pool.size, 0);
    const again = await sendAttempt(s.url, '{}', {}, { timeoutMs: 100, allowPrivate: true, pool });
    assert.equal(again.ok, true);
    assert.equal(s.connections(), 2, 'the cut connection was never given back');
  } finally { pool.close(); await s.close(); }
});

test('malformed and oversized answers fail with what was wrong; a refused port and no answer in time too', async () => {
  const big = await rawServer((socket) => socket.write(`HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
  const silent = await rawServer(() => {});
  const closedPort = await rawServer(() => {});
  await closedPort.close();
  try {
    const a = await sendAttempt(big.url, '{}', {}, opts(new ConnectionPool()));
    assert.equal(a.error, `the endpoint's answer is not valid HTTP/1.1: the answer's status line and headers exceed ${MAX_HEAD_BYTES} bytes`);
    const b = await sendAttempt(closedPort.url, '{}', {}, opts());
    assert.equal(b.error, 'could not connect to the endpoint: ECONNREFUSED');
    const c = await sendAttempt(silent.url, '{}', {}, { timeoutMs: 50, allowPrivate: true });
    assert.equal(c.error, 'no answer within 50 ms');
  } finally { await big.close(); await silent.close(); }
});

test('a redirect is not followed; 429 and 503 bring their Retry-After', async () => {
  let answer: [number, Record<string, string>] = [302, { location: 'http://127.0.0.1:1/elsewhere' }];
  const s = await httpServer((_q, res) => res.writeHead(...answer).end());
  const pool = new ConnectionPool();
  try {
    const r = await sendAttempt(s.url, '{}', {}, opts(pool));
    assert.deepEqual([r.ok, r.status, r.error], [false, 302, 'the endpoint answered HTTP 302 Found; redirects are not followed']);
    answer = [503, { 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' }];
    const u = await sendAttempt(s.url, '{}', {}, opts(pool));
    assert.deepEqual([u.status, u.error, u.retryAfter], [503, 'the endpoint answered HTTP 503 Service Unavailable', 'Wed, 21 Oct 2026 07:28:00 GMT']);
    answer = [500, { 'retry-after': '5' }];
    assert.equal((await sendAttempt(s.url, '{}', {}, opts(pool))).retryAfter, undefined, 'read on 429 and 503 only');
    assert.equal(s.connections(), 1);
  } finally { pool.close(); await s.close(); }
});

test('HTTPS: kept alive with a trusted certificate; an untrusted one or one for another name is refused', async () => {
  let connections = 0;
  const server = https.createServer({ cert: CERT, key: KEY }, (req, res) => { req.resume(); req.on('end', () => res.writeHead(204).end()); });
  server.on('secureConnection', () => { connections++; });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as net.AddressInfo).port;
  const pool = new ConnectionPool();
  try {
    for (let i = 0; i < 5; i++) {
      const out = await sendAttempt(`https://localhost:${port}/hook`, '{}', {}, { ...opts(pool), ca: CERT });
      assert.equal(out.status, 204, String(out.error));
    }
    assert.equal(connections, 1, 'one TLS connection for five attempts');
    const untrusted = await sendAttempt(`https://localhost:${port}/hook`, '{}', {}, opts());
    assert.equal(untrusted.error, 'could not connect to the endpoint: DEPTH_ZERO_SELF_SIGNED_CERT');
    const wrongName = await sendAttempt(`https://127.0.0.1:${port}/hook`, '{}', {}, { ...opts(), ca: CERT });
    assert.equal(wrongName.error, 'could not connect to the endpoint: ERR_TLS_CERT_ALTNAME_INVALID');
  } finally { pool.close(); server.closeAllConnections(); await new Promise((ok) => server.close(ok)); }
});

test('answers arriving in pieces on two connections at once, all read through one buffer: each exchange gets its own bytes', async () => {
  const held: net.Socket[] = [];
  const a = await rawServer((socket) => { held[0] = socket; });
  const b = await rawServer((socket) => { held[1] = socket; });
  const [poolA, poolB] = [new ConnectionPool(), new ConnectionPool()];
  const turns = async (): Promise<void> => { for (let i = 0; i < 20; i++) await new Promise((go) => setImmediate(go)); };
  try {
    const outA = sendAttempt(a.url, '{"to":"a"}', {}, opts(poolA));
    const outB = sendAttempt(b.url, '{"to":"b"}', {}, opts(poolB));
    while (held[0] === undefined || held[1] === undefined) await turns();
    // Each piece lands on the client while the other connection's partial line is kept.
    for (const [i, piece] of [[0, 'HTTP/1.1 20'], [1, 'HTTP/1.1 503 Serv'], [0, '4 No Con'], [1, 'ice Unavailable\r\nRetry-Aft'], [0, 'tent\r\nX-A: '], [1, 'er: 7\r\nContent-Length: 0\r\n\r\n'], [0, 'aaaa\r\n\r\n']] as const) {
      held[i].write(piece);
      await turns();
    }
    assert.deepEqual({ ...await outA, durationMs: 0 }, { ok: true, status: 204, error: null, durationMs: 0 });
    assert.deepEqual({ ...await outB, durationMs: 0 }, { ok: false, status: 503, error: 'the endpoint answered HTTP 503 Service Unavailable', retryAfter: '7', durationMs: 0 });
    assert.deepEqual([poolA.size, poolB.size], [1, 1], 'both connections kept');
  } finally { poolA.close(); poolB.close(); await a.close(); await b.close(); }
});

test('answer reader: two answers in one read — the first takes its own bytes and says where the next begins', () => {
  const two = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 204 No Content\r\n\r\n', 'latin1');
  const first = new AnswerReader();
  const used = first.feed(two);
  assert.deepEqual([first.head?.status, first.state, used], [200, 'done', 40]);
  const second = new AnswerReader();
  assert.equal(second.feed(two.subarray(used)), two.length - used);
  assert.deepEqual([second.head?.status, second.state], [204, 'done']);
});

/**
 * A raw TCP server for pipelining: `onRead(socket, requests, conn)` is called for each read with
 * the requests it completed (their bodies, in order; `conn` counts connections from 1);
 * `reads[conn - 1]` lists how many requests each read completed.
 */
async function pipeServer(onRead: (socket: net.Socket, bodies: string[], conn: number) => void): Promise<{ url: string; reads: number[][]; bodies: string[][]; close: () => Promise<void> }> {
  const reads: number[][] = [];
  const bodies: string[][] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    const conn = reads.push([]);
    bodies.push([]);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buf = '';
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      const got: string[] = [];
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end === -1) break;
        const length = Number(/content-length: (\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
        if (buf.length < end + 4 + length) break;
        got.push(buf.slice(end + 4, end + 4 + length));
        buf = buf.slice(end + 4 + length);
      }
      if (got.length === 0) return;
      reads[conn - 1].push(got.length);
      bodies[conn - 1].push(...got);
      onRead(socket, got, conn);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`, reads, bodies,
    close: () => { for (const s of sockets) s.destroy(); return new Promise((ok) => server.close(() => ok())); },
  };
}

/** `n` attempts started in one turn (so written together), bodies `{"n":from}`, `{"n":from+1}`…; their outcomes' statuses or errors. */
async function together(url: string, pool: ConnectionPool, from: number, n: number, timeoutMs = 5000): Promise<Array<number | string | null>> {
  const outs = await Promise.all(Array.from({ length: n }, (_, i) => sendAttempt(url, `{"n":${from + i}}`, {}, { timeoutMs, allowPrivate: true, pool })));
  return outs.map((o) => (o.ok ? o.status : o.error));
}

test('pipelining: once a connection has answered, attempts started together go behind each other on it in one write, and each gets its own answer, in order', async () => {
  // Every read's requests are answered in one write, each with its own status (200–203 in turn:
  // 204 would have no body) and a body of 0–2 bytes, so the answers' bytes must be split
  // between the exchanges.
  let n = 0;
  const s = await pipeServer((socket, got) => socket.write(got.map(() => { const body = 'x'.repeat(n % 3); return `HTTP/1.1 20${n++ % 4} OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`; }).join('')));
  const pool = new ConnectionPool(8);
  try {
    assert.deepEqual(await together(s.url, pool, 0, 1), [200], 'the first, alone: the connection is new');
    // The stream's writes, counted on the socket class: one vectored write for the seven.
    const proto = net.Socket.prototype as unknown as { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
    const [write, writev] = [proto._write, proto._writev];
    const calls: number[] = [];
    proto._write = function (this: unknown, ...a: unknown[]) { calls.push(1); return write.apply(this, a); };
    proto._writev = function (this: unknown, ...a: unknown[]) { calls.push((a[0] as unknown[]).length); return writev.apply(this, a); };
    let outs: Promise<Array<number | string | null>>;
    try { outs = together(s.url, pool, 1, 7); await new Promise((go) => setImmediate(go)); } finally { proto._write = write; proto._writev = writev; }
    assert.deepEqual(calls, [7], 'the seven requests left in one write');
    assert.deepEqual(await outs, [201, 202, 203, 200, 201, 202, 203]);
    assert.equal(s.reads.length, 1, 'one connection');
    assert.deepEqual(s.bodies[0], Array.from({ length: 8 }, (_, i) => `{"n":${i}}`), 'the requests whole and in order');
    assert.equal(pool.size, 1, 'the connection kept once every answer was read');
  } finally { pool.close(); await s.close(); }
});

test('pipelining: at most the depth await their answers on one connection; past it a new connection is opened', async () => {
  const s = await pipeServer((socket, got) => socket.write(got.map(() => 'HTTP/1.1 204 No Content\r\n\r\n').join('')));
  const pool = new ConnectionPool(3);
  try {
    assert.deepEqual(await together(s.url, pool, 0, 1), [204]);
    assert.deepEqual(await together(s.url, pool, 1, 5), Array(5).fill(204));
    assert.deepEqual(s.bodies.map((b) => b.length), [4, 1, 1], 'three on the connection that had answered; the next two on new ones, which had not');
  } finally { pool.close(); await s.close(); }
});

test('pipelining: a connection that ends with answers still awaited — each attempt that got none is made again, alone, on a new connection', async () => {
  // The first connection answers its first two requests, then closes; later ones answer all.
  const s = await pipeServer((socket, got, conn) => {
    if (conn > 1) { socket.write(got.map(() => 'HTTP/1.1 204 No Content\r\n\r\n').join('')); return; }
    const answered = s.bodies[0].length - got.length;
    const take = Math.max(0, 2 - answered);
    socket.write(got.slice(0, take).map(() => 'HTTP/1.1 204 No Content\r\n\r\n').join(''));
    if (answered + got.length > 2) socket.end();
  });
  const pool = new ConnectionPool(8);
  try {
    assert.deepEqual(await together(s.url, pool, 0, 1), [204]);
    assert.deepEqual(await together(s.url, pool, 1, 4), Array(4).fill(204), 'every attempt succeeded');
    assert.deepEqual(s.bodies[0], ['{"n":0}', '{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}'], 'all four went behind the first on its connection');
    assert.deepEqual(s.bodies.slice(1).flat().sort(), ['{"n":2}', '{"n":3}', '{"n":4}'], 'the three left unanswered were made again');
    assert.deepEqual(s.bodies.slice(1).map((b) => b.length), [1, 1, 1], 'each alone on a connection of its own');
  } finally { pool.close(); await s.close(); }
});

test('pipelining: a receiver that leaves requests written behind another unanswered — the next one fails at its time limit, the rest are made again, and the pool sends one at a time from then on', async (t) => {
  // A receiver that answers only the first request of each read and drops the rest.
  const s = await pipeServer((socket) => socket.write('HTTP/1.1 204 No Content\r\n\r\n'));
  const pool = new ConnectionPool(8);
  t.mock.timers.enable({ apis: ['setTimeout'] });
  try {
    assert.deepEqual(await together(s.url, pool, 0, 1), [204]);
    const send = (n: number) => sendAttempt(s.url, `{"n":${n}}`, {}, { timeoutMs: 1000, allowPrivate: true, pool }).then((o) => (o.ok ? o.status : o.error));
    const outs = [send(1), send(2), send(3)];
    assert.equal(await outs[0], 204, 'the first of the read is answered');
    t.mock.timers.tick(1000); // the second's time limit, started when the first's answer was read
    assert.deepEqual(await Promise.all(outs), [204, 'no answer within 1000 ms', 204]);
    assert.equal(pool.depth, 1, 'no more pipelining to this receiver');
    assert.deepEqual(await together(s.url, pool, 4, 3), [204, 204, 204], 'one a connection: each is the first of its read');
  } finally { pool.close(); await s.close(); }
});

test('pipelining: the time limit of a request behind others starts once the answers before it are read', async (t) => {
  const held: net.Socket[] = [];
  let first = true;
  const s = await pipeServer((socket) => { if (first) { first = false; socket.write('HTTP/1.1 204 No Content\r\n\r\n'); } else held.push(socket); });
  const pool = new ConnectionPool(8);
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const turns = async (): Promise<void> => { for (let i = 0; i < 20; i++) await new Promise((go) => setImmediate(go)); };
  try {
    assert.deepEqual(await together(s.url, pool, 0, 1), [204]);
    let settled = 0;
    const send = (n: number) => sendAttempt(s.url, `{"n":${n}}`, {}, { timeoutMs: 450, allowPrivate: true, pool }).then((o) => (o.ok ? o.status : o.error));
    const a = send(1);
    const b = send(2).finally(() => settled++);
    while (held.length === 0) await turns();
    t.mock.timers.tick(300);
    held[0].write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'); // the first of the two, at 300 ms
    assert.equal(await a, 200);
    t.mock.timers.tick(300); // 600 ms after both were written; 300 ms after the second came to the head
    await turns();
    assert.equal(settled, 0, 'the second has not failed: its limit runs from 300 ms');
    held[0].write('HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n');
    assert.equal(await b, 201);
  } finally { pool.close(); await s.close(); }
});

test('pipelining: below its limit a pool opens a new connection rather than put a request behind one written in an earlier turn (a slow receiver keeps its connections in parallel); at the limit, behind', async () => {
  const held = new Map<net.Socket, number>();
  let first = true;
  const s = await pipeServer((socket, got) => {
    if (first) { first = false; socket.write('HTTP/1.1 204 No Content\r\n\r\n'); return; }
    held.set(socket, (held.get(socket) ?? 0) + got.length);
  });
  const pool = new ConnectionPool(8, 3);
  const turns = async (): Promise<void> => { for (let i = 0; i < 20; i++) await new Promise((go) => setImmediate(go)); };
  try {
    assert.deepEqual(await together(s.url, pool, 0, 1), [204]);
    const outs: Array<Promise<Array<number | string | null>>> = [];
    for (let i = 1; i <= 4; i++) {
      outs.push(together(s.url, pool, i, 1)); // each in a turn of its own
      while ([...held.values()].reduce((a, b) => a + b, 0) < i) await turns();
    }
    assert.deepEqual(s.bodies, [['{"n":0}', '{"n":1}', '{"n":4}'], ['{"n":2}'], ['{"n":3}']], 'the 2nd and 3rd on new connections; the 4th, at the limit of 3, behind the 1st');
    for (const [socket, n] of held) socket.write('HTTP/1.1 204 No Content\r\n\r\n'.repeat(n));
    assert.deepEqual((await Promise.all(outs)).flat(), [204, 204, 204, 204]);
  } finally { pool.close(); await s.close(); }
});

test('pipelining: the requests made again after their connection ended keep the pool\'s bound of connections in use, waiting for a free one', async () => {
  // The first connection answers its first request, then ends with eight more awaited; the
  // others answer at once.
  let open = 0;
  let most = 0;
  const s = await pipeServer((socket, got, conn) => {
    if (conn === 1 && s.bodies[0].length > 1) { socket.end(); return; }
    socket.write(got.map(() => 'HTTP/1.1 204 No Content\r\n\r\n').join(''));
  });
  const pool = new ConnectionPool(16, 2);
  const watch = setInterval(() => {}, 1000);
  try {
    assert.deepEqual(await together(s.url, pool, 0, 1), [204]);
    const outs = together(s.url, pool, 1, 8);
    const track = setInterval(() => { open = connectionsInUse(); most = Math.max(most, open); }, 0);
    try { assert.deepEqual(await outs, Array(8).fill(204)); } finally { clearInterval(track); }
    assert.deepEqual(s.bodies[0].length, 9, 'all eight went behind the first');
    assert.ok(s.reads.length <= 3, `made again on at most the 2 connections of the bound (connections: ${s.reads.length})`);
    assert.deepEqual(s.bodies.slice(1).flat().sort(), Array.from({ length: 8 }, (_, i) => `{"n":${i + 1}}`).sort(), 'each made again once');
    assert.ok(most <= 2, `at most 2 in use at once (${most})`);
    assert.equal(connectionsInUse(), 0);
  } finally { clearInterval(watch); pool.close(); await s.close(); }
});

test('the bound over every pool (WEBHOOK_CONCURRENCY): past it a request waits for a connection to be freed, then goes out', async () => {
  const held: net.Socket[] = [];
  const s = await pipeServer((socket) => { held.push(socket); });
  const [a, b] = [new ConnectionPool(1, 16), new ConnectionPool(1, 16)];
  setConnectionLimit(2);
  const turns = async (): Promise<void> => { for (let i = 0; i < 20; i++) await new Promise((go) => setImmediate(go)); };
  try {
    const first = together(s.url, a, 0, 2);
    const waiting = together(s.url, b, 2, 1);
    while (held.length < 2) await turns();
    await turns();
    assert.equal(held.length, 2, 'the third waits: two connections in use over both pools');
    assert.equal(connectionsInUse(), 2);
    held[0].write('HTTP/1.1 204 No Content\r\n\r\n');
    while (held.length < 3) await turns();
    for (const h of held.slice(1)) h.write('HTTP/1.1 204 No Content\r\n\r\n');
    assert.deepEqual([...await first, ...await waiting], [204, 204, 204]);
    assert.equal(connectionsInUse(), 0);
  } finally { setConnectionLimit(Infinity); a.close(); b.close(); await s.close(); }
});

test('an attempt is made again once, not more: two kept connections the receiver has closed mean one failed attempt', async () => {
  // Each connection answers its first request and closes on the next without an answer.
  const s = await rawServer((socket, n) => { if (n === 1) socket.write('HTTP/1.1 204 No Content\r\n\r\n'); else socket.destroy(); });
  const pool = new ConnectionPool();
  try {
    assert.deepEqual(await together(s.url, pool, 0, 2), [204, 204], 'two connections, each answered once');
    assert.equal(pool.size, 2);
    const out = await sendAttempt(s.url, '{}', {}, opts(pool));
    assert.equal(out.error, "the endpoint's answer is not valid HTTP/1.1: the connection closed before an answer came", 'made on the first kept connection, then once more on the second');
    assert.equal(s.connections(), 2, 'no third connection: made again once');
  } finally { pool.close(); await s.close(); }
});
