import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tokenize, MAX_TOKEN_LENGTH } from '../src/search/tokenize.js';
import { SearchIndex, type SearchChunk } from '../src/search/bm25.js';
import { mulberry32 as rng } from './helpers/prng.js';


const chunk = (text: string, documentId = 'd', title: string | null = null): SearchChunk => ({ documentId, title, text });
/** `n` distinct filler words that tokenize to themselves and never collide with query terms. */
const filler = (n: number, tag: string): string => Array.from({ length: n }, (_, i) => `zz${tag}x${i}`).join(' ');

describe('tokenize', () => {
  const cases: Array<[string, string[]]> = [
    ['createPaymentIntent', ['createpaymentintent', 'create', 'payment', 'intent']],
    // `pets` → `pet`: the light stemming applies to path segments too.
    ['/v1/pets/{petId}', ['v1', 'pet', 'petid', 'pet', 'id']],
    ['snake_case_name', ['snakecasename', 'snake', 'case', 'name']],
    ['kebab-case-thing', ['kebabcasething', 'kebab', 'case', 'thing']],
    ['MAX_RETRY_COUNT', ['maxretrycount', 'max', 'retry', 'count']],
    ['HTTPServerError', ['httpservererror', 'http', 'server', 'error']],
    // An upper-case letter before a capitalised word is an acronym part: O + Auth2 (like XML + Http).
    ['OAuth2Token v1Pets', ['oauth2token', 'o', 'auth2', 'token', 'v1pet', 'v1', 'pet']],
    ['isActive getTheThing', ['isactive', 'active', 'getthething', 'get', 'thing']],
    ['__init__ foo__bar -flag', ['init', 'foobar', 'foo', 'bar', 'flag']],
    ['The cats and the glass on a bus', ['cat', 'glass', 'bus']],
    ['this is it, or is it?', []],
    ['Refunds: the STATUS of classes', ['refund', 'statu', 'classe']],
    ["customer's refunds don't", ['customer', 'refund', 'dont']],
    ['error 404 in v2.1 (2024-01-15)', ['error', '404', 'v2', '1', '20240115', '2024', '01', '15']],
    ['Café NAÏVE Ünïcode', ['café', 'naïve', 'ünïcode']],
    ['cafe\u0301 ＡＰＩ', ['café', 'api']],
    ['Привет, мир! ΑΒΓ δέλτα', ['привет', 'мир', 'αβγ', 'δέλτα']],
    ['東京 タワー', ['東京', 'タワー']],
    ['emoji🎉party 𝐚𝐛𝐜', ['emoji', 'party', 'abc']],
    ['', []],
    ['  ... -- __ // ', []],
  ];
  for (const [input, expected] of cases) {
    it(JSON.stringify(input), () => assert.deepEqual(tokenize(input), expected));
  }

  it('caps token length and token count', () => {
    assert.deepEqual(tokenize('x'.repeat(100)), ['x'.repeat(MAX_TOKEN_LENGTH)]);
    assert.deepEqual(tokenize('A' + 'b'.repeat(300)), ['a' + 'b'.repeat(MAX_TOKEN_LENGTH - 1)]);
    assert.deepEqual(tokenize('one two three four', 2), ['one', 'two']);
    assert.deepEqual(tokenize('fooBarBaz qux', 2), ['foobarbaz', 'foo']);
    assert.equal(tokenize('word '.repeat(100_000)).length, 50_000);
  });
});

