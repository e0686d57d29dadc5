/**
 * The account page (docs/web.md#people): the signed-in user changes their email or their password, each with
 * the current password. A wrong current password counts against the sign-in limits of the user's email and the
 * client's address (docs/security.md#lockout); a new password ends the user's other sessions.
 */
import { html } from './html.js';
import { csrfField, message, page } from './layout.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import type { SignedIn } from './sessions.js';
import { HashBusy } from './hashLanes.js';
import { PASSWORD_MIN } from './passwords.js';
import { EMAIL, passwordProblem } from './users.js';
import type { UserRec } from '../store/store.js';

const FIELD_MAX = 320;

/** The page with `status`; `problem` goes above the form it is about. */
function accountPage(ctx: WebCtx, s: SignedIn, status: number, o: { notice?: string; problem?: string;
  about?: 'email' | 'password'; email?: string } = {}, headers?: Record<string, string>): WebAnswer {
  const problem = (about: 'email' | 'password') => o.problem && o.about === about ? message('error', o.problem) : '';
  return pageAnswer(status, page({ title: 'Account', viewer: ctx.viewer(s), current: '/settings/account',
    content: html`<h1>Account</h1>
${o.notice ? message('ok', o.notice) : ''}
<h2 id="email">Email</h2>
${problem('email')}
<form class="card" method="post" action="/settings/account/email">
${csrfField(s.csrf)}
<p class="hint">You sign in with <strong>${s.user.email}</strong>.</p>
<label for="new-email">New email</label>
<input type="email" id="new-email" name="email" autocomplete="username" required maxlength="${FIELD_MAX}"
  value="${o.email ?? ''}">
<label for="email-password">Current password</label>
<input type="password" id="email-password" name="password" autocomplete="current-password" required>
<div class="actions"><button type="submit">Change email</button></div>
</form>
<h2 id="password">Password</h2>
${problem('password')}
<form class="card" method="post" action="/settings/account/password">
${csrfField(s.csrf)}
<input type="email" name="username" value="${s.user.email}" autocomplete="username" hidden>
<label for="current">Current password</label>
<input type="password" id="current" name="current" autocomplete="current-password" required>
<label for="password-new">New password <span class="hint">at least ${PASSWORD_MIN} characters</span></label>
<input type="password" id="password-new" name="password" autocomplete="new-password" required
  minlength="${PASSWORD_MIN}">
<p class="hint">Changing it signs you out everywhere else.</p>
<div class="actions"><button type="submit">Change password</button></div>
</form>` }), headers);
}

/** GET /settings/account (`?email=1`, `?password=1` say what was just changed). */
export function getAccount(ctx: WebCtx): WebAnswer {
  const s = ctx.requireSession();
  const notice = ctx.query.get('email') === '1' ? 'Your email is changed. Sign in with it from now on.'
    : ctx.query.get('password') === '1' ? 'Your password is changed. Your other sessions are ended.' : undefined;
  return accountPage(ctx, s, 200, { notice });
}

/**
 * Checks the current password of `s`'s user under the sign-in limits; a refusal page (401 wrong, 429 locked or the
 * hasher busy, with `Retry-After`) or null when it is right.
 */
async function checkCurrent(ctx: WebCtx, s: SignedIn, password: string, about: 'email' | 'password',
  email?: string): Promise<WebAnswer | null> {
  const { limits, passwords } = ctx.services;
  const attempt = { email: s.user.email, client: ctx.client, device: undefined };
  const who = { userId: s.user.id, workspaceId: s.user.workspaceId };
  const minutes = (ms: number) => { const m = Math.max(1, Math.ceil(ms / 60_000)); return `${m} minute${
    m === 1 ? '' : 's'}`; };
  const locked = (ms: number) => accountPage(ctx, s, 429, { about, email, problem:
    `Too many wrong passwords. Try again in ${minutes(ms)}.` },
  { 'Retry-After': String(Math.max(1, Math.ceil(ms / 1000))) });
  const refused = limits.admit(attempt);
  if (refused) { ctx.security('account.locked', who, 'once a minute'); return locked(refused.ms); }
  let ok: boolean;
  try { ok = await passwords.verify(password, s.user.passwordHash); } catch (e) {
    if (!(e instanceof HashBusy)) throw e;
    return accountPage(ctx, s, 429, { about, email, problem:
      'The server is busy with other sign-ins. Try again in a few seconds.' },
    { 'Retry-After': String(e.retryAfterSeconds) });
  }
  if (ok) { limits.succeed(attempt); return null; }
  const now = limits.fail(attempt);
  ctx.security('account.password_wrong', who);
  if (now) return locked(now.ms);
  return accountPage(ctx, s, 401, { about, email, problem: 'Your current password is not right.' });
}

