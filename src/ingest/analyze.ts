/**
 * The CPU-bound part of ingestion, pure and thread-agnostic: detect and parse content,
 * chunk the documents, and prepare their search postings. {@link Analyzer} runs it inline or
 * on a worker thread (src/ingest/pool.ts), so a large document does not stall other requests.
 */
import { IngestError, type ParsedSource } from './types.js';
import { classifyValue, detectContent, parseStructured, type ContentType } from './detect.js';
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
import { prepareSource, type SourceEntry } from '../search/bm25.js';

/** Parsed content with its chunks and prepared search postings (chunk documentIds are document indexes). */
export interface Analysis {
  type: ContentType;
  parsed: ParsedSource;
  chunks: Array<{ documentIndex: number; text: string }>;
  prepared: SourceEntry;
}

/** Runs analyses; `close` releases any thread. */
export interface Analyzer {
  /** Detects (for `auto`) and parses `text`, then chunks and prepares it. @throws IngestError */
  analyzeText(type: ContentType | 'auto', text: string, mediaType?: string): Promise<Analysis>;
  /** Chunks and prepares already-parsed documents (crawled pages, GitHub files). */
  analyzeParsed(type: ContentType, parsed: ParsedSource): Promise<Analysis>;
  close(): Promise<void>;
}

/** The analysis of already-parsed documents. @throws IngestError when there is no document. */
export function analyzeParsedSync(type: ContentType, parsed: ParsedSource): Analysis {
  if (parsed.documents.length === 0) throw new IngestError('no documents could be extracted from the content');
  const chunks = chunkDocuments(parsed.documents).map((c) => ({ documentIndex: c.documentIndex, text: c.text }));
  const prepared = prepareSource(chunks.map((c) => ({ documentId: String(c.documentIndex), title: parsed.documents[c.documentIndex].title || null, text: c.text })));
  return { type, parsed, chunks, prepared };
}

/** {@link parseContent} then {@link analyzeParsedSync}. */
export function analyzeTextSync(type: ContentType | 'auto', text: string, mediaType?: string): Analysis {
  const r = parseContent(type, text, mediaType);
  return analyzeParsedSync(r.type, r.parsed);
}

/** An {@link Analyzer} on the calling thread (tests, the CLI). */
export const inlineAnalyzer: Analyzer = {
  analyzeText: async (type, text, mediaType) => analyzeTextSync(type, text, mediaType),
  analyzeParsed: async (type, parsed) => analyzeParsedSync(type, parsed),
  close: async () => {},
};

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

