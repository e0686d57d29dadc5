/**
 * The shapes of the API's answers and of the admin CLI's output, for tests that read into them:
 * `await w.call<ConversationAnswer>('POST', …)` types `body`, which is `unknown` otherwise.
 * The API's shapes are the static types of the route table's own schemas (src/http/schema.ts
 * `Static`), so they follow the documented contract; a type argument is a claim about one
 * answer, checked at run time by the contract check every `call` makes (helpers/contract.ts).
 */
import type { Static } from '../../src/http/schema.js';
import type { conversationSchema, messageSchema } from '../../src/areas/conversations/conversations.js';
import type { issueSchema } from '../../src/areas/issues.js';
import type { ingestionResultSchema, sourceSummarySchema } from '../../src/areas/sources/model.js';
import type { customFieldSchema, prioritySchema, statusSchema, tagSchema } from '../../src/areas/definitions.js';
import type { agentSchema } from '../../src/areas/agents.js';
import type { clientSchema } from '../../src/areas/clients/clients.js';
import type { usageSchema } from '../../src/areas/usage/usage.js';
import type { analyticsSchema } from '../../src/areas/analytics/analytics.js';
import type { liveCheckSchema } from '../../src/areas/sources/liveChecks.js';

/** Every error answer: `{code, error}` (docs/api.md#errors). */
export interface ErrorAnswer { code: string; error: string }

/** What every page of a list has besides its items (docs/api.md#lists). */
export interface Page { object: 'list'; hasMore: boolean; nextCursor: string | null }
/** One page of a list holding its items under `K`. */
export type List<K extends string, T> = Page & { [P in K]: T[] };

export type Conversation = Static<typeof conversationSchema>;
export type Message = Static<typeof messageSchema>;
export type Issue = Static<typeof issueSchema>;
export type SourceSummary = Static<typeof sourceSummarySchema>;
/** A source with what its last ingestion produced (create, retrieve, rescan). */
export type Ingestion = Static<typeof ingestionResultSchema>;
export type CustomField = Static<typeof customFieldSchema>;
export type Tag = Static<typeof tagSchema>;
export type Status = Static<typeof statusSchema>;
export type Priority = Static<typeof prioritySchema>;
export type Agent = Static<typeof agentSchema>;
export type Client = Static<typeof clientSchema>;
export type Usage = Static<typeof usageSchema>;
export type Analytics = Static<typeof analyticsSchema>;
export type LiveCheck = Static<typeof liveCheckSchema>;

export interface ConversationAnswer { conversation: Conversation }
export interface MessageAnswer { message: Message }
export interface IssueAnswer { issue: Issue }
export interface SourceAnswer { source: SourceSummary }
export interface AgentAnswer { agent: Agent }
export interface ClientAnswer { client: Client }
/** `DELETE /sources/{id}`. */
export interface DeletedAnswer { object: 'source'; id: string; deleted: boolean }
/** A search hit of `GET /sources/search`. */
export interface SearchHit { object: 'search_result'; sourceId: string; documentId: string; title: string | null; score: number; text: string }
/** `GET /openapi.json`: the parts tests read (the rest is OpenAPI 3.1). */
export interface OpenApiAnswer {
  openapi: string;
  info: { title: string; version: string; [k: string]: unknown };
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components: Record<string, Record<string, unknown>>;
  servers?: Array<{ url: string }>;
  security?: unknown[];
  [k: string]: unknown;
}

export type ConversationList = List<'conversations', Conversation>;
export type MessageList = List<'messages', Message>;
export type IssueList = List<'issues', Issue>;
export type SourceList = List<'sources', SourceSummary>;
export type CustomFieldList = List<'customFields', CustomField>;
export type TagList = List<'tags', Tag>;
export type AgentList = List<'agents', Agent>;
export type ClientList = List<'clients', Client>;
export type SearchAnswer = List<'results', SearchHit>;

/** A key as the CLI shows it (`key create` adds the full `key`, once). */
export interface CliKey {
  object: 'api_key'; id: string; workspaceId: string; name: string | null; prefix: string; scopes: string[];
  createdAt: string; expiresAt: string | null; revokedAt: string | null; lastUsedAt: string | null; key: string;
}
/** A workspace as the CLI shows it. */
export interface CliWorkspace { object: 'workspace'; id: string; name: string; createdAt: string }

/**
 * What the admin CLI prints, by command: a workspace, a key, a list of either, an import's
 * counts, a repair's report, or a definition as the API shows it. One shape holding the
 * properties tests read; each command prints the part that is its own.
 */
export interface CliOutput extends Omit<CliKey, 'object' | 'name'> {
  object: string;
  name: string | null;
  workspaces: CliWorkspace[];
  keys: CliKey[];
  imported: Record<string, number>;
  damagedCopy: string;
  corruptLine: { line: number; offset: number; reason: string } | null;
  widgetKey: string;
  updatedAt: string;
  enabled: boolean;
  label: string;
  options: string[];
  [k: string]: unknown;
}
