/**
 * The best `k` scored chunks of a search: the order is score descending, then sourceId, then chunkIndex ascending, so
 * equal scores always come out in the same order.
 */

/** A scored chunk. */
export interface Candidate {
  score: number;
  sourceId: string;
  chunkIndex: number;
}

/** True when `a` ranks before `b`. */
export function ranksBefore(a: Candidate, b: Candidate): boolean {
  if (a.score !== b.score) return a.score > b.score;
  if (a.sourceId !== b.sourceId) return a.sourceId < b.sourceId;
  return a.chunkIndex < b.chunkIndex;
}

/** Keeps the best `k` candidates offered: a binary heap whose root is the worst one kept. */
export class TopK {
  private readonly heap: Candidate[] = [];
  constructor(private readonly k: number) {}

  /**
   * The score a chunk must reach to be kept: 0 while fewer than `k` are, else the worst kept. A tie is kept only on the
   * tie order, so drop a chunk only when its bound is strictly below this.
   */
  threshold(): number {
    return this.heap.length < this.k ? 0 : this.heap[0].score;
  }

  /** Offers one chunk; kept if it ranks before the worst of a full heap. */
  offer(score: number, sourceId: string, chunkIndex: number): void {
    const h = this.heap;
    if (h.length < this.k) {
      h.push({ score, sourceId, chunkIndex });
      let i = h.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!ranksBefore(h[p], h[i])) break;
        [h[p], h[i]] = [h[i], h[p]];
        i = p;
      }
      return;
    }
    const root = h[0];
    if (!(score > root.score || (score === root.score && ranksBefore({ score, sourceId, chunkIndex }, root)))) return;
    h[0] = { score, sourceId, chunkIndex };
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let worst = i;
      if (l < h.length && ranksBefore(h[worst], h[l])) worst = l;
      if (r < h.length && ranksBefore(h[worst], h[r])) worst = r;
      if (worst === i) break;
      [h[worst], h[i]] = [h[i], h[worst]];
      i = worst;
    }
  }

  /** The kept candidates, best first. */
  sorted(): Candidate[] {
    return this.heap.slice().sort((a, b) => (ranksBefore(a, b) ? -1 : ranksBefore(b, a) ? 1 : 0));
  }
}
