/**
 * How the fuzzer talks to the server: requests on a kept-alive agent, raw bytes on a fresh
 * socket, and reading what comes back (bounded), with a per-request timeout.
 */
import type { Fuzzer } from './fuzzer.js';
import { MiB } from '../../src/http/route.js';
import type { Plan } from './types.js';
import * as http from 'node:http';
import * as net from 'node:net';

/** An answer: status, headers, the body as text (its first RESPONSE_KEEP bytes) and its full size. */
export interface HttpResponse { status: number; headers: http.IncomingHttpHeaders; text: string; bytes: number }

/** The outcome of sending a request: an answer, or no answer (timed out, or the connection failed, perhaps after a head). */
export type Sent = { ok: true; res: HttpResponse; ms: number } | { ok: false; error: string; timedOut: boolean; ms: number; head?: HttpResponse };

/** Bytes of an answer's body kept as text; the rest is counted only. */
export const RESPONSE_KEEP = 4 * MiB;

/**
 * Reads a response body, keeping its first RESPONSE_KEEP bytes as text. An event stream stays open: it is read up to
 * its first blank line (the first frame), then let go.
 */
export function readBody(res: http.IncomingMessage): Promise<{ text: string; bytes: number }> {
  const stream = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let kept = 0; let bytes = 0;
    res.on('data', (c: Buffer) => {
      bytes += c.length; if (kept < RESPONSE_KEEP) { chunks.push(c); kept += c.length; }
      if (!stream) return;
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.includes('\n\n')) { resolve({ text, bytes }); res.destroy(); }
    });
    res.on('end', () => resolve({ text: Buffer.concat(chunks).toString('utf8'), bytes }));
    res.on('error', reject);
    res.on('aborted', () => { if (!stream) reject(new Error('response aborted')); });
  });
}

/** The first response in bytes read off a raw socket, once its head is complete. */
export function parseRawResponse(data: Buffer): HttpResponse | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = data.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0]);
  if (!m) return undefined;
  const headers: http.IncomingHttpHeaders = {};
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = data.subarray(end + 4);
  const len = Number(headers['content-length']);
  if (Number.isFinite(len)) body = body.subarray(0, len);
  return { status: Number(m[1]), headers, text: body.toString('utf8'), bytes: body.length };
}

/** node:http headers as a fetch `Headers` (for the contract check). */
export function toHeaders(h: http.IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    try { if (Array.isArray(v)) for (const x of v) out.append(k, x); else out.set(k, String(v)); } catch { /* a value Headers refuses: left out */ }
  }
  return out;
}


/** Sends a planned request on the run's kept-alive agent; a request that met a connection the server had closed is sent once more. */
export function send(f: Fuzzer, p: Plan, retry = true): Promise<Sent> {
  const t0 = performance.now();
  const target = p.path + (p.qs ? `?${p.qs}` : '');
  return new Promise<Sent>((resolve) => {
    let done = false;
    const finish = (s: Sent) => { if (!done) { done = true; clearTimeout(timer); resolve(s); } };
    let req: http.ClientRequest;
    try {
      const u = new URL(f.srv.url);
      req = http.request({ host: u.hostname, port: u.port, method: p.method, path: target, headers: p.headers, agent: f.agent });
    } catch (e) {
      finish({ ok: false, error: `client refused the request: ${(e as Error).message}`, timedOut: false, ms: 0 });
      return;
    }
    const timer = setTimeout(() => { req.destroy(new Error('timeout')); finish({ ok: false, error: 'timeout', timedOut: true, ms: performance.now() - t0 }); }, f.timeoutMs);
    let head: HttpResponse | undefined;
    req.on('response', (res) => {
      head = { status: res.statusCode ?? 0, headers: res.headers, text: '', bytes: 0 };
      readBody(res).then(({ text, bytes }) => finish({ ok: true, res: { status: res.statusCode ?? 0, headers: res.headers, text, bytes }, ms: performance.now() - t0 }),
        (e) => finish({ ok: false, error: `response failed: ${(e as Error).message}`, timedOut: false, ms: performance.now() - t0, head }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (done) return;
      // A kept-alive socket the server closed meanwhile: the request never reached it.
      if (retry && req.reusedSocket && (e.code === 'ECONNRESET' || e.code === 'EPIPE')) {
        clearTimeout(timer); done = true; f.report.retries++;
        send(f, p, false).then(resolve);
        return;
      }
      finish({ ok: false, error: `${e.code ?? ''} ${e.message}`.trim(), timedOut: false, ms: performance.now() - t0, head });
    });
    if (p.body !== undefined) {
      if (p.draft.chunked) {
        const step = Math.max(1, Math.ceil(p.body.length / 3));
        for (let i = 0; i < p.body.length; i += step) req.write(p.body.subarray(i, i + step));
      } else req.write(p.body);
    }
    req.end();
  });
}

/** Writes raw bytes (malformed HTTP) on a fresh connection and reads what comes back. */
export function sendRaw(f: Fuzzer, raw: Buffer): Promise<Sent> {
  const t0 = performance.now();
  return new Promise<Sent>((resolve) => {
    const u = new URL(f.srv.url);
    const sock = net.connect(Number(u.port), u.hostname);
    const got: Buffer[] = [];
    let done = false;
    const finish = (s: Sent) => { if (!done) { done = true; clearTimeout(timer); sock.destroy(); resolve(s); } };
    const timer = setTimeout(() => {
      const res = parseRawResponse(Buffer.concat(got));
      // An answer arrived but the connection stayed open: that is an answer, not a hang.
      finish(res ? { ok: true, res, ms: performance.now() - t0 } : { ok: false, error: 'timeout', timedOut: true, ms: performance.now() - t0 });
    }, f.timeoutMs);
    sock.on('data', (c: Buffer) => {
      got.push(c);
      const res = parseRawResponse(Buffer.concat(got));
      if (res && res.headers['content-length'] !== undefined && res.bytes >= Number(res.headers['content-length'])) finish({ ok: true, res, ms: performance.now() - t0 });
    });
    sock.on('error', () => { /* the server may reset a connection it refused */ });
    sock.on('close', () => {
      const res = parseRawResponse(Buffer.concat(got));
      finish(res ? { ok: true, res, ms: performance.now() - t0 } : { ok: false, error: 'connection closed without an answer', timedOut: false, ms: performance.now() - t0 });
    });
    sock.write(raw);
  });
}
