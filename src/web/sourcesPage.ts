/**
 * The sources page (docs/web.md#sources-page): the signed-in user's workspace's sources with
 * type, status, counts and last error, and publishing each one's public docs under a slug
 * (docs/web.md#public-docs) with POST forms carrying the CSRF token. Slugs follow the same
 * rules as `PATCH /api/v1/sources/{id}` (src/areas/sources/publicDocs.ts): a slug taken on the
 * server is answered 409 with the form and a message. Another workspace's source is never
 * listed, and its forms answer 404 like an id that does not exist.
 */
import { html, seg, type Html } from './html.js';
import { csrfField, errorPage, message, page, when } from './layout.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import { WebError } from './forms.js';
import type { SignedIn } from './sessions.js';
import { ApiError } from '../http/errors.js';
import { isServed, isSlug, patchPublicDocs } from '../areas/sources/publicDocs.js';
import { iso } from '../core/clock.js';
import type { Source } from '../areas/sources/model.js';
import type { Store } from '../store/store.js';
import type { Workspace } from '../domain/workspace.js';

/** A slug typed into a row's form, shown again with a problem. */
interface Draft { id: string; slug: string }

/** The session's workspace, or the 503 page when its log is offline. @throws WebError 503 */
function workspaceOf(ctx: WebCtx, s: SignedIn): Workspace {
  const ws = (ctx.services.store as Store<Workspace>).workspace(s.session.workspaceId);
  if (!ws) throw new WebError(503, 'This workspace is offline (its log needs a repair); nothing can be shown or changed.');
  return ws;
}

/** A suggested slug from a name: lower-case letters, digits and `-`, 2–63 characters. */
function suggest(name: string): string {
  const s = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63).replace(/-+$/, '');
  return s.length >= 2 ? s : '';
}

function publishCell(csrf: string, src: Source, draft: Draft | undefined): Html {
  const pd = src.publicDocs;
  if (isServed(src)) {
    return html`<p><a href="/docs/${seg(pd.slug!)}">/docs/${pd.slug}</a></p>
<form method="post" action="/settings/sources/${seg(src.id)}/unpublish">${csrfField(csrf)}<button type="submit" class="secondary">Unpublish</button></form>`;
  }
  const value = draft?.id === src.id ? draft.slug : pd.slug ?? suggest(src.name);
  const field = `slug-${src.id}`;
  return html`<form class="publish" method="post" action="/settings/sources/${seg(src.id)}/publish">${csrfField(csrf)}
<label for="${field}" class="hint">Address: /docs/</label>
<input type="text" id="${field}" name="slug" value="${value}" required minlength="2" maxlength="63" pattern="[a-z0-9][a-z0-9\\-]{1,62}" spellcheck="false">
<button type="submit">Publish</button></form>`;
}

function sourceRows(ws: Workspace, csrf: string, draft: Draft | undefined): Html {
  const sources = [...ws.db.table('source').values()].sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : -1));
  if (sources.length === 0) return html`<p class="empty">This workspace has no sources yet. Create one with <code>POST /api/v1/sources</code>.</p>`;
  return html`<table>
<thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Documents</th><th scope="col">Endpoints</th><th scope="col">Chunks</th><th scope="col">Last error</th><th scope="col">Updated</th><th scope="col">Public docs</th></tr></thead>
<tbody>
${sources.map((src) => {
    const idx = ws.db.get('source_index', src.id);
    return html`<tr id="source-${src.id}">
<td>${src.name}${src.inputUrl ? html`<br><span class="hint">${src.inputUrl}</span>` : ''}</td>
<td><code>${src.type}</code></td>
<td><span class="${src.status === 'failed' ? 'status-revoked' : src.status === 'ready' ? 'status-active' : ''}">${src.status}</span></td>
<td>${idx?.documents.length ?? 0}</td><td>${idx?.endpoints.length ?? 0}</td><td>${idx?.chunks.length ?? 0}</td>
<td>${src.error ?? html`<span class="hint">—</span>`}</td>
<td>${when(src.updatedAt)}</td>
<td>${publishCell(csrf, src, draft)}</td>
</tr>`;
  })}
</tbody></table>`;
}

