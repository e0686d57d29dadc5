/**
 * Moves a finished {@link IngestResult} from an ingestion worker to the main thread without a long main-thread step
 * (docs/sources.md#where-ingestion-runs): a structured-clone reply is deserialized in one go, so the worker sends many
 * small `v8.serialize` slices and the typed arrays, all transferred, and the main thread assembles them a few
 * milliseconds at a time, yielding to other requests in between.
 */
import { deserialize, serialize } from 'node:v8';
import { nextTurn } from '../../core/turns.js';
import type { IngestResult } from '../analyze.js';
import type { ContentType } from '../kinds.js';
import type { SourceEntry } from '../../search/bm25.js';
import type { SourceIndexRec } from '../types.js';

/** Items per slice of documents, endpoints and terms; chunk texts are sliced by size. */
const SLICE_ITEMS = 2_000;
/**
 * UTF-16 units of chunk text per slice. A slice's texts travel as one joined string, at this size in V8's large-object
 * space: the main thread keeps each text as a view of it, so scavenges never copy the text (with ten ingestions at
 * once, copying surviving texts made scavenges of 15–50 ms).
 */
const SLICE_CHARS = 256 * 1024;
/** The main thread yields after this much work in one turn. */
export const TURN_MS = 4;

type Part =
  | { k: 'doc'; v: SourceIndexRec['documents'] }
  | { k: 'ep'; v: SourceIndexRec['endpoints'] }
  /** Chunk texts joined into `v`; text i of the slice ends at `ends[i]`. */
  | { k: 'text'; v: string; ends: number[] }
  | { k: 'term'; v: string[] }
  /** Fields of the postings beyond the ones laid out here, as they are. */
  | { k: 'rest'; v: Record<string, unknown> };

/** A serialized result: small header fields, slices and typed arrays (all transferable). */
export interface WireResult {
  type: ContentType;
  title?: string;
  serverUrl?: string;
  totalLength: number;
  /** Each an ArrayBuffer of one `v8.serialize`d {@link Part}, in order. */
  slices: ArrayBuffer[];
  chunkDocs: Int32Array;
  lengths: Int32Array;
  offsets: Int32Array;
  postings: Int32Array;
  blockBounds: Float32Array;
  /** The record's log text (UTF-8), made here so the main thread does not serialize it. */
  recordJson: Uint8Array;
}

const own = (b: Buffer): ArrayBuffer => {
  const ab = new ArrayBuffer(b.length);
  new Uint8Array(ab).set(b);
  return ab;
};

/** Worker side: the result as a {@link WireResult} plus the list of buffers to transfer. */
export function encodeResult(r: IngestResult): { wire: WireResult; transfer: ArrayBuffer[] } {
  const { record, prepared } = r;
  const slices: ArrayBuffer[] = [];
  const put = (p: Part) => slices.push(own(serialize(p)));
  for (let i = 0; i < record.documents.length; i += SLICE_ITEMS) put(
    { k: 'doc', v: record.documents.slice(i, i + SLICE_ITEMS) });
  for (let i = 0; i < record.endpoints.length; i += SLICE_ITEMS) put(
    { k: 'ep', v: record.endpoints.slice(i, i + SLICE_ITEMS) });
  let batch: string[] = [];
  let ends: number[] = [];
  let chars = 0;
  const putTexts = () => { put({ k: 'text', v: batch.join(''), ends }); batch = []; ends = []; chars = 0; };
  for (const t of prepared.texts) {
    batch.push(t);
    chars += t.length;
    ends.push(chars);
    if (chars >= SLICE_CHARS) putTexts();
  }
  if (batch.length > 0) putTexts();
  // Term ids are the terms' positions in insertion order, as prepareSource numbered them.
  batch = [];
  for (const term of prepared.termIds.keys()) {
    batch.push(term);
    if (batch.length >= SLICE_ITEMS * 5) { put({ k: 'term', v: batch }); batch = []; }
  }
  if (batch.length > 0) put({ k: 'term', v: batch });
  const { documentIds: _d, titles: _t, texts: _x, lengths: _l, totalLength: _n, termIds: _i, offsets: _o, postings: _p,
    blockBounds: _b, ...rest } = prepared;
  if (Object.keys(rest).length > 0) put({ k: 'rest', v: rest });
  const chunkDocs = Int32Array.from(record.chunks, (c) => c.d);
  const recordJson = new TextEncoder().encode(JSON.stringify(record));
  const wire: WireResult = {
    type: r.type, totalLength: prepared.totalLength, slices, chunkDocs, recordJson,
    lengths: prepared.lengths, offsets: prepared.offsets, postings: prepared.postings,
    blockBounds: prepared.blockBounds,
    ...(r.title !== undefined ? { title: r.title } : {}),
    ...(record.serverUrl !== undefined ? { serverUrl: record.serverUrl } : {}),
  };
  return { wire, transfer: [...slices, chunkDocs.buffer, recordJson.buffer as ArrayBuffer, prepared.lengths.buffer,
    prepared.offsets.buffer, prepared.postings.buffer, prepared.blockBounds.buffer] as ArrayBuffer[] };
}

/**
 * Main-thread side: rebuilds the {@link IngestResult} of {@link encodeResult}, never working more than about {@link
 * TURN_MS} before yielding (one slice is the smallest step).
 */
export async function decodeResult(w: WireResult): Promise<IngestResult> {
  let t0 = performance.now();
  const pace = async (): Promise<void> => {
    if (performance.now() - t0 < TURN_MS) return;
    await nextTurn();
    t0 = performance.now();
  };
  const documents: SourceIndexRec['documents'] = [];
  const endpoints: SourceIndexRec['endpoints'] = [];
  const texts: string[] = [];
  const termIds = new Map<string, number>();
  let rest: Record<string, unknown> = {};
  for (const ab of w.slices) {
    const p = deserialize(new Uint8Array(ab)) as Part;
    if (p.k === 'doc') for (const d of p.v) documents.push(d);
    else if (p.k === 'ep') for (const e of p.v) endpoints.push(e);
    else if (p.k === 'text') { let at = 0; for (const end of p.ends) { texts.push(p.v.slice(at, end)); at = end; } }
    else if (p.k === 'term') for (const t of p.v) termIds.set(t, termIds.size);
    else rest = p.v;
    await pace();
  }
  const n = w.chunkDocs.length;
  const chunks = new Array<{ d: number; t: string }>(n);
  const documentIds = new Array<string>(n);
  const titles = new Array<string | null>(n);
  for (let i = 0; i < n; i++) {
    const d = w.chunkDocs[i];
    chunks[i] = { d, t: texts[i] };
    documentIds[i] = documents[d].id;
    titles[i] = documents[d].title;
    if ((i & 4095) === 4095) await pace();
  }
  const record: SourceIndexRec = { documents, endpoints, chunks, ...(w.serverUrl !== undefined ? {
    serverUrl: w.serverUrl } : {}) };
  const prepared: SourceEntry = { ...rest, documentIds, titles, texts, lengths: w.lengths, totalLength: w.totalLength,
    termIds, offsets: w.offsets, postings: w.postings, blockBounds: w.blockBounds };
  return { type: w.type, ...(w.title !== undefined ? { title: w.title } : {}), record, recordJson: w.recordJson,
    prepared };
}
