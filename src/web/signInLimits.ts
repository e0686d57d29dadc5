/**
 * The sign-in limits (docs/security.md#lockout): failed sign-ins per email and per client
 * address, sign-in attempts per client address, and failures per known device. A browser that
 * signed in before (its `sw_device` cookie, src/web/sessions.ts) is not held by the email's or
 * the address's limits, so no one else's failures lock its user out; it has its own limit.
 * All kept in memory on the injected clock (a restart forgets them), in bounded maps.
 */
import { TokenBucketLimiter } from '../http/ratelimit.js';
import type { Clock } from '../core/clock.js';

const MIN = 60_000;
/** Failed sign-ins that lock an email, within what window, for how long (ms). */
export const LOCKOUT = { failures: 10, windowMs: 15 * MIN, lockMs: 15 * MIN } as const;
/** Per client address: sign-in attempts (a bucket of 30, 30 a minute) and failures that lock it. */
export const ADDRESS_LIMIT = { attempts: 30, perMinute: 30, failures: 30, windowMs: 15 * MIN,
  lockMs: 15 * MIN } as const;
/** Failures after which a known device counts as unknown again, for how long. */
export const DEVICE_LIMIT = { failures: 10, windowMs: 15 * MIN, lockMs: 15 * MIN } as const;
/** Keys each map holds at most, the least recently used dropped first. */
export const MAX_TRACKED = 100_000;

/**
 * Failures per key within a sliding window; `failures` of them lock the key for `lockMs`.
 */
export class FailureCounter {
  private readonly failures = new Map<string, { times: number[]; lockedUntil: number }>();
  constructor(private readonly clock: Clock, private readonly rule: {
    failures: number; windowMs: number; lockMs: number }) {}

  /** Milliseconds until `key` may try again; 0 when it is not locked. */
  lockedFor(key: string): number {
    const f = this.failures.get(key);
    return f ? Math.max(0, f.lockedUntil - this.clock.now()) : 0;
  }

  /** Counts a failure of `key`; @returns true when it locked the key. */
  fail(key: string): boolean {
    const now = this.clock.now();
    const f = this.failures.get(key) ?? { times: [], lockedUntil: 0 };
    this.failures.delete(key); // re-inserted last: the map's order is least recently failed first
    f.times = f.times.filter((t) => now - t < this.rule.windowMs);
    f.times.push(now);
    let locked = false;
    if (f.times.length >= this.rule.failures) { f.lockedUntil = now + this.rule.lockMs; f.times = []; locked = true; }
    this.failures.set(key, f);
    if (this.failures.size > MAX_TRACKED) this.failures.delete(this.failures.keys().next().value as string);
    return locked;
  }

  /** Forgets `key`'s failures. */
  clear(key: string): void { this.failures.delete(key); }
}

/** Who is signing in: the email (any case), the client's address key, the known device's id if any. */
export interface Attempt { email: string; client: string; device: string | undefined }
/** Why an attempt is refused before its password is checked, and for how long (ms). */
export interface Refusal { by: 'address' | 'email'; ms: number }

export class SignInLimits {
  private readonly emails: FailureCounter;
  private readonly addresses: FailureCounter;
  private readonly devices: FailureCounter;
  private readonly attempts: TokenBucketLimiter;

  constructor(clock: Clock) {
    this.emails = new FailureCounter(clock, LOCKOUT);
    this.addresses = new FailureCounter(clock, ADDRESS_LIMIT);
    this.devices = new FailureCounter(clock, DEVICE_LIMIT);
    this.attempts = new TokenBucketLimiter(ADDRESS_LIMIT.attempts, ADDRESS_LIMIT.perMinute, clock, MAX_TRACKED);
  }

  /** Whether `a.device` is a known device that has not failed too often (it skips the other limits). */
  trusted(a: Attempt): boolean { return a.device !== undefined && this.devices.lockedFor(a.device) === 0; }

  /**
   * Admits an attempt (taking one of its address's attempts) or says why not: a locked
   * address, an address out of attempts, a locked email. A trusted device is always admitted.
   */
  admit(a: Attempt): Refusal | null {
    if (this.trusted(a)) return null;
    const locked = this.addresses.lockedFor(a.client);
    if (locked > 0) return { by: 'address', ms: locked };
    const t = this.attempts.take(a.client);
    if (!t.allowed) return { by: 'address', ms: t.retryAfterSeconds * 1000 };
    const email = this.emails.lockedFor(a.email.toLowerCase());
    if (email > 0) return { by: 'email', ms: email };
    return null;
  }

  /**
   * Counts a wrong password: against the device when trusted, else against the email and the
   * address. @returns the refusal the next attempt would meet when this failure locked something.
   */
  fail(a: Attempt): Refusal | null {
    if (this.trusted(a)) { this.devices.fail(a.device!); return null; }
    const email = a.email.toLowerCase();
    const byEmail = this.emails.fail(email);
    const byAddress = this.addresses.fail(a.client);
    if (byAddress) return { by: 'address', ms: this.addresses.lockedFor(a.client) };
    if (byEmail) return { by: 'email', ms: this.emails.lockedFor(email) };
    return null;
  }

  /** A right password clears the email's and the device's failures (not the address's: one account must not reset it).
   * */
  succeed(a: Attempt): void {
    this.emails.clear(a.email.toLowerCase());
    if (a.device !== undefined) this.devices.clear(a.device);
  }
}
