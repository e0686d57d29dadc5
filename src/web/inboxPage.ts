/**
 * The inbox (docs/web.md#inbox): the workspace's conversations with filters (status, channel, needs a person), one
 * conversation with its messages, suggested answers and hand-over reason, a reply as the signed-in person and a
 * status change. Replies and changes go through the conversations area's own functions, so the events and status
 * rules are the API's. `/assets/inbox.js` keeps an open page current from `/settings/inbox/stream`; without it,
 * a reload does. Another workspace's conversation answers 404 like an unknown id.
 */
import type { ServerResponse } from 'node:http';
import { html, seg, type Html } from './html.js';
import { csrfField, message, page, when } from './layout.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import { WebError } from './forms.js';
import type { SignedIn } from './sessions.js';
import { workspaceOf } from './sourcesPage.js';
import { addMessage, authorOf as authorOfMessage, CHANNELS, CONVERSATION_STATUSES, type Conversation,
  type ConversationStatus, type Message } from '../areas/conversations/conversations.js';
import type { Answer } from '../areas/answers/model.js';
import type { EventStreams } from '../areas/events/stream.js';
import type { Workspace } from '../domain/workspace.js';
import { iso } from '../core/clock.js';

/** Conversations on one page of the list. */
export const INBOX_PAGE = 50;
/** The longest reply (characters), as the widget's messages. */
export const MAX_REPLY = 4000;
/** Messages shown of one conversation: the newest ones. */
const THREAD_MESSAGES = 500;

/** The list's filters, read from the query (unknown values are ignored: a bookmark never breaks). */
interface Filters { status?: ConversationStatus; channel?: string; person: boolean; before?: string }

/** A conversation's hand-over request (set by the widget's "Talk to a person"), where the record has one. */
interface Handoff { requestedAt: string; reason?: string | null }
const handoffOf = (c: Conversation): Handoff | undefined =>
  (c as Conversation & { handoff?: Handoff | null }).handoff ?? undefined;
/** Whether a person is asked for and not yet given: a hand-over requested on a conversation that is not solved. */
export const needsPerson = (c: Conversation): boolean => handoffOf(c) !== undefined && c.status !== 'solved';

/** Who wrote a message, as the inbox shows it: the customer for `role` user, else its `author`'s kind and name. */
function authorOf(m: Message, c: Conversation): { kind: string; label: string } {
  const a = authorOfMessage(m);
  const type = m.role === 'user' ? 'customer' : a.type;
  const customer = c.customer.name ? `${c.customer.name} (customer)` : `${c.customer.email ?? 'visitor'} (customer)`;
  const label = type === 'customer' ? customer : type === 'user' ? (a.name ?? 'A person of the workspace')
    : type === 'bot' ? `${a.name ?? 'Agent'} (bot)` : (a.name ?? 'Support');
  return { kind: type, label };
}

function filtersOf(q: URLSearchParams): Filters {
  const status = q.get('status') ?? '';
  const channel = q.get('channel') ?? '';
  const before = q.get('before') ?? '';
  return { status: (CONVERSATION_STATUSES as readonly string[]).includes(status) ? status as ConversationStatus
    : undefined, channel: (CHANNELS as readonly string[]).includes(channel) ? channel : undefined,
  person: q.get('person') === '1', before: before !== '' && before.length <= 200 ? before : undefined };
}

/** The query string of `f` (without `before` unless `paging`), with a leading `?` when not empty. */
function queryOf(f: Filters, paging = false): string {
  const q = new URLSearchParams();
  if (f.status) q.set('status', f.status);
  if (f.channel) q.set('channel', f.channel);
  if (f.person) q.set('person', '1');
  if (paging && f.before) q.set('before', f.before);
  const text = q.toString();
  return text ? `?${text}` : '';
}

/** One page of the list, newest first: at most {@link INBOX_PAGE} matching conversations before `f.before`. */
function listed(ws: Workspace, f: Filters): { items: Conversation[]; next?: string } {
  const order = ws.conversations.order;
  const items: Conversation[] = [];
  let last = '';
  for (const at of order.desc(f.before)) {
    const c = ws.get('conversation', order.idAt(at));
    if (!c || (f.status && c.status !== f.status) || (f.channel && c.channel !== f.channel)
      || (f.person && !needsPerson(c))) continue;
    if (items.length === INBOX_PAGE) return { items, next: last };
    items.push(c);
    last = order.keyAt(at);
  }
  return { items };
}

