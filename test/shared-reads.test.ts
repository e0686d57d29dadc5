/**
 * Reads into one shared buffer (src/http/sharedReads.ts, docs/decisions.md#reads-into-one-shared-buffer):
 * the mode is on for the fast path's connections on this Node, and the bytes a connection keeps
 * past a read (what node:http will parse after the hand-over) are its own, whatever other
 * connections read into the shared buffer meanwhile. And the other way: answers written from
 * one reused slab arrive intact when a client does not read and its answers wait on the socket.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { FastPath, type FastRequest, type FastResponse } from '../src/http/fastPath.js';
import { readIntoShared, sharedReadsAvailable } from '../src/http/sharedReads.js';
import { parseRawResponse } from './helpers/raw.js';

test('this Node has the hooks: shared reads are on (not the per-read Buffer fallback)', () => {
  assert.equal(sharedReadsAvailable, true);
});

test('readIntoShared hands each read over as a view of one buffer, and a socket without a stream handle is left as it is', async () => {
  const server = net.createServer();
  const seen: Array<{ text: string; buffer: ArrayBufferLike }> = [];
  let switched = false;
  server.on('connection', (sock) => {
    switched = readIntoShared(sock, (bytes) => { seen.push({ text: bytes.toString(), buffer: bytes.buffer }); return true; });
    sock.on('data', () => assert.fail('a read went to the data listener'));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  await new Promise((ok) => client.once('connect', ok));
  for (const part of ['one', 'two']) {
    client.write(part);
    while (!seen.some((s) => s.text === part)) await new Promise((ok) => setTimeout(ok, 5));
  }
  client.destroy();
  server.close();
  assert.equal(switched, true);
  assert.deepEqual(seen.map((s) => s.text), ['one', 'two']);
  assert.equal(seen[0].buffer, seen[1].buffer, 'both reads in the same buffer');
  assert.equal(readIntoShared(new net.Socket(), () => true), false);
});

/**
 * A fast path whose handler answers `/slow` only when `release()` is called and every other
 * plain read at once; node:http answers the rest with the method, target and body it parsed.
 */
async function slowServer(): Promise<{ server: http.Server; port: number; held: Promise<void>; release(): void; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => res.end(`${req.method} ${req.url} ${Buffer.concat(parts).toString()}`));
  });
  let held: FastResponse | undefined;
  let onHeld = (): void => {};
  const heldNow = new Promise<void>((ok) => { onHeld = ok; });
  const answer = (res: FastResponse, body: string): void => {
    res.writeHead(200, ['Content-Type', 'text/plain', 'Content-Length', String(body.length)]).end(body);
  };
  new FastPath(server, {
    accepts: () => true,
    handler: () => (req: FastRequest, res: FastResponse) => { if (req.url === '/slow') { held = res; onHeld(); } else answer(res, `fast ${req.url}`); },
    keepAliveTimeoutMs: 5000,
    headersTimeoutMs: 5000,
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    server,
    port: (server.address() as net.AddressInfo).port,
    held: heldNow,
    release: () => { if (held) answer(held, 'slow'); },
    close: () => { server.closeAllConnections(); return new Promise((ok) => server.close(() => ok())); },
  };
}

/** Writes `bytes` on a new connection and collects what comes back until `until` matches. */
function exchange(port: number): { send(bytes: string): void; received(until: RegExp): Promise<string>; end(): void; ended(): Promise<void>; close(): void } {
  const sock = net.connect(port, '127.0.0.1');
  let got = '';
  let closed = false;
  sock.on('data', (c: Buffer) => { got += c.toString('latin1'); });
  sock.on('close', () => { closed = true; });
  const ended = new Promise<void>((ok) => sock.once('end', ok));
  return {
    send: (bytes) => sock.write(bytes),
    end: () => sock.end(),
    ended: () => ended,
    received: async (until) => {
      while (!until.test(got)) {
        if (closed) throw new Error(`the connection closed after ${JSON.stringify(got)}, without ${until}`);
        await new Promise((ok) => setTimeout(ok, 5));
      }
      return got;
    },
    close: () => sock.destroy(),
  };
}

test('the bytes kept for node:http while an answer is outstanding are a copy: another connection\'s reads do not overwrite them', { timeout: 10_000 }, async () => {
  const s = await slowServer();
  const a = exchange(s.port);
  const b = exchange(s.port);
  try {
    // A: a plain read answered later, then a POST in the same write — kept until A's answer is out.
    a.send('GET /slow HTTP/1.1\r\nHost: a\r\n\r\nPOST /kept HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello');
    // B: plain reads of the same length as A's bytes, read into the same buffer meanwhile.
    for (let i = 0; i < 20; i++) {
      b.send(`GET /${'x'.repeat(40)}${i} HTTP/1.1\r\nHost: b\r\nX-Fill: ${'y'.repeat(30)}\r\n\r\n`);
      await b.received(new RegExp(`fast /x{40}${i}\\b`));
    }
    s.release();
    const got = await a.received(/POST \/kept hello/);
    assert.match(got, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nslowHTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nPOST \/kept hello$/);
  } finally {
    a.close();
    b.close();
    await s.close();
  }
});

