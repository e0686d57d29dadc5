/**
 * The fast path for plain reads (src/http/fastPath.ts, docs/decisions.md#a-fast-path-for-plain-reads):
 * which heads it takes (unit), that its answers are byte for byte node:http's but for the
 * per-request values, and that a connection moves to node:http at its first request that is
 * not a plain read, with every answer in order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import type { Socket } from 'node:net';
import { FastResponse, type Conn, type FastPath, type FastRequest } from '../src/http/fastPath.js';
import { parseHead } from '../src/http/plainHead.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { parseRawResponse, within, type RawResponse } from './helpers/raw.js';

const sock = {} as Socket;

test('parseHead takes a plain GET: names lower-cased, OWS trimmed, empty values kept', () => {
  const r = parseHead('GET /api/v1/issues?limit=2 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\nX-Empty:\r\nX-Sp: \t v v \t', sock);
  assert.ok(r);
  assert.equal(r.url, '/api/v1/issues?limit=2');
  assert.deepEqual({ ...r.headers }, { host: 'a', authorization: 'Bearer k', 'x-empty': '', 'x-sp': 'v v' });
  // No inherited name: the prototype is an empty object without one.
  assert.equal(Object.getPrototypeOf(Object.getPrototypeOf(r.headers)), null);
  assert.deepEqual(Object.getOwnPropertyNames(Object.getPrototypeOf(r.headers)), []);
  assert.equal('constructor' in r.headers, false);
  const odd = parseHead('GET / HTTP/1.1\r\nHost: a\r\n__proto__: p\r\nConstructor: c\r\ntoString: t', sock);
  assert.ok(odd, 'names that are properties of Object.prototype are plain fields');
  assert.deepEqual(Object.entries(odd.headers), [['host', 'a'], ['__proto__', 'p'], ['constructor', 'c'], ['tostring', 't']]);
  assert.equal(Object.getPrototypeOf(Object.getPrototypeOf(odd.headers)), null, 'a `__proto__` field set no prototype');
  assert.equal(parseHead('GET / HTTP/1.1\r\nHost: a\r\nconstructor: 1\r\nConstructor: 2', sock), null, 'the same name twice');
  assert.equal(parseHead('GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive', sock)?.headers.connection, 'Keep-Alive');
});

test('parseHead refuses every head that is not a plain read (the connection goes to node:http)', () => {
  const refused: Record<string, string> = {
    'another method': 'POST /api/v1/x HTTP/1.1\r\nHost: a',
    HEAD: 'HEAD /api/v1/x HTTP/1.1\r\nHost: a',
    'HTTP/1.0': 'GET /api/v1/x HTTP/1.0\r\nHost: a',
    'HTTP/2 preface-like': 'GET /api/v1/x HTTP/2.0\r\nHost: a',
    'no Host': 'GET /api/v1/x HTTP/1.1\r\nAccept: */*',
    'two Hosts': 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\nhost: b',
    'a name twice': 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer a\r\nauthorization: Bearer b',
    'Content-Length, even 0': 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 0',
    'Transfer-Encoding': 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked',
    Expect: 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue',
    Upgrade: 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade',
    'Connection: close': 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\nConnection: close',
    'obs-fold': 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\n folded',
    'a lone LF': 'GET /api/v1/x HTTP/1.1\r\nHost: a\nX: y',
    'a lone CR': 'GET /api/v1/x HTTP/1.1\r\nHost: a\rX: y',
    'a NUL in a value': 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\nX: a\u0000b',
    'obs-text in a value': 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\nX: \u00ff',
    'a space before the colon': 'GET /api/v1/x HTTP/1.1\r\nHost : a',
    'an empty name': 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\n: y',
    'no colon': 'GET /api/v1/x HTTP/1.1\r\nHost: a\r\nnocolon',
    'two spaces after the method': 'GET  /api/v1/x HTTP/1.1\r\nHost: a',
    'a space in the target': 'GET /api/v1/x y HTTP/1.1\r\nHost: a',
    'a non-ASCII target': 'GET /api/v1/\u00e9 HTTP/1.1\r\nHost: a',
    'absolute form': 'GET http://a/api/v1/x HTTP/1.1\r\nHost: a',
    'asterisk form': 'GET * HTTP/1.1\r\nHost: a',
    'no request line': '',
    '65 header lines': 'GET /api/v1/x HTTP/1.1\r\nHost: a' + Array.from({ length: 64 }, (_, i) => `\r\nX-${i}: v`).join(''),
  };
  for (const [why, head] of Object.entries(refused)) assert.equal(parseHead(head, sock), null, why);
  assert.ok(parseHead('GET /api/v1/x HTTP/1.1\r\nHost: a' + Array.from({ length: 63 }, (_, i) => `\r\nX-${i}: v`).join(''), sock), '64 header lines are taken');
});

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

