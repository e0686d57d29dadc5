import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SearchIndex, prepareSource, newSearchCost, MAX_QUERY_TERMS, type SearchChunk, type SourceEntry } from '../src/search/bm25.js';
import { WINDOW } from '../src/search/scan.js';
import { exhaustiveSearch } from './helpers/bm25Reference.js';
import { mulberry32 } from './helpers/prng.js';
import { vocabulary, zipf } from './helpers/zipf.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import type { Ingestion, OpenApiAnswer, SearchAnswer } from './helpers/answers.js';

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
    const cost = newSearchCost();
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
          const got = x.index.search(q, limit, cost);
          const want = exhaustiveSearch(x.entries, x.index, q, limit);
          assert.deepEqual(got, want, `seed ${seed} op ${op} query ${JSON.stringify(q)} limit ${limit}`);
          queries++;
        }
      }
      for (const e of x.entries.values()) if (e.postings.length > 2 * 4 * WINDOW) longLists++;
    }
    // The corpora reach every path: several windows per source, windows skipped on their bounds.
    assert.ok(queries === 6 * 14 * 25 && longLists > 0 && cost.skippedWindows > 0 && cost.windows > 2 * queries, JSON.stringify(cost));
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

  it('scores a small part of the postings of a 32-term query over 60,000 chunks', () => {
    const rand = mulberry32(99);
    const vocab = vocabulary(50_000);
    const draw = zipf(vocab.length, 1.0, rand);
    const x = new Indexed();
    for (let s = 0; s < 3; s++) {
      x.add(`src-${s}`, Array.from({ length: 20_000 }, (_, i) => ({
        documentId: `d${i}`, title: null, text: Array.from({ length: 10 + Math.floor(rand() * 91) }, () => vocab[draw()]).join(' '),
      })));
    }
    // Pasted-paragraph queries: Zipf-drawn words until 32 distinct, so mostly common words.
    let scored = 0;
    let exhaustive = 0;
    for (let n = 0; n < 5; n++) {
      const words = new Set<string>();
      while (words.size < 32) words.add(vocab[draw()]);
      const q = [...words].join(' ');
      const cost = newSearchCost();
      const reference = { postings: 0 };
      assert.deepEqual(x.index.search(q, 10, cost), exhaustiveSearch(x.entries, x.index, q, 10, MAX_QUERY_TERMS, reference));
      scored += cost.postings;
      exhaustive += reference.postings;
    }
    assert.ok(exhaustive > 1_000_000, `the queries' terms have ${exhaustive} postings`);
    assert.ok(scored > 0 && scored < exhaustive / 4, `scored ${scored} of ${exhaustive} postings`);
  });
});

describe('GET /api/v1/sources/search: query terms', () => {
  let srv: TestServer;
  before(async () => { srv = await startTestServer(); });
  after(async () => { await srv.close(); });

  it('searches by the first 32 distinct terms of q; later ones are ignored', async () => {
    const w = await srv.space();
    const words = vocabulary(40);
    // One section per word: section i is the only chunk holding words[i].
    const content = `# Glossary\n\n${words.map((x, i) => `## Part ${i}\n\nOnly ${x} here.`).join('\n\n')}`;
    const created = await w.call<Ingestion>('POST', '/api/v1/sources', { body: { type: 'text', content } });
    assert.equal(created.status, 201);
    assert.equal(created.body.source.status, 'ready');
    const titles = async (q: string): Promise<string[]> => {
      const r = await w.call<SearchAnswer>('GET', `/api/v1/sources/search?q=${encodeURIComponent(q)}&limit=50`);
      assert.equal(r.status, 200);
      return r.body.results.map((h) => String(h.title)).sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)));
    };
    const part = (i: number): string => `Part ${i}`;
    assert.deepEqual(await titles(words.slice(0, 33).join(' ')), Array.from({ length: 32 }, (_, i) => part(i)));
    assert.deepEqual(await titles(`${words.slice(0, 32).join(' ')} ${words[39]}`), Array.from({ length: 32 }, (_, i) => part(i)));
    // Repeats and stop words are not terms of their own.
    assert.deepEqual(await titles(`${words[3]} the ${words[3]} and ${words[3]} ${words[39]}`), [part(3), part(39)]);
    // The API document says so.
    const doc = (await srv.call<OpenApiAnswer>('GET', '/api/v1/openapi.json', { key: null })).body;
    const q = (doc.paths['/api/v1/sources/search'].get.parameters as Array<{ name?: string; description?: string }>).find((x) => x.name === 'q');
    assert.ok(q);
    assert.equal(q.description, 'Search text; its first 32 distinct terms are used (words after tokenizing: stop words dropped, repeats counted once).');
  });
});