function filterForm(f: Filters): Html {
  const option = (value: string, label: string, chosen: string | undefined) =>
    html`<option value="${value}"${chosen === value || (!chosen && value === '') ? html` selected` : ''}>${
      label}</option>`;
  return html`<form class="filters" method="get" action="/settings/inbox" aria-label="Filter conversations">
<label>Status <select name="status">${option('', 'any', f.status)}${CONVERSATION_STATUSES.map((s) =>
  option(s, s, f.status))}</select></label>
<label>Channel <select name="channel">${option('', 'any', f.channel)}${CHANNELS.map((c) =>
  option(c, c, f.channel))}</select></label>
<label class="check"><input type="checkbox" name="person" value="1"${f.person ? html` checked` : ''}> Needs a
  person</label>
<button type="submit" class="secondary">Filter</button>
</form>`;
}

function conversationItem(c: Conversation, f: Filters, current?: string): Html {
  const who = c.customer.name ?? c.customer.email;
  return html`<li class="conv${c.id === current ? ' current' : ''}" data-id="${c.id}">
<a href="/settings/inbox/${seg(c.id)}${queryOf(f)}"${c.id === current ? html` aria-current="page"` : ''}>
<span class="conv-top"><strong class="conv-subject">${c.subject}</strong> ${when(c.lastMessageAt ?? c.updatedAt)}</span>
<span class="conv-who">${who}</span>
<span class="conv-preview">${c.preview}</span>
<span class="scope-list"><span class="tag status-${c.status}">${c.status}</span><span class="tag">${c.channel}</span>${
  needsPerson(c) ? html`<span class="tag person">needs a person</span>` : ''}</span>
</a></li>`;
}

function listPart(ws: Workspace, f: Filters, current?: string): Html {
  const { items, next } = listed(ws, f);
  const older = next ? html`<p><a href="/settings/inbox${queryOf({ ...f, before: next }, true)}">Older
  conversations</a></p>` : '';
  return html`<div data-live-part="list">${items.length ? html`<ul class="inbox-list">${items.map((c) =>
    conversationItem(c, f, current))}</ul>` : html`<p class="empty">No conversation ${
    f.status || f.channel || f.person ? 'matches these filters' : 'yet'}.</p>`}${older}</div>`;
}

function messagesOf(ws: Workspace, c: Conversation): Message[] {
  const index = ws.conversations.messages.of(c.id);
  if (!index) return [];
  const out: Message[] = [];
  for (const at of index.desc()) {
    const m = ws.get('message', index.idAt(at));
    if (m) out.push(m);
    if (out.length === THREAD_MESSAGES) break;
  }
  return out.reverse();
}

function answersOf(ws: Workspace, c: Conversation): Answer[] {
  const index = ws.answers.of(c.id);
  const out: Answer[] = [];
  for (const at of index.desc()) {
    const a = ws.get('answer', index.idAt(at));
    if (a) out.push(a);
    if (out.length === 3) break;
  }
  return out;
}

function threadPart(ws: Workspace, c: Conversation): Html {
  const ms = messagesOf(ws, c);
  return html`<ol class="thread" data-live-part="messages" data-live-append aria-live="polite"
  aria-label="Messages">${ms.map((m) => {
    const a = authorOf(m, c);
    return html`<li class="msg from-${a.kind}" id="m-${m.id}"><span class="msg-who">${a.label}</span> ${
      when(m.createdAt)}<p class="msg-body">${m.body}</p></li>`;
  })}</ol>${ms.length === 0 ? html`<p class="empty">No messages yet.</p>` : ''}`;
}

