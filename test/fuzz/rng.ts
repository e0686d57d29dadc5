/**
 * The fuzzer's randomness: xoshiro128** seeded through splitmix32, one stream per iteration, so
 * that a seed and an iteration number name a request. Deterministic, not cryptographic.
 */
const rotl = (x: number, k: number): number => ((x << k) | (x >>> (32 - k))) >>> 0;

/** splitmix32 step: a well-mixed 32-bit value from `x`. */
function mix32(x: number): number {
  let z = (x + 0x9e3779b9) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  return (z ^ (z >>> 16)) >>> 0;
}

/** A seed for stream `n` of `seed` (iterations, rounds). */
export const deriveSeed = (seed: number, n: number): number => mix32(mix32(seed >>> 0) ^ mix32((n * 0x632be5ab) >>> 0));

/** xoshiro128** (Blackman & Vigna), seeded through splitmix32. Deterministic, not cryptographic. */
export class Rng {
  private a: number; private b: number; private c: number; private d: number;
  constructor(seed: number) {
    let s = seed >>> 0;
    const next = () => { s = (s + 0x9e3779b9) >>> 0; return mix32(s); };
    this.a = next(); this.b = next(); this.c = next(); this.d = next();
    if ((this.a | this.b | this.c | this.d) === 0) this.a = 1;
  }
  u32(): number {
    const r = Math.imul(rotl(Math.imul(this.b, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.b << 9) >>> 0;
    this.c = (this.c ^ this.a) >>> 0; this.d = (this.d ^ this.b) >>> 0;
    this.b = (this.b ^ this.c) >>> 0; this.a = (this.a ^ this.d) >>> 0;
    this.c = (this.c ^ t) >>> 0; this.d = rotl(this.d, 11);
    return r;
  }
  float(): number { return this.u32() / 4294967296; }
  /** 0 … n-1 */
  int(n: number): number { return Math.floor(this.float() * n); }
  /** lo … hi inclusive */
  range(lo: number, hi: number): number { return lo + this.int(hi - lo + 1); }
  chance(p: number): boolean { return this.float() < p; }
  pick<T>(a: readonly T[]): T { return a[this.int(a.length)]; }
  weighted<T>(items: ReadonlyArray<readonly [T, number]>): T {
    let total = 0;
    for (const [, w] of items) total += w;
    let x = this.float() * total;
    for (const [v, w] of items) { x -= w; if (x < 0) return v; }
    return items[items.length - 1][0];
  }
  bytes(n: number): Buffer {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i += 4) {
      const v = this.u32();
      for (let j = 0; j < 4 && i + j < n; j++) b[i + j] = (v >>> (8 * j)) & 0xff;
    }
    return b;
  }
  shuffle<T>(a: T[]): T[] {
    for (let i = a.length - 1; i > 0; i--) { const j = this.int(i + 1); [a[i], a[j]] = [a[j], a[i]]; }
    return a;
  }
  /** A random (v4-shaped) UUID. */
  uuid(): string {
    const h = this.bytes(16);
    h[6] = (h[6] & 0x0f) | 0x40; h[8] = (h[8] & 0x3f) | 0x80;
    const x = h.toString('hex');
    return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
  }
}
