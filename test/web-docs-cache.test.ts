/**
 * The docs page cache's own rules (docs/web.md#docs-page-cache), which HTTP cannot show: one
 * render per source version however many ask at once, a new render for a new ingestion output
 * or name, the bound on bytes (least recently used dropped, a single larger source kept alone),
 * forgetting an unpublished slug, and a failed render tried again by the next visit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DocsCache, type CachedSource } from '../src/web/docsCache.js';
import type { Rendered } from '../src/web/docsRender.js';
import type { SourceIndexRec } from '../src/ingest/types.js';

const idx = (): SourceIndexRec => ({ documents: [], endpoints: [], chunks: [] });
const src = (name = 'Docs', id = 's1'): CachedSource => ({ id, name, publicDocs: { slug: 'x' } });

/** A cache whose renders are counted and made of `bytes` bytes, resolved when the test says. */
function counting(maxBytes: number, bytes = 10) {
  const calls: string[] = [];
  let fail = false;
  const cache = new DocsCache(async (s): Promise<Rendered> => {
    calls.push(s.name);
    if (fail) throw new Error('render failed');
    const pages = [{ body: Buffer.alloc(bytes), etag: `"${calls.length}"` }];
    return { pages, links: () => Promise.resolve(new Map()), bytes };
  }, maxBytes);
  return { cache, calls, failNext: (f: boolean) => { fail = f; } };
}

test('concurrent visitors of one version share one render; a new ingestion output or name renders anew', async () => {
  const { cache, calls } = counting(1000);
  const i1 = idx();
  const all = await Promise.all(Array.from({ length: 40 }, () => cache.rendered('a', src(), i1)));
  assert.equal(calls.length, 1);
  assert.equal(new Set(all).size, 1, 'every visitor gets the same pages');
  assert.equal(await cache.rendered('a', src(), i1), all[0], 'a later visit is a hit');
  assert.equal(calls.length, 1);
  // A rescan replaces the record (an equal one is still another version); a rename too.
  await cache.rendered('a', src(), idx());
  assert.equal(calls.length, 2);
  const i3 = idx();
  await cache.rendered('a', src('Renamed'), i3);
  assert.deepEqual(calls, ['Docs', 'Docs', 'Renamed']);
  assert.equal(cache.size, 10, 'a slug keeps one version');
});

test('bounded by bytes: the least recently asked-for source goes first; one larger than the bound is kept alone',
  async () => {
  const { cache, calls } = counting(25);
  const [ia, ib, ic] = [idx(), idx(), idx()];
  await cache.rendered('a', src('A'), ia);
  await cache.rendered('b', src('B'), ib);
  await cache.rendered('a', src('A'), ia); // a is now the most recent
  await cache.rendered('c', src('C'), ic); // 30 bytes > 25: b goes
  assert.equal(cache.size, 20);
  await cache.rendered('a', src('A'), ia);
  await cache.rendered('c', src('C'), ic);
  assert.deepEqual(calls, ['A', 'B', 'C']);
  await cache.rendered('b', src('B'), ib);
  assert.deepEqual(calls, ['A', 'B', 'C', 'B']);

  const big = counting(25, 100);
  await big.cache.rendered('a', src('A'), ia);
  await big.cache.rendered('b', src('B'), ib);
  assert.equal(big.cache.size, 100, 'the larger source alone');
  await big.cache.rendered('b', src('B'), ib);
  assert.deepEqual(big.calls, ['A', 'B']);
});

test('an unpublished slug is forgotten; a failed render is tried again by the next visit', async () => {
  const { cache, calls, failNext } = counting(1000);
  const i1 = idx();
  await cache.rendered('a', src(), i1);
  cache.drop('a');
  assert.equal(cache.size, 0);
  await cache.rendered('a', src(), i1);
  assert.equal(calls.length, 2);
  failNext(true);
  const i2 = idx();
  await assert.rejects(cache.rendered('a', src(), i2), /render failed/);
  failNext(false);
  await cache.rendered('a', src(), i2);
  assert.equal(calls.length, 4);
});
