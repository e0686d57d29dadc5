/**
 * The widget API under `/widget/v1` (docs/api.md#live-chat): sessions opened with a widget key, then, with the
 * session token, the visitor's own conversations, their messages, the hand-over action, feedback on answers and the
 * visitor's event stream. Another visitor's conversation answers 404 like one that never existed.
 */
import type { IncomingMessage } from 'node:http';
import { s, type Static } from '../../http/schema.js';
import type { Result } from '../../http/route.js';
import { ApiError } from '../../http/errors.js';
import { route, type Ctx } from '../../domain/route.js';
import { newId } from '../../core/ids.js';
import { iso, type Clock } from '../../core/clock.js';
import { hashKey, randomBase62 } from '../../auth/keys.js';
import type { SecretBox } from '../../core/secrets.js';
import type { ClientAddresses } from '../../http/clientAddress.js';
import type { Store } from '../../store/store.js';
import type { Workspace } from '../../domain/workspace.js';
import type { EventStreams } from '../events/stream.js';
import { addMessage, requestHandoff, type Conversation } from '../conversations/conversations.js';
import { compact, notFound, pageParams, paginate, listSchema } from '../common.js';
import { SortedIndex } from '../../store/memory/sorted.js';
import { IdentityError, verifyIdentity, type Identity } from './jwt.js';
import { WidgetAuth, newSessionToken, type WidgetCaller } from './auth.js';
import { WidgetLimits } from './limits.js';
import { SESSION_TTL_MS, ownerKey, ownerOf, type WidgetSession } from './model.js';
import { widgetConversationSchema, widgetConversationView, widgetMessageSchema, widgetMessageView } from './views.js';
import { identitySecret } from './identity.js';
import { visitorFilter } from './stream.js';

/** The longest message a visitor may send (characters). */
export const WIDGET_BODY_MAX = 4000;
const VISITOR_ID = /^vis_[0-9A-Za-z]{22}$/;

const body = s.string({ minLength: 1, maxLength: WIDGET_BODY_MAX, description: 'At most 4,000 characters.' });
const sessionBody = s.named('CreateWidgetSessionRequest', s.object({
  visitorId: s.optional(s.string({ maxLength: 64, description: 'The `visitorId` of an earlier session (`vis_…`), to '
    + 'resume that visitor\'s conversations.' })),
  identity: s.optional(s.string({ maxLength: 4096, description: 'A JWT (HS256 with the workspace\'s identity secret): '
    + '`sub`, `exp` (at most 24 h ahead) required, `email`, `name`, `company` optional.' })),
}));
const sessionResponse = s.named('WidgetSessionResponse', s.object({ session: s.object({
  token: s.string({ description: 'The session token (`svcs_…`): `Authorization: Bearer` on every other widget call.' }),
  expiresAt: s.string({ format: 'date-time' }), visitorId: s.string(),
  customer: s.object({ id: s.string(), name: s.nullable(s.string()), email: s.nullable(s.string()),
    identitySource: s.enum(['anonymous', 'verified'] as const) }),
}) }));
const conversationResponse = s.named('WidgetConversationResponse', s.object({
  conversation: widgetConversationSchema }));
const messageResponse = s.named('WidgetMessageResponse', s.object({ message: widgetMessageSchema }));
const createConversationBody = s.named('CreateWidgetConversationRequest', s.object({
  subject: s.optional(s.string({ minLength: 1, maxLength: 200 })), body }));
const messageBody = s.named('CreateWidgetMessageRequest', s.object({ body }));
const feedbackBody = s.named('WidgetFeedbackRequest', s.object({ helpful: s.boolean() }));
const feedbackResponse = s.named('WidgetFeedbackResponse', s.object({ feedback: s.object({
  answerId: s.string(), helpful: s.boolean(), createdAt: s.string({ format: 'date-time' }) }) }));

/** What the widget routes need of the server. */
export interface WidgetDeps { store: Store; secrets: SecretBox; clock: Clock; clients: ClientAddresses;
  streams: EventStreams }

const callerOf = (ctx: Ctx<unknown, unknown>): WidgetCaller & { session: WidgetSession } =>
  ctx.principal as WidgetCaller & { session: WidgetSession };
const ownerOfSession = (sess: WidgetSession): string => ownerKey(sess.identitySource, sess.customer.id);

/** The visitor's conversation `id`. @throws NotFoundError for another visitor's, or none. */
function own(ctx: Ctx<unknown, unknown>, id: string): Conversation {
  const { session } = callerOf(ctx);
  const c = ctx.ws.get('conversation', id);
  if (!c || ownerOf(c) !== ownerOfSession(session)) throw notFound();
  return c;
}