function sourcesPage(ctx: WebCtx, s: SignedIn, status: number, o: { problem?: string; notice?: Html; draft?: Draft } = {}): WebAnswer {
  const ws = workspaceOf(ctx, s);
  const name = ctx.services.store.workspaceRec(s.session.workspaceId)?.name ?? '';
  return pageAnswer(status, page({ title: 'Sources', viewer: ctx.viewer(s), current: '/settings/sources', content: html`<h1>Sources</h1>
<p class="hint">Workspace <strong>${name}</strong>. Publishing a source serves its documentation to anyone, without sign-in, at <code>/docs/{slug}</code>; a slug is unique on this server.</p>
${o.notice ? message('ok', o.notice) : ''}
${o.problem ? message('error', o.problem) : ''}
${sourceRows(ws, s.csrf, o.draft)}` }));
}

/** The source `id` when it is the session's workspace's; another workspace's is never found. */
function ownSource(ws: Workspace, id: string): Source | undefined {
  return ws.db.get('source', id);
}

/** GET /settings/sources: the list (`?published=ID` / `?unpublished=ID` says what was just done). */
export function getSources(ctx: WebCtx): WebAnswer {
  const s = ctx.requireSession();
  const ws = workspaceOf(ctx, s);
  const pub = ctx.query.get('published');
  const unpub = ctx.query.get('unpublished');
  const p = pub ? ownSource(ws, pub) : undefined;
  const u = unpub ? ownSource(ws, unpub) : undefined;
  const notice = p && isServed(p) ? html`<strong>${p.name}</strong> is published at <a href="/docs/${seg(p.publicDocs.slug!)}">/docs/${p.publicDocs.slug}</a>.`
    : u && !isServed(u) ? html`<strong>${u.name}</strong> is no longer published.` : undefined;
  return sourcesPage(ctx, s, 200, { notice });
}

/** Writes `next` as source `id` of `ws`, durable before this resolves. */
async function save(ws: Workspace, next: Source): Promise<void> {
  const tx = ws.db.begin();
  tx.put('source', next.id, next);
  await ws.db.commit(tx);
}

/**
 * POST /settings/sources/{id}/publish (`slug`): enables and publishes the source's docs under
 * `slug`; 303 to the list. 422 with the form for a malformed slug, 409 when another source of
 * the server has it, 404 for a source not the workspace's.
 */
export async function postPublish(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  const form = await ctx.form('session');
  const ws = workspaceOf(ctx, s);
  const src = ownSource(ws, id);
  if (!src) return pageAnswer(404, errorPage(404, 'There is no such source in this workspace.', ctx.viewer(s)));
  const slug = (form.get('slug') ?? '').trim();
  const draft = { id, slug };
  if (!isSlug(slug)) return sourcesPage(ctx, s, 422, { draft, problem: 'A slug is 2 to 63 characters: lower-case letters, digits and “-”, not starting with “-”.' });
  let next: Source;
  try {
    const publicDocs = patchPublicDocs((ctx.services.store as Store<Workspace>).workspaces.values(), ctx.services.publicUrl, src, { enabled: true, published: true, slug });
    next = { ...src, publicDocs, updatedAt: iso(ctx.services.clock.now()) };
  } catch (e) {
    if (e instanceof ApiError && e.status === 409) return sourcesPage(ctx, s, 409, { draft, problem: `The address /docs/${slug} is taken by another source on this server. Choose another slug.` });
    throw e;
  }
  await save(ws, next);
  return redirect(`/settings/sources?published=${encodeURIComponent(id)}`);
}

/** POST /settings/sources/{id}/unpublish: stops serving the docs (the slug is kept); 303 to the list; 404 for a source not the workspace's. */
export async function postUnpublish(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  await ctx.form('session');
  const ws = workspaceOf(ctx, s);
  const src = ownSource(ws, id);
  if (!src) return pageAnswer(404, errorPage(404, 'There is no such source in this workspace.', ctx.viewer(s)));
  if (src.publicDocs.published) await save(ws, { ...src, publicDocs: { ...src.publicDocs, published: false }, updatedAt: iso(ctx.services.clock.now()) });
  return redirect(`/settings/sources?unpublished=${encodeURIComponent(id)}`);
}
