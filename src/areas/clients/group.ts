/**
 * What a client is (docs/api.md#client-object): the group a customer belongs to — by company (trimmed,
 * case-insensitive), else by email domain — its stable id, and what its conversations and its issues each bring to it
 * (counts, and the members' creation and activity times).
 */
import { createHash } from 'node:crypto';
import type { Conversation } from '../conversations/conversations.js';
import { SortedBag } from '../analytics/sortedBag.js';

export interface ClientView {
  object: 'client'; id: string; name: string; domain: string | null;
  conversationCount: number; openCount: number; waitingCount: number; solvedCount: number;
  customerCount: number; issueCount: number; firstSeenAt: string; lastActivityAt: string;
}

/** What one kind of member brings to a group: how many, their creation and activity times. */
export interface Side { count: number; seen: SortedBag<string>; activity: SortedBag<string> }
/** The conversations' side: also counts by status and conversations per customer id. */
export interface ConversationSide extends Side {
  open: number; waiting: number; solved: number; customers: Map<string, number>;
}

export interface Group {
  id: string; key: string; name: string; domain: string | null;
  conversations: ConversationSide;
  issues: Side;
  /** The activity time the list order holds the group under ('' : not listed). */
  listedAt: string;
}

/** The lower-case domain of `email`, or null. */
export const domainOf = (email: string | undefined): string | null => {
  const at = email?.lastIndexOf('@') ?? -1;
  return at >= 0 ? email!.slice(at + 1).trim().toLowerCase() || null : null;
};

/** The group of a customer: `company:<name>` or `domain:<domain>`; null when neither is known. */
export function groupKey(company: string | undefined, email: string | undefined): string | null {
  const c = company?.trim();
  if (c) return `company:${c.toLowerCase()}`;
  const d = domainOf(email);
  return d ? `domain:${d}` : null;
}

/** A stable UUID-shaped id for a group key (same group, same id, across restarts). */
export function clientId(workspaceId: string, key: string): string {
  const h = createHash('sha256').update(`${workspaceId}\n${key}`).digest();
  h[6] = (h[6] & 0x0f) | 0x80; // version 8 (RFC 9562: custom)
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** A conversation's last activity: the later of its update and its last message. */
export const activityOf = (c: Conversation): string =>
  (c.lastMessageAt !== undefined && c.lastMessageAt > c.updatedAt ? c.lastMessageAt : c.updatedAt);
/** The later of two times (either may be absent; '' when both are). */
export const later = (a: string | undefined, b: string | undefined): string =>
  (a === undefined ? b ?? '' : b === undefined || a >= b ? a : b);
/** The earlier of two times (either may be absent; '' when both are). */
export const earlier = (a: string | undefined, b: string | undefined): string =>
  (a === undefined ? b ?? '' : b === undefined || a <= b ? a : b);
/** A side without members. */
export const newSide = (): Side => ({ count: 0, seen: new SortedBag(), activity: new SortedBag() });
/** A conversations' side without members. */
export const newConversationSide = (): ConversationSide =>
  ({ ...newSide(), open: 0, waiting: 0, solved: 0, customers: new Map() });

/** The API view of a group (docs/api.md#client-object). */
export function view(g: Group): ClientView {
  const c = g.conversations;
  return {
    object: 'client', id: g.id, name: g.name, domain: g.domain,
    conversationCount: c.count, openCount: c.open, waitingCount: c.waiting, solvedCount: c.solved,
    customerCount: c.customers.size, issueCount: g.issues.count,
    firstSeenAt: earlier(c.seen.min(), g.issues.seen.min()), lastActivityAt: g.listedAt,
  };
}
