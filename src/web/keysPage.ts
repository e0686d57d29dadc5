/**
 * The keys page (docs/web.md#keys-page): the signed-in user's workspace's API keys, a form to
 * make one (its secret shown once, on the page the form redirects to), and revocation with a confirm
 * step. A key of another workspace is never listed, and revoking it answers 404 like an id
 * that does not exist (docs/security.md#tenant-isolation).
 */
import { html, seg, type Html } from './html.js';
import { csrfField, errorPage, message, page, when } from './layout.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import type { SignedIn } from './sessions.js';
import { SCOPES } from '../auth/keys.js';
import { makeKey, revokeKey } from '../auth/keyRecords.js';
import { iso } from '../core/clock.js';
import type { KeyRec } from '../store/store.js';

const NAME_MAX = 200;
const ALL = '*';
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** What the create form was sent with, to fill it in again with a problem. */
interface Draft { name: string; scopes: string[]; expiresAt: string }

function status(k: KeyRec, now: number): Html {
  if (k.revokedAt) return html`<span class="status-revoked">Revoked</span> ${when(k.revokedAt)}`;
  if (k.expiresAt && Date.parse(k.expiresAt) <= now) return html`<span class="status-expired">Expired</span>`;
  return html`<span class="status-active">Active</span>`;
}

function keyRows(keys: KeyRec[], now: number): Html {
  if (keys.length === 0) return html`<p class="empty">This workspace has no API keys yet.</p>`;
  const heads = ['Name', 'Prefix', 'Scopes', 'Created', 'Last used', 'Expires', 'Status'];
  return html`<table class="stack">
<thead><tr>${heads.map((h) => html`<th scope="col">${h}</th>`)}<th scope="col"><span class="hint">Action</span></th>
</tr></thead>
<tbody>
${keys.map((k) => html`<tr${k.revokedAt ? html` class="revoked"` : ''}>
<td data-label="Name">${k.name ?? html`<span class="hint">(no name)</span>`}</td>
<td data-label="Prefix"><code>${k.prefix}…</code></td>
<td data-label="Scopes"><span class="scope-list">${k.scopes.map((sc) =>
  html`<span class="tag">${sc === ALL ? 'all scopes' : sc}</span>`)}</span></td>
<td data-label="Created">${when(k.createdAt)}</td><td data-label="Last used">${when(k.lastUsedAt)}</td>
<td data-label="Expires">${when(k.expiresAt)}</td>
<td data-label="Status">${status(k, now)}</td>
<td data-label="Action">${k.revokedAt ? '' : html`<a href="/settings/keys/${seg(k.id)}/revoke">Revoke…</a>`}</td>
</tr>`)}
</tbody></table>`;
}

function createForm(csrf: string, d: Draft): Html {
  const box = (value: string, label: Html | string) => html`<label><input type="checkbox" name="scopes" value="${
    value}"${d.scopes.includes(value) ? html` checked` : ''}> ${label}</label>`;
  return html`<form class="card" method="post" action="/settings/keys">
${csrfField(csrf)}
<label for="name">Name <span class="hint">what the key is for, up to ${NAME_MAX} characters</span></label>
<input type="text" id="name" name="name" required maxlength="${NAME_MAX}" value="${d.name}">
<fieldset><legend>Scopes</legend>
<div class="scopes">${box(ALL, html`<strong>all scopes</strong> <code>*</code>`)}${
  SCOPES.map((sc) => box(sc, html`<code>${sc}</code>`))}</div>
<p class="hint">A <code>:write</code> scope includes its <code>:read</code>.</p>
</fieldset>
<label for="expiresAt">Expires on <span class="hint">optional; the key stops working at 00:00 UTC that
  day</span></label>
<input type="date" id="expiresAt" name="expiresAt" value="${d.expiresAt}">
<div class="actions"><button type="submit">Create key</button></div>
</form>`;
}

function workspaceKeys(ctx: WebCtx, s: SignedIn): KeyRec[] {
  const keys = [...ctx.services.store.system.table('key').values()].filter((k) =>
    k.workspaceId === s.session.workspaceId);
  return keys.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : -1));
}

