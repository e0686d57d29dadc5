/**
 * Requests on the wire, over raw sockets (node:http parses every request): an answer's head,
 * pipelined requests of every kind answered in order, heads split over writes, chunked bodies,
 * `Expect: 100-continue`, hostile heads, a client's reset and a client's half-close.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { startTestServer, type TestServer } from './helpers/server.js';
import { parseRawResponse, within, type RawResponse } from './helpers/raw.js';

/** Sends `bytes` on one connection (in the writes given) and reads `count` answers off it. */
async function exchange(srv: TestServer, writes: Array<string | Buffer>, count: number): Promise<{ answers: RawResponse[]; raw: Buffer[]; closed: boolean }> {
  const s = net.connect(srv.port, '127.0.0.1');
  await new Promise<void>((ok, fail) => { s.once('connect', ok); s.once('error', fail); });
  let data = Buffer.alloc(0);
  const answers: RawResponse[] = [];
  const raw: Buffer[] = [];
  let closed = false;
  const done = new Promise<void>((ok) => {
    s.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      for (let p = parseRawResponse(data); p; p = parseRawResponse(data)) {
        answers.push(p.response);
        raw.push(data.subarray(0, p.size));
        data = data.subarray(p.size);
      }
      if (answers.length >= count) ok();
    });
    s.on('close', () => { closed = true; ok(); });
  });
  for (const w of writes) { s.write(w); await new Promise((r) => setImmediate(r)); }
  await within(done, 10_000, `${count} answers`);
  s.destroy();
  return { answers, raw, closed };
}

const get = (srv: TestServer, path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.key}\r\n${extra}\r\n`;

/** An answer's head with the per-request values (request id, date, rate-limit figures) masked. */
function masked(raw: Buffer): string {
  return raw.toString('latin1')
    .replace(/^(X-Request-Id|Date|RateLimit-Remaining|RateLimit-Reset): .*$/gim, '$1: …');
}

test('answers on one kept-alive connection: status line, the headers every answer carries, keep-alive, then the body', async () => {
  const srv = await startTestServer();
  try {
    const created = await srv.call<{ issue: { id: string } }>('POST', '/api/v1/issues', { body: { subject: 'On the wire é ✓' } });
    assert.equal(created.status, 201);
    const paths = [`/api/v1/issues/${created.body.issue.id}`, '/api/v1/issues?limit=1', '/api/v1/issues/iss_missing', '/api/v1/nothing-here', '/api/v1/issues?limit=0'];
    const r = await exchange(srv, paths.map((p) => get(srv, p)), paths.length);
    const out = r.raw.map((b) => masked(b).split(created.body.issue.id).join('<id>'));
    assert.equal(r.closed, false);
    assert.match(out[0], /^HTTP\/1\.1 200 OK\r\nX-Request-Id: …\r\nApi-Version: 2026-06-29\r\nRateLimit-Limit: \d+\r\nRateLimit-Remaining: …\r\nRateLimit-Reset: …\r\n[^]*Content-Type: application\/json; charset=utf-8\r\nContent-Length: \d+\r\nDate: …\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n\{"issue":\{"object":"issue","id":"<id>",/);
    assert.equal((r.answers[0].body as { issue: { subject: string } }).issue.subject, 'On the wire é ✓');
    assert.deepEqual(r.answers.map((a) => a.status), [200, 200, 404, 404, 400]);
  } finally {
    await srv.close();
  }
});

test('pipelined GET, GET, POST, GET on one connection are answered in order, once each, and the connection is kept', async () => {
  const srv = await startTestServer();
  try {
    const body = JSON.stringify({ subject: 'made in the middle' });
    const post = `POST /api/v1/issues HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const r = await exchange(srv, [get(srv, '/api/v1/issues?limit=1') + get(srv, '/api/v1/nothing') + post + get(srv, '/api/v1/issues?limit=5')], 4);
    assert.deepEqual(r.answers.map((a) => a.status), [200, 404, 201, 200]);
    assert.equal((r.answers[3].body as { issues: Array<{ subject: string }> }).issues[0].subject, 'made in the middle');
    assert.equal(r.closed, false);
  } finally {
    await srv.close();
  }
});