describe('SearchIndex ranking', () => {
  it('ranks a chunk with the rare query term above chunks with only common terms', () => {
    const idx = new SearchIndex();
    const chunks = Array.from({ length: 20 }, (_, i) => chunk(`payment payment payment card ${filler(5, String(i))}`));
    chunks.push(chunk(`refund payment ${filler(6, 'r')}`));
    idx.addSource('s', chunks);
    const hits = idx.search('payment refund', 5);
    assert.equal(hits[0].chunkIndex, 20);
    assert.ok(hits[0].score > hits[1].score);
  });

  it('saturates term frequency', () => {
    const idx = new SearchIndex();
    const tfs = [1, 2, 4, 8];
    idx.addSource('s', tfs.map((tf) => chunk(`${'refund '.repeat(tf)}${filler(10 - tf, String(tf))}`)));
    idx.addSource('other', [chunk(filler(10, 'o')), chunk(filler(10, 'p'))]);
    const hits = idx.search('refund', 10);
    const score = new Map(hits.map((h) => [tfs[h.chunkIndex], h.score]));
    const [s1, s2, s4, s8] = tfs.map((tf) => score.get(tf)!);
    assert.ok(s1 < s2 && s2 < s4 && s4 < s8);
    assert.ok(s2 - s1 > (s4 - s2) / 2 && (s4 - s2) / 2 > (s8 - s4) / 4, 'marginal gain decreases');
    const idf = Math.log(1 + (6 - 4 + 0.5) / (4 + 0.5));
    assert.ok(s8 < idf * 2.2, 'bounded by idf·(k1+1)');
  });

  it('prefers the shorter chunk at equal tf', () => {
    const idx = new SearchIndex();
    idx.addSource('s', [chunk(`refund ${filler(50, 'l')}`), chunk(`refund ${filler(5, 's')}`), chunk(filler(20, 'n'))]);
    const hits = idx.search('refund', 10);
    assert.deepEqual(hits.map((h) => h.chunkIndex), [1, 0]);
  });

  it('computes the exact BM25 score of a hand-computed corpus (title tokens ×2)', () => {
    const idx = new SearchIndex();
    // a/0: title "Refunds" → refund×2; body → refund, payment: tf(refund)=3, tf(payment)=1, len=4.
    // a/1: payment, intent, created: len=3.   b/0: cancel, payment×2: len=3.
    idx.addSource('a', [chunk('refund the payment', 'doc1', 'Refunds'), chunk('payment intent created', 'doc2')]);
    idx.addSource('b', [chunk('cancel payment payment', 'doc3')]);
    assert.deepEqual(idx.stats(), { sources: 2, chunks: 3, terms: 5 });
    assert.equal(idx.averageChunkLength(), 10 / 3);
    const hits = idx.search('Refund payments', 10);
    assert.deepEqual(hits.map((h) => [h.sourceId, h.chunkIndex, h.documentId, h.title]), [
      ['a', 0, 'doc1', 'Refunds'], ['b', 0, 'doc3', null], ['a', 1, 'doc2', null],
    ]);
    assert.equal(hits[0].text, 'refund the payment');
    // N=3, avgLen=10/3; idf(refund)=ln(1+2.5/1.5)=ln(8/3), idf(payment)=ln(1+0.5/3.5)=ln(8/7).
    const norm = (len: number): number => 1.2 * (1 - 0.75 + (0.75 * len) / (10 / 3));
    const expected = [
      (Math.log(8 / 3) * 3 * 2.2) / (3 + norm(4)) + (Math.log(8 / 7) * 1 * 2.2) / (1 + norm(4)),
      (Math.log(8 / 7) * 2 * 2.2) / (2 + norm(3)),
      (Math.log(8 / 7) * 1 * 2.2) / (1 + norm(3)),
    ];
    const literal = [1.6013942678368156, 0.18891901207327955, 0.13922704444263018];
    hits.forEach((h, i) => {
      assert.ok(Math.abs(h.score - expected[i]) < 1e-9, `${h.score} vs ${expected[i]}`);
      assert.ok(Math.abs(h.score - literal[i]) < 1e-9, `${h.score} vs ${literal[i]}`);
    });
  });

  it('orders ties by sourceId then chunkIndex', () => {
    const idx = new SearchIndex();
    idx.addSource('b', [chunk('refund policy'), chunk('refund policy')]);
    idx.addSource('a', [chunk('other words'), chunk('refund policy')]);
    assert.deepEqual(idx.search('refund', 10).map((h) => `${h.sourceId}/${h.chunkIndex}`), ['a/1', 'b/0', 'b/1']);
    assert.deepEqual(idx.search('refund', 2).map((h) => `${h.sourceId}/${h.chunkIndex}`), ['a/1', 'b/0']);
  });

  it('returns nothing for unknown, empty or stop-word-only queries, and respects limit', () => {
    const idx = new SearchIndex();
    assert.deepEqual(idx.search('refund', 10), []);
    idx.addSource('s', Array.from({ length: 7 }, (_, i) => chunk(`refund number ${'again '.repeat(i)}`)));
    assert.deepEqual(idx.search('nonexistentword', 10), []);
    assert.deepEqual(idx.search('', 10), []);
    assert.deepEqual(idx.search('  ?! ', 10), []);
    assert.deepEqual(idx.search('the of and', 10), []);
    assert.deepEqual(idx.search('refund', 0), []);
    assert.deepEqual(idx.search('refund', -3), []);
    assert.equal(idx.search('refund', 3).length, 3);
    assert.equal(idx.search('refund', 2.9).length, 2);
    assert.equal(idx.search('refund', 100).length, 7);
    assert.deepEqual(idx.search('refund', 3).map((h) => h.chunkIndex), [0, 1, 2]);
  });

  it('replaces and removes sources', () => {
    const idx = new SearchIndex();
    idx.addSource('s', [chunk('alpha beta'), chunk('beta gamma')]);
    idx.addSource('t', [chunk('beta delta')]);
    assert.equal(idx.documentFrequency('beta'), 3);
    idx.addSource('s', [chunk('epsilon')]);
    assert.deepEqual(idx.search('alpha', 5), []);
    assert.equal(idx.search('epsilon', 5)[0].sourceId, 's');
    assert.equal(idx.documentFrequency('beta'), 1);
    assert.deepEqual(idx.stats(), { sources: 2, chunks: 2, terms: 3 });
    idx.removeSource('nope');
    idx.removeSource('t');
    idx.removeSource('s');
    assert.deepEqual(idx.stats(), { sources: 0, chunks: 0, terms: 0 });
    assert.equal(idx.averageChunkLength(), 0);
    idx.addSource('empty', []);
    assert.deepEqual(idx.stats(), { sources: 1, chunks: 0, terms: 0 });
    assert.deepEqual(idx.search('epsilon', 5), []);
  });

  it('keeps global statistics exact over random add/replace/remove sequences (seeded)', () => {
    const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu'.split(' ');
    const queries = ['alpha', 'bravo charlie', 'zulu yankee xray mike', 'delta delta echo', 'unknown golf'];
    const rand = rng(20240611);
    const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
    const model = new Map<string, SearchChunk[]>();
    const live = new SearchIndex();
    for (let op = 0; op < 400; op++) {
      const id = `s${Math.floor(rand() * 8)}`;
      if (rand() < 0.6) {
        const chunks = Array.from({ length: Math.floor(rand() * 7) }, (_, i) =>
          chunk(Array.from({ length: Math.floor(rand() * 13) }, () => pick(words)).join(' '), `doc${i % 3}`,
            rand() < 0.4 ? `${pick(words)} ${pick(words)}` : null));
        model.set(id, chunks);
        live.addSource(id, chunks);
      } else {
        model.delete(id);
        live.removeSource(id);
      }
      const fresh = new SearchIndex();
      for (const [sid, chunks] of [...model].reverse()) fresh.addSource(sid, chunks);
      assert.deepEqual(live.stats(), fresh.stats(), `op ${op}`);
      assert.equal(live.averageChunkLength(), fresh.averageChunkLength());
      for (const w of words) assert.equal(live.documentFrequency(w), fresh.documentFrequency(w), `df(${w}) at op ${op}`);
      for (const q of queries) assert.deepEqual(live.search(q, 5), fresh.search(q, 5), `query ${q} at op ${op}`);
    }
    assert.ok(live.stats().sources > 0);
  });
});

