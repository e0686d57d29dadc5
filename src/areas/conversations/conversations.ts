/** Conversations and messages (docs/api.md#conversations-and-messages). */
import { s, type Static } from '../../http/schema.js';
import { ConflictError } from '../../core/errors.js';
import { route, type Ctx } from '../../domain/route.js';
import { ViewCache, listJson } from '../../http/viewCache.js';
import { newId } from '../../core/ids.js';
import { iso } from '../../core/clock.js';
import type { Workspace } from '../../domain/workspace.js';
import { SortedIndex } from '../../store/memory/sorted.js';
import type { Db, Tx } from '../../store/db.js';
import { attachIndexes, orderBy, persistSortedMap, uniqueBy } from '../../store/indexes.js';
import { CustomerIds } from './customerIds.js';
import { answeringAgent } from '../answers/model.js';
import { compact, listSchema, notFound, pageParams, paginate, preview, priority, type Priority } from '../common.js';

export const CONVERSATION_STATUSES = ['open', 'waiting', 'solved'] as const;
export const CHANNELS = ['api', 'live-chat', 'email', 'discord'] as const;
export type ConversationStatus = (typeof CONVERSATION_STATUSES)[number];
export type Channel = (typeof CHANNELS)[number];

/** A conversation's customer; `email` is absent for an anonymous widget visitor (docs/api.md#live-chat). */
export interface Customer { id: string; name?: string; email?: string; company?: string; identitySource: string }
/** Why a person was asked for (docs/api.md#hand-over). */
export const HANDOFF_REASONS = ['customer', 'uncertain', 'api'] as const;
export interface Handoff {
  requestedAt: string; reason: (typeof HANDOFF_REASONS)[number];
  /** Internal (not returned): the agent that handed over or was answering, for analytics. */
  agentId?: string;
}
/** The API view of a hand-over. */
export const handoffView = (h: Handoff | undefined) => h && { requestedAt: h.requestedAt, reason: h.reason };
/** Who wrote a message (docs/api.md#message-author). */
export const AUTHOR_TYPES = ['customer', 'user', 'bot', 'api'] as const;
export interface Author { type: (typeof AUTHOR_TYPES)[number]; id?: string; name?: string }
export interface Conversation {
  id: string; externalId?: string; status: ConversationStatus; channel: Channel; priority: Priority;
  subject: string; preview: string; customer: Customer;
  createdAt: string; updatedAt: string; lastMessageAt?: string; closedAt?: string;
  /** Internal (not returned): first agent reply, for analytics' first-response time. */
  firstResponseAt?: string;
  /** Internal (not returned): a person's last reply since the conversation was last solved; the bot is silent then. */
  humanRepliedAt?: string;
  /** Internal (not returned): the agent whose widget key started it; it answers there (docs/api.md#agent-modes). */
  agentId?: string;
  /** Set when a person was asked for; kept while the conversation is not solved (docs/api.md#hand-over). */
  handoff?: Handoff;
}
export interface Message {
  id: string; conversationId: string; role: 'user' | 'agent'; body: string; createdAt: string;
  /** Absent in records written before authors existed: read as `{type:"api"}` ({@link authorOf}). */
  author?: Author;
  /** A bot message that is an agent's answer: the answer's id (feedback goes to it). */
  answerId?: string }

/** The author of `m`, derived for older records (all written through the API or import). */
export const authorOf = (m: Message): Author => m.author ?? { type: 'api' };
/** The record types of the conversations area. */
export interface ConversationRecords { conversation: Conversation; message: Message }

/** The indexes of conversations (docs/storage.md#indexes). */
export const conversationIndexes = {
  /** By (createdAt, id): the list order, and analytics' range scans. */
  order: orderBy((c: Conversation) => c.createdAt),
  /** `externalId` → id: an `externalId` is unique in a workspace. */
  byExternalId: uniqueBy((c: Conversation) => c.externalId),
};

/** A conversation's messages by (createdAt, id), holding the one shared copy of its id. */
export class MessageIndex extends SortedIndex {
  constructor(readonly conversationId: string) { super(); }
}

/** Every conversation's {@link MessageIndex}, kept current on every change of a message. */
export class MessagesByConversation {
  private readonly byConversation = new Map<string, MessageIndex>();

