/**
 * `npm run bench -- --only docs` (docs/web.md#public-docs): first bench/public-docs-corpus.ts, then a synthetic
 * 1,000-endpoint OpenAPI source (10 tags, an operation document of ~600 characters each, 200 schemas) whose pages,
 * as the server paginates them (`docsPagesHtml`), are timed in CPU time (user + system): the median render and the
 * largest page. Targets: render under 200 ms, every page under 1 MB. Sends its rows to bench/run.ts when forked;
 * on its own: `node --import tsx bench/public-docs.ts [--endpoints N] [--runs N] [--serves N]`.
 */
import { docsPagesHtml } from '../src/web/docsPage.js';
import { corpusFigures } from './public-docs-corpus.js';
import { DEFAULT_AUTH, type Source } from '../src/areas/sources/model.js';
import type { SourceIndexRec } from '../src/ingest/types.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

// First, in a fresh heap (the synthetic renders' garbage would be collected during its measurement):
// the largest OpenAPI document of the corpus, ingested as the server would, rendered by the docs
// cache (on the render worker: it is large), then served from the cache.
const corpus = await corpusFigures(arg('serves', 2000));

const endpoints = arg('endpoints', 1000);
const runs = arg('runs', 20);
const idx: SourceIndexRec = { documents: [], endpoints: [], chunks: [] };
idx.documents.push({ id: 'overview', kind: 'overview', title: 'Synthetic API' });
idx.chunks.push({ d: 0, t: 'Synthetic API\nVersion: 1.0\nOpenAPI 3.0.3\n\nA generated API for timing the public docs page.' });
for (let i = 0; i < endpoints; i++) {
  const method = ['GET', 'POST', 'PATCH', 'DELETE'][i % 4];
  const path = `/resource${i % 50}/{id}/child${i}`;
  const d = idx.documents.push({ id: `op${i}`, kind: 'operation', title: `Operation number ${i}` }) - 1;
  idx.endpoints.push({ id: `e${i}`, method, path, documentId: `op${i}` });
  idx.chunks.push({ d, t: `${method} ${path}\nOperation number ${i}\nOperation ID: op${i}\nTags: Tag ${i % 10}\n\n${'Explains what this operation does, which fields it takes and what it answers. '.repeat(4)}\n\nParameters:\n- id (path, required): string\n\nResponses:\n- 200: OK\n- 404: Not found` });
}
for (let i = 0; i < 200; i++) {
  const d = idx.documents.push({ id: `schema${i}`, kind: 'schema', title: `Schema${i}` }) - 1;
  idx.chunks.push({ d, t: `Schema Schema${i}\n\nType: object\nProperties:\n- id: string (required)\n- name: string\n- createdAt: string (date-time)` });
}
const src: Source = {
  id: 'bench', name: 'Synthetic API', type: 'openapi', status: 'ready', inputUrl: null, error: null, auth: { ...DEFAULT_AUTH },
  publicDocs: { enabled: true, published: true, slug: 'synthetic', url: null }, createdAt: new Date(0).toISOString(), updatedAt: null,
};

const times: number[] = [];
let largest = 0;
let pages = 0;
for (let r = 0; r < runs; r++) {
  const before = process.cpuUsage();
  const rendered = docsPagesHtml(src, idx);
  const used = process.cpuUsage(before);
  times.push((used.user + used.system) / 1000);
  pages = rendered.pages.length;
  largest = Math.max(...rendered.pages.map((p) => Buffer.byteLength(p.text)));
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
console.log(`public docs, ${endpoints} endpoints: median ${median.toFixed(1)} ms CPU over ${runs} renders (worst `
  + `${times[times.length - 1].toFixed(1)} ms), ${pages} pages, the largest ${(largest / 1024).toFixed(0)} KiB `
  + '— target < 200 ms, < 1,024 KiB a page');

const ok = (met: boolean) => (met ? 'met' : 'not met');
const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
const rows = [
  { scenario: `largest corpus document (adyen-management-v3.json, ${corpus.endpoints} endpoints): first render on the `
      + 'render worker, longest event-loop block', figure: `${corpus.blockMs.toFixed(1)} ms (render ${corpus.firstMs
      .toFixed(0)} ms wall, ${corpus.pages} pages, ${kib(corpus.bytes)})`, target: '≤ 50 ms', status: ok(corpus.blockMs <= 50) },
  { scenario: `the same, served from the docs cache (p50 / p99 over ${corpus.serves})`,
    figure: `${corpus.p50.toFixed(3)} / ${corpus.p99.toFixed(3)} ms`, target: '≤ 20 ms', status: ok(corpus.p99 <= 20) },
  { scenario: `synthetic ${endpoints}-endpoint source: every page rendered (median CPU over ${runs})`,
    figure: `${median.toFixed(1)} ms`, target: '< 200 ms', status: ok(median < 200) },
  { scenario: `the same: its largest page (${pages} pages)`, figure: kib(largest), target: '< 1,024 KiB',
    status: ok(largest < 1024 * 1024) },
];
if (process.send) process.send({ rows, details: [] });
process.exit(0);
