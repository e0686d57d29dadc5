/**
 * Ingestion: turns a create-source request — pasted `content` or a `url`, with a `type` or
 * `auto` — into the stored type and the finished index record (documents, endpoints, chunks
 * with their ids) and postings. Fetching goes through the SSRF-safe fetcher on the calling
 * thread; everything else is a job of the {@link Analyzer}.
 */
import { IngestError } from './types.js';
import type { ContentType, SourceType } from './detect.js';
import type { Analyzer, IngestResult } from './analyze.js';
import { fetchDocument, type FetchOptions } from './fetch.js';
import { crawlWebsite } from './crawl.js';
import { fetchGithubDocs } from './github.js';

export interface IngestRequest { type: SourceType | 'auto'; url?: string; content?: string }

export interface IngestDeps {
  fetch: FetchOptions;
  crawlMaxPages: number;
  githubApiUrl: string;
  /** Where decoding, parsing, chunking, ids and postings run (worker threads in the server). */
  analyzer: Analyzer;
  /** The analyzer queue of the job: the workspace id (workspaces are served round-robin). */
  queue: string;
}

/** An {@link IngestResult} with the stored type (`url`, `website`, `github` for fetched kinds). */
export interface Ingested extends Omit<IngestResult, 'type'> {
  /** The stored type: the detected one for `auto`. */
  type: SourceType;
}

const CONTENT_TYPES: readonly string[] = ['openapi', 'json', 'text', 'graphql', 'postman', 'asyncapi', 'grpc', 'soap'];

/** True for `https://github.com/owner/repo…` URLs, which `auto` ingests as `github`. */
export const isGithubRepoUrl = (url: string): boolean => /^https?:\/\/(www\.)?github\.com\/[^/]+\/[^/]+/i.test(url);

/**
 * Runs a whole ingestion: fetch (url, website crawl, GitHub) or take the pasted content; the
 * analyzer decodes, detects, parses and lays out the record. The calling thread only fetches.
 * @throws IngestError or FetchError; their message becomes the source's `error`. An
 *   IngestError's `sourceType`, when set, is the type the failed source is stored with.
 */
export async function ingest(req: IngestRequest, deps: IngestDeps): Promise<Ingested> {
  const { analyzer, queue } = deps;
  if (req.content !== undefined) {
    if (req.type === 'url' || req.type === 'website' || req.type === 'github') throw new IngestError(`a ${req.type} source is fetched from its url; pasted content cannot be ingested as ${req.type}`);
    if (!CONTENT_TYPES.includes(req.type) && req.type !== 'auto') throw new IngestError(`type ${req.type} cannot be ingested here`);
    return analyzer.analyze({ op: 'text', type: req.type as ContentType | 'auto', text: req.content }, queue);
  }
  const url = req.url!;
  if (req.type === 'website') {
    const site = await crawlWebsite(url, { ...deps.fetch, maxPages: deps.crawlMaxPages, maxDepth: 3, links: (job) => analyzer.links(job, queue) });
    return { ...(await analyzer.analyze({ op: 'site', pages: site.pages }, queue)), type: 'website' };
  }
  if (req.type === 'github' || (req.type === 'auto' && isGithubRepoUrl(url))) {
    // The configured GitHub API is trusted (it may be a local mirror), for github sources only.
    const gh = await fetchGithubDocs(url, { ...deps.fetch, apiUrl: deps.githubApiUrl, trustedOrigins: [new URL(deps.githubApiUrl).origin] });
    return { ...(await analyzer.analyze({ op: 'documents', title: gh.title, documents: gh.documents }, queue)), type: 'github' };
  }
  const want = req.type === 'auto' || req.type === 'url' ? 'auto' : req.type;
  if (!CONTENT_TYPES.includes(want) && want !== 'auto') throw new IngestError(`type ${want} cannot be ingested here`);
  const doc = await fetchDocument(url, deps.fetch);
  // A plain page stays a `url` source (its documents `page`s); an API description found at a URL
  // keeps its own type, and so does a failed one (docs/sources.md#failed-sources).
  const stored = (found: SourceType): SourceType => (req.type === 'url' || found === 'text' ? 'url' : found);
  let r: IngestResult;
  try {
    r = await analyzer.analyze({ op: 'text', type: want as ContentType | 'auto', text: { body: doc.body, contentType: doc.headers['content-type'] }, mediaType: doc.contentType, asPages: true }, queue);
  } catch (e) {
    if (e instanceof IngestError && e.sourceType !== undefined) e.sourceType = stored(e.sourceType);
    throw e;
  }
  return { ...r, type: stored(r.type) };
}
