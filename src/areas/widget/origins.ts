/**
 * Allowed origins of an agent's widget (docs/api.md#live-chat): exact `scheme://host[:port]` strings, http or https,
 * no path, at most 20; and the CORS headers the widget API answers with for them.
 */
import { InvalidInputError } from '../../core/errors.js';

/** The most origins one agent allows. */
export const MAX_ALLOWED_ORIGINS = 20;

/**
 * The origin `raw` in its canonical form (lower-case scheme and host, default port dropped), or undefined when it is
 * not an exact http(s) origin (a path, query, fragment, user info or another scheme).
 */
export function canonicalOrigin(raw: string): string | undefined {
  if (raw.length > 300 || !/^https?:\/\/[^/?#@\s]+$/i.test(raw)) return undefined;
  let u: URL;
  try { u = new URL(raw); } catch { return undefined; }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') return undefined;
  return u.origin;
}

/**
 * `allowedOrigins` of an agent, canonical and without repeats.
 * @throws InvalidInputError naming the first entry that is not an exact origin, or the list being too long.
 */
export function checkOrigins(list: readonly string[]): string[] {
  if (list.length > MAX_ALLOWED_ORIGINS) throw new InvalidInputError(['allowedOrigins'],
    `must hold at most ${MAX_ALLOWED_ORIGINS} origins`);
  const out = new Set<string>();
  list.forEach((raw, i) => {
    const o = canonicalOrigin(raw);
    if (o === undefined) throw new InvalidInputError(['allowedOrigins', i],
      'must be an origin such as https://shop.example (http or https, a host, an optional port, no path)');
    out.add(o);
  });
  return [...out];
}

/** The CORS answer headers for an allowed `origin` (no credentials: the widget sends no cookies). */
export function corsHeaders(origin: string): string[] {
  return ['Access-Control-Allow-Origin', origin, 'Vary', 'Origin', 'Access-Control-Expose-Headers',
    'Retry-After, X-Request-Id, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset'];
}

/** The headers of a preflight answer (204) for an allowed `origin`. */
export function preflightHeaders(origin: string): string[] {
  return [...corsHeaders(origin), 'Access-Control-Allow-Methods', 'GET, POST, OPTIONS',
    'Access-Control-Allow-Headers', 'Authorization, Content-Type, Last-Event-ID, Idempotency-Key',
    'Access-Control-Max-Age', '600'];
}
