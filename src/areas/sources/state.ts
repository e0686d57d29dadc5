/**
 * The sources area's records (docs/storage.md#data-dir-layout) — a source, the pasted content it was made from (kept
 * for rescans), the output of its last ingestion — and the state derived from them: the list order, the url of each
 * source, the search index and the endpoints.
 */
import type { Db, WithPrepared } from '../../store/db.js';
import { attachIndexes, orderBy, uniqueBy } from '../../store/indexes.js';
import { SearchIndex, prepareSource, type SearchHit, type SourceEntry } from '../../search/bm25.js';
import type { Source } from './model.js';
import type { SourceIndexRec } from '../../ingest/types.js';

/** The pasted content of a source (record type `source_content`, id = source id). */
export interface SourceContent { content: string }

/** The record types of the sources area. */
export interface SourceRecords {
  source: Source;
  source_content: SourceContent;
  /** A put may bring the record's search postings, prepared on the ingestion worker. */
  source_index: WithPrepared<SourceIndexRec, SourceEntry>;
}

/** The indexes of sources (docs/storage.md#indexes). */
export const sourceIndexes = {
  /** By (createdAt, id): the list order. */
  order: orderBy((s: Source) => s.createdAt),
  /** Normalized `inputUrl` → id: a url belongs to one source (docs/sources.md#url-and-content). */
  byUrl: uniqueBy((s: Source) => s.inputUrl),
};

/**
 * What the workspace's ingestion outputs make searchable: the BM25 index over every source's chunks and the source of
 * every endpoint (live API checks), kept current on every change of a `source_index` record.
 */
export class SourceSearch {
  /** BM25 index over every source's chunks. */
  readonly index = new SearchIndex();
  /** Endpoint id → source id. */
  readonly endpoints = new Map<string, string>();
  /**
   * The postings of each indexed record, so that an undo that puts a replaced record back does not prepare them again
   * (held only as long as the record is).
   */
  private readonly entries = new WeakMap<object, SourceEntry>();

  constructor(private readonly db: Db<SourceRecords>) {
    db.on('source_index', (id, prev, next, prepared) => {
      if (prev) { for (const e of prev.endpoints) this.endpoints.delete(e.id); this.index.removeSource(id); }
      if (next) {
        for (const e of next.endpoints) this.endpoints.set(e.id, id);
        // Prepared on a worker (the usual case: the put brings them): O(1), no per-chunk work on the main thread. A
        // replayed record is prepared here.
        const entry = prepared ?? this.entries.get(next)
          ?? prepareSource(next.chunks.map((c) => ({ documentId: next.documents[c.d].id, title: next.documents[
            c.d].title, text: c.t })));
        this.entries.set(next, entry);
        this.index.addPrepared(id, entry);
      }
    });
  }

  /** The postings of source `id`'s chunks (prepared now if they are not held), or undefined without an ingestion
   * output. */
  entryOf(id: string): SourceEntry | undefined {
    const rec = this.db.get('source_index', id);
    if (!rec) return undefined;
    let entry = this.entries.get(rec);
    if (!entry) {
      entry = prepareSource(rec.chunks.map((c) => ({ documentId: rec.documents[c.d].id, title: rec.documents[
        c.d].title, text: c.t })));
      this.entries.set(rec, entry);
    }
    return entry;
  }
}

/**
 * BM25 over the chunks of one source only (the public docs' search, docs/web.md#public-docs), term weights from that
 * source alone; O(1) to set up. @param limit the most hits, best first. @returns [] for an unknown source or no match.
 */
export function searchOneSource(search: SourceSearch, sourceId: string, query: string, limit: number): SearchHit[] {
  const entry = search.entryOf(sourceId);
  if (!entry) return [];
  const one = new SearchIndex();
  one.addPrepared(sourceId, entry);
  return one.search(query, limit);
}

/** The sources area's state in a workspace: its declared indexes and what its ingestions made searchable. */
export function attachSources(db: Db<SourceRecords>) {
  return { ...attachIndexes(db, 'source', sourceIndexes), search: new SourceSearch(db) };
}

/**
 * Marks failed, in one durable transaction, the sources left `processing` by a stop, so they can be rescanned; their
 * previous documents are kept (docs/decisions.md#processing-is-visible-and-durable).
 * @param now the clock's time (ms), the sources' new `updatedAt`. @throws StorageFailedError and fs errors of the
 *   commit.
 */
export async function failInterruptedIngestions(db: Db<SourceRecords>, now: number): Promise<void> {
  const stuck = [...db.table('source').values()].filter((s) => s.status === 'processing');
  if (stuck.length === 0) return;
  const tx = db.begin();
  for (const s of stuck) {
    tx.put('source', s.id, { ...s, status: 'failed',
      error: 'ingestion was interrupted by a server restart; rescan the source',
      updatedAt: new Date(now).toISOString() });
  }
  await db.commit(tx);
}
