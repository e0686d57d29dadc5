/**
 * mulberry32: a small seeded PRNG for property tests, the fuzzer's seeds and the bench's data,
 * so that a failing run can be repeated from its seed.
 * @returns a function giving floats in [0, 1), the same sequence for the same `seed`.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
