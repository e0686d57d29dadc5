/**
 * The public docs pages (docs/web.md#public-docs): `GET /docs/{slug}[?page=N]`, a published
 * source's documentation, and `GET /docs/{slug}/search?q=`, BM25 over that source's chunks only. No
 * sign-in, no cookie, no script. A source is untrusted: everything taken from it goes through
 * {@link html}, so it renders as text. Unknown, unpublished or disabled → the 404 page, the same
 * for every workspace (docs/security.md#tenant-isolation).
 */
import { html, seg, type Html } from './html.js';
import { pageAnswer, type WebAnswer, type WebCtx, type WebServices } from './context.js';
import { WebError } from './forms.js';
import { docsModel } from './docsModel.js';
import type { DocOperation, DocOther, DocsModel, DocsPart, DocsSource } from './docsModel.js';
import { DocsCache, type SharedPage } from './docsCache.js';
import { renderDocs } from './docsRender.js';
import { isServed, publishedSource } from '../areas/sources/publicDocs.js';
import { markdown } from './markdown.js';
import { operationHtml, type OpContext } from './docsOperation.js';
import { namedSchema, schemaTree } from './docsSchema.js';
import { searchOneSource } from '../areas/sources/state.js';
import { WorkspaceMovedError, type Store } from '../store/store.js';
import type { Workspace } from '../domain/workspace.js';
import type { SourceIndexRec } from '../ingest/types.js';

/** Most results of a docs search. */
export const DOCS_SEARCH_LIMIT = 20;
/** Longest query read (longer is cut): the API's search takes the same. */
const QUERY_MAX = 500;
/** Characters of a result's text shown under its title. */
const SNIPPET = 280;
/** Up to this many endpoints, the contents list every one; beyond, only the groups (the page stays small). */
const NAV_OPERATIONS = 300;
/** Most groups the contents list (a source grouped by path can have thousands); the pager reaches the rest. */
const NAV_GROUPS = 300;
const HTTP_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE']);

/** The cache of rendered docs of each server (its services): made on the first docs request. */
const caches = new WeakMap<WebServices, DocsCache>();
function docsCacheOf(services: WebServices): DocsCache {
  let c = caches.get(services);
  if (!c) { c = new DocsCache((src, idx) => renderDocs(src, idx, docsPagesHtml)); caches.set(services, c); }
  return c;
}

/** The refusal for a slug no served workspace publishes: 503 when its workspace moved to another cell, else 404. */
function notPublished(ctx: WebCtx, slug: string): Error {
  const moved = (ctx.services.store as Store<Workspace>).movedWith('slugs', slug);
  if (!moved) ctx.services.notOwned?.('unknown_slug');
  return moved ? new WorkspaceMovedError(moved.id, false)
    : new WebError(404, 'There are no published docs at this address.');
}

/** The published source of `slug`, or the 404 page. @throws WebError 404 */
function published(ctx: WebCtx, slug: string) {
  const found = publishedSource((ctx.services.store as Store<Workspace>).workspaces.values(), slug);
  if (!found) throw notPublished(ctx, slug);
  return found;
}

/** The method as a badge; a class per HTTP method, one for the others (QUERY, RPC…). */
function badge(method: string): Html {
  const m = method.toUpperCase();
  return html`<span class="method m-${HTTP_METHODS.has(m) ? m.toLowerCase() : 'other'}">${m || '—'}</span>`;
}

/** The whole document: top bar with the search box (when `slug` is set), the contents, and `content`. */
function shell(o: { title: string; name: string; slug: string | null; q?: string; nav?: Html; content: Html }): Html {
  const home = o.slug === null ? '/docs' : `/docs/${seg(o.slug)}`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title}</title>
<link rel="stylesheet" href="/assets/style.css">
<script src="/assets/copy.js" defer></script>
</head>
<body class="docs-body">
<a class="skip" href="#content">Skip to the content</a>
<header class="top docs-top"><a class="brand" href="${home}">${o.name}</a>
${o.slug === null ? '' : html`<form class="docs-search" role="search" method="get" action="${home}/search">
<label for="q" class="visually-hidden">Search these docs</label>
<input type="search" id="q" name="q" value="${o.q ?? ''}" maxlength="${QUERY_MAX}" placeholder="Search these docs">
<button type="submit">Search</button></form>`}</header>
<div class="docs${o.nav ? '' : ' docs-single'}">
${o.nav ?? ''}
<main id="content" tabindex="-1">
${o.content}
</main>
</div>
</body>
</html>
`;
}

function operation(op: DocOperation, ctx: OpContext): Html {
  return html`<section class="op" id="${op.anchor}">