function keysPage(ctx: WebCtx, s: SignedIn, status: number, o: { problem?: string; notice?: Html; draft?: Draft } =
  {}): WebAnswer {
  const now = ctx.services.clock.now();
  const ws = ctx.services.store.workspaceRec(s.session.workspaceId);
  return pageAnswer(status, page({ title: 'API keys', viewer: ctx.viewer(s), current: '/settings/keys',
    content: html`<h1>API keys</h1>
<p class="hint">Workspace <strong>${ws?.name ??
  ''}</strong>. A key authenticates calls to <code>/api/v1</code> as <code>Authorization: Bearer svck_…</code>.</p>
${o.notice ? message('ok', o.notice) : ''}
${keyRows(workspaceKeys(ctx, s), now)}
<h2 id="create">Create a key</h2>
${o.problem ? message('error', o.problem) : ''}
${createForm(s.csrf, o.draft ?? { name: '', scopes: [], expiresAt: '' })}` }));
}

/** The key `id` when it is one of the session's workspace's; another workspace's is never found. */
function ownKey(ctx: WebCtx, s: SignedIn, id: string): KeyRec | undefined {
  const k = ctx.services.store.key(id);
  return k && k.workspaceId === s.session.workspaceId ? k : undefined;
}

/** GET /settings/keys: the list and the create form (`?revoked=ID` says which key was just revoked). */
export function getKeys(ctx: WebCtx): WebAnswer {
  const s = ctx.requireSession();
  const revoked = ctx.query.get('revoked');
  const k = revoked ? ownKey(ctx, s, revoked) : undefined;
  const notice = k?.revokedAt ? html`The key <strong>${k.name ?? k.prefix}</strong> (<code>${
    k.prefix}…</code>) is revoked: it no longer authenticates.` : undefined;
  return keysPage(ctx, s, 200, { notice });
}

/**
 * POST /settings/keys (`name`, `scopes` repeated, `expiresAt` optional `YYYY-MM-DD`): makes the
 * key and answers 303 to `/settings/keys/{id}/created`, which shows its secret once; 422 with the form and the problem
 * for a missing name or scope, an unknown scope, `*` with others, or a date not in the future.
 */
export async function postKeys(ctx: WebCtx): Promise<WebAnswer> {
  const s = ctx.requireSession();
  const form = await ctx.form('session');
  const draft: Draft = { name: (form.get('name') ?? '').trim(), scopes: form.getAll('scopes'), expiresAt: (form.get(
    'expiresAt') ?? '').trim() };
  const now = ctx.services.clock.now();
  const refuse = (problem: string) => keysPage(ctx, s, 422, { problem, draft });
  if (draft.name === '') return refuse('Give the key a name, so you can tell it from the others later.');
  if ([...draft.name].length > NAME_MAX) return refuse(`The name must be at most ${NAME_MAX} characters long.`);
  if (draft.scopes.length === 0) return refuse('Choose at least one scope.');
  const unknown = draft.scopes.find((sc) => sc !== ALL && !(SCOPES as readonly string[]).includes(sc));
  if (unknown !== undefined) return refuse(`There is no scope named “${unknown}”.`);
  if (draft.scopes.includes(ALL) && draft.scopes.length > 1) return refuse(
    'Choose either “all scopes” or single scopes, not both.');
  let expiresAt: string | undefined;
  if (draft.expiresAt !== '') {
    const t = DATE.test(draft.expiresAt) ? Date.parse(`${draft.expiresAt}T00:00:00Z`) : NaN;
    if (Number.isNaN(t) || iso(t).slice(0, 10) !== draft.expiresAt) return refuse(
      'The expiry date must be a date such as 2027-01-31.');
    if (t <= now) return refuse('The expiry date must be in the future.');
    expiresAt = iso(t);
  }
  const { store } = ctx.services;
  const { rec, key } = makeKey(store, now, { workspace: s.session.workspaceId, name: draft.name, scopes: [...new Set(
    draft.scopes)].join(','), expiresAt });
  const tx = store.system.begin();
  tx.put('key', rec.id, rec);
  await store.system.commit(tx);
  ctx.security('key.created', { userId: s.user.id, workspaceId: rec.workspaceId, keyId: rec.id, prefix: rec.prefix,
    scopes: rec.scopes });
  ctx.services.shownOnce.put(`key/${rec.id}`, s.session.id, key, now);
  return redirect(`/settings/keys/${encodeURIComponent(rec.id)}/created`);
}

/**
 * GET /settings/keys/{id}/created: the new key's secret, shown once to the session that made it
 * (docs/web.md#shown-once); a reload, the back button or another session gets "already shown". 404 for a key
 * that is not the workspace's.
 */
