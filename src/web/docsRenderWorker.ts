/**
 * The docs render worker's entry (src/web/docsRender.ts): gathers a source's ingestion output
 * from the slices it is sent, renders every docs page (src/web/docsPage.ts), and answers their
 * UTF-8 bytes (transferred, not copied), their ETags and the links table.
 */
import { parentPort } from 'node:worker_threads';
import { docsPagesHtml } from './docsPage.js';
import { etagOf, linksText, type RenderReply, type RenderTask } from './docsRender.js';
import type { SourceIndexRec } from '../ingest/types.js';
import type { CachedSource } from './docsCache.js';

const encoder = new TextEncoder();
const gathering = new Map<number, { src: CachedSource; idx: SourceIndexRec }>();

parentPort?.on('message', (t: RenderTask) => {
  if (t.kind === 'begin') {
    gathering.set(t.id, { src: t.src, idx: { documents: [], endpoints: [], chunks: [] } });
    return;
  }
  const job = gathering.get(t.id);
  if (!job) return;
  if (t.kind === 'part') {
    const into: unknown[] = job.idx[t.field];
    for (const item of JSON.parse(t.json) as unknown[]) into.push(item);
    return;
  }
  gathering.delete(t.id);
  try {
    const { pages, links } = docsPagesHtml(job.src, job.idx);
    const bytes = pages.map((p) => encoder.encode(p.text));
    const reply: RenderReply = { id: t.id, ok: true, pages: bytes, etags: bytes.map(etagOf), links: linksText(links) };
    parentPort!.postMessage(reply, bytes.map((b) => b.buffer as ArrayBuffer));
  } catch (e) {
    parentPort!.postMessage({ id: t.id, ok: false, message: (e as Error)?.stack ?? String(e) } satisfies RenderReply);
  }
});
