/**
 * What a visitor sees (docs/api.md#live-chat): the public fields of a conversation and a message — no priority,
 * external id or customer record of other people, no API key ids in authors.
 */
import { s } from '../../http/schema.js';
import {
  authorOf, handoffSchema, handoffView, type Conversation, type Message,
} from '../conversations/conversations.js';
import { compact } from '../common.js';

const isoSchema = s.string({ format: 'date-time' });
export const widgetConversationSchema = s.named('WidgetConversation', s.object({
  object: s.enum(['conversation'] as const), id: s.string(),
  status: s.enum(['open', 'waiting', 'solved'] as const), subject: s.string(), preview: s.string(),
  createdAt: isoSchema, updatedAt: isoSchema, lastMessageAt: s.optional(isoSchema),
  handoff: s.optional(handoffSchema),
}));
export const widgetAuthorSchema = s.named('WidgetMessageAuthor', s.object({
  type: s.enum(['customer', 'user', 'bot', 'api'] as const), name: s.optional(s.string()),
}, { description: 'Who wrote it: the visitor (`customer`), a person (`user`), the agent (`bot`) or the API.' }));
export const widgetMessageSchema = s.named('WidgetMessage', s.object({
  object: s.enum(['message'] as const), id: s.string(), conversationId: s.string(),
  author: widgetAuthorSchema, body: s.string(), createdAt: isoSchema,
  answerId: s.optional(s.string({ description: 'On the agent\'s answer: the id its feedback goes to.' })),
}));

/** The visitor's view of a conversation. */
export const widgetConversationView = (c: Conversation): Record<string, unknown> => compact({
  object: 'conversation', id: c.id, status: c.status, subject: c.subject, preview: c.preview, createdAt: c.createdAt,
  updatedAt: c.updatedAt, lastMessageAt: c.lastMessageAt, handoff: handoffView(c.handoff),
});

/** The visitor's view of a message: the author's type and name only (no ids). */
export function widgetMessageView(m: Message): Record<string, unknown> {
  const a = authorOf(m);
  return { object: 'message', id: m.id, conversationId: m.conversationId,
    author: compact({ type: a.type, name: a.name }), body: m.body, createdAt: m.createdAt, answerId: m.answerId };
}
