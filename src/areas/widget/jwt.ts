/**
 * Verified visitors (docs/api.md#identity-verification): a JWT signed HS256 with the workspace's identity secret,
 * checked by hand with node:crypto (no library): header `alg` HS256 only, signature compared in constant time, `sub`
 * and `exp` required, `exp` not past and at most 24 h ahead (60 s of clock skew allowed either way).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Clock skew allowed on `exp` (seconds). */
export const JWT_SKEW_S = 60;
/** The furthest ahead an identity token may expire (seconds). */
export const JWT_MAX_LIFETIME_S = 24 * 3600;

/** The claims of a verified identity. */
export interface Identity { sub: string; email?: string; name?: string; company?: string; exp: number }

/** Why a token was refused; the message is the `error` detail of the 401 `invalid_identity`. */
export class IdentityError extends Error {}

const B64URL = /^[A-Za-z0-9_-]*$/;

function part(text: string, what: string): Record<string, unknown> {
  if (!B64URL.test(text)) throw new IdentityError(`the identity token's ${what} is not base64url`);
  let v: unknown;
  try { v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')); } catch {
    throw new IdentityError(`the identity token's ${what} is not JSON`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new IdentityError(
    `the identity token's ${what} is not a JSON object`);
  return v as Record<string, unknown>;
}

const optionalText = (claims: Record<string, unknown>, k: string, max: number): string | undefined => {
  const v = claims[k];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.length === 0 || v.length > max) throw new IdentityError(
    `the identity token's ${k} claim must be a string of 1 to ${max} characters`);
  return v;
};

/**
 * Verifies `token` with `secret` at `nowMs` and returns its claims.
 * @throws IdentityError malformed (not three base64url parts of JSON), `alg` other than HS256 (`none` included), a
 *   wrong signature, `sub` missing, `exp` missing, past or more than 24 h ahead, or a claim of the wrong type.
 */
export function verifyIdentity(token: string, secret: string, nowMs: number): Identity {
  const parts = token.split('.');
  if (parts.length !== 3 || token.length > 4096) throw new IdentityError('the identity token is not a JWT');
  const header = part(parts[0], 'header');
  if (header.alg !== 'HS256') throw new IdentityError('the identity token must be signed with HS256');
  if (!B64URL.test(parts[2])) throw new IdentityError("the identity token's signature is not base64url");
  const want = createHmac('sha256', secret).update(`${parts[0]}.${parts[1]}`).digest();
  const got = Buffer.from(parts[2], 'base64url');
  if (got.length !== want.length || !timingSafeEqual(got, want)) throw new IdentityError(
    "the identity token's signature does not match the workspace's identity secret");
  const claims = part(parts[1], 'payload');
  const sub = optionalText(claims, 'sub', 200);
  if (sub === undefined) throw new IdentityError('the identity token has no sub claim');
  const exp = claims.exp;
  if (typeof exp !== 'number' || !Number.isInteger(exp)) throw new IdentityError(
    'the identity token has no exp claim (seconds since the epoch)');
  const now = Math.floor(nowMs / 1000);
  if (exp + JWT_SKEW_S <= now) throw new IdentityError('the identity token has expired');
  if (exp > now + JWT_MAX_LIFETIME_S + JWT_SKEW_S) throw new IdentityError(
    'the identity token expires more than 24 h ahead');
  const email = optionalText(claims, 'email', 320);
  if (email !== undefined && !/^[^@\s]+@[^@\s]+$/.test(email)) throw new IdentityError(
    "the identity token's email claim is not an email address");
  return { sub, email, name: optionalText(claims, 'name', 160), company: optionalText(claims, 'company', 160), exp };
}

/** A token for `claims` signed with `secret` (tests, and the recipe in docs/api.md). */
export function signIdentity(claims: Record<string, unknown>, secret: string, alg = 'HS256'): string {
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const head = `${enc({ alg, typ: 'JWT' })}.${enc(claims)}`;
  return `${head}.${createHmac('sha256', secret).update(head).digest('base64url')}`;
}