function answersPart(ws: Workspace, s: SignedIn, c: Conversation): Html {
  const answers = answersOf(ws, c);
  if (answers.length === 0) return html`<div data-live-part="answers"></div>`;
  return html`<section data-live-part="answers" aria-labelledby="suggested"><h2 id="suggested">Suggested
  answers</h2>${answers.map((a) => html`<div class="card answer">
<p class="hint">${a.outcome === 'answered' ? 'From the sources' : a.outcome === 'uncertain'
    ? 'Uncertain: check before sending' : 'No source matched'} · ${when(a.createdAt)}</p>
<p class="msg-body">${a.text}</p>
${a.citations.length ? html`<ul class="citations">${a.citations.map((x) => html`<li>${
    x.url ? html`<a href="${x.url}">${x.title}</a>` : x.title}</li>`)}</ul>` : ''}
<form method="post" action="/settings/inbox/${seg(c.id)}/reply">${csrfField(s.csrf)}<input type="hidden"
  name="body" value="${a.text.slice(0, MAX_REPLY)}"><button type="submit" class="secondary">Send this
  answer</button></form>
</div>`)}</section>`;
}

function conversationPart(ws: Workspace, s: SignedIn, c: Conversation, o: { problem?: string; draft?: string }):
  Html {
  const h = handoffOf(c);
  const who = c.customer.name ? html`${c.customer.name} <span class="hint">${c.customer.email}</span>`
    : html`${c.customer.email}`;
  return html`<section class="conversation" aria-labelledby="conv-title">
<h1 id="conv-title">${c.subject}</h1>
<div data-live-part="facts"><dl class="facts"><dt>Customer</dt><dd>${who}</dd>
<dt>Status</dt><dd><span class="tag status-${c.status}">${c.status}</span></dd>
<dt>Channel</dt><dd>${c.channel}</dd><dt>Started</dt><dd>${when(c.createdAt)}</dd></dl>
${h && c.status !== 'solved' ? message('warn', html`<strong>The customer asked for a person</strong> ${
  when(h.requestedAt)}${h.reason ? html`: ${h.reason}` : '.'}`) : ''}</div>
${threadPart(ws, c)}
${answersPart(ws, s, c)}
<h2 id="reply-title">Reply</h2>
${o.problem ? message('error', o.problem) : ''}
<form class="card reply" method="post" action="/settings/inbox/${seg(c.id)}/reply" aria-labelledby="reply-title">
${csrfField(s.csrf)}
<label for="body">Your reply <span class="hint">sent to the customer as ${s.user.email}, at most ${
  MAX_REPLY} characters</span></label>
<textarea id="body" name="body" rows="4" maxlength="${MAX_REPLY}" required>${o.draft ?? ''}</textarea>
<div class="actions"><button type="submit">Send reply</button></div>
</form>
<form class="status-form" method="post" action="/settings/inbox/${seg(c.id)}/status">${csrfField(s.csrf)}
<label for="status">Status</label> <select id="status" name="status">${CONVERSATION_STATUSES.map((x) =>
  html`<option value="${x}"${x === c.status ? html` selected` : ''}>${x}</option>`)}</select>
<button type="submit" class="secondary">Change status</button></form>
</section>`;
}

function inboxPage(ctx: WebCtx, s: SignedIn, status: number, current?: Conversation,
  o: { problem?: string; draft?: string } = {}): WebAnswer {
  const ws = workspaceOf(ctx, s);
  const f = filtersOf(ctx.query);
  const list = html`<h1${current ? html` class="list-title"` : ''}>Inbox</h1>${filterForm(f)}${
    listPart(ws, f, current?.id)}`;
  const content = current
    ? html`<div class="inbox open" data-live="/settings/inbox/stream"><aside class="inbox-side"
  aria-label="Conversations">${list}</aside><div class="inbox-main"><p class="back"><a href="/settings/inbox${
  queryOf(f)}">← All conversations</a></p>${conversationPart(ws, s, current, o)}</div></div>`
    : html`<div class="inbox" data-live="/settings/inbox/stream">${list}</div>`;
  return pageAnswer(status, page({ title: current ? current.subject : 'Inbox', viewer: ctx.viewer(s),
    current: '/settings/inbox', content, scripts: ['/assets/inbox.js'] }));
}

/** The conversation `id` of the session's workspace. @throws WebError 404 */
function ownConversation(ws: Workspace, id: string): Conversation {
  const c = ws.get('conversation', id);
  if (!c) throw new WebError(404, 'There is no such conversation in this workspace.');
  return c;
}

