/**
 * A workspace's state: its log ({@link Db}) and the secondary indexes every API area reads
 * from, kept up to date by a change listener on every put, delete, replay and undo. Every
 * lookup an API handler makes goes through the workspace of the request's key, which is what
 * makes another workspace's id a 404 like a missing one (docs/security.md#tenant-isolation).
 */
import { Db, type ChangeListener, type Rec } from './store/db.js';
import { SortedIndex } from './store/sorted.js';
import type { StoreFs } from './store/fs.js';
import { SearchIndex, type SourceEntry } from './search/bm25.js';
import { ClientIndex } from './clients.js';
import { deriveEvents, type AnalyticsRecords } from './analytics.js';
import { CustomerIds } from './customerIds.js';
import type { ConversationRecords } from './areas/conversations.js';
import type { IssueRecords } from './areas/issues.js';
import type { DefinitionRecords } from './areas/definitions.js';
import type { AgentRecords } from './areas/agents.js';
import type { SourceIndexRec, SourceRecords } from './areas/sourceState.js';
import type { UsageRecords } from './usage.js';
import { IDEMPOTENCY_TTL_MS, type IdempotencyRecords } from './http/idempotency.js';

export type { SourceIndexRec } from './areas/sourceState.js';

/**
 * Every record type of a workspace log and the shape of its records, as each area declares
 * its own (docs/storage.md#record-types).
 */
export interface Records extends ConversationRecords, IssueRecords, DefinitionRecords, AgentRecords,
  SourceRecords, AnalyticsRecords, UsageRecords, IdempotencyRecords {}

export interface WorkspaceOptions {
  fs: StoreFs;
  sync: boolean;
  now: () => number;
  onError?: (err: Error) => void;
  /** Extra listeners (indexes of later areas). */
  listeners?: ChangeListener[];
  compactionSlack?: number;
}


export class Workspace {
  db!: Db<Records>;
  /** Conversations by (createdAt, id). */
  readonly conversationOrder = new SortedIndex();
  readonly conversationByExternalId = new Map<string, string>();
  /** Customer email (without case) → customer id (one id per email, docs/decisions.md#one-customer-id-per-email). */
  readonly customerIds = new CustomerIds();
  /** Messages of each conversation by (createdAt, id). */
  readonly messagesByConversation = new Map<string, MessageIndex>();
  readonly issueOrder = new SortedIndex();
  /** conversation id → ids of the issues opened from it. */
  readonly issuesByConversation = new Map<string, Set<string>>();
  maxIssueNumber = 0;
  /** Custom fields by (position, createdAt, id). */
  readonly customFieldOrder = new SortedIndex();
  readonly tagOrder = new SortedIndex();
  readonly tagIdByName = new Map<string, string>();
  readonly agentOrder = new SortedIndex();
  readonly sourceOrder = new SortedIndex();
  /** Normalized `inputUrl` → source id (a duplicate url is a 409, docs/sources.md#url-and-content). */
  readonly sourceIdByUrl = new Map<string, string>();
  /** Endpoint id → source id (live API checks). */
  readonly endpointSource = new Map<string, string>();
  /** BM25 index over every source's chunks. */
  readonly search = new SearchIndex();
  /** Postings prepared off the main thread for an index record about to be put (by record). */
  readonly preparedSearch = new WeakMap<object, SourceEntry>();
  /** Client aggregates, kept up to date on every conversation and issue change. */
  private clientIndex: ClientIndex | null = null;

  private constructor(readonly id: string) {
  }

  /** Replays the workspace's log at `path` into memory and opens it for writing. */
  static async open(id: string, path: string, opts: WorkspaceOptions): Promise<Workspace> {
    const ws = new Workspace(id);
    ws.db = await Db.open<Records>(path, {
      fs: opts.fs,
      sync: opts.sync,
      now: opts.now,
      onError: opts.onError,
      compactionSlack: opts.compactionSlack,
      listeners: [(type, rid, prev, next) => ws.onChange(type, rid, prev, next), ...(opts.listeners ?? [])],
      derive: deriveEvents((date) => ws.db.get('stats_day', date)),
      retain: (type, rec) => type !== 'idem' || opts.now() - Date.parse(rec.createdAt as string) < IDEMPOTENCY_TTL_MS,
    });
    await ws.failInterruptedIngestions(opts.now());
    return ws;
  }

  /**
   * A source left `processing` was being ingested when the server stopped: mark it failed
   * so that it can be rescanned (its previous documents, if any, are kept).
   */
  private async failInterruptedIngestions(now: number): Promise<void> {
    const stuck = [...this.db.table('source').values()].filter((s) => s.status === 'processing');
    if (stuck.length === 0) return;
    const tx = this.db.begin();
    for (const s of stuck) {
      tx.put('source', s.id, { ...s, status: 'failed', error: 'ingestion was interrupted by a server restart; rescan the source', updatedAt: new Date(now).toISOString() });
    }
    await this.db.commit(tx);
  }

  /**
   * Client aggregates. Built on first use from every conversation and issue (one pass), then
   * kept up to date on every change — so replaying a large log at start pays nothing for them.
   */
  get clients(): ClientIndex {
    if (!this.clientIndex) {
      const idx = new ClientIndex(this.id);
      const conv = (cid: string) => this.db.get('conversation', cid) as Rec | undefined;
      for (const [cid, c] of this.db.table('conversation')) idx.onChange('conversation', cid, undefined, c as unknown as Rec, conv);
      for (const [iid, i] of this.db.table('issue')) idx.onChange('issue', iid, undefined, i as unknown as Rec, conv);
      this.clientIndex = idx;
    }
    return this.clientIndex;
  }

