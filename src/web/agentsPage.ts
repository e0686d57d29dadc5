/**
 * The agents page (docs/web.md#agents-page): the workspace's agents, each with how it answers (mode, sources,
 * instructions, hand-over), the origins its chat widget may be embedded on — both editable here as with
 * `PATCH /api/v1/agents/{id}` — and the snippet to paste into a site. Another workspace's agent answers 404.
 */
import { html, seg, type Html } from './html.js';
import { csrfField, message, page, when } from './layout.js';
import { pageAnswer, redirect, type WebAnswer, type WebCtx } from './context.js';
import { WebError } from './forms.js';
import type { SignedIn } from './sessions.js';
import { workspaceOf } from './sourcesPage.js';
import { WIDGET_PATH } from './widget/serve.js';
import { AGENT_MODES, agentSettings, type Agent, type AgentMode } from '../areas/agents.js';
import type { Workspace } from '../domain/workspace.js';
import { iso } from '../core/clock.js';
import { codePointLength } from '../http/schema.js';

/** The most origins an agent takes. */
export const MAX_ORIGINS = 50;

/** An agent's allowed origins, where the record has them (none: the widget is refused everywhere). */
const originsOf = (a: Agent): string[] => (a as Agent & { allowedOrigins?: string[] }).allowedOrigins ?? [];

/**
 * The origins typed in `text` (one a line, or separated by commas or spaces), each as `scheme://host[:port]`.
 * @returns the distinct origins in the order given, or the sentence that says what is wrong with the first bad one.
 */
export function parseOrigins(text: string): { origins: string[] } | { problem: string } {
  const out: string[] = [];
  for (const given of text.split(/[\s,]+/).filter((x) => x !== '')) {
    const bad = { problem: `“${given.slice(0, 200)}” is not an origin: write the scheme, the host and, when it is `
      + 'not the default, the port, with no path, such as https://shop.example or http://localhost:8080.' };
    let u: URL;
    try { u = new URL(given); } catch { return bad; }
    const rest = /^https?:\/\//i.test(given) ? given.slice(given.indexOf('//') + 2).replace(/\/$/, '') : '/';
    if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username !== '' || u.password !== ''
      || u.pathname !== '/' || u.search !== '' || u.hash !== '' || /[/?#]/.test(rest)
      || !/^(?:[a-z0-9.-]+|\[[0-9a-f:.]+\])$/.test(u.hostname)) return bad;
    if (!out.includes(u.origin)) out.push(u.origin);
  }
  if (out.length > MAX_ORIGINS) return { problem: `An agent takes at most ${MAX_ORIGINS} origins.` };
  return { origins: out };
}

/** The snippet a site pastes to show `a`'s widget. */
export const snippetOf = (publicUrl: string, a: Agent): string =>
  `<script src="${publicUrl}${WIDGET_PATH}" data-key="${a.widgetKey}" async></script>`;

function agentsOf(ws: Workspace): Agent[] {
  const out: Agent[] = [];
  for (const at of ws.agents.order.asc()) {
    const a = ws.get('agent', ws.agents.order.idAt(at));
    if (a) out.push(a);
  }
  return out;
}

/** What the answering form holds: the agent's settings, or what was typed. */
interface AnsweringDraft { mode: string; sources: string[]; instructions: string; handoffAfterUncertain: string }
/** What one agent's section says after a post: which form, its problem or that it was saved, and what was typed. */
interface Edit {
  id: string; form?: 'origins' | 'answering'; problem?: string; draft?: string; answering?: AnsweringDraft;
  saved?: boolean;
}

const MODE_LABELS: Record<AgentMode, string> = {
  off: 'Off: it does not answer', suggest: 'Suggest: answers wait in the inbox for a person to send',
  reply: 'Reply: it answers live-chat customers itself, citing the docs',
};

