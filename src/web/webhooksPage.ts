/**
 * The webhooks page (docs/web.md#webhooks-page): the signed-in user's workspace's webhook
 * endpoints with their last deliveries; create one (its signing secret shown once, on the page
 * the form redirects to), enable or disable, delete. Every change goes through the webhook area's own
 * functions (src/areas/webhooks/endpoints.ts, urls.ts), so the rules are the API's
 * (docs/api.md#webhooks). Another workspace's endpoint answers 404 like an unknown id.
 */
import { html, seg, type Html } from './html.js';
import { csrfField, errorPage, message, page, when } from './layout.js';
import { ALREADY_SHOWN } from './keysPage.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import { WebError } from './forms.js';
import type { SignedIn } from './sessions.js';
import { ApiError } from '../http/errors.js';
import { ConflictError } from '../core/errors.js';
import { EVENT_TYPES } from '../areas/events/events.js';
import { checkEndpointUrl } from '../areas/webhooks/urls.js';
import { createEndpoint, deleteEndpoint, setEnabled } from '../areas/webhooks/endpoints.js';
import { MAX_DESCRIPTION, MAX_ENDPOINTS, type DeliveryRec, type Subscribable,
  type WebhookEndpointRec } from '../areas/webhooks/model.js';
import type { Store } from '../store/store.js';
import type { Workspace } from '../domain/workspace.js';

/** Deliveries shown per endpoint, newest first. */
const LAST_DELIVERIES = 5;
const ALL = '*';

interface Draft { url: string; events: string[]; description: string }

function workspaceOf(ctx: WebCtx, s: SignedIn): Workspace {
  const ws = (ctx.services.store as Store<Workspace>).workspace(s.session.workspaceId);
  if (!ws) throw new WebError(503,
    'This workspace is offline (its log needs a repair); nothing can be shown or changed.');
  return ws;
}

function lastDeliveries(ws: Workspace, e: WebhookEndpointRec): DeliveryRec[] {
  const index = ws.webhooks.deliveriesOf(e.id);
  const out: DeliveryRec[] = [];
  for (const at of index.desc()) {
    const d = ws.webhooks.delivery(e.id, index.idAt(at));
    if (d) out.push(d);
    if (out.length === LAST_DELIVERIES) break;
  }
  return out;
}

function deliveryRows(ds: DeliveryRec[]): Html {
  if (ds.length === 0) return html`<p class="hint">No deliveries yet.</p>`;
  const heads = ['Event', 'Status', 'Attempts', 'Answer', 'Created'];
  return html`<table class="deliveries stack"><caption class="hint">Last deliveries</caption>
<thead><tr>${heads.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${ds.map((d) => html`<tr><td data-label="Event"><code>${d.eventType}</code></td>
<td data-label="Status"><span class="${d.status === 'succeeded' ? 'status-active' : d.status === 'failed'
  ? 'status-revoked' : ''}">${d.status}</span></td>
<td data-label="Attempts">${d.attempt}</td><td data-label="Answer">${d.responseStatus ?? ''}${
  d.error ? html` <span class="hint">${d.error}</span>` : ''}</td><td data-label="Created">${
  when(d.createdAt)}</td></tr>`)}</tbody></table>`;
}

function endpointCard(ws: Workspace, csrf: string, e: WebhookEndpointRec): Html {
  const action = (what: string, label: string, cls = 'secondary') =>
    html`<form method="post" action="/settings/webhooks/${seg(e.id)}/${what}">${csrfField(
      csrf)}<button type="submit" class="${cls}">${label}</button></form>`;
  return html`<section class="card endpoint" aria-label="Endpoint ${e.url}">
<h3><code>${e.url}</code></h3>
<dl class="facts"><dt>Status</dt><dd>${
  e.enabled ? html`<span class="status-active">Enabled</span>` : html`<span class="status-revoked">Disabled</span>${
    e.disabledReason ? html` <span class="hint">${e.disabledReason}</span>` : ''}`}</dd>
<dt>Events</dt><dd><span class="scope-list">${e.events.map((t) =>
  html`<span class="tag">${t === ALL ? 'all events' : t}</span>`)}</span></dd>
${e.description ? html`<dt>Description</dt><dd>${e.description}</dd>` : ''}
<dt>Created</dt><dd>${when(e.createdAt)}</dd></dl>
${deliveryRows(lastDeliveries(ws, e))}
<div class="actions">${e.enabled ? action('disable', 'Disable') : action('enable', 'Enable')}${
  action('delete', 'Delete', 'danger')}</div>
</section>`;
}