  /** The record (type, id) of this workspace, or undefined. */
  get<K extends keyof Records & string>(type: K, id: string): Records[K] | undefined {
    return this.db.get(type, id);
  }

  /** After an undone create, the highest number in use again (numbers stay sequential). */
  private recomputeMaxIssueNumber(): void {
    let max = 0;
    for (const r of this.db.table('issue').values()) if (r.number > max) max = r.number;
    this.maxIssueNumber = max;
  }

  private onChange(type: string, id: string, prev: Rec | undefined, next: Rec | undefined): void {
    if (this.clientIndex && (type === 'conversation' || type === 'issue')) this.clientIndex.onChange(type, id, prev, next, (cid) => this.db.get('conversation', cid) as Rec | undefined);
    switch (type) {
      case 'conversation': {
        // An update keeps createdAt, so the order index is touched only on create and delete
        // (a remove + add would cost a splice of the whole index on every update).
        const moved = prev?.createdAt !== next?.createdAt;
        const before = prev?.customer as { id: string; email: string } | undefined;
        const after = next?.customer as { id: string; email: string } | undefined;
        const sameCustomer = before !== undefined && after !== undefined && before.id === after.id && before.email === after.email;
        if (prev) {
          if (moved) this.conversationOrder.remove(prev.createdAt as string, id);
          if (prev.externalId && prev.externalId !== next?.externalId) this.conversationByExternalId.delete(prev.externalId as string);
          if (!sameCustomer) this.customerIds.remove(before!.email, before!.id);
        }
        if (next) {
          if (moved) this.conversationOrder.add(next.createdAt as string, id);
          if (next.externalId) this.conversationByExternalId.set(next.externalId as string, id);
          if (!sameCustomer) this.customerIds.add(after!.email, after!.id);
        }
        return;
      }
      case 'message': {
        const rec = (next ?? prev)!;
        const cid = rec.conversationId as string;
        let idx = this.messagesByConversation.get(cid);
        if (!idx) { idx = new MessageIndex(cid); this.messagesByConversation.set(cid, idx); }
        // String interning: every message of a conversation shares one conversationId string
        // (each parsed record brings its own equal copy — ~45 MiB on 800,000 messages). Equal
        // strings are indistinguishable, so the record does not change in any observable way.
        if (next) (next as Record<string, unknown>).conversationId = idx.conversationId;
        if (prev && next && prev.createdAt === next.createdAt) return;
        if (prev) idx.remove(prev.createdAt as string, id);
        if (next) idx.add(next.createdAt as string, id);
        return;
      }
      case 'issue': {
        const moved = prev?.createdAt !== next?.createdAt;
        if (prev) {
          if (moved) this.issueOrder.remove(prev.createdAt as string, id);
          const cid = (prev.source as { conversationId?: string }).conversationId;
          if (cid) this.issuesByConversation.get(cid)?.delete(id);
          if (!next && prev.number === this.maxIssueNumber) this.recomputeMaxIssueNumber();
        }
        if (next) {
          if (moved) this.issueOrder.add(next.createdAt as string, id);
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
      case 'custom_field': {
        const key = (r: Rec) => `${String(r.position).padStart(10, '0')}\u0000${r.createdAt as string}`;
        if (prev && next && key(prev) === key(next)) return;
        if (prev) this.customFieldOrder.remove(key(prev), id);
        if (next) this.customFieldOrder.add(key(next), id);
        return;
      }
      case 'tag': {
        if (prev && next && prev.name === next.name) return;
        if (prev) { this.tagOrder.remove((prev.name as string).toLowerCase(), id); this.tagIdByName.delete((prev.name as string).toLowerCase()); }
        if (next) { this.tagOrder.add((next.name as string).toLowerCase(), id); this.tagIdByName.set((next.name as string).toLowerCase(), id); }
        return;
      }
      case 'source': {
        const moved = prev?.createdAt !== next?.createdAt;
        if (prev) { if (moved) this.sourceOrder.remove(prev.createdAt as string, id); if (prev.inputUrl) this.sourceIdByUrl.delete(prev.inputUrl as string); }
        if (next) { if (moved) this.sourceOrder.add(next.createdAt as string, id); if (next.inputUrl) this.sourceIdByUrl.set(next.inputUrl as string, id); }
        return;
      }
      case 'source_index': {
        if (prev) { for (const e of (prev as unknown as SourceIndexRec).endpoints) this.endpointSource.delete(e.id); this.search.removeSource(id); }
        if (next) {
          const idx = next as unknown as SourceIndexRec;
          for (const e of idx.endpoints) this.endpointSource.set(e.id, id);
          // Prepared on a worker (the usual case): O(1), no per-chunk work on the main thread.
          const prepared = this.preparedSearch.get(next);
          if (prepared) this.search.addPrepared(id, prepared);
          else this.search.addSource(id, idx.chunks.map((c) => ({ documentId: idx.documents[c.d].id, title: idx.documents[c.d].title, text: c.t })));
        }
        return;
      }
      case 'agent': {
        if (prev && next && prev.createdAt === next.createdAt) return;
        if (prev) this.agentOrder.remove(prev.createdAt as string, id);
        if (next) this.agentOrder.add(next.createdAt as string, id);
        return;
      }
    }
  }
}

/** A conversation's messages by (createdAt, id), holding the one shared copy of its id. */
export class MessageIndex extends SortedIndex {
  constructor(readonly conversationId: string) { super(); }
}
