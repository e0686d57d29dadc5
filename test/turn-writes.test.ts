/**
 * Answers leave at the end of the turn (src/http/fastPath.ts,
 * docs/decisions.md#answers-leave-at-the-end-of-the-turn): the fast path's answers given in one
 * event-loop turn reach the kernel together at its end, one write (or writev) a socket; a
 * graceful close in the middle of a turn writes them first. (A socket holding a high-water
 * mark's worth is written at once: test/connections.test.ts's stalled-output tests depend on it.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { FastPath, type FastRequest, type FastResponse } from '../src/http/fastPath.js';
import { parseRawResponse, within } from './helpers/raw.js';

type Answer = (path: FastPath, req: FastRequest, res: FastResponse) => void;

/** A FastPath on a new server whose handler is `answer`; `writes` gets, per socket write, how many answers' buffers it carried. */
async function server(answer: Answer): Promise<{ port: number; writes: number[]; close(): Promise<void> }> {
  const srv = http.createServer((_req, res) => res.end());
  const path: FastPath = new FastPath(srv, {
    accepts: () => true,
    handler: () => (req, res) => answer(path, req, res),
    keepAliveTimeoutMs: 30_000,
    headersTimeoutMs: 30_000,
  });
  const writes: number[] = [];
  srv.on('connection', (sock: net.Socket) => {
    const s = sock as unknown as { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
    const one = s._write;
    const many = s._writev;
    s._write = function (this: unknown, ...a: unknown[]) { writes.push(1); return one.apply(this, a); };
    s._writev = function (this: unknown, ...a: unknown[]) { writes.push((a[0] as unknown[]).length); return many.apply(this, a); };
  });
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  return {
    port: (srv.address() as net.AddressInfo).port,
    writes,
    close: async () => { srv.closeAllConnections(); await new Promise((ok) => srv.close(ok)); },
  };
}

/** Sends `text` on a new connection and reads until it closes or `count` answers came; the answers' bodies, and whether it closed. */
async function exchange(port: number, text: string, count: number): Promise<{ bodies: string[]; closed: boolean }> {
  const s = net.connect(port, '127.0.0.1');
  let data = Buffer.alloc(0);
  const bodies: string[] = [];
  let closed = false;
  await within(new Promise<void>((ok, fail) => {
    s.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      for (let p = parseRawResponse(data); p; p = parseRawResponse(data)) { bodies.push(p.response.text); data = data.subarray(p.size); }
      if (bodies.length === count) ok();
    });
    s.on('close', () => { closed = true; ok(); });
    s.on('error', fail);
    s.write(text);
  }), 5000, `${count} answers or the close`);
  s.destroy();
  return { bodies, closed };
}

const small: Answer = (_path, req, res) => {
  const body = Buffer.from(`answer to ${req.url}`);
  res.writeHead(200, ['Content-Length', String(body.length)]).end(new Uint8Array(body));
};

test('three pipelined plain reads arriving in one read are answered in one writev at the end of the turn, in order', async () => {
  const s = await server(small);
  try {
    const got = await exchange(s.port, ['/a', '/b', '/c'].map((p) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''), 3);
    assert.deepEqual(got.bodies, ['answer to /a', 'answer to /b', 'answer to /c']);
    assert.deepEqual(s.writes, [3], 'one write of the three answers');
  } finally { await s.close(); }
});

test('a graceful close (closeIdle) in the turn an answer was given writes that answer before closing the connection', async () => {
  const s = await server((path, req, res) => { small(path, req, res); path.closeIdle(); });
  try {
    const got = await exchange(s.port, 'GET /last HTTP/1.1\r\nHost: x\r\n\r\n', 2);
    assert.deepEqual(got.bodies, ['answer to /last']);
    assert.equal(got.closed, true, 'then closed');
  } finally { await s.close(); }
});
