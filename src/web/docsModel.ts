/**
 * What a public docs page shows (docs/web.md#public-docs), taken from a source's stored
 * ingestion output (`source_index`: documents, endpoints, chunks): the overview, the
 * operations grouped by tag (when the source's operations have tags) or by the first segment
 * of their path, the other documents, an anchor for every document, and how they are split over
 * pages. Plain data: the page (src/web/docsPage.ts) escapes all of it.
 */
import type { SourceIndexRec } from '../ingest/types.js';
import { namedSchema, type NamedSchema } from './docsSchema.js';

/**
 * One endpoint with its document: `text` is the document's text as ingestion stored it (chunks
 * joined); `page` the docs page (1-based, {@link DocsModel.pages}) it is on.
 */
export interface DocOperation {
  anchor: string; method: string; path: string; title: string | null; text: string; page: number;
  /** The kind of its document (`operation`, `request`, `service`…), null without one. */
  kind: string | null;
}
/** Operations under one heading: a tag, or a path such as `/pets`; `page`: where the group starts. */
export interface DocGroup { name: string; anchor: string; operations: DocOperation[]; page: number }
/** A document that is not an operation's (a schema, a section, a page…). */
export interface DocOther { anchor: string; kind: string | null; title: string; text: string; page: number }

/** What one docs page holds: the operations of the groups on it (a group may go on over pages), and other documents. */
export interface DocsPart {
  groups: Array<{ group: DocGroup; operations: DocOperation[]; continued: boolean }>;
  others: DocOther[];
  /** Whether the other documents began on an earlier page. */
  othersContinued: boolean;
}

export interface DocsModel {
  title: string;
  /** The text of the source's `overview` document, or null. */
  overview: string | null;
  /** Whether `groups` are tags (else paths). */
  byTag: boolean;
  groups: DocGroup[];
  others: DocOther[];
  /** Document id → the anchor of its section and the page it is on (search results link there). */
  links: Map<string, { anchor: string; page: number }>;
  /** The pages, in order: page 1 is `/docs/{slug}`, page N `/docs/{slug}?page=N` (docs/web.md#public-docs). */
  pages: DocsPart[];
  /** Named schemas (OpenAPI `schema`, gRPC `message`, GraphQL `type` documents) by name, for the schema trees. */
  schemas: Map<string, NamedSchema>;
  /** The API's base URL as the source names it, or null. */
  serverUrl: string | null;
}

/** Most sections (operations and other documents) on one docs page. */
export const PAGE_SECTIONS = 300;
/** Characters of text past which a page takes no further section (it always takes one). */
export const PAGE_CHARS = 256 * 1024;

/** What the pages take from a source record: its name (the title) and slug (the links). */
export interface DocsSource { name: string; publicDocs: { slug: string | null } }

/** Operations without a tag, when the others have tags. */
export const UNTAGGED = 'Other operations';
const TAGS_LINE = /^Tags: (.+)$/m;

/** `text` as an anchor: lower-case letters, digits and `-`, at most 80 characters, never empty. */
function slugify(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 80) || 'section';
}

/**
 * Hands out anchors, each unique among a source's pages, GitHub-style: `x`, then `x-1`, `x-2`…
 * Each base keeps the last suffix it gave, so a repeated heading costs O(1), not a walk over its
 * earlier copies; a suffix another heading already took (`x-1` written as such) is skipped, and
 * each taken anchor is skipped at most once (only base `x` makes `x-N`): O(headings) in all.
 */
class Anchors {
  private readonly used = new Set<string>(['content', 'endpoints', 'overview', 'documents']);
  private readonly last = new Map<string, number>();
  take(text: string): string {
    const base = slugify(text);
    let a = base;
    if (this.used.has(a)) {
      let n = this.last.get(base) ?? 0;
      do a = `${base}-${++n}`; while (this.used.has(a));
      this.last.set(base, n);
    }
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
export function docsModel(src: DocsSource, idx: SourceIndexRec | undefined): DocsModel {
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
    ops.push({ anchor, method, path, title: d === undefined ? null : documents[d].title, text, tag, page: 1,
      kind: d === undefined ? null : documents[d].kind });
  }

  const byTag = ops.some((o) => o.tag !== null);
  const groups = new Map<string, DocGroup>();
  for (const { tag, ...op } of ops) {
    const name = byTag ? tag ?? UNTAGGED : pathGroup(op.path);
    let g = groups.get(name);
    if (!g) { g = { name, anchor: '', operations: [], page: 1 }; groups.set(name, g); }
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
    others.push({ anchor, kind: doc.kind, title: doc.title ?? '(untitled)', text: textOf(i), page: 1 });
  });

  const overview = overviewAt === -1 ? null : withoutRepeats(textOf(overviewAt), [documents[overviewAt].title]);
  const pages = paginate(overview, ordered, others);
  const links = new Map<string, { anchor: string; page: number }>();
  const pageOf = new Map<string, number>();
  for (const g of ordered) for (const op of g.operations) pageOf.set(op.anchor, op.page);
  for (const d of others) pageOf.set(d.anchor, d.page);
  for (const [id, anchor] of anchorOf) links.set(id, { anchor, page: pageOf.get(anchor) ?? 1 });
  const schemas = new Map<string, NamedSchema>();
  documents.forEach((doc, i) => {
    if (doc.title && (doc.kind === 'schema' || doc.kind === 'message' || doc.kind === 'type')) {
      schemas.set(doc.title, namedSchema(doc.kind, textOf(i)));
      // gRPC messages are referred to by their short name as well as their full one.
      const short = doc.title.slice(doc.title.lastIndexOf('.') + 1);
      if (!schemas.has(short)) schemas.set(short, schemas.get(doc.title)!);
    }
  });
  return { title: src.name, overview, byTag, groups: ordered, others, links, pages, schemas,
    serverUrl: idx?.serverUrl ?? null };
}

/**
 * Splits the sections over pages in their order: a page takes sections until it holds
 * {@link PAGE_SECTIONS} of them or {@link PAGE_CHARS} characters of text (the overview counts
 * on page 1), and always at least one. Sets each section's and group's `page`. O(sections).
 */
function paginate(overview: string | null, groups: DocGroup[], others: DocOther[]): DocsPart[] {
  const pages: DocsPart[] = [];
  let part: DocsPart = { groups: [], others: [], othersContinued: false };
  let sections = 0;
  let chars = overview?.length ?? 0;
  /** The page number for a section of `size` characters, starting a new page when this one is full. */
  const place = (size: number): number => {
    if (sections > 0 && (sections >= PAGE_SECTIONS || chars + size > PAGE_CHARS)) {
      pages.push(part);
      part = { groups: [], others: [], othersContinued: false };
      sections = 0;
      chars = 0;
    }
    sections++;
    chars += size;
    return pages.length + 1;
  };
  for (const g of groups) {
    let slice: DocsPart['groups'][number] | undefined;
    g.operations.forEach((op, i) => {
      const before = pages.length;
      op.page = place(op.text.length + op.path.length + (op.title?.length ?? 0));
      if (i === 0) g.page = op.page;
      if (!slice || pages.length !== before) {
        slice = { group: g, operations: [], continued: i > 0 };
        part.groups.push(slice);
      }
      slice.operations.push(op);
    });
  }
  others.forEach((d, i) => {
    d.page = place(d.text.length + d.title.length);
    if (part.others.length === 0) part.othersContinued = i > 0;
    part.others.push(d);
  });
  pages.push(part);
  return pages;
}
