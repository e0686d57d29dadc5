/**
 * API keys and scopes (docs/api.md#authentication, docs/security.md#api-keys): `svck_` + 32 random bytes in base62;
 * only the SHA-256 is stored; `X:write` implies `X:read`; `*` grants everything.
 */
import { hash, randomBytes } from 'node:crypto';

export const KEY_PREFIX = 'svck_';
export const WIDGET_KEY_PREFIX = 'svcw_';

/** Every scope a key can carry (docs/api.md#scopes). */
export const SCOPES = [
  'sources:read', 'sources:write',
  'conversations:read', 'conversations:write',
  'issues:read', 'issues:write',
  'definitions:read', 'clients:read', 'agents:read', 'agents:write', 'usage:read', 'analytics:read',
  'events:read', 'webhooks:read', 'webhooks:write',
] as const;
export type Scope = (typeof SCOPES)[number];

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `bytes` random bytes as a fixed-width base62 string (43 characters for 32 bytes). */
export function randomBase62(bytes = 32): string {
  let n = BigInt('0x' + randomBytes(bytes).toString('hex'));
  const width = Math.ceil((bytes * 8) / Math.log2(62));
  let out = '';
  for (let i = 0; i < width; i++) { out = B62[Number(n % 62n)] + out; n /= 62n; }
  return out;
}

/** A new secret API key: `svck_` + 43 base62 characters. */
export const generateApiKey = (): string => KEY_PREFIX + randomBase62(32);
/** A new public widget key (`svcw_…`): it is never accepted as an API key. */
export const generateWidgetKey = (): string => WIDGET_KEY_PREFIX + randomBase62(24);

/** Hex SHA-256 of a presented key: the only form in which keys are stored and looked up. */
export const hashKey = (key: string): string => hash('sha256', key, 'hex');

/** An API key's shape as regular-expression source: the prefix and a base62 body of the generated length. */
export const API_KEY_SHAPE = `${KEY_PREFIX}[0-9A-Za-z]{43}`;
const API_KEY = new RegExp(`^${API_KEY_SHAPE}$`);

/** `Bearer <key>`: the scheme in any case, spaces, a key of {@link API_KEY_SHAPE} (group 1), spaces. */
export const BEARER_API_KEY = new RegExp(`^[Bb][Ee][Aa][Rr][Ee][Rr] +(${API_KEY_SHAPE}) *$`);

/** Shape check before any lookup: prefix plus base62 body of the generated length. */
export const looksLikeApiKey = (key: string): boolean => API_KEY.test(key);

/** Parses a `--scopes` value: `*` or a comma-separated list of {@link SCOPES}. @throws Error naming a wrong one. */
export function parseScopes(raw: string): string[] {
  const list = raw.split(',').map((x) => x.trim()).filter(Boolean);
  if (list.length === 0) throw new Error('scopes must not be empty');
  if (list.includes('*')) { if (list.length > 1) throw new Error('* must stand alone'); return ['*']; }
  for (const sc of list) if (!(SCOPES as readonly string[]).includes(sc)) throw new Error(
    `unknown scope ${JSON.stringify(sc)}; known: *, ${SCOPES.join(', ')}`);
  return [...new Set(list)];
}

/** True when `granted` includes `required`, `*`, or (for `X:read`) `X:write`. */
export function hasScope(granted: readonly string[], required: string): boolean {
  if (granted.includes('*') || granted.includes(required)) return true;
  return required.endsWith(':read') && granted.includes(required.slice(0, -5) + ':write');
}
