/**
 * Retrieval for agents' answers (docs/api.md#answers): the passages of a set of sources that best answer a question.
 * An explicit `METHOD /path` (templates match concrete paths) or an operationId in the question finds its endpoint
 * first; then BM25 over the sources' chunks. Pure and bounded: the BM25 scan is src/search's pruned top-k, the
 * endpoint lookup is built once per ingestion output and kept while the output is.
 */
import { SearchIndex, queryTerms, type SourceEntry } from '../../search/bm25.js';
import { tokenize } from '../../search/tokenize.js';
import type { SourceIndexRec } from '../../ingest/types.js';

/** One source to answer from: its id, its ingestion output and the postings of its chunks. */
export interface RetrievalSource { id: string; idx: SourceIndexRec; entry: SourceEntry }

/** A passage found for a question: a chunk of a document, or an endpoint named by the question. */
export interface Passage {
  sourceId: string; documentId: string | null; endpointId: string | null; method: string | null;
  path: string | null; title: string; text: string;
  /** The chunk's BM25 score for the question; 0 for a named endpoint that BM25 did not find. */
  score: number;
  /** Found because the question names its endpoint (method and path, or operationId). */
  named: boolean;
}

/** What {@link retrieve} found: passages best first, and how much of the question the best one covers (0–1). */
export interface Retrieval { passages: Passage[]; coverage: number }

/** Words of the question (after {@link queryText}) the BM25 query takes: a bound on one answer's search time. */
export const MAX_QUESTION_WORDS = 12;
/** Most passages returned. */
export const MAX_PASSAGES = 3;
/** Chunks asked of BM25 (several may be of one document), then re-ranked. */
const SEARCH_HITS = 20;
/** Re-ranking: a chunk of a document that is not an endpoint's (a schema…) weighs this much of its score. */
const NOT_ENDPOINT_WEIGHT = 0.7;
/** Re-ranking: the score grows by up to this share with the share of the title's terms the question holds. */
const TITLE_BONUS = 0.5;
/** Re-ranking: an endpoint whose method fits the question's verb (delete → DELETE…) weighs this much more. */
const VERB_BONUS = 0.25;
/** The methods each verb of a question asks for. */
const VERB_METHODS: Record<string, string[]> = Object.fromEntries([
  ['DELETE', 'delete remove erase destroy cancel'], ['POST', 'create add new upload send buy submit make start post'],
  ['PATCH PUT POST', 'update edit modify change correct rename replace set'],
  ['GET', 'list get fetch retrieve see show read find look download view'],
].flatMap(([methods, verbs]) => verbs.split(' ').map((v) => [v, methods.split(' ')])));
/** Words of conversation that say nothing about an API: left out of the query. */
const CHAT_WORDS = new Set(('hi hello hey thanks thank please can could would should you your i me my we our us '
  + 'do does did how what which who why when where there here need want help know tell am im it\'s is are have '
  + 'has any some way possible able using use via just also about').split(' '));

type Endpoint = SourceIndexRec['endpoints'][number];
interface Lookup {
  byDoc: Map<string, Endpoint>;
  byOperationId: Map<string, Endpoint>;
  /** Per endpoint with a path: its method, segments (a lower-cased literal, a pattern, null: any), literals. */
  templates: Array<{ e: Endpoint; method: string; segs: Array<string | RegExp | null>; literals: number }>;
  /** Document id → index of its first chunk. */
  firstChunk: Map<string, number>;
}
const lookups = new WeakMap<SourceIndexRec, Lookup>();
const OPERATION_ID = /^Operation ID: (\S+)$/m;
const escape = (t: string): string => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The endpoint lookup of `idx`, built once: O(endpoints + chunks). */
function lookupOf(idx: SourceIndexRec, entry: SourceEntry): Lookup {
  let l = lookups.get(idx);
  if (l) return l;
  l = { byDoc: new Map(), byOperationId: new Map(), templates: [], firstChunk: new Map() };
  for (let ci = 0; ci < entry.documentIds.length; ci++) {
    if (!l.firstChunk.has(entry.documentIds[ci])) l.firstChunk.set(entry.documentIds[ci], ci);
  }
  for (const e of idx.endpoints) {
    if (e.documentId !== undefined && !l.byDoc.has(e.documentId)) {
      l.byDoc.set(e.documentId, e);
      const ci = l.firstChunk.get(e.documentId);
      const op = ci === undefined ? null : OPERATION_ID.exec(entry.texts[ci]);
      if (op) l.byOperationId.set(op[1], e);
    }
    if (e.method === null || e.path === null || !e.path.startsWith('/')) continue;
    const segs = e.path.replace(/\/+$/, '').split('/').slice(1).map((seg): string | RegExp | null => {
      if (/^\{[^}]*\}$/.test(seg) || /^:[A-Za-z_]\w*$/.test(seg)) return null;
      if (!seg.includes('{')) return seg.toLowerCase();
      return new RegExp(`^${escape(seg).replace(/\\\{[^/]*?\\\}/g, '[^/]+')}$`, 'i');
    });
    l.templates.push({ e, method: e.method.toUpperCase(), segs, literals: segs.filter((x) => typeof x === 'string')
      .length });
  }
  lookups.set(idx, l);
  return l;
}

