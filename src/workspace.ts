/**
 * A workspace's state: its log ({@link Db}) and the secondary indexes every API area reads
 * from, kept up to date by a change listener on every put, delete, replay and undo. Every
 * lookup an API handler makes goes through the workspace of the request's key, which is what
 * makes another workspace's id a 404 like a missing one (SPEC "Authentication" rule 4).
 */
import { Db, type ChangeListener, type Rec } from './store/db.js';
import { SortedIndex } from './store/sorted.js';
import type { StoreFs } from './store/fs.js';

/** Record types kept in a workspace log. */
export const T = {
  conversation: 'conversation',
  message: 'message',
  issue: 'issue',
  customField: 'custom_field',
  tag: 'tag',
  agent: 'agent',
  idempotency: 'idem',
} as const;

export interface WorkspaceOptions {
  fs: StoreFs;
  sync: boolean;
  now: () => number;
  onError?: (err: Error) => void;
  /** Extra listeners (indexes of later areas). */
  listeners?: ChangeListener[];
  compactionSlack?: number;
}

/** Idempotency records are kept 24 h (DESIGN §2). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export class Workspace {
  db!: Db;
  /** Conversations by (createdAt, id). */
  readonly conversationOrder = new SortedIndex();
  readonly conversationByExternalId = new Map<string, string>();
  /** Lower-cased customer email → customer id (one id per email, DESIGN §5). */
  readonly customerIdByEmail = new Map<string, string>();
  /** Messages of each conversation by (createdAt, id). */
  readonly messagesByConversation = new Map<string, SortedIndex>();
  readonly issueOrder = new SortedIndex();
  /** conversation id → ids of the issues opened from it. */
  readonly issuesByConversation = new Map<string, Set<string>>();
  maxIssueNumber = 0;
  /** Custom fields by (position, createdAt, id). */
  readonly customFieldOrder = new SortedIndex();
  readonly tagOrder = new SortedIndex();
  readonly tagIdByName = new Map<string, string>();
  readonly agentOrder = new SortedIndex();

  private constructor(readonly id: string) {}

  /** Replays the workspace's log at `path` into memory and opens it for writing. */
  static async open(id: string, path: string, opts: WorkspaceOptions): Promise<Workspace> {
    const ws = new Workspace(id);
    ws.db = await Db.open(path, {
      fs: opts.fs,
      sync: opts.sync,
      now: opts.now,
      onError: opts.onError,
      compactionSlack: opts.compactionSlack,
      listeners: [(type, rid, prev, next) => ws.onChange(type, rid, prev, next), ...(opts.listeners ?? [])],
      retain: (type, rec) => type !== T.idempotency || opts.now() - Date.parse(rec.createdAt as string) < IDEMPOTENCY_TTL_MS,
    });
    return ws;
  }

  get<R>(type: string, id: string): R | undefined {
    return this.db.get(type, id) as R | undefined;
  }

  /** After an undone create, the highest number in use again (numbers stay sequential). */
  private recomputeMaxIssueNumber(): void {
    let max = 0;
    for (const r of this.db.table(T.issue).values()) if ((r.number as number) > max) max = r.number as number;
    this.maxIssueNumber = max;
  }

  private onChange(type: string, id: string, prev: Rec | undefined, next: Rec | undefined): void {
    switch (type) {
      case T.conversation: {
        if (prev) {
          this.conversationOrder.remove(SortedIndex.key(prev.createdAt as string, id));
          if (prev.externalId) this.conversationByExternalId.delete(prev.externalId as string);
        }
        if (next) {
          this.conversationOrder.add(SortedIndex.key(next.createdAt as string, id));
          if (next.externalId) this.conversationByExternalId.set(next.externalId as string, id);
          const c = next.customer as { id: string; email: string };
          const email = c.email.toLowerCase();
          if (!this.customerIdByEmail.has(email)) this.customerIdByEmail.set(email, c.id);
        }
        return;
      }
      case T.message: {
        const rec = (next ?? prev)!;
        const cid = rec.conversationId as string;
        let idx = this.messagesByConversation.get(cid);
        if (!idx) { idx = new SortedIndex(); this.messagesByConversation.set(cid, idx); }
        const key = SortedIndex.key(rec.createdAt as string, id);
        if (next) idx.add(key); else idx.remove(key);
        return;
      }
      case T.issue: {
        if (prev) {
          this.issueOrder.remove(SortedIndex.key(prev.createdAt as string, id));
          const cid = (prev.source as { conversationId?: string }).conversationId;
          if (cid) this.issuesByConversation.get(cid)?.delete(id);
          if (!next && prev.number === this.maxIssueNumber) this.recomputeMaxIssueNumber();
        }
        if (next) {
          this.issueOrder.add(SortedIndex.key(next.createdAt as string, id));
          const cid = (next.source as { conversationId?: string }).conversationId;
          if (cid) {
            let set = this.issuesByConversation.get(cid);
            if (!set) { set = new Set(); this.issuesByConversation.set(cid, set); }
            set.add(id);
          }
          this.maxIssueNumber = Math.max(this.maxIssueNumber, next.number as number);
        }
        return;
      }
      case T.customField: {
        const key = (r: Rec) => SortedIndex.key(`${String(r.position).padStart(10, '0')}\u0000${r.createdAt as string}`, id);
        if (prev) this.customFieldOrder.remove(key(prev));
        if (next) this.customFieldOrder.add(key(next));
        return;
      }
      case T.tag: {
        if (prev) { this.tagOrder.remove(SortedIndex.key((prev.name as string).toLowerCase(), id)); this.tagIdByName.delete((prev.name as string).toLowerCase()); }
        if (next) { this.tagOrder.add(SortedIndex.key((next.name as string).toLowerCase(), id)); this.tagIdByName.set((next.name as string).toLowerCase(), id); }
        return;
      }
      case T.agent: {
        if (prev) this.agentOrder.remove(SortedIndex.key(prev.createdAt as string, id));
        if (next) this.agentOrder.add(SortedIndex.key(next.createdAt as string, id));
        return;
      }
    }
  }
}
