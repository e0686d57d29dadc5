/**
 * Hostile clients (docs/security.md#connections), over raw sockets against an in-process server: slow
 * headers and slow bodies cut off within the configured timeouts, a connection cap that sheds
 * the excess and recovers, idle connections that cost little memory and leak no descriptors,
 * a huge chunked body refused after the limit without buffering it, `Content-Encoding` → 415,
 * oversized headers → 431, invalid UTF-8 → 400 — exact bodies throughout.
 *
 * Nothing sleeps to let time pass: every wait is on a socket event with a bounded timeout. (The
 * slow clients do send a byte now and then — that is the attack, not a wait.)
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib';
import { startTestServer, type TestServer } from './helpers/server.js';
import { parseRawResponse, within, type RawResponse } from './helpers/raw.js';
import type { ConversationList } from './helpers/answers.js';

const MiB = 1024 * 1024;
const conversation = { subject: 'Printer on fire', customer: { email: 'ada@example.com' } };

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Resident memory after a full collection, so that garbage does not count as growth. */
function settledRss(): number {
  gc(); gc();
  return process.memoryUsage().rss;
}
const openFds = () => readdirSync('/proc/self/fd').length;

const servers: TestServer[] = [];
afterEach(async () => { for (const s of servers.splice(0)) await s.close(); });
async function server(env: Record<string, string> = {}): Promise<TestServer> {
  const srv = await startTestServer({ env, captureLogs: true });
  servers.push(srv);
  return srv;
}
const connections = (srv: TestServer) => new Promise<number>((resolve, reject) => srv.http.getConnections((e, n) => (e ? reject(e) : resolve(n))));

/** A raw client socket that records what the server sends and when it hangs up. */
class Client {
  data = Buffer.alloc(0);
  closed = false;
  readonly ended: Promise<void>;
  private waiters: Array<() => void> = [];
  private constructor(readonly sock: net.Socket) {
    sock.on('data', (d: Buffer) => { this.data = Buffer.concat([this.data, d]); this.poke(); });
    sock.on('error', () => { /* EPIPE/ECONNRESET once the server hangs up is expected */ });
    this.ended = new Promise((r) => sock.once('close', () => { this.closed = true; this.poke(); r(); }));
  }
  static async connect(port: number): Promise<Client> {
    const sock = net.connect(port, '127.0.0.1');
    const c = new Client(sock);
    await within(Promise.race([once(sock, 'connect'), c.ended]), 5000, 'a connection');
    return c;
  }
  private poke(): void { const w = this.waiters; this.waiters = []; for (const f of w) f(); }
  write(d: string | Buffer): boolean { return this.closed ? false : this.sock.write(d); }
  /** The first complete response, or undefined when the server closed without one. */
  response(timeoutMs = 10_000): Promise<RawResponse | undefined> {
    return within(new Promise<RawResponse | undefined>((resolve) => {
      const check = () => {
        const r = parse(this.data);
        if (r) resolve(r);
        else if (this.closed) resolve(undefined);
        else this.waiters.push(check);
      };
      check();
    }), timeoutMs, 'a response');
  }
  destroy(): void { this.sock.destroy(); }
}

const parse = (data: Buffer): RawResponse | undefined => parseRawResponse(data)?.response;

/** Sends one byte of `text` every `everyMs` until the server hangs up (or the text runs out). */
function drip(c: Client, text: string, everyMs: number): () => void {
  let i = 0;
  const timer = setInterval(() => { if (i < text.length) c.write(text[i++]); }, everyMs);
  return () => clearInterval(timer);
}

/** Milliseconds until `c` is closed by the server, bounded by `boundMs`. */
async function closedAfter(c: Client, since: number, boundMs: number): Promise<number> {
  await within(c.ended, boundMs, 'the server to cut the connection off');
  return performance.now() - since;
}

const postHead = (key: string, extra: string) =>
  `POST /api/v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${extra}\r\n`;

// ---------------------------------------------------------------- slow clients

test('slow headers (one byte every 200 ms, slowloris) are cut off within HEADERS_TIMEOUT_MS, and the server serves others meanwhile', async () => {
  const srv = await server({ HEADERS_TIMEOUT_MS: '1000' });
  const c = await Client.connect(srv.port);
  const started = performance.now();
  c.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  const stop = drip(c, 'X-Slow: ' + 'a'.repeat(1000), 200);
  try {
    const ok = await srv.call('GET', '/healthz', { key: null });
    assert.deepEqual({ status: ok.status, body: ok.body }, { status: 200, body: { status: 'ok' } });
    const ms = await closedAfter(c, started, 5000);
    assert.ok(ms < 2500, `cut off after ${Math.round(ms)} ms (timeout 1000 ms, checked every second)`);
    assert.equal(c.data.length, 0, 'no request was ever dispatched');
  } finally { stop(); c.destroy(); }
});

