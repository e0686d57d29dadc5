import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SearchIndex, prepareSource, newSearchCost, MAX_QUERY_TERMS, type SearchChunk, type SourceEntry } from '../src/search/bm25.js';
import { WINDOW } from '../src/search/scan.js';
import { exhaustiveSearch } from './helpers/bm25Reference.js';
import { mulberry32 } from './helpers/prng.js';
import { vocabulary, zipf } from './helpers/zipf.js';

/** An index plus the entries it was given, so the exhaustive reference can read the postings. */
class Indexed {
  readonly index = new SearchIndex();
  readonly entries = new Map<string, SourceEntry>();
  add(id: string, chunks: SearchChunk[]): void {
    const entry = prepareSource(chunks);
    this.index.addSource(id, chunks, entry);
    this.entries.delete(id);
    this.entries.set(id, entry);
  }
  remove(id: string): void {
    this.index.removeSource(id);
    this.entries.delete(id);
  }
}

/** Random chunks: `words()` body tokens each (Zipf-drawn), a third of them titled. */
function randomChunks(rand: () => number, n: number, word: () => string, maxLen: number): SearchChunk[] {
  return Array.from({ length: n }, (_, i) => {
    const len = 1 + Math.floor(rand() ** 2 * maxLen);
    const text = Array.from({ length: len }, word).join(' ');
    return { documentId: `doc${i >> 3}`, title: rand() < 0.3 ? `${word()} ${word()}` : null, text };
  });
}

describe('SearchIndex pruned scan', () => {
  it('equals the exhaustive scan (same chunks, scores and tie order) over random corpora, queries and add/replace/remove (seeded)', () => {
    let queries = 0;
    let longLists = 0;
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const rand = mulberry32(seed);
      // Small vocabularies make equal scores (ties across chunks and sources) frequent; large ones
      // give long lists of common terms next to rare ones.
      const vocab = vocabulary(seed % 2 === 0 ? 12 : 3000);
      const draw = zipf(vocab.length, seed % 3 === 0 ? 0.6 : 1.1, rand);
      const word = (): string => vocab[draw()];
      const x = new Indexed();
      for (let op = 0; op < 14; op++) {
        const id = `s${Math.floor(rand() * 5)}`;
        if (op < 3 || rand() < 0.75) {
          // Some sources span several windows; chunk lengths from 1 to 40 tokens.
          const n = rand() < 0.5 ? Math.floor(rand() * 60) : Math.floor(WINDOW * (1 + 2 * rand()));
          x.add(id, randomChunks(rand, n, word, rand() < 0.5 ? 8 : 40));
        } else x.remove(id);
        for (let qn = 0; qn < 25; qn++) {
          const len = 1 + Math.floor(rand() * (rand() < 0.3 ? 60 : 8));
          const words = Array.from({ length: len }, () => (rand() < 0.1 ? `unknownx${Math.floor(rand() * 5)}` : rand() < 0.5 ? word() : vocab[Math.floor(rand() * vocab.length)]));
          const q = words.join(rand() < 0.5 ? ' ' : ', ');
          const limit = [1, 2, 3, 5, 10, 50, 1000][Math.floor(rand() * 7)];
          const got = x.index.search(q, limit);
          const want = exhaustiveSearch(x.entries, x.index, q, limit);
          assert.deepEqual(got, want, `seed ${seed} op ${op} query ${JSON.stringify(q)} limit ${limit}`);
          queries++;
        }
      }
      for (const e of x.entries.values()) if (e.postings.length > 2 * 4 * WINDOW) longLists++;
    }
    assert.ok(queries === 6 * 14 * 25 && longLists > 0);
  });

  it('uses the first 32 distinct query terms and ignores the rest', () => {
    assert.equal(MAX_QUERY_TERMS, 32);
    const x = new Indexed();
    const vocab = vocabulary(40);
    // Chunk i holds word i only; 'the' is a stop word and yields no term.
    x.add('s', vocab.map((w, i) => ({ documentId: `d${i}`, title: null, text: `${w} the ${w}` })));
    const first32 = vocab.slice(0, 32).join(' ');
    const hitsOf = (q: string): number[] => x.index.search(q, 50).map((h) => h.chunkIndex).sort((a, b) => a - b);
    assert.deepEqual(hitsOf(`${first32} ${vocab[32]} ${vocab[33]}`), Array.from({ length: 32 }, (_, i) => i));
    // Repeated terms and stop words do not count towards the 32.
    assert.deepEqual(hitsOf(`${vocab[0]} the ${vocab[0]} `.repeat(40) + vocab[39]), [0, 39]);
    // Unknown words count: they are terms of the query even if no chunk holds them.
    const unknown = Array.from({ length: 32 }, (_, i) => `nowherex${i}`).join(' ');
    assert.deepEqual(hitsOf(`${unknown} ${vocab[5]}`), []);
    assert.deepEqual(hitsOf(`${vocab[5]} ${unknown}`), [5]);
  });

  it('scores a small part of the postings of a common-term query over 120,000 chunks', () => {
    const rand = mulberry32(99);
    const vocab = vocabulary(20_000);
    const draw = zipf(vocab.length, 1.0, rand);
    const word = (): string => vocab[draw()];
    const x = new Indexed();
    for (let s = 0; s < 4; s++) x.add(`src-${s}`, randomChunks(rand, 30_000, word, 60));
    // A pasted-paragraph query: the most common words with a few rarer ones among them.
    const q = [0, 1, 2, 3, 500, 4, 5, 6, 7, 9000, 8, 9, 10, 15_000, 11, 12].map((r) => vocab[r]).join(' ');
    const cost = newSearchCost();
    const reference = { postings: 0 };
    assert.deepEqual(x.index.search(q, 10, cost), exhaustiveSearch(x.entries, x.index, q, 10, MAX_QUERY_TERMS, reference));
    console.log(cost, reference); assert.ok(reference.postings > 500_000, `the query terms have ${reference.postings} postings`);
    assert.ok(cost.postings > 0 && cost.postings < reference.postings / 10, `scored ${cost.postings} of ${reference.postings} postings`);
    assert.ok(cost.offered < 2_000, `offered ${cost.offered} chunks`);
  });
});
