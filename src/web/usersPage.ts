/**
 * The users page (docs/web.md#people), for owners of the workspace (members get 403): the workspace's users with
 * role and status, inviting one by email (an activation link shown once, docs/web.md#shown-once) and removing one
 * after a confirm step, which ends its sessions and drops its links. The last owner who can sign in is never
 * removed. Another workspace's user answers 404 like an unknown id.
 */
import { html, seg } from './html.js';
import { csrfField, errorPage, message, page, when } from './layout.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import type { SignedIn } from './sessions.js';
import { ALREADY_SHOWN } from './keysPage.js';
import { activationUrl, addUser, roleOf } from './users.js';
import { ConflictError, InvalidInputError } from '../core/errors.js';
import type { UserRec, UserRole } from '../store/store.js';

const ROLES: readonly UserRole[] = ['member', 'owner'];
const FIELD_MAX = 320;

function usersOf(ctx: WebCtx, workspaceId: string): UserRec[] {
  return [...ctx.services.store.system.table('user').values()].filter((u) => u.workspaceId === workspaceId)
    .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
}

/** The user `id` when it is of the session's workspace. */
function ownUser(ctx: WebCtx, s: SignedIn, id: string): UserRec | undefined {
  const u = ctx.services.store.system.get('user', id);
  return u && u.workspaceId === s.session.workspaceId ? u : undefined;
}

const noUser = (ctx: WebCtx, s: SignedIn): WebAnswer =>
  pageAnswer(404, errorPage(404, 'There is no such user in this workspace.', ctx.viewer(s)));

/** Why `u` cannot be removed (it is the last owner who can sign in), or null. */
function lastOwner(ctx: WebCtx, u: UserRec): string | null {
  if (roleOf(u) !== 'owner' || u.passwordHash === null) return null;
  const others = usersOf(ctx, u.workspaceId).filter((o) => o.id !== u.id && roleOf(o) === 'owner' &&
    o.passwordHash !== null);
  return others.length === 0 ? 'The last owner of this workspace cannot be removed. Invite another owner first.' : null;
}

function usersPage(ctx: WebCtx, s: SignedIn, status: number, o: { notice?: string; problem?: string;
  email?: string; role?: string } = {}): WebAnswer {
  const users = usersOf(ctx, s.session.workspaceId);
  const heads = ['Email', 'Role', 'Status', 'Created'];
  const role = o.role ?? 'member';
  return pageAnswer(status, page({ title: 'Users', viewer: ctx.viewer(s), current: '/settings/users',
    content: html`<h1>Users</h1>
<p class="hint">The people who sign in to this workspace's settings. Owners manage users; members manage keys,
  sources and webhooks.</p>
${o.notice ? message('ok', o.notice) : ''}
<table class="stack"><thead><tr>${heads.map((h) => html`<th scope="col">${h}</th>`)}<th scope="col"><span
  class="hint">Action</span></th></tr></thead>
<tbody>${users.map((u) => html`<tr>
<td data-label="Email" class="wrap">${u.email}${u.id === s.user.id ? html` <span class="hint">(you)</span>` : ''}</td>
<td data-label="Role">${roleOf(u)}</td>
<td data-label="Status">${u.passwordHash === null ? html`<span class="hint">invited</span>`
    : html`<span class="status-active">active</span>`}</td>
<td data-label="Created">${when(u.createdAt)}</td>
<td data-label="Action"><a href="/settings/users/${seg(u.id)}/remove">Remove…</a></td>
</tr>`)}</tbody></table>
<h2 id="invite">Invite a user</h2>
${o.problem ? message('error', o.problem) : ''}
<form class="card" method="post" action="/settings/users">
${csrfField(s.csrf)}
<label for="email">Email</label>
<input type="email" id="email" name="email" required maxlength="${FIELD_MAX}" value="${o.email ?? ''}">
<label for="role">Role</label>
<select id="role" name="role">${ROLES.map((r) => html`<option value="${r}"${r === role ? html` selected` : ''}>${
  r}</option>`)}</select>
<p class="hint">You get an activation link to send them (valid 24 hours, usable once).</p>
<div class="actions"><button type="submit">Invite</button></div>
</form>` }));
}

/** GET /settings/users (owners; `?removed=1` says a user was removed). @throws WebError 403 for a member */
export function getUsers(ctx: WebCtx): WebAnswer {
  const s = ctx.requireOwner();
  return usersPage(ctx, s, 200, { notice: ctx.query.get('removed') === '1' ? 'The user is removed.' : undefined });
}

/**
 * POST /settings/users (`email`, `role`): makes the user with an activation link, 303 to the page that shows the
 * link once; 422 an email that is not one or an unknown role, 409 the email is another user's on the server.
 * @throws WebError 403 for a member
 */
