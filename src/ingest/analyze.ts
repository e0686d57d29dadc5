/**
 * The CPU-bound part of ingestion, pure and thread-agnostic: decode, detect and parse content, check the per-source
 * caps, chunk, give documents and endpoints ids and lay out the index record and its postings. An {@link Analyzer}
 * runs it inline or on worker threads (workers/pool.ts): the main thread only fetches bytes and stores the result
 * (docs/reliability.md#ingestion-and-search).
 */
import { IngestError, MAX_CHUNKS, MAX_DOCUMENTS, MAX_ENDPOINTS, count, enforceCap, type ParsedDocument,
  type ParsedSource, type SourceIndexRec } from './types.js';
import { classifyValue, detectContent, detectedAs, parseStructured, type Detected } from './detect/detect.js';
import { contentKind, type ContentType } from './kinds.js';
import { extractLinks, parseHtml } from './parsers/html.js';
import { chunkDocuments } from './chunk.js';
import { prepareSource, type SourceEntry } from '../search/bm25.js';
import { newId } from '../core/ids.js';

export { MAX_CHUNKS, MAX_DOCUMENTS, MAX_ENDPOINTS } from './types.js';
/** Most links a crawled page hands back to the crawl (a page of a million links stays cheap). */
const MAX_LINKS_PER_PAGE = 10_000;

/** Raw bytes as fetched, with the response's Content-Type header (for its charset). */
export interface FetchedBody { body: Uint8Array; contentType?: string }

/** One ingestion job: everything runs where the {@link Analyzer} runs it. */
export type AnalysisJob =
  /** Pasted text, or a fetched document's bytes (`mediaType` = its lower-cased media type). With `asPages`, text
   * documents become `page`s. */
  | { op: 'text'; type: ContentType | 'auto'; text: string | FetchedBody; mediaType?: string; asPages?: boolean }
  /** Crawled HTML pages, in crawl order: one `text` analysis of all their `page` documents. */
  | { op: 'site'; pages: Array<{ url: string } & FetchedBody> }
  /** Documents taken as they are (GitHub files). */
  | { op: 'documents'; title?: string; documents: ParsedDocument[] };

/** A crawled page whose links of `origin` the crawl wants, resolved against `baseUrl` (or its `<base href>`). */
export interface LinksJob extends FetchedBody { baseUrl: string; origin: string }

/** A link of a crawled page: its URL without fragment, and whether its extension says it is not HTML. */
export interface PageLink { url: string; nonHtml: boolean }

/**
 * The finished ingestion: the content's own `title` (default source name), the record to store, its postings, and
 * `JSON.stringify(record)` as UTF-8 when made off the main thread (the log line takes it as it is).
 */
export interface IngestResult {
  type: ContentType; title?: string; record: SourceIndexRec; recordJson?: Uint8Array; prepared: SourceEntry;
}

/** Runs jobs; `queue` names the workspace (jobs of different queues are served round-robin). */
export interface Analyzer {
  /** @throws IngestError saying why the content cannot be ingested (the source's `error`). */
  analyze(job: AnalysisJob, queue: string): Promise<IngestResult>;
  /** Same-origin links of a crawled page, in document order, at most {@link MAX_LINKS_PER_PAGE}. */
  links(job: LinksJob, queue: string): Promise<PageLink[]>;
  close(): Promise<void>;
}

/**
 * The stored record of parsed content: caps checked first (before any chunk or id is made), then chunks, UUIDv7 ids and
 * postings.
 * @throws IngestError when there is no document or a cap is exceeded.
 */
function buildResult(type: ContentType, parsed: ParsedSource): IngestResult {
  const docs = parsed.documents;
  if (docs.length === 0) throw new IngestError('no documents could be extracted from the content');
  enforceCap(docs.length, MAX_DOCUMENTS, 'documents');
  enforceCap(parsed.endpoints.length, MAX_ENDPOINTS, 'endpoints');
  const chunks = chunkDocuments(docs);
  enforceCap(chunks.length, MAX_CHUNKS, 'chunks');
  const documents = docs.map((d) => ({ id: newId(), kind: d.kind || null, title: d.title || null }));
  const endpoints = parsed.endpoints.map((e) => ({
    id: newId(), method: e.method || null, path: e.path || null,
    documentId: e.documentIndex === undefined ? undefined : documents[e.documentIndex]?.id,
  }));
  const prepared = prepareSource(chunks.map((c) => ({ documentId: documents[c.documentIndex].id, title: documents[
    c.documentIndex].title, text: c.text })));
  const record: SourceIndexRec = {
    documents, endpoints,
    // The chunk texts are the postings' own strings: one copy in memory.
    chunks: chunks.map((c, i) => ({ d: c.documentIndex, t: prepared.texts[i] })),
    ...(parsed.serverUrl ? { serverUrl: parsed.serverUrl } : {}),
  };
  return { type, ...(parsed.title !== undefined ? { title: parsed.title } : {}), record, prepared };
}

/** Decodes fetched bytes with the charset of their Content-Type (UTF-8 when absent or unknown). */
function decodeText(b: FetchedBody): string {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(b.contentType ?? '');
  if (m) {
    try { return new TextDecoder(m[1]).decode(b.body); } catch { /* unknown label: UTF-8 */ }
  }
  return new TextDecoder('utf-8').decode(b.body);
}

