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
 * activation forms, which are filled before there is a session. The `sw_device` cookie of a
 * browser that signed in (docs/security.md#lockout) is an HMAC too, bound to its user. Nothing
 * about them is stored.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { hashKey, randomBase62 } from '../auth/keys.js';
import { iso, type Clock } from '../core/clock.js';
import type { SessionRec, Store, UserRec } from '../store/store.js';
import type { Logger } from '../core/logger.js';

export const SESSION_COOKIE = 'sw_session';
/**
 * The cell that made the session (`cell_<CELL_NAME>`): HAProxy sends the browser there while its runtime API has not
 * yet learnt the new session (docs/deployment.md#several-machines). Not a credential.
 */
export const CELL_COOKIE = 'sw_cell';
/** The pre-session nonce cookie that the sign-in and activation forms' CSRF tokens are bound to. */
export const PRE_COOKIE = 'sw_pre';
/** A session ends after this long without a request (docs/security.md#sessions). */
export const IDLE_TIMEOUT_MS = 12 * 3600_000;
/** `lastSeenAt` is written at most this often per session. */
const TOUCH_INTERVAL_MS = 60_000;
const TOKEN = /^[0-9A-Za-z]{43}$/;
/** The cookie that marks a browser that signed in successfully before (docs/security.md#lockout). */
export const DEVICE_COOKIE = 'sw_device';
/** How long a device cookie is honoured after the sign-in that set it (each sign-in renews it). */
export const DEVICE_TTL_MS = 90 * 24 * 3600_000;
/** `<nonce: 22 base62>.<issued: ms, base36>.<HMAC-SHA-256 base64url>` */
const DEVICE = /^([0-9A-Za-z]{22})\.([0-9a-z]{1,11})\.([0-9A-Za-z_-]{43})$/;

/** A signed-in request: its session, user and the CSRF token its forms carry. */
export interface SignedIn { session: SessionRec; user: UserRec; csrf: string }

export class Sessions {
  /** Session id → the time of its last request (ms), exact (the log has it to the minute). */
  private readonly lastSeen = new Map<string, number>();

  constructor(private readonly store: Store, private readonly clock: Clock, private readonly logger: Logger,
    private readonly secret: Buffer) {
    store.system.retain('session', (s) => clock.now() - Date.parse(s.lastSeenAt) < IDLE_TIMEOUT_MS);
    store.system.retain('activation', (a) => a.usedAt === null && Date.parse(a.expiresAt) > clock.now());
  }

  /** Starts a session for `user`; durable when resolved. @returns the cookie's token (never stored). */
  async create(user: UserRec): Promise<string> {
    const token = randomBase62(32);
    const now = this.clock.now();
    const rec: SessionRec = { id: hashKey(token), userId: user.id, workspaceId: user.workspaceId, createdAt: iso(now),
      lastSeenAt: iso(now) };
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
  /**
   * A new device cookie value for `user`: a random id and the time it was issued, signed with
   * the user's id, so it names a device of this user only.
   */
  deviceToken(user: UserRec): string {
    const body = `${randomBase62(16)}.${this.clock.now().toString(36)}`;
    return `${body}.${this.mac(`device\0${user.id}\0${body}`)}`;
  }

  /**
   * The device id of cookie value `token` when it is a device cookie this server issued to
   * `user` less than {@link DEVICE_TTL_MS} ago; undefined otherwise (any string is accepted).
   */
  knownDevice(token: string | undefined, user: UserRec | undefined): string | undefined {
    const m = token === undefined || user === undefined ? null : DEVICE.exec(token);
    if (!m || !user) return undefined;
    const issued = parseInt(m[2], 36);
    const age = this.clock.now() - issued;
    if (!(age >= 0 && age < DEVICE_TTL_MS)) return undefined;
    return Sessions.sameToken(m[3], this.mac(`device\0${user.id}\0${m[1]}.${m[2]}`)) ? m[1] : undefined;
  }

  /** A new pre-session nonce. */
  static nonce(): string { return randomBase62(32); }

  private mac(text: string): string { return createHmac('sha256', this.secret).update(text).digest('base64url'); }

  private touch(session: SessionRec, now: number): void {
    const tx = this.store.system.begin();
    tx.put('session', session.id, { ...session, lastSeenAt: iso(now) });
    this.store.system.commit(tx).catch((e) => this.logger.warn('could not record a session\'s activity', { error: (
      e as Error).message }));
  }
}
