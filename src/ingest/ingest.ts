/**
 * Ingestion (DESIGN §6, issue #3): turns a create-source request — pasted `content` or a
 * `url`, with a `type` or `auto` — into the stored type and a parsed source (documents,
 * endpoints, chunks). Parsing is pure; fetching goes through the SSRF-safe fetcher.
 */
import { IngestError, type ParsedSource } from './types.js';
import { classifyValue, detectContent, parseStructured, type ContentType, type SourceType } from './detect.js';
import { parseOpenApi } from './openapi.js';
import { parseAsyncApi } from './asyncapi.js';
import { parsePostman } from './postman.js';
import { parseGraphql, parseGraphqlIntrospection } from './graphql.js';
import { parseProto } from './proto.js';
import { parseWsdl } from './wsdl.js';
import { parseJsonDocuments } from './json.js';
import { parseMarkdown } from './markdown.js';
import { parseHtml } from './html.js';
import { chunkDocuments } from './chunk.js';
import { fetchDocument, type FetchOptions } from './fetch.js';
import { crawlWebsite } from './crawl.js';
import { fetchGithubDocs } from './github.js';

export interface IngestRequest { type: SourceType | 'auto'; url?: string; content?: string }

export interface IngestDeps {
  fetch: FetchOptions;
  crawlMaxPages: number;
  githubApiUrl: string;
}

export interface Ingested {
  /** The stored type: the detected one for `auto`. */
  type: SourceType;
  parsed: ParsedSource;
  chunks: Array<{ documentIndex: number; text: string }>;
}

const CONTENT_TYPES: readonly string[] = ['openapi', 'json', 'text', 'graphql', 'postman', 'asyncapi', 'grpc', 'soap'];

/**
 * Parses `text` as `type` (or detects it for `auto`).
 * @throws IngestError saying why the content cannot be ingested, with line and column where known.
 */
export function parseContent(type: ContentType | 'auto', text: string, mediaType?: string): { type: ContentType; parsed: ParsedSource } {
  if (text.trim() === '') throw new IngestError('the content is empty');
  let detected: { type: ContentType; html?: boolean; value?: unknown };
  if (type === 'auto') detected = detectContent(text, mediaType);
  else if (type === 'openapi' || type === 'asyncapi' || type === 'postman' || type === 'json') {
    const value = parseStructured(text);
    const found = classifyValue(value);
    if (type !== 'json' && found !== type) throw new IngestError(`the content is not ${article(type)} document (it looks like ${found === 'json' ? 'plain JSON/YAML data' : found})`);
    detected = { type, value };
  } else if (type === 'graphql') {
    const start = text.trimStart()[0];
    detected = { type, value: start === '{' ? parseStructured(text) : undefined };
  } else detected = { type, html: type === 'text' ? detectContent(text, mediaType).html : undefined };

  const v = detected.value;
  switch (detected.type) {
    case 'openapi': return { type: 'openapi', parsed: parseOpenApi(v) };
    case 'asyncapi': return { type: 'asyncapi', parsed: parseAsyncApi(v) };
    case 'postman': return { type: 'postman', parsed: parsePostman(v) };
    case 'graphql': return { type: 'graphql', parsed: v !== undefined ? parseGraphqlIntrospection(v) : parseGraphql(text) };
    case 'grpc': return { type: 'grpc', parsed: parseProto(text) };
    case 'soap': return { type: 'soap', parsed: parseWsdl(text) };
    case 'json': return { type: 'json', parsed: parseJsonDocuments(v) };
    case 'text': return { type: 'text', parsed: detected.html ? parseHtml(text) : parseMarkdown(text) };
  }
}

function article(t: string): string {
  return `${/^[aeiou]/.test(t) ? 'an' : 'a'} ${t === 'openapi' ? 'OpenAPI' : t === 'asyncapi' ? 'AsyncAPI' : t === 'postman' ? 'Postman collection' : t}`;
}

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
  let type: SourceType;
  let parsed: ParsedSource;
  if (req.content !== undefined) {
    if (req.type === 'url' || req.type === 'website' || req.type === 'github') throw new IngestError(`a ${req.type} source is fetched from its url; pasted content cannot be ingested as ${req.type}`);
    if (!CONTENT_TYPES.includes(req.type) && req.type !== 'auto') throw new IngestError(`type ${req.type} cannot be ingested here`);
    ({ type, parsed } = parseContent(req.type as ContentType | 'auto', req.content));
  } else {
    const url = req.url!;
    if (req.type === 'website') {
      const site = await crawlWebsite(url, { ...deps.fetch, maxPages: deps.crawlMaxPages, maxDepth: 3 });
      type = 'website';
      parsed = { title: site.pages[0]?.title, documents: site.pages.flatMap((p) => p.documents), endpoints: [] };
    } else if (req.type === 'github' || (req.type === 'auto' && isGithubRepoUrl(url))) {
      // The configured GitHub API is trusted (it may be a local mirror), for github sources only.
      const gh = await fetchGithubDocs(url, { ...deps.fetch, apiUrl: deps.githubApiUrl, trustedOrigins: [new URL(deps.githubApiUrl).origin] });
      type = 'github';
      parsed = { title: gh.title, documents: gh.documents, endpoints: [] };
    } else {
      const doc = await fetchDocument(url, deps.fetch);
      const text = decodeBody(doc.body, doc.headers['content-type']);
      const want = req.type === 'auto' || req.type === 'url' ? 'auto' : req.type;
      if (!CONTENT_TYPES.includes(want) && want !== 'auto') throw new IngestError(`type ${want} cannot be ingested here`);
      const r = parseContent(want as ContentType | 'auto', text, doc.contentType);
      // A plain page stays a `url` source; an API description found at a URL keeps its own type.
      type = req.type === 'url' || r.type === 'text' ? 'url' : r.type;
      parsed = r.parsed;
      if (type === 'url' && r.type === 'text') parsed = { ...parsed, documents: parsed.documents.map((d) => ({ ...d, kind: 'page' })) };
    }
  }
  if (parsed.documents.length === 0) throw new IngestError('no documents could be extracted from the content');
  const chunks = chunkDocuments(parsed.documents).map((c) => ({ documentIndex: c.documentIndex, text: c.text }));
  return { type, parsed, chunks };
}
