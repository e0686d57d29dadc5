/**
 * GET /widget/v1/stream (docs/api.md#live-chat-stream): the visitor's own conversations only, public fields only,
 * `?session=` for EventSource, `Last-Event-ID` resume across a restart with exactly the missed events, 3 streams per
 * session, and a stream that never reads holding bounded output until the stall sweep closes it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';

const ORIGIN = 'https://shop.example';
const LIMITS = { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' };
interface Frame { id?: string; event?: string; data?: string; comment?: boolean }

/** A widget stream read frame by frame. */
class Sse {
  readonly frames: Frame[] = [];
  private buf = '';
  private waiters: Array<() => void> = [];
  private constructor(readonly res: Response, private readonly abort: AbortController) {}
  static async open(srv: TestServer, token: string, lastEventId?: string): Promise<Sse> {
    const abort = new AbortController();
    const headers: Record<string, string> = { Origin: ORIGIN };
    if (lastEventId) headers['Last-Event-ID'] = lastEventId;
    const res = await fetch(`${srv.url}/widget/v1/stream?session=${token}`, { headers, signal: abort.signal });
    const s = new Sse(res, abort);
    if (res.status === 200) void s.read();
    return s;
  }
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
  events(): Frame[] { return this.frames.filter((f) => f.event !== undefined); }
  async until(n: number): Promise<Frame[]> {
    const deadline = setTimeout(() => { for (const w of this.waiters.splice(0)) w(); }, 5000);
    try {
      while (this.events().length < n) {
        await new Promise<void>((r) => this.waiters.push(r));
        if (this.events().length < n && !deadline.hasRef()) break;
      }
    } finally { clearTimeout(deadline); }
    assert.ok(this.events().length >= n, `got ${JSON.stringify(this.events().map((e) => e.event))}`);
    return this.events();
  }
  close(): void { this.abort.abort(); }
}

async function setup(srv: TestServer) {
  const agent = await srv.admin.createDefinition('agent', srv.workspaceId, { name: 'Desk' }) as any;
  await srv.call('PATCH', `/api/v1/agents/${agent.id}`, { body: { allowedOrigins: [ORIGIN] } });
  const open = async () => {
    const r = await srv.call<any>('POST', '/widget/v1/sessions', { key: agent.widgetKey, body: {}, headers: { Origin: ORIGIN } });
    srv.watch(r.body.session.token);
    return r.body.session.token as string;
  };
  return { open };
}
const start = (srv: TestServer, token: string, body: string) => srv.call<any>('POST', '/widget/v1/conversations',
  { key: token, body: { body }, headers: { Origin: ORIGIN } }).then((r) => r.body.conversation.id as string);

test('the visitor\'s events only, in the visitor\'s view: no customer record, no key ids, no previous values', async () => {
  const srv = await startTestServer({ env: LIMITS });
  try {
    const { open } = await setup(srv);
    const a = await open();
    const b = await open();
    const sse = await Sse.open(srv, a);
    assert.equal(sse.res.status, 200);
    assert.equal(sse.res.headers.get('access-control-allow-origin'), ORIGIN);
    const mine = await start(srv, a, 'Mine');
    await start(srv, b, 'Not mine');
    await srv.call('POST', `/api/v1/conversations/${mine}/messages`, { body: { role: 'agent', body: 'Reply' } });
    const evs = await sse.until(3);
    const datas = evs.map((f) => JSON.parse(f.data!));
    // The reply's message and the conversation it made `waiting`, in one commit; nothing of the other visitor's.
    assert.deepEqual(evs.map((f) => f.event), ['message.created', 'message.created', 'conversation.updated']);
    assert.deepEqual(datas.map((d) => d.data.object.body ?? d.data.object.status), ['Mine', 'Reply', 'waiting']);
    assert.deepEqual(datas[1].data.object.author, { type: 'api' });
    assert.deepEqual(Object.keys(datas[2].data.object), ['object', 'id', 'status', 'subject', 'preview', 'createdAt', 'updatedAt', 'lastMessageAt']);
    for (const d of datas) {
      assert.deepEqual(Object.keys(d), ['object', 'id', 'type', 'createdAt', 'data']);
      assert.equal(d.data.object.customer, undefined);
      assert.equal(d.data.object.priority, undefined);
    }
    sse.close();
  } finally { await srv.close(); }
});

