/**
 * The settings area's page shell and shared pieces (docs/web.md#rendering): a full HTML
 * document around a page's content, the top bar of a signed-in page (navigation and the
 * sign-out form), messages, the hidden CSRF field and dates. Everything goes through
 * {@link html}, so every value is escaped.
 */
import { html, type Html, type Part } from './html.js';

/** Who is signed in, for the top bar: the email, the CSRF token of the sign-out form, whether an owner. */
export interface Viewer { email: string; csrf: string; owner: boolean }

/** The pages of the top bar's navigation; `owner`: shown to owners only. */
const NAV: ReadonlyArray<{ path: string; label: string; owner?: true }> = [
  { path: '/settings/inbox', label: 'Inbox' }, { path: '/settings/agents', label: 'Agents' },
  { path: '/settings/keys', label: 'API keys' }, { path: '/settings/sources', label: 'Sources' },
  { path: '/settings/webhooks', label: 'Webhooks' }, { path: '/settings/users', label: 'Users', owner: true },
  { path: '/settings/account', label: 'Account' }];

/**
 * A whole page: `<title>` is `title · Support Workspace`; `current` marks the navigation item; `scripts`: more of
 * our own scripts (paths under /assets/), loaded deferred after the copy button's.
 */
export function page(o: { title: string; content: Html; viewer?: Viewer; current?: string; narrow?: boolean;
  scripts?: readonly string[] }): Html {
  const top = o.viewer
    ? html`<header class="top"><a class="brand" href="/settings/keys">Support Workspace</a>
<nav aria-label="Settings">${NAV.filter((n) => !n.owner || o.viewer?.owner).map((n) =>
  html`<a href="${n.path}"${n.path === o.current ? html` aria-current="page"` : ''}>${n.label}</a>`)}</nav>
<span class="who">${o.viewer.email}</span>
<form method="post" action="/settings/logout">${csrfField(
  o.viewer.csrf)}<button type="submit">Sign out</button></form></header>`
    : html`<header class="top"><span class="brand">Support Workspace</span></header>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Support Workspace</title>
<link rel="stylesheet" href="/assets/style.css">
<script src="/assets/copy.js" defer></script>
${(o.scripts ?? []).map((src) => html`<script src="${src}" defer></script>
`)}</head>
<body>
${top}
<main${o.narrow ? html` class="narrow"` : ''}>
${o.content}
</main>
</body>
</html>
`;
}

/** The hidden field every form carries (docs/security.md#csrf). */
export const csrfField = (token: string): Html => html`<input type="hidden" name="csrf" value="${token}">`;

/** A message box: `error` for what went wrong, `ok` for what was done, `warn` for what to mind. */
export function message(kind: 'error' | 'ok' | 'warn', content: Part): Html {
  return html`<div class="message ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${content}</div>`;
}

/** An ISO timestamp as `2026-06-29 12:00 UTC` in a `<time>` element; `—` for none. */
export function when(isoText: string | null | undefined): Html {
  if (!isoText) return html`<span class="hint">—</span>`;
  return html`<time datetime="${isoText}">${isoText.slice(0, 10)} ${isoText.slice(11, 16)} UTC</time>`;
}

/** The page of a refusal or a missing page: a heading and a sentence, with a way back. */
export function errorPage(status: number, text: string, viewer?: Viewer): Html {
  const titles: Record<number, string> = {
    400: 'Bad request', 403: 'Forbidden', 404: 'Not found', 405: 'Method not allowed', 409: 'Not possible',
    410: 'Link no longer valid',
    413: 'Form too large', 415: 'Unsupported form', 429: 'Too many attempts', 500: 'Something went wrong',
      503: 'Unavailable',
  };
  const title = titles[status] ?? 'Error';
  return page({ title, viewer, narrow: !viewer, content: html`<h1>${title}</h1>
<div class="card"><p>${text}</p><p><a href="${viewer ? '/settings/keys' : '/settings/login'}">${
  viewer ? 'Back to the settings' : 'Go to sign-in'}</a></p></div>` });
}
