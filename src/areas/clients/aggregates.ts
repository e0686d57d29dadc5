/**
 * Client aggregates (docs/api.md#client-object): conversations grouped by the customer's company (trimmed,
 * case-insensitive), else by the email domain, issues joining the group of their own customer, else of their
 * conversation. Counts, times and the list order are kept on every change, replay and undo — O(log n) each, no read
 * scans a group — and saved in the snapshot block (saved.ts), so neither a start nor a first read rebuilds them from
 * the records.
 */
import type { Db } from '../../store/db.js';
import { compositeKey } from '../../store/memory/sorted.js';
import type { Conversation, ConversationRecords } from '../conversations/conversations.js';
import type { Issue, IssueRecords } from '../issues.js';
import { SortedBag } from '../analytics/sortedBag.js';
import {
  activityOf, clientId, domainOf, groupKey, later, newConversationSide, newSide, view, type ClientView, type Group,
} from './group.js';
import { persistConversationSide, persistIssueSide } from './saved.js';

export { clientId, groupKey, type ClientView } from './group.js';

/** An issue whose conversation is not known yet (a replay may bring issues first). */
const WAIT = Symbol('wait');

export class ClientIndex {
  /** Group key → group. */
  readonly groups = new Map<string, Group>();
  private readonly byId = new Map<string, Group>();
  /** The groups by `lastActivityAt`, then id: composite keys (src/store/sorted.ts), listed largest first. */
  private order = new SortedBag<string>();
  /** Issues replayed before their conversation (a compacted log's order): conversation id → issue id → record. */
  private readonly waiting = new Map<string, Map<string, Issue>>();
  /** While the log loads, the order is left alone and made once at the end ({@link loaded}). */
  private loading = true;
  /** Each customer object's group key: versions of a conversation share their customer object. */
  private readonly keys = new WeakMap<object, string | null>();

  private constructor(
    private readonly workspaceId: string,
    private readonly db: Db<ConversationRecords & IssueRecords>,
  ) {}

  /**
   * The client aggregates of workspace `workspaceId`, kept current by `db`'s listeners from now on: register before the
   * log's replay (the replay fills them, or the snapshot block restores them), and call {@link loaded} after it.
   */
  static attach(workspaceId: string, db: Db<ConversationRecords & IssueRecords>): ClientIndex {
    const idx = new ClientIndex(workspaceId, db);
    db.on('conversation', (id, prev, next) => idx.onConversation(id, prev, next), persistConversationSide(idx));
    db.on('issue', (id, prev, next) => idx.onIssue(id, prev, next), persistIssueSide(idx));
    return idx;
  }

  /** The number of clients. */
  get size(): number { return this.byId.size; }

  /** The client `id`, or undefined. */
  get(id: string): ClientView | undefined {
    const g = this.byId.get(id);
    return g ? view(g) : undefined;
  }

  /** The clients' keys (`lastActivityAt "\0" id`) strictly below `before` (all if undefined), newest first. */
  listed(before?: string): Generator<string> { return this.order.below(before); }

  /** The group of `key`, made (named after `name`, `domain`) when there is none yet. */
  group(key: string, name: string, domain: string | null): Group {
    let g = this.groups.get(key);
    if (g === undefined) {
      const id = clientId(this.workspaceId, key);
      g = { id, key, name, domain, conversations: newConversationSide(), issues: newSide(), listedAt: '' };
      this.groups.set(key, g);
      this.byId.set(g.id, g);
    }
    return g;
  }

  /** Called once the log is loaded: the list order is made, then kept on every change. */
  loaded(): void {
    if (!this.loading) return;
    this.loading = false;
    this.relist();
  }

  /** Lists the group again under its activity time now; drops it once it has no member. */
  settle(g: Group): void {
    const empty = g.conversations.count === 0 && g.issues.count === 0;
    if (this.loading) { if (empty) { this.groups.delete(g.key); this.byId.delete(g.id); } return; }
    const at = empty ? '' : later(g.conversations.activity.max(), g.issues.activity.max());
    if (at !== g.listedAt) {
      if (g.listedAt !== '') this.order.delete(compositeKey(g.listedAt, g.id));
      if (at !== '') this.order.add(compositeKey(at, g.id));
      g.listedAt = at;
    }
    if (empty) { this.groups.delete(g.key); this.byId.delete(g.id); }
  }

  /** Lists every group (once the log is loaded): one sort. */
  private relist(): void {
    const keys: string[] = [];
    for (const g of this.groups.values()) {
      g.listedAt = later(g.conversations.activity.max(), g.issues.activity.max());
      keys.push(compositeKey(g.listedAt, g.id));
    }
    this.order = SortedBag.fromSorted(keys.sort());
  }

