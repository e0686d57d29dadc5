/**
 * An ordered set of string keys for keyset (cursor) pagination: `sortKey + "\0" + id`, so
 * equal sort keys are ordered by id (DESIGN §4). Appending in order is O(1); other inserts
 * and removals are a binary search plus a splice.
 */
export const SEP = '\u0000';

export class SortedIndex {
  private keys: string[] = [];

  get size(): number { return this.keys.length; }

  /** The composite key for (sortKey, id). */
  static key(sortKey: string, id: string): string { return sortKey + SEP + id; }
  /** The id part of a composite key. */
  static idOf(key: string): string { return key.slice(key.lastIndexOf(SEP) + 1); }

  add(key: string): void {
    const n = this.keys.length;
    if (n === 0 || key > this.keys[n - 1]) { this.keys.push(key); return; }
    const i = this.lowerBound(key);
    if (this.keys[i] !== key) this.keys.splice(i, 0, key);
  }

  remove(key: string): void {
    const i = this.lowerBound(key);
    if (this.keys[i] === key) this.keys.splice(i, 1);
  }

  /** First index whose key is >= `key`. */
  private lowerBound(key: string): number {
    let lo = 0, hi = this.keys.length;
    while (lo < hi) { const mid = (lo + hi) >>> 1; if (this.keys[mid] < key) lo = mid + 1; else hi = mid; }
    return lo;
  }

  /** Keys strictly below `before` (all when undefined), largest first. */
  *desc(before?: string): Generator<string> {
    for (let i = (before === undefined ? this.keys.length : this.lowerBound(before)) - 1; i >= 0; i--) yield this.keys[i];
  }

  /** Keys strictly above `after` (all when undefined), smallest first. */
  *asc(after?: string): Generator<string> {
    let i = after === undefined ? 0 : this.lowerBound(after);
    if (after !== undefined && this.keys[i] === after) i++;
    for (; i < this.keys.length; i++) yield this.keys[i];
  }
}
