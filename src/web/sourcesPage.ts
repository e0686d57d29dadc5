/**
 * The sources page (docs/web.md#sources-page): the signed-in user's workspace's sources with type,
 * status, counts and last error; adding one (pasted text or a URL, ingested by the API's own create
 * operation, src/web/operations.ts) and publishing each one's public docs under a slug
 * (docs/web.md#public-docs). Slugs follow `PATCH /api/v1/sources/{id}`'s rules (src/areas/sources/publicDocs.ts):
 * a slug taken on the server is answered 409, a source not ready or without documents is refused. Another
 * workspace's source is never listed, and its forms answer 404 like an id that does not exist.
 */
import { html, seg, type Html } from './html.js';
import { csrfField, errorPage, message, page, when } from './layout.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import { WebError } from './forms.js';
import type { SignedIn } from './sessions.js';
import { ApiError } from '../http/errors.js';
import { isServed, isSlug, patchPublicDocs, publishRefusal } from '../areas/sources/publicDocs.js';
import { iso } from '../core/clock.js';
import type { Source } from '../areas/sources/model.js';
import type { Store } from '../store/store.js';
import type { Workspace } from '../domain/workspace.js';

/** A slug typed into a row's form, shown again with a problem. */
interface Draft { id: string; slug: string }
/** What the add form was sent with, shown again with a problem. */
export interface AddDraft { name: string; url: string; content: string }

/** The largest add-source form (bytes, URL-encoded): a pasted document of up to 2,000,000 characters fits. */
export const ADD_FORM_LIMIT = 8 * 1024 * 1024;

/** The session's workspace, or the 503 page when its log is offline. @throws WebError 503 */
export function workspaceOf(ctx: WebCtx, s: SignedIn): Workspace {
  const ws = (ctx.services.store as Store<Workspace>).workspace(s.session.workspaceId);
  if (!ws) throw new WebError(503,
    'This workspace is offline (its log needs a repair); nothing can be shown or changed.');
  return ws;
}

/** The 404 page of a source that is not the workspace's (or does not exist). */
export const noSource = (ctx: WebCtx, s: SignedIn): WebAnswer =>
  pageAnswer(404, errorPage(404, 'There is no such source in this workspace.', ctx.viewer(s)));

/** A suggested slug from a name: lower-case letters, digits and `-`, 2–63 characters. */
function suggest(name: string): string {
  const s = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63).replace(/-+$/, '');
  return s.length >= 2 ? s : '';
}

/** The public-docs cell of a source: its `/docs/` link and Unpublish, or the slug field and Publish. */
export function publishCell(csrf: string, src: Source, draft: Draft | undefined): Html {
  const pd = src.publicDocs;
  if (isServed(src)) {
    return html`<p><a href="/docs/${seg(pd.slug!)}">/docs/${pd.slug}</a></p>
<form method="post" action="/settings/sources/${seg(src.id)}/unpublish">${
  csrfField(csrf)}<button type="submit" class="secondary">Unpublish</button></form>`;
  }
  const value = draft?.id === src.id ? draft.slug : pd.slug ?? suggest(src.name);
  const field = `slug-${src.id}`;
  return html`<form class="publish" method="post" action="/settings/sources/${seg(src.id)}/publish">${csrfField(csrf)}
<label for="${field}" class="hint">Address: /docs/</label>
<input type="text" id="${field}" name="slug" value="${value}" required minlength="2" maxlength="63"
  pattern="[a-z0-9][a-z0-9\\-]{1,62}" spellcheck="false">
<button type="submit">Publish</button></form>`;
}

/** The class of a status word: red for `failed`, green for `ready`. */
export const statusClass = (st: string): string => st === 'failed' ? 'status-revoked' : st === 'ready'
  ? 'status-active' : '';

const HEADS = ['Name', 'Type', 'Status', 'Documents', 'Endpoints', 'Chunks', 'Last error', 'Updated', 'Public docs'];

function sourceRows(ws: Workspace, csrf: string, draft: Draft | undefined): Html {
  const sources = [...ws.db.table('source').values()].sort((a, b) =>
    (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : -1));
  if (sources.length === 0) return html`<p class="empty">This workspace has no sources yet. Add one below, or
  with <code>POST /api/v1/sources</code>.</p>`;
  return html`<table class="stack">
<thead><tr>${HEADS.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>
${sources.map((src) => {
    const idx = ws.db.get('source_index', src.id);
    return html`<tr id="source-${src.id}">
<td data-label="Name"><a href="/settings/sources/${seg(src.id)}">${src.name}</a>${
  src.inputUrl ? html`<br><span class="hint">${src.inputUrl}</span>` : ''}</td>
<td data-label="Type"><code>${src.type}</code></td>
<td data-label="Status"><span class="${statusClass(src.status)}">${src.status}</span></td>
<td data-label="Documents">${idx?.documents.length ?? 0}</td><td data-label="Endpoints">${
  idx?.endpoints.length ?? 0}</td><td data-label="Chunks">${idx?.chunks.length ?? 0}</td>
<td data-label="Last error">${src.error ?? html`<span class="hint">—</span>`}</td>
<td data-label="Updated">${when(src.updatedAt)}</td>
<td data-label="Public docs">${publishCell(csrf, src, draft)}</td>
</tr>`;
  })}
</tbody></table>`;
}