  constructor(db: Db<ConversationRecords>) {
    // Saved in the snapshot block (docs/storage.md#snapshots): a start restores it as it was.
    db.on('message', (id, prev, next) => this.apply(id, prev, next),
      persistSortedMap('message.byConversation/1', 'message', () => this.byConversation, (cid) =>
        new MessageIndex(cid)));
  }

  /** The number of conversations with messages. */
  get size(): number { return this.byConversation.size; }

  /** The messages of conversation `conversationId` by (createdAt, id), or undefined when it has none. */
  of(conversationId: string): SortedIndex | undefined { return this.byConversation.get(conversationId); }

  private apply(id: string, prev: Message | undefined, next: Message | undefined): void {
    const cid = (next ?? prev)!.conversationId;
    let idx = this.byConversation.get(cid);
    if (!idx) { idx = new MessageIndex(cid); this.byConversation.set(cid, idx); }
    // Interning: every message of a conversation shares one conversationId string instead of each parsed record's own
    // equal copy; equal strings are indistinguishable.
    if (next) next.conversationId = idx.conversationId;
    if (prev && next && prev.createdAt === next.createdAt) return;
    if (prev) idx.remove(prev.createdAt, id);
    if (next) idx.add(next.createdAt, id);
  }
}

/**
 * The conversations area's state in a workspace: its declared indexes, every conversation's messages in order, and the
 * customer id of each email — all kept current by `db`'s listeners.
 */
export function attachConversations(db: Db<ConversationRecords>) {
  const customerIds = new CustomerIds();
  db.on('conversation', (_id, prev, next) => customerIds.apply(prev?.customer, next?.customer),
    customerIds.persist('conversation.customerIds/1'));
  return { ...attachIndexes(db, 'conversation', conversationIndexes), messages: new MessagesByConversation(db),
    customerIds };
}

const subject = s.string({ minLength: 1, maxLength: 200 });
const conversationStatus = s.named('ConversationStatus', s.enum(CONVERSATION_STATUSES, {
  description: 'open → waiting (an agent replied) → solved; a user message reopens.' }));
const channel = s.named('Channel', s.enum(CHANNELS, {
  description: 'Where the conversation came in; `api` for the ones created through this API.' }));
export const customerInput = s.named('CustomerInput', s.object({
  id: s.optional(s.string({ minLength: 1, maxLength: 200,
    description: 'Your id of the customer; without one, the id already used for this email in the workspace, else a ' +
      'new one.' })),
  name: s.optional(s.string({ maxLength: 160 })),
  email: s.string({ maxLength: 320, format: 'email' }),
  company: s.optional(s.string({ maxLength: 160 })),
}));
export const createConversationBody = s.named('CreateConversationRequest', s.object({
  externalId: s.optional(s.string({ minLength: 1, maxLength: 200,
    description: 'Your id of the conversation, unique in the workspace (409 `conflict` when already used).' })),
  subject,
  customer: customerInput,
  priority: s.optional({ ...priority, description: 'Default `medium`.' }),
}));
const updateConversationBody = s.named('UpdateConversationRequest', s.object({
  status: s.optional(conversationStatus),
  priority: s.optional(priority),
  subject: s.optional(subject),
}, { description: 'The fields to change; the others keep their values.' }));
export const messageInput = s.named('CreateMessageRequest', s.object({
  role: s.enum(['user', 'agent'] as const, { description: '`user`: from the customer; `agent`: from support.' }),
  body: s.string({ minLength: 1, maxLength: 20000 }),
}));
const listQuery = s.object({
  status: s.optional(conversationStatus),
  channel: s.optional(channel),
  updatedAfter: s.optional(s.string({ format: 'date-time' })),
  ...pageParams,
});