describe('SearchIndex performance smoke', () => {
  it('indexes 20,000 chunks of ~1,500 chars and answers queries', (t) => {
    const rand = rng(7);
    const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vo', 'shi', 'pe', 'da', 'zu', 'fa', 'gre', 'bo', 'tri', 'xu'];
    const vocab = Array.from({ length: 20_000 }, () => {
      let w = '';
      for (let n = 2 + Math.floor(rand() * 3); n > 0; n--) w += syll[Math.floor(rand() * syll.length)];
      return w;
    });
    const ident = (): string => vocab[Math.floor(rand() * 200)] + 'Id';
    const makeText = (): string => {
      const parts: string[] = [];
      let len = 0;
      while (len < 1500) {
        const r = rand();
        const w = r < 0.05 ? ident() : r < 0.15 ? 'the' : vocab[Math.floor(vocab.length * rand() ** 3)];
        parts.push(w);
        len += w.length + 1;
      }
      return parts.join(' ');
    };
    const t0 = performance.now();
    const sources: Array<[string, SearchChunk[]]> = [];
    for (let s = 0; s < 40; s++) {
      const chunks: SearchChunk[] = [];
      for (let c = 0; c < 500; c++) chunks.push(chunk(makeText(), `doc${Math.floor(c / 5)}`, `Section ${c % 50}`));
      sources.push([`src-${String(s).padStart(2, '0')}`, chunks]);
    }
    sources[17][1][250].text += ' quokkaRefundPolicy and the quokka refund policies';
    sources[3][1][10].text += ' quokka';
    const chars = sources.reduce((n, [, cs]) => n + cs.reduce((m, c) => m + c.text.length, 0), 0);
    const t1 = performance.now();
    const idx = new SearchIndex();
    for (const [id, chunks] of sources) idx.addSource(id, chunks);
    const t2 = performance.now();
    const st = idx.stats();
    assert.equal(st.chunks, 20_000);
    assert.equal(st.sources, 40);
    const hits = idx.search('Quokka refund policy', 5);
    assert.equal(`${hits[0].sourceId}/${hits[0].chunkIndex}`, 'src-17/250');
    assert.equal(hits[1].sourceId, 'src-03');
    assert.equal(hits[1].chunkIndex, 10);
    const queries = Array.from({ length: 50 }, (_, i) => `${vocab[i]} ${vocab[i * 37 + 5]} ${ident()}`);
    const t3 = performance.now();
    let total = 0;
    for (const q of queries) total += idx.search(q, 10).length;
    const t4 = performance.now();
    assert.ok(total > 0);
    // Re-indexing one source (a rescan) and removing it.
    const [rid, rchunks] = sources[5];
    const t5 = performance.now();
    idx.addSource(rid, rchunks);
    const t6 = performance.now();
    idx.removeSource(rid);
    const t7 = performance.now();
    assert.equal(idx.stats().chunks, 19_500);
    const mb = (process.memoryUsage().heapUsed / 2 ** 20).toFixed(0);
    t.diagnostic(`generated ${(chars / 1e6).toFixed(1)}M chars in ${(t1 - t0).toFixed(0)} ms; ` +
      `indexed ${st.chunks} chunks (${st.terms} terms) in ${(t2 - t1).toFixed(0)} ms; ` +
      `${queries.length} queries in ${(t4 - t3).toFixed(1)} ms (${((t4 - t3) / queries.length).toFixed(2)} ms each); ` +
      `re-add one source (500 chunks) ${(t6 - t5).toFixed(0)} ms, remove ${(t7 - t6).toFixed(1)} ms; heapUsed ${mb} MB`);
  });
});