test('a head split over two writes, a chunked body, Expect: 100-continue and a settings page are answered', async () => {
  const srv = await startTestServer();
  try {
    const whole = get(srv, '/api/v1/issues?limit=1');
    const split = await exchange(srv, [whole.slice(0, 20), whole.slice(20), whole], 2);
    assert.deepEqual(split.answers.map((a) => a.status), [200, 200]);

    const chunk = JSON.stringify({ subject: 'chunked' });
    const chunked = `POST /api/v1/issues HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`;
    const c = await exchange(srv, [whole, chunked], 2);
    assert.deepEqual(c.answers.map((a) => a.status), [200, 201]);

    const expect = `POST /api/v1/issues HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.key}\r\nContent-Type: application/json\r\nContent-Length: ${chunk.length}\r\nExpect: 100-continue\r\n\r\n`;
    const e = await exchange(srv, [whole, expect, chunk], 3);
    assert.deepEqual(e.answers.map((a) => a.status), [200, 100, 201]);

    const page = await exchange(srv, ['GET /settings/login HTTP/1.1\r\nHost: x\r\n\r\n'], 1);
    assert.equal(page.answers[0].status, 200);
    assert.match(page.answers[0].headers['content-type'], /^text\/html/);
  } finally {
    await srv.close();
  }
});

test('hostile heads after a good request: a 20 KiB header is 431, a lone LF or a bare CR 400, a GET with a body answered and closed', async () => {
  const srv = await startTestServer();
  try {
    const ok = get(srv, '/api/v1/issues?limit=1');
    const cases: Record<string, { writes: string[]; count: number }> = {
      big: { writes: [ok + `GET /api/v1/issues HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`], count: 2 },
      lf: { writes: [ok + 'GET /api/v1/issues HTTP/1.1\nHost: x\n\n'], count: 2 },
      cr: { writes: [ok + 'GET /api/v1/issues HTTP/1.1\r\nHost: x\rY: z\r\n\r\n'], count: 2 },
      body: { writes: [ok + `GET /api/v1/issues?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.key}\r\nContent-Length: 5\r\n\r\nhello` + ok], count: 3 },
    };
    const seen: Record<string, string> = {};
    for (const [name, c] of Object.entries(cases)) {
      const r = await exchange(srv, c.writes, c.count);
      seen[name] = `${r.answers.map((a) => a.status).join(',')}${r.closed ? ' closed' : ''}`;
    }
    assert.match(seen.big, /^200,431/);
    assert.match(seen.lf, /^200,400/);
    assert.match(seen.cr, /^200,400/);
    assert.equal(seen.body, '200,200 closed', 'a GET that sends a body is answered and its connection closed');
  } finally {
    await srv.close();
  }
});

test('a client that resets its connection with answers unread (TCP RST) leaves the server answering', async () => {
  // An RST while the server is reading or writing makes the socket emit ECONNRESET or EPIPE:
  // a socket without an 'error' listener would throw it and end the process.
  const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000' } });
  try {
    for (let round = 0; round < 5; round++) {
      const s = net.connect(srv.port, '127.0.0.1');
      await new Promise<void>((ok, fail) => { s.once('connect', ok); s.once('error', fail); });
      s.on('error', () => {});
      // Many reads at once, none of their answers read: the server is still writing when the RST comes.
      s.write(get(srv, '/api/v1/issues?limit=100').repeat(400));
      await new Promise((ok) => setImmediate(ok));
      s.resetAndDestroy();
    }
    const after = await fetch(`${srv.url}/api/v1/issues?limit=1`, { headers: { authorization: `Bearer ${srv.key}` } });
    assert.equal(after.status, 200);
  } finally {
    await srv.close();
  }
});

test('a client that half-closes (FIN) gets its answers, then our FIN at once — not at the headers or keep-alive timeout', { timeout: 10_000 }, async () => {
  const srv = await startTestServer({ env: { HEADERS_TIMEOUT_MS: '60000', KEEP_ALIVE_TIMEOUT_MS: '60000' } });
  try {
    const out: string[] = [];
    for (const writes of [[], [get(srv, '/api/v1/issues?limit=1')], [get(srv, '/api/v1/issues?limit=1') + get(srv, '/api/v1/issues?limit=2')]]) {
      const s = net.connect(srv.port, '127.0.0.1');
      await new Promise<void>((ok, fail) => { s.once('connect', ok); s.once('error', fail); });
      let data = Buffer.alloc(0);
      s.on('data', (d: Buffer) => { data = Buffer.concat([data, d]); });
      for (const w of writes) s.write(w);
      s.end();
      // Our FIN: 'end' on this side (the test's timeout fails it if the server waits for a timer).
      await new Promise<void>((ok) => s.once('end', ok));
      const statuses: number[] = [];
      for (let p = parseRawResponse(data); p; p = parseRawResponse(data)) { statuses.push(p.response.status); data = data.subarray(p.size); }
      out.push(statuses.join(',') || 'none');
      s.destroy();
    }
    assert.deepEqual(out, ['none', '200', '200,200']);
  } finally {
    await srv.close();
  }
});
