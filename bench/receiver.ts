/**
 * The webhooks scenario's receiver (bench/run.ts, `--only webhooks`): a minimal HTTP/1.1
 * server on `node:net` that answers `204 No Content` to every request, keeps the connection
 * open, counts deliveries, and checks a sample of their Standard Webhooks signatures.
 *
 * Why not `node:http`: on the 2 cores of the bench machine the receiver shares the CPU with
 * the server it measures, and node:http's server costs tens of µs per request — CPU the
 * server under test then lacks, though a real receiver runs on another machine. This one
 * costs a few µs (the same reasoning as the raw load client, bench/load.ts). `--receiver http`
 * in bench/run.ts keeps node:http's.
 *
 * Framing: requests must carry `Content-Length` (our delivery client always sends it;
 * docs/api.md#webhook-deliveries); `Transfer-Encoding: chunked` or a head over 16 KiB closes
 * the connection and counts as a framing error, which the bench reports. Requests that come
 * together on one connection are answered in order.
 */
import * as net from 'node:net';
import { createHmac } from 'node:crypto';

/** What the receiver saw so far. */
export interface ReceiverStats {
  /** Requests answered. */
  received: number;
  /** Requests whose signature was checked (one in `sampleEvery`), and how many of those failed. */
  checked: number;
  badSignatures: number;
  /** Connections closed for a request this receiver cannot frame. */
  framingErrors: number;
  /** Reads that completed at least one request, and connections accepted. */
  reads: number;
  connections: number;
}

const ANSWER = Buffer.from('HTTP/1.1 204 No Content\r\n\r\n', 'latin1');
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
const MAX_HEAD = 16 * 1024;

/**
 * A receiver listening on 127.0.0.1 (port 0). `secret()` gives the endpoints' `whsec_…`
 * secrets (one, or several when several servers deliver to it) once known (null until then: nothing is checked); one request in `sampleEvery` has its
 * `webhook-signature` checked against HMAC-SHA256 of `id.timestamp.body`
 * (docs/api.md#webhook-signatures).
 */
export async function startReceiver(secret: () => string | readonly string[] | null, sampleEvery = 64): Promise<{ port: number; stats: ReceiverStats; close(): Promise<void> }> {
  const stats: ReceiverStats = { received: 0, checked: 0, badSignatures: 0, framingErrors: 0, reads: 0, connections: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    stats.connections++;
    socket.setNoDelay(true);
    let buf: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      let answers = 0;
      for (;;) {
        const end = buf.indexOf(HEAD_END);
        if (end < 0) {
          if (buf.length > MAX_HEAD) { stats.framingErrors++; socket.destroy(); return; }
          break;
        }
        const head = buf.toString('latin1', 0, end);
        const cl = /\r\ncontent-length: *(\d+)/i.exec(head);
        if (cl === null || /\r\ntransfer-encoding:/i.test(head)) { stats.framingErrors++; socket.destroy(); return; }
        const total = end + 4 + Number(cl[1]);
        if (buf.length < total) break;
        stats.received++;
        if (stats.received % sampleEvery === 0) check(head, buf.subarray(end + 4, total));
        answers++;
        buf = buf.subarray(total);
      }
      if (answers > 0) stats.reads++;
      if (answers === 1) socket.write(ANSWER);
      else if (answers > 1) socket.write(Buffer.concat(Array.from({ length: answers }, () => ANSWER)));
    });
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  const check = (head: string, body: Buffer): void => {
    const given = secret();
    if (given === null) return;
    const secrets = typeof given === 'string' ? [given] : given;
    stats.checked++;
    const field = (name: string) => new RegExp(`\\r\\n${name}: *([^\\r]*)`, 'i').exec(head)?.[1];
    const id = field('webhook-id');
    const ts = field('webhook-timestamp');
    const sigs = (field('webhook-signature') ?? '').split(' ');
    // Signed by one of the endpoints' secrets (the webhooks scenario may have two servers).
    const signed = secrets.some((s) => {
      const key = Buffer.from(s.slice('whsec_'.length), 'base64');
      return sigs.includes(`v1,${createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64')}`);
    });
    if (id === undefined || ts === undefined || !signed) stats.badSignatures++;
  };
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    port: (server.address() as net.AddressInfo).port,
    stats,
    close: () => new Promise<void>((ok) => { for (const s of sockets) s.destroy(); server.close(() => ok()); }),
  };
}
