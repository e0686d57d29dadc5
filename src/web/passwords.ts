/**
 * Password hashing (docs/security.md#passwords): scrypt from node:crypto with a 16-byte random
 * salt per user, N = 2^15, r = 8, p = 1, a 32-byte result, stored as
 * `scrypt$N$r$p$<salt base64>$<hash base64>` so the parameters can be raised later without
 * invalidating stored hashes. Hashing runs on libuv's thread pool (~60 ms, 32 MiB), never on
 * the event loop; hashes are compared in constant time.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** The scrypt cost parameters of new hashes (docs/security.md#passwords). */
export const SCRYPT = { N: 2 ** 15, r: 8, p: 1, keyLength: 32, saltBytes: 16 } as const;
/** Shortest and longest password accepted, in characters (docs/web.md#routes-and-forms). */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 200;

const run = (password: string, salt: Buffer, length: number, o: ScryptOptions): Promise<Buffer> =>
  new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, length, o, (e, key) => (e ? reject(e) : resolve(key))));

/** scrypt needs 128·N·r bytes; Node's default ceiling (32 MiB) is just too small for N = 2^15, r = 8. */
const maxmem = (N: number, r: number) => 128 * N * r + 16 * 1024 * 1024;

/** The stored form of `password` with a fresh salt. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SCRYPT.saltBytes);
  const { N, r, p, keyLength } = SCRYPT;
  const key = await run(password, salt, keyLength, { N, r, p, maxmem: maxmem(N, r) });
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** A hash of nothing anyone knows, checked when an email has no user, so an answer takes the same time either way. */
let decoy: Promise<string> | undefined;

/**
 * Whether `password` matches `stored` (a {@link hashPassword} result). With `stored` null (an
 * unknown email, or a user not yet activated) a decoy hash is checked and the answer is false,
 * so the time taken does not tell whether the email exists.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const known = stored !== null;
  const text = stored ?? await (decoy ??= hashPassword(randomBytes(18).toString('base64')));
  const parts = text.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  const salt = Buffer.from(parts[4], 'base64');
  const want = Buffer.from(parts[5], 'base64');
  const got = await run(password, salt, want.length, { N, r, p, maxmem: maxmem(N, r) });
  return timingSafeEqual(got, want) && known;
}
