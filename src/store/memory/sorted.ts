/**
 * An ordered set of (sortKey, id) entries for keyset pagination (docs/api.md#lists), in the string
 * order of `sortKey + "\0" + id` (the form a cursor carries; ids never contain "\0"). Entries are
 * two parallel arrays of the caller's strings; one restored from a snapshot starts *packed* in
 * shared typed arrays (docs/storage.md#memory) and unpacks on its first change.
 */
import type { IdList } from './ids.js';

export const SEP = '\u0000';

/** The composite key of (sortKey, id), as cursors carry it. */
export const compositeKey = (sortKey: string, id: string): string => sortKey + SEP + id;

/** The latest time a canonical ISO string of 24 characters holds (9999-12-31T23:59:59.999Z). */
const MAX_ISO_MS = 253402300799999;

/**
 * The epoch ms of `key` when it is a canonical ISO time as `Date#toISOString` writes it (so numbers
 * order as the strings do); else NaN. Read from the characters: compaction runs it on every key.
 */
export function isoMs(key: string): number {
  if (key.length !== 24 || key.charCodeAt(4) !== 0x2d || key.charCodeAt(7) !== 0x2d || key.charCodeAt(10) !== 0x54 ||
    key.charCodeAt(13) !== 0x3a
    || key.charCodeAt(16) !== 0x3a || key.charCodeAt(19) !== 0x2e || key.charCodeAt(23) !== 0x5a) return NaN;
  const y = digits(key, 0, 4), mo = digits(key, 5, 7), d = digits(key, 8, 10), h = digits(key, 11, 13), mi =
    digits(key, 14, 16), s = digits(key, 17, 19), ms = digits(key, 20, 23);
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59 ||
    ms < 0) return NaN;
  const t = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  // A day past the month's end (Feb 30) rolls over: not the canonical text of its time.
  return new Date(Date.UTC(y, mo - 1, d)).getUTCDate() === d && t <= MAX_ISO_MS ? t : NaN;
}

