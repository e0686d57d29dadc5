/**
 * The public docs pages (docs/web.md#public-docs): `GET /docs/{slug}`, a published source's
 * documentation, and `GET /docs/{slug}/search?q=`, BM25 over that source's chunks only. No
 * sign-in, no cookie, no script. A source is untrusted: everything taken from it goes through
 * {@link html}, so it renders as text. Unknown, unpublished or disabled → the 404 page, the same
 * for every workspace (docs/security.md#tenant-isolation).
 */
import { html, seg, type Html } from './html.js';
import { pageAnswer, type WebAnswer, type WebCtx } from './context.js';
import { WebError } from './forms.js';
import { docsModel, type DocGroup, type DocOperation } from './docsModel.js';
import { publishedSource } from '../areas/sources/publicDocs.js';
import { searchOneSource } from '../areas/sources/state.js';
import type { Store } from '../store/store.js';
import type { Workspace } from '../domain/workspace.js';
import type { Source } from '../areas/sources/model.js';
import type { SourceIndexRec } from '../ingest/types.js';

/** Most results of a docs search. */
export const DOCS_SEARCH_LIMIT = 20;
/** Longest query read (longer is cut): the API's search takes the same. */
const QUERY_MAX = 500;
/** Characters of a result's text shown under its title. */
const SNIPPET = 280;
/** Up to this many endpoints, the contents list every one; beyond, only the groups (the page stays small). */
const NAV_OPERATIONS = 300;
const HTTP_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE']);

/** The published source of `slug`, or the 404 page. @throws WebError 404 */
function published(ctx: WebCtx, slug: string) {
  const found = publishedSource((ctx.services.store as Store<Workspace>).workspaces.values(), slug);
  if (!found) throw new WebError(404, 'There are no published docs at this address.');
  return found;
}

/** The method as a badge; a class per HTTP method, one for the others (QUERY, RPC…). */
function badge(method: string): Html {
  const m = method.toUpperCase();
  return html`<span class="method m-${HTTP_METHODS.has(m) ? m.toLowerCase() : 'other'}">${m || '—'}</span>`;
}

/** The whole document: top bar with the search box, the contents, and `content`. */
function shell(o: { title: string; name: string; slug: string; q?: string; nav?: Html; content: Html }): Html {
  const home = `/docs/${seg(o.slug)}`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title}</title>
<link rel="stylesheet" href="/assets/style.css">
</head>
<body class="docs-body">
<a class="skip" href="#content">Skip to the content</a>
<header class="top docs-top"><a class="brand" href="${home}">${o.name}</a>
<form class="docs-search" role="search" method="get" action="${home}/search">
<label for="q" class="visually-hidden">Search these docs</label>
<input type="search" id="q" name="q" value="${o.q ?? ''}" maxlength="${QUERY_MAX}" placeholder="Search these docs">
<button type="submit">Search</button></form></header>
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

function operation(op: DocOperation): Html {
  return html`<section class="op" id="${op.anchor}">
<h4>${badge(op.method)} <code class="path">${op.path}</code> <a class="anchor" href="#${op.anchor}" title="Link to this endpoint">#</a></h4>
${op.title ? html`<p class="op-title">${op.title}</p>` : ''}
${op.text ? html`<div class="doc-text">${op.text}</div>` : html`<p class="hint">No documentation for this endpoint.</p>`}
</section>`;
}

function group(g: DocGroup, byTag: boolean): Html {
  return html`<section class="group" aria-labelledby="${g.anchor}">
<h3 id="${g.anchor}">${byTag ? g.name : html`<code>${g.name}</code>`}</h3>
${g.operations.map(operation)}
</section>`;
}

/**
 * The whole docs page of `src` (served at `/docs/{slug}`, the slug taken from `src`): the
 * source's title, overview, endpoints grouped with method badges and anchors, each operation's
 * documentation, and the other documents. O(size of the ingestion output); pure, so
 * bench/public-docs.ts can time it.
 */
export function docsPageHtml(src: Source, idx: SourceIndexRec | undefined): Html {
  const m = docsModel(src, idx);
  const count = m.groups.reduce((n, g) => n + g.operations.length, 0);
  const nav = html`<nav class="toc" aria-label="Contents">
<p class="toc-title">Contents</p>
<ul>${m.overview !== null ? html`<li><a href="#overview">Overview</a></li>` : ''}
${m.groups.map((g) => html`<li><a href="#${g.anchor}">${g.name}</a>
${count <= NAV_OPERATIONS ? html`<ul>${g.operations.map((op) => html`<li><a href="#${op.anchor}">${badge(op.method)} ${op.title ?? op.path}</a></li>`)}</ul>` : ''}</li>`)}
${m.others.length ? html`<li><a href="#documents">Other documents</a></li>` : ''}</ul>
</nav>`;
  const content = html`<h1>${m.title}</h1>
${m.overview !== null ? html`<section id="overview" aria-labelledby="overview-h"><h2 id="overview-h">Overview</h2><div class="doc-text">${m.overview}</div></section>` : ''}
${count ? html`<section aria-labelledby="endpoints"><h2 id="endpoints">Endpoints <span class="hint">${count}</span></h2>
${m.groups.map((g) => group(g, m.byTag))}</section>` : ''}
${m.others.length ? html`<section aria-labelledby="documents"><h2 id="documents">Other documents</h2>
${m.others.map((d) => html`<section class="op" id="${d.anchor}" aria-labelledby="${d.anchor}-h"><h3 id="${d.anchor}-h">${d.title} ${d.kind ? html`<span class="tag">${d.kind}</span>` : ''}</h3><div class="doc-text">${d.text}</div></section>`)}</section>` : ''}
${!count && !m.others.length && m.overview === null ? html`<p class="empty">This source has no documentation yet.</p>` : ''}`;
  return shell({ title: `${m.title} · API documentation`, name: m.title, slug: src.publicDocs.slug ?? '', nav, content });
}

/** GET /docs/{slug}: {@link docsPageHtml} of the published source; 404 when not published. @throws WebError 404 */
export function getDocs(ctx: WebCtx, slug: string): WebAnswer {
  const { src, idx } = published(ctx, slug);
  return pageAnswer(200, docsPageHtml(src, idx));
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
export function getDocsSearch(ctx: WebCtx, slug: string): WebAnswer {
  const { ws, src, idx } = published(ctx, slug);
  const q = (ctx.query.get('q') ?? '').trim().slice(0, QUERY_MAX);
  const home = `/docs/${seg(src.publicDocs.slug!)}`;
  const hits = q === '' ? [] : searchOneSource(ws.sources.search, src.id, q, DOCS_SEARCH_LIMIT);
  const anchors = docsModel(src, idx).anchors;
  const results = q === ''
    ? html`<p>Type words to look for in these docs.</p>`
    : hits.length === 0
      ? html`<p class="empty">Nothing in these docs matches <strong>${q}</strong>.</p>`
      : html`<p class="hint">${hits.length} ${hits.length === 1 ? 'result' : 'results'}, best first.</p>
<ol class="results">${hits.map((h) => html`<li><a href="${home}#${anchors.get(h.documentId) ?? ''}">${h.title ?? '(untitled)'}</a><p>${snippet(h.text)}</p></li>`)}</ol>`;
  return pageAnswer(200, shell({ title: `Search: ${q} · ${src.name}`, name: src.name, slug: src.publicDocs.slug!, q, content: html`<h1>Search${q ? html` for “${q}”` : ''}</h1>
${results}
<p><a href="${home}">Back to the docs</a></p>` }));
}
