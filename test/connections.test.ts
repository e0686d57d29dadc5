/**
 * What one connection may hold (README "Limits"), over raw sockets against an in-process
 * server: a client that pipelines requests and never reads gets at most 1 MiB of unsent output
 * held for it, whatever the route, and no more of its requests are parsed until that output
 * drains; a connection whose output does not move for 30 s (on the injected clock) is closed,
 * a slow reader is not; MAX_CONNECTIONS_PER_ADDRESS closes an address's extra connections at
 * once while other addresses are served.
 *
 * Nothing sleeps: every wait is on a socket event or a condition re-checked each turn of the
 * event loop, bounded by a timeout. The stall clock is the server's ManualClock.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { once } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startTestServer, type TestServer } from './helpers/server.js';
import { within } from './helpers/raw.js';
import type { ServerDeps } from '../src/server/start.js';
import type { OpenApiAnswer } from './helpers/answers.js';

const MiB = 1024 * 1024;
const OPENAPI = 'GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n';
const HEALTH = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
function settledRss(): number { gc(); gc(); return process.memoryUsage().rss; }

const servers: TestServer[] = [];
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) await s.close();
});
/**
 * A server for these tests. While a connection is over its bound its socket is not read, so a
 * request head cut at the end of a read waits unparsed, and node:http's headers timeout (10 s)
 * runs on it: on a loaded machine draining 200 MB can take longer. These tests are about the
 * output bound, so that timeout (and the request timeout) are set out of their way.
 */
async function server(env: Record<string, string> = {}, output?: ServerDeps['output']): Promise<TestServer> {
  const timeouts = { HEADERS_TIMEOUT_MS: '300000', REQUEST_TIMEOUT_MS: '300000' };
  const srv = await startTestServer({ env: { ...timeouts, ...env }, output, captureLogs: true });
  servers.push(srv);
  return srv;
}

/** Resolves once `cond()` holds, re-checked every turn of the event loop; rejects after `ms`. */
function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  return within(new Promise<void>((resolve) => {
    const check = () => { if (cond()) resolve(); else setImmediate(check); };
    check();
  }), ms, what);
}

/**
 * A raw connection that reads only when told to. What it reads is parsed into responses as it
 * comes (status and body size kept, bytes dropped), so it can take hundreds of megabytes.
 */
class Reader {
  statuses: number[] = [];
  sizes: number[] = [];
  /** The wire size of the largest response read (status line, headers and body). */
  largest = 0;
  received = 0;
  closed = false;
  readonly ended: Promise<void>;
  private buf: Buffer = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  private target = Infinity;

  private constructor(readonly sock: net.Socket) {
    sock.pause();
    sock.on('data', (d: Buffer) => {
      this.received += d.length;
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
      for (let r = frame(this.buf); r; r = frame(this.buf)) {
        this.statuses.push(r.status);
        this.sizes.push(r.bodySize);
        if (r.size > this.largest) this.largest = r.size;
        this.buf = this.buf.subarray(r.size);
      }
      if (this.received >= this.target) { this.target = Infinity; sock.pause(); }
      this.poke();
    });
    sock.on('error', () => { /* a reset once the server closes is expected */ });
    this.ended = new Promise((r) => sock.once('close', () => { this.closed = true; this.poke(); r(); }));
  }

  static async connect(port: number, localAddress?: string): Promise<Reader> {
    const sock = net.connect({ port, host: '127.0.0.1', localAddress });
    sockets.push(sock);
    const c = new Reader(sock);
    await within(Promise.race([once(sock, 'connect'), c.ended]), 5000, 'a connection');
    return c;
  }

  private poke(): void { const w = this.waiters; this.waiters = []; for (const f of w) f(); }
  private wait(cond: () => boolean, ms: number, what: string): Promise<void> {
    return within(new Promise<void>((resolve) => {
      const check = () => { if (cond()) resolve(); else this.waiters.push(check); };
      check();
    }), ms, what);
  }