<h4>${badge(op.method)} <code class="path">${
  op.path}</code> <a class="anchor" href="#${op.anchor}" title="Link to this endpoint">#</a></h4>
${op.title ? html`<p class="op-title">${op.title}</p>` : ''}
${op.text ? operationHtml(op, ctx, op.anchor) : html`<p class="hint">No documentation for this endpoint.</p>`}
</section>`;
}

/** A group's operations on one page; a group that began on an earlier page repeats its name, without its anchor. */
function group(part: DocsPart['groups'][number], byTag: boolean, ctx: OpContext): Html {
  const g = part.group;
  const name = byTag ? g.name : html`<code>${g.name}</code>`;
  return part.continued
    ? html`<section class="group"><h3>${name} <span class="hint">(continued)</span></h3>
${part.operations.map((op) => operation(op, ctx))}
</section>`
    : html`<section class="group" aria-labelledby="${g.anchor}">
<h3 id="${g.anchor}">${name}</h3>
${part.operations.map((op) => operation(op, ctx))}
</section>`;
}

/** The address of page `page` (1-based) of the docs at `home`. */
const pageHref = (home: string, page: number): string => (page === 1 ? home : `${home}?page=${page}`);

/** The pages' links (when there is more than one): every page by number, the current one marked. */
function pager(home: string, count: number, current: number): Html {
  if (count === 1) return html``;
  const pages = Array.from({ length: count }, (_, i) => i + 1);
  return html`<nav class="pager" aria-label="Pages"><ul>
${current > 1 ? html`<li><a rel="prev" href="${pageHref(home, current - 1)}">Previous page</a></li>` : ''}
${pages.map((n) => (n === current ? html`<li><span aria-current="page">${n}</span></li>` : html`<li><a href="${pageHref(home, n)}">${n}</a></li>`))}
${current < count ? html`<li><a rel="next" href="${pageHref(home, current + 1)}">Next page</a></li>` : ''}
</ul></nav>`;
}

/** Longest label of an entry in the contents; a longer title is cut at a word boundary (the page shows it whole). */
const NAV_LABEL = 72;
function navLabel(title: string): string {
  if (title.length <= NAV_LABEL) return title;
  const cut = title.lastIndexOf(' ', NAV_LABEL);
  return `${title.slice(0, cut > NAV_LABEL / 2 ? cut : NAV_LABEL)}…`;
}

/** The overview's text with its first lines (version, format) kept as lines: each ends in a hard break. */
function overviewMarkdown(text: string): string {
  const blank = text.indexOf('\n\n');
  const head = blank === -1 ? text : text.slice(0, blank);
  return head.split('\n').join('  \n') + (blank === -1 ? '' : text.slice(blank));
}

/** The contents: every group (at most {@link NAV_GROUPS}), each endpoint up to {@link NAV_OPERATIONS}. */
function contents(m: DocsModel, count: number, href: (page: number, anchor: string) => string, pages: Html): Html {
  const shown = m.groups.slice(0, NAV_GROUPS);
  const more = m.groups.length - shown.length;
  const entry = (op: DocOperation) =>
    html`<li><a href="${href(op.page, op.anchor)}">${badge(op.method)} ${navLabel(op.title ?? op.path)}</a></li>`;
  return html`<nav class="toc" aria-label="Contents">
<p class="toc-title">Contents</p>
<ul>${m.overview !== null ? html`<li><a href="${href(1, 'overview')}">Overview</a></li>` : ''}
${shown.map((g) => html`<li><a href="${href(g.page, g.anchor)}">${g.name}</a>
${count <= NAV_OPERATIONS ? html`<ul>${g.operations.map(entry)}</ul>` : ''}</li>`)}
${more > 0 ? html`<li class="hint">and ${more} more groups (see the pages)</li>` : ''}
${m.others.length ? html`<li><a href="${href(m.others[0].page, 'documents')}">Other documents</a></li>` : ''}</ul>
${pages}
</nav>`;
}

/** A schema-like document as its description and property tree; any other as Markdown. */
function otherBody(d: DocOther): Html {
  if (d.kind === 'schema' || d.kind === 'message' || d.kind === 'type') {
    const n = namedSchema(d.kind, d.text);
    if (n.props.length || n.type) {
      return html`${n.description ? html`<div class="md">${markdown(n.description, { headingBase: 5 })}</div>` : ''}\
${n.type ? html`<p class="schema-type">Type: <code class="type">${n.type}</code></p>` : ''}${schemaTree(n.props)}`;
    }
  }
  return html`<div class="md">${markdown(d.text, { headingBase: 4 })}</div>`;
}

/** The other documents on one page; where they began on an earlier page, the heading has no anchor. */
function otherDocuments(part: DocsPart): Html {
  const doc = (d: DocOther) => html`<section class="op" id="${d.anchor}" aria-labelledby="${d.anchor}-h">\