const NAMED = /\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+(\/[^\s?#"'`<>,;)]*)/gi;

/** Whether template `segs` match the last `segs.length` segments of `concrete` (a prefix such as `/v1` is allowed). */
function segsMatch(segs: Array<string | RegExp | null>, concrete: string[]): boolean {
  const off = concrete.length - segs.length;
  if (off < 0) return false;
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i];
    const c = concrete[off + i];
    if (c === '' || (typeof s === 'string' ? s !== c.toLowerCase() : s !== null && !s.test(c))) return false;
  }
  return true;
}

/** The endpoints `question` names, best first: `METHOD /path` (whole path before a suffix of it), then operationIds. */
function namedEndpoints(question: string, sources: RetrievalSource[]): Array<{ src: RetrievalSource; e: Endpoint }> {
  const out: Array<{ src: RetrievalSource; e: Endpoint; rank: number }> = [];
  for (const m of question.matchAll(NAMED)) {
    const method = m[1].toUpperCase();
    const concrete = m[2].replace(/[.:!]+$/, '').replace(/\/+$/, '').split('/').slice(1);
    for (const src of sources) {
      let best: { e: Endpoint; rank: number } | undefined;
      for (const t of lookupOf(src.idx, src.entry).templates) {
        if (t.method !== method) continue;
        const rank = segsMatch(t.segs, concrete) ? (t.segs.length === concrete.length ? 1000 : 0) + t.literals : -1;
        if (rank >= 0 && (!best || rank > best.rank)) best = { e: t.e, rank };
      }
      if (best) out.push({ src, ...best });
    }
  }
  // An operationId as written, camelCase or with `_` (a plain word such as `Check` names nothing).
  for (const word of question.match(/[A-Za-z][A-Za-z0-9_.]{2,}/g) ?? []) {
    if (!/[a-z0-9][A-Z]|_/.test(word)) continue;
    for (const src of sources) {
      const e = lookupOf(src.idx, src.entry).byOperationId.get(word);
      if (e) out.push({ src, e, rank: 500 });
    }
  }
  out.sort((a, b) => b.rank - a.rank);
  const seen = new Set<string>();
  return out.filter((x) => !seen.has(x.e.id) && (seen.add(x.e.id), true));
}

/**
 * The query's terms that bound one search's work: those in at most {@link COMMON_SHARE} of the chunks (or
 * {@link COMMON_FLOOR}), and the {@link RAREST_KEPT} rarest whatever their count. A term most chunks hold weighs
 * little in BM25 and costs a scan of most postings.
 */
function boundedTerms(index: SearchIndex, sources: RetrievalSource[], q: string): string[] {
  const n = sources.reduce((sum, s) => sum + s.entry.texts.length, 0);
  const withDf = queryTerms(q).map((t) => ({ t, d: index.documentFrequency(t) })).filter((x) => x.d > 0);
  const rarest = new Set([...withDf].sort((a, b) => a.d - b.d).slice(0, RAREST_KEPT).map((x) => x.t));
  const most = Math.max(COMMON_FLOOR, n * COMMON_SHARE);
  return withDf.filter((x) => x.d <= most || rarest.has(x.t)).map((x) => x.t);
}
const COMMON_SHARE = 0.05;
const COMMON_FLOOR = 1000;
const RAREST_KEPT = 3;

