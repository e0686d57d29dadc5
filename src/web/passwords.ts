/**
 * Password hashing (docs/security.md#passwords): scrypt with a 16-byte random salt per user,
 * N = 2^15, r = 8, p = 1, a 32-byte result, stored as `scrypt$N$r$p$<salt base64>$<hash base64>`
 * so the parameters can be raised later without invalidating stored hashes. Hashes run on the
 * hasher's own lanes (src/web/hashLanes.ts: ~60 ms and 32 MiB each, never the event loop nor
 * libuv's pool) and are compared in constant time.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { HashLanes } from './hashLanes.js';

/** The scrypt cost parameters of new hashes (docs/security.md#passwords). */
export const SCRYPT = { N: 2 ** 15, r: 8, p: 1, keyLength: 32, saltBytes: 16 } as const;
/** Shortest and longest password accepted, in characters (docs/web.md#routes-and-forms). */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 200;

/** scrypt needs 128·N·r bytes; Node's default ceiling (32 MiB) is just too small for N = 2^15, r = 8. */
const maxmem = (N: number, r: number) => 128 * N * r + 16 * 1024 * 1024;

/** Hashes and checks passwords on `lanes`. */
export class Passwords {
  /** A hash of nothing anyone knows, checked when an email has no user, so an answer takes the same time either way. */
  private decoy: Promise<string> | undefined;

  constructor(private readonly lanes: HashLanes) {}

  /** The stored form of `password` with a fresh salt. @throws HashBusy when the hasher's queue is full. */
  async hash(password: string): Promise<string> {
    const salt = randomBytes(SCRYPT.saltBytes);
    const { N, r, p, keyLength } = SCRYPT;
    const key = await this.lanes.scrypt(password, salt, keyLength, { N, r, p, maxmem: maxmem(N, r) });
    return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${key.toString('base64')}`;
  }

  /**
   * Whether `password` matches `stored` (a {@link hash} result). With `stored` null (an unknown
   * email, or a user not yet activated) a decoy hash is checked and the answer is false, so the
   * time taken does not tell whether the email exists. @throws HashBusy when the queue is full.
   */
  async verify(password: string, stored: string | null): Promise<boolean> {
    const known = stored !== null;
    const text = stored ?? await this.decoyHash();
    const parts = text.split('$');
    if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
    const [N, r, p] = parts.slice(1, 4).map(Number);
    const salt = Buffer.from(parts[4], 'base64');
    const want = Buffer.from(parts[5], 'base64');
    const got = await this.lanes.scrypt(password, salt, want.length, { N, r, p, maxmem: maxmem(N, r) });
    return timingSafeEqual(got, want) && known;
  }

  private decoyHash(): Promise<string> {
    const d = this.decoy ??= this.hash(randomBytes(18).toString('base64'));
    d.catch(() => { if (this.decoy === d) this.decoy = undefined; }); // a busy queue: made again next time
    return d;
  }
}