/** The form of how `a` answers: mode, sources (none ticked: every ready source), instructions, hand-over. */
function answeringForm(ws: Workspace, s: SignedIn, a: Agent, o: Edit): Html {
  const set = agentSettings(a);
  const d: AnsweringDraft = o.answering ?? { mode: set.mode, sources: set.sources, instructions: set.instructions,
    handoffAfterUncertain: String(set.handoffAfterUncertain) };
  const sources = [...ws.db.table('source').values()].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  const on = o.form === 'answering';
  return html`<h3>How it answers</h3>
${on && o.saved ? message('ok', 'How it answers is saved.') : ''}
${on && o.problem ? message('error', o.problem) : ''}
<form method="post" action="/settings/agents/${seg(a.id)}/answering">${csrfField(s.csrf)}
<fieldset><legend>Mode</legend><div class="scopes">${AGENT_MODES.map((m) => html`<label><input type="radio"
  name="mode" value="${m}"${d.mode === m ? html` checked` : ''}> ${MODE_LABELS[m]}</label>`)}</div></fieldset>
<fieldset><legend>Sources <span class="hint">none ticked: every ready source</span></legend>${sources.length === 0
    ? html`<p class="hint">This workspace has no sources yet: <a href="/settings/sources">add one</a>.</p>`
    : html`<div class="scopes">${sources.map((src) => html`<label><input type="checkbox" name="sources" value="${
      src.id}"${d.sources.includes(src.id) ? html` checked` : ''}> ${src.name}</label>`)}</div>`}</fieldset>
<label for="instructions-${a.id}">Instructions <span class="hint">given to the model, when one is set; at most 4,000
  characters</span></label>
<textarea id="instructions-${a.id}" name="instructions" rows="3">${d.instructions}</textarea>
<label for="handoff-${a.id}">Hand over after <span class="hint">this many unsure answers in a row (1–20)</span></label>
<input type="number" id="handoff-${a.id}" name="handoffAfterUncertain" min="1" max="20" step="1" value="${
  d.handoffAfterUncertain}">
<div class="actions"><button type="submit">Save how it answers</button></div>
</form>`;
}

function agentSection(ctx: WebCtx, s: SignedIn, ws: Workspace, a: Agent, edit: Edit | undefined): Html {
  const o: Edit = edit ?? { id: a.id };
  const origins = originsOf(a);
  const id = seg(a.id);
  const onOrigins = o.form === undefined || o.form === 'origins';
  return html`<section class="card agent" id="agent-${a.id}" aria-labelledby="agent-${a.id}-name">
<h2 id="agent-${a.id}-name">${a.name}</h2>
${a.description ? html`<p>${a.description}</p>` : ''}
<dl class="facts"><dt>Status</dt><dd>${a.enabled ? html`<span class="status-active">Enabled</span>`
  : html`<span class="status-revoked">Disabled</span>`}</dd>
<dt>Answers</dt><dd>${agentSettings(a).mode}</dd>
<dt>Widget key</dt><dd><code class="wrap">${a.widgetKey}</code></dd><dt>Created</dt><dd>${when(a.createdAt)}</dd></dl>
${answeringForm(ws, s, a, o)}
<h3>Where the chat widget may run</h3>
${onOrigins && o.saved ? message('ok', 'The allowed origins are saved.') : ''}
${onOrigins && o.problem ? message('error', o.problem) : ''}
${origins.length === 0 && !(onOrigins && o.problem) ? message('warn',
  'No origin is allowed yet, so the widget is refused on every site. Add the sites that embed it.') : ''}
<form method="post" action="/settings/agents/${id}/origins">${csrfField(s.csrf)}
<label for="origins-${a.id}">Allowed origins <span class="hint">one a line, such as https://shop.example; at most ${
  MAX_ORIGINS}</span></label>
<textarea id="origins-${a.id}" name="allowedOrigins" rows="3" spellcheck="false">${
  (onOrigins ? o.draft : undefined) ?? origins.join('\n')}</textarea>
<div class="actions"><button type="submit">Save origins</button></div>
</form>
<h3>Snippet</h3>
<p class="hint">Paste it into the pages of an allowed origin, before <code>&lt;/body&gt;</code>.</p>
<div class="secret snippet"><textarea id="snippet-${a.id}" readonly rows="3" aria-label="The snippet of ${a.name}"
  spellcheck="false">${snippetOf(ctx.services.publicUrl, a)}</textarea><button type="button" class="secondary"
  data-copy="snippet-${a.id}" hidden>Copy</button></div>
</section>`;
}

function agentsPage(ctx: WebCtx, s: SignedIn, status: number, edit?: Edit): WebAnswer {
  const ws = workspaceOf(ctx, s);
  const agents = agentsOf(ws);
  const rows = agents.map((a) => html`<tr><td data-label="Name"><a href="#agent-${a.id}">${a.name}</a></td>
<td data-label="Status">${a.enabled ? 'enabled' : 'disabled'}</td><td data-label="Answers">${agentSettings(a).mode}</td>
<td data-label="Origins">${originsOf(a).length ? originsOf(a).join(', ') : html`<span class="hint">none</span>`}</td>
<td data-label="Created">${when(a.createdAt)}</td></tr>`);
  const content = html`<h1>Agents</h1>
<p class="hint">Each agent has a chat widget for your site; it runs only on the origins you allow.</p>
${agents.length === 0 ? html`<p class="empty">This workspace has no agents yet. Create one with
  <code>POST /api/v1/agents</code>.</p>` : html`<table class="stack agents">
<thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Answers</th><th scope="col">Origins</th>
<th scope="col">Created</th></tr></thead><tbody>${rows}</tbody></table>
${agents.map((a) => agentSection(ctx, s, ws, a, edit?.id === a.id ? edit : undefined))}`}`;
  return pageAnswer(status, page({ title: 'Agents', viewer: ctx.viewer(s), current: '/settings/agents', content }));
}