/**
 * Runs one job to its result on the calling thread (the worker's whole job). `onDetected` hears a `text` job's type
 * before its content is parsed (the worker reports it, so a job stopped later still fails with that type).
 * @throws IngestError for content that cannot be ingested, its `sourceType` set when the failure came after detection.
 */
export function analyzeJob(job: AnalysisJob, onDetected?: (type: ContentType) => void): IngestResult {
  switch (job.op) {
    case 'text': {
      const text = typeof job.text === 'string' ? job.text : decodeText(job.text);
      let type: ContentType | undefined;
      try {
        const r = parseContent(job.type, text, job.mediaType, (t) => { type = t; onDetected?.(t); });
        if (!job.asPages || r.type !== 'text') return buildResult(r.type, r.parsed);
        return buildResult(r.type, { ...r.parsed, documents: r.parsed.documents.map((d) => ({ ...d, kind: 'page' })) });
      } catch (e) {
        throw detectedAs(e, type);
      }
    }
    case 'site': {
      let title: string | undefined;
      const documents: ParsedDocument[] = [];
      for (let i = 0; i < job.pages.length; i++) {
        const parsed = parseHtml(decodeText(job.pages[i]), MAX_DOCUMENTS);
        title ??= parsed.title ?? job.pages[i].url;
        for (const d of parsed.documents) documents.push(d);
        // Stop at the page that crosses the cap: the pages after it are not parsed at all.
        if (documents.length > MAX_DOCUMENTS) throw new IngestError(
          `the site has ${count(documents.length)} documents in its first ${count(i + 1)} pages; at most ` +
            `${count(MAX_DOCUMENTS)} are ingested per source`);
      }
      return buildResult('text', { title, documents, endpoints: [] });
    }
    case 'documents':
      return buildResult('text', { title: job.title, documents: job.documents, endpoints: [] });
  }
}

/** The same-origin links of a crawled page (fragment removed, de-duplicated, in order, capped). */
export function pageLinks(job: LinksJob): PageLink[] {
  const out: PageLink[] = [];
  for (const link of extractLinks(decodeText(job), job.baseUrl)) {
    const u = new URL(link);
    if (u.origin !== job.origin) continue;
    const ext = /\.([a-z0-9]{1,5})$/i.exec(u.pathname);
    out.push({ url: u.href, nonHtml: ext !== null && NON_HTML_EXTENSIONS.has(ext[1].toLowerCase()) });
    if (out.length >= MAX_LINKS_PER_PAGE) break;
  }
  return out;
}

/** Links with these extensions are not fetched by the crawl: they are not HTML pages. */
const NON_HTML_EXTENSIONS = new Set([
  'pdf', 'zip', 'gz', 'tgz', 'tar', 'bz2', 'xz', '7z', 'rar', 'exe', 'dmg', 'msi', 'deb', 'rpm', 'apk',
  'png', 'jpg', 'jpeg', 'gif', 'webp', 'svg', 'ico', 'bmp', 'tif', 'tiff', 'avif',
  'mp3', 'mp4', 'm4a', 'wav', 'ogg', 'webm', 'mov', 'avi',
  'css', 'js', 'mjs', 'map', 'woff', 'woff2', 'ttf', 'otf', 'eot', 'wasm',
  'doc', 'docx', 'xls', 'xlsx', 'ppt', 'pptx', 'csv',
]);

/** An {@link Analyzer} on the calling thread (unit tests, the CLI): no queues, no timeout. */
export const inlineAnalyzer: Analyzer = {
  analyze: async (job) => analyzeJob(job),
  links: async (job) => pageLinks(job),
  close: async () => {},
};

/**
 * Parses `text` as `type` (or detects it for `auto`), with the parser of its kind; `onDetected` hears the type before
 * the content is parsed as it.
 * @throws IngestError saying why the content cannot be ingested, with line and column where known.
 */
export function parseContent(type: ContentType | 'auto', text: string, mediaType?: string,
  onDetected?: (type: ContentType) => void): { type: ContentType; parsed: ParsedSource } {
  if (text.trim() === '') throw new IngestError('the content is empty');
  const detected = type === 'auto' ? detectContent(text, mediaType) : readAs(type, text);
  onDetected?.(detected.type);
  const parsed = contentKind(detected.type).parse({ text, value: detected.value, html: detected.html, mediaType });
  return { type: detected.type, parsed };
}

/**
 * Content given with an explicit type, read as its kind says (docs/sources.md#explicit-types).
 * @throws IngestError when structured content does not parse, or does not classify as `type` where the kind requires it
 *   (saying what it looks like instead).
 */
function readAs(type: ContentType, text: string): Detected {
  const kind = contentKind(type);
  switch (kind.explicit) {
    case 'classified': {
      const value = parseStructured(text);
      const found = classifyValue(value);
      if (found !== type) throw new IngestError(
        `the content is not ${kind.label} (it looks like ${found === 'json' ? 'plain JSON/YAML data' : found})`);
      return { type, value };
    }
    case 'value': return { type, value: parseStructured(text) };
    case 'value-if-object': return { type, value: text.trimStart()[0] === '{' ? parseStructured(text) : undefined };
    case undefined: return { type };
  }
}