/** GET /settings/inbox: the conversations, newest first, filtered by `status`, `channel`, `person=1`. */
export function getInbox(ctx: WebCtx): WebAnswer {
  return inboxPage(ctx, ctx.requireSession(), 200);
}

/** GET /settings/inbox/{id}: one conversation beside the list; 404 when not the workspace's. */
export function getConversation(ctx: WebCtx, id: string): WebAnswer {
  const s = ctx.requireSession();
  return inboxPage(ctx, s, 200, ownConversation(workspaceOf(ctx, s), id));
}

/**
 * POST /settings/inbox/{id}/reply (`body`): adds the reply as the signed-in person (`author.type` "user", role
 * `agent`) and answers 303 to the conversation; 422 with the page and what was typed for an empty or too long
 * reply; 404 when not the workspace's.
 */
export async function postReply(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  const form = await ctx.form('session');
  const ws = workspaceOf(ctx, s);
  const c = ownConversation(ws, id);
  const body = (form.get('body') ?? '').replace(/\r\n/g, '\n').trim();
  if (body === '') return inboxPage(ctx, s, 422, c, { problem: 'Write a reply first.' });
  if ([...body].length > MAX_REPLY) return inboxPage(ctx, s, 422, c, { draft: body,
    problem: `A reply must be at most ${MAX_REPLY} characters long.` });
  const tx = ws.db.begin();
  const at = ctx.services.clock.now();
  const { message: m } = addMessage(tx, c, { role: 'agent', body }, at,
    { type: 'user', id: s.user.id, name: s.user.email });
  await ws.db.commit(tx);
  return redirect(`/settings/inbox/${encodeURIComponent(c.id)}#m-${encodeURIComponent(m.id)}`);
}

/** POST /settings/inbox/{id}/status (`status`): 303 to the conversation; 422 for another value; 404 as above. */
export async function postStatus(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  const form = await ctx.form('session');
  const ws = workspaceOf(ctx, s);
  const c = ownConversation(ws, id);
  const status = form.get('status') ?? '';
  if (!(CONVERSATION_STATUSES as readonly string[]).includes(status)) return inboxPage(ctx, s, 422, c, {
    problem: `The status must be one of ${CONVERSATION_STATUSES.join(', ')}.` });
  if (status !== c.status) {
    const now = iso(ctx.services.clock.now());
    const next: Conversation = { ...c, status: status as ConversationStatus, updatedAt: now };
    if (status === 'solved') next.closedAt = now; else delete next.closedAt;
    const tx = ws.db.begin();
    tx.put('conversation', c.id, next);
    await ws.db.commit(tx);
  }
  return redirect(`/settings/inbox/${encodeURIComponent(c.id)}`);
}

/**
 * GET /settings/inbox/stream: the workspace's events as Server-Sent Events for `/assets/inbox.js` (the API's
 * stream, docs/api.md#event-stream, authenticated by the session cookie since EventSource sends no header); 406
 * unless the request takes `text/event-stream`; 503 with `Retry-After` past `SSE_MAX_STREAMS`.
 */
export function getInboxStream(streamsOf: () => EventStreams) {
  return (ctx: WebCtx): WebAnswer | StreamAnswer => {
    const streams = streamsOf();
    const s = ctx.requireSession();
    const ws = workspaceOf(ctx, s);
    if (!/\btext\/event-stream\b/.test(String(ctx.req.headers.accept ?? ''))) throw new WebError(406,
      'This address is the inbox\'s live event stream: it answers requests that accept text/event-stream.');
    if (streams.full) throw new WebError(503, 'Too many event streams are open. Try again in a moment.',
      { 'Retry-After': '10' });
    const last = ctx.req.headers['last-event-id'];
    return { kind: 'stream', start: (res) => streams.start(ws, res, { lastEventId: typeof last === 'string' && last
      !== '' && last.length <= 100 ? last : undefined, now: ctx.services.clock.now() }) };
  };
}

/** An answer that keeps the response open: its head is written by the app, then `start` takes it over. */
export interface StreamAnswer { kind: 'stream'; start: (res: ServerResponse) => void }
