/**
 * POST and GET /api/v1/conversations/{id}/answers (docs/api.md#answers): an agent answers the customer's recent
 * messages from its sources — retrieval (retrieve.ts), then an extractive text or a model's (compose.ts) — and the
 * answer is stored with its citations; the event `answer.created` follows from the record (src/areas/events).
 */
import { s } from '../../http/schema.js';
import { ApiError } from '../../http/errors.js';
import { iso } from '../../core/clock.js';
import { newId } from '../../core/ids.js';
import { route } from '../../domain/route.js';
import type { Workspace } from '../../domain/workspace.js';
import type { SourceIndexRec } from '../../ingest/types.js';
import { agentSettings, type Agent } from '../agents.js';
import { listSchema, notFound, pageParams, paginate, type RouteDeps } from '../common.js';
import { docsUrl, isServed } from '../sources/publicDocs.js';
import type { Source } from '../sources/model.js';
import { REDACTED, Redactor } from '../sources/redaction.js';
import { retrieve, type Passage, type RetrievalSource } from './retrieve.js';
import { askModel, citedNumbers, extractiveText, outcomeOf, promptOf, UNCERTAIN_TEXT } from './compose.js';
import { answerSchema, answerView, type Answer, type AnswerOutcome, type Citation } from './model.js';

/** Customer messages (newest first) that make the question; messages of the conversation given to a model. */
const QUESTION_MESSAGES = 3;
const TRANSCRIPT_MESSAGES = 10;
/** Tokens of this service (keys, widget keys and sessions, webhook secrets): never sent to a model. */
const TOKENS = /\b(?:svck|svcw|svcs|whsec)_[A-Za-z0-9+/=]{8,}/g;

const links = new WeakMap<SourceIndexRec, ReadonlyMap<string, { anchor: string; page: number }>>();
/** The public docs address of `documentId`'s section when `src` is published, else null. */
function citationUrl(deps: RouteDeps, src: Source, idx: SourceIndexRec, documentId: string | null): string | null {
  if (!isServed(src) || documentId === null || !deps.docsLinks) return null;
  let m = links.get(idx);
  if (!m) links.set(idx, (m = deps.docsLinks(src, idx)));
  const home = docsUrl(deps.publicUrl, src.publicDocs.slug)!;
  const at = m.get(documentId);
  return at ? `${home}${at.page === 1 ? '' : `?page=${at.page}`}#${at.anchor}` : home;
}

/** The agent asked for, or the oldest enabled one. @throws 404 for an unknown id, 409 without an enabled agent. */
function agentFor(ws: Workspace, agentId: string | undefined): Agent {
  if (agentId !== undefined) return ws.get('agent', agentId) ?? (() => { throw notFound(); })();
  for (const at of ws.agents.order.asc()) {
    const a = ws.get('agent', ws.agents.order.idAt(at));
    if (a?.enabled) return a;
  }
  throw new ApiError('conflict', 'the workspace has no enabled agent to answer with');
}

/** The agent's ready sources with their ingestion output: its `sources`, or every ready source when empty. */
function sourcesOf(ws: Workspace, agent: Agent): Array<RetrievalSource & { src: Source }> {
  const ids = agentSettings(agent).sources;
  const candidates = ids.length > 0 ? ids.map((id) => ws.get('source', id)).filter((x): x is Source => !!x)
    : [...ws.db.table('source').values()];
  const out: Array<RetrievalSource & { src: Source }> = [];
  for (const src of candidates) {
    const idx = src.status === 'ready' ? ws.get('source_index', src.id) : undefined;
    const entry = idx && ws.sources.search.entryOf(src.id);
    if (idx && entry) out.push({ id: src.id, idx, entry, src });
  }
  return out;
}

/** Removes this service's tokens and every stored source credential of the workspace from texts for a model. */
function redactorOf(ws: Workspace, deps: RouteDeps): (text: string) => string {
  const creds: Redactor[] = [];
  for (const src of ws.db.table('source').values()) {
    if (!src.credential) continue;
    try {
      creds.push(new Redactor({ secret: deps.secrets.open(src.credential.sealed, `${ws.id}/${src.id}`),
        username: src.credential.username }));
    } catch { /* a credential that cannot be opened cannot be in a text either */ }
  }
  return (text) => creds.reduce((t, r) => r.redact(t), text.replace(TOKENS, REDACTED));
}

const answerResponse = s.named('AnswerResponse', s.object({ answer: answerSchema }));
const base = '/api/v1/conversations/{conversationId}/answers';

