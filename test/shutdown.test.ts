/**
 * Graceful shutdown of the real process (docs/configuration.md#starting-and-stopping): `node dist/server.js`
 * with SYNC=always. SIGTERM under load: requests already in flight complete and are durable,
 * requests after the signal get 503 `Connection: close` (or a refused connection), exit 0 within
 * SHUTDOWN_TIMEOUT_MS; a request that never finishes is cut at the deadline; a second signal
 * forces the exit at once, and the next start recovers.
 *
 * Moments are observed, never slept for: "the request is in flight" is the server's
 * `100 Continue` (Node dispatches the request to the handler when it sends it), "the signal
 * was handled" is its `shutting down` log line, "the fetch is under way" is the local upstream
 * receiving it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { call, startServer, tempDir, type RunningChild } from './helpers/child.js';
import { parseRawResponse, within, type RawResponse } from './helpers/raw.js';
import { walkList } from './helpers/lists.js';
import type { ConversationAnswer, MessageList, SourceList } from './helpers/answers.js';

const customer = { email: 'ada@example.com' };
const SHUTTING_DOWN = { code: 'service_unavailable', error: 'The server is shutting down or cannot accept writes right now: the server is shutting down.' };
const BASE_ENV = { SYNC: 'always', RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000' };

/** One raw client connection, reading responses as they arrive. */
class RawConn {
  private buf = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  closed = false;
  readonly ended: Promise<void>;
  private constructor(readonly sock: net.Socket) {
    sock.on('data', (d: Buffer) => { this.buf = Buffer.concat([this.buf, d]); this.poke(); });
    sock.on('error', () => { /* a reset after the server hangs up is expected */ });
    this.ended = new Promise((r) => sock.once('close', () => { this.closed = true; this.poke(); r(); }));
  }
  static async open(port: number): Promise<RawConn> {
    const sock = net.connect(port, '127.0.0.1');
    await within(once(sock, 'connect'), 5000, 'a connection');
    return new RawConn(sock);
  }
  private poke(): void { const w = this.waiters; this.waiters = []; for (const f of w) f(); }
  write(data: string | Buffer): void { this.sock.write(data); }
  /** The next complete response (a `100 Continue` counts as one); rejects when the connection closes first. */
  response(timeoutMs = 10_000): Promise<RawResponse> {
    return within(new Promise<RawResponse>((resolve, reject) => {
      const check = () => {
        const r = this.take();
        if (r) resolve(r);
        else if (this.closed) reject(new Error(`connection closed before a response: ${JSON.stringify(this.buf.toString('latin1'))}`));
        else this.waiters.push(check);
      };
      check();
    }), timeoutMs, 'a response');
  }
  private take(): RawResponse | undefined {
    const r = parseRawResponse(this.buf);
    if (r) this.buf = this.buf.subarray(r.size);
    return r?.response;
  }
  destroy(): void { this.sock.destroy(); }
}

