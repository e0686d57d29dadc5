/**
 * One delivery attempt on node:http's agents (src/areas/webhooks/send.ts,
 * docs/api.md#webhook-deliveries), against real loopback receivers: keep-alive, one request at
 * a time per connection, a connection key holding the checked addresses, the outcome read at
 * the status line, and the bounds on what a hostile receiver makes an attempt read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import type net from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_BODY_BYTES, MAX_HEAD_BYTES, sendAttempt, startAttempt,
  type AttemptSettings } from '../src/areas/webhooks/send.js';
import { DeliveryAgents } from '../src/areas/webhooks/connections.js';
import { flood, httpServer, rawServer } from './helpers/rawReceivers.js';

const FIXTURES = join(import.meta.dirname, 'fixtures', 'tls');
const CERT = readFileSync(join(FIXTURES, 'localhost.crt'));
const KEY = readFileSync(join(FIXTURES, 'localhost.key'));

/** Settings with agents of their own (closed by `done`), or none. */
function settings(agents?: DeliveryAgents, timeoutMs = 5000): AttemptSettings { return { timeoutMs, allowPrivate: true,
  agents }; }
const zero = <T extends { durationMs: number }>(o: T): T => ({ ...o, durationMs: 0 });

test('keep-alive: twenty attempts in a row go over one connection, each body whole', async () => {
  const s = await httpServer((_q, res) => res.writeHead(200, { 'content-length': '7' }).end('thanks!'));
  const agents = new DeliveryAgents(4, 16);
  try {
    for (let i = 0; i < 20; i++) {
      const out = await sendAttempt(s.url, `{"n":${i}}`, { 'webhook-id': `evt_${i}` }, settings(agents));
      assert.deepEqual(zero(out), { ok: true, status: 200, error: null, durationMs: 0 });
    }
    assert.equal(s.connections(), 1);
    assert.deepEqual(s.requests, Array.from({ length: 20 }, (_, i) => `{"n":${i}}`));
  } finally { agents.destroy(); await s.close(); }
});

test('the request: POST to the path and query, JSON with our user agent; a URL that does not parse is an outcome',
  async () => {
  const seen: string[] = [];
  const s = await httpServer((q, res) => {
    const h = q.headers;
    seen.push(`${q.method} ${q.url} ${h['content-type']} ${h['user-agent']} ${h['webhook-id']}`);
    res.writeHead(204).end();
  });
  try {
    const parsed = new URL('/other?a=1', s.url);
    assert.equal((await sendAttempt(parsed, '{}', { 'webhook-id': 'evt_1' }, settings())).ok, true);
    assert.deepEqual(seen, ['POST /other?a=1 application/json support-workspace-webhooks/1.0 evt_1']);
    const bad = await sendAttempt('not a url', '{}', {}, settings());
    assert.deepEqual([bad.ok, bad.status, bad.error], [false, null, 'the endpoint URL is not a valid URL']);
  } finally { await s.close(); }
});

test('one request at a time per connection: 8 attempts at once to a bound of 2 use 2 connections, one request on each',
  async () => {
  // Answers are held until two requests are open at once: each pair is answered together.
  let most = 0;
  let overlap = false;
  const open = new Map<net.Socket, () => void>();
  const s = await httpServer((q, res) => {
    if (open.has(q.socket)) overlap = true;
    open.set(q.socket, () => res.writeHead(204).end());
    most = Math.max(most, open.size);
    if (open.size < 2) return;
    const answers = [...open.values()];
    open.clear();
    for (const a of answers) a();
  });
  const agents = new DeliveryAgents(2, 16);
  try {
    const outs = await Promise.all(Array.from({ length: 8 }, (_, i) => sendAttempt(s.url, `{"n":${i}}`, {},
      settings(agents))));
    assert.deepEqual(outs.map((o) => o.status), Array(8).fill(204));
    assert.equal(s.connections(), 2);
    assert.equal(most, 2);
    assert.equal(overlap, false);
  } finally { agents.destroy(); await s.close(); }
});

test('a connection is reused only for the same endpoint and checked addresses: another endpoint or address has its own',
  async () => {
  const s = await httpServer((_q, res) => res.writeHead(204).end());
  const agents = new DeliveryAgents(4, 16);
  const url = new URL(s.url);
  const localhost = new URL(s.url.replace('127.0.0.1', 'localhost'));
  try {
    for (const [endpoint, u] of [['e1', url], ['e1', url], ['e2', url], ['e1', localhost], ['e1', url]] as const) {
      const o = await startAttempt(endpoint, u, Buffer.from('{}'), {}, settings(agents)).outcome;
      assert.equal(o.status, 204, String(o.error));
    }
    // e1 at 127.0.0.1 (kept, used thrice), e2 at 127.0.0.1, e1 at localhost's addresses.
    assert.equal(s.connections(), 3);
    agents.forget('e1');
    await startAttempt('e1', url, Buffer.from('{}'), {}, settings(agents)).outcome;
    assert.equal(s.connections(), 4, 'forgotten: its idle connections were closed');
  } finally { agents.destroy(); await s.close(); }
});