test('a slow body (headers, part of the body, then a byte every 200 ms) is cut off within REQUEST_TIMEOUT_MS, nothing is written, and the server still serves', async () => {
  const srv = await server({ REQUEST_TIMEOUT_MS: '1500' });
  const body = JSON.stringify(conversation);
  const c = await Client.connect(srv.port);
  const started = performance.now();
  c.write(postHead(srv.key, `Content-Length: ${body.length}\r\n`) + body.slice(0, 10));
  const stop = drip(c, body.slice(10, -1), 200); // never sends the last byte
  try {
    const ms = await closedAfter(c, started, 6000);
    assert.ok(ms < 3000, `cut off after ${Math.round(ms)} ms (REQUEST_TIMEOUT_MS=1500, checked every second)`);
    assert.equal(c.data.length, 0);
    const list = await srv.call<ConversationList>('GET', '/api/v1/conversations');
    assert.deepEqual(list.body.conversations, []);
    const created = await srv.call('POST', '/api/v1/conversations', { body: conversation });
    assert.equal(created.status, 201);
    const logs = srv.logs.map((l) => JSON.parse(l));
    assert.ok(!logs.some((l) => l.level === 'error'), srv.logs.join(''));
  } finally { stop(); c.destroy(); }
});

// ---------------------------------------------------------------- connection cap

test('MAX_CONNECTIONS=50 with 200 keep-alive clients: the server holds at most 50, closes the rest at once, and serves new clients once KEEP_ALIVE_TIMEOUT_MS cuts the idle ones', async () => {
  const srv = await server({ MAX_CONNECTIONS: '50', KEEP_ALIVE_TIMEOUT_MS: '1000' });
  const clients = await Promise.all(Array.from({ length: 200 }, () => Client.connect(srv.port)));
  try {
    for (const c of clients) c.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
    const answers = await Promise.all(clients.map((c) => c.response()));
    const served = answers.filter((r) => r !== undefined);
    assert.equal(served.length, 50, 'exactly MAX_CONNECTIONS clients are served');
    for (const r of served) assert.deepEqual({ status: r!.status, body: r!.body }, { status: 200, body: { status: 'ok' } });
    assert.ok(await connections(srv) <= 50, `the server holds ${await connections(srv)} connections`);
    const shed = clients.filter((c, i) => answers[i] === undefined);
    assert.ok(shed.every((c) => c.closed && c.data.length === 0), 'the others were closed without an answer');

    // While full, a new client is shed too…
    const extra = await Client.connect(srv.port);
    extra.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    assert.equal(await extra.response(), undefined);

    // …until the idle keep-alive connections time out; then a normal request works.
    const kept = clients.filter((c, i) => answers[i] !== undefined);
    await within(Promise.all(kept.map((c) => c.ended)), 5000, 'the idle keep-alive connections to be closed');
    const ok = await srv.call('GET', '/healthz', { key: null });
    assert.deepEqual({ status: ok.status, body: ok.body }, { status: 200, body: { status: 'ok' } });
  } finally { for (const c of clients) c.destroy(); }
});

/**
 * Opens `n` keep-alive connections from a child process (so that their memory is not counted as
 * the server's), sends one request on each and reports how many were answered; they stay open
 * until {@link IdleClients.close}.
 */
interface IdleClients { answered: number; close(): Promise<void> }
async function idleClients(port: number, n: number): Promise<IdleClients> {
  const script = `
    const net = require('node:net');
    const socks = [];
    let answered = 0, settled = 0;
    const done = () => { if (++settled === ${n}) process.stdout.write('ready ' + answered + '\\n'); };
    (async () => {
      for (let i = 0; i < ${n}; i++) {
        const s = net.connect(${port}, '127.0.0.1');
        s.on('error', () => {});
        let got = false;
        s.once('data', () => { got = true; answered++; done(); });
        s.once('close', () => { if (!got) done(); });
        await new Promise((r) => s.once('connect', r).once('close', r));
        s.write('GET /healthz HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: keep-alive\\r\\n\\r\\n');
        socks.push(s);
      }
    })();
    process.stdin.on('end', () => { for (const s of socks) s.destroy(); process.exit(0); }).resume();
  `;
  const proc = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.setEncoding('utf8');
  const exited = once(proc, 'exit');
  const answered = await within(new Promise<number>((resolve, reject) => {
    proc.stdout.on('data', (d: string) => { out += d; const m = /ready (\d+)/.exec(out); if (m) resolve(Number(m[1])); });
    proc.once('exit', (code) => reject(new Error(`the client process exited (${code}) before it was ready`)));
  }), 30_000, `${n} idle connections`);
  return { answered, close: async () => { proc.stdin.end(); await within(exited, 5000, 'the client process to exit'); } };
}

