/**
 * A fixed number of requests, for the scripts that measure a server per request rather than per
 * second (bench/instructions.ts, bench/sibling.ts): the same pseudo-random sequence of targets
 * every run (the caller makes each request's bytes from it), over keep-alive connections from
 * this process, each answer read to its end before that connection's next request.
 */
import * as net from 'node:net';

/**
 * Sends exactly `n` requests to 127.0.0.1:`port` over `connections` connections; request `i`'s
 * bytes are `next(r)`, `r` the i-th value of a 31-bit linear congruential sequence from 1 (the
 * same in every run). Answers are framed by `Content-Length`.
 * @throws (rejects) on a connection error, a connection closed before all answers came, or an
 *   answer whose status is not 200.
 */
export function fixedLoad(port: number, n: number, next: (r: number) => string | Buffer, connections = 50): Promise<void> {
  let sent = 0;
  let done = 0;
  let r = 1;
  return new Promise((resolve, reject) => {
    const sockets: net.Socket[] = [];
    for (let i = 0; i < connections; i++) {
      const s = net.connect(port, '127.0.0.1');
      sockets.push(s);
      let pending: Buffer = Buffer.alloc(0);
      const send = (): void => {
        if (sent >= n) return;
        sent++;
        r = (Math.imul(r, 1103515245) + 12345) & 0x7fffffff;
        s.write(next(r));
      };
      s.on('connect', send);
      s.on('error', reject);
      s.on('close', () => { if (done < n) reject(new Error('a connection closed before every answer came')); });
      s.on('data', (d: Buffer) => {
        pending = pending.length > 0 ? Buffer.concat([pending, d]) : d;
        for (;;) {
          const end = pending.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = pending.toString('latin1', 0, end);
          if (!head.startsWith('HTTP/1.1 200')) { reject(new Error(head.slice(0, 80))); return; }
          const len = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
          if (pending.length < end + 4 + len) return;
          pending = pending.subarray(end + 4 + len);
          if (++done === n) { for (const x of sockets) x.destroy(); resolve(); return; }
          send();
        }
      });
    }
  });
}

/** A loopback port free a moment ago. */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((ok) => s.close(() => ok()));
  return port;
}
