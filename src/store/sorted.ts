/**
 * An ordered set of (sortKey, id) entries for keyset (cursor) pagination (docs/api.md#lists): ordered
 * by sortKey, then by id. Its order is exactly the string order of the composite keys
 * `sortKey + "\0" + id`, which is the form a cursor carries — provided ids never contain "\0"
 * and sort keys contain it nowhere, or at the same position in every key of the index (custom
 * fields' fixed-width `position "\0" createdAt`); otherwise the two orders could differ.
 *
 * The entries are kept as two parallel arrays of the caller's own strings (usually the
 * record's `createdAt` and `id`), so an entry costs two array slots and no string of its own:
 * on a 1,000,000-record workspace a composite string per entry was ~115 MiB of heap.
 * Appending in order is O(1); other inserts and removals are a binary search plus a splice.
 */
export const SEP = '\u0000';

/** The composite key of (sortKey, id), as cursors carry it. */
export const compositeKey = (sortKey: string, id: string): string => sortKey + SEP + id;

export class SortedIndex {
  private sortKeys: string[] = [];
  private ids: string[] = [];

  get size(): number { return this.ids.length; }

  /** A copy of the entries as two parallel arrays (compaction's capture, docs/storage.md#snapshots). */
  copy(): { keys: string[]; ids: string[] } { return { keys: this.sortKeys.slice(), ids: this.ids.slice() }; }

  /**
   * Replaces every entry by `keys[i]`, `ids[i]` (parallel arrays, already in order: a restored
   * snapshot state; the arrays are kept, not copied).
   * @throws Error when their lengths differ.
   */
  replace(keys: string[], ids: string[]): void {
    if (keys.length !== ids.length) throw new Error('a sorted index needs as many keys as ids');
    this.sortKeys = keys;
    this.ids = ids;
  }

  /** Adds the entry (no-op when present). */
  add(sortKey: string, id: string): void {
    const n = this.ids.length;
    if (n === 0 || after(sortKey, id, this.sortKeys[n - 1], this.ids[n - 1])) { this.sortKeys.push(sortKey); this.ids.push(id); return; }
    const i = this.lowerBound(sortKey, id);
    if (this.ids[i] === id && this.sortKeys[i] === sortKey) return;
    this.sortKeys.splice(i, 0, sortKey);
    this.ids.splice(i, 0, id);
  }

  /** Removes the entry (no-op when absent). */
  remove(sortKey: string, id: string): void {
    const i = this.lowerBound(sortKey, id);
    if (this.ids[i] === id && this.sortKeys[i] === sortKey) { this.sortKeys.splice(i, 1); this.ids.splice(i, 1); }
  }

  /** First position whose entry is >= (sortKey, id). */
  private lowerBound(sortKey: string, id: string): number {
    let lo = 0, hi = this.ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (after(sortKey, id, this.sortKeys[mid], this.ids[mid])) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  /** First position whose composite key is >= `bound` (a composite key, or any string). */
  private lowerBoundOf(bound: string): number {
    const cut = bound.lastIndexOf(SEP);
    // A bound without "\0" (a date) sorts before every composite key that starts with it.
    return cut === -1 ? this.lowerBound(bound, '') : this.lowerBound(bound.slice(0, cut), bound.slice(cut + 1));
  }

  /** The id at position `i` (a position yielded by asc/desc). */
  idAt(i: number): string { return this.ids[i]; }
  /** The sort key at position `i`. */
  sortKeyAt(i: number): string { return this.sortKeys[i]; }
  /** The composite key at position `i` (for a cursor). */
  keyAt(i: number): string { return compositeKey(this.sortKeys[i], this.ids[i]); }

  /**
   * Positions of the entries whose composite key is strictly below `before` (all when
   * undefined), largest first. Positions are valid until the index next changes.
   */
  *desc(before?: string): Generator<number> {
    for (let i = (before === undefined ? this.ids.length : this.lowerBoundOf(before)) - 1; i >= 0; i--) yield i;
  }

  /** Positions of the entries whose composite key is strictly above `after` (all when undefined), smallest first. */
  *asc(from?: string): Generator<number> {
    let i = from === undefined ? 0 : this.lowerBoundOf(from);
    if (from !== undefined && i < this.ids.length && this.keyAt(i) === from) i++;
    for (; i < this.ids.length; i++) yield i;
  }
}

/** Whether (sortKey, id) sorts after (k, i). */
function after(sortKey: string, id: string, k: string, i: string): boolean {
  return sortKey > k || (sortKey === k && id > i);
}