test('FastResponse.writeHead refuses a header name that is not a token and a value with CR, LF or a control character, as node:http does', () => {
  const path = { date: () => 'Tue, 24 Nov 2026 00:00:00 GMT', keepAliveLines: 'Connection: keep-alive\r\n\r\n' } as unknown as FastPath;
  const answer = () => new FastResponse({} as FastRequest, path, {} as Conn);
  const ok = answer().writeHead(200, ['X-Request-Id', 'abc', 'Content-Length', '0']);
  assert.equal(ok.statusCode, 200);
  for (const [name, value] of [['X-A', 'a\r\nSet-Cookie: x=1'], ['X-A', 'a\nb'], ['X-A', 'a\rb'], ['X-A', 'a\u0000'], ['X-A', 'caf\u00e9'], ['Connection', 'close\r\nX: y']]) {
    assert.throws(() => answer().writeHead(200, ['X-Ok', '1', name, value]), { name: 'TypeError', message: /invalid response header value/ }, JSON.stringify(value));
  }
  for (const name of ['X A', 'X:A', '', 'X\r\nY', 'caf\u00e9']) {
    assert.throws(() => answer().writeHead(200, [name, 'v']), { name: 'TypeError', message: /invalid response header name/ }, JSON.stringify(name));
  }
});

test('a head FastResponse.writeHead refused leaves nothing behind: the error answer after it is kept alive unless it says Connection: close', () => {
  const written: Array<{ head: string; close: boolean }> = [];
  const path = {
    date: () => 'Tue, 24 Nov 2026 00:00:00 GMT', keepAliveLines: 'Connection: keep-alive\r\n\r\n',
    write: (_c: Conn, head: string, _body: unknown, close: boolean) => { written.push({ head, close }); },
  } as unknown as FastPath;
  const res = new FastResponse({} as FastRequest, path, {} as Conn);
  assert.throws(() => res.writeHead(200, ['Connection', 'close', 'X-A', 'a\nb']), { name: 'TypeError', message: /invalid response header value/ });
  assert.equal(res.statusCode, 200);
  res.writeHead(500, ['Content-Length', '0']).end();
  assert.deepEqual(written, [{ head: 'HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nDate: Tue, 24 Nov 2026 00:00:00 GMT\r\nConnection: keep-alive\r\n\r\n', close: false }]);
});

