/**
 * Sign-in, sign-out and activation pages (docs/web.md#routes-and-forms). Sign-in answers the
 * same for an unknown email, a wrong password and a user not yet activated, and takes the same
 * time (a decoy hash is checked); 10 failures for one email within 15 min lock it for 15 min,
 * whether a user has it or not (docs/security.md#lockout).
 */
import { html } from './html.js';
import { csrfField, message, page } from './layout.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import { SESSION_COOKIE, PRE_COOKIE, LOCKOUT } from './sessions.js';
import { verifyPassword, PASSWORD_MIN } from './passwords.js';
import { activate, checkActivation, passwordProblem } from './users.js';

const FIELD_MAX = 320;

/** The sign-in page, with `problem` above the form and `email` filled in again. */
function loginPage(ctx: WebCtx, status: number, o: { problem?: string; notice?: string; email?: string } = {}): WebAnswer {
  return pageAnswer(status, page({ title: 'Sign in', narrow: true, content: html`<h1>Sign in</h1>
${o.notice ? message('ok', o.notice) : ''}${o.problem ? message('error', o.problem) : ''}
<form class="card" method="post" action="/settings/login">
${csrfField(ctx.preCsrf())}
<label for="email">Email</label>
<input type="email" id="email" name="email" autocomplete="username" required maxlength="${FIELD_MAX}" value="${o.email ?? ''}"${o.email ? '' : html` autofocus`}>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required${o.email ? html` autofocus` : ''}>
<div class="actions"><button type="submit">Sign in</button></div>
</form>
<p class="hint">No password yet? Ask the server's operator for an activation link (<code>cli.js user create</code>).</p>` }));
}

/** GET /settings/login: the form, or the keys page for a browser already signed in. */
export function getLogin(ctx: WebCtx): WebAnswer {
  if (ctx.session()) return redirect('/settings/keys');
  const notice = ctx.query.get('activated') === '1' ? 'Your password is set. Sign in with it.'
    : ctx.query.get('signedOut') === '1' ? 'You are signed out.' : undefined;
  return loginPage(ctx, 200, { notice });
}

/**
 * POST /settings/login (`email`, `password`): a session and 303 to the keys page; 422 with the
 * form for a missing field; 401 for a wrong email or password; 429 while the email is locked.
 */
export async function postLogin(ctx: WebCtx): Promise<WebAnswer> {
  const limiter = ctx.services.limiter;
  const form = await ctx.form('pre');
  const email = (form.get('email') ?? '').trim().slice(0, FIELD_MAX);
  const password = form.get('password') ?? '';
  if (email === '' || password === '') return loginPage(ctx, 422, { problem: 'Enter your email and your password.', email });
  const { store } = ctx.services;
  const user = store.userByEmail(email);
  // Logged by user id when the email is a user's; otherwise not at all (a password typed into
  // the email field must not reach the log).
  const who = user ? { userId: user.id, workspaceId: user.workspaceId } : { userId: null };
  const locked = limiter.lockedFor(email);
  if (locked > 0) {
    ctx.security('signin.locked', who);
    return lockedAnswer(ctx, email, locked);
  }
  const ok = await verifyPassword(password, user?.passwordHash ?? null);
  if (!ok || !user) {
    const nowLocked = limiter.fail(email);
    ctx.security(nowLocked ? 'signin.locked' : 'signin.failed', who);
    if (nowLocked) return lockedAnswer(ctx, email, limiter.lockedFor(email));
    return loginPage(ctx, 401, { problem: 'The email or the password is not right.', email });
  }
  limiter.succeed(email);
  const token = await ctx.services.sessions.create(user);
  ctx.cookie(SESSION_COOKIE, token);
  ctx.cookie(PRE_COOKIE, '', 0);
  ctx.security('signin.ok', who);
  return redirect('/settings/keys');
}

function lockedAnswer(ctx: WebCtx, email: string, ms: number): WebAnswer {
  const minutes = Math.max(1, Math.ceil(ms / 60_000));
  const answer = loginPage(ctx, 429, { email, problem: `Too many failed sign-ins for this email (${LOCKOUT.failures} within ${LOCKOUT.windowMs / 60_000} minutes). Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.` });
  if (answer.kind === 'page') answer.headers = { 'Retry-After': String(Math.ceil(ms / 1000)) };
  return answer;
}

/** POST /settings/logout: ends the session, clears the cookie, 303 to the sign-in page. */
export async function postLogout(ctx: WebCtx): Promise<WebAnswer> {
  const s = ctx.session();
  if (!s) return redirect('/settings/login');
  await ctx.form('session');
  await ctx.services.sessions.end(s.session.id);
  ctx.cookie(SESSION_COOKIE, '', 0);
  ctx.security('signout', { userId: s.user.id, workspaceId: s.user.workspaceId });
  return redirect('/settings/login?signedOut=1');
}

/** The page for a link that cannot be used: 404 unknown, 410 used or expired. */
function deadLink(reason: 'unknown' | 'used' | 'expired'): WebAnswer {
  const text = reason === 'used' ? 'This activation link was already used. Sign in with the password you set, or ask the operator for a new link.'
    : reason === 'expired' ? 'This activation link has expired (links are valid for 24 hours). Ask the operator for a new one.'
      : 'This activation link is not valid. Check that it was copied whole, or ask the operator for a new one.';
  const status = reason === 'unknown' ? 404 : 410;
  return pageAnswer(status, page({ title: 'Activation link', narrow: true, content: html`<h1>Activation link</h1>${message('error', text)}<p><a href="/settings/login">Go to sign-in</a></p>` }));
}

function activatePage(ctx: WebCtx, status: number, token: string, email: string, problem?: string): WebAnswer {
  return pageAnswer(status, page({ title: 'Set your password', narrow: true, content: html`<h1>Set your password</h1>
${problem ? message('error', problem) : ''}
<form class="card" method="post" action="/settings/activate?token=${encodeURIComponent(token)}">
${csrfField(ctx.preCsrf())}
<p>For <strong>${email}</strong>.</p>
<input type="email" name="username" value="${email}" autocomplete="username" hidden>
<label for="password">New password <span class="hint">at least ${PASSWORD_MIN} characters</span></label>
<input type="password" id="password" name="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" autofocus>
<div class="actions"><button type="submit">Set password</button></div>
</form>` }));
}

/** GET /settings/activate?token=…: the password form, or why the link cannot be used. */
export function getActivate(ctx: WebCtx): WebAnswer {
  const token = ctx.query.get('token') ?? '';
  const check = checkActivation(ctx.services.store, token, ctx.services.clock.now());
  if (!check.ok) return deadLink(check.reason);
  return activatePage(ctx, 200, token, check.user.email);
}

/**
 * POST /settings/activate?token=… (`password`): sets the password (ending the user's sessions)
 * and 303 to the sign-in page; 422 with the form for a password that is too short or too long.
 */
export async function postActivate(ctx: WebCtx): Promise<WebAnswer> {
  const token = ctx.query.get('token') ?? '';
  const form = await ctx.form('pre');
  const { store, clock } = ctx.services;
  const check = checkActivation(store, token, clock.now());
  if (!check.ok) return deadLink(check.reason);
  const password = form.get('password') ?? '';
  const problem = passwordProblem(password);
  if (problem) return activatePage(ctx, 422, token, check.user.email, problem);
  const done = await activate(store, token, password, () => clock.now());
  if (!done.ok) return deadLink(done.reason);
  ctx.security('activation', { userId: done.user.id, workspaceId: done.user.workspaceId });
  return redirect('/settings/login?activated=1');
}