test('1,000 idle keep-alive connections: the server\'s memory grows by < 20 MB, and every descriptor is released once they close', async (t) => {
  // All from 127.0.0.1: the per-address cap is lifted so that this measures the connections' cost.
  const srv = await server({ KEEP_ALIVE_TIMEOUT_MS: '600000', HEADERS_TIMEOUT_MS: '600000', MAX_CONNECTIONS_PER_ADDRESS: '100000' });
  // Warm up with a few connections, so that lazily loaded code does not count as growth.
  await (await idleClients(srv.port, 10)).close();
  await within((async () => { while (await connections(srv) > 0) await new Promise((r) => setImmediate(r)); })(), 5000, 'the warm-up connections to close');
  const fdsBefore = openFds();
  const rssBefore = settledRss();
  const clients = await idleClients(srv.port, 1000);
  try {
    assert.equal(clients.answered, 1000);
    assert.equal(await connections(srv), 1000);
    const grownMb = (settledRss() - rssBefore) / MiB;
    const fds = openFds() - fdsBefore;
    t.diagnostic(`1,000 idle keep-alive connections: server RSS +${grownMb.toFixed(1)} MB, +${fds} descriptors`);
    assert.ok(grownMb < 20, `RSS grew by ${grownMb.toFixed(1)} MB`);
    assert.ok(fds <= 1000 + 5, `${fds} descriptors for 1,000 connections`);
    // A new client is still served.
    const c = await Client.connect(srv.port);
    c.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.equal((await c.response())?.status, 200);
    await c.ended;
  } finally { await clients.close(); }
  await within((async () => { while (await connections(srv) > 0) await new Promise((r) => setImmediate(r)); })(), 5000, 'the server to release the connections');
  assert.ok(openFds() <= fdsBefore + 2, `descriptors: ${openFds()} now, ${fdsBefore} before`);
});

// ---------------------------------------------------------------- bodies

/**
 * Streams a chunked body of `total` bytes (one reused 64 KiB chunk, honouring backpressure)
 * until the server answers or hangs up; returns the response and how much was sent.
 */
async function chunkedUpload(srv: TestServer, total: number, head = postHead(srv.key, 'Transfer-Encoding: chunked\r\n')): Promise<{ response: RawResponse | undefined; sent: number }> {
  const c = await Client.connect(srv.port);
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
  c.write(head);
  let sent = 0;
  const answered = () => c.closed || parse(c.data) !== undefined;
  while (sent < total && !answered()) {
    sent += chunk.length;
    if (!c.write(frame)) await new Promise<void>((r) => { c.sock.once('drain', r); void c.ended.then(r); });
  }
  if (!answered()) c.write('0\r\n\r\n');
  const response = await c.response();
  c.destroy();
  return { response, sent };
}

test('a 200 MB chunked body → 413 payload_too_large after the 1 MiB limit, quickly, with RSS growth < 20 MB, and the server serves on', async (t) => {
  const srv = await server();
  const rssBefore = settledRss();
  const started = performance.now();
  const { response, sent } = await chunkedUpload(srv, 200 * MiB);
  const ms = performance.now() - started;
  const grownMb = (settledRss() - rssBefore) / MiB;
  t.diagnostic(`sent ${(sent / MiB).toFixed(1)} MiB of 200 before the answer, ${Math.round(ms)} ms, RSS +${grownMb.toFixed(1)} MB`);
  assert.ok(response, 'the server answered before hanging up');
  assert.equal(response.status, 413);
  assert.deepEqual(response.body, { code: 'payload_too_large', error: 'The request body is too large: the limit for this request is 1048576 bytes.' });
  assert.equal(response.headers.connection, 'close');
  assert.ok(sent < 64 * MiB, `the client got to send ${(sent / MiB).toFixed(1)} MiB`);
  assert.ok(ms < 5000, `the answer took ${Math.round(ms)} ms`);
  assert.ok(grownMb < 20, `RSS grew by ${grownMb.toFixed(1)} MB`);
  assert.deepEqual((await srv.call<ConversationList>('GET', '/api/v1/conversations')).body.conversations, []);
  assert.equal((await srv.call('POST', '/api/v1/conversations', { body: conversation })).status, 201);
});