function addForm(csrf: string, d: AddDraft): Html {
  return html`<form class="card" method="post" action="/settings/sources">
${csrfField(csrf)}
<label for="url">URL <span class="hint">fetched now and by each rescan; its type is detected</span></label>
<input type="text" id="url" name="url" maxlength="2000" value="${d.url}" inputmode="url" spellcheck="false">
<label for="content">Or paste the document <span class="hint">OpenAPI, Postman, GraphQL, AsyncAPI, proto, WSDL,
  JSON, Markdown or text; the type is detected</span></label>
<textarea id="content" name="content" rows="8" spellcheck="false">${d.content}</textarea>
<label for="name">Name <span class="hint">optional; by default the document's own title</span></label>
<input type="text" id="name" name="name" maxlength="200" value="${d.name}">
<div class="actions"><button type="submit">Add source</button></div>
</form>`;
}

/** The sources page with `status`; `problem` above the list (publishing) or above the add form (`addProblem`). */
export function sourcesPage(ctx: WebCtx, s: SignedIn, status: number, o: { problem?: string; notice?: Html;
  draft?: Draft; addProblem?: string; add?: AddDraft } = {}): WebAnswer {
  const ws = workspaceOf(ctx, s);
  const name = ctx.services.store.workspaceRec(s.session.workspaceId)?.name ?? '';
  return pageAnswer(status, page({ title: 'Sources', viewer: ctx.viewer(s), current: '/settings/sources',
    content: html`<h1>Sources</h1>
<p class="hint">Workspace <strong>${name}</strong>. Publishing a source serves its documentation to anyone,
  without sign-in, at <code>/docs/{slug}</code>; a slug is unique on this server.</p>
${o.notice ? message('ok', o.notice) : ''}
${o.problem ? message('error', o.problem) : ''}
${sourceRows(ws, s.csrf, o.draft)}
<h2 id="add">Add a source</h2>
${o.addProblem ? message('error', o.addProblem) : ''}
${addForm(s.csrf, o.add ?? { name: '', url: '', content: '' })}` }));
}

/** The source `id` of `ws`; another workspace's is never found (each workspace has its own log). */
export function ownSource(ws: Workspace, id: string): Source | undefined {
  return ws.db.get('source', id);
}

/** GET /settings/sources: the list (`?published=ID`, `?unpublished=ID`, `?deleted=1` say what was just done). */
export function getSources(ctx: WebCtx): WebAnswer {
  const s = ctx.requireSession();
  const ws = workspaceOf(ctx, s);
  const pub = ctx.query.get('published');
  const unpub = ctx.query.get('unpublished');
  const p = pub ? ownSource(ws, pub) : undefined;
  const u = unpub ? ownSource(ws, unpub) : undefined;
  const notice = p && isServed(p) ? html`<strong>${p.name}</strong> is published at <a href="/docs/${
    seg(p.publicDocs.slug!)}">/docs/${p.publicDocs.slug}</a>.`
    : u && !isServed(u) ? html`<strong>${u.name}</strong> is no longer published.`
      : ctx.query.get('deleted') === '1' ? html`The source is deleted, with its documents.` : undefined;
  return sourcesPage(ctx, s, 200, { notice });
}

/** Writes `next` as source `id` of `ws`, durable before this resolves. */
async function save(ws: Workspace, next: Source): Promise<void> {
  const tx = ws.db.begin();
  tx.put('source', next.id, next);
  await ws.db.commit(tx);
}

/** The page's sentence for a source that may not be published (docs/web.md#sources-page). */
export function refusalText(r: NonNullable<ReturnType<typeof publishRefusal>>): string {
  return r.why === 'empty' ? 'This source cannot be published: it has no documents.'
    : `This source cannot be published: its status is ${r.status}, not ready. Fix it and rescan it first.`;
}

/**
 * POST /settings/sources/{id}/publish (`slug`): enables and publishes the source's docs under
 * `slug`; 303 to the list. 422 with the form for a malformed slug, 409 when another source of
 * the server has it or the source is not ready or has no documents, 404 for a source not the workspace's.
 */
export async function postPublish(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  const form = await ctx.form('session');
  const ws = workspaceOf(ctx, s);
  const src = ownSource(ws, id);
  if (!src) return noSource(ctx, s);
  const slug = (form.get('slug') ?? '').trim();
  const draft = { id, slug };
  if (!isSlug(slug)) return sourcesPage(ctx, s, 422, { draft,
    problem: 'A slug is 2 to 63 characters: lower-case letters, digits and “-”, not starting with “-”.' });
  let next: Source;
  try {
    const publicDocs = patchPublicDocs((ctx.services.store as Store<Workspace>).workspaces.values(),
      ctx.services.publicUrl, src, { enabled: true, published: true, slug });
    const refused = publishRefusal(src, publicDocs, ws.db.get('source_index', src.id));
    if (refused) return sourcesPage(ctx, s, 409, { draft, problem: refusalText(refused) });
    next = { ...src, publicDocs, updatedAt: iso(ctx.services.clock.now()) };
  } catch (e) {
    if (e instanceof ApiError && e.status === 409) return sourcesPage(ctx, s, 409,
      { draft, problem: `The address /docs/${slug} is taken by another source on this server. Choose another slug.` });
    throw e;
  }
  await save(ws, next);
  return redirect(`/settings/sources?published=${encodeURIComponent(id)}`);
}

/** POST /settings/sources/{id}/unpublish: stops serving the docs (the slug is kept); 303 to the list; 404 for a
 * source not the workspace's. */
export async function postUnpublish(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  await ctx.form('session');
  const ws = workspaceOf(ctx, s);
  const src = ownSource(ws, id);
  if (!src) return noSource(ctx, s);
  if (src.publicDocs.published) await save(ws, { ...src, publicDocs: { ...src.publicDocs, published: false },
    updatedAt: iso(ctx.services.clock.now()) });
  return redirect(`/settings/sources?unpublished=${encodeURIComponent(id)}`);
}
