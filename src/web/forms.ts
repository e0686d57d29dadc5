/**
 * What the settings pages read from a request (docs/web.md#routes-and-forms): cookies, the form body
 * (`application/x-www-form-urlencoded`, at most 16 KiB), whether it came over https, and
 * whether a POST came from one of our own pages (its `Origin`, else its `Referer`).
 */
import type { IncomingMessage } from 'node:http';
import type { ClientAddresses } from '../http/clientAddress.js';

/** The largest form body accepted (docs/web.md#routes-and-forms). */
export const FORM_LIMIT = 16 * 1024;

/** A refusal answered with an error page: `status` and the sentence shown. */
export class WebError extends Error {
  constructor(readonly status: number, message: string, readonly headers: Record<string, string> = {}) { super(message); }
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
 * Reads a form body. @throws WebError 415 for another media type, 413 past
 * {@link FORM_LIMIT} (by `Content-Length` before reading, or counted while reading), 400
 * for a body that is not UTF-8.
 */
export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new WebError(415, 'This form must be sent as application/x-www-form-urlencoded, as a browser sends it.');
  }
  if (req.headers['content-encoding'] !== undefined && req.headers['content-encoding'] !== 'identity') {
    throw new WebError(415, 'A compressed form is not accepted.');
  }
  const declared = Number(req.headers['content-length'] ?? '0');
  const tooLarge = () => new WebError(413, `The form is larger than ${FORM_LIMIT / 1024} KiB.`, { Connection: 'close' });
  if (declared > FORM_LIMIT) throw tooLarge();
  // Read by events, not `for await`: leaving an async iterator early destroys the request, and
  // with it the socket the 413 page must still go out on.
  const body = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    req.on('data', (c: Buffer) => {
      if (settled) return;
      size += c.length;
      if (size > FORM_LIMIT) { settled = true; req.pause(); reject(tooLarge()); } else chunks.push(c);
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
 * Whether a POST comes from one of our pages (docs/security.md#csrf): its `Origin` must be the
 * server's own origin — the scheme it was reached by and its `Host`, or `PUBLIC_URL`'s origin.
 * Without `Origin` the `Referer` is judged the same way (our pages send it to us: their
 * `Referrer-Policy` is `same-origin`); without both, or with `Origin: null`, it is refused.
 */
export function sameOrigin(req: IncomingMessage, https: boolean, publicUrl: string): boolean {
  const allowed = new Set<string>([new URL(publicUrl).origin]);
  const host = req.headers.host;
  if (host) { try { allowed.add(new URL(`${https ? 'https' : 'http'}://${host}`).origin); } catch { /* a Host that is no authority */ } }
  const origin = req.headers.origin;
  if (origin !== undefined) return allowed.has(origin);
  const referer = req.headers.referer;
  if (referer === undefined) return false;
  try { return allowed.has(new URL(referer).origin); } catch { return false; }
}
