/**
 * A sorted multiset of numbers or strings kept as chunks of at most 1,024 sorted values (after Python's
 * sortedcontainers): an add or a delete is two binary searches and a splice within one chunk, whatever the size, so a
 * million values cost no write more than ~1,000 moves. Analytics keeps each day's durations in one (exact medians,
 * docs/api.md#analytics); clients their times and their list order (docs/api.md#client-object).
 */

/** A chunk that grows past this many values is split in two. */
const MAX_CHUNK = 1024;

export class SortedBag<T extends number | string> {
  private chunks: T[][] = [];
  private count = 0;

  /**
   * A bag of `values`, which must be in ascending order (a restored snapshot state).
   * @throws Error when they are not.
   */
  static fromSorted<T extends number | string>(values: ArrayLike<T>): SortedBag<T> {
    const bag = new SortedBag<T>();
    for (let i = 1; i < values.length; i++) if (!(values[i - 1] <= values[i])) throw new Error('values out of order');
    const half = MAX_CHUNK / 2;
    for (let i = 0; i < values.length; i += half) {
      bag.chunks.push(Array.prototype.slice.call(values, i, i + half) as T[]);
    }
    bag.count = values.length;
    return bag;
  }

  /** The number of values (each copy counts). */
  get size(): number { return this.count; }

  /** The smallest value, or undefined when empty. */
  min(): T | undefined { return this.chunks.length === 0 ? undefined : this.chunks[0][0]; }

  /** The largest value, or undefined when empty. */
  max(): T | undefined {
    const last = this.chunks[this.chunks.length - 1];
    return last === undefined ? undefined : last[last.length - 1];
  }

  /** Adds one copy of `v`. */
  add(v: T): void {
    this.count++;
    if (this.chunks.length === 0) { this.chunks.push([v]); return; }
    let c = this.chunkFor(v);
    if (c === this.chunks.length) c--;
    const chunk = this.chunks[c];
    chunk.splice(upperBound(chunk, v), 0, v);
    if (chunk.length > MAX_CHUNK) this.chunks.splice(c + 1, 0, chunk.splice(MAX_CHUNK / 2));
  }

  /** Removes one copy of `v`; false when there is none. */
  delete(v: T): boolean {
    const c = this.chunkFor(v);
    const chunk = this.chunks[c];
    if (chunk === undefined) return false;
    const i = lowerBound(chunk, v);
    if (chunk[i] !== v) return false;
    chunk.splice(i, 1);
    if (chunk.length === 0) this.chunks.splice(c, 1);
    this.count--;
    return true;
  }

  /** How many values are at most `v`. O(chunks + log 1,024). */
  countAtMost(v: T): number {
    let n = 0;
    for (const chunk of this.chunks) {
      if (chunk[chunk.length - 1] <= v) { n += chunk.length; continue; }
      return n + upperBound(chunk, v);
    }
    return n;
  }

  /** The least value above `v`, or undefined when there is none. */
  firstAbove(v: T): T | undefined {
    // The first chunk whose last value is above `v` (copies of `v` may fill several chunks).
    let lo = 0, hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = this.chunks[mid];
      if (chunk[chunk.length - 1] <= v) lo = mid + 1; else hi = mid;
    }
    const chunk = this.chunks[lo];
    return chunk === undefined ? undefined : chunk[upperBound(chunk, v)];
  }

  /** The values strictly below `bound` (all when undefined), largest first. */
  *below(bound?: T): Generator<T> {
    let c = bound === undefined ? this.chunks.length - 1 : Math.min(this.chunkFor(bound), this.chunks.length - 1);
    for (; c >= 0; c--) {
      const chunk = this.chunks[c];
      for (let i = (bound === undefined ? chunk.length : lowerBound(chunk, bound)) - 1; i >= 0; i--) yield chunk[i];
      bound = undefined;
    }
  }

  /** Every value in ascending order, copied (a snapshot capture). */
  values(): T[] {
    const out: T[] = [];
    for (const chunk of this.chunks) for (const v of chunk) out.push(v);
    return out;
  }

  /** The first chunk whose last value is >= `v` (the chunk count when none is). */
  private chunkFor(v: T): number {
    let lo = 0, hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = this.chunks[mid];
      if (chunk[chunk.length - 1] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
}

/** The first position of sorted `a` whose value is >= `v`. */
function lowerBound<T>(a: readonly T[], v: T): number {
  let lo = 0, hi = a.length;
  while (lo < hi) { const mid = (lo + hi) >>> 1; if (a[mid] < v) lo = mid + 1; else hi = mid; }
  return lo;
}

/** The first position of sorted `a` whose value is > `v`. */
function upperBound<T>(a: readonly T[], v: T): number {
  let lo = 0, hi = a.length;
  while (lo < hi) { const mid = (lo + hi) >>> 1; if (a[mid] <= v) lo = mid + 1; else hi = mid; }
  return lo;
}
