/**
 * Exact top-k BM25 over one source's postings with dynamic pruning (docs/sources.md#search): MaxScore over windows of
 * chunk indexes with block-max bounds, so cost does not grow with the chunks common terms match. Only chunks whose
 * upper bound is strictly below the k-th score are dropped, and sums run in query-term order, so results are
 * bit-identical to an exhaustive scan.
 */

import type { TopK } from './topk.js';

/** Postings per block (a power of two: the block of posting `k` is `k >> BLOCK_SHIFT`). */
export const BLOCK_SHIFT = 6;
export const BLOCK = 1 << BLOCK_SHIFT;
/** Chunk indexes per window: smaller windows bound tighter but cost more each (fastest in bench/search.ts). */
export const WINDOW = 4096;
/** Bounds are compared times this: summing up to 32 terms in another order differs far less, so none is dropped. */
const SLACK = 1 + 1e-9;

/** What one search did, for benchmarks and tests (cumulative over the calls it is passed to). */
export interface SearchCost {
  /** Postings whose score was computed (term-at-a-time or looked up for one chunk). */
  postings: number;
  /** Windows considered, and how many of them were skipped on their bounds alone. */
  windows: number;
  skippedWindows: number;
  /** Chunks offered to the top k. */
  offered: number;
}

/** A fresh zeroed {@link SearchCost}. */
export function newSearchCost(): SearchCost {
  return { postings: 0, windows: 0, skippedWindows: 0, offered: 0 };
}

/**
 * The block bounds of a source: for block `b`, `[2b]` is 1 / the largest tf and `[2b+1]` the smallest `len/tf` of its
 * postings, rounded down to float32 so a bound is never below the true one. `postings` are `[chunkIndex, tf]`.
 */
export function blockBounds(postings: Int32Array, lengths: Int32Array): Float32Array {
  const count = postings.length >> 1;
  const blocks = (count + BLOCK - 1) >> BLOCK_SHIFT;
  const out = new Float32Array(2 * blocks);
  for (let b = 0; b < blocks; b++) {
    let maxTf = 0;
    let minRatio = Infinity;
    for (let k = b << BLOCK_SHIFT, end = Math.min(count, (b + 1) << BLOCK_SHIFT); k < end; k++) {
      const f = postings[2 * k + 1];
      const r = lengths[postings[2 * k]] / f;
      if (f > maxTf) maxTf = f;
      if (r < minRatio) minRatio = r;
    }
    // float32 rounds to nearest; shrinking first makes the stored values never exceed the true ones.
    out[2 * b] = (1 / maxTf) * (1 - 2 ** -20);
    out[2 * b + 1] = minRatio * (1 - 2 ** -20);
  }
  return out;
}

/** The parts of a source {@link scanSource} reads. */
export interface ScannedSource {
  termIds: Map<string, number>;
  offsets: Int32Array;
  postings: Int32Array;
  lengths: Int32Array;
  blockBounds: Float32Array;
}

/** A query's terms with their current idf and the BM25 constants, plus scratch space. */
export interface QueryPlan {
  /** Distinct indexed terms, in query order, and their idf. */
  terms: string[];
  idfs: number[];
  /** k1 + 1, k1·(1−b) and k1·b/avgLen. */
  k1p1: number;
  base: number;
  perLength: number;
  // Per-term scratch, one slot per query term present in the source being scanned.
  pos: Int32Array;
  end: Int32Array;
  wEnd: Int32Array;
  order: Int32Array;
  essential: Uint8Array;
  idf: Float64Array;
  wMax: Float64Array;
  neSum: Float64Array;
}