<h3 id="${d.anchor}-h">${d.title} ${d.kind ? html`<span class="tag">${d.kind}</span>` : ''}</h3>\
${otherBody(d)}</section>`;
  const heading = part.othersContinued
    ? html`<section><h2>Other documents <span class="hint">(continued)</span></h2>`
    : html`<section aria-labelledby="documents"><h2 id="documents">Other documents</h2>`;
  return html`${heading}
${part.others.map(doc)}</section>`;
}

/**
 * Page `n` (1-based) of the docs of a model: the contents (linking to the page each entry is
 * on), the sections of page `n`, and the pager.
 */
function docsPageOf(m: DocsModel, slug: string, n: number): Html {
  const home = `/docs/${seg(slug)}`;
  const href = (page: number, anchor: string): string => `${page === n ? '' : pageHref(home, page)}#${anchor}`;
  const count = m.groups.reduce((k, g) => k + g.operations.length, 0);
  const part = m.pages[n - 1];
  const ctx: OpContext = { schemas: m.schemas, serverUrl: m.serverUrl, trees: new Map() };
  const ops = part.groups.reduce((k, g) => k + g.operations.length, 0);
  const pages = pager(home, m.pages.length, n);
  const overview = n === 1 && m.overview !== null
    ? html`<section id="overview" aria-labelledby="overview-h"><h2 id="overview-h">Overview</h2>\
<div class="md">${markdown(overviewMarkdown(m.overview))}</div></section>`
    : '';
  const empty = !count && !m.others.length && m.overview === null;
  const of = n > 1 ? html` <span class="hint">page ${n} of ${m.pages.length}</span>` : '';
  const content = html`<h1>${m.title}${of}</h1>
${overview}
${ops ? html`<section aria-labelledby="endpoints"><h2 id="endpoints">Endpoints <span class="hint">${count}</span></h2>
${part.groups.map((g) => group(g, m.byTag, ctx))}</section>` : ''}
${part.others.length ? otherDocuments(part) : ''}
${empty ? html`<p class="empty">This source has no documentation yet.</p>` : ''}
${pages}`;
  const title = `${m.title} · API documentation${n > 1 ? ` · page ${n}` : ''}`;
  return shell({ title, name: m.title, slug, nav: contents(m, count, href, pages), content });
}

/**
 * Every page of the docs of `src` (served at `/docs/{slug}` and `/docs/{slug}?page=N`, the slug
 * taken from `src`), and where each document's section is (search results link there): the
 * source's title, overview, endpoints grouped with method badges and anchors, each operation's
 * documentation, and the other documents, split as {@link docsModel} paginates them.
 * O(size of the ingestion output); pure, so it runs on the render worker (src/web/docsRender.ts).
 */
export function docsPagesHtml(src: DocsSource, idx: SourceIndexRec | undefined):
  { pages: Html[]; links: DocsModel['links'] } {
  const m = docsModel(src, idx);
  const slug = src.publicDocs.slug ?? '';
  return { pages: m.pages.map((_, i) => docsPageOf(m, slug, i + 1)), links: m.links };
}

/** The page number asked for by `?page=`: 1 without one; null when it is not a number 1–99999. */
function pageNumber(ctx: WebCtx): number | null {
  const given = ctx.query.get('page');
  if (given === null) return 1;
  return /^[1-9][0-9]{0,4}$/.test(given) ? Number(given) : null;
}

/**
 * GET /docs/{slug}[?page=N]: page N (default 1) of the published source's docs, from the cache
 * of rendered pages (src/web/docsCache.ts): one shared buffer per page and source version.
 * @throws WebError 404 when not published, or there is no page N
 */
export async function getDocs(ctx: WebCtx, slug: string): Promise<SharedPage> {
  const cache = docsCacheOf(ctx.services);
  const found = publishedSource((ctx.services.store as Store<Workspace>).workspaces.values(), slug);
  if (!found) { cache.drop(slug); throw notPublished(ctx, slug); }
  const n = pageNumber(ctx);
  const rendered = await cache.rendered(slug, found.src, found.idx);
  const page = n === null ? undefined : rendered.pages[n - 1];
  if (!page) throw new WebError(404, 'These docs have no such page.');
  return { kind: 'shared', body: page.body, etag: page.etag };
}

