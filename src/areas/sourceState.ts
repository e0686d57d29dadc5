/**
 * The sources area's records (docs/storage.md#data-dir-layout): a source, the pasted content
 * it was made from (kept for rescans), and the output of its last ingestion.
 */
import type { Source } from './sourceModel.js';

/** The stored output of one ingestion (record type `source_index`, id = source id). */
export interface SourceIndexRec {
  documents: Array<{ id: string; kind: string | null; title: string | null }>;
  endpoints: Array<{ id: string; method: string | null; path: string | null; documentId?: string }>;
  /** Chunks: `d` is the index into `documents`, `t` the text. */
  chunks: Array<{ d: number; t: string }>;
  serverUrl?: string;
}

/** The pasted content of a source (record type `source_content`, id = source id). */
export interface SourceContent { content: string }

/** The record types of the sources area. */
export interface SourceRecords {
  source: Source;
  source_content: SourceContent;
  source_index: SourceIndexRec;
}
