/**
 * Bearer authentication (docs/api.md#authentication, docs/security.md#api-keys): the key is checked for shape, hashed
 * and looked up by hash; missing, malformed, unknown and revoked keys are 401 `unauthorized`, expired ones 401
 * `key_expired`. Only failures are limited, per client address (30 a minute, then 429).
 */
import type { IncomingMessage } from 'node:http';
import { ApiError, type ErrorCode } from '../http/errors.js';
import { TokenBucketLimiter } from '../http/ratelimit.js';
import { BEARER_API_KEY, hashKey, hasScope } from './keys.js';
import { iso, type Clock } from '../core/clock.js';
import type { KeyRec, Store } from '../store/store.js';
import type { Logger } from '../core/logger.js';

/** Failed authentications allowed per client address and minute (docs/security.md#failed-authentication-limit). */
export const AUTH_FAILURES_PER_MINUTE = 30;

/** `lastUsedAt` is written at most this often per key (docs/security.md#api-keys). */
export const LAST_USED_INTERVAL_MS = 60_000;

export class Authenticator {
  readonly failures: TokenBucketLimiter;
  /** Key id → when its lastUsedAt was last written (ms). */
  private readonly lastTouch = new Map<string, number>();

  /** `clientKey` names the client (address, or /64 for IPv6) a failure is counted against; called on failures. */
  constructor(private readonly store: Store, private readonly clock: Clock, private readonly logger: Logger,
    private readonly clientKey: (req: IncomingMessage) => string) {
    this.failures = new TokenBucketLimiter(AUTH_FAILURES_PER_MINUTE, AUTH_FAILURES_PER_MINUTE, clock, 10_000);
  }

  /**
   * Returns the key record of the request's bearer key.
   * @throws ApiError 401 `unauthorized` / `key_expired`, or 429 `rate_limited` with `Retry-After` once the client
   *   address has failed too often.
   */
  authenticate(req: IncomingMessage): KeyRec {
    // The key is always checked, even from a locked-out address: the limit refuses failures, never a valid key, so
    // clients sharing an address are not locked out by one of them. A key's 256 random bits make that harmless; the
    // limit bounds the cost of wrong keys. Hashing per request keeps no plaintext key beyond its request.
    const header = req.headers.authorization;
    // One regular expression checks the scheme (any case) and the key's shape.
    const m = header === undefined ? null : BEARER_API_KEY.exec(header);
    const key = m !== null ? this.store.keyByHash(hashKey(m[1])) : undefined;
    if (!key || key.revokedAt) return this.reject(req, 'unauthorized');
    const now = this.clock.now();
    if (key.expiresAt && Date.parse(key.expiresAt) <= now) return this.reject(req, 'key_expired');
    let last = this.lastTouch.get(key.id);
    if (last === undefined) { last = key.lastUsedAt ? Date.parse(key.lastUsedAt) : -Infinity; this.lastTouch.set(
      key.id, last); }
    if (now - last >= LAST_USED_INTERVAL_MS) { this.lastTouch.set(key.id, now); this.touch(key, now); }
    return key;
  }

  hasScope(key: KeyRec, scope: string): boolean {
    return hasScope(key.scopes, scope);
  }

  private reject(req: IncomingMessage, code: ErrorCode): never {
    const r = this.failures.take(this.clientKey(req));
    if (!r.allowed) throw tooManyFailures(r.retryAfterSeconds);
    throw new ApiError(code);
  }

  /** Records `lastUsedAt` without making the request wait for the disk. */
  private touch(key: KeyRec, now: number): void {
    const tx = this.store.system.begin();
    tx.put('key', key.id, { ...key, lastUsedAt: iso(now) });
    this.store.system.commit(tx).catch((e) => this.logger.warn('could not record lastUsedAt', { keyId: key.id, error: (
      e as Error).message }));
  }
}

const tooManyFailures = (retryAfterSeconds: number): ApiError =>
  new ApiError('rate_limited', 'too many failed authentications from this address',
    { 'Retry-After': String(retryAfterSeconds) });
