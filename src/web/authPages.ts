/**
 * Sign-in, sign-out and activation pages (docs/web.md#routes-and-forms). Sign-in answers the
 * same for an unknown email, a wrong password and a user not yet activated, and takes the same
 * time (a decoy hash is checked); the limits per email, address and device are
 * src/web/signInLimits.ts (docs/security.md#lockout).
 */
import { html } from './html.js';
import { csrfField, message, page } from './layout.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import { CELL_COOKIE, SESSION_COOKIE, PRE_COOKIE, DEVICE_COOKIE, DEVICE_TTL_MS } from './sessions.js';
import { LOCKOUT, type Attempt, type Refusal } from './signInLimits.js';
import { HashBusy } from './hashLanes.js';
import { PASSWORD_MIN } from './passwords.js';
import { activate, checkActivation, passwordProblem } from './users.js';

const FIELD_MAX = 320;
/** The device cookie goes only to the sign-in form's address. */
const DEVICE_PATH = '/settings/login';
/**
 * How long a sign-in refused by its address's limits is held before its 429 (ms, real time): a client looping on
 * keep-alive connections gets one refusal per connection and second, not as many as the event loop can answer.
 */
export const REFUSAL_HOLD_MS = 1000;
const hold = () => new Promise<void>((resolve) => setTimeout(resolve, REFUSAL_HOLD_MS).unref());

/** The sign-in page, with `problem` above the form and `email` filled in again. */
function loginPage(ctx: WebCtx, status: number, o: { problem?: string; notice?: string; email?: string } = {},
  headers?: Record<string, string>): WebAnswer {
  return pageAnswer(status, page({ title: 'Sign in', narrow: true, content: html`<h1>Sign in</h1>
${o.notice ? message('ok', o.notice) : ''}${o.problem ? message('error', o.problem) : ''}
<form class="card" method="post" action="/settings/login">
${csrfField(ctx.preCsrf())}
<label for="email">Email</label>
<input type="email" id="email" name="email" autocomplete="username" required maxlength="${FIELD_MAX}"
  value="${o.email ?? ''}"${o.email ? '' : html` autofocus`}>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required${
  o.email ? html` autofocus` : ''}>
<div class="actions"><button type="submit">Sign in</button></div>
</form>
<p class="hint">No password yet? Ask a workspace owner or the server's operator for an activation link
  (<code>cli.js user create</code>).</p>` }), headers);
}

/** GET /settings/login: the form, or the keys page for a browser already signed in. */
export function getLogin(ctx: WebCtx): WebAnswer {
  if (ctx.session()) return redirect('/settings/keys');
  const notice = ctx.query.get('activated') === '1' ? 'Your password is set. Sign in with it.'
    : ctx.query.get('signedOut') === '1' ? 'You are signed out.' : undefined;
  return loginPage(ctx, 200, { notice });
}

/**
 * POST /settings/login (`email`, `password`): a session (and a renewed device cookie) and 303 to
 * the keys page; 422 with the form for a missing field; 401 for a wrong email or password; 429
 * with `Retry-After` while the email or the client's address is held by the sign-in limits (an
 * address's after {@link REFUSAL_HOLD_MS}), or at once when the hasher's queue is full
 * (docs/security.md#lockout, #sign-in-cost).
 */