  write(text: string): void { this.sock.write(text); }
  /** Reads until `n` responses arrived (or the server closed). */
  async responses(n: number, ms = 30_000): Promise<void> {
    this.sock.resume();
    await this.wait(() => this.statuses.length >= n || this.closed, ms, `${n} responses (got ${this.statuses.length})`);
  }
  /** Reads on until the connection is closed (a paused socket does not notice a close). */
  async drain(ms = 10_000): Promise<void> {
    this.sock.resume();
    await within(this.ended, ms, 'the connection to close');
  }
  /** Reads about `bytes` more, then stops reading again. */
  async readMore(bytes: number): Promise<void> {
    const goal = this.received + bytes;
    this.target = goal;
    this.sock.resume();
    await this.wait(() => this.received >= goal || this.closed, 10_000, `${bytes} more bytes`);
  }
}

/** Samples the most unsent output one connection holds, every turn of the event loop, until stopped. */
function peakUnsent(srv: TestServer): { peak: number; stop(): void } {
  const p = { peak: 0, on: true, stop() { p.on = false; } };
  const tick = () => { if (!p.on) return; p.peak = Math.max(p.peak, srv.connections.stats().maxUnsentBytes); setImmediate(tick); };
  tick();
  return p;
}

/** The status, body size and wire size of the first whole response in `buf` (framed by Content-Length). */
function frame(buf: Buffer): { status: number; bodySize: number; size: number } | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const head = buf.subarray(0, end).toString('latin1');
  const bodySize = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
  if (buf.length < end + 4 + bodySize) return undefined;
  return { status: Number(head.slice(9, 12)), bodySize, size: end + 4 + bodySize };
}

/** The bytes one answer takes on the wire (status line, headers, body) for `request`. */
async function answerBytes(srv: TestServer, request: string): Promise<number> {
  const c = await Reader.connect(srv.port);
  c.write(request);
  await c.responses(1);
  c.sock.destroy();
  return c.received;
}

// ---------------------------------------------------------------- unsent output

test('a client pipelining 2,000 GET /api/v1/openapi.json (100 KB each) that never reads: at most 1 MiB + one answer is held for it, parsing stops, /healthz is served; once it reads, all 2,000 arrive in order', async (t) => {
  const srv = await server();
  const one = await answerBytes(srv, OPENAPI);
  assert.ok(one > 90_000, `the document is ${one} bytes`);
  const c = await Reader.connect(srv.port);
  const sampled = peakUnsent(srv);
  c.write(OPENAPI.repeat(2000));
  await until(() => srv.connections.stats().holding === 1, 10_000, 'the connection to reach its bound');
  const held = srv.connections.stats();
  t.diagnostic(`held for the client: ${held.maxUnsentBytes} bytes unsent, ${held.queuedRequests} requests waiting unanswered`);
  assert.ok(held.maxUnsentBytes <= MiB + one, `${held.maxUnsentBytes} bytes of unsent output held`);
  assert.ok(held.queuedRequests < 2000 - 50, 'requests still in the client\'s pipe were not parsed');

  const started = performance.now();
  const health = await srv.call('GET', '/healthz', { key: null });
  const ms = performance.now() - started;
  assert.deepEqual([health.status, health.body], [200, { status: 'ok' }]);
  assert.ok(ms < 1000, `/healthz took ${Math.round(ms)} ms`);

  await c.responses(2000, 60_000);
  sampled.stop();
  assert.ok(sampled.peak <= MiB + one, `at the peak, ${sampled.peak} bytes of unsent output were held`);
  assert.equal(c.statuses.length, 2000);
  assert.ok(c.statuses.every((s) => s === 200), 'every answer is 200');
  assert.ok(c.sizes.every((n) => n === c.sizes[0]), 'every answer is the whole document');
  assert.equal(c.closed, false);
  await until(() => srv.connections.stats().unsentBytes === 0, 10_000, 'the output to drain');
});

test('five clients pipelining 1,000 OpenAPI requests each without reading grow the server\'s memory by < 60 MB (answering them all at once would take 500 MB)', async (t) => {
  const srv = await server();
  await answerBytes(srv, OPENAPI); // the document is built once, before measuring
  const before = settledRss();
  const clients = await Promise.all(Array.from({ length: 5 }, () => Reader.connect(srv.port)));
  for (const c of clients) c.write(OPENAPI.repeat(1000));
  await until(() => srv.connections.stats().holding === 5, 20_000, 'all five connections to reach their bound');
  const grownMb = (settledRss() - before) / MiB;
  const s = srv.connections.stats();
  t.diagnostic(`RSS +${grownMb.toFixed(1)} MB; unsent output ${s.unsentBytes} bytes; ${s.queuedRequests} requests waiting`);
  assert.ok(grownMb < 60, `RSS grew by ${grownMb.toFixed(1)} MB`);
  assert.ok(s.unsentBytes <= 5 * (MiB + 110_000), `${s.unsentBytes} bytes unsent`);
});

