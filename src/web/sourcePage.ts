/**
 * One source in the browser (docs/web.md#sources-in-the-browser): adding one from pasted text or a URL, its page
 * (status, type, counts, documents, endpoints, last error, public docs), rescanning it and deleting it after a
 * confirm step. Adding, rescanning and deleting run the API's own operations (src/web/operations.ts), so the rules,
 * type detection, events and messages are the API's. Another workspace's source answers 404 like an unknown id.
 */
import { html, seg, type Html } from './html.js';
import { csrfField, message, page, when } from './layout.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import type { SignedIn } from './sessions.js';
import { ApiError } from '../http/errors.js';
import { isServed } from '../areas/sources/publicDocs.js';
import type { Source } from '../areas/sources/model.js';
import type { SourceIndexRec } from '../ingest/types.js';
import {
  ADD_FORM_LIMIT, noSource, ownSource, publishCell, sourcesPage, statusClass, workspaceOf, type AddDraft,
} from './sourcesPage.js';

/** Documents and endpoints listed on a source's page; the rest are counted. */
export const LISTED = 200;

/** The API's reason for a refusal (its detail, as the API words it, field names as they are), with a full stop. */
const sentence = (e: ApiError): string => {
  const t = e.detail ?? e.message;
  return `${t}${t.endsWith('.') ? '' : '.'}`;
};

/**
 * POST /settings/sources (`url`, `content`, `name`, each optional; at least `url` or `content`): creates and ingests
 * the source as `POST /api/v1/sources` does (type detected) and answers 303 to its page, `ready` or `failed`. 422
 * with the form for neither field or a body the API refuses (its reason); 409 for a URL another source has.
 */
export async function postAddSource(ctx: WebCtx): Promise<WebAnswer> {
  const s = ctx.requireSession();
  const form = await ctx.form('session', ADD_FORM_LIMIT);
  const add: AddDraft = { name: (form.get('name') ?? '').trim(), url: (form.get('url') ?? '').trim(),
    content: form.get('content') ?? '' };
  const refuse = (status: number, addProblem: string) => sourcesPage(ctx, s, status, { add, addProblem });
  const content = add.content.trim() === '' ? undefined : add.content;
  if (add.url === '' && content === undefined) return refuse(422, 'Give the URL of the document, or paste it.');
  const body = { ...(add.url ? { url: add.url } : {}), ...(content === undefined ? {} : { content }),
    ...(add.name ? { name: add.name } : {}) };
  const ws = workspaceOf(ctx, s);
  let made: Record<string, unknown>;
  try {
    made = (await ctx.services.operations.run('createSource', { ws, body, userId: s.user.id,
      now: ctx.services.clock.now(), requestId: ctx.requestId })).body as Record<string, unknown>;
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    if (e.status === 409) return refuse(409, `The source is refused: ${sentence(e)}`);
    if (e.status === 400) return refuse(422, `The source is refused: ${sentence(e)}`);
    throw e;
  }
  const id = (made.source as { id: string }).id;
  ctx.security('source.created', { userId: s.user.id, workspaceId: ws.id, sourceId: id });
  return redirect(`/settings/sources/${encodeURIComponent(id)}?added=1`);
}

function listing(idx: SourceIndexRec | undefined): Html {
  const docs = idx?.documents ?? [];
  const eps = idx?.endpoints ?? [];
  const titles = new Map(docs.map((d) => [d.id, d.title]));
  const more = (n: number, what: string) => n > LISTED ? html`<p class="hint">The first ${LISTED} of ${n} ${
    what}.</p>` : '';
  const endpoints = eps.length === 0 ? html`<p class="empty">No endpoints.</p>` : html`${more(eps.length,
    'endpoints')}<table class="stack"><thead><tr><th scope="col">Method</th><th scope="col">Path</th>
<th scope="col">Summary</th></tr></thead><tbody>${eps.slice(0, LISTED).map((e) => html`<tr>
<td data-label="Method"><code>${e.method ?? ''}</code></td><td data-label="Path"><code class="wrap">${
  e.path ?? ''}</code></td><td data-label="Summary">${e.documentId ? titles.get(e.documentId) ?? '' : ''}</td>
</tr>`)}</tbody></table>`;
  const documents = docs.length === 0 ? html`<p class="empty">No documents.</p>` : html`${more(docs.length,
    'documents')}<table class="stack"><thead><tr><th scope="col">Kind</th><th scope="col">Title</th></tr></thead>
<tbody>${docs.slice(0, LISTED).map((d) => html`<tr><td data-label="Kind"><code>${d.kind ?? ''}</code></td>
<td data-label="Title">${d.title ?? html`<span class="hint">(no title)</span>`}</td></tr>`)}</tbody></table>`;
  return html`<h2 id="endpoints">Endpoints (${eps.length})</h2>${endpoints}
<h2 id="documents">Documents (${docs.length})</h2>${documents}`;
}