export function getKeyCreated(ctx: WebCtx, id: string): WebAnswer {
  const s = ctx.requireSession();
  const rec = ownKey(ctx, s, id);
  if (!rec) return pageAnswer(404, errorPage(404, 'There is no such key in this workspace.', ctx.viewer(s)));
  const key = ctx.services.shownOnce.take(`key/${rec.id}`, s.session.id, ctx.services.clock.now());
  const back = html`<div class="actions"><a class="button secondary" href="/settings/keys">Back to the keys</a></div>`;
  const facts = html`<dl class="facts"><dt>Prefix</dt><dd><code>${rec.prefix}…</code></dd>
<dt>Scopes</dt><dd>${rec.scopes.map((sc) => html`<span class="tag">${sc === ALL ? 'all scopes' : sc}</span> `)}</dd>
<dt>Expires</dt><dd>${rec.expiresAt ? when(rec.expiresAt) : 'never'}</dd></dl>`;
  const content = key === undefined ? html`<h1>New API key</h1>
${message('warn', ALREADY_SHOWN)}
<div class="card"><p><strong>${rec.name}</strong></p>${facts}${back}</div>` : html`<h1>New API key</h1>
${message('warn', html`<strong>Copy this key now.</strong> It is shown only this once: the server keeps only its
  hash and cannot show it again.`)}
<div class="card">
<label for="secret">${rec.name}</label>
<div class="secret"><input type="text" id="secret" value="${key}" readonly aria-label="The new API key"
  spellcheck="false"><button type="button" class="secondary" data-copy="secret" hidden>Copy</button></div>
${facts}
<p>Use it as <code>Authorization: Bearer ${rec.prefix}…</code> on <code>/api/v1</code>.</p>
${back}
</div>`;
  return pageAnswer(200, page({ title: 'New API key', viewer: ctx.viewer(s), current: '/settings/keys', content }),
    { 'Cache-Control': 'no-store' });
}

/** What the page of a secret says when it was already shown (a reload, the back button) or has expired. */
export const ALREADY_SHOWN = 'This secret was already shown, or more than 10 minutes have passed: it cannot be shown '
  + 'again. If it was not copied, make a new one.';

/** GET /settings/keys/{id}/revoke: the confirm step; 404 for a key that is not the workspace's. */
export function getRevoke(ctx: WebCtx, id: string): WebAnswer {
  const s = ctx.requireSession();
  const k = ownKey(ctx, s, id);
  if (!k) return pageAnswer(404, errorPage(404, 'There is no such key in this workspace.', ctx.viewer(s)));
  if (k.revokedAt) return redirect('/settings/keys');
  return pageAnswer(200, page({ title: 'Revoke key', viewer: ctx.viewer(s), current: '/settings/keys',
    content: html`<h1>Revoke this key?</h1>
<div class="card">
<dl class="facts"><dt>Name</dt><dd>${k.name ?? '(no name)'}</dd><dt>Prefix</dt><dd><code>${k.prefix}…</code></dd>
<dt>Scopes</dt><dd>${k.scopes.join(', ')}</dd><dt>Last used</dt><dd>${when(k.lastUsedAt)}</dd></dl>
<p>Every request made with it will be refused (401) from now on. This cannot be undone.</p>
<form method="post" action="/settings/keys/${seg(k.id)}/revoke">${csrfField(s.csrf)}
<div class="actions"><button type="submit" class="danger">Revoke key</button><a class="button secondary"
  href="/settings/keys">Cancel</a></div></form>
</div>` }));
}

/** POST /settings/keys/{id}/revoke: revokes (durable before the answer), 303 to the list; 404 for a key not the
 * workspace's. */
export async function postRevoke(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  await ctx.form('session');
  const k = ownKey(ctx, s, id);
  if (!k) return pageAnswer(404, errorPage(404, 'There is no such key in this workspace.', ctx.viewer(s)));
  const was = k.revokedAt;
  await revokeKey(ctx.services.store, ctx.services.clock.now(), k.id);
  if (!was) ctx.security('key.revoked', { userId: s.user.id, workspaceId: k.workspaceId, keyId: k.id,
    prefix: k.prefix });
  return redirect(`/settings/keys?revoked=${encodeURIComponent(k.id)}`);
}