/** A POST's head for a raw connection; with `continue`, the server answers 100 before the body. */
function postHead(path: string, key: string, body: string, opts: { continue?: boolean } = {}): string {
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n${opts.continue ? 'Expect: 100-continue\r\n' : ''}\r\n`;
}

type Outcome =
  | { kind: 'answer'; status: number; headers: http.IncomingHttpHeaders; body: any }
  | { kind: 'error'; code: string };

/** A POST through `agent` (keep-alive), answered or failed at the socket; never hangs. */
function post(agent: http.Agent, port: number, path: string, key: string, body: unknown): Promise<Outcome> {
  const data = JSON.stringify(body);
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, timeout: 10_000, headers: {
      Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data),
    } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ kind: 'answer', status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
      res.on('error', (e: NodeJS.ErrnoException) => resolve({ kind: 'error', code: e.code ?? e.message }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })));
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ kind: 'error', code: e.code ?? e.message }));
    req.end(data);
  });
}

const shuttingDown = (srv: RunningChild) => srv.waitFor('the "shutting down" line', () => srv.logLines().find((l) => l.msg === 'shutting down') ? true : undefined, 5000);

/** Every conversation a server serves (all pages). */
async function allConversations(url: string, key: string): Promise<any[]> {
  return (await walkList<any>((p) => call(url, 'GET', p, { key }), '/api/v1/conversations', 'conversations', 100)).items;
}

test('SIGTERM under a steady load of writes: in-flight requests complete with 2xx and are durable, later ones get 503 Connection: close or a refused connection, exit 0 within SHUTDOWN_TIMEOUT_MS', async (t) => {
  const dataDir = tempDir('sw-shutdown-');
  const srv = await startServer({ dataDir, env: { ...BASE_ENV, SHUTDOWN_TIMEOUT_MS: '3000' } });
  try {
    const key = await srv.waitForKey();
    const before = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: { subject: 'Before the signal', customer } });
    assert.equal(before.status, 201, before.text);

    // The load: 8 writers, each on its own keep-alive connection, writing until refused.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const sent = new Map<string, Outcome | null>(); // externalId → outcome (null while unanswered)
    let stop = false;
    let n = 0;
    const writers = Array.from({ length: 8 }, async () => {
      while (!stop) {
        const externalId = `load-${n++}`;
        sent.set(externalId, null);
        const o = await post(agent, srv.port, '/api/v1/conversations', key, { subject: `Load ${externalId}`, customer, externalId });
        sent.set(externalId, o);
        if (o.kind === 'error' || o.status !== 201) return;
      }
    });

    // A request in flight at the moment of the signal: its head is read (100 Continue), its body not yet.
    const inflightBody = JSON.stringify({ subject: 'In flight at the signal', customer, externalId: 'in-flight' });
    const inflight = await RawConn.open(srv.port);
    inflight.write(postHead('/api/v1/conversations', key, inflightBody, { continue: true }));
    assert.equal((await inflight.response()).status, 100);
    // A connection in the middle of sending its next request (so it is not idle, and stays open).
    const late = await RawConn.open(srv.port);
    late.write('POST /api/v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\n');

    // Let the load run until a few writes are acknowledged, then signal.
    await within(new Promise<void>((resolve) => {
      const check = () => ([...sent.values()].filter((o) => o?.kind === 'answer' && o.status === 201).length >= 20 ? resolve() : setImmediate(check));
      check();
    }), 15_000, '20 acknowledged writes');
    const signalledAt = performance.now();
    srv.proc.kill('SIGTERM');
    await shuttingDown(srv);

    // After the signal: a new connection is refused; a request arriving on an open connection
    // gets 503 with Connection: close, and the connection is closed.
    const refused = await new Promise<string>((resolve) => {
      const s = net.connect(srv.port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); resolve('connected'); });
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    assert.equal(refused, 'ECONNREFUSED');
    const lateBody = JSON.stringify({ subject: 'After the signal', customer, externalId: 'late' });
    late.write(`Authorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(lateBody)}\r\n\r\n${lateBody}`);
    const lateRes = await late.response();
    assert.equal(lateRes.status, 503, lateRes.text);
    assert.deepEqual(lateRes.body, SHUTTING_DOWN);
    assert.equal(lateRes.headers.connection, 'close');
    await within(late.ended, 5000, 'the 503 connection to close');

    // The request that was in flight completes normally.
    inflight.write(inflightBody);
    const inflightRes = await inflight.response();
    assert.equal(inflightRes.status, 201, inflightRes.text);
    const inflightId = (inflightRes.body as ConversationAnswer).conversation.id;

    stop = true;
    await within(Promise.all(writers), 15_000, 'the writers to finish');
    const exit = await within(srv.exited, 5000, 'the exit');
    const tookMs = performance.now() - signalledAt;
    agent.destroy();
    inflight.destroy();
    assert.deepEqual(exit, { code: 0, signal: null }, srv.stderr);
    assert.ok(tookMs < 3000, `exit took ${Math.round(tookMs)} ms (SHUTDOWN_TIMEOUT_MS=3000)`);
    assert.ok(srv.logLines().some((l) => l.msg === 'stopped'), srv.stdout);

    // Every answer was a 201, a 503 shutting down with Connection: close, or a socket error.
    const acked = new Map<string, string>([['in-flight', inflightId]]);
    const counts = { acknowledged: 0, refused503: 0, socketErrors: 0 };
    for (const [externalId, o] of sent) {
      assert.ok(o, `${externalId} got no outcome`);
      if (o.kind === 'error') { assert.match(o.code, /^(ECONNRESET|ECONNREFUSED|EPIPE|socket hang up)$/, externalId); counts.socketErrors++; continue; }
      if (o.status === 201) { acked.set(externalId, o.body.conversation.id); counts.acknowledged++; continue; }
      assert.deepEqual({ status: o.status, body: o.body, connection: o.headers.connection }, { status: 503, body: SHUTTING_DOWN, connection: 'close' }, externalId);
      counts.refused503++;
    }
    assert.ok(acked.size >= 21, `only ${acked.size} writes were acknowledged`);
    t.diagnostic(`load writes: ${JSON.stringify(counts)}; exit ${Math.round(tookMs)} ms after the signal`);

    // A restart serves every acknowledged write, the 503'd ones not, nothing twice.
    const again = await startServer({ dataDir, env: BASE_ENV });
    try {
      const stored = await allConversations(again.url, key);
      const byExternal = new Map<string, any>();
      for (const c of stored) {
        if (c.externalId === undefined) continue;
        assert.ok(!byExternal.has(c.externalId), `${c.externalId} stored twice`);
        byExternal.set(c.externalId, c);
      }
      for (const [externalId, id] of acked) assert.equal(byExternal.get(externalId)?.id, id, `acknowledged ${externalId} is missing after the restart`);
      for (const [externalId, o] of sent) {
        if (o?.kind === 'answer' && o.status === 503) assert.ok(!byExternal.has(externalId), `${externalId} was refused with 503 but stored`);
      }
      assert.ok(!byExternal.has('late'));
      assert.deepEqual((await call(again.url, 'GET', `/api/v1/conversations/${before.body.conversation.id}`, { key })).body, before.body);
      assert.deepEqual(readdirSync(join(dataDir, 'workspaces')).filter((f) => f.includes('.corrupt-') || f.includes('.compact-')), []);
    } finally { await again.stop(); }
  } finally { await srv.stop('SIGKILL'); }
});

/** A local "upstream" that accepts requests and never answers them. */
async function silentUpstream(): Promise<{ url: string; requested: Promise<void>; close(): void }> {
  const held: http.ServerResponse[] = [];
  let onRequest!: () => void;
  const requested = new Promise<void>((r) => { onRequest = r; });
  const server = http.createServer((_req, res) => { held.push(res); onRequest(); });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/openapi.json`, requested, close: () => { server.closeAllConnections(); server.close(); } };
}