/** The visitor of a new session: verified from `identity`, else anonymous (`visitorId` given or new). */
function visitor(ctx: Ctx<unknown, Static<typeof sessionBody>>, secrets: SecretBox): Pick<WidgetSession, 'visitorId'
  | 'customer' | 'identitySource'> {
  const b = ctx.body;
  if (b.visitorId !== undefined && !VISITOR_ID.test(b.visitorId)) throw new ApiError('invalid_request',
    'visitorId must be a visitorId this server gave (vis_ and 22 letters or digits)');
  const visitorId = b.visitorId ?? `vis_${randomBase62(16).slice(0, 22)}`;
  if (b.identity === undefined) return { visitorId, customer: { id: visitorId }, identitySource: 'anonymous' };
  const secret = identitySecret(ctx.ws, secrets);
  if (secret === undefined) throw new ApiError('invalid_identity', 'the workspace has no identity secret');
  let id: Identity;
  try { id = verifyIdentity(b.identity, secret, ctx.now); } catch (e) {
    if (e instanceof IdentityError) throw new ApiError('invalid_identity', e.message);
    throw e;
  }
  return { visitorId, customer: compact({ id: id.sub, name: id.name, email: id.email, company: id.company }),
    identitySource: 'verified' };
}

/** The widget API's routes (docs/api.md#live-chat), and its preflight answer for the pipeline. */
export function widgetRoutes(deps: WidgetDeps) {
  const limits = new WidgetLimits(deps.clock);
  const auth = new WidgetAuth(deps.store as Store<Workspace>, deps.clock, (req, agentId) =>
    limits.session(deps.clients.clientKey(req), agentId), (req) => deps.clients.clientKey(req));
  const session = auth.session(false);
  const base = '/widget/v1';
  const routes = [
    route({
      method: 'POST', path: `${base}/sessions`, operationId: 'createWidgetSession', tag: 'Live chat', scope: 'widget',
      auth: auth.key, summary: 'Open a visitor session with the agent\'s widget key: anonymous, or verified with an '
        + '`identity` JWT; the token lasts 24 h.',
      body: sessionBody, bodyOptional: true, errors: [403],
      success: { status: 201, schema: sessionResponse, description: 'The session, its token shown once.' },
      handler: (ctx) => {
        const caller = ctx.principal as WidgetCaller;
        const who = visitor(ctx, deps.secrets);
        const token = newSessionToken(ctx.ws.id);
        const rec: WidgetSession = { id: hashKey(token), agentId: caller.agent.id, ...who, createdAt: iso(ctx.now),
          expiresAt: iso(ctx.now + SESSION_TTL_MS) };
        ctx.tx().put('widget_session', rec.id, rec);
        const session = { token, expiresAt: rec.expiresAt, visitorId: rec.visitorId, customer: { id: rec.customer.id,
          name: rec.customer.name ?? null, email: rec.customer.email ?? null, identitySource: rec.identitySource } };
        return { status: 201, body: { session }, replayBody: { session: { ...session, token: '(shown once)' } } };
      },
    }),
    route({
      method: 'POST', path: `${base}/conversations`, operationId: 'createWidgetConversation', tag: 'Live chat',
      scope: 'widget', auth: session, body: createConversationBody, errors: [403],
      summary: 'Start a conversation (channel `live-chat`) with the visitor\'s first message.',
      success: { status: 201, schema: conversationResponse, description: 'The conversation.' },
      handler: (ctx) => {
        const { session: sess } = callerOf(ctx);
        limits.message(sess.id);
        const now = iso(ctx.now);
        const conv: Conversation = { id: newId(), status: 'open', channel: 'live-chat', priority: 'medium',
          subject: ctx.body.subject ?? ctx.body.body.slice(0, 80), preview: '',
          customer: { ...sess.customer, identitySource: sess.identitySource }, createdAt: now, updatedAt: now,
          agentId: sess.agentId };
        // addMessage puts the conversation with its preview: one put, so one conversation.created event.
        const { conversation } = addMessage(ctx.tx(), conv, { role: 'user', body: ctx.body.body }, ctx.now,
          compact({ type: 'customer' as const, id: sess.customer.id, name: sess.customer.name }));
        return { status: 201, body: { conversation: widgetConversationView(conversation) } };
      },
    }),
    route({
      method: 'GET', path: `${base}/conversations`, operationId: 'listWidgetConversations', tag: 'Live chat',
      scope: 'widget', auth: session, errors: [403],
      summary: 'The visitor\'s own conversations, newest first (at most 100).',
      success: { status: 200, schema: listSchema('conversations', widgetConversationSchema),
        description: 'The visitor\'s conversations.' },
      handler: (ctx) => {
        const index = ctx.ws.widget.byOwner.get(ownerOfSession(callerOf(ctx).session));
        const list = [];
        for (const at of index?.desc() ?? []) {
          const c = ctx.ws.get('conversation', index!.idAt(at));
          if (c) list.push(c);
          if (list.length > 100) break;
        }
        return { status: 200, body: { object: 'list', hasMore: list.length > 100, nextCursor: null,
          conversations: list.slice(0, 100).map(widgetConversationView) } };
      },
    }),
    route({
      method: 'GET', path: `${base}/conversations/{conversationId}/messages`, operationId: 'listWidgetMessages',
      tag: 'Live chat', scope: 'widget', auth: session, errors: [403], query: s.object({ ...pageParams }),
      summary: 'The messages of one of the visitor\'s conversations, oldest first.',
      success: { status: 200, schema: listSchema('messages', widgetMessageSchema), description: 'A page of messages.' },
      handler: (ctx) => {
        const conv = own(ctx, ctx.params.conversationId);
        const index = ctx.ws.conversations.messages.of(conv.id) ?? new SortedIndex();
        const page = paginate(ctx, `widget-messages:${conv.id}`, index, 'asc', ctx.query, (id) => ctx.ws.get(
          'message', id));
        return { status: 200, body: { object: 'list', hasMore: page.hasMore, nextCursor: page.nextCursor,
          messages: page.items.map(widgetMessageView) } };
      },
    }),
    route({
      method: 'POST', path: `${base}/conversations/{conversationId}/messages`, operationId: 'createWidgetMessage',
      tag: 'Live chat', scope: 'widget', auth: session, body: messageBody, errors: [403],
      summary: 'Send a message as the visitor (at most 20 a minute per session).',
      success: { status: 201, schema: messageResponse, description: 'The message.' },
      handler: (ctx) => {
        const conv = own(ctx, ctx.params.conversationId);
        const { session: sess } = callerOf(ctx);
        limits.message(sess.id);
        const { message } = addMessage(ctx.tx(), conv, { role: 'user', body: ctx.body.body }, ctx.now,
          compact({ type: 'customer' as const, id: sess.customer.id, name: sess.customer.name }));
        return { status: 201, body: { message: widgetMessageView(message) } };
      },
    }),
    route({
      method: 'POST', path: `${base}/conversations/{conversationId}/handoff`, operationId: 'requestWidgetHandoff',
      tag: 'Live chat', scope: 'widget', auth: session, errors: [403],
      summary: 'The visitor asks for a person: `handoff` `{requestedAt, reason:"customer"}`, status `open`.',
      success: { status: 200, schema: conversationResponse, description: 'The conversation.' },
      handler: (ctx) => ({ status: 200, body: { conversation: widgetConversationView(requestHandoff(ctx.tx(),
        own(ctx, ctx.params.conversationId), 'customer', ctx.now, callerOf(ctx).session.agentId)) } }),
    }),
    route({
      method: 'POST', path: `${base}/answers/{answerId}/feedback`, operationId: 'createWidgetFeedback',
      tag: 'Live chat', scope: 'widget', auth: session, body: feedbackBody, errors: [403],
      summary: 'Whether an answer in one of the visitor\'s conversations helped; a second one replaces the first.',
      success: { status: 200, schema: feedbackResponse, description: 'The feedback as stored.' },
      handler: (ctx) => {
        const a = ctx.ws.get('answer', ctx.params.answerId);
        if (!a) throw notFound();
        own(ctx, a.conversationId);
        const feedback = { helpful: ctx.body.helpful, createdAt: iso(ctx.now) };
        ctx.tx().put('answer', a.id, { ...a, feedback });
        return { status: 200, body: { feedback: { answerId: a.id, ...feedback } } };
      },
    }),
    route({
      method: 'GET', path: `${base}/stream`, operationId: 'streamWidgetEvents', tag: 'Live chat', scope: 'widget',
      auth: auth.session(true), errors: [403, 503],
      query: s.object({ session: s.optional(s.string({ maxLength: 200, description: 'The session token, for '
        + 'EventSource (which cannot send headers); `Authorization: Bearer svcs_…` otherwise.' })) }),
      summary: 'The visitor\'s conversations as Server-Sent Events: `message.created` and `conversation.updated` with '
        + 'public fields only; `Last-Event-ID` resumes; a comment line every 25 s; at most 3 per session.',
      success: { status: 200, contentType: 'text/event-stream', description: 'The stream; it stays open.',
        schema: s.string({ description: 'Server-Sent Events (WHATWG HTML, "Server-sent events").' }) },
      handler: (ctx) => {
        if (deps.streams.full) throw new ApiError('service_unavailable', 'too many event streams are open',
          { 'Retry-After': '10' });
        const { session: sess } = callerOf(ctx);
        const release = limits.openStream(sess.id);
        const ws = ctx.ws;
        return { status: 200, body: null, stream: (res, req) => {
          res.once('close', release);
          const last = req.headers['last-event-id'];
          deps.streams.start(ws, res, { lastEventId: typeof last === 'string' && last !== '' ? last : undefined,
            filter: visitorFilter(ws, ownerOfSession(sess)), now: ctx.now });
        } };
      },
    }),
  ];
  return routes;
}

/** The pipeline's preflight answer (`OPTIONS /widget/v1/…`, see {@link WidgetAuth.preflight}); other paths: none. */
export function widgetPreflight(store: Store): (req: IncomingMessage, path: string) => Result | undefined {
  const auth = new WidgetAuth(store as Store<Workspace>, { now: () => 0 }, () => {});
  return (req, path) => (path.startsWith('/widget/v1/') ? auth.preflight(req) : undefined);
}
