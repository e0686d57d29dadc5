/**
 * Client aggregates (docs/api.md#client-object): conversations grouped by the
 * customer's company (trimmed, case-insensitive), else by the email domain, with counts and
 * activity kept up to date on every change — reading a client never scans conversations.
 * Issues join the group of their own customer, else of their conversation.
 */
import { createHash } from 'node:crypto';
import { SortedIndex } from '../../store/sorted.js';
import type { Db } from '../../store/db.js';
import type { Conversation, ConversationRecords } from '../conversations/conversations.js';
import type { Issue, IssueRecords } from '../issues.js';

export interface ClientView {
  object: 'client'; id: string; name: string; domain: string | null;
  conversationCount: number; openCount: number; waitingCount: number; solvedCount: number;
  customerCount: number; issueCount: number; firstSeenAt: string; lastActivityAt: string;
}

interface Group {
  id: string; key: string; name: string; domain: string | null;
  /** conversation id → its current record (shared with the store: no copy per conversation). */
  conversations: Map<string, Conversation>;
  /** issue id → its activity time. */
  issues: Map<string, { createdAt: string; activity: string }>;
  counts: { open: number; waiting: number; solved: number };
  /** customer id → number of conversations. */
  customers: Map<string, number>;
  firstSeenAt: string;
  lastActivityAt: string;
  /** Unused (the order is rebuilt lazily); kept for shape stability. */
  orderKey: string | null;
}