  /** The group key of a conversation's customer. */
  private keyOf(c: Conversation): string | null {
    let key = this.keys.get(c.customer);
    if (key === undefined) this.keys.set(c.customer, (key = groupKey(c.customer.company, c.customer.email)));
    return key;
  }

  private onConversation(id: string, prev: Conversation | undefined, next: Conversation | undefined): void {
    if (prev !== undefined && next !== undefined && prev.createdAt === next.createdAt
      && prev.customer.id === next.customer.id) {
      const key = this.keyOf(next);
      if (key === this.keyOf(prev)) {
        // The hot path of every message and PATCH: same group, same member.
        const g = key === null ? undefined : this.groups.get(key);
        if (g === undefined) return;
        const side = g.conversations;
        side[prev.status] -= 1;
        side[next.status] += 1;
        const before = activityOf(prev);
        const after = activityOf(next);
        if (before !== after) { side.activity.delete(before); side.activity.add(after); this.settle(g); }
        return;
      }
    }
    if (prev !== undefined) this.removeConversation(prev);
    if (next !== undefined) this.addConversation(next);
    if (prev === undefined && next !== undefined) {
      const waiting = this.waiting.get(id);
      if (waiting !== undefined) {
        this.waiting.delete(id);
        for (const [iid, i] of waiting) this.addIssue(iid, i);
      }
    }
  }

  private addConversation(c: Conversation): void {
    const cust = c.customer;
    const key = this.keyOf(c);
    if (key === null) return;
    const g = this.group(key, cust.company?.trim() || domainOf(cust.email)!, domainOf(cust.email));
    const side = g.conversations;
    side.count += 1;
    side[c.status] += 1;
    side.customers.set(cust.id, (side.customers.get(cust.id) ?? 0) + 1);
    side.seen.add(c.createdAt);
    side.activity.add(activityOf(c));
    this.settle(g);
  }

  private removeConversation(c: Conversation): void {
    const cust = c.customer;
    const key = this.keyOf(c);
    const g = key === null ? undefined : this.groups.get(key);
    if (g === undefined) return;
    const side = g.conversations;
    side.count -= 1;
    side[c.status] -= 1;
    const n = (side.customers.get(cust.id) ?? 1) - 1;
    if (n > 0) side.customers.set(cust.id, n); else side.customers.delete(cust.id);
    side.seen.delete(c.createdAt);
    side.activity.delete(activityOf(c));
    this.settle(g);
  }

  /** An issue's group key: its customer's, else its conversation's; WAIT when that conversation is not there yet. */
  private issueKey(i: Issue): string | null | typeof WAIT {
    const own = groupKey(i.customer?.company, i.customer?.email);
    if (own !== null) return own;
    const cid = i.source.conversationId;
    if (cid === undefined) return null;
    const c = this.db.get('conversation', cid);
    return c === undefined ? WAIT : this.keyOf(c);
  }

  private onIssue(id: string, prev: Issue | undefined, next: Issue | undefined): void {
    if (prev !== undefined && next !== undefined && prev.createdAt === next.createdAt) {
      const key = this.issueKey(next);
      if (key !== WAIT && key === this.issueKey(prev)) {
        const g = key === null ? undefined : this.groups.get(key);
        if (g === undefined) return;
        if (prev.updatedAt !== next.updatedAt) {
          g.issues.activity.delete(prev.updatedAt);
          g.issues.activity.add(next.updatedAt);
          this.settle(g);
        }
        return;
      }
    }
    if (prev !== undefined) this.removeIssue(id, prev);
    if (next !== undefined) this.addIssue(id, next);
  }

  private addIssue(id: string, i: Issue): void {
    const key = this.issueKey(i);
    if (key === WAIT) {
      const cid = i.source.conversationId!;
      let w = this.waiting.get(cid);
      if (w === undefined) this.waiting.set(cid, (w = new Map()));
      w.set(id, i);
      return;
    }
    if (key === null) return;
    const cust = i.customer;
    const name = cust?.company?.trim() || domainOf(cust?.email) || key.slice(key.indexOf(':') + 1);
    const g = this.group(key, name, domainOf(cust?.email));
    g.issues.count += 1;
    g.issues.seen.add(i.createdAt);
    g.issues.activity.add(i.updatedAt);
    this.settle(g);
  }

  private removeIssue(id: string, i: Issue): void {
    const key = this.issueKey(i);
    if (key === WAIT) {
      const cid = i.source.conversationId!;
      const w = this.waiting.get(cid);
      if (w !== undefined && w.delete(id) && w.size === 0) this.waiting.delete(cid);
      return;
    }
    const g = key === null ? undefined : this.groups.get(key);
    if (g === undefined) return;
    g.issues.count -= 1;
    g.issues.seen.delete(i.createdAt);
    g.issues.activity.delete(i.updatedAt);
    this.settle(g);
  }
}