/** The first {@link SNIPPET} characters of `raw` on one line, cut at a space where one is near. */
function snippet(raw: string): string {
  const text = raw.replace(/\s+/g, ' ').trim();
  if (text.length <= SNIPPET) return text;
  const cut = text.lastIndexOf(' ', SNIPPET);
  return `${text.slice(0, cut > SNIPPET / 2 ? cut : SNIPPET)}…`;
}

/**
 * GET /docs/{slug}/search?q=: the best {@link DOCS_SEARCH_LIMIT} chunks of this source for `q`
 * (BM25 over its chunks only), each linking to its document's anchor on the docs page. An
 * empty `q` shows the search box. 404 when not published.
 */
export async function getDocsSearch(ctx: WebCtx, slug: string): Promise<WebAnswer> {
  const { ws, src, idx } = published(ctx, slug);
  const q = (ctx.query.get('q') ?? '').trim().slice(0, QUERY_MAX);
  const home = `/docs/${seg(src.publicDocs.slug!)}`;
  const hits = q === '' ? [] : searchOneSource(ws.sources.search, src.id, q, DOCS_SEARCH_LIMIT);
  // Where each hit's section is comes from the rendered pages of this version (cached), never
  // from building the model again per request.
  const links = hits.length ? await (await docsCacheOf(ctx.services).rendered(slug, src, idx)).links() : undefined;
  const link = (id: string): string => {
    const at = links?.get(id);
    return at ? `${pageHref(home, at.page)}#${at.anchor}` : home;
  };
  const results = q === ''
    ? html`<p>Type words to look for in these docs.</p>`
    : hits.length === 0
      ? html`<p class="empty">Nothing in these docs matches <strong>${q}</strong>.</p>`
      : html`<p class="hint">${hits.length} ${hits.length === 1 ? 'result' : 'results'}, best first.</p>
<ol class="results">${hits.map((h) =>
  html`<li><a href="${link(h.documentId)}">${h.title ?? '(untitled)'}</a><p>${snippet(h.text)}</p></li>`)}</ol>`;
  const nav = html`<nav class="toc" aria-label="Contents"><p class="toc-title">Search</p><ul>
<li><a href="${home}">Contents of the docs</a></li>
${hits.map((h) => html`<li><a href="${link(h.documentId)}">${h.title ?? '(untitled)'}</a></li>`)}</ul></nav>`;
  return pageAnswer(200, shell({ title: `Search: ${q} · ${src.name}`, name: src.name, slug: src.publicDocs.slug!, q, nav,
    content: html`<h1>Search${q ? html` for “${q}”` : ''}</h1>
${results}
<p><a href="${home}">Back to the docs</a></p>` }));
}

/**
 * GET /docs: the server's published docs (enabled, published, with a slug), each with its title, the
 * first paragraph of its overview and its link, by title. O(sources on the server).
 */
export function getDocsIndex(ctx: WebCtx): WebAnswer {
  const list: Array<{ name: string; slug: string; about: string }> = [];
  for (const ws of (ctx.services.store as Store<Workspace>).workspaces.values()) {
    for (const src of ws.db.table('source').values()) {
      if (!isServed(src)) continue;
      const idx = ws.db.get('source_index', src.id);
      const at = idx?.documents.findIndex((d) => d.kind === 'overview') ?? -1;
      const text = at === -1 ? '' : idx!.chunks.find((c) => c.d === at)?.t ?? '';
      list.push({ name: src.name, slug: src.publicDocs.slug!, about: aboutOf(text) });
    }
  }
  list.sort((a, b) => a.name.localeCompare(b.name) || a.slug.localeCompare(b.slug));
  return pageAnswer(200, shell({ title: 'API documentation', name: 'API documentation', slug: null,
    content: html`<h1>API documentation</h1>
${list.length ? html`<ul class="docs-list">${list.map((d) => html`<li class="card"><h2><a href="/docs/${seg(d.slug)}">${
  d.name}</a></h2>${d.about ? html`<p>${d.about}</p>` : ''}<p class="hint">/docs/${d.slug}</p></li>`)}</ul>`
    : html`<p class="empty">No docs are published on this server yet.</p>`}` }));
}

/** The first paragraph of an overview's text after its title and version lines, cut at a word ({@link SNIPPET}). */
function aboutOf(text: string): string {
  const paras: string[] = [''];
  for (const line of text.split('\n')) {
    if (line.trim() === '') { if (paras[paras.length - 1] !== '') paras.push(''); } else paras[paras.length - 1] += `${line}\n`;
  }
  const first = paras.slice(1).find((p) => p && !/^(Servers|Tags|Base URL|Folders):?/.test(p.trim())) ?? '';
  return snippet(first.replace(/[*_`#>]/g, ''));
}