test('the bound holds for every answer — 404s, 401s/429s, list pages — with maxUnsentBytes 32 KiB; every answer arrives once the client reads', async (t) => {
  const limit = 32 * 1024;
  const srv = await server({ RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000' }, { maxUnsentBytes: limit });
  for (let i = 0; i < 100; i++) {
    const r = await srv.call('POST', '/api/v1/conversations', { body: { subject: `${i} ${'s'.repeat(190)}`, customer: { email: `c${i}@example.com`, name: 'n'.repeat(150), company: 'c'.repeat(150) } } });
    assert.equal(r.status, 201);
  }
  const kinds = [
    { name: '404', request: `GET /${'x'.repeat(200)} HTTP/1.1\r\nHost: x\r\n\r\n`, statuses: [404] },
    { name: '401', request: 'GET /api/v1/conversations HTTP/1.1\r\nHost: x\r\n\r\n', statuses: [401, 429] },
    { name: 'list page', request: `GET /api/v1/conversations?limit=100 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.key}\r\n\r\n`, statuses: [200] },
  ];
  for (const k of kinds) {
    const one = await answerBytes(srv, k.request);
    // Well past what the kernel's socket buffers take in (a few MB on loopback).
    const n = Math.ceil((12 * MiB) / one);
    const c = await Reader.connect(srv.port);
    const sampled = peakUnsent(srv);
    c.write(k.request.repeat(n));
    await until(() => srv.connections.stats().holding === 1, 20_000, `${k.name}: the connection to reach its bound`);
    await c.responses(n, 60_000);
    sampled.stop();
    // Answers of one kind differ in size (the 401s turn to longer 429s once the address failed
    // too often): an answer is admitted while the output is within the bound, so the peak is
    // the bound plus the largest answer.
    const largest = Math.max(one, c.largest);
    t.diagnostic(`${k.name}: ${n} requests of ${one}-byte answers (largest ${largest}); at most ${sampled.peak} bytes unsent held`);
    assert.ok(sampled.peak <= limit + largest, `${k.name}: ${sampled.peak} bytes of unsent output held (largest answer ${largest} bytes)`);
    assert.equal(c.statuses.length, n, `${k.name}: every answer arrived`);
    assert.deepEqual([...new Set(c.statuses)].filter((s) => !k.statuses.includes(s)), [], `${k.name}: statuses`);
    c.sock.destroy();
  }
});

test('GET /api/v1/openapi.json is serialized once: every answer is the same cached bytes, not a new 100 KB string', async () => {
  const srv = await server();
  const r = srv.routes.find((x) => x.path === '/api/v1/openapi.json')!;
  const first = await r.handler({} as never);
  const second = await r.handler({} as never);
  assert.ok(Buffer.isBuffer(first.json), 'the answer carries its bytes');
  assert.equal(second.json, first.json, 'the same Buffer every time');
  const over = await srv.call<OpenApiAnswer>('GET', '/api/v1/openapi.json', { key: null });
  assert.equal(over.text, (first.json as Buffer).toString('utf8'));
  assert.equal(over.body.info.version, '2026-06-29');
});

// ---------------------------------------------------------------- stalled output

test('a connection whose output has not moved for 30 s is closed; one that reads slowly is not (manual sweeps on the injected clock)', async () => {
  const srv = await server({}, { sweepMs: 0 });
  const stuck = await Reader.connect(srv.port);
  const slow = await Reader.connect(srv.port);
  stuck.write(OPENAPI.repeat(200));
  slow.write(OPENAPI.repeat(200));
  await until(() => srv.connections.stats().holding === 2, 10_000, 'both connections to reach their bound');
  srv.connections.sweep();
  for (let step = 1; step <= 3; step++) {
    srv.clock.advance(15_000);
    // The kernel reopens the window once about half the receive buffer was read.
    const sent = srv.connections.stats().sentBytes;
    await slow.readMore(2 * MiB);
    await until(() => srv.connections.stats().sentBytes > sent, 10_000, 'the server to see the slow reader take output');
    srv.connections.sweep();
    assert.equal(srv.connections.stalled, step === 1 ? 0 : 1, `closed for stalled output after ${step * 15} s`);
    if (step === 2) await until(() => srv.connections.stats().connections === 1, 5000, 'the server to forget the closed connection');
  }
  await stuck.drain();
  assert.equal(slow.closed, false, 'the slow reader is kept after 45 s of reading');
  const line = srv.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'connection closed: its client took no output');
  assert.ok(line && line.level === 'info' && line.address === '127.0.0.1' && line.stalledMs >= 30_000, JSON.stringify(line));
  await slow.responses(200);
  assert.ok(slow.statuses.length === 200 && slow.statuses.every((s) => s === 200));
});

test('the stall check runs by itself every sweepMs: 30 s on the server\'s clock without progress closes the connection', async () => {
  const srv = await server({}, { sweepMs: 10 });
  const stuck = await Reader.connect(srv.port);
  stuck.write(OPENAPI.repeat(200));
  await until(() => srv.connections.stats().watched === 1, 10_000, 'the stall check to time the pending output');
  srv.clock.advance(29_999);
  const open = await srv.call('GET', '/healthz', { key: null }); // a few sweeps run meanwhile
  assert.equal(open.status, 200);
  assert.equal(srv.connections.stats().holding, 1, 'not closed before 30 s');
  srv.clock.advance(1);
  await until(() => srv.connections.stats().holding === 0, 5000, 'the stalled connection to be closed');
  await stuck.drain();
  assert.equal(srv.connections.stalled, 1);
});

// ---------------------------------------------------------------- per-address cap

test('MAX_CONNECTIONS_PER_ADDRESS=5: a sixth connection from 127.0.0.1 is closed at once without an answer, 127.0.0.2 is served, and a closed one frees a place', async () => {
  const srv = await server({ MAX_CONNECTIONS_PER_ADDRESS: '5' });
  const held = await Promise.all(Array.from({ length: 5 }, () => Reader.connect(srv.port)));
  for (const c of held) { c.write(HEALTH); await c.responses(1); }
  assert.deepEqual(held.map((c) => c.statuses), Array(5).fill([200]));
  const extra = await Promise.all(Array.from({ length: 3 }, () => Reader.connect(srv.port)));
  for (const c of extra) { c.write(HEALTH); await c.responses(1, 5000); }
  assert.ok(extra.every((c) => c.closed && c.received === 0), 'closed without an answer');
  assert.equal(srv.connections.refused, 3);

  const other = await Reader.connect(srv.port, '127.0.0.2');
  other.write(HEALTH);
  await other.responses(1);
  assert.deepEqual(other.statuses, [200]);

  held[0].sock.destroy();
  await until(() => srv.connections.stats().connections === 5, 5000, 'the server to see the close');
  const again = await Reader.connect(srv.port);
  again.write(HEALTH);
  await again.responses(1);
  assert.deepEqual([again.statuses, again.closed], [[200], false]);
});

test('one address holding idle connections cannot take the whole MAX_CONNECTIONS: with 25 in all and 20 per address, 30 idle sockets from 127.0.0.1 leave 127.0.0.2 served', async () => {
  const srv = await server({ MAX_CONNECTIONS: '25', MAX_CONNECTIONS_PER_ADDRESS: '20', KEEP_ALIVE_TIMEOUT_MS: '600000' });
  const idle = await Promise.all(Array.from({ length: 30 }, () => Reader.connect(srv.port)));
  for (const c of idle) c.write(HEALTH);
  await Promise.all(idle.map((c) => c.responses(1, 5000)));
  assert.equal(idle.filter((c) => c.statuses[0] === 200 && !c.closed).length, 20, '20 held');
  assert.equal(idle.filter((c) => c.closed && c.received === 0).length, 10, '10 closed at once');
  for (let i = 0; i < 20; i++) {
    const c = await Reader.connect(srv.port, '127.0.0.2');
    c.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await c.responses(1);
    assert.deepEqual(c.statuses, [200], `request ${i + 1} from 127.0.0.2`);
    await within(c.ended, 5000, 'the close');
  }
});
