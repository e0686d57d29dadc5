/**
 * Ingestion (DESIGN §6, issue #3): turns a create-source request — pasted `content` or a
 * `url`, with a `type` or `auto` — into the stored type and a parsed source (documents,
 * endpoints, chunks). Parsing is pure; fetching goes through the SSRF-safe fetcher.
 */
import { IngestError, type ParsedSource } from './types.js';
import type { ContentType, SourceType } from './detect.js';
import type { Analyzer } from './analyze.js';
import type { SourceEntry } from '../search/bm25.js';
import { fetchDocument, type FetchOptions } from './fetch.js';
import { crawlWebsite } from './crawl.js';
import { fetchGithubDocs } from './github.js';

export interface IngestRequest { type: SourceType | 'auto'; url?: string; content?: string }

export interface IngestDeps {
  fetch: FetchOptions;
  crawlMaxPages: number;
  githubApiUrl: string;
  /** Where parsing, chunking and postings run (a worker thread in the server). */
  analyzer: Analyzer;
}

export interface Ingested {
  /** The stored type: the detected one for `auto`. */
  type: SourceType;
  parsed: ParsedSource;
  chunks: Array<{ documentIndex: number; text: string }>;
  /** Search postings of the chunks (their documentIds are document indexes). */
  prepared: SourceEntry;
}

const CONTENT_TYPES: readonly string[] = ['openapi', 'json', 'text', 'graphql', 'postman', 'asyncapi', 'grpc', 'soap'];

/** Decodes a fetched body with the charset of its Content-Type (UTF-8 when absent or unknown), as the website crawl does. */
function decodeBody(body: Buffer, contentType: string | undefined): string {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '');
  if (m) {
    try { return new TextDecoder(m[1]).decode(body); } catch { /* unknown label: UTF-8 */ }
  }
  return body.toString('utf8');
}

/** True for `https://github.com/owner/repo…` URLs, which `auto` ingests as `github`. */
export const isGithubRepoUrl = (url: string): boolean => /^https?:\/\/(www\.)?github\.com\/[^/]+\/[^/]+/i.test(url);

/**
 * Runs a whole ingestion: fetch (url, website crawl, GitHub) or take the pasted content,
 * detect, parse, chunk.
 * @throws IngestError or FetchError; their message becomes the source's `error`.
 */
export async function ingest(req: IngestRequest, deps: IngestDeps): Promise<Ingested> {
  const { analyzer } = deps;
  if (req.content !== undefined) {
    if (req.type === 'url' || req.type === 'website' || req.type === 'github') throw new IngestError(`a ${req.type} source is fetched from its url; pasted content cannot be ingested as ${req.type}`);
    if (!CONTENT_TYPES.includes(req.type) && req.type !== 'auto') throw new IngestError(`type ${req.type} cannot be ingested here`);
    return analyzer.analyzeText(req.type as ContentType | 'auto', req.content);
  }
  const url = req.url!;
  if (req.type === 'website') {
    const site = await crawlWebsite(url, { ...deps.fetch, maxPages: deps.crawlMaxPages, maxDepth: 3 });
    const parsed: ParsedSource = { title: site.pages[0]?.title, documents: site.pages.flatMap((p) => p.documents), endpoints: [] };
    return { ...(await analyzer.analyzeParsed('text', parsed)), type: 'website' };
  }
  if (req.type === 'github' || (req.type === 'auto' && isGithubRepoUrl(url))) {
    // The configured GitHub API is trusted (it may be a local mirror), for github sources only.
    const gh = await fetchGithubDocs(url, { ...deps.fetch, apiUrl: deps.githubApiUrl, trustedOrigins: [new URL(deps.githubApiUrl).origin] });
    return { ...(await analyzer.analyzeParsed('text', { title: gh.title, documents: gh.documents, endpoints: [] })), type: 'github' };
  }
  const doc = await fetchDocument(url, deps.fetch);
  const text = decodeBody(doc.body, doc.headers['content-type']);
  const want = req.type === 'auto' || req.type === 'url' ? 'auto' : req.type;
  if (!CONTENT_TYPES.includes(want) && want !== 'auto') throw new IngestError(`type ${want} cannot be ingested here`);
  const r = await analyzer.analyzeText(want as ContentType | 'auto', text, doc.contentType);
  // A plain page stays a `url` source; an API description found at a URL keeps its own type.
  const type: SourceType = req.type === 'url' || r.type === 'text' ? 'url' : r.type;
  if (r.type !== 'text') return { ...r, type };
  return { ...r, type, parsed: { ...r.parsed, documents: r.parsed.documents.map((d) => ({ ...d, kind: 'page' })) } };
}
