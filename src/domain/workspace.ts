/**
 * A workspace's state: its log ({@link Db}) typed by every area's record types, and each area's derived state (indexes,
 * search, counters) registered on the log (docs/storage.md#indexes). Every lookup goes through the workspace of the
 * request's key, which makes another workspace's id a 404 (docs/security.md#tenant-isolation).
 */
import { Db } from '../store/db.js';
import { attachIndexes, type Built } from '../store/indexes.js';
import { Store, type LogOptions, type StoreOptions } from '../store/store.js';
import { ClientIndex } from '../areas/clients/aggregates.js';
import { attachAnalytics, type AnalyticsRecords } from '../areas/analytics/counts.js';
import type { AnalyticsByDay } from '../areas/analytics/byDay.js';
import { attachAnswerAnalytics, type AnswerAnalyticsRecords } from '../areas/analytics/answers.js';
import { attachConversations, type ConversationRecords } from '../areas/conversations/conversations.js';
import { attachIssues, type IssueRecords } from '../areas/issues.js';
import { customFieldIndexes, tagIndexes, type DefinitionRecords } from '../areas/definitions.js';
import { agentIndexes, type AgentRecords } from '../areas/agents.js';
import { attachSources, failInterruptedIngestions, type SourceRecords } from '../areas/sources/state.js';
import type { UsageRecords } from '../areas/usage/counter.js';
import { expireIdempotency, type IdempotencyRecords } from '../http/idempotency.js';
import { attachEvents, type EventRecords, type EventState } from '../areas/events/events.js';
import { attachWebhooks } from '../areas/webhooks/attach.js';
import type { WebhookState } from '../areas/webhooks/state.js';
import type { WebhookRecords } from '../areas/webhooks/model.js';
import { AnswersByConversation, type AnswerRecords } from '../areas/answers/model.js';
import { WidgetState, type WidgetRecords } from '../areas/widget/model.js';

export type { SourceIndexRec } from '../ingest/types.js';

/** Every record type of a workspace log, as each area declares it (docs/storage.md#record-types). */
export interface Records extends ConversationRecords, IssueRecords, DefinitionRecords, AgentRecords,
  SourceRecords, AnalyticsRecords, UsageRecords, IdempotencyRecords, EventRecords, WebhookRecords, AnswerRecords,
  WidgetRecords, AnswerAnalyticsRecords {}

/** One workspace: its log and the state each area keeps of it. */
export class Workspace {
  /** Conversations: list order, `externalId`s, each conversation's messages, customer ids. */
  readonly conversations: ReturnType<typeof attachConversations>;
  /** Issues: list order, by conversation, the numbers in use. */
  readonly issues: ReturnType<typeof attachIssues>;
  readonly customFields: Built<typeof customFieldIndexes>;
  readonly tags: Built<typeof tagIndexes>;
  readonly agents: Built<typeof agentIndexes>;
  /** Sources: list order, urls, the search index and the endpoints. */
  readonly sources: ReturnType<typeof attachSources>;
  /** Answers of agents: each conversation's, in time order (docs/api.md#answers). */
  readonly answers: AnswersByConversation;
  /** Events: in time order and per resource (docs/api.md#events). */
  readonly events: EventState;
  /** Webhooks: endpoints, each one's deliveries, the pending ones by due time (docs/api.md#webhooks). */
  readonly webhooks: WebhookState;
  /** Analytics' breakdowns and durations by day of creation (docs/api.md#analytics). */
  readonly analytics: AnalyticsByDay;
  /** Client aggregates: counts, times and the list order (docs/api.md#client-object). */
  readonly clients: ClientIndex;
  /** The live-chat widget: agents by widget key, allowed origins, visitors' conversations (docs/api.md#live-chat). */
  readonly widget: WidgetState;

  /** Registers every area's state on `db` (before its replay, so that the replay fills it). */
  private constructor(readonly id: string, readonly db: Db<Records>, now: () => number) {
    this.conversations = attachConversations(db);
    this.issues = attachIssues(db);
    this.customFields = attachIndexes(db, 'custom_field', customFieldIndexes);
    this.tags = attachIndexes(db, 'tag', tagIndexes);
    this.agents = attachIndexes(db, 'agent', agentIndexes);
    this.sources = attachSources(db);
    this.answers = new AnswersByConversation(db);
    this.analytics = attachAnalytics(db);
    attachAnswerAnalytics(db, this.analytics);
    this.clients = ClientIndex.attach(id, db);
    expireIdempotency(db, now);
    this.events = attachEvents(this, db, now);
    this.webhooks = attachWebhooks(db, this.events, now);
    this.widget = new WidgetState(db, now);
  }

  /** Replays the workspace's log at `path` into memory and opens it for writing. */
  static async open(id: string, path: string, opts: LogOptions): Promise<Workspace> {
    const db = Db.create<Records>(path, { fs: opts.fs, sync: opts.sync, now: opts.now, onError: opts.onError,
      compactionSlack: opts.compactionSlack, snapshot: opts.snapshot, onBatch: opts.onBatch });
    const ws = new Workspace(id, db, opts.now);
    await db.load();
    ws.clients.loaded();
    ws.webhooks.resume();
    // Endpoints of an earlier build's log get their cursor before anything is served.
    const cursors = ws.webhooks.cursorsToWrite();
    if (cursors.length > 0) {
      const tx = db.begin();
      for (const c of cursors) tx.put('webhook_cursor', c.id, c);
      await db.commit(tx);
    }
    await failInterruptedIngestions(db, opts.now());
    return ws;
  }

  /** The record (type, id) of this workspace, or undefined. */
  get<K extends keyof Records & string>(type: K, id: string): Records[K] | undefined {
    return this.db.get(type, id);
  }

  /** The size of every index the areas keep (`area.index` → entries), for tests checking no state changed. */
  indexSizes(): Record<string, number> {
    const out: Record<string, number> = {};
    const walk = (path: string, v: unknown, depth: number): void => {
      if (typeof v === 'number') { out[path] = v; return; }
      if (v === null || typeof v !== 'object' || v instanceof Db || depth > 3) return;
      const size = (v as { size?: unknown }).size;
      if (typeof size === 'number') { out[path] = size; return; }
      for (const [k, x] of Object.entries(v)) walk(`${path}.${k}`, x, depth + 1);
    };
    const { conversations, issues, customFields, tags, agents, sources, events, webhooks, analytics, clients,
      answers } = this;
    const areas = { conversations, issues, customFields, tags, agents, sources, events, webhooks, analytics, clients,
      answers };
    for (const [area, state] of Object.entries(areas)) walk(area, state, 1);
    return out;
  }
}

/** Opens the data dir (src/store/store.ts) with this module's workspaces. */
export function openStore(opts: Omit<StoreOptions<Workspace>, 'openWorkspace'>): Promise<Store<Workspace>> {
  return Store.open({ ...opts, openWorkspace: (id, path, o) => Workspace.open(id, path, o) });
}