test('a FIN right after the requests, while an answer is outstanding: node:http reads the requests before it, answers them, then closes', { timeout: 10_000 }, async () => {
  const s = await slowServer();
  const a = exchange(s.port);
  try {
    a.send('GET /slow HTTP/1.1\r\nHost: a\r\n\r\nPOST /kept HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello');
    a.end();
    // The fast path has stopped reading (it waits for /slow's answer to hand the connection
    // over), so the FIN is read after the POST, by node:http.
    await s.held;
    s.release();
    await a.ended();
    assert.match(await a.received(/POST \/kept hello$/), /\r\n\r\nslowHTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nPOST \/kept hello$/);
  } finally {
    a.close();
    await s.close();
  }
});

test('reads that come back to the socket after the hand-over (node:http lets go of an upgraded connection) reach its data listeners as copies of their own, in order', { timeout: 10_000 }, async () => {
  const s = await slowServer();
  s.server.on('upgrade', (_req: http.IncomingMessage, sock: net.Socket, head: Buffer) => {
    sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n${head.toString()}`);
    // Keeps every chunk, as a body parser does, and echoes all of them so far.
    const kept: Buffer[] = [];
    sock.on('data', (c: Buffer) => { kept.push(c); sock.write(`<${Buffer.concat(kept).toString()}>`); });
    sock.on('end', () => sock.destroy());
  });
  const a = exchange(s.port);
  const b = exchange(s.port);
  try {
    a.send('GET /first HTTP/1.1\r\nHost: a\r\n\r\nGET /echo HTTP/1.1\r\nHost: a\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n');
    await a.received(/101 Switching Protocols\r\n[\s\S]*\r\n\r\n$/);
    for (const piece of ['abc', 'def', 'ghi']) {
      a.send(piece);
      await a.received(new RegExp(`${piece}>$`));
      // Another connection's read into the shared buffer between two of A's.
      b.send(`GET /${piece.repeat(20)} HTTP/1.1\r\nHost: b\r\n\r\n`);
      await b.received(new RegExp(`fast /(${piece}){20}`));
    }
    assert.match(await a.received(/ghi>$/), /fast \/first[\s\S]*101 Switching Protocols[\s\S]*\r\n\r\n<abc><abcdef><abcdefghi>$/);
  } finally {
    a.close();
    b.close();
    await s.close();
  }
});

test('answers written from the reused slab arrive intact when a client reads nothing until thousands are queued on its socket', { timeout: 30_000 }, async () => {
  const server = http.createServer((_req, res) => res.end());
  // Each answer's body tells which request it answers, in every byte (a 1 KiB Uint8Array).
  const bodyOf = (n: number): Buffer => Buffer.from(`<${n}>`.padEnd(1024, String.fromCharCode(97 + (n % 26))));
  let answered = 0;
  new FastPath(server, {
    accepts: () => true,
    handler: () => (req: FastRequest, res: FastResponse) => {
      answered++;
      const body = bodyOf(Number(req.url.slice(1)));
      res.writeHead(200, ['Content-Length', String(body.length)]).end(new Uint8Array(body));
    },
    keepAliveTimeoutMs: 30_000,
    headersTimeoutMs: 30_000,
  });
  const accepted: net.Socket[] = [];
  server.on('connection', (sock: net.Socket) => accepted.push(sock));
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as net.AddressInfo).port;
  const count = 8000; // ~9 MB of answers: more than the socket buffers hold
  const slow = net.connect(port, '127.0.0.1');
  slow.pause();
  // In batches that each arrive in one read: a head split between two reads would send the
  // connection to node:http (docs/decisions.md#a-fast-path-for-plain-reads).
  for (let from = 0; from < count; from += 1000) {
    let batch = '';
    for (let i = from; i < from + 1000; i++) batch += `GET /${i} HTTP/1.1\r\nHost: a\r\n\r\n`;
    slow.write(batch);
    while (answered < from + 1000) await new Promise((ok) => setTimeout(ok, 5));
  }
  assert.ok(slow.readableLength === 0 && answered === count);
  // Meanwhile another connection's answers are written (and read) one at a time.
  const b = exchange(port);
  for (let i = 0; i < 50; i++) {
    b.send(`GET /${100_000 + i} HTTP/1.1\r\nHost: b\r\n\r\n`);
    await b.received(new RegExp(`<${100_000 + i}>`));
  }
  b.close();
  const chunks: Buffer[] = [];
  slow.on('data', (c: Buffer) => chunks.push(c));
  slow.resume();
  // Everything the server wrote to the slow connection, once it is all read.
  const served = accepted[0];
  while (served.writableLength > 0 || slow.bytesRead < served.bytesWritten) await new Promise((ok) => setTimeout(ok, 10));
  let rest = Buffer.concat(chunks);
  const bodies: string[] = [];
  for (let r = parseRawResponse(rest); r !== undefined; r = parseRawResponse(rest)) {
    assert.equal(r.response.status, 200);
    bodies.push(r.response.text);
    rest = rest.subarray(r.size);
  }
  assert.equal(rest.length, 0, 'nothing after the last whole answer');
  assert.equal(bodies.length, count);
  for (let i = 0; i < count; i++) if (bodies[i] !== bodyOf(i).toString('latin1')) assert.fail(`answer ${i} is not its own: ${JSON.stringify(bodies[i].slice(0, 40))}…`);
  slow.destroy();
  server.closeAllConnections();
  await new Promise((ok) => server.close(ok));
});
