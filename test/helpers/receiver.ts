/**
 * A webhook receiver for tests: a real node:http server on 127.0.0.1:0 that records every
 * request (headers and raw body) and answers as the test says — a status with headers, or
 * `hold` (keep the request open: never answer). Waiting is on events, never on the clock.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface Received { path: string; headers: http.IncomingHttpHeaders; body: string }
/** How to answer one request: a status (and headers), or `hold` to never answer. */
export type Answer = { status: number; headers?: Record<string, string>; body?: string } | 'hold';

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** What the next requests get (default: 200). */
  answer: (r: Received) => Answer;
  /** Connections accepted so far. */
  connections: number;
  /** Resolves once `n` requests arrived in all. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  /** Answers every request held so far with `status`. */
  release(status: number): void;
  /** Closes the server, cutting held requests. */
  close(): Promise<void>;
}

/** Starts a receiver on `port` (default: any free port). */
export async function startReceiver(answer: (r: Received) => Answer = () => ({ status: 200 }), port = 0): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: Array<() => void> = [];
  const held = new Set<http.ServerResponse>();
  const rx: Receiver = {
    url: '', port: 0, received, answer, connections: 0,
    waitFor(n, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the receiver got ${received.length} requests, not ${n}`)), timeoutMs);
        const check = () => { if (received.length >= n) { clearTimeout(timer); resolve(received.slice()); } else waiters.push(check); };
        check();
      });
    },
    release(status) {
      for (const res of held) res.writeHead(status).end();
      held.clear();
    },
    close: () => new Promise((resolve) => {
      for (const res of held) res.destroy();
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(r);
      for (const w of waiters.splice(0)) w();
      const a = rx.answer(r);
      if (a === 'hold') { held.add(res); return; }
      res.writeHead(a.status, a.headers);
      res.end(a.body ?? '');
    });
  });
  server.on('connection', () => { rx.connections++; });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  rx.port = (server.address() as AddressInfo).port;
  rx.url = `http://127.0.0.1:${rx.port}`;
  return rx;
}

/**
 * Verifies a delivery's signature — the README's snippet (Webhooks, "Verifying a signature"),
 * written out: the HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed by the base64
 * part of the secret after `whsec_`, compared with each `v1,` signature of the header, and a
 * timestamp within 5 minutes of `now` (ms).
 */
export function verifyWebhook(secret: string, headers: Record<string, string | string[] | undefined>, body: string, now = Date.now()): boolean {
  const id = String(headers['webhook-id']);
  const ts = String(headers['webhook-timestamp']);
  if (!/^\d+$/.test(ts) || Math.abs(now / 1000 - Number(ts)) > 300) return false;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest();
  return String(headers['webhook-signature'] ?? '').split(' ').some((sig) => {
    const [version, value] = sig.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}
