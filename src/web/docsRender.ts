/**
 * Rendering a source's docs pages into the buffers the cache keeps (docs/web.md#docs-page-cache):
 * a small source on the spot, a large one on a worker thread fed in slices of a few
 * milliseconds, so a first render never holds the event loop (docs/security.md#public-docs).
 */
import { createHash } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../core/workerThread.js';
import type { Html } from './html.js';
import type { SourceIndexRec } from '../ingest/types.js';
import type { CachedSource } from './docsCache.js';

/** Where a document's section is. */
export interface DocLink { anchor: string; page: number }

/** Document id → where its section is (a Map, or the worker's table read on first use). */
export interface LinkTable { get(documentId: string): DocLink | undefined }

/** Every page of one source version, encoded once, and where each document's section is. */
export interface Rendered {
  pages: Array<{ body: Buffer; etag: string }>;
  /** The links table, read (from the worker's text, in slices) when a search first needs it. */
  links(): Promise<LinkTable>;
  /** What keeping it costs: the pages' bytes and an estimate of the links table. */
  bytes: number;
}

/** The pure renderer (src/web/docsPage.ts `docsPagesHtml`). */
export type PagesOf = (src: CachedSource, idx: SourceIndexRec | undefined) =>
  { pages: Html[]; links: ReadonlyMap<string, DocLink> };

/** Up to this many records (documents + endpoints + chunks) and characters, a source renders on the spot (a few ms). */
export const INLINE_RECORDS = 200;
export const INLINE_CHARS = 64 * 1024;
/** Records per message to the worker (as JSON), and the main thread's longest run of posting before it yields (ms). */
const BATCH = 500;
const SLICE_MS = 5;
/** An idle render worker is stopped after this long (ms), so a server that renders once holds no thread. */
const IDLE_MS = 30_000;

/** Messages to the worker (src/web/docsRenderWorker.ts). */
export type RenderTask =
  | { id: number; kind: 'begin'; src: CachedSource }
  | { id: number; kind: 'part'; field: 'documents' | 'endpoints' | 'chunks'; json: string }
  | { id: number; kind: 'end' };
/**
 * The worker's answer: the pages' UTF-8 (their buffers transferred) with ETags, and the links
 * as `id\tanchor\tpage` lines.
 */
export type RenderReply =
  | { id: number; ok: true; pages: Uint8Array[]; etags: string[]; links: string }
  | { id: number; ok: false; message: string };

