/**
 * The contract every source parser fulfils (docs/sources.md#what-ingestion-extracts).
 *
 * A parser is a pure function from the source's text (or an already-parsed value) to a
 * {@link ParsedSource}. It never does I/O. Content that cannot be parsed makes it throw an
 * {@link IngestError} whose message says why and, where a position is known, carries the
 * 1-based line and column, e.g. `YAML: unexpected ':' at line 3, column 7`.
 */
import type { SourceType } from './kinds.js';

/** One document extracted from a source: an operation, a schema, a section, a page… */
export interface ParsedDocument {
  /** Kind (docs/sources.md#what-ingestion-extracts): `overview`, `operation`, `schema`, `request`, `type`, `channel`, `service`, `message`, `section`, `page`, `file`, `entry`… */
  kind: string;
  /** Human-readable title (operation summary, heading text, type name…). */
  title: string;
  /** The searchable plain text of the document (Markdown-ish, no markup required). */
  text: string;
}

/** One callable endpoint extracted from a source. */
export interface ParsedEndpoint {
  /** `GET`, `POST`… for HTTP; `QUERY`/`MUTATION`/`SUBSCRIPTION`; `PUBLISH`/`SUBSCRIBE`; `SEND`/`RECEIVE`; `RPC`; `SOAP`. */
  method: string;
  /** Path as written (`/pets/{petId}`), root field name, channel address, `/pkg.Service/Method`, or operation name. */
  path: string;
  /** Index into `documents` of the document describing this endpoint, when there is one. */
  documentIndex?: number;
}

/** What a parser returns. */
export interface ParsedSource {
  /** The document's own title (OpenAPI `info.title`, collection name…), used as the default source name. */
  title?: string;
  documents: ParsedDocument[];
  endpoints: ParsedEndpoint[];
  /** Base URL of the described API when the document names one (OpenAPI `servers[0].url`, Swagger host+basePath). */
  serverUrl?: string;
}

/** Thrown by parsers for content that cannot be ingested; `message` is shown to the user as the source's `error`. */
export class IngestError extends Error {
  readonly line?: number;
  readonly column?: number;
  /**
   * The type the content was detected as when the failure came after detection (a failed
   * source is stored with it: docs/sources.md#failed-sources); unset when nothing was detected.
   */
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

/**
 * Throws the per-source cap error when `n` things (`documents`, `endpoints`, `chunks`) are
 * more than `max`, naming the count: "the content has 400,000 documents; at most 20,000 are
 * ingested per source". Parsers that can count before they build call it early.
 * @throws IngestError
 */
export function enforceCap(n: number, max: number, what: string): void {
  const count = (x: number): string => x.toLocaleString('en-US');
  if (n > max) throw new IngestError(`the content has ${count(n)} ${what}; at most ${count(max)} are ingested per source`);
}

/** The stored output of one ingestion (record type `source_index`, id = source id). */
export interface SourceIndexRec {
  documents: Array<{ id: string; kind: string | null; title: string | null }>;
  endpoints: Array<{ id: string; method: string | null; path: string | null; documentId?: string }>;
  /** Chunks: `d` is the index into `documents`, `t` the text. */
  chunks: Array<{ d: number; t: string }>;
  serverUrl?: string;
}
