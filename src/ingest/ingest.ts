/**
 * Ingestion: turns a create-source request — pasted `content` or a `url`, with a `type` or `auto` — into the stored
 * type and the finished index record (documents, endpoints, chunks with their ids) and postings. Fetching goes through
 * the SSRF-safe fetcher on the calling thread; everything else is a job of the {@link Analyzer}.
 */
import { IngestError } from './types.js';
import { isContentType, isFetchedType, urlKind, type ContentType, type FetchedType, type SourceType } from './kinds.js';
import type { Analyzer, IngestResult } from './analyze.js';
import { fetchDocument, type FetchOptions } from './fetch/fetch.js';
import { crawlWebsite } from './fetch/crawl.js';
import { fetchGithubDocs } from './fetch/github.js';

export interface IngestRequest { type: SourceType | 'auto'; url?: string; content?: string }

/** `analyzer`: where all but fetching runs (worker threads in the server); `queue`: its queue, the workspace id. */
export interface IngestDeps {
  fetch: FetchOptions; crawlMaxPages: number; githubApiUrl: string; analyzer: Analyzer; queue: string;
}

/** An {@link IngestResult} with the stored type (the detected one for `auto`; `url`, `website`, `github`: fetched). */
export interface Ingested extends Omit<IngestResult, 'type'> { type: SourceType }

/** How each fetched kind gets its content: one fetcher per kind of the registry (src/ingest/kinds.ts). */
const FETCHERS: { readonly [K in FetchedType]: (url: string, deps: IngestDeps) => Promise<Ingested> } = {
  url: (url, deps) => fetchAndAnalyze(url, 'url', deps),
  website: async (url, deps) => {
    const { analyzer, queue } = deps;
    const site = await crawlWebsite(url, { ...deps.fetch, maxPages: deps.crawlMaxPages, maxDepth: 3, links: (job) =>
      analyzer.links(job, queue) });
    return { ...(await analyzer.analyze({ op: 'site', pages: site.pages }, queue)), type: 'website' };
  },
  github: async (url, deps) => {
    // The configured GitHub API is trusted (it may be a local mirror), for github sources only.
    const gh = await fetchGithubDocs(url, { ...deps.fetch, apiUrl: deps.githubApiUrl, trustedOrigins: [new URL(
      deps.githubApiUrl).origin] });
    return { ...(await deps.analyzer.analyze({ op: 'documents', title: gh.title, documents: gh.documents },
      deps.queue)), type: 'github' };
  },
};

/**
 * Runs a whole ingestion: fetch (url, website crawl, GitHub) or take the pasted content; the analyzer decodes, detects,
 * parses and lays out the record. The calling thread only fetches.
 * @throws IngestError or FetchError; their message becomes the source's `error`. An IngestError's `sourceType`, when
 *   set, is the type the failed source is stored with.
 */
export async function ingest(req: IngestRequest, deps: IngestDeps): Promise<Ingested> {
  const { analyzer, queue } = deps;
  if (req.content !== undefined) {
    if (isFetchedType(req.type)) throw new IngestError(
      `a ${req.type} source is fetched from its url; pasted content cannot be ingested as ${req.type}`);
    if (!isContentType(req.type) && req.type !== 'auto') throw new IngestError(
      `type ${req.type} cannot be ingested here`);
    return analyzer.analyze({ op: 'text', type: req.type, text: req.content }, queue);
  }
  const url = req.url!;
  // Under `auto`, a URL that a fetched kind claims (a GitHub repository) is that kind.
  const type = req.type === 'auto' ? urlKind(url) ?? 'auto' : req.type;
  if (isFetchedType(type)) return FETCHERS[type](url, deps);
  if (type !== 'auto' && !isContentType(type)) throw new IngestError(`type ${type} cannot be ingested here`);
  return fetchAndAnalyze(url, type, deps);
}

/**
 * Fetches one document and analyzes it as `want` (`url`: detected as under `auto`). A plain page stays a `url` source
 * (its documents `page`s); an API description found at a URL keeps its own type, and so does a failed one
 * (docs/sources.md#failed-sources) — except that with `url` the type stays `url`.
 */
async function fetchAndAnalyze(url: string, want: ContentType | 'auto' | 'url', deps: IngestDeps): Promise<Ingested> {
  const doc = await fetchDocument(url, deps.fetch);
  const stored = (found: SourceType): SourceType => (want === 'url' || found === 'text' ? 'url' : found);
  let r: IngestResult;
  try {
    r = await deps.analyzer.analyze({ op: 'text', type: want === 'url' ? 'auto' : want, text: { body: doc.body,
      contentType: doc.headers['content-type'] }, mediaType: doc.contentType, asPages: true }, deps.queue);
  } catch (e) {
    if (e instanceof IngestError && e.sourceType !== undefined) e.sourceType = stored(e.sourceType);
    throw e;
  }
  return { ...r, type: stored(r.type) };
}
