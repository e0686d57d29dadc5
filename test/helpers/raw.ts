/**
 * Helpers for tests (and bench/reliability.ts) that talk HTTP/1.1 over raw sockets, where
 * `fetch` would hide what is being tested (slow clients, early answers, connection cuts).
 */

/** Resolves with `p`, or rejects after `ms` naming `what` (every wait in these tests is bounded). */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms); }),
  ]);
}

/** A response read off a raw socket: headers lower-cased, the body as text and (when it parses) as JSON. */
export interface RawResponse<B = unknown> { status: number; headers: Record<string, string>; body: B; text: string }

/**
 * The first complete response at the start of `data` (framed by `Content-Length`, absent = 0)
 * and how many bytes it took; undefined while it is incomplete.
 */
export function parseRawResponse(data: Buffer): { response: RawResponse; size: number } | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) { const i = l.indexOf(':'); headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim(); }
  const len = Number(headers['content-length'] ?? 0);
  if (data.length < end + 4 + len) return undefined;
  const text = data.subarray(end + 4, end + 4 + len).toString('utf8');
  let body: unknown;
  try { body = text ? JSON.parse(text) : undefined; } catch { body = undefined; }
  return { response: { status: Number(statusLine.split(' ')[1]), headers, body, text }, size: end + 4 + len };
}