/**
 * GET /settings/agents: the agents with their forms and snippets (`?saved=ID` says its origins were saved,
 * `?answering=ID` that how it answers was).
 */
export function getAgents(ctx: WebCtx): WebAnswer {
  const s = ctx.requireSession();
  const saved = ctx.query.get('saved');
  const answering = ctx.query.get('answering');
  if (answering) return agentsPage(ctx, s, 200, { id: answering, form: 'answering', saved: true });
  return agentsPage(ctx, s, 200, saved ? { id: saved, form: 'origins', saved: true } : undefined);
}

/**
 * POST /settings/agents/{id}/answering (`mode`, `sources` (repeated), `instructions`, `handoffAfterUncertain`): sets
 * how the agent answers, with the rules of `PATCH /api/v1/agents/{id}` (docs/api.md#answers), and answers 303 to
 * `/settings/agents?answering={id}#agent-{id}`; 422 with the page, the problem and what was typed; 404 when the
 * agent is not the workspace's.
 */
export async function postAgentAnswering(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  // 4,000 characters of instructions take up to 48 KiB percent-encoded (4 UTF-8 bytes each, 3 characters a byte).
  const form = await ctx.form('session', 64 * 1024);
  const ws = workspaceOf(ctx, s);
  const a = ws.get('agent', id);
  if (!a) throw new WebError(404, 'There is no such agent in this workspace.');
  const draft: AnsweringDraft = { mode: form.get('mode') ?? '', sources: form.getAll('sources'),
    instructions: (form.get('instructions') ?? '').replace(/\r\n/g, '\n'),
    handoffAfterUncertain: (form.get('handoffAfterUncertain') ?? '').trim() };
  const refuse = (problem: string) => agentsPage(ctx, s, 422, { id: a.id, form: 'answering', problem,
    answering: draft });
  const mode = AGENT_MODES.find((m) => m === draft.mode);
  if (mode === undefined) return refuse('Choose a mode: off, suggest or reply.');
  const sources = [...new Set(draft.sources)];
  if (sources.length > 100) return refuse('An agent answers from at most 100 sources.');
  if (sources.some((sid) => ws.db.get('source', sid) === undefined)) {
    return refuse('A source ticked is no longer in this workspace; the list is shown again as it is now.');
  }
  const length = codePointLength(draft.instructions);
  if (length > 4000) {
    return refuse(`The instructions are ${length.toLocaleString('en-US')} characters long; `
      + 'the most is 4,000.');
  }
  const handoff = /^\d{1,2}$/.test(draft.handoffAfterUncertain) ? Number(draft.handoffAfterUncertain) : NaN;
  if (!(handoff >= 1 && handoff <= 20)) return refuse('Hand over after must be a whole number from 1 to 20.');
  const next: Agent = { ...a, mode, sources, instructions: draft.instructions, handoffAfterUncertain: handoff };
  const before = agentSettings(a);
  if (JSON.stringify([before.mode, before.sources, before.instructions, before.handoffAfterUncertain])
    !== JSON.stringify([mode, sources, draft.instructions, handoff])) {
    const tx = ws.db.begin();
    tx.put('agent', a.id, { ...next, updatedAt: iso(ctx.services.clock.now()) });
    await ws.db.commit(tx);
  }
  return redirect(`/settings/agents?answering=${encodeURIComponent(a.id)}#agent-${encodeURIComponent(a.id)}`);
}

/**
 * POST /settings/agents/{id}/origins (`allowedOrigins`: origins one a line): replaces the agent's allowed origins and
 * answers 303 to `/settings/agents?saved={id}#agent-{id}`; 422 with the page and what was typed for a value that is
 * not an origin or too many; 404 when the agent is not the workspace's.
 */
export async function postAgentOrigins(ctx: WebCtx, id: string): Promise<WebAnswer> {
  const s = ctx.requireSession();
  const form = await ctx.form('session');
  const ws = workspaceOf(ctx, s);
  const a = ws.get('agent', id);
  if (!a) throw new WebError(404, 'There is no such agent in this workspace.');
  const draft = form.get('allowedOrigins') ?? '';
  const parsed = parseOrigins(draft);
  if ('problem' in parsed) return agentsPage(ctx, s, 422, { id: a.id, form: 'origins', problem: parsed.problem,
    draft });
  if (JSON.stringify(parsed.origins) !== JSON.stringify(originsOf(a))) {
    const tx = ws.db.begin();
    tx.put('agent', a.id, { ...a, allowedOrigins: parsed.origins, updatedAt: iso(ctx.services.clock.now()) } as Agent);
    await ws.db.commit(tx);
  }
  return redirect(`/settings/agents?saved=${encodeURIComponent(a.id)}#agent-${encodeURIComponent(a.id)}`);
}