const isoSchema = s.string({ format: 'date-time' });
/** The hand-over request of a conversation (docs/api.md#hand-over). */
export const handoffSchema = s.named('Handoff', s.object({
  requestedAt: isoSchema,
  reason: s.enum(HANDOFF_REASONS, { description: '`customer` (asked in the widget), `uncertain` (the agent was unsure '
    + 'too often) or `api`.' }),
}, { description: 'A person was asked for; absent otherwise.' }));
/** Who wrote a message (docs/api.md#message-author). */
export const authorSchema = s.named('MessageAuthor', s.object({
  type: s.enum(AUTHOR_TYPES, { description: '`customer` (the widget), `user` (a person of the workspace), `bot` (an '
    + 'agent), `api` (through the API or import).' }),
  id: s.optional(s.string()), name: s.optional(s.string()),
}));
export const conversationSchema = s.named('Conversation', s.object({
  object: s.enum(['conversation'] as const),
  id: s.string(),
  externalId: s.optional(s.string()),
  status: conversationStatus,
  channel,
  priority,
  subject: s.string(),
  preview: s.string({ description: 'The start of the last message (at most 160 characters); empty before the first ' +
    'one.' }),
  customer: s.named('Customer', s.object({
    id: s.string(), name: s.optional(s.string()), email: s.optional(s.string({ format: 'email',
      description: 'Absent for an anonymous live-chat visitor.' })),
    company: s.optional(s.string()), identitySource: s.string(),
  })),
  createdAt: isoSchema, updatedAt: isoSchema, lastMessageAt: s.optional(isoSchema),
  closedAt: s.optional({ ...isoSchema, description: 'When it was solved; absent unless `status` is `solved`.' }),
  handoff: s.optional(handoffSchema),
}));
export const messageSchema = s.named('Message', s.object({
  object: s.enum(['message'] as const), id: s.string(), conversationId: s.string(),
  role: s.enum(['user', 'agent'] as const), author: authorSchema, body: s.string(), createdAt: isoSchema,
  answerId: s.optional(s.string({ description: 'On a bot message that is an agent\'s answer: the answer\'s id.' })),
}));
const conversationResponse = s.named('ConversationResponse', s.object({ conversation: conversationSchema }));
const messageResponse = s.named('MessageResponse', s.object({ message: messageSchema }));

/**
 * The API view of a stored conversation: its fields in the schema's order, internal ones (`firstResponseAt`) left out,
 * absent ones undefined (docs/decisions.md#absent-values-are-omitted). Field by field: a spread copy is V8's slow path.
 */
export function conversationView(c: Conversation): Record<string, unknown> {
  return {
    object: 'conversation', id: c.id, externalId: c.externalId, status: c.status, channel: c.channel,
      priority: c.priority,
    subject: c.subject, preview: c.preview, customer: c.customer, createdAt: c.createdAt, updatedAt: c.updatedAt,
    lastMessageAt: c.lastMessageAt, closedAt: c.closedAt, handoff: handoffView(c.handoff),
  };
}
/** The API view of a message: its author derived for older records. */
export const messageView = (m: Message): Record<string, unknown> => ({ object: 'message', id: m.id,
  conversationId: m.conversationId, role: m.role, author: authorOf(m), body: m.body, createdAt: m.createdAt,
  answerId: m.answerId });
const conversationJson = new ViewCache<Conversation>(conversationView, 'conversation');
const messageJson = new ViewCache<Message>(messageView, 'message');
/** The JSON text of a conversation's API view, made once per stored record (reads and its events share it). */
export const conversationViewJson = (c: Conversation): string => conversationJson.json(c);
/** The JSON text of a message's API view, made once per stored record. */
export const messageViewJson = (m: Message): string => messageJson.json(m);

/**
 * The customer id for `email` in `ws` (docs/decisions.md#one-customer-id-per-email): the id the email already has
 * (compared without case), else the given one, else a new one.
 * @throws ConflictError when `given` differs from the id the email already has.
 */
function customerId(ws: Workspace, email: string, given: string | undefined): string {
  const known = ws.conversations.customerIds.idOf(email);
  if (known !== undefined && given !== undefined && given !== known) {
    throw new ConflictError(
      `customer.email ${JSON.stringify(email)} already has the customer id ${JSON.stringify(known)} in this ` +
        `workspace; send that id or none`);
  }
  return known ?? given ?? newId();
}

/**
 * Creates a conversation in `tx` (used by the API and by import).
 * @throws ConflictError for an `externalId` already used in the workspace, or a `customer.id` other than the one the
 *   customer's email already has.
 */
export function createConversation(
  ws: Workspace, tx: Tx<ConversationRecords>, input: Static<typeof createConversationBody>,
  at: number, extra: { status?: ConversationStatus; channel?: Channel } = {},
): Conversation {
  if (input.externalId !== undefined && ws.conversations.byExternalId.has(input.externalId)) {
    throw new ConflictError(`externalId ${JSON.stringify(input.externalId)} is already used by another conversation`);
  }
  const c = input.customer;
  const now = iso(at);
  const status = extra.status ?? 'open';
  const conv: Conversation = compact({
    id: newId(), externalId: input.externalId, status, channel: extra.channel ?? 'api',
    priority: input.priority ?? 'medium', subject: input.subject, preview: '',
    customer: compact({ id: customerId(ws, c.email, c.id), name: c.name, email: c.email, company: c.company,
      identitySource: 'api' }),
    createdAt: now, updatedAt: now, closedAt: status === 'solved' ? now : undefined,
  });
  tx.put('conversation', conv.id, conv);
  return conv;
}