/** The answers routes; `deps` gives the model's settings, the public URL and the secrets box. */
export function answerRoutes(deps: RouteDeps) {
  return [
    route({
      method: 'POST', path: base, operationId: 'createAnswer', tag: 'Conversations', scope: 'conversations:write',
      summary: 'Answer the customer\'s recent messages from the agent\'s sources (default: the oldest enabled '
        + 'agent), with citations; extractive without a model.',
      body: s.named('CreateAnswerRequest', s.object({ agentId: s.optional(s.string({ format: 'uuid' })) })),
      bodyOptional: true, errors: [409],
      success: { status: 201, schema: answerResponse, description: 'The answer.' },
      handler: async (ctx) => {
        const conv = ctx.ws.get('conversation', ctx.params.conversationId);
        if (!conv) throw notFound();
        const agent = agentFor(ctx.ws, ctx.body.agentId);
        const answer = await composeAnswer(ctx.ws, deps, conv.id, agent, ctx.now);
        if (answer === null) throw new ApiError('conflict', 'the conversation has no customer message to answer');
        ctx.tx().put('answer', answer.id, answer);
        return { status: 201, body: { answer: answerView(answer) } };
      },
    }),
    route({
      method: 'GET', path: base, operationId: 'listAnswers', tag: 'Conversations', scope: 'conversations:read',
      summary: 'List a conversation\'s answers, oldest first.',
      query: s.object({ ...pageParams }),
      success: { status: 200, schema: listSchema('answers', answerSchema), description: 'A page of answers.' },
      handler: (ctx) => {
        const conv = ctx.ws.get('conversation', ctx.params.conversationId);
        if (!conv) throw notFound();
        const page = paginate(ctx, `answers:${conv.id}`, ctx.ws.answers.of(conv.id), 'asc', ctx.query,
          (id) => ctx.ws.get('answer', id));
        return { status: 200, body: { object: 'list', hasMore: page.hasMore, nextCursor: page.nextCursor,
          answers: page.items.map(answerView) } };
      },
    }),
  ];
}

/**
 * Answers the customer's recent messages of conversation `conversationId` as `agent` (docs/api.md#answers):
 * retrieval over the agent's sources, then the extractive text or, with `AGENT_LLM_URL`, the model's (20 s at most;
 * no valid citation, a refusal or a timeout → `uncertain`). The answer is not stored; null when the conversation has
 * no customer message. `now`: ms. Used by the answers route and by the agents' modes (autoReply.ts).
 */
export async function composeAnswer(ws: Workspace, deps: RouteDeps, conversationId: string, agent: Agent,
  now: number): Promise<Answer | null> {
  const recent = recentMessages(ws, conversationId);
  const asked = recent.filter((m) => m.role === 'user');
  if (asked.length === 0) return null;
  const question = asked.slice(0, QUESTION_MESSAGES).map((m) => m.body).join('\n');
  const sources = sourcesOf(ws, agent);
  const found = retrieve(sources, question);
  const bySource = new Map(sources.map((x) => [x.id, x]));
  const cite = (p: Passage): Citation => {
    const x = bySource.get(p.sourceId)!;
    return { sourceId: p.sourceId, documentId: p.documentId, endpointId: p.endpointId, method: p.method,
      path: p.path, title: p.title, url: citationUrl(deps, x.src, x.idx, p.documentId),
      score: Math.round(p.score * 1000) / 1000 };
  };
  let outcome: AnswerOutcome = outcomeOf(found);
  let text = extractiveText(outcome, found, question);
  let citations = found.passages.map(cite);
  let model: string | null = null;
  const llm = deps.config.agentLlm;
  if (llm && outcome !== 'no_sources') {
    const redact = redactorOf(ws, deps);
    const safe = found.passages.map((p) => ({ ...p, title: redact(p.title), text: redact(p.text) }));
    const transcript = recent.slice(0, TRANSCRIPT_MESSAGES).reverse().map((m) => ({ customer: m.role === 'user',
      body: redact(m.body) }));
    const reply = await askModel(llm, promptOf(redact(agentSettings(agent).instructions), safe, transcript));
    model = llm.model;
    const cited = reply.ok && !reply.refusal ? citedNumbers(reply.text, found.passages.length) : [];
    if (reply.ok && cited.length > 0) {
      outcome = 'answered';
      text = reply.text;
      citations = cited.map((n) => cite(found.passages[n - 1]));
    } else {
      outcome = 'uncertain';
      text = reply.ok && reply.text !== '' && !/^UNCERTAIN\b/.test(reply.text) ? reply.text : UNCERTAIN_TEXT;
    }
  }
  return { id: newId(now), conversationId, messageId: asked[0].id, agentId: agent.id, outcome, text, citations, model,
    createdAt: iso(now) };
}

/** The conversation's newest messages, newest first (at most {@link TRANSCRIPT_MESSAGES}). */
function recentMessages(ws: Workspace, conversationId: string) {
  const index = ws.conversations.messages.of(conversationId);
  const out = [];
  if (index) {
    for (const at of index.desc()) {
      const m = ws.get('message', index.idAt(at));
      if (m) out.push(m);
      if (out.length === TRANSCRIPT_MESSAGES) break;
    }
  }
  return out;
}