function sourcePage(ctx: WebCtx, s: SignedIn, src: Source, idx: SourceIndexRec | undefined, status: number,
  o: { notice?: string; problem?: string } = {}): WebAnswer {
  const action = (what: string, label: string) => html`<form method="post" action="/settings/sources/${
    seg(src.id)}/${what}">${csrfField(s.csrf)}<button type="submit" class="secondary">${label}</button></form>`;
  const pd = src.publicDocs;
  const docsState = isServed(src) ? 'published' : pd.slug ? `not published (slug ${pd.slug} kept)` : 'not published';
  return pageAnswer(status, page({ title: src.name, viewer: ctx.viewer(s), current: '/settings/sources',
    content: html`<p><a href="/settings/sources">← Sources</a></p>
<h1 class="wrap">${src.name}</h1>
${o.notice ? message('ok', o.notice) : ''}${o.problem ? message('error', o.problem) : ''}
<div class="card">
<dl class="facts"><dt>Status</dt><dd><span class="${statusClass(src.status)}">${src.status}</span></dd>
<dt>Type</dt><dd><code>${src.type}</code></dd>
${src.inputUrl ? html`<dt>URL</dt><dd class="wrap">${src.inputUrl}</dd>` : ''}
<dt>Counts</dt><dd>${idx?.documents.length ?? 0} documents, ${idx?.endpoints.length ?? 0} endpoints, ${
  idx?.chunks.length ?? 0} chunks</dd>
<dt>Last error</dt><dd>${src.error ?? html`<span class="hint">—</span>`}</dd>
<dt>Created</dt><dd>${when(src.createdAt)}</dd><dt>Updated</dt><dd>${when(src.updatedAt)}</dd>
<dt>Public docs</dt><dd>${docsState}</dd></dl>
<div class="actions">${action('rescan', 'Rescan')}<a class="button danger" href="/settings/sources/${
  seg(src.id)}/delete">Delete…</a></div>
</div>
<h2 id="public-docs">Public docs</h2>
<div class="card">${publishCell(s.csrf, src, undefined)}</div>
${listing(idx)}` }));
}

/** GET /settings/sources/{id}: the source's page (`?added=1`, `?rescanned=1` say what was just done); 404 when not
 * the workspace's. */
export function getSource(ctx: WebCtx, id: string): WebAnswer {
  const s = ctx.requireSession();
  const ws = workspaceOf(ctx, s);
  const src = ownSource(ws, id);
  if (!src) return noSource(ctx, s);
  const notice = ctx.query.get('added') === '1' ? 'The source is added.'
    : ctx.query.get('rescanned') === '1' ? 'The source is rescanned.' : undefined;
  return sourcePage(ctx, s, src, ws.db.get('source_index', src.id), 200, { notice });
}

/**
 * POST /settings/sources/{id}/rescan: rescans as `POST /api/v1/sources/{id}/rescan` does, 303 to the source's page;
 * 409 with the page while a rescan of it runs; 404 when not the workspace's.
 */
export async function postRescan(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  await ctx.form('session');
  const ws = workspaceOf(ctx, s);
  const src = ownSource(ws, id);
  if (!src) return noSource(ctx, s);
  try {
    await ctx.services.operations.run('rescanSource', { ws, params: { sourceId: id }, userId: s.user.id,
      now: ctx.services.clock.now(), requestId: ctx.requestId });
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 409) throw e;
    const now = ownSource(ws, id);
    if (!now) return noSource(ctx, s);
    return sourcePage(ctx, s, now, ws.db.get('source_index', id), 409, { problem: `Not rescanned: ${sentence(e)}` });
  }
  return redirect(`/settings/sources/${encodeURIComponent(id)}?rescanned=1`);
}

/** GET /settings/sources/{id}/delete: the confirm step; 404 when not the workspace's. */
export function getDeleteSource(ctx: WebCtx, id: string): WebAnswer {
  const s = ctx.requireSession();
  const src = ownSource(workspaceOf(ctx, s), id);
  if (!src) return noSource(ctx, s);
  return pageAnswer(200, page({ title: 'Delete source', viewer: ctx.viewer(s), current: '/settings/sources',
    content: html`<h1>Delete this source?</h1>
<div class="card">
<p><strong class="wrap">${src.name}</strong> (<code>${src.type}</code>) and its documents, endpoints and chunks are
  deleted${isServed(src) ? html`, and its public docs stop` : ''}. This cannot be undone.</p>
<form method="post" action="/settings/sources/${seg(src.id)}/delete">${csrfField(s.csrf)}
<div class="actions"><button type="submit" class="danger">Delete source</button><a class="button secondary"
  href="/settings/sources/${seg(src.id)}">Cancel</a></div></form>
</div>` }));
}

/** POST /settings/sources/{id}/delete: deletes as `DELETE /api/v1/sources/{id}` does, 303 to the list; 404 when not
 * the workspace's. */
export async function postDeleteSource(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  await ctx.form('session');
  const ws = workspaceOf(ctx, s);
  if (!ownSource(ws, id)) return noSource(ctx, s);
  await ctx.services.operations.run('deleteSource', { ws, params: { sourceId: id }, userId: s.user.id,
    now: ctx.services.clock.now(), requestId: ctx.requestId });
  ctx.security('source.deleted', { userId: s.user.id, workspaceId: ws.id, sourceId: id });
  return redirect('/settings/sources?deleted=1');
}
