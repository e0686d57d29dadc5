/**
 * Token buckets (docs/security.md#rate-limit, docs/api.md#rate-limit-headers): one per API key for requests, one per
 * client address for failed authentication. Past `maxEntries` a bucket not used since the last sweep is dropped
 * (the CLOCK approximation of least recently used: a lookup only marks its bucket, so the map is never reordered on
 * the request path), which can favour a client by at most one burst.
 */
import type { Clock } from '../core/clock.js';

/** `used`: taken or peeked since the eviction sweep last passed it (its second chance). */
interface Bucket { tokens: number; at: number; used: boolean }

export interface TakeResult {
  allowed: boolean;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds until the bucket is full again (`RateLimit-Reset`). */
  resetSeconds: number;
  /** Seconds until one token is available (`Retry-After`), when not allowed. */
  retryAfterSeconds: number;
}

export class TokenBucketLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;

  constructor(
    /** Bucket capacity (`RATE_LIMIT_BURST`). */
    readonly capacity: number,
    /** Refill, tokens per minute (`RATE_LIMIT_PER_MINUTE`). */
    readonly perMinute: number,
    private readonly clock: Clock,
    readonly maxEntries = 100_000,
  ) {
    this.perMs = perMinute / 60_000;
    this.full = Object.freeze({ allowed: true, remaining: capacity, resetSeconds: 0, retryAfterSeconds: 0 });
  }

  /** What `peek` answers for a key with no bucket (a full one); shared, so frozen. */
  private readonly full: TakeResult;

  private bucket(key: string): Bucket {
    const now = this.clock.now();
    let b = this.buckets.get(key);
    if (b) {
      // A clock stepping back refills nothing (and never puts a bucket into debt).
      b.tokens = Math.min(this.capacity, b.tokens + Math.max(0, now - b.at) * this.perMs);
      b.at = now;
      b.used = true;
      return b;
    }
    if (this.buckets.size >= this.maxEntries) this.evictOne();
    b = { tokens: this.capacity, at: now, used: false };
    this.buckets.set(key, b);
    return b;
  }

  /**
   * Drops one bucket: the oldest in the map not used since the sweep last passed it; each used one met on the way
   * loses its mark and goes to the end. Amortized O(1): every bucket passed over was marked by a lookup.
   */
  private evictOne(): void {
    for (const [key, b] of this.buckets) {
      this.buckets.delete(key);
      if (!b.used) return;
      b.used = false;
      this.buckets.set(key, b);
    }
  }

  private result(b: Bucket, allowed: boolean): TakeResult {
    return {
      allowed,
      remaining: Math.floor(b.tokens),
      resetSeconds: Math.ceil((this.capacity - b.tokens) / this.perMs / 1000),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / this.perMs / 1000)),
    };
  }

  /** Takes one token for `key` if there is one. */
  take(key: string): TakeResult {
    const b = this.bucket(key);
    if (b.tokens >= 1) { b.tokens -= 1; return this.result(b, true); }
    return this.result(b, false);
  }

  /** Whether `key` has a token, without taking it (an unknown key is not added to the map). */
  peek(key: string): TakeResult {
    if (!this.buckets.has(key)) return this.full;
    const b = this.bucket(key);
    return this.result(b, b.tokens >= 1);
  }

  get size(): number { return this.buckets.size; }
}