/** The number the decimal digits `key[from, to)` write; -1 when one is not a digit. */
function digits(key: string, from: number, to: number): number {
  let v = 0;
  for (let i = from; i < to; i++) {
    const d = key.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

/**
 * The packed entries of one or more indexes: times (epoch ms) and positions in `ids`, window by
 * window; `first` is the ref of position 0 in the block they were loaded from.
 */
export interface Packed {
  readonly ms: Float64Array; readonly refs: Uint32Array; readonly ids: IdList; readonly first: number }

/** A copy of an index's entries (compaction's capture): ids and keys, or, packed, times and loaded refs. */
export type SortedCopy = { ids: string[]; keys: string[]; ms?: undefined; loaded?: undefined } | {
  loaded: Uint32Array; ms: Float64Array; ids?: undefined; keys?: undefined };

/** The arrays of an index with no entry of its own yet (shared: a restored index holds none until it changes). */
const NONE: string[] = [];

export class SortedIndex {
  private sortKeys: string[] = NONE;
  private ids: string[] = NONE;
  /** The packed form: entries pStart…pStart+pCount-1 of `p`; null once unpacked. */
  private p: Packed | null = null;
  private pStart = 0;
  private pCount = 0;

  get size(): number { return this.p !== null ? this.pCount : this.ids.length; }

  /** A copy of the entries (compaction's capture): packed times stay numbers. */
  copy(): SortedCopy {
    const p = this.p;
    if (p === null) return { keys: this.sortKeys.slice(), ids: this.ids.slice() };
    const loaded = new Uint32Array(this.pCount);
    for (let i = 0; i < this.pCount; i++) loaded[i] = p.first + p.refs[this.pStart + i];
    return { loaded, ms: p.ms.slice(this.pStart, this.pStart + this.pCount) };
  }

  /**
   * Replaces every entry by `keys[i]`, `ids[i]` (in order: a restored state; kept, not copied).
   * @throws Error when their lengths differ.
   */
  replace(keys: string[], ids: string[]): void {
    if (keys.length !== ids.length) throw new Error('a sorted index needs as many keys as ids');
    this.sortKeys = keys;
    this.ids = ids;
    this.p = null;
  }

  /** Replaces every entry by the packed window `start`…`start+count-1` of `p` (in order; shared, never changed). */
  replacePacked(p: Packed, start: number, count: number): void {
    this.sortKeys = NONE;
    this.ids = NONE;
    this.p = p;
    this.pStart = start;
    this.pCount = count;
  }

  /** Turns the packed form into the two arrays (before a change). */
  private unpack(): void {
    const p = this.p;
    if (p === null) return;
    const n = this.pCount;
    const keys = new Array<string>(n);
    const ids = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      keys[i] = new Date(p.ms[this.pStart + i]).toISOString();
      ids[i] = p.ids.at(p.refs[this.pStart + i]);
    }
    this.p = null;
    this.sortKeys = keys;
    this.ids = ids;
  }

  /** Adds the entry (no-op when present). */
  add(sortKey: string, id: string): void {
    this.unpack();
    if (this.ids === NONE) { this.sortKeys = []; this.ids = []; }
    const n = this.ids.length;
    if (n === 0 || after(sortKey, id, this.sortKeys[n - 1], this.ids[n - 1])) {
      this.sortKeys.push(sortKey); this.ids.push(id); return; }
    const i = this.lowerBound(sortKey, id);
    if (this.ids[i] === id && this.sortKeys[i] === sortKey) return;
    this.sortKeys.splice(i, 0, sortKey);
    this.ids.splice(i, 0, id);
  }

  /** Removes the entry (no-op when absent). */
  remove(sortKey: string, id: string): void {
    this.unpack();
    const i = this.lowerBound(sortKey, id);
    if (this.ids[i] === id && this.sortKeys[i] === sortKey) { this.sortKeys.splice(i, 1); this.ids.splice(i, 1); }
  }

  /** First position whose entry is >= (sortKey, id). */
  private lowerBound(sortKey: string, id: string): number {
    const p = this.p;
    let lo = 0, hi = this.size;
    if (p === null) {
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (after(sortKey, id, this.sortKeys[mid], this.ids[mid])) lo = mid + 1; else hi = mid;
      }
      return lo;
    }
    const ms = isoMs(sortKey);
    const base = this.pStart;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const t = p.ms[base + mid];
      // A bound that is not a canonical time (a date, a prefix) is compared as a string.
      const gt = ms === ms
        ? ms > t || (ms === t && id > p.ids.at(p.refs[base + mid]))
        : after(sortKey, id, new Date(t).toISOString(), p.ids.at(p.refs[base + mid]));
      if (gt) lo = mid + 1; else hi = mid;
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
  idAt(i: number): string {
    const p = this.p;
    return p === null ? this.ids[i] : p.ids.at(p.refs[this.pStart + i]);
  }
  /** The sort key at position `i`. */
  sortKeyAt(i: number): string {
    const p = this.p;
    return p === null ? this.sortKeys[i] : new Date(p.ms[this.pStart + i]).toISOString();
  }
  /** The composite key at position `i` (for a cursor). */
  keyAt(i: number): string { return compositeKey(this.sortKeyAt(i), this.idAt(i)); }

  /** Positions of the entries whose composite key is below `before` (all when undefined), largest first. */
  *desc(before?: string): Generator<number> {
    for (let i = (before === undefined ? this.size : this.lowerBoundOf(before)) - 1; i >= 0; i--) yield i;
  }

  /**
   * Positions of the entries whose composite key is above `from` (all when undefined), smallest
   * first — and, with `below` (a date or a time), whose sort key is below it (one binary search).
   */
  *asc(from?: string, below?: string): Generator<number> {
    let i = from === undefined ? 0 : this.lowerBoundOf(from);
    if (from !== undefined && i < this.size && this.keyAt(i) === from) i++;
    const end = below === undefined ? this.size : this.lowerBoundOf(below);
    for (; i < end; i++) yield i;
  }
}

/** Whether (sortKey, id) sorts after (k, i). */
function after(sortKey: string, id: string, k: string, i: string): boolean {
  return sortKey > k || (sortKey === k && id > i);
}
