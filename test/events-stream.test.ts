/**
 * GET /api/v1/events/stream (docs/api.md#event-stream), black-box over HTTP: events as Server-Sent Events in the list's
 * order, each the event the API retrieves; `type` filter; `Last-Event-ID` resume across a restart gives exactly the
 * missed events; scope and key checks; the SSE_MAX_STREAMS bound; a stream that never reads holds a bounded output
 * and is closed by the stall sweep; a slow reader catches up beside live ones; heartbeats.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';

interface Frame { id?: string; event?: string; data?: string; comment?: boolean }

/** An open stream: frames as they come, parsed per the WHATWG rules the server uses (field: value lines). */
class SseClient {
  readonly frames: Frame[] = [];
  private buf = '';
  private waiters: Array<() => void> = [];
  private constructor(readonly res: Response, private readonly abort: AbortController) {}

  static async open(srv: TestServer,
    o: { key?: string; query?: string; lastEventId?: string; paused?: boolean } = {}): Promise<SseClient> {
    const abort = new AbortController();
    const headers: Record<string, string> = { Authorization: `Bearer ${o.key ?? srv.key}` };
    if (o.lastEventId) headers['Last-Event-ID'] = o.lastEventId;
    const res = await fetch(`${srv.url}/api/v1/events/stream${o.query ?? ''}`, { headers, signal: abort.signal });
    const c = new SseClient(res, abort);
    if (res.status === 200 && !o.paused) void c.read();
    return c;
  }

  /** Starts reading a stream opened with `paused` (until then its socket fills up and the server waits). */
  resume(): void { void this.read(); }

  private async read(): Promise<void> {
    const dec = new TextDecoder();
    try {
      for await (const chunk of this.res.body as unknown as AsyncIterable<Uint8Array>) {
        this.buf += dec.decode(chunk, { stream: true });
        let end: number;
        while ((end = this.buf.indexOf('\n\n')) !== -1) {
          const block = this.buf.slice(0, end);
          this.buf = this.buf.slice(end + 2);
          const f: Frame = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) { f.comment = true; continue; }
            const i = line.indexOf(': ');
            const [k, v] = [line.slice(0, i), line.slice(i + 2)];
            if (k === 'id' || k === 'event' || k === 'data') f[k] = v;
          }
          this.frames.push(f);
          for (const w of this.waiters.splice(0)) w();
        }
      }
    } catch { /* aborted */ }
  }

  /** The event frames (not comments, not the retry line). */
  events(): Frame[] { return this.frames.filter((f) => f.event !== undefined); }

  /** Resolves once `n` event frames have come (rejects after `ms`, 5 s by default). */
  async until(n: number, what = `${n} events`, ms = 5000): Promise<Frame[]> {
    const deadline = setTimeout(() => { for (const w of this.waiters.splice(0)) w(); }, ms);
    try {
      while (this.events().length < n) {
        await new Promise<void>((r) => this.waiters.push(r));
        if (this.events().length < n && !deadline.hasRef()) break;
      }
    } finally { clearTimeout(deadline); }
    assert.ok(this.events().length >= n, `${what}: got ${JSON.stringify(this.events().map((e) => e.event))}`);
    return this.events();
  }

  close(): void { this.abort.abort(); }
}

const convBody = (i: number) => ({ subject: `Stream ${i}`, customer: { email: 'ada@example.com' } });

