/**
 * In-memory Okapi BM25 index over a workspace's source chunks (docs/sources.md#search). Each source keeps its own
 * postings and its share of every df, so adding or removing one costs O(1) on the main thread; a query is exact top-k
 * with dynamic pruning (scan.ts).
 */

import { tokenize } from './tokenize.js';
import { TopK } from './topk.js';
import { blockBounds, createPlan, scanSource, type SearchCost } from './scan.js';

export type { SearchCost } from './scan.js';
export { newSearchCost } from './scan.js';

/** BM25 term-frequency saturation. */
export const K1 = 1.2;
/** BM25 length normalisation. */
export const B = 0.75;
/** Weight of each title token relative to a body token. */
export const TITLE_WEIGHT = 2;
/** A query is tokenized up to this many tokens (the rest of a very long query is ignored). */
export const MAX_QUERY_TOKENS = 256;
/** At most this many distinct query terms are used, the first in query order (a pasted paragraph: its first 32). */
export const MAX_QUERY_TERMS = 32;

/** One chunk handed to {@link SearchIndex.addSource}. */
export interface SearchChunk {
  documentId: string;
  /** Title of the chunk's document (shared by all its chunks), or null. */
  title: string | null;
  text: string;
}

/** One search result. */
export interface SearchHit {
  sourceId: string;
  documentId: string;
  /** Position of the chunk in the array given to `addSource`. */
  chunkIndex: number;
  title: string | null;
  score: number;
  text: string;
}

/** Counts describing the index. */
export interface SearchStats {
  sources: number;
  chunks: number;
  /** Distinct terms over all sources. */
  terms: number;
}

/** One source's postings, built by {@link prepareSource} (possibly on a worker thread). */
export interface SourceEntry {
  documentIds: string[];
  titles: (string | null)[];
  texts: string[];
  /** Length in (weighted) tokens of each chunk. */
  lengths: Int32Array;
  totalLength: number;
  termIds: Map<string, number>;
  /** `offsets[id]..offsets[id+1]` index the pairs of term `id` in `postings`. */
  offsets: Int32Array;
  /** `[chunkIndex, tf]` pairs, grouped by term id. */
  postings: Int32Array;
  /** Per block of 64 postings, 1 / the largest tf and the smallest `len/tf`: score bounds (src/search/scan.ts). */
  blockBounds: Float32Array;
}

/** Tokenizes and lays out one source's postings; touches no global state, so it can run on a worker thread. */
export function prepareSource(chunks: ReadonlyArray<SearchChunk>): SourceEntry {
  const n = chunks.length;
  const documentIds = new Array<string>(n);
  const titles = new Array<string | null>(n);
  const texts = new Array<string>(n);
  const lengths = new Int32Array(n);
  const termIds = new Map<string, number>();
  const counts: number[] = []; // postings per term id
  const tf: number[] = []; // tf of each term id in the current chunk (0 when absent)
  const touched: number[] = []; // term ids with tf > 0 in the current chunk
  const triples: number[] = []; // termId, chunkIndex, tf — in chunk order
  const titleCache = new Map<string, string[]>();
  let totalLength = 0;
  const count = (tokens: string[], weight: number): void => {
    for (const t of tokens) {
      let id = termIds.get(t);
      if (id === undefined) {
        id = counts.length;
        termIds.set(t, id);
        counts.push(0);
        tf.push(0);
      }
      if (tf[id] === 0) touched.push(id);
      tf[id] += weight;
    }
  };
  for (let ci = 0; ci < n; ci++) {
    const ch = chunks[ci];
    const title = ch.title ?? null;
    documentIds[ci] = ch.documentId;
    titles[ci] = title;
    texts[ci] = ch.text;
    let len = 0;
    if (title !== null && title !== '') {
      let tt = titleCache.get(title);
      if (tt === undefined) titleCache.set(title, (tt = tokenize(title)));
      count(tt, TITLE_WEIGHT);
      len += TITLE_WEIGHT * tt.length;
    }
    const body = tokenize(ch.text);
    count(body, 1);
    len += body.length;
    lengths[ci] = len;
    totalLength += len;
    for (const id of touched) {
      counts[id]++;
      triples.push(id, ci, tf[id]);
      tf[id] = 0;
    }
    touched.length = 0;
  }
  const offsets = new Int32Array(counts.length + 1);
  for (let id = 0; id < counts.length; id++) offsets[id + 1] = offsets[id] + counts[id];
  const cursor = offsets.slice(0, counts.length);
  const postings = new Int32Array(2 * offsets[counts.length]);
  for (let k = 0; k < triples.length; k += 3) {
    const at = 2 * cursor[triples[k]]++;
    postings[at] = triples[k + 1];
    postings[at + 1] = triples[k + 2];
  }
  return { documentIds, titles, texts, lengths, totalLength, termIds, offsets, postings,
    blockBounds: blockBounds(postings, lengths) };
}