test('Last-Event-ID after a restart: exactly the missed events; the session survives the restart', async () => {
  const dataDir = tempDir('sw-wsse-');
  let srv = await startTestServer({ dataDir, env: LIMITS });
  let token = '';
  let last = '';
  let conv = '';
  try {
    const { open } = await setup(srv);
    token = await open();
    const sse = await Sse.open(srv, token);
    conv = await start(srv, token, 'm0');
    last = (await sse.until(1)).at(-1)!.id!;
    sse.close();
    for (let i = 1; i < 4; i++) await srv.call('POST', `/widget/v1/conversations/${conv}/messages`, { key: token, body: { body: `m${i}` }, headers: { Origin: ORIGIN } });
  } finally { await srv.close(); }
  srv = await startTestServer({ dataDir, env: LIMITS });
  srv.watch(token);
  try {
    const sse = await Sse.open(srv, token, last);
    assert.equal(sse.res.status, 200);
    // Each visitor message: message.created, then conversation.updated (its preview).
    const missed = await sse.until(6);
    assert.deepEqual(missed.map((f) => f.event), ['message.created', 'conversation.updated', 'message.created', 'conversation.updated', 'message.created', 'conversation.updated']);
    assert.deepEqual(missed.map((f) => JSON.parse(f.data!).data.object).map((o) => o.body ?? o.preview), ['m1', 'm1', 'm2', 'm2', 'm3', 'm3']);
    await srv.call('POST', `/widget/v1/conversations/${conv}/messages`, { key: token, body: { body: 'm4' }, headers: { Origin: ORIGIN } });
    const all = await sse.until(8);
    assert.equal(all.length, 8, 'no event twice');
    sse.close();
  } finally { await srv.close(); }
});

test('a 4th stream of one session → 429 with Retry-After; a bad session → 401', async () => {
  const srv = await startTestServer({ env: LIMITS });
  try {
    const { open } = await setup(srv);
    const token = await open();
    const streams = [await Sse.open(srv, token), await Sse.open(srv, token), await Sse.open(srv, token)];
    for (const s of streams) assert.equal(s.res.status, 200);
    const r = await srv.call('GET', `/widget/v1/stream?session=${token}`, { key: null, headers: { Origin: ORIGIN } });
    assert.equal(r.status, 429);
    assert.equal(r.headers.get('retry-after'), '5');
    assert.equal(r.headers.get('access-control-allow-origin'), ORIGIN);
    assert.deepEqual(r.body, { code: 'rate_limited', error: 'Too many API requests. Slow down and try again shortly: a session may have at most 3 open streams.' });
    streams[0].close();
    for (let i = 0; i < 200 && srv.streams.open > 2; i++) await new Promise((res) => setImmediate(res));
    const again = await Sse.open(srv, token);
    assert.equal(again.res.status, 200);
    const bad = await srv.call('GET', '/widget/v1/stream?session=svcs_x', { key: null, headers: { Origin: ORIGIN } });
    assert.equal(bad.status, 401);
    for (const s of [...streams, again]) s.close();
  } finally { await srv.close(); }
});

test('a widget stream that never reads holds at most ~64 KiB of output and is closed by the stall sweep', async () => {
  const srv = await startTestServer({ env: LIMITS });
  try {
    const { open } = await setup(srv);
    const token = await open();
    const conv = await start(srv, token, 'hello');
    const sock = net.connect(srv.port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write(`GET /widget/v1/stream?session=${token} HTTP/1.1\r\nHost: x\r\nOrigin: ${ORIGIN}\r\n\r\n`);
    sock.pause();
    for (let i = 0; i < 200 && srv.streams.open === 0; i++) await new Promise((r) => setImmediate(r));
    assert.equal(srv.streams.open, 1);
    const text = 'x'.repeat(15_000);
    for (let i = 0; i < 1500; i++) {
      const m = await srv.call('POST', `/api/v1/conversations/${conv}/messages`, { body: { role: 'agent', body: text } });
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
