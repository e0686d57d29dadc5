/**
 * The exhaustive BM25 scan the search index ran before it pruned: every posting of every query
 * term is scored, per source, into a Map, and every scored chunk is offered to the top k. Kept
 * as the reference the pruned search must equal (same chunks, same scores, same tie order), and
 * as the "before" of the search benchmark.
 */
import { K1, B, MAX_QUERY_TOKENS, MAX_QUERY_TERMS, type SearchIndex, type SearchHit, type SourceEntry } from '../../src/search/bm25.js';
import { tokenize } from '../../src/search/tokenize.js';
import { TopK } from '../../src/search/topk.js';

/**
 * The `limit` best chunks for `query` over `sources` (the entries given to `index.addSource`,
 * by source id), with the global counters read from `index`. `maxTerms` distinct query terms are
 * used (Infinity: all of the first MAX_QUERY_TOKENS tokens, the old rule). `cost.postings`, when
 * given, is increased by the postings scored.
 */
export function exhaustiveSearch(sources: Map<string, SourceEntry>, index: SearchIndex, query: string, limit: number,
  maxTerms = MAX_QUERY_TERMS, cost?: { postings: number }): SearchHit[] {
  const k = Math.floor(limit);
  const N = index.stats().chunks;
  if (!(k >= 1) || N === 0) return [];
  const terms: string[] = [];
  const idfs: number[] = [];
  for (const t of [...new Set(tokenize(query, MAX_QUERY_TOKENS))].slice(0, maxTerms)) {
    const d = index.documentFrequency(t);
    if (d === 0) continue;
    terms.push(t);
    idfs.push(Math.log(1 + (N - d + 0.5) / (d + 0.5)));
  }
  if (terms.length === 0) return [];
  const avgLength = index.averageChunkLength();
  const base = K1 * (1 - B);
  const perLength = avgLength > 0 ? (K1 * B) / avgLength : 0;
  const top = new TopK(k);
  const acc = new Map<number, number>();
  for (const [sourceId, src] of sources) {
    acc.clear();
    for (let q = 0; q < terms.length; q++) {
      const id = src.termIds.get(terms[q]);
      if (id === undefined) continue;
      const idf = idfs[q];
      const { postings, lengths } = src;
      for (let p = 2 * src.offsets[id], end = 2 * src.offsets[id + 1]; p < end; p += 2) {
        const ci = postings[p];
        const f = postings[p + 1];
        const s = (idf * (f * (K1 + 1))) / (f + base + perLength * lengths[ci]);
        acc.set(ci, (acc.get(ci) ?? 0) + s);
      }
      if (cost) cost.postings += src.offsets[id + 1] - src.offsets[id];
    }
    for (const [ci, s] of acc) top.offer(s, sourceId, ci);
  }
  return top.sorted().map((c) => {
    const src = sources.get(c.sourceId)!;
    return { sourceId: c.sourceId, documentId: src.documentIds[c.chunkIndex], chunkIndex: c.chunkIndex,
      title: src.titles[c.chunkIndex], score: c.score, text: src.texts[c.chunkIndex] };
  });
}
