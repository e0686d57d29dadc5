/**
 * In-memory Okapi BM25 index over the chunks of a workspace's sources, kept up to date
 * incrementally as sources are created, rescanned and deleted.
 *
 * Scoring, per query term t present in chunk c (query terms are de-duplicated, and only the
 * first {@link MAX_QUERY_TERMS} distinct ones are used):
 *
 *     idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
 *     score   += idf(t) · tf(t,c)·(k1 + 1) / (tf(t,c) + k1·(1 - b + b·len(c)/avgLen))
 *
 * with k1 = 1.2, b = 0.75, N the number of chunks in the whole index, df(t) the number of chunks
 * containing t, len(c) the chunk's length in tokens and avgLen the mean over all chunks. The title
 * of a chunk's document counts as part of every chunk of that document, weighted ×2: each title
 * token adds 2 to tf and 2 to len. Terms come from {@link tokenize}.
 *
 * Layout: each source keeps its own postings, from which its share of every df is read
 * (`offsets[id+1] − offsets[id]`); the index keeps only N and the total length. So adding,
 * replacing or removing a prepared source costs O(1) on the main thread however large it and the
 * index are (a global df map cost a Map update per distinct term: about a second for a
 * 50,000-chunk source joining a million-chunk index), and a query sums its ≤ 32 terms' df over
 * the sources, which its scan visits anyway. A query is exact top-k with dynamic pruning
 * (src/search/scan.ts): its cost is O(sources + blocks of the query terms' postings + postings of
 * the chunks that can still enter the top k), not O(every posting of the query terms). A source's
 * postings are compact: `termIds: Map<term, id>`, and the postings of term `id`
 * are the `[chunkIndex, tf]` pairs at `postings[2·k], postings[2·k+1]` for
 * `offsets[id] ≤ k < offsets[id+1]`, in increasing chunk order; `blockBounds` keeps two float32
 * per 64 postings (about 1.6 % of the postings' size). Chunk texts, titles and document
 * ids are kept by reference, never copied.
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
/**
 * At most this many distinct query terms are used: the first ones, in query order, among the
 * first {@link MAX_QUERY_TOKENS} tokens (a pasted paragraph is searched by its first 32 terms).
 */
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
  /**
   * Per block of 64 postings, 1 / the largest tf and the smallest `len/tf` (see
   * src/search/scan.ts): they bound the block's scores whatever the global counters become.
   */
  blockBounds: Float32Array;
}

/**
 * Tokenizes and lays out one source's postings; touches no global state, so it can run on a
 * worker thread and its result (plain arrays, a Map and typed arrays) be cloned back.
 */
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
  return { documentIds, titles, texts, lengths, totalLength, termIds, offsets, postings, blockBounds: blockBounds(postings, lengths) };
}

/**
 * The distinct terms of `query` that a search uses, in query order: at most
 * {@link MAX_QUERY_TERMS}, from the first {@link MAX_QUERY_TOKENS} tokens.
 */
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

  /**
   * Indexes `chunks` as the content of `sourceId`, replacing whatever that source had before.
   * Costs O(size of the chunks) to prepare them; with `prepared` (the {@link prepareSource} of
   * the same chunks, made on a worker thread) O(1).
   */
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
   * The `limit` best chunks for `query`, best first; equal scores are ordered by sourceId, then
   * chunkIndex. Only the first {@link MAX_QUERY_TERMS} distinct terms of the query are used. A
   * query with no indexed terms (empty, stop words only, unknown words) gives [].
   *
   * The result and scores are those of scoring every chunk holding a query term, but the scan
   * skips chunks whose score bounds cannot reach the best `limit` (src/search/scan.ts), so its
   * cost does not grow with the chunks that only match the query's common terms. `cost`, when
   * given, is increased by what this search did.
   */
  search(query: string, limit: number, cost?: SearchCost): SearchHit[] {
    const k = Math.floor(limit);
    if (!(k >= 1) || this.chunkCount === 0) return [];
    const N = this.chunkCount;
    const terms: string[] = [];
    const idfs: number[] = [];
    for (const t of queryTerms(query)) {
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