/** `text` without the words of {@link CHAT_WORDS}. */
export function queryText(text: string): string {
  return text.replace(/[\p{L}\p{N}']+/gu, (w) => CHAT_WORDS.has(w.toLowerCase()) ? ' ' : w);
}

/**
 * The passages of `sources` for `question` (the customer's recent messages, newest first), best first, at most
 * {@link MAX_PASSAGES}, each of a different document; and the share (by idf) of the question's terms that the best
 * passage holds. O(sources) to set up, then one pruned BM25 search and, with a named endpoint, one regex per endpoint.
 */
export function retrieve(sources: RetrievalSource[], question: string): Retrieval {
  const index = new SearchIndex();
  for (const s of sources) index.addPrepared(s.id, s.entry);
  const byId = new Map(sources.map((s) => [s.id, s]));
  // Bounded: the first words of the question (newest message first) make the BM25 query.
  const q = (queryText(question).match(/[\p{L}\p{N}_'./{}-]+/gu) ?? []).slice(0, MAX_QUESTION_WORDS).join(' ');
  const hits = index.searchTerms(boundedTerms(index, sources, q), SEARCH_HITS);
  const passages: Passage[] = [];
  const seen = new Set<string>();
  const add = (src: RetrievalSource, documentId: string | null, e: Endpoint | undefined, text: string,
    title: string | null, score: number, named: boolean): void => {
    const key = documentId ?? `endpoint:${e?.id}`;
    if (seen.has(key)) return;
    seen.add(key);
    passages.push({ sourceId: src.id, documentId, endpointId: e?.id ?? null, method: e?.method ?? null,
      path: e?.path ?? null, title: title ?? (e ? `${e.method} ${e.path}` : '(untitled)'), text, score, named });
  };
  for (const { src, e } of namedEndpoints(question, sources)) {
    const l = lookupOf(src.idx, src.entry);
    const hit = hits.find((h) => h.sourceId === src.id && h.documentId === e.documentId);
    const ci = e.documentId === undefined ? undefined : l.firstChunk.get(e.documentId);
    const text = hit?.text ?? (ci === undefined ? '' : src.entry.texts[ci]);
    const title = hit?.title ?? (ci === undefined ? null : src.entry.titles[ci]);
    add(src, e.documentId ?? null, e, text, title, hit?.score ?? 0, true);
  }
  const words = new Set(tokenize(q));
  const verbs = new Set(q.toLowerCase().match(/[a-z]+/g)?.flatMap((w) => VERB_METHODS[w] ?? []) ?? []);
  const ranked = hits.map((h) => {
    const src = byId.get(h.sourceId)!;
    const e = lookupOf(src.idx, src.entry).byDoc.get(h.documentId);
    const title = h.title === null ? [] : tokenize(h.title);
    const inTitle = title.length === 0 ? 0 : title.filter((t) => words.has(t)).length / title.length;
    const fits = e?.method && verbs.has(e.method.toUpperCase()) ? 1 + VERB_BONUS : 1;
    return { h, src, e, rank: h.score * (e ? fits : NOT_ENDPOINT_WEIGHT) * (1 + TITLE_BONUS * inTitle) };
  }).sort((a, b) => b.rank - a.rank);
  for (const { h, src, e } of ranked) {
    if (passages.length >= MAX_PASSAGES) break;
    add(src, h.documentId, e, h.text, h.title, h.score, false);
  }
  passages.length = Math.min(passages.length, MAX_PASSAGES);
  return { passages, coverage: passages.length === 0 ? 0 : passages[0].named ? 1 : coverage(index,
    sources.reduce((n, s) => n + s.entry.texts.length, 0), q, passages[0]) };
}

/** The idf-weighted share of the query's terms that `p` (title and text) holds; terms no chunk has count fully. */
function coverage(index: SearchIndex, chunks: number, q: string, p: Passage): number {
  const terms = queryTerms(q);
  if (terms.length === 0) return 0;
  const N = Math.max(1, chunks);
  const held = new Set([...tokenize(p.title), ...tokenize(p.text)]);
  let all = 0;
  let got = 0;
  for (const t of terms) {
    const d = index.documentFrequency(t);
    const idf = Math.log(1 + (N - d + 0.5) / (d + 0.5));
    all += idf;
    if (held.has(t)) got += idf;
  }
  return all === 0 ? 0 : got / all;
}
