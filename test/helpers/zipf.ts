/**
 * Synthetic search text for tests and the search benchmark: a vocabulary of made-up words (each
 * tokenizes to itself: lower-case ASCII, no stop word, no plural `s`) drawn with a Zipf law, as
 * words are in real prose — a few very common, most rare.
 */

import { tokenize } from '../../src/search/tokenize.js';

/**
 * `n` distinct words of 3+ letters (the shortest first), each its own single search term: words
 * that are stop words or would lose a plural `s` are left out. The same for the same `n`.
 */
export function vocabulary(n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) {
    let w = '';
    for (let x = i, d = 0; d < 3 || x > 0; d++, x = Math.floor(x / 26)) w += String.fromCharCode(97 + (x % 26));
    const t = tokenize(w);
    if (t.length === 1 && t[0] === w) out.push(w);
  }
  return out;
}

/**
 * A sampler of ranks `0 .. n-1` with P(rank r) ∝ 1/(r+1)^exponent, driven by `rand` (floats in
 * [0, 1)). Costs O(n) to build and O(log n) per draw.
 */
export function zipf(n: number, exponent: number, rand: () => number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let r = 0; r < n; r++) cdf[r] = sum += 1 / (r + 1) ** exponent;
  return () => {
    const x = rand() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (cdf[m] < x) lo = m + 1;
      else hi = m;
    }
    return lo;
  };
}
