/**
 * The contract every source parser fulfils (docs/sources.md#what-ingestion-extracts): a pure function, no I/O, from
 * the source's text (or a parsed value) to a {@link ParsedSource}; content that cannot be parsed throws an
 * {@link IngestError} saying why, with the 1-based line and column where known (`YAML: … at line 3, column 7`).
 */
import type { SourceType } from './kinds.js';

/**
 * One document extracted from a source: `kind` as docs/sources.md#what-ingestion-extracts lists (`overview`,
 * `operation`, `section`, `page`…), a human-readable `title`, and the searchable plain `text`.
 */
export interface ParsedDocument { kind: string; title: string; text: string }

/**
 * One callable endpoint: `method` (`GET`…, `QUERY`/`MUTATION`/`SUBSCRIPTION`, `PUBLISH`/`SUBSCRIBE`, `SEND`/`RECEIVE`,
 * `RPC`, `SOAP`); `path` as written (`/pets/{petId}`, root field, channel address, `/pkg.Service/Method`, operation
 * name); `documentIndex`: the document describing it, when there is one.
 */
export interface ParsedEndpoint { method: string; path: string; documentIndex?: number }

/** What a parser returns. */
export interface ParsedSource {
  /** The document's own title (OpenAPI `info.title`, collection name…), used as the default source name. */
  title?: string;
  documents: ParsedDocument[];
  endpoints: ParsedEndpoint[];
  /** Base URL of the described API when the document names one (OpenAPI `servers[0].url`, Swagger host+basePath). */
  serverUrl?: string;
}

/** A {@link ParsedSource}; `title` and `serverUrl` are set only when non-empty. */
export function parsedSource(documents: ParsedDocument[], endpoints: ParsedEndpoint[], title?: string,
  serverUrl?: string): ParsedSource {
  return { documents, endpoints, ...(title ? { title } : {}), ...(serverUrl ? { serverUrl } : {}) };
}

/** Thrown by parsers for content that cannot be ingested; `message` is shown to the user as the source's `error`. */
export class IngestError extends Error {
  readonly line?: number;
  readonly column?: number;
  /** The type detected before the failure, which a failed source is stored with (docs/sources.md#failed-sources). */
  sourceType?: SourceType;
  constructor(message: string, line?: number, column?: number) {
    super(line !== undefined ? `${message} at line ${line}, column ${column ?? 1}` : message);
    this.name = 'IngestError';
    this.line = line;
    this.column = column;
  }
}

/** Most documents one source may have (README "Limits"); more fails the source. */
export const MAX_DOCUMENTS = 20_000;
/** Most endpoints one source may have. */
export const MAX_ENDPOINTS = 20_000;
/** Most chunks one source may have. */
export const MAX_CHUNKS = 50_000;

/** `n` with thousands separators (`20,000`), as the cap errors write counts. */
export const count = (n: number): string => n.toLocaleString('en-US');

/**
 * Throws the per-source cap error when `n` things (`documents`, `endpoints`, `chunks`) are more than `max`: "the
 * content has 400,000 documents; at most 20,000 are ingested per source". Parsers that count before building call it.
 * @throws IngestError
 */
export function enforceCap(n: number, max: number, what: string): void {
  if (n > max) throw new IngestError(
    `the content has ${count(n)} ${what}; at most ${count(max)} are ingested per source`);
}

/** The stored output of one ingestion (record type `source_index`, id = source id). */
export interface SourceIndexRec {
  documents: Array<{ id: string; kind: string | null; title: string | null }>;
  endpoints: Array<{ id: string; method: string | null; path: string | null; documentId?: string }>;
  /** Chunks: `d` is the index into `documents`, `t` the text. */
  chunks: Array<{ d: number; t: string }>;
  serverUrl?: string;
}