const SLOW_ENV = { ...BASE_ENV, SOURCE_FETCH_ALLOW_PRIVATE: 'true', SOURCE_FETCH_TIMEOUT_MS: '600000' };
const INTERRUPTED = 'ingestion was interrupted by a server restart; rescan the source';

/** Starts a source create whose fetch never returns; resolves once the upstream has the request. */
async function startSlowSourceCreate(srv: RunningChild, key: string, upstreamUrl: string, requested: Promise<void>): Promise<RawConn> {
  const body = JSON.stringify({ url: upstreamUrl, type: 'openapi', name: 'Never answers' });
  const conn = await RawConn.open(srv.port);
  conn.write(postHead('/api/v1/sources', key, body) + body);
  await within(requested, 10_000, 'the source fetch to reach the upstream');
  return conn;
}

test('a request that never finishes does not hold the shutdown past SHUTDOWN_TIMEOUT_MS: exit 0 at the deadline, and the next start marks the source interrupted', async () => {
  const upstream = await silentUpstream();
  const dataDir = tempDir('sw-shutdown-');
  const srv = await startServer({ dataDir, env: { ...SLOW_ENV, SHUTDOWN_TIMEOUT_MS: '1500' } });
  try {
    const key = await srv.waitForKey();
    const conv = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: { subject: 'Kept', customer } });
    assert.equal(conv.status, 201);
    const slow = await startSlowSourceCreate(srv, key, upstream.url, upstream.requested);
    const signalledAt = performance.now();
    srv.proc.kill('SIGTERM');
    const exit = await within(srv.exited, 6000, 'the exit at the shutdown deadline');
    const tookMs = performance.now() - signalledAt;
    assert.deepEqual(exit, { code: 0, signal: null }, srv.stderr);
    assert.ok(tookMs >= 1400 && tookMs < 4000, `exit after ${Math.round(tookMs)} ms (SHUTDOWN_TIMEOUT_MS=1500)`);
    await within(slow.ended, 5000, 'the slow request\'s connection to close');

    const again = await startServer({ dataDir, env: SLOW_ENV });
    try {
      const list = await call<SourceList>(again.url, 'GET', '/api/v1/sources', { key });
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.sources.length, 1);
      assert.equal(list.body.sources[0].status, 'failed');
      assert.equal(list.body.sources[0].error, INTERRUPTED);
      assert.deepEqual((await call(again.url, 'GET', `/api/v1/conversations/${conv.body.conversation.id}`, { key })).body, conv.body);
    } finally { await again.stop(); }
  } finally { upstream.close(); await srv.stop('SIGKILL'); }
});

