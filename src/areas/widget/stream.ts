/**
 * The visitor's stream (docs/api.md#live-chat-stream): the workspace's event stream (src/areas/events/stream.ts)
 * through a filter keyed `visitor:<owner>` that keeps `message.created` and `conversation.updated` of the visitor's
 * own conversations and rewrites each to the visitor's view (public fields only, no key ids, no previous values).
 */
import type { StreamFilter, StreamedEvent } from '../events/stream.js';
import type { Workspace } from '../../domain/workspace.js';
import type { Conversation, Message } from '../conversations/conversations.js';
import { ownerOf } from './model.js';
import { widgetConversationView, widgetMessageView } from './views.js';

/** The stream filter of the visitor with owner key `owner` in `ws`. */
export function visitorFilter(ws: Workspace, owner: string): StreamFilter {
  const mine = (conversationId: string): boolean => {
    const c = ws.get('conversation', conversationId);
    return c !== undefined && ownerOf(c) === owner;
  };
  return { key: `visitor:${owner}`, pick: (e: StreamedEvent) => {
    if (e.type !== 'message.created' && e.type !== 'conversation.updated') return undefined;
    const ev = JSON.parse(e.json) as { id: string; type: string; createdAt: string; data: { object: unknown } };
    let object: Record<string, unknown>;
    if (e.type === 'message.created') {
      const m = ev.data.object as Message;
      if (!mine(m.conversationId)) return undefined;
      object = widgetMessageView(m);
    } else {
      const c = ev.data.object as Conversation;
      if (!mine(c.id)) return undefined;
      object = widgetConversationView(c);
    }
    return JSON.stringify({ object: 'event', id: ev.id, type: ev.type, createdAt: ev.createdAt, data: { object } });
  } };
}