test('a receiver that closes a kept connection as the next attempt goes out: it is made once more on a new one',
  async () => {
  const s = await rawServer((socket,
    n) => { if (n === 1) socket.write('HTTP/1.1 204 No Content\r\n\r\n'); else socket.destroy(); });
  const agents = new DeliveryAgents(4, 16);
  try {
    for (let i = 0; i < 3; i++) {
      const out = await sendAttempt(s.url, '{}', {}, settings(agents));
      assert.equal(out.status, 204, `attempt ${i}: ${out.error}`);
    }
    assert.equal(s.connections(), 3, 'one new connection for each attempt after the first');
  } finally { agents.destroy(); await s.close(); }
});

test('a new connection that closes before any answer fails the attempt, once', async () => {
  const s = await rawServer((socket) => socket.destroy());
  const agents = new DeliveryAgents(4, 16);
  try {
    const out = await sendAttempt(s.url, '{}', {}, settings(agents));
    assert.deepEqual([out.ok, out.status, out.error], [false, null,
      'the connection ended before an answer: ECONNRESET']);
    assert.equal(s.connections(), 1);
  } finally { agents.destroy(); await s.close(); }
});

test('a redirect is not followed; 429 and 503 bring their Retry-After', async () => {
  let answer: [number, Record<string, string>] = [302, { location: 'http://127.0.0.1:1/elsewhere' }];
  const s = await httpServer((_q, res) => res.writeHead(...answer).end());
  const agents = new DeliveryAgents(4, 16);
  try {
    const r = await sendAttempt(s.url, '{}', {}, settings(agents));
    assert.deepEqual([r.ok, r.status, r.error], [false, 302,
      'the endpoint answered HTTP 302 Found; redirects are not followed']);
    answer = [503, { 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' }];
    const u = await sendAttempt(s.url, '{}', {}, settings(agents));
    assert.deepEqual([u.status, u.error, u.retryAfter], [503, 'the endpoint answered HTTP 503 Service Unavailable',
      'Wed, 21 Oct 2026 07:28:00 GMT']);
    answer = [500, { 'retry-after': '5' }];
    assert.equal((await sendAttempt(s.url, '{}', {}, settings(agents))).retryAfter, undefined,
      'read on 429 and 503 only');
    assert.equal(s.connections(), 1);
  } finally { agents.destroy(); await s.close(); }
});

test('broken answers fail with what was wrong; a refused port and no answer in time too', async () => {
  const garbage = await rawServer((socket) => socket.write('SMTP ready\r\n\r\n'));
  const silent = await rawServer(() => {});
  const closedPort = await rawServer(() => {});
  await closedPort.close();
  try {
    const a = await sendAttempt(garbage.url, '{}', {}, settings());
    assert.match(String(a.error), /^the endpoint's answer is not valid HTTP\/1\.1: HPE_/);
    const b = await sendAttempt(closedPort.url, '{}', {}, settings());
    assert.equal(b.error, 'could not connect to the endpoint: ECONNREFUSED');
    const c = await sendAttempt(silent.url, '{}', {}, settings(undefined, 100));
    assert.equal(c.error, 'no answer within 100 ms');
  } finally { await garbage.close(); await silent.close(); }
});

test('a body that never ends: the outcome is the status line, the time limit then closes the connection, not reused',
  async () => {
  const s = await rawServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial'));
  const agents = new DeliveryAgents(4, 16);
  try {
    for (let i = 0; i < 2; i++) assert.equal((await sendAttempt(s.url, '{}', {}, settings(agents, 100))).status, 200);
    assert.equal(s.connections(), 2, 'the cut connection was never given back');
  } finally { agents.destroy(); await s.close(); }
});

test(`hostile: a flood of 100 Continue interim answers is cut at ${MAX_HEAD_BYTES} bytes of head`, async () => {
  const s = await rawServer((socket) => flood(socket, 'HTTP/1.1 100 Continue\r\n\r\n', 64 * 1024 * 1024));
  const agents = new DeliveryAgents(4, 16);
  try {
    const closed = s.closed();
    const out = await sendAttempt(s.url, '{}', {}, settings(agents));
    assert.deepEqual([out.ok, out.status, out.error], [false, null,
      `the endpoint's answer head is over ${MAX_HEAD_BYTES} bytes (interim answers included)`]);
    await closed;
    assert.ok(s.bytesWritten() < 64 * 1024 * 1024, 'the receiver could not write its whole flood');
  } finally { agents.destroy(); await s.close(); }
});

test(`hostile: a header line over ${MAX_HEAD_BYTES} bytes, and many interim answers with a large final head, fail`,
  async () => {
  const big = await rawServer((socket) => socket.write(`HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
  const interim = 'HTTP/1.1 100 Continue\r\n\r\n'.repeat(400);
  const final = `HTTP/1.1 200 OK\r\nX-Pad: ${'b'.repeat(8000)}\r\nContent-Length: 0\r\n\r\n`;
  const mixed = await rawServer((socket) => socket.write(interim + final));
  try {
    const a = await sendAttempt(big.url, '{}', {}, settings());
    assert.equal(a.error, `the endpoint's answer head is over ${MAX_HEAD_BYTES} bytes`);
    const b = await sendAttempt(mixed.url, '{}', {}, settings());
    assert.deepEqual([b.ok, b.error], [false,
      `the endpoint's answer head is over ${MAX_HEAD_BYTES} bytes (interim answers included)`]);
  } finally { await big.close(); await mixed.close(); }
});

test(`hostile: a body past ${MAX_BODY_BYTES} bytes is not read on: the outcome stands and the connection is closed`,
  async () => {
  const s = await rawServer((socket) => {
    socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
    flood(socket, `4000\r\n${'x'.repeat(0x4000)}\r\n`, 64 * 1024 * 1024);
  });
  const agents = new DeliveryAgents(4, 16);
  try {
    const closed = s.closed();
    const out = await sendAttempt(s.url, '{}', {}, settings(agents));
    assert.deepEqual(zero(out), { ok: true, status: 200, error: null, durationMs: 0 });
    await closed;
    assert.ok(s.bytesWritten() < 64 * 1024 * 1024, 'the receiver could not write its whole flood');
    assert.equal((await sendAttempt(s.url, '{}', {}, settings(agents))).status, 200);
    assert.equal(s.connections(), 2, 'the flooded connection was not reused');
  } finally { agents.destroy(); await s.close(); }
});

test('a body within the bound is read to its end and the connection kept', async () => {
  const s = await httpServer((_q, res) => res.writeHead(200,
    { 'content-type': 'text/plain' }).end('y'.repeat(MAX_BODY_BYTES)));
  const agents = new DeliveryAgents(4, 16);
  try {
    for (let i = 0; i < 3; i++) assert.equal((await sendAttempt(s.url, '{}', {}, settings(agents))).ok, true);
    assert.equal(s.connections(), 1);
  } finally { agents.destroy(); await s.close(); }
});

test('stop: an attempt waiting for a connection is stopped unsent; one written can no longer be', async () => {
  const s = await rawServer(() => {}); // accepts, never answers
  const agents = new DeliveryAgents(1, 16);
  try {
    const first = startAttempt('e', new URL(s.url), Buffer.from('{}'), {}, settings(agents, 60_000));
    const second = startAttempt('e', new URL(s.url), Buffer.from('{}'), {}, settings(agents, 60_000));
    await new Promise<void>((ok) => { const check = () => (first.written ? ok() : setImmediate(check)); check(); });
    assert.equal(second.written, false, 'the bound of 1: the second waits for the agent');
    assert.equal(second.stop(), true);
    assert.deepEqual(await second.outcome, { ok: false, status: null, error: 'not sent', durationMs: 0,
      notSent: true });
    assert.equal(first.stop(), false, 'written: it goes on');
    first.cut();
    assert.equal((await first.outcome).error, 'the attempt was stopped');
    assert.equal(s.connections(), 1);
  } finally { agents.destroy(); await s.close(); }
});

test('HTTPS: kept alive with a trusted certificate; an untrusted one or one for another name is refused', async () => {
  let connections = 0;
  const server = https.createServer({ cert: CERT, key: KEY }, (req, res) => { req.resume(); req.on('end',
    () => res.writeHead(204).end()); });
  server.on('secureConnection', () => { connections++; });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as net.AddressInfo).port;
  const agents = new DeliveryAgents(4, 16);
  try {
    for (let i = 0; i < 5; i++) {
      const out = await sendAttempt(`https://localhost:${port}/hook`, '{}', {}, { ...settings(agents), ca: CERT });
      assert.equal(out.status, 204, String(out.error));
    }
    assert.equal(connections, 1, 'one TLS connection for five attempts');
    const untrusted = await sendAttempt(`https://localhost:${port}/hook`, '{}', {}, settings());
    assert.equal(untrusted.error, 'could not connect to the endpoint: DEPTH_ZERO_SELF_SIGNED_CERT');
    const wrongName = await sendAttempt(`https://127.0.0.1:${port}/hook`, '{}', {}, { ...settings(), ca: CERT });
    assert.equal(wrongName.error, 'could not connect to the endpoint: ERR_TLS_CERT_ALTNAME_INVALID');
  } finally { agents.destroy(); server.closeAllConnections(); await new Promise((ok) => server.close(ok)); }
});
