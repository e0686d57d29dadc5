/**
 * Sessions of the settings area (docs/security.md#sessions). The `sw_session` cookie holds 32
 * random bytes (43 base62 characters); the system log stores only their SHA-256, as the
 * session's id. A session ends when signed out, or after 12 h without a request (the idle
 * timeout, on the injected clock); `lastSeenAt` is written at most once a minute, and the
 * exact last request time is kept in memory. Sessions idle past the timeout are dropped by
 * compaction.
 *
 * CSRF tokens (docs/security.md#csrf) are HMACs under the server's secret: of the session id
 * for a signed-in form, of a per-browser nonce (the `sw_pre` cookie) for the sign-in and
 * activation forms, which are filled before there is a session. Nothing about them is stored.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { hashKey, randomBase62 } from '../auth/keys.js';
import { iso, type Clock } from '../core/clock.js';
import type { SessionRec, Store, UserRec } from '../store/store.js';
import type { Logger } from '../core/logger.js';

export const SESSION_COOKIE = 'sw_session';
/** The pre-session nonce cookie that the sign-in and activation forms' CSRF tokens are bound to. */
export const PRE_COOKIE = 'sw_pre';
/** A session ends after this long without a request (docs/security.md#sessions). */
export const IDLE_TIMEOUT_MS = 12 * 3600_000;
/** `lastSeenAt` is written at most this often per session. */
const TOUCH_INTERVAL_MS = 60_000;
const TOKEN = /^[0-9A-Za-z]{43}$/;

/** A signed-in request: its session, user and the CSRF token its forms carry. */
export interface SignedIn { session: SessionRec; user: UserRec; csrf: string }

export class Sessions {
  /** Session id → the time of its last request (ms), exact (the log has it to the minute). */
  private readonly lastSeen = new Map<string, number>();

  constructor(private readonly store: Store, private readonly clock: Clock, private readonly logger: Logger, private readonly secret: Buffer) {
    store.system.retain('session', (s) => clock.now() - Date.parse(s.lastSeenAt) < IDLE_TIMEOUT_MS);
    store.system.retain('activation', (a) => a.usedAt === null && Date.parse(a.expiresAt) > clock.now());
  }

  /** Starts a session for `user`; durable when resolved. @returns the cookie's token (never stored). */
  async create(user: UserRec): Promise<string> {
    const token = randomBase62(32);
    const now = this.clock.now();
    const rec: SessionRec = { id: hashKey(token), userId: user.id, workspaceId: user.workspaceId, createdAt: iso(now), lastSeenAt: iso(now) };
    const tx = this.store.system.begin();
    tx.put('session', rec.id, rec);
    await this.store.system.commit(tx);
    this.lastSeen.set(rec.id, now);
    return token;
  }

  /**
   * The live session of cookie `token`, counting this request as activity; undefined when the
   * token is malformed, unknown, signed out, idle past the timeout, or its user is gone.
   */
  resume(token: string | undefined): SignedIn | undefined {
    if (token === undefined || !TOKEN.test(token)) return undefined;
    const session = this.store.system.get('session', hashKey(token));
    if (!session) return undefined;
    const user = this.store.system.get('user', session.userId);
    if (!user || user.passwordHash === null || !this.store.workspaceRec(session.workspaceId)) return undefined;
    const now = this.clock.now();
    const last = this.lastSeen.get(session.id) ?? Date.parse(session.lastSeenAt);
    if (now - last >= IDLE_TIMEOUT_MS) { this.lastSeen.delete(session.id); return undefined; }
    this.lastSeen.set(session.id, now);
    if (now - Date.parse(session.lastSeenAt) >= TOUCH_INTERVAL_MS) this.touch(session, now);
    return { session, user, csrf: this.csrfFor(session.id) };
  }

  /** Ends session `id` (sign-out); durable when resolved. */
  async end(id: string): Promise<void> {
    this.lastSeen.delete(id);
    if (!this.store.system.get('session', id)) return;
    const tx = this.store.system.begin();
    tx.del('session', id);
    await this.store.system.commit(tx);
  }

  /** The CSRF token of session `id`'s forms. */
  csrfFor(id: string): string { return this.mac(`session\0${id}`); }
  /** The CSRF token of the pre-session forms of the browser holding nonce `nonce`. */
  preCsrf(nonce: string): string { return this.mac(`pre\0${nonce}`); }
  /** Whether `given` (a form's `csrf` field) equals `expected`, compared in constant time. */
  static sameToken(given: string | undefined, expected: string): boolean {
    if (given === undefined) return false;
    const a = Buffer.from(given), b = Buffer.from(expected);
    return a.length === b.length && timingSafeEqual(a, b);
  }
  /** A new pre-session nonce. */
  static nonce(): string { return randomBase62(32); }

  private mac(text: string): string { return createHmac('sha256', this.secret).update(text).digest('base64url'); }

  private touch(session: SessionRec, now: number): void {
    const tx = this.store.system.begin();
    tx.put('session', session.id, { ...session, lastSeenAt: iso(now) });
    this.store.system.commit(tx).catch((e) => this.logger.warn('could not record a session\'s activity', { error: (e as Error).message }));
  }
}

/** How many failed sign-ins lock an email, within what window, and for how long (docs/security.md#lockout). */
export const LOCKOUT = { failures: 10, windowMs: 15 * 60_000, lockMs: 15 * 60_000, maxTracked: 100_000 } as const;

/**
 * Failed sign-ins per email (lower-cased), whether a user has it or not, so a locked answer
 * never tells that an email exists. Kept in memory (a restart forgets them); at most
 * {@link LOCKOUT}.maxTracked emails, the least recently failed dropped first.
 */
export class SignInLimiter {
  private readonly failures = new Map<string, { times: number[]; lockedUntil: number }>();
  constructor(private readonly clock: Clock) {}

  /** Milliseconds until `email` may try again; 0 when it is not locked. */
  lockedFor(email: string): number {
    const f = this.failures.get(email.toLowerCase());
    return f ? Math.max(0, f.lockedUntil - this.clock.now()) : 0;
  }

  /** Counts a failed sign-in; @returns true when it locked the email. */
  fail(email: string): boolean {
    const k = email.toLowerCase();
    const now = this.clock.now();
    const f = this.failures.get(k) ?? { times: [], lockedUntil: 0 };
    this.failures.delete(k); // re-inserted last: the map's order is least recently failed first
    f.times = f.times.filter((t) => now - t < LOCKOUT.windowMs);
    f.times.push(now);
    let locked = false;
    if (f.times.length >= LOCKOUT.failures) { f.lockedUntil = now + LOCKOUT.lockMs; f.times = []; locked = true; }
    this.failures.set(k, f);
    if (this.failures.size > LOCKOUT.maxTracked) this.failures.delete(this.failures.keys().next().value as string);
    return locked;
  }

  /** A successful sign-in clears the email's failures. */
  succeed(email: string): void { this.failures.delete(email.toLowerCase()); }
}