test('an answer on the fast path is byte for byte the answer node:http gives, but for the per-request values', async () => {
  const fast = await startTestServer();
  const slow = await startTestServer({ env: { HTTP_FAST_PATH: 'false' } });
  try {
    assert.equal(slow.fast, null);
    const outputs: string[][] = [];
    for (const srv of [fast, slow]) {
      const created = await srv.call<{ issue: { id: string } }>('POST', '/api/v1/issues', { body: { subject: 'Fast path é ✓' } });
      assert.equal(created.status, 201);
      // The issue's id differs between the two servers: name it the same in both outputs.
      const paths = [`/api/v1/issues/${created.body.issue.id}`, '/api/v1/issues?limit=1', '/api/v1/issues/iss_missing', '/api/v1/nothing-here', '/api/v1/issues?limit=0'];
      const before = srv.fast?.handedOver ?? 0;
      const r = await exchange(srv, paths.map((p) => get(srv, p)), paths.length);
      if (srv.fast) assert.equal(srv.fast.handedOver, before, 'plain reads stay on the fast path');
      outputs.push(r.raw.map((b) => masked(b).split(created.body.issue.id).join('<id>')));
    }
    assert.ok(fast.fast!.answered >= 5, `the fast path answered ${fast.fast!.answered} requests`);
    assert.deepEqual(outputs[0], outputs[1]);
    assert.match(outputs[0][0], /^HTTP\/1\.1 200 OK\r\n[^]*Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n\{"issue":/);
    assert.match(outputs[0][2], /^HTTP\/1\.1 404 Not Found\r\n/);
    assert.match(outputs[0][4], /^HTTP\/1\.1 400 Bad Request\r\n/);
  } finally {
    await fast.close();
    await slow.close();
  }
});

test('a connection moves to node:http at its first request that is not a plain read: pipelined GET, GET, POST, GET are answered in order, once each', async () => {
  const srv = await startTestServer();
  try {
    const body = JSON.stringify({ subject: 'made on node:http' });
    const post = `POST /api/v1/issues HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const before = srv.fast!.handedOver;
    const r = await exchange(srv, [get(srv, '/api/v1/issues?limit=1') + get(srv, '/api/v1/nothing') + post + get(srv, '/api/v1/issues?limit=5')], 4);
    assert.deepEqual(r.answers.map((a) => a.status), [200, 404, 201, 200]);
    assert.equal((r.answers[3].body as { issues: Array<{ subject: string }> }).issues[0].subject, 'made on node:http');
    assert.equal(srv.fast!.handedOver, before + 1);
    assert.equal(r.closed, false);
  } finally {
    await srv.close();
  }
});

test('a head split over two writes, a chunked body, Expect: 100-continue and a settings page go to node:http and are answered as before', async () => {
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

test('hostile heads after a plain read get node:http\'s answers, as with HTTP_FAST_PATH=false: a 20 KiB header, a lone LF, a GET with a body, a bare CR', async () => {
  const fast = await startTestServer();
  const slow = await startTestServer({ env: { HTTP_FAST_PATH: 'false' } });
  try {
    const cases = (srv: TestServer): Record<string, { writes: string[]; count: number }> => {
      const ok = get(srv, '/api/v1/issues?limit=1');
      return {
        big: { writes: [ok + `GET /api/v1/issues HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`], count: 2 },
        lf: { writes: [ok + 'GET /api/v1/issues HTTP/1.1\nHost: x\n\n'], count: 2 },
        cr: { writes: [ok + 'GET /api/v1/issues HTTP/1.1\r\nHost: x\rY: z\r\n\r\n'], count: 2 },
        body: { writes: [ok + `GET /api/v1/issues?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${srv.key}\r\nContent-Length: 5\r\n\r\nhello` + ok], count: 3 },
      };
    };
    const seen: Array<Record<string, string>> = [];
    for (const srv of [fast, slow]) {
      const out: Record<string, string> = {};
      for (const [name, c] of Object.entries(cases(srv))) {
        const r = await exchange(srv, c.writes, c.count);
        out[name] = `${r.answers.map((a) => a.status).join(',')}${r.closed ? ' closed' : ''}`;
      }
      seen.push(out);
    }
    assert.deepEqual(seen[0], seen[1]);
    assert.match(seen[0].big, /^200,431/);
    assert.match(seen[0].lf, /^200,400/);
    assert.match(seen[0].cr, /^200,400/);
    assert.equal(seen[0].body, '200,200 closed', 'a GET that sends a body is answered and its connection closed, as before');
    assert.equal(fast.fast!.handedOver, 4);
  } finally {
    await fast.close();
    await slow.close();
  }
});

test('a client that resets its connection with answers unread (TCP RST) leaves the server answering, on the fast path and on node:http', async () => {
  // An RST while the server is reading or writing makes the socket emit ECONNRESET or EPIPE:
  // a socket without an 'error' listener would throw it and end the process.
  const envs: Array<Record<string, string>> = [{ RATE_LIMIT_BURST: '100000' }, { RATE_LIMIT_BURST: '100000', HTTP_FAST_PATH: 'false' }];
  for (const env of envs) {
    const srv = await startTestServer({ env });
    try {
      for (let round = 0; round < 5; round++) {
        const s = net.connect(srv.port, '127.0.0.1');
        await new Promise<void>((ok, fail) => { s.once('connect', ok); s.once('error', fail); });
        s.on('error', () => {});
        // Many plain reads at once, none of their answers read: the server is still writing when the RST comes.
        s.write(get(srv, '/api/v1/issues?limit=100').repeat(400));
        await new Promise((ok) => setImmediate(ok));
        s.resetAndDestroy();
      }
      const after = await fetch(`${srv.url}/api/v1/issues?limit=1`, { headers: { authorization: `Bearer ${srv.key}` } });
      assert.equal(after.status, 200);
    } finally {
      await srv.close();
    }
  }
});

test('a client that half-closes (FIN) gets its answers, then our FIN at once — not at the headers or keep-alive timeout — on both paths', { timeout: 10_000 }, async () => {
  const envs: Array<Record<string, string>> = [{ HEADERS_TIMEOUT_MS: '60000', KEEP_ALIVE_TIMEOUT_MS: '60000' }, { HEADERS_TIMEOUT_MS: '60000', KEEP_ALIVE_TIMEOUT_MS: '60000', HTTP_FAST_PATH: 'false' }];
  const seen: string[][] = [];
  for (const env of envs) {
    const srv = await startTestServer({ env });
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
      seen.push(out);
    } finally {
      await srv.close();
    }
  }
  assert.deepEqual(seen[0], ['none', '200', '200,200']);
  assert.deepEqual(seen[1], seen[0]);
});