/** A {@link QueryPlan} for `terms` (distinct, indexed) with their `idfs`. */
export function createPlan(terms: string[], idfs: number[], k1: number, b: number, avgLength: number): QueryPlan {
  const n = terms.length;
  return {
    terms, idfs, k1p1: k1 + 1, base: k1 * (1 - b), perLength: avgLength > 0 ? (k1 * b) / avgLength : 0,
    pos: new Int32Array(n), end: new Int32Array(n), wEnd: new Int32Array(n), order: new Int32Array(n),
    essential: new Uint8Array(n), idf: new Float64Array(n), wMax: new Float64Array(n), neSum: new Float64Array(n),
  };
}

/** A non-essential term's postings in a window are walked, not looked up, when at most this many per live chunk. */
const WALK = 4;

// Searches run one at a time on the thread, so the window's scratch is shared: the score accumulator (all zero between
// windows) and the list of chunks alive in it.
const acc = new Float64Array(WINDOW);
const cand = new Int32Array(WINDOW);

/** First posting index in `[lo, hi)` whose chunk is ≥ `chunk` (`hi` if none); galloping from `lo`. */
function seek(postings: Int32Array, lo: number, hi: number, chunk: number): number {
  if (lo >= hi || postings[2 * lo] >= chunk) return lo;
  let step = 1;
  while (lo + step < hi && postings[2 * (lo + step)] < chunk) step *= 2;
  let l = lo + (step >> 1) + 1;
  let h = Math.min(lo + step, hi);
  while (l < h) {
    const m = (l + h) >>> 1;
    if (postings[2 * m] < chunk) l = m + 1;
    else h = m;
  }
  return l;
}

