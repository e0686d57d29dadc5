/**
 * Public docs of the largest corpus document (docs/web.md#docs-page-cache): ingests
 * test/fixtures/corpus/openapi/adyen-management-v3.json, renders its pages through the docs cache
 * (the render worker, as the server does, once started) while the event loop's longest block is measured, then
 * times the page served from the cache (p50/p99 ms). Targets: block ≤ 50 ms, cached page ≤ 20 ms.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { analyzeJob } from '../src/ingest/analyze.js';
import { DocsCache } from '../src/web/docsCache.js';
import { renderDocs } from '../src/web/docsRender.js';
import { docsPagesHtml } from '../src/web/docsPage.js';

const FILE = new URL('../test/fixtures/corpus/openapi/adyen-management-v3.json', import.meta.url);

/** What {@link corpusFigures} measured (ms, bytes). */
export interface CorpusFigures {
  endpoints: number; pages: number; bytes: number; firstMs: number; blockMs: number; p50: number; p99: number;
  serves: number;
}

/** Prints and returns the figures; `serves`: how many cached serves are timed. */
export async function corpusFigures(serves: number): Promise<CorpusFigures> {
  const text = readFileSync(FILE, 'utf8');
  const { record } = analyzeJob({ op: 'text', type: 'auto', text });
  const src = { id: 'adyen', name: 'Adyen Management API', publicDocs: { slug: 'adyen' } };
  const cache = new DocsCache((s, idx) => renderDocs(s, idx, docsPagesHtml));
  // The render worker is started once per process (its start is not the render's cost): a first,
  // unmeasured render of a copy of the record starts it.
  await new DocsCache((s, idx) => renderDocs(s, idx, docsPagesHtml)).rendered('warm', src, { ...record });
  const h = monitorEventLoopDelay({ resolution: 1 });
  // A timer keeps the loop turning, so a block shows as its delay.
  const tick = setInterval(() => undefined, 1);
  h.enable();
  const t0 = performance.now();
  const rendered = await cache.rendered('adyen', src, record);
  const first = performance.now() - t0;
  h.disable();
  clearInterval(tick);
  const bytes = rendered.pages.reduce((n, p) => n + p.body.length, 0);
  const times: number[] = [];
  for (let i = 0; i < serves; i++) {
    const t = performance.now();
    const r = await cache.rendered('adyen', src, record);
    const page = r.pages[i % r.pages.length];
    if (!page.body.length) throw new Error('empty page');
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const at = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
  const q = (p: number) => at(p).toFixed(3);
  console.log(`public docs, ${record.endpoints.length} endpoints (adyen-management-v3.json): first render ` +
    `${first.toFixed(0)} ms wall, ${rendered.pages.length} pages, ${(bytes / 1024).toFixed(0)} KiB; longest event-loop ` +
    `block ${(h.max / 1e6).toFixed(1)} ms (target ≤ 50 ms); from the cache p50 ${q(0.5)} ms, p99 ${q(0.99)} ms over ` +
    `${serves} serves (target ≤ 20 ms)`);
  return { endpoints: record.endpoints.length, pages: rendered.pages.length, bytes, firstMs: first, blockMs: h.max / 1e6,
    p50: at(0.5), p99: at(0.99), serves };
}