/** Moves `conv` to `status`, setting or clearing `closedAt` (docs/api.md#status-changes). */
function withStatus(conv: Conversation, status: ConversationStatus, now: string): Conversation {
  if (status === conv.status) return conv;
  const next = { ...conv, status };
  if (status === 'solved') {
    next.closedAt = now;
    delete next.humanRepliedAt;
    delete next.handoff;
  } else delete next.closedAt;
  return next;
}

/**
 * Asks for a person (docs/api.md#hand-over): `handoff` set and status `open`; a request while one is pending keeps
 * the first `requestedAt` and reason. `agentId`: the agent handing over, or answering there (kept for analytics).
 * Returns the conversation as it is after (the same object when unchanged).
 */
export function requestHandoff(tx: Tx<ConversationRecords>, conv: Conversation, reason: Handoff['reason'],
  at: number, agentId?: string): Conversation {
  if (conv.handoff && conv.status === 'open') return conv;
  const now = iso(at);
  const asked: Handoff = agentId === undefined ? { requestedAt: now, reason } : { requestedAt: now, reason, agentId };
  const next: Conversation = { ...withStatus(conv, 'open', now), handoff: conv.handoff ?? asked, updatedAt: now };
  tx.put('conversation', next.id, next);
  return next;
}

/**
 * Adds a message and applies its effects: preview, `lastMessageAt`, and status — a `user` message reopens a
 * `waiting`/`solved` conversation, an `agent` message on an `open` one makes it `waiting` (docs/api.md#status-changes).
 * An `agent` message whose author is not the bot is a person's: it sets the first response and silences the bot
 * until the conversation is solved.
 */
export function addMessage(tx: Tx<ConversationRecords>, conv: Conversation, input: Static<typeof messageInput>,
  at: number, author: Author = { type: 'api' }, answerId?: string): { message: Message; conversation: Conversation } {
  const now = iso(at);
  const message: Message = { id: newId(), conversationId: conv.id, role: input.role, body: input.body, createdAt: now,
    author };
  if (answerId !== undefined) message.answerId = answerId;
  let next: Conversation = { ...conv, preview: preview(input.body), lastMessageAt: now, updatedAt: now };
  if (input.role === 'user' && conv.status !== 'open') next = withStatus(next, 'open', now);
  if (input.role === 'agent') {
    if (conv.status === 'open') next = withStatus(next, 'waiting', now);
    if (author.type !== 'bot') {
      if (!conv.firstResponseAt) next.firstResponseAt = now;
      next.humanRepliedAt = now;
    }
  }
  tx.put('message', message.id, message);
  tx.put('conversation', next.id, next);
  return { message, conversation: next };
}

function load(ctx: Ctx<unknown, unknown>): Conversation {
  const conv = ctx.ws.get('conversation', ctx.params.conversationId);
  if (!conv) throw notFound();
  return conv;
}