/** Offers to `top` every chunk of `src` an exhaustive scan would, same scores, minus those that cannot be kept. */
export function scanSource(src: ScannedSource, sourceId: string, plan: QueryPlan, top: TopK, cost?: SearchCost): void {
  const { postings, lengths, blockBounds: bb } = src;
  const { k1p1, base, perLength, pos, end, wEnd, order, essential, idf, wMax, neSum } = plan;
  const n = lengths.length;
  let m = 0;
  for (let q = 0; q < plan.terms.length; q++) {
    const id = src.termIds.get(plan.terms[q]);
    if (id === undefined) continue;
    pos[m] = src.offsets[id];
    end[m] = src.offsets[id + 1];
    idf[m] = plan.idfs[q];
    m++;
  }
  let scored = 0;
  let windows = 0;
  let skipped = 0;
  let offered = 0;
  let w0 = 0;
  while (m > 0) {
    // Jump over chunks no query term holds.
    let next = n;
    for (let s = 0; s < m; s++) if (pos[s] < end[s] && postings[2 * pos[s]] < next) next = postings[2 * pos[s]];
    if (next >= n) break;
    if (next > w0) w0 = next;
    const w1 = Math.min(w0 + WINDOW, n);
    windows++;

    // Each term's postings in the window, `pos[s] .. wEnd[s]`, and the bound of its blocks there.
    let threshold = top.threshold();
    let total = 0;
    let active = 0;
    for (let s = 0; s < m; s++) {
      let p = pos[s];
      const e = end[s];
      essential[s] = 0;
      if (p >= e || postings[2 * p] >= w1) {
        wEnd[s] = p;
        wMax[s] = 0;
        continue;
      }
      let u = Infinity;
      for (let blk = p >> BLOCK_SHIFT; ; blk++) {
        const v = base * bb[2 * blk] + perLength * bb[2 * blk + 1];
        if (v < u) u = v;
        const last = Math.min((blk + 1) << BLOCK_SHIFT, e) - 1;
        if (postings[2 * last] < w1) {
          if (last + 1 < e) continue;
          p = e;
          break;
        }
        p = Math.max(p, blk << BLOCK_SHIFT);
        let h = last;
        while (p < h) {
          const mid = (p + h) >>> 1;
          if (postings[2 * mid] < w1) p = mid + 1;
          else h = mid;
        }
        break;
      }
      wEnd[s] = p;
      const bound = (idf[s] * k1p1) / (1 + u);
      wMax[s] = bound;
      total += bound;
      // Insertion into `order`, kept sorted by bound ascending.
      let i = active++;
      while (i > 0 && wMax[order[i - 1]] > bound) {
        order[i] = order[i - 1];
        i--;
      }
      order[i] = s;
    }
    if (total * SLACK < threshold) {
      skipped++;
      for (let s = 0; s < m; s++) pos[s] = wEnd[s];
      w0 = w1;
      continue;
    }

    // Non-essential terms: the longest low-bound prefix that cannot reach the threshold alone.
    let ne = 0;
    let sum = 0;
    while (ne < active && (sum + wMax[order[ne]]) * SLACK < threshold) {
      sum += wMax[order[ne]];
      neSum[ne++] = sum;
    }
    for (let j = ne; j < active; j++) essential[order[j]] = 1;

    // Essential terms, term at a time in query order (so the sums are the exhaustive ones).
    for (let s = 0; s < m; s++) {
      if (essential[s] === 0) continue;
      const is = idf[s];
      for (let p = 2 * pos[s], e = 2 * wEnd[s]; p < e; p += 2) {
        const ci = postings[p];
        const f = postings[p + 1];
        acc[ci - w0] += (is * (f * k1p1)) / (f + base + perLength * lengths[ci]);
      }
      scored += wEnd[s] - pos[s];
    }

    // The chunks they touched, in increasing order.
    let live = 0;
    for (let i = 0, width = w1 - w0; i < width; i++) if (acc[i] !== 0) cand[live++] = i;

    // Non-essential terms, highest bound first: drop the chunks that cannot reach the threshold even with every
    // non-essential term left, then add the next term to those still alive.
    for (let j = ne - 1; j >= 0 && live > 0; j--) {
      const rest = neSum[j];
      let kept = 0;
      for (let c = 0; c < live; c++) {
        const i = cand[c];
        if ((acc[i] + rest) * SLACK < threshold) acc[i] = 0;
        else cand[kept++] = i;
      }
      live = kept;
      const s = order[j];
      const is = idf[s];
      const e = wEnd[s];
      if (e - pos[s] <= WALK * live) {
        // Few postings for the chunks alive: walk them all.
        for (let p = 2 * pos[s]; p < 2 * e; p += 2) {
          const ci = postings[p];
          const a = acc[ci - w0];
          if (a === 0) continue;
          const f = postings[p + 1];
          acc[ci - w0] = a + (is * (f * k1p1)) / (f + base + perLength * lengths[ci]);
          scored++;
        }
      } else {
        // Many: look each chunk alive up.
        let p = pos[s];
        for (let c = 0; c < live; c++) {
          const ci = w0 + cand[c];
          p = seek(postings, p, e, ci);
          if (p === e) break;
          if (postings[2 * p] !== ci) continue;
          const f = postings[2 * p + 1];
          acc[ci - w0] += (is * (f * k1p1)) / (f + base + perLength * lengths[ci]);
          scored++;
        }
      }
    }

    for (let c = 0; c < live; c++) {
      const i = cand[c];
      let score = acc[i];
      acc[i] = 0;
      if (score * SLACK < threshold) continue;
      const ci = w0 + i;
      if (ne > 0) {
        // Rescore in query order (only chunks that may enter the top k get here).
        score = 0;
        for (let s = 0; s < m; s++) {
          const p = seek(postings, pos[s], wEnd[s], ci);
          if (p < wEnd[s] && postings[2 * p] === ci) {
            const f = postings[2 * p + 1];
            score += (idf[s] * (f * k1p1)) / (f + base + perLength * lengths[ci]);
          }
        }
      }
      top.offer(score, sourceId, ci);
      offered++;
      threshold = top.threshold();
    }
    for (let s = 0; s < m; s++) pos[s] = wEnd[s];
    w0 = w1;
  }
  if (cost) {
    cost.postings += scored;
    cost.windows += windows;
    cost.skippedWindows += skipped;
    cost.offered += offered;
  }
}