test('events arrive in order, each frame the event GET /api/v1/events/{id} returns, with the stream headers', async () => {
  const srv = await startTestServer();
  try {
    const sse = await SseClient.open(srv);
    assert.equal(sse.res.status, 200);
    assert.equal(sse.res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    assert.equal(sse.res.headers.get('cache-control'), 'no-store');
    assert.equal(sse.res.headers.get('x-accel-buffering'), 'no');
    const c = await srv.call<{ conversation: { id: string } }>('POST', '/api/v1/conversations', { body: convBody(1) });
    await srv.call('POST', `/api/v1/conversations/${c.body.conversation.id}/messages`,
      { body: { role: 'user', body: 'Hello' } });
    const got = await sse.until(3);
    assert.deepEqual(got.map((f) => f.event), ['conversation.created', 'message.created', 'conversation.updated']);
    for (const f of got) {
      const one = await srv.call<{ event: unknown }>('GET', `/api/v1/events/${f.id}`);
      assert.deepEqual(JSON.parse(f.data!), one.body.event);
    }
    const list = await srv.call<{ events: Array<{ id: string }> }>('GET', '/api/v1/events');
    assert.deepEqual(got.map((f) => f.id), list.body.events.map((e) => e.id).reverse());
    sse.close();
  } finally { await srv.close(); }
});

test('?type=message.created and ?type=conversation.* filter the stream', async () => {
  const srv = await startTestServer();
  try {
    const messages = await SseClient.open(srv, { query: '?type=message.created' });
    const conversations = await SseClient.open(srv, { query: '?type=conversation.*' });
    const c = await srv.call<{ conversation: { id: string } }>('POST', '/api/v1/conversations', { body: convBody(1) });
    await srv.call('POST', `/api/v1/conversations/${c.body.conversation.id}/messages`,
      { body: { role: 'user', body: 'Hello' } });
    assert.deepEqual((await conversations.until(2)).map((f) => f.event), ['conversation.created', 'conversation.updated']);
    assert.deepEqual((await messages.until(1)).map((f) => f.event), ['message.created']);
    const bad = await fetch(`${srv.url}/api/v1/events/stream?type=nope`, { headers: { Authorization: `Bearer ${srv.key}` } });
    assert.equal(bad.status, 400);
    messages.close(); conversations.close();
  } finally { await srv.close(); }
});

test('Last-Event-ID after a restart: exactly the events missed, then live ones', async () => {
  const dataDir = tempDir('sw-sse-');
  let srv = await startTestServer({ dataDir });
  const key = srv.key;
  let last: string;
  try {
    const sse = await SseClient.open(srv);
    for (let i = 0; i < 2; i++) await srv.call('POST', '/api/v1/conversations', { body: convBody(i) });
    last = (await sse.until(2)).at(-1)!.id!;
    sse.close();
    for (let i = 2; i < 5; i++) await srv.call('POST', '/api/v1/conversations', { body: convBody(i) });
  } finally { await srv.close(); }
  srv = await startTestServer({ dataDir });
  try {
    const sse = await SseClient.open(srv, { key, lastEventId: last });
    const missed = await sse.until(3);
    assert.deepEqual(missed.map((f) => (JSON.parse(f.data!) as { data: { object: { subject: string } } }).data.object
      .subject), ['Stream 2', 'Stream 3', 'Stream 4']);
    await srv.call('POST', '/api/v1/conversations', { key, body: convBody(5) });
    const all = await sse.until(4);
    assert.equal(all.length, 4, 'no event twice');
    assert.equal((JSON.parse(all[3].data!) as { data: { object: { subject: string } } }).data.object.subject, 'Stream 5');
    sse.close();
  } finally { await srv.close(); }
});

test('a key without events:read → 403; no key → 401; past SSE_MAX_STREAMS → 503 with Retry-After', async () => {
  const srv = await startTestServer({ env: { SSE_MAX_STREAMS: '1' } });
  try {
    const narrow = await srv.newKey({ scopes: 'conversations:read' });
    const r403 = await srv.call('GET', '/api/v1/events/stream', { key: narrow });
    assert.equal(r403.status, 403);
    assert.deepEqual(r403.body, { code: 'insufficient_scope',
      error: 'This API key is missing the required scope: this operation needs events:read.' });
    const r401 = await srv.call('GET', '/api/v1/events/stream', { key: null });
    assert.equal(r401.status, 401);
    const one = await SseClient.open(srv);
    assert.equal(one.res.status, 200);
    const two = await fetch(`${srv.url}/api/v1/events/stream`, { headers: { Authorization: `Bearer ${srv.key}` } });
    assert.equal(two.status, 503);
    assert.equal(two.headers.get('retry-after'), '10');
    assert.deepEqual(await two.json(), { code: 'service_unavailable', error: 'The server is shutting down or cannot '
      + 'accept writes right now: too many event streams are open.' });
    one.close();
  } finally { await srv.close(); }
});

test('a stream that never reads holds at most ~64 KiB of output and is closed by the stall sweep', async () => {
  const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000', RATE_LIMIT_PER_MINUTE: '1000000' } });
  try {
    const sock = net.connect(srv.port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write(`GET /api/v1/events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.key}\r\n\r\n`);
    sock.pause();
    // Until the server has it open.
    for (let i = 0; i < 200 && srv.streams.open === 0; i++) await new Promise((r) => setImmediate(r));
    assert.equal(srv.streams.open, 1);
    const c = await srv.call<{ conversation: { id: string } }>('POST', '/api/v1/conversations', { body: convBody(0) });
    const text = 'x'.repeat(15_000);
    // 1,500 messages of 15 KB: more than the kernel's socket buffers take, so the stream must wait for its reader.
    for (let i = 0; i < 1500; i++) {
      const m = await srv.call('POST', `/api/v1/conversations/${c.body.conversation.id}/messages`,
        { body: { role: 'user', body: text } });
      assert.equal(m.status, 201);
    }
    const stats = srv.connections.stats();
    assert.ok(stats.maxUnsentBytes > 0 && stats.maxUnsentBytes <= 128 * 1024, `unsent ${stats.maxUnsentBytes} bytes`);
    srv.clock.advance(31_000);
    srv.connections.sweep();
    srv.clock.advance(31_000);
    srv.connections.sweep();
    for (let i = 0; i < 200 && srv.streams.open > 0; i++) await new Promise((r) => setImmediate(r));
    assert.equal(srv.streams.open, 0, 'closed');
    sock.destroy();
  } finally { await srv.close(); }
});

test('a reader that falls behind catches up beside live readers: every event once, in order', async () => {
  const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000', RATE_LIMIT_PER_MINUTE: '1000000' } });
  try {
    const live = await SseClient.open(srv);
    const sameFilter = await SseClient.open(srv);
    const messages = await SseClient.open(srv, { query: '?type=message.created' });
    const slow = await SseClient.open(srv, { paused: true });
    const c = await srv.call<{ conversation: { id: string } }>('POST', '/api/v1/conversations', { body: convBody(0) });
    // 300 messages of 15 KB: more than the socket buffers hold, so the slow stream falls behind and waits.
    const text = 'y'.repeat(15_000);
    for (let i = 0; i < 300; i++) {
      const m = await srv.call('POST', `/api/v1/conversations/${c.body.conversation.id}/messages`,
        { body: { role: 'user', body: `${i} ${text}` } });
      assert.equal(m.status, 201);
    }
    const all = await live.until(601, 'the live stream', 20_000);
    assert.ok(srv.connections.stats().maxUnsentBytes > 64 * 1024, 'the slow stream had output waiting');
    slow.resume();
    const caughtUp = await slow.until(601, 'the slow stream', 20_000);
    const ids = (fs: Frame[]) => fs.map((f) => f.id);
    assert.equal(new Set(ids(all)).size, 601);
    assert.deepEqual(ids(caughtUp), ids(all));
    assert.deepEqual(ids(await sameFilter.until(601)), ids(all));
    assert.deepEqual(ids(await messages.until(300)), ids(all.filter((f) => f.event === 'message.created')));
    // A message written now reaches the caught-up stream once, live.
    await srv.call('POST', `/api/v1/conversations/${c.body.conversation.id}/messages`, { body: { role: 'user', body: 'z' } });
    assert.equal((await slow.until(603)).length, 603);
    assert.equal(new Set(ids(slow.events())).size, 603);
    for (const s of [live, sameFilter, messages, slow]) s.close();
  } finally { await srv.close(); }
});

test('a heartbeat is a comment line on every open stream', async () => {
  const srv = await startTestServer();
  try {
    const sse = await SseClient.open(srv);
    for (let i = 0; i < 200 && srv.streams.open === 0; i++) await new Promise((r) => setImmediate(r));
    const before = sse.frames.filter((f) => f.comment).length;
    srv.streams.heartbeat();
    for (let i = 0; i < 500 && sse.frames.filter((f) => f.comment).length === before; i++) {
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(sse.frames.filter((f) => f.comment).length, before + 1);
    sse.close();
  } finally { await srv.close(); }
});
