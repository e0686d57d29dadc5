/**
 * Loopback receivers for the delivery attempt tests: a node:http server counting connections and
 * requests, and a raw TCP server that answers with whatever bytes a test writes (hostile or
 * broken receivers). Waiting is on events, never on the clock.
 */
import http from 'node:http';
import net from 'node:net';

export interface HttpReceiver { url: string; connections: () => number; requests: string[]; close: () => Promise<void> }
export interface RawReceiver {
  url: string;
  connections: () => number;
  /** The most connections that were open at once. */
  mostOpen: () => number;
  /** Bytes the receiver wrote to its connections. */
  bytesWritten: () => number;
  /** Resolves once a connection of the receiver has closed (from either side). */
  closed: () => Promise<void>;
  close: () => Promise<void>;
}

/** A node:http server on 127.0.0.1 counting connections and requests; `answer` writes each answer. */
export async function httpServer(answer: (req: http.IncomingMessage,
  res: http.ServerResponse) => void): Promise<HttpReceiver> {
  let connections = 0;
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => { requests.push(body); answer(req, res); });
  });
  server.on('connection', () => { connections++; });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`,
    connections: () => connections, requests,
    close: () => { server.closeAllConnections(); return new Promise((ok) => server.close(() => ok())); },
  };
}

/**
 * A raw TCP server: `onRequest(socket, n)` is called for the n-th request (1-based, per
 * connection) once its head and body are in; `bytesWritten` counts what it wrote back.
 */
export async function rawServer(onRequest: (socket: net.Socket, n: number) => void): Promise<RawReceiver> {
  let connections = 0;
  let written = 0;
  let most = 0;
  const sockets = new Set<net.Socket>();
  const closers: Array<() => void> = [];
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    most = Math.max(most, sockets.size);
    socket.on('close',
      () => { sockets.delete(socket); written += socket.bytesWritten; for (const c of closers.splice(0)) c(); });
    socket.on('error', () => {});
    let buf = '';
    let n = 0;
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end === -1) return;
        const length = Number(/content-length: (\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        buf = buf.slice(end + 4 + length);
        onRequest(socket, ++n);
      }
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`,
    connections: () => connections,
    mostOpen: () => most,
    bytesWritten: () => written + [...sockets].reduce((n, s) => n + s.bytesWritten, 0),
    closed: () => new Promise((ok) => closers.push(ok)),
    close: () => { for (const s of sockets) s.destroy(); return new Promise((ok) => server.close(() => ok())); },
  };
}

/**
 * Writes `total` bytes made of `piece` repeated to `socket` as fast as it drains, until done or
 * the socket closes.
 */
export function flood(socket: net.Socket, piece: string, total: number): void {
  const chunk = Buffer.from(piece.repeat(Math.max(1, Math.floor(65536 / piece.length))), 'latin1');
  let sent = 0;
  const more = (): void => {
    while (sent < total && !socket.destroyed) {
      sent += chunk.length;
      if (!socket.write(chunk)) { socket.once('drain', more); return; }
    }
  };
  more();
}