/** The distinct terms of `query` a search uses, in query order: at most {@link MAX_QUERY_TERMS}. */
export function queryTerms(query: string): string[] {
  const out = new Set<string>();
  for (const t of tokenize(query, MAX_QUERY_TOKENS)) {
    out.add(t);
    if (out.size === MAX_QUERY_TERMS) break;
  }
  return [...out];
}

/** BM25 index over the chunks of many sources; see the module comment. */
export class SearchIndex {
  private readonly sources = new Map<string, SourceEntry>();
  private chunkCount = 0;
  private totalLength = 0;

  /** Indexes `chunks` as `sourceId`'s content, replacing what it had; O(chunks), or O(1) with `prepared`. */
  addSource(sourceId: string, chunks: ReadonlyArray<SearchChunk>, prepared?: SourceEntry): void {
    this.addPrepared(sourceId, prepared ?? prepareSource(chunks));
  }

  /** {@link addSource} with the chunks already prepared (on a worker thread): O(1). */
  addPrepared(sourceId: string, entry: SourceEntry): void {
    this.removeSource(sourceId);
    this.chunkCount += entry.texts.length;
    this.totalLength += entry.totalLength;
    this.sources.set(sourceId, entry);
  }

  /** Removes every chunk of `sourceId` (no-op if unknown). O(1). */
  removeSource(sourceId: string): void {
    const entry = this.sources.get(sourceId);
    if (entry === undefined) return;
    this.chunkCount -= entry.texts.length;
    this.totalLength -= entry.totalLength;
    this.sources.delete(sourceId);
  }

  /**
   * The `limit` best chunks for `query`, best first; ties ordered by sourceId, then chunkIndex. A query with no indexed
   * terms gives []. Results equal scoring every matching chunk; chunks whose bounds cannot reach the top `limit` are
   * skipped (src/search/scan.ts). `cost`, when given, is increased by what this search did.
   */
  search(query: string, limit: number, cost?: SearchCost): SearchHit[] {
    return this.searchTerms(queryTerms(query), limit, cost);
  }

  /** {@link search} for terms already tokenized (as {@link queryTerms} makes them). */
  searchTerms(queryTerms: readonly string[], limit: number, cost?: SearchCost): SearchHit[] {
    const k = Math.floor(limit);
    if (!(k >= 1) || this.chunkCount === 0) return [];
    const N = this.chunkCount;
    const terms: string[] = [];
    const idfs: number[] = [];
    for (const t of queryTerms) {
      const d = this.documentFrequency(t);
      if (d === 0) continue;
      terms.push(t);
      idfs.push(Math.log(1 + (N - d + 0.5) / (d + 0.5)));
    }
    if (terms.length === 0) return [];
    const plan = createPlan(terms, idfs, K1, B, this.totalLength / N);
    const top = new TopK(k);
    for (const [sourceId, src] of this.sources) scanSource(src, sourceId, plan, top, cost);
    return top.sorted().map((c) => {
      const src = this.sources.get(c.sourceId)!;
      return {
        sourceId: c.sourceId,
        documentId: src.documentIds[c.chunkIndex],
        chunkIndex: c.chunkIndex,
        title: src.titles[c.chunkIndex],
        score: c.score,
        text: src.texts[c.chunkIndex],
      };
    });
  }

  /** Number of indexed sources, chunks, and distinct terms (a diagnostic: O(every term of every source)). */
  stats(): SearchStats {
    const terms = new Set<string>();
    for (const src of this.sources.values()) for (const t of src.termIds.keys()) terms.add(t);
    return { sources: this.sources.size, chunks: this.chunkCount, terms: terms.size };
  }

  /** Number of chunks containing `term` (an already-tokenized term), over all sources: O(sources). */
  documentFrequency(term: string): number {
    let d = 0;
    for (const src of this.sources.values()) {
      const id = src.termIds.get(term);
      if (id !== undefined) d += src.offsets[id + 1] - src.offsets[id];
    }
    return d;
  }

  /** Mean chunk length in weighted tokens (0 when empty): the avgLen of the BM25 formula. */
  averageChunkLength(): number {
    return this.chunkCount === 0 ? 0 : this.totalLength / this.chunkCount;
  }
}
