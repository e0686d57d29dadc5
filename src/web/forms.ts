/**
 * What the settings pages read from a request (docs/web.md#routes-and-forms): cookies, the form body
 * (`application/x-www-form-urlencoded`, at most 16 KiB), whether it came over https, and
 * whether a POST came from one of our own pages (its `Origin`, else its `Referer`).
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { ClientAddresses } from '../http/clientAddress.js';

/** The largest form body accepted (docs/web.md#routes-and-forms). */
export const FORM_LIMIT = 16 * 1024;

/** A refusal answered with an error page: `status` and the sentence shown. */
export class WebError extends Error {
  constructor(readonly status: number, message: string, readonly headers: Record<string, string> = {}) {
    super(message); }
}

/** The request's cookies by name (the first of a repeated name wins). */
export function cookies(req: IncomingMessage): Map<string, string> {
  const out = new Map<string, string>();
  const header = req.headers.cookie;
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!out.has(name)) out.set(name, part.slice(eq + 1).trim());
  }
  return out;
}

/** Whether the request reached us over https: a TLS socket, or a trusted proxy's `X-Forwarded-Proto: https`. */
export function overHttps(req: IncomingMessage, clients: ClientAddresses): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted) return true;
  const peer = req.socket.remoteAddress;
  const proto = req.headers['x-forwarded-proto'];
  if (peer === undefined || typeof proto !== 'string' || !clients.trusts(peer)) return false;
  // Each proxy may append its own: the leftmost is what the client used with the first proxy.
  return proto.split(',')[0].trim().toLowerCase() === 'https';
}

/**
 * Reads a form body of at most `limit` bytes (default {@link FORM_LIMIT}). @throws WebError 415 for another media
 * type, 413 past the limit (by `Content-Length` before reading, or counted while reading), 400
 * for a body that is not UTF-8.
 */
export async function readForm(req: IncomingMessage, limit = FORM_LIMIT): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new WebError(415, 'This form must be sent as application/x-www-form-urlencoded, as a browser sends it.');
  }
  if (req.headers['content-encoding'] !== undefined && req.headers['content-encoding'] !== 'identity') {
    throw new WebError(415, 'A compressed form is not accepted.');
  }
  const declared = Number(req.headers['content-length'] ?? '0');
  const size = limit >= 1024 * 1024 ? `${limit / 1024 / 1024} MiB` : `${limit / 1024} KiB`;
  const tooLarge = () => new WebError(413, `The form is larger than ${size}.`, { Connection: 'close' });
  if (declared > limit) throw tooLarge();
  // Read by events, not `for await`: leaving an async iterator early destroys the request, and
  // with it the socket the 413 page must still go out on.
  const body = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let got = 0;
    let settled = false;
    req.on('data', (c: Buffer) => {
      if (settled) return;
      got += c.length;
      if (got > limit) { settled = true; req.pause(); reject(tooLarge()); } else chunks.push(c);
    });
    req.once('end', () => { if (!settled) { settled = true; resolve(Buffer.concat(chunks)); } });
    req.once('error', (e) => { if (!settled) { settled = true; reject(e); } });
  });
  let text: string;
  try { text = new TextDecoder('utf-8', { fatal: true }).decode(body); } catch {
    throw new WebError(400, 'The form is not valid UTF-8.');
  }
  return new URLSearchParams(text);
}

/**
 * The origins of the address a request reached us on: its socket's local address and port (the
 * listening address, or for a wildcard bind the interface it came in on), in the scheme the request
 * came by. Never the `Host` header (any client can write it), nor a name such as `localhost`.
 */
function listeningOrigins(req: IncomingMessage, https: boolean): string[] {
  const { localAddress, localPort } = req.socket;
  if (localAddress === undefined || localPort === undefined) return [];
  const ip = localAddress.startsWith('::ffff:') && isIP(localAddress.slice(7)) === 4 ? localAddress.slice(
    7) : localAddress;
  const family = isIP(ip);
  if (family === 0) return [];
  const hosts = [family === 6 ? `[${ip.split('%')[0]}]` : ip];
  const out: string[] = [];
  for (const h of hosts) { try { out.push(new URL(`${https ? 'https' : 'http'}://${h}:${localPort}`).origin); } catch {
    /* not an authority */ } }
  return out;
}

/**
 * Whether a POST comes from one of our pages (docs/security.md#csrf): its `Origin` must be
 * `PUBLIC_URL`'s origin or one of the address the request reached us on ({@link
 * listeningOrigins}: `http://127.0.0.1:PORT`…), never one built from
 * the request's own `Host`. Without `Origin` the `Referer` is judged the same way (our pages
 * send it to us: their `Referrer-Policy` is `same-origin`); without both, or with
 * `Origin: null`, it is refused.
 */
export function sameOrigin(req: IncomingMessage, https: boolean, publicUrl: string): boolean {
  const allowed = new Set<string>([new URL(publicUrl).origin, ...listeningOrigins(req, https)]);
  const origin = req.headers.origin;
  if (origin !== undefined) return allowed.has(origin);
  const referer = req.headers.referer;
  if (referer === undefined) return false;
  try { return allowed.has(new URL(referer).origin); } catch { return false; }
}