test('a 200 MB chunked body answered before it is read (401, 404, 415) → the answer with Connection: close, and the server reads no further', async () => {
  const srv = await server();
  const chunked = 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
  const cases = [
    { head: `POST /api/v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\n${chunked}`, status: 401, body: { code: 'unauthorized', error: 'A valid workspace API key is required.' } },
    { head: `POST /api/v1/nope HTTP/1.1\r\nHost: 127.0.0.1\r\n${chunked}`, status: 404, body: { code: 'not_found', error: 'Record not found: no route matches POST /api/v1/nope.' } },
    { head: `POST /api/v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${srv.key}\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n`,
      status: 415, body: { code: 'unsupported_media_type', error: 'The request body must be application/json.' } },
  ];
  for (const k of cases) {
    const { response, sent } = await chunkedUpload(srv, 200 * MiB, k.head);
    assert.ok(response, `an answer (${k.status})`);
    assert.deepEqual({ status: response.status, body: response.body, connection: response.headers.connection }, { status: k.status, body: k.body, connection: 'close' });
    assert.ok(sent < 64 * MiB, `${k.status}: the server went on reading — the client sent ${(sent / MiB).toFixed(1)} MiB`);
  }
  assert.deepEqual((await srv.call<ConversationList>('GET', '/api/v1/conversations')).body.conversations, []);
});

test('Content-Encoding gzip, deflate or br on a JSON body → 415 unsupported_media_type; identity is accepted', async () => {
  const srv = await server();
  const json = Buffer.from(JSON.stringify(conversation));
  const bodies: Record<string, Buffer> = { gzip: gzipSync(json), deflate: deflateSync(json), br: brotliCompressSync(json), 'GZIP': gzipSync(json) };
  for (const [encoding, body] of Object.entries(bodies)) {
    const r = await srv.call('POST', '/api/v1/conversations', { raw: body, headers: { 'Content-Type': 'application/json', 'Content-Encoding': encoding } });
    assert.equal(r.status, 415, encoding);
    assert.deepEqual(r.body, { code: 'unsupported_media_type', error: 'The request body must be application/json: Content-Encoding is not supported; send the body uncompressed.' });
  }
  const plain = await srv.call('POST', '/api/v1/conversations', { raw: json, headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'identity' } });
  assert.equal(plain.status, 201, plain.text);
  assert.equal((await srv.call<ConversationList>('GET', '/api/v1/conversations')).body.conversations.length, 1);
});

test('oversized request headers (one 20 KiB header, or 1,000 small ones) → 431 with the exact JSON body, and the connection is closed', async () => {
  const srv = await server();
  const heads = [
    `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`,
    `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n${Array.from({ length: 1000 }, (_, i) => `X-H${i}: vvvvvvvvvvvvvvvv\r\n`).join('')}\r\n`,
    `POST /api/v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${'k'.repeat(17 * 1024)}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
  ];
  for (const head of heads) {
    const c = await Client.connect(srv.port);
    c.write(head);
    const r = await c.response();
    assert.ok(r, 'an answer before the close');
    assert.equal(r.status, 431);
    assert.deepEqual(r.body, { code: 'request_header_fields_too_large', error: 'The request headers are too large.' });
    assert.equal(r.headers.connection, 'close');
    await within(c.ended, 5000, 'the connection to close');
  }
  assert.equal((await srv.call('GET', '/healthz', { key: null })).status, 200);
});

test('invalid UTF-8 in a JSON body (stray continuation, overlong, surrogate, truncated, out of range) → 400 invalid_request, nothing stored', async () => {
  const srv = await server();
  const bad: Record<string, number[]> = {
    'stray continuation byte': [0x80],
    'overlong "/"': [0xc0, 0xaf],
    'UTF-16 surrogate': [0xed, 0xa0, 0x80],
    'truncated sequence': [0xe2, 0x82],
    'beyond U+10FFFF': [0xf4, 0x90, 0x80, 0x80],
    'invalid byte 0xFF': [0xff],
  };
  for (const [what, bytes] of Object.entries(bad)) {
    const body = Buffer.concat([Buffer.from('{"subject":"'), Buffer.from(bytes), Buffer.from('","customer":{"email":"ada@example.com"}}')]);
    const r = await srv.call('POST', '/api/v1/conversations', { raw: body, headers: { 'Content-Type': 'application/json' } });
    assert.equal(r.status, 400, what);
    assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: the body is not valid UTF-8.' }, what);
  }
  assert.deepEqual((await srv.call<ConversationList>('GET', '/api/v1/conversations')).body.conversations, []);
});