const base = '/api/v1/conversations';
export const conversationRoutes = [
  route({
    method: 'GET', path: base, operationId: 'listConversations', tag: 'Conversations', scope: 'conversations:read',
    summary: 'List conversations, newest first, filtered by status, channel or last update.',
    query: listQuery,
    success: { status: 200, schema: listSchema('conversations', conversationSchema),
      description: 'A page of conversations.' },
    handler: (ctx) => {
      const q = ctx.query;
      const after = q.updatedAfter === undefined ? undefined : Date.parse(q.updatedAfter);
      const page = paginate(ctx, 'conversations', ctx.ws.conversations.order, 'desc', q,
        (id) => ctx.ws.get('conversation', id),
        (c) => (q.status === undefined || c.status === q.status) && (q.channel === undefined || c.channel === q.channel)
          && (after === undefined || Date.parse(c.updatedAt) > after));
      return { status: 200, body: null, json: listJson('conversations', page.hasMore, page.nextCursor, page.items.map((
        c) => conversationJson.json(c))) };
    },
  }),
  route({
    method: 'POST', path: base, operationId: 'createConversation', tag: 'Conversations', scope: 'conversations:write',
    summary: 'Create a conversation (channel `api`, status `open`). One email keeps one customer id in a workspace ' +
      '(emails compared without case): '
      + 'a customer without `id` gets the id its email already has; a different `id` for a known email → 409, like ' +
        'a used `externalId`.',
    body: createConversationBody, errors: [409],
    success: { status: 201, schema: conversationResponse, description: 'The created conversation.' },
    handler: (ctx) => ({ status: 201, body: { conversation: conversationView(createConversation(ctx.ws, ctx.tx(),
      ctx.body, ctx.now)) } }),
  }),
  route({
    method: 'GET', path: `${base}/{conversationId}`, operationId: 'retrieveConversation', tag: 'Conversations',
      scope: 'conversations:read',
    summary: 'Retrieve a conversation.',
    success: { status: 200, schema: conversationResponse, description: 'The conversation.' },
    handler: (ctx) => ({ status: 200, body: null, json: conversationJson.answer(load(ctx)) }),
  }),
  route({
    method: 'PATCH', path: `${base}/{conversationId}`, operationId: 'updateConversation', tag: 'Conversations',
      scope: 'conversations:write',
    summary: 'Update status, priority or subject; `solved` sets `closedAt`, leaving it clears it.',
    body: updateConversationBody,
    success: { status: 200, schema: conversationResponse, description: 'The updated conversation.' },
    handler: (ctx) => {
      const conv = load(ctx);
      const b = ctx.body;
      const now = iso(ctx.now);
      let next = b.status === undefined ? { ...conv } : withStatus(conv, b.status, now);
      if (b.priority !== undefined) next = { ...next, priority: b.priority };
      if (b.subject !== undefined) next = { ...next, subject: b.subject };
      const changed = (['status', 'priority', 'subject'] as const).some((k) => next[k] !== conv[k]);
      if (changed) {
        next = { ...next, updatedAt: now };
        ctx.tx().put('conversation', conv.id, next);
      }
      // The view's JSON is made once per record: the event of this change wrote the same text. A changed record is
      // answered as text (read once, if ever: no bytes kept for it).
      return { status: 200, body: null, json: changed ? conversationJson.answerText(next) : conversationJson.answer(
        conv) };
    },
  }),
  route({
    method: 'POST', path: `${base}/{conversationId}/messages`, operationId: 'addMessage', tag: 'Conversations',
      scope: 'conversations:write',
    summary: 'Add a message; a user message reopens, an agent message on an open conversation makes it waiting.',
    body: messageInput,
    success: { status: 201, schema: messageResponse, description: 'The added message.' },
    handler: (ctx) => ({ status: 201, body: { message: messageView(addMessage(ctx.tx(), load(ctx), ctx.body,
      ctx.now, { type: 'api' }).message) } }),
  }),
  route({
    method: 'POST', path: `${base}/{conversationId}/handoff`, operationId: 'requestHandoff', tag: 'Conversations',
      scope: 'conversations:write',
    summary: 'Ask for a person: `handoff` `{requestedAt, reason:"api"}` and status `open`, event '
      + '`conversation.handoff_requested`; while one is pending, a second request changes nothing.',
    success: { status: 200, schema: conversationResponse, description: 'The conversation.' },
    handler: (ctx) => {
      const conv = load(ctx);
      const agentId = answeringAgent(ctx.ws.db, ctx.ws.answers, conv.id) ?? conv.agentId;
      return { status: 200, body: { conversation: conversationView(requestHandoff(ctx.tx(), conv, 'api', ctx.now,
        agentId)) } };
    },
  }),
  route({
    method: 'GET', path: `${base}/{conversationId}/messages`, operationId: 'listMessages', tag: 'Conversations',
      scope: 'conversations:read',
    summary: 'List a conversation\'s messages, oldest first.',
    query: s.object({ ...pageParams }),
    success: { status: 200, schema: listSchema('messages', messageSchema), description: 'A page of messages.' },
    handler: (ctx) => {
      const conv = load(ctx);
      const index = ctx.ws.conversations.messages.of(conv.id) ?? new SortedIndex();
      const page = paginate(ctx, `messages:${conv.id}`, index, 'asc', ctx.query, (id) => ctx.ws.get('message', id));
      return { status: 200, body: null, json: listJson('messages', page.hasMore, page.nextCursor, page.items.map((m) =>
        messageJson.json(m))) };
    },
  }),
];

