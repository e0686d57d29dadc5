/**
 * The exact median of durations held in several sorted bags (a range's days, docs/api.md#analytics), without merging
 * them: the k-th smallest value is found by bisecting over the values (whole milliseconds), each step a rank query per
 * bag — ~45 steps whatever the number of values.
 */
import type { SortedBag } from './sortedBag.js';

/**
 * The median of the values of `bags` (whole ms) in whole seconds, exactly as a sort of every value in seconds gives it
 * (`Math.round((a/1000 + b/1000) / 2)` for two middle ones); null when empty.
 */
export function medianSeconds(bags: ReadonlyArray<SortedBag<number>>): number | null {
  let n = 0;
  for (const b of bags) n += b.size;
  if (n === 0) return null;
  const m = n >> 1;
  if (n % 2 === 1) return Math.round(kth(bags, m) / 1000);
  const a = kth(bags, m - 1);
  // The next value: `a` again when more than m values are at most `a`, else the least value above it.
  let atMost = 0;
  for (const bag of bags) atMost += bag.countAtMost(a);
  let b = a;
  if (atMost <= m) {
    b = Infinity;
    for (const bag of bags) { const v = bag.firstAbove(a); if (v !== undefined && v < b) b = v; }
  }
  return Math.round((a / 1000 + b / 1000) / 2);
}

/** The `k`-th smallest value (0-based) of the bags together; `k` is below their total size. */
export function kth(bags: ReadonlyArray<SortedBag<number>>, k: number): number {
  let lo = Infinity, hi = -Infinity;
  for (const b of bags) {
    if (b.size === 0) continue;
    lo = Math.min(lo, b.min()!);
    hi = Math.max(hi, b.max()!);
  }
  // The smallest value v with more than k values at most v: a value of the bags.
  while (lo < hi) {
    const mid = Math.floor(lo / 2 + hi / 2);
    let atMost = 0;
    for (const b of bags) atMost += b.countAtMost(mid);
    if (atMost > k) hi = mid; else lo = mid + 1;
  }
  return lo;
}