export async function postUsers(ctx: WebCtx): Promise<WebAnswer> {
  const s = ctx.requireOwner();
  const form = await ctx.form('session');
  const email = (form.get('email') ?? '').trim().slice(0, FIELD_MAX);
  const role = form.get('role') ?? 'member';
  const refuse = (status: number, problem: string) => usersPage(ctx, s, status, { problem, email, role });
  if (!(ROLES as readonly string[]).includes(role)) return refuse(422, 'The role must be owner or member.');
  const { store, clock } = ctx.services;
  const tx = store.system.begin();
  let made: ReturnType<typeof addUser>;
  try { made = addUser(store, tx, clock.now(), s.session.workspaceId, email, role as UserRole); } catch (e) {
    tx.abort();
    if (e instanceof InvalidInputError) return refuse(422, 'The email must be an address such as ada@example.com.');
    if (e instanceof ConflictError) return refuse(409, 'A user with this email already exists on this server.');
    throw e;
  }
  await store.system.commit(tx);
  ctx.security('user.invited', { userId: s.user.id, workspaceId: s.session.workspaceId, invitedId: made.user.id });
  ctx.services.shownOnce.put(`invite/${made.user.id}`, s.session.id, activationUrl(ctx.services.publicUrl,
    made.token), clock.now());
  return redirect(`/settings/users/${encodeURIComponent(made.user.id)}/invited`);
}

/** GET /settings/users/{id}/invited: the activation link of a new user, once; 404 when not the workspace's. */
export function getInvited(ctx: WebCtx, id: string): WebAnswer {
  const s = ctx.requireOwner();
  const u = ownUser(ctx, s, id);
  if (!u) return noUser(ctx, s);
  const link = ctx.services.shownOnce.take(`invite/${u.id}`, s.session.id, ctx.services.clock.now());
  const back = html`<div class="actions"><a class="button secondary" href="/settings/users">Back to the
  users</a></div>`;
  const content = link === undefined ? html`<h1>User invited</h1>${message('warn', ALREADY_SHOWN)}
<div class="card"><p class="wrap">${u.email}</p>${back}</div>` : html`<h1>User invited</h1>
${message('warn', html`<strong>Copy this link now and send it to ${u.email}.</strong> It is shown only this once,
  is valid for 24 hours and sets their password.`)}
<div class="card">
<label for="secret">Activation link of <span class="wrap">${u.email}</span> (${roleOf(u)})</label>
<div class="secret"><input type="text" id="secret" value="${link}" readonly aria-label="The activation link"
  spellcheck="false"><button type="button" class="secondary" data-copy="secret" hidden>Copy</button></div>
${back}
</div>`;
  return pageAnswer(200, page({ title: 'User invited', viewer: ctx.viewer(s), current: '/settings/users', content }),
    { 'Cache-Control': 'no-store' });
}

/** GET /settings/users/{id}/remove: the confirm step; 409 for the last owner; 404 when not the workspace's. */
export function getRemoveUser(ctx: WebCtx, id: string): WebAnswer {
  const s = ctx.requireOwner();
  const u = ownUser(ctx, s, id);
  if (!u) return noUser(ctx, s);
  const last = lastOwner(ctx, u);
  if (last) return pageAnswer(409, errorPage(409, last, ctx.viewer(s)));
  return pageAnswer(200, page({ title: 'Remove user', viewer: ctx.viewer(s), current: '/settings/users',
    content: html`<h1>Remove this user?</h1>
<div class="card">
<p><strong class="wrap">${u.email}</strong> (${roleOf(u)}) can no longer sign in; their sessions end at once${
  u.id === s.user.id ? html`, yours included` : ''}. This cannot be undone.</p>
<form method="post" action="/settings/users/${seg(u.id)}/remove">${csrfField(s.csrf)}
<div class="actions"><button type="submit" class="danger">Remove user</button><a class="button secondary"
  href="/settings/users">Cancel</a></div></form>
</div>` }));
}

/**
 * POST /settings/users/{id}/remove: deletes the user, its sessions and its activation links, 303 to the page (to
 * sign-in when it was the signed-in user); 409 for the last owner who can sign in; 404 when not the workspace's.
 */
export async function postRemoveUser(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireOwner();
  await ctx.form('session');
  const u = ownUser(ctx, s, id);
  if (!u) return noUser(ctx, s);
  const last = lastOwner(ctx, u);
  if (last) return pageAnswer(409, errorPage(409, last, ctx.viewer(s)));
  const { store } = ctx.services;
  const tx = store.system.begin();
  tx.del('user', u.id);
  for (const [sid, session] of store.system.table('session')) if (session.userId === u.id) tx.del('session', sid);
  for (const [aid, a] of store.system.table('activation')) if (a.userId === u.id) tx.del('activation', aid);
  await store.system.commit(tx);
  ctx.security('user.removed', { userId: s.user.id, workspaceId: s.session.workspaceId, removedId: u.id });
  return redirect(u.id === s.user.id ? '/settings/login' : '/settings/users?removed=1');
}
