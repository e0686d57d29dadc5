/**
 * The public docs page's rendering cost (docs/web.md#public-docs): builds the ingestion output
 * of a synthetic 1,000-endpoint OpenAPI source (10 tags, an operation document of ~600
 * characters each, 200 schemas) in this process and times `docsPageHtml` in CPU time
 * (`process.cpuUsage`, user + system), printing the median and the page's size. Target: under
 * 200 ms and under 1 MB; before it, bench/public-docs-corpus.ts. Run on its own:
 * `node --import tsx bench/public-docs.ts [--endpoints N] [--runs N] [--serves N]`.
 */
import { docsPageHtml } from '../src/web/docsPage.js';
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
await corpusFigures(arg('serves', 2000));

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
let bytes = 0;
for (let r = 0; r < runs; r++) {
  const before = process.cpuUsage();
  const page = docsPageHtml(src, idx);
  bytes = Buffer.byteLength(page.text);
  const used = process.cpuUsage(before);
  times.push((used.user + used.system) / 1000);
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
console.log(`public docs page, ${endpoints} endpoints: median ${median.toFixed(1)} ms CPU over ${runs} renders (worst ${times[times.length - 1].toFixed(1)} ms), ${(bytes / 1024).toFixed(0)} KiB — target < 200 ms, < 1,024 KiB`);

process.exit(0);