function createForm(csrf: string, d: Draft): Html {
  const box = (value: string, label: Html | string) => html`<label><input type="checkbox" name="events" value="${
    value}"${d.events.includes(value) ? html` checked` : ''}> ${label}</label>`;
  return html`<form class="card" method="post" action="/settings/webhooks">
${csrfField(csrf)}
<label for="url">URL <span class="hint">https, reachable from this server; events are POSTed there,
  signed</span></label>
<input type="text" id="url" name="url" required maxlength="2000" value="${d.url}" inputmode="url"
  spellcheck="false">
<fieldset><legend>Events</legend>
<div class="scopes">${box(ALL, html`<strong>all events</strong> <code>*</code>`)}${
  EVENT_TYPES.map((t) => box(t, html`<code>${t}</code>`))}</div>
</fieldset>
<label for="description">Description <span class="hint">optional, up to ${MAX_DESCRIPTION} characters</span></label>
<input type="text" id="description" name="description" maxlength="${MAX_DESCRIPTION}" value="${d.description}">
<div class="actions"><button type="submit">Create endpoint</button></div>
</form>`;
}

function webhooksPage(ctx: WebCtx, s: SignedIn, status: number, o: { problem?: string; notice?: Html; draft?: Draft } =
  {}): WebAnswer {
  const ws = workspaceOf(ctx, s);
  const endpoints = [...ws.db.table('webhook_endpoint').values()].sort((a, b) =>
    (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
  return pageAnswer(status, page({ title: 'Webhooks', viewer: ctx.viewer(s), current: '/settings/webhooks',
    content: html`<h1>Webhooks</h1>
<p class="hint">Endpoints receive this workspace's events as signed POSTs (at most ${MAX_ENDPOINTS}).</p>
${o.notice ? message('ok', o.notice) : ''}
${endpoints.length ? endpoints.map((e) => endpointCard(ws, s.csrf,
  e)) : html`<p class="empty">This workspace has no webhook endpoints yet.</p>`}
<h2 id="create">Create an endpoint</h2>
${o.problem ? message('error', o.problem) : ''}
${createForm(s.csrf, o.draft ?? { url: '', events: [], description: '' })}` }));
}

/** GET /settings/webhooks: the endpoints, their last deliveries, and the create form (`?deleted=1` says one was
 * deleted). */
export function getWebhooks(ctx: WebCtx): WebAnswer {
  const s = ctx.requireSession();
  return webhooksPage(ctx, s, 200, { notice: ctx.query.get(
    'deleted') ? html`The endpoint is deleted, with its deliveries.` : undefined });
}

/**
 * POST /settings/webhooks (`url`, `events` repeated, `description`): makes the endpoint and
 * answers 303 to `/settings/webhooks/{id}/created`, which shows its signing secret once; 422 with the
 * form for a refused
 * URL (the API's rules and message), no event, an unknown event or a long description; 409 at
 * the limit of endpoints.
 */
export async function postWebhooks(ctx: WebCtx): Promise<WebAnswer> {
  const s = ctx.requireSession();
  const form = await ctx.form('session');
  const draft: Draft = { url: (form.get('url') ?? '').trim(), events: form.getAll('events'), description: (form.get(
    'description') ?? '').trim() };
  const refuse = (status: number, problem: string) => webhooksPage(ctx, s, status, { problem, draft });
  if (draft.url === '') return refuse(422, 'Give the URL events are sent to.');
  if (draft.events.length === 0) return refuse(422, 'Choose at least one event.');
  const unknown = draft.events.find((t) => t !== ALL && !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown !== undefined) return refuse(422, `There is no event named “${unknown}”.`);
  if ([...draft.description].length > MAX_DESCRIPTION) return refuse(422,
    `The description must be at most ${MAX_DESCRIPTION} characters long.`);
  let url: string;
  try { url = await checkEndpointUrl(draft.url, ctx.services.webhookAllowPrivate); } catch (e) {
    if (e instanceof ApiError) return refuse(422, `The URL is refused: ${e.detail ?? e.message}.`);
    throw e;
  }
  const ws = workspaceOf(ctx, s);
  const tx = ws.db.begin();
  let made: ReturnType<typeof createEndpoint>;
  try {
    made = createEndpoint(ws, tx, ctx.services.secrets, ctx.services.clock.now(),
      { url, events: draft.events as Subscribable[], description: draft.description });
  } catch (e) {
    if (e instanceof ConflictError) return refuse(409, `${e.detail[0].toUpperCase()}${e.detail.slice(1)}.`);
    throw e;
  }
  await ws.db.commit(tx);
  ctx.security('webhook_endpoint.created', { userId: s.user.id, workspaceId: ws.id, endpointId: made.rec.id });
  ctx.services.shownOnce.put(`webhook/${made.rec.id}`, s.session.id, made.secret, ctx.services.clock.now());
  return redirect(`/settings/webhooks/${encodeURIComponent(made.rec.id)}/created`);
}

/**
 * GET /settings/webhooks/{id}/created: the new endpoint's signing secret, shown once to the session that made it
 * (docs/web.md#shown-once), "already shown" after; 404 for an endpoint not the workspace's.
 */
export function getWebhookCreated(ctx: WebCtx, id: string): WebAnswer {
  const s = ctx.requireSession();
  const e = workspaceOf(ctx, s).get('webhook_endpoint', id);
  if (!e) return pageAnswer(404, errorPage(404, 'There is no such webhook endpoint in this workspace.',
    ctx.viewer(s)));
  const secret = ctx.services.shownOnce.take(`webhook/${e.id}`, s.session.id, ctx.services.clock.now());
  const back = html`<div class="actions"><a class="button secondary" href="/settings/webhooks">Back to the
  webhooks</a></div>`;
  const content = secret === undefined ? html`<h1>New webhook endpoint</h1>
${message('warn', ALREADY_SHOWN)}
<div class="card"><p><code>${e.url}</code></p>${back}</div>` : html`<h1>New webhook endpoint</h1>
${message('warn', html`<strong>Copy the signing secret now.</strong> It is shown only this once; the receiver needs
  it to check the signatures.`)}
<div class="card">
<label for="secret">Signing secret of <code>${e.url}</code></label>
<div class="secret"><input type="text" id="secret" value="${secret}" readonly aria-label="The signing secret"
  spellcheck="false"><button type="button" class="secondary" data-copy="secret" hidden>Copy</button></div>
${back}
</div>`;
  return pageAnswer(200, page({ title: 'New webhook endpoint', viewer: ctx.viewer(s), current: '/settings/webhooks',
    content }), { 'Cache-Control': 'no-store' });
}

/** The endpoint `id` of the session's workspace, or the 404 page. @throws WebError 404 */
function ownEndpoint(ws: Workspace, id: string): WebhookEndpointRec {
  const e = ws.get('webhook_endpoint', id);
  if (!e) throw new WebError(404, 'There is no such webhook endpoint in this workspace.');
  return e;
}

/** POST /settings/webhooks/{id}/enable and …/disable: 303 to the page; 404 for an endpoint not the workspace's. */
export function postSetEnabled(enabled: boolean) {
  return async (ctx: WebCtx, id: string): Promise<WebAnswer> => {
    const s = ctx.requireSession();
    await ctx.form('session');
    const ws = workspaceOf(ctx, s);
    const e = ownEndpoint(ws, id);
    const tx = ws.db.begin();
    setEnabled(ws, tx, e, enabled, ctx.services.clock.now());
    await ws.db.commit(tx);
    return redirect('/settings/webhooks');
  };
}

/** POST /settings/webhooks/{id}/delete: deletes it with its deliveries, 303 to the page; 404 for an endpoint not the
 * workspace's. */
export async function postDeleteWebhook(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  await ctx.form('session');
  const ws = workspaceOf(ctx, s);
  const e = ownEndpoint(ws, id);
  const tx = ws.db.begin();
  deleteEndpoint(ws, tx, e);
  await ws.db.commit(tx);
  ctx.security('webhook_endpoint.deleted', { userId: s.user.id, workspaceId: ws.id, endpointId: e.id });
  return redirect('/settings/webhooks?deleted=1');
}