const domainOf = (email: string | undefined): string | null => {
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

const later = (a: string, b: string | undefined) => (b && b > a ? b : a);
/** A conversation's last activity: the later of its update and its last message. */
const activityOf = (c: Conversation): string => later(c.updatedAt, c.lastMessageAt);

export class ClientIndex {
  private readonly groups = new Map<string, Group>();
  private readonly byId = new Map<string, Group>();
  /** Clients by (lastActivityAt, id); listed newest activity first. */
  private sorted = new SortedIndex();
  /** Set when any group's activity changed: the order is rebuilt at the next list. */
  private dirty = false;

  /**
   * Clients by (lastActivityAt, id), listed newest activity first. Rebuilt lazily (one sort of
   * the groups) after changes, so a write never pays for keeping it sorted.
   */
  get order(): SortedIndex {
    if (this.dirty) {
      const s = new SortedIndex();
      const groups = [...this.byId.values()].sort((a, b) => (a.lastActivityAt < b.lastActivityAt ? -1 : a.lastActivityAt > b.lastActivityAt ? 1 : a.id < b.id ? -1 : 1));
      for (const g of groups) s.add(g.lastActivityAt, g.id);
      this.sorted = s;
      this.dirty = false;
    }
    return this.sorted;
  }
  /**
   * Conversation id → its group key. Issues without a grouping customer of their own follow
   * their conversation through this map, never through the store: during a replay the
   * workspace's store is not open yet (a lookup there stopped the server from starting).
   */
  private readonly conversationGroup = new Map<string, string | null>();
  /** Issues replayed before their conversation (a compacted log's order): conversation id → issue id → record. */
  private readonly waiting = new Map<string, Map<string, Issue>>();

  private constructor(private readonly workspaceId: string) {}

  /**
   * The client aggregates of workspace `workspaceId`: built from every conversation and issue
   * of `db` (one pass), then kept up to date by `db`'s listeners. Built on first use, so that
   * replaying a large log at start pays nothing for them.
   */
  static attach(workspaceId: string, db: Db<ConversationRecords & IssueRecords>): ClientIndex {
    const idx = new ClientIndex(workspaceId);
    for (const [cid, c] of db.table('conversation')) idx.addConversation(cid, c);
    for (const [iid, i] of db.table('issue')) idx.addIssue(iid, i);
    db.on('conversation', (id, prev, next) => idx.onConversation(id, prev, next));
    db.on('issue', (id, prev, next) => idx.onIssue(id, prev, next));
    return idx;
  }

  get(id: string): ClientView | undefined {
    const g = this.byId.get(id);
    return g ? view(g) : undefined;
  }

  /** Applies a change of a conversation. */
  private onConversation(id: string, prev: Conversation | undefined, next: Conversation | undefined): void {
    if (prev && next && this.updateConversation(id, prev, next)) return;
    if (prev) this.removeConversation(id, prev);
    if (next) this.addConversation(id, next);
  }

  /** Applies a change of an issue. */
  private onIssue(id: string, prev: Issue | undefined, next: Issue | undefined): void {
    if (prev && next && this.updateIssue(id, prev, next)) return;
    if (prev) this.removeIssue(id, prev);
    if (next) this.addIssue(id, next);
  }

  /** An update within the same group, in place (the hot path of every message). False if it moved groups. */
  private updateConversation(id: string, prev: Conversation, next: Conversation): boolean {
    const pc = prev.customer;
    const nc = next.customer;
    const key = groupKey(nc.company, nc.email);
    if (!key || key !== groupKey(pc.company, pc.email) || pc.id !== nc.id) return false;
    const g = this.groups.get(key);
    const entry = g?.conversations.get(id);
    const entryActivity = entry ? activityOf(entry) : '';
    if (!g || !entry) return false;
    g.counts[prev.status] -= 1;
    g.counts[next.status] += 1;
    g.conversations.set(id, next);
    const activity = later(next.updatedAt, next.lastMessageAt);
    const wasLatest = entryActivity === g.lastActivityAt;
    if (activity > g.lastActivityAt) this.touch(g, activity);
    else if (wasLatest && activity < g.lastActivityAt) this.recompute(g); // an undo moved it back
    return true;
  }

  private updateIssue(id: string, prev: Issue, next: Issue): boolean {
    const key = this.issueGroup(next);
    if (!key || key !== this.issueGroup(prev)) return false;
    const g = this.groups.get(key);
    const entry = g?.issues.get(id);
    if (!g || !entry) return false;
    const wasLatest = entry.activity === g.lastActivityAt;
    entry.activity = next.updatedAt;
    if (entry.activity > g.lastActivityAt) this.touch(g, entry.activity);
    else if (wasLatest && entry.activity < g.lastActivityAt) this.recompute(g);
    return true;
  }

  private group(key: string, name: string, domain: string | null): Group {
    let g = this.groups.get(key);
    if (!g) {
      g = { id: clientId(this.workspaceId, key), key, name, domain, conversations: new Map(), issues: new Map(), counts: { open: 0, waiting: 0, solved: 0 }, customers: new Map(), firstSeenAt: '', lastActivityAt: '', orderKey: null };
      this.groups.set(key, g);
      this.byId.set(g.id, g);
    }
    return g;
  }

  private addConversation(id: string, c: Conversation): void {
    const cust = c.customer;
    const key = groupKey(cust.company, cust.email);
    this.conversationGroup.set(id, key);
    this.addConversationTo(id, c, key);
    const waiting = this.waiting.get(id);
    if (waiting) {
      this.waiting.delete(id);
      for (const [iid, i] of waiting) this.addIssue(iid, i);
    }
  }

  private addConversationTo(id: string, c: Conversation, key: string | null): void {
    const cust = c.customer;
    if (!key) return;
    const g = this.groups.get(key) ?? this.group(key, cust.company?.trim() || domainOf(cust.email)!, domainOf(cust.email));
    const activity = later(c.updatedAt, c.lastMessageAt);
    g.conversations.set(id, c);
    g.counts[c.status] += 1;
    g.customers.set(cust.id, (g.customers.get(cust.id) ?? 0) + 1);
    if (!g.firstSeenAt || c.createdAt < g.firstSeenAt) g.firstSeenAt = c.createdAt;
    this.touch(g, activity);
  }

  private removeConversation(id: string, c: Conversation): void {
    const cust = c.customer;
    const key = groupKey(cust.company, cust.email);
    this.conversationGroup.delete(id);
    const g = key ? this.groups.get(key) : undefined;
    if (!g || !g.conversations.delete(id)) return;
    g.counts[c.status] -= 1;
    const n = (g.customers.get(cust.id) ?? 1) - 1;
    if (n > 0) g.customers.set(cust.id, n); else g.customers.delete(cust.id);
    this.recompute(g);
  }

  private issueGroup(i: Issue): string | null {
    const cust = i.customer;
    const own = groupKey(cust?.company, cust?.email);
    if (own) return own;
    const cid = i.source.conversationId;
    return cid ? this.conversationGroup.get(cid) ?? null : null;
  }

  private addIssue(id: string, i: Issue): void {
    const key = this.issueGroup(i);
    const cid = i.source.conversationId;
    if (!key && cid && !this.conversationGroup.has(cid)) {
      // Its conversation is not known yet: count the issue when the conversation arrives.
      let w = this.waiting.get(cid);
      if (!w) { w = new Map(); this.waiting.set(cid, w); }
      w.set(id, i);
      return;
    }
    if (!key) return;
    const cust = i.customer;
    const g = this.groups.get(key) ?? this.group(key, cust?.company?.trim() || domainOf(cust?.email) || key.slice(key.indexOf(':') + 1), domainOf(cust?.email));
    g.issues.set(id, { createdAt: i.createdAt, activity: i.updatedAt });
    if (!g.firstSeenAt || i.createdAt < g.firstSeenAt) g.firstSeenAt = i.createdAt;
    this.touch(g, i.updatedAt);
  }

  private removeIssue(id: string, i: Issue): void {
    const cid = i.source.conversationId;
    if (cid && this.waiting.get(cid)?.delete(id)) { if (this.waiting.get(cid)!.size === 0) this.waiting.delete(cid); return; }
    const key = this.issueGroup(i);
    const g = key ? this.groups.get(key) : undefined;
    if (!g || !g.issues.delete(id)) return;
    this.recompute(g);
  }

  /** Moves a group's activity forward (the common case: O(log n)). */
  private touch(g: Group, activity: string): void {
    if (activity <= g.lastActivityAt) return;
    g.lastActivityAt = activity;
    this.reorder(g);
  }

  /** After a removal (an update's old half, or an undo): recompute from the group's members. */
  private recompute(g: Group): void {
    if (g.conversations.size === 0 && g.issues.size === 0) {
      this.dirty = true;
      this.groups.delete(g.key);
      this.byId.delete(g.id);
      return;
    }
    let first = '';
    let last = '';
    for (const c of g.conversations.values()) {
      const created = c.createdAt;
      const act = activityOf(c);
      if (!first || created < first) first = created;
      if (act > last) last = act;
    }
    for (const i of g.issues.values()) { if (!first || i.createdAt < first) first = i.createdAt; if (i.activity > last) last = i.activity; }
    g.firstSeenAt = first;
    if (last !== g.lastActivityAt) { g.lastActivityAt = last; this.reorder(g); }
  }

  private reorder(_g: Group): void {
    this.dirty = true;
  }
}

function view(g: Group): ClientView {
  return {
    object: 'client', id: g.id, name: g.name, domain: g.domain,
    conversationCount: g.conversations.size, openCount: g.counts.open, waitingCount: g.counts.waiting, solvedCount: g.counts.solved,
    customerCount: g.customers.size, issueCount: g.issues.size, firstSeenAt: g.firstSeenAt, lastActivityAt: g.lastActivityAt,
  };
}