test('a second SIGTERM while a slow request holds the shutdown exits at once (non-zero); the next start recovers: data intact, the source marked failed as interrupted', async () => {
  const upstream = await silentUpstream();
  const dataDir = tempDir('sw-shutdown-');
  const srv = await startServer({ dataDir, env: { ...SLOW_ENV, SHUTDOWN_TIMEOUT_MS: '600000' } });
  try {
    const key = await srv.waitForKey();
    const conv = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: { subject: 'Kept', customer } });
    assert.equal(conv.status, 201);
    const msg = await call(srv.url, 'POST', `/api/v1/conversations/${conv.body.conversation.id}/messages`, { key, body: { role: 'user', body: 'Still here?' } });
    assert.equal(msg.status, 201);
    const kept = await call(srv.url, 'GET', `/api/v1/conversations/${conv.body.conversation.id}`, { key });
    const slow = await startSlowSourceCreate(srv, key, upstream.url, upstream.requested);

    srv.proc.kill('SIGTERM');
    await shuttingDown(srv);
    assert.equal(srv.exit, null, 'the first signal waits for the slow request');
    const secondAt = performance.now();
    srv.proc.kill('SIGTERM');
    const exit = await within(srv.exited, 3000, 'the exit after the second signal');
    const tookMs = performance.now() - secondAt;
    assert.deepEqual(exit, { code: 1, signal: null }, srv.stderr);
    assert.ok(tookMs < 1000, `the second signal took ${Math.round(tookMs)} ms to end the process`);
    assert.match(srv.stderr, /^support-workspace: SIGTERM again, exiting now$/m);
    await within(slow.ended, 5000, 'the slow request\'s connection to close');

    const again = await startServer({ dataDir, env: SLOW_ENV });
    try {
      assert.ok(!again.logLines().some((l) => l.msg === 'torn log tail set aside'), again.stdout);
      const list = await call<SourceList>(again.url, 'GET', '/api/v1/sources', { key });
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(list.body.sources.map((s: any) => ({ name: s.name, status: s.status, error: s.error })),
        [{ name: 'Never answers', status: 'failed', error: INTERRUPTED }]);
      const g = await call(again.url, 'GET', `/api/v1/conversations/${conv.body.conversation.id}`, { key });
      assert.deepEqual(g.body, kept.body);
      const msgs = await call<MessageList>(again.url, 'GET', `/api/v1/conversations/${conv.body.conversation.id}/messages`, { key });
      assert.deepEqual(msgs.body.messages.map((m: any) => m.body), ['Still here?']);
      // It accepts writes again.
      assert.equal((await call(again.url, 'POST', '/api/v1/conversations', { key, body: { subject: 'After the restart', customer } })).status, 201);
    } finally { await again.stop(); }
  } finally { upstream.close(); await srv.stop('SIGKILL'); }
});
