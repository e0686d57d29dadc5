/**
 * Token buckets (docs/security.md#rate-limit; headers: docs/api.md#rate-limit-headers): one per API key for requests, one per client address for
 * failed authentication. The map is bounded: past `maxEntries`, the least recently used
 * buckets are dropped — a dropped bucket was either full or is refilled as if it were, which
 * can only ever favour the client by at most one burst. Time comes from an injected clock.
 */
import type { Clock } from '../core/clock.js';

interface Bucket { tokens: number; at: number }

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
      this.buckets.delete(key); // re-insert: Map order is the LRU order
    } else {
      b = { tokens: this.capacity, at: now };
      if (this.buckets.size >= this.maxEntries) {
        const oldest = this.buckets.keys().next().value;
        if (oldest !== undefined) this.buckets.delete(oldest);
      }
    }
    this.buckets.set(key, b);
    return b;
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
