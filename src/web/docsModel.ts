/**
 * What a public docs page shows (docs/web.md#public-docs), taken from a source's stored
 * ingestion output (`source_index`: documents, endpoints, chunks): the overview, the
 * operations grouped by tag (when the source's operations have tags) or by the first segment
 * of their path, the other documents, and an anchor for every document. Plain data: the page
 * (src/web/docsPage.ts) escapes all of it.
 */
import type { Source } from '../areas/sources/model.js';
import type { SourceIndexRec } from '../ingest/types.js';

/** One endpoint with its document: `text` is the document's text as ingestion stored it (chunks joined). */
export interface DocOperation { anchor: string; method: string; path: string; title: string | null; text: string }
/** Operations under one heading: a tag, or a path such as `/pets`. */
export interface DocGroup { name: string; anchor: string; operations: DocOperation[] }
/** A document that is not an operation's (a schema, a section, a page…). */
export interface DocOther { anchor: string; kind: string | null; title: string; text: string }

export interface DocsModel {
  title: string;
  /** The text of the source's `overview` document, or null. */
  overview: string | null;
  /** Whether `groups` are tags (else paths). */
  byTag: boolean;
  groups: DocGroup[];
  others: DocOther[];
  /** Document id → the anchor of its section on the page (search results link there). */
  anchors: Map<string, string>;
}

/** Operations without a tag, when the others have tags. */
export const UNTAGGED = 'Other operations';
const TAGS_LINE = /^Tags: (.+)$/m;

/** `text` as an anchor: lower-case letters, digits and `-`, at most 80 characters, never empty. */
function slugify(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 80) || 'section';
}

/** Hands out anchors, each unique on the page (`x`, `x-2`, `x-3`…). */
class Anchors {
  private readonly used = new Set<string>(['content', 'endpoints', 'overview', 'documents']);
  take(text: string): string {
    const base = slugify(text);
    let a = base;
    for (let n = 2; this.used.has(a); n++) a = `${base}-${n}`;
    this.used.add(a);
    return a;
  }
}

/**
 * `text` without its first lines that repeat what the page already shows above it (the
 * heading `GET /pets`, the title, the `Tags:` line the groups come from), and the blank lines after them.
 */
function withoutRepeats(text: string, shown: ReadonlyArray<string | null>): string {
  const lines = text.split('\n');
  let i = 0;
  while (i < Math.min(lines.length, 4) && (shown.includes(lines[i].trim()) || lines[i].startsWith('Tags: '))) i++;
  while (i < lines.length && lines[i].trim() === '') i++;
  return lines.slice(i).join('\n');
}

/** The first segment of a path (`/pets/{id}` → `/pets`); the path itself when it has none. */
function pathGroup(path: string): string {
  const m = /^\/?[^/]*/.exec(path);
  const first = m ? m[0] : path;
  return first === '' || first === '/' ? path || '/' : first.startsWith('/') ? first : `/${first}`;
}

/**
 * The page's content of `src`: O(documents + endpoints + chunks).
 * @param idx the source's ingestion output; undefined when it never ingested (an empty page).
 */
export function docsModel(src: Source, idx: SourceIndexRec | undefined): DocsModel {
  const documents = idx?.documents ?? [];
  const parts: string[][] = documents.map(() => []);
  for (const c of idx?.chunks ?? []) parts[c.d]?.push(c.t);
  const textOf = (d: number): string => parts[d]?.join('\n') ?? '';
  const docIndex = new Map(documents.map((d, i) => [d.id, i]));
  const anchors = new Anchors();
  const anchorOf = new Map<string, string>();

  const overviewAt = documents.findIndex((d) => d.kind === 'overview');
  if (overviewAt !== -1) anchorOf.set(documents[overviewAt].id, 'overview');

  const described = new Set<number>();
  const ops: Array<DocOperation & { tag: string | null }> = [];
  for (const e of idx?.endpoints ?? []) {
    const d = e.documentId === undefined ? undefined : docIndex.get(e.documentId);
    const method = e.method ?? '';
    const path = e.path ?? '';
    const anchor = anchors.take(`${method} ${path}`);
    let text = '';
    let tag: string | null = null;
    if (d !== undefined) {
      const full = textOf(d);
      tag = TAGS_LINE.exec(full)?.[1].split(',')[0].trim() || null;
      text = withoutRepeats(full, [`${method} ${path}`, documents[d].title]);
      if (!described.has(d)) { described.add(d); anchorOf.set(documents[d].id, anchor); }
    }
    ops.push({ anchor, method, path, title: d === undefined ? null : documents[d].title, text, tag });
  }

  const byTag = ops.some((o) => o.tag !== null);
  const groups = new Map<string, DocGroup>();
  for (const { tag, ...op } of ops) {
    const name = byTag ? tag ?? UNTAGGED : pathGroup(op.path);
    let g = groups.get(name);
    if (!g) { g = { name, anchor: '', operations: [] }; groups.set(name, g); }
    g.operations.push(op);
  }
  const ordered = [...groups.values()];
  if (byTag && groups.has(UNTAGGED)) ordered.push(...ordered.splice(ordered.indexOf(groups.get(UNTAGGED)!), 1));
  for (const g of ordered) g.anchor = anchors.take(`group ${g.name}`);

  const others: DocOther[] = [];
  documents.forEach((doc, i) => {
    if (i === overviewAt || described.has(i)) return;
    const anchor = anchors.take(`${doc.kind ?? 'document'} ${doc.title ?? ''}`);
    anchorOf.set(doc.id, anchor);
    others.push({ anchor, kind: doc.kind, title: doc.title ?? '(untitled)', text: textOf(i) });
  });

  return { title: src.name, overview: overviewAt === -1 ? null : withoutRepeats(textOf(overviewAt), [documents[overviewAt].title]), byTag, groups: ordered, others, anchors: anchorOf };
}