/** A strong ETag of a page's bytes. */
export const etagOf = (body: Uint8Array): string =>
  `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;

/** The links table as lines (what the worker sends: one string is cheap to post). */
export function linksText(links: ReadonlyMap<string, DocLink>): string {
  let out = '';
  for (const [id, l] of links) out += `${id}\t${l.anchor}\t${l.page}\n`;
  return out;
}

/** The table of {@link linksText}, read in turns of the event loop of at most {@link SLICE_MS} each. */
function linksFromText(text: string): Promise<Map<string, DocLink>> {
  const links = new Map<string, DocLink>();
  let at = 0;
  return new Promise((resolve) => {
    const step = () => {
      const until = performance.now() + SLICE_MS;
      for (let n = 0; at < text.length; n++) {
        const end = text.indexOf('\n', at);
        const tab = text.indexOf('\t', at);
        const tab2 = text.indexOf('\t', tab + 1);
        links.set(text.slice(at, tab), { anchor: text.slice(tab + 1, tab2), page: Number(text.slice(tab2 + 1, end)) });
        at = end + 1;
        if (n % 256 === 255 && performance.now() > until) { setImmediate(step); return; }
      }
      resolve(links);
    };
    step();
  });
}

const mapBytes = (links: ReadonlyMap<string, DocLink>): number => {
  let n = 0;
  for (const [id, l] of links) n += 2 * (id.length + l.anchor.length) + 64;
  return n;
};

/** Whether `idx` is small enough to render on the main thread. */
function small(idx: SourceIndexRec | undefined): boolean {
  if (!idx) return true;
  if (idx.documents.length + idx.endpoints.length + idx.chunks.length > INLINE_RECORDS) return false;
  let chars = 0;
  for (const c of idx.chunks) chars += c.t.length;
  return chars <= INLINE_CHARS;
}

interface Job { resolve: (r: Rendered) => void; reject: (e: Error) => void }

/** One worker thread for every server of the process, started on demand, jobs in arrival order. */
class RenderWorker {
  private worker: Worker | null = null;
  private readonly jobs = new Map<number, Job>();
  private nextId = 1;
  private idle: NodeJS.Timeout | null = null;

  async render(src: CachedSource, idx: SourceIndexRec): Promise<Rendered> {
    const id = this.nextId++;
    const done = new Promise<Rendered>((resolve, reject) => this.jobs.set(id, { resolve, reject }));
    if (this.idle) { clearTimeout(this.idle); this.idle = null; }
    const w = (this.worker ??= this.spawn());
    const post = (t: RenderTask) => w.postMessage(t);
    post({ id, kind: 'begin', src: { id: src.id, name: src.name, publicDocs: { slug: src.publicDocs.slug } } });
    let since = performance.now();
    for (const field of ['documents', 'endpoints', 'chunks'] as const) {
      const list: unknown[] = idx[field];
      for (let i = 0; i < list.length; i += BATCH) {
        if (this.worker !== w) return done;
        // As JSON text: several times cheaper for the main thread than cloning the objects.
        post({ id, kind: 'part', field, json: JSON.stringify(list.slice(i, i + BATCH)) });
        if (performance.now() - since > SLICE_MS) {
          await new Promise((r) => setImmediate(r));
          since = performance.now();
        }
      }
    }
    if (this.worker === w) post({ id, kind: 'end' });
    return done;
  }

  private spawn(): Worker {
    const w = startWorker(import.meta.url, 'docsRenderWorker');
    w.on('message', (m: RenderReply) => {
      const job = this.jobs.get(m.id);
      if (!job) return;
      this.jobs.delete(m.id);
      if (this.jobs.size === 0) this.idle = setTimeout(() => this.stop(), IDLE_MS).unref();
      if (!m.ok) { job.reject(new Error(m.message)); return; }
      const pages = m.pages.map((u, i) => ({
        body: Buffer.from(u.buffer, u.byteOffset, u.byteLength), etag: m.etags[i],
      }));
      let bytes = 2 * m.links.length;
      for (const p of pages) bytes += p.body.length;
      // The table is read when a search first needs it, not on arrival.
      let links: Promise<LinkTable> | undefined;
      job.resolve({ pages, links: () => (links ??= linksFromText(m.links)), bytes });
    });
    const died = (err: Error) => {
      if (this.worker !== w) return;
      this.worker = null;
      void w.terminate();
      for (const j of this.jobs.values()) j.reject(err);
      this.jobs.clear();
    };
    w.on('error', died);
    w.on('exit', (code) => died(new Error(`the docs render worker exited with code ${code}`)));
    return w;
  }

  private stop(): void {
    this.idle = null;
    const w = this.worker;
    if (!w || this.jobs.size) return;
    this.worker = null;
    void w.terminate();
  }
}

const worker = new RenderWorker();

/**
 * Every page of `src` at `idx`, encoded, with ETags: on the spot when small ({@link INLINE_RECORDS},
 * {@link INLINE_CHARS}), else on the render worker. O(size of the ingestion output).
 * @throws Error when the worker failed or died (the caller answers 500; the next render starts a new one)
 */
export async function renderDocs(src: CachedSource, idx: SourceIndexRec | undefined,
  pagesOf: PagesOf): Promise<Rendered> {
  if (idx && !small(idx)) return worker.render(src, idx);
  const { pages, links } = pagesOf(src, idx);
  const encoded = pages.map((p) => { const body = Buffer.from(p.text); return { body, etag: etagOf(body) }; });
  const table = Promise.resolve(links);
  const bytes = encoded.reduce((n, p) => n + p.body.length, 0) + mapBytes(links);
  return { pages: encoded, links: () => table, bytes };
}
