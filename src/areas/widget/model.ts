/**
 * The widget's records and state in a workspace (docs/api.md#live-chat): visitor sessions (stored by the SHA-256 of
 * their token, kept 24 h), the identity secret (sealed with the key file), and the indexes the widget API reads:
 * agents by widget key, the origins agents allow, and each visitor's conversations.
 */
import type { Db } from '../../store/db.js';
import { SortedIndex } from '../../store/memory/sorted.js';
import { persistSortedMap } from '../../store/indexes.js';
import type { Sealed } from '../../core/secrets.js';
import type { Agent, AgentRecords } from '../agents.js';
import type { Conversation, ConversationRecords } from '../conversations/conversations.js';

/** How long a visitor session lasts (ms). */
export const SESSION_TTL_MS = 24 * 3600 * 1000;

/** A visitor session (record type `widget_session`, id = hex SHA-256 of its `svcs_` token). */
export interface WidgetSession {
  id: string; agentId: string; visitorId: string;
  customer: { id: string; name?: string; email?: string; company?: string };
  identitySource: 'anonymous' | 'verified';
  createdAt: string; expiresAt: string;
}
/** The workspace's identity secret (record type `widget_identity`, id `secret`). */
export interface IdentitySecretRec { id: 'secret'; sealed: Sealed; createdAt: string }
/** The record types of the widget area. */
export interface WidgetRecords { widget_session: WidgetSession; widget_identity: IdentitySecretRec }

/** The owner key of a visitor: identity source and customer id (an anonymous id never matches a verified one). */
export const ownerKey = (identitySource: string, customerId: string): string => `${identitySource}:${customerId}`;
/** The visitor owning `c`, or undefined for a conversation not started in the widget. */
export const ownerOf = (c: Conversation): string | undefined => (c.channel === 'live-chat' &&
  (c.customer.identitySource === 'anonymous' || c.customer.identitySource === 'verified')
  ? ownerKey(c.customer.identitySource, c.customer.id) : undefined);

/** What the widget API keeps of a workspace, current on every change (replayed at start). */
export class WidgetState {
  /** Widget key → agent id. */
  readonly agentByKey = new Map<string, string>();
  /** Origin → how many enabled agents allow it (the preflight's answer). */
  readonly origins = new Map<string, number>();
  /** Owner key → its conversations by (createdAt, id). */
  readonly byOwner = new Map<string, SortedIndex>();

  constructor(db: Db<AgentRecords & ConversationRecords & WidgetRecords>, now: () => number) {
    db.on('agent', (id, prev, next) => {
      if (prev) { this.agentByKey.delete(prev.widgetKey); this.count(prev, -1); }
      if (next) { this.agentByKey.set(next.widgetKey, id); this.count(next, 1); }
    });
    // Saved in the snapshot block (docs/storage.md#snapshots): a start restores it without replaying conversations.
    db.on('conversation', (id, prev, next) => {
      const before = prev && ownerOf(prev);
      const after = next && ownerOf(next);
      if (before === after) return;
      if (before !== undefined) {
        const g = this.byOwner.get(before);
        g?.remove(prev!.createdAt, id);
        if (g?.size === 0) this.byOwner.delete(before);
      }
      if (after !== undefined) {
        let g = this.byOwner.get(after);
        if (!g) this.byOwner.set(after, g = new SortedIndex());
        g.add(next!.createdAt, id);
      }
    }, persistSortedMap('widget.byOwner/1', 'conversation', () => this.byOwner, () => new SortedIndex()));
    db.retain('widget_session', (s) => Date.parse(s.expiresAt) > now());
  }

  private count(a: Agent, by: number): void {
    if (!a.enabled) return;
    for (const o of a.allowedOrigins ?? []) {
      const n = (this.origins.get(o) ?? 0) + by;
      if (n <= 0) this.origins.delete(o); else this.origins.set(o, n);
    }
  }

  /** The number of entries (tests checking a request changed no state). */
  get size(): number { return this.agentByKey.size + this.byOwner.size; }
}