export async function postLogin(ctx: WebCtx): Promise<WebAnswer> {
  const { store, limits, passwords, sessions } = ctx.services;
  const form = await ctx.form('pre');
  const email = (form.get('email') ?? '').trim().slice(0, FIELD_MAX);
  const password = form.get('password') ?? '';
  if (email === '' || password === '') return loginPage(ctx, 422,
    { problem: 'Enter your email and your password.', email });
  const user = store.userByEmail(email);
  // Logged by user id when the email is a user's; otherwise not at all (a password typed into
  // the email field must not reach the log).
  const who = user ? { userId: user.id, workspaceId: user.workspaceId } : { userId: null };
  const attempt: Attempt = { email, client: ctx.client, device: sessions.knownDevice(ctx.cookieValue(DEVICE_COOKIE),
    user) };
  const refused = limits.admit(attempt);
  if (refused) {
    ctx.security(refused.by === 'email' ? 'signin.locked' : 'signin.limited', who, 'once a minute');
    if (refused.by === 'address') await hold();
    return refusedAnswer(ctx, email, refused);
  }
  let ok: boolean;
  try {
    ok = await passwords.verify(password, user?.passwordHash ?? null);
  } catch (e) {
    if (!(e instanceof HashBusy)) throw e;
    ctx.security('signin.busy', who, 'once a minute');
    // Not queued for a hash, but held like an address's refusal: a busy answer costs the flood its connection's turn.
    await hold();
    return busyAnswer(ctx, email, e);
  }
  if (!ok || !user) {
    const locked = limits.fail(attempt);
    ctx.security(locked ? 'signin.locked' : 'signin.failed', who);
    if (locked) return refusedAnswer(ctx, email, locked);
    return loginPage(ctx, 401, { problem: 'The email or the password is not right.', email });
  }
  limits.succeed(attempt);
  const token = await sessions.create(user);
  ctx.cookie(SESSION_COOKIE, token);
  if (ctx.services.cell) ctx.cookie(CELL_COOKIE, `cell_${ctx.services.cell}`);
  ctx.cookie(PRE_COOKIE, '', 0);
  ctx.cookie(DEVICE_COOKIE, sessions.deviceToken(user), DEVICE_TTL_MS / 1000, DEVICE_PATH);
  ctx.security('signin.ok', who);
  return redirect('/settings/keys');
}

const inMinutes = (ms: number) => { const m = Math.max(1, Math.ceil(
  ms / 60_000)); return `${m} minute${m === 1 ? '' : 's'}`; };

function refusedAnswer(ctx: WebCtx, email: string, r: Refusal): WebAnswer {
  const problem = r.by === 'email'
    ? `Too many failed sign-ins for this email (${LOCKOUT.failures} within ${LOCKOUT.windowMs / 60_000} minutes). `
      + `Try again in ${inMinutes(r.ms)}.`
    : `Too many sign-ins from this address. Try again in ${inMinutes(r.ms)}.`;
  return loginPage(ctx, 429, { email, problem }, { 'Retry-After': String(Math.max(1, Math.ceil(r.ms / 1000))) });
}

function busyAnswer(ctx: WebCtx, email: string, e: HashBusy): WebAnswer {
  return loginPage(ctx, 429, { email, problem: 'The server is busy with other sign-ins. Try again in a few seconds.' },
    { 'Retry-After': String(e.retryAfterSeconds) });
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
  const text = reason === 'used'
    ? 'This activation link was already used. Sign in with the password you set, or ask the operator for a new link.'
    : reason === 'expired'
      ? 'This activation link has expired (links are valid for 24 hours). Ask the operator for a new one.'
      : 'This activation link is not valid. Check that it was copied whole, or ask the operator for a new one.';
  const status = reason === 'unknown' ? 404 : 410;
  return pageAnswer(status, page({ title: 'Activation link', narrow: true,
    content: html`<h1>Activation link</h1>${message('error', text)}<p><a href="/settings/login">Go to
  sign-in</a></p>` }));
}

function activatePage(ctx: WebCtx, status: number, token: string, email: string, problem?: string,
  headers?: Record<string, string>): WebAnswer {
  return pageAnswer(status, page({ title: 'Set your password', narrow: true, content: html`<h1>Set your password</h1>
${problem ? message('error', problem) : ''}
<form class="card" method="post" action="/settings/activate?token=${encodeURIComponent(token)}">
${csrfField(ctx.preCsrf())}
<p>For <strong>${email}</strong>.</p>
<input type="email" name="username" value="${email}" autocomplete="username" hidden>
<label for="password">New password <span class="hint">at least ${PASSWORD_MIN} characters</span></label>
<input type="password" id="password" name="password" autocomplete="new-password" required
  minlength="${PASSWORD_MIN}" autofocus>
<div class="actions"><button type="submit">Set password</button></div>
</form>` }), headers);
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
  let done: Awaited<ReturnType<typeof activate>>;
  try {
    done = await activate(store, ctx.services.passwords, token, password, () => clock.now());
  } catch (e) {
    if (!(e instanceof HashBusy)) throw e;
    return activatePage(ctx, 429, token, check.user.email,
      'The server is busy with other sign-ins. Try again in a few seconds.',
      { 'Retry-After': String(e.retryAfterSeconds) });
  }
  if (!done.ok) return deadLink(done.reason);
  ctx.security('activation', { userId: done.user.id, workspaceId: done.user.workspaceId });
  return redirect('/settings/login?activated=1');
}