/**
 * POST /settings/account/email (`email`, `password`): the user's new email, 303 to the page; 422 a field missing or
 * not an email, 409 the email is another user's (on the server), 401 the current password wrong, 429 locked.
 */
export async function postAccountEmail(ctx: WebCtx): Promise<WebAnswer> {
  const s = ctx.requireSession();
  const form = await ctx.form('session');
  const email = (form.get('email') ?? '').trim().slice(0, FIELD_MAX);
  const password = form.get('password') ?? '';
  const refuse = (status: number, problem: string) => accountPage(ctx, s, status, { about: 'email', email, problem });
  if (email === '' || password === '') return refuse(422, 'Enter the new email and your current password.');
  if (!EMAIL.test(email)) return refuse(422, 'The email must be an address such as ada@example.com.');
  const { store } = ctx.services;
  const holder = store.userByEmail(email);
  if (holder && holder.id !== s.user.id) return refuse(409, 'Another user has this email.');
  const wrong = await checkCurrent(ctx, s, password, 'email', email);
  if (wrong) return wrong;
  const current = store.system.get('user', s.user.id);
  if (!current) return redirect('/settings/login');
  if (store.userByEmail(email) && store.userByEmail(email)!.id !== current.id) return refuse(409,
    'Another user has this email.');
  const tx = store.system.begin();
  tx.put('user', current.id, { ...current, email } satisfies UserRec);
  await store.system.commit(tx);
  ctx.security('account.email_changed', { userId: current.id, workspaceId: current.workspaceId });
  return redirect('/settings/account?email=1');
}

/**
 * POST /settings/account/password (`current`, `password`): sets the new password and ends the user's other
 * sessions (this one stays), 303 to the page; 422 a field missing or the new password too short or long, 401 the
 * current password wrong, 429 locked.
 */
export async function postAccountPassword(ctx: WebCtx): Promise<WebAnswer> {
  const s = ctx.requireSession();
  const form = await ctx.form('session');
  const current = form.get('current') ?? '';
  const password = form.get('password') ?? '';
  const refuse = (status: number, problem: string) => accountPage(ctx, s, status, { about: 'password', problem });
  if (current === '' || password === '') return refuse(422, 'Enter your current password and the new one.');
  const problem = passwordProblem(password);
  if (problem) return refuse(422, problem);
  const wrong = await checkCurrent(ctx, s, current, 'password');
  if (wrong) return wrong;
  let hash: string;
  try { hash = await ctx.services.passwords.hash(password); } catch (e) {
    if (!(e instanceof HashBusy)) throw e;
    return refuse(429, 'The server is busy with other sign-ins. Try again in a few seconds.');
  }
  const { store } = ctx.services;
  const user = store.system.get('user', s.user.id);
  if (!user) return redirect('/settings/login');
  const tx = store.system.begin();
  tx.put('user', user.id, { ...user, passwordHash: hash });
  for (const [id, session] of store.system.table('session')) {
    if (session.userId === user.id && id !== s.session.id) tx.del('session', id);
  }
  await store.system.commit(tx);
  ctx.security('account.password_changed', { userId: user.id, workspaceId: user.workspaceId });
  return redirect('/settings/account?password=1');
}
