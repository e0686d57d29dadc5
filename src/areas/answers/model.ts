/**
 * Answers of agents (docs/api.md#answers): the stored record (type `answer`), its API view and schema, and each
 * conversation's answers in time order, kept current by the log's listeners.
 */
import { s } from '../../http/schema.js';
import type { Db } from '../../store/db.js';
import { persistSortedMap } from '../../store/indexes.js';
import { SortedIndex } from '../../store/memory/sorted.js';

export const ANSWER_OUTCOMES = ['answered', 'uncertain', 'no_sources'] as const;
export type AnswerOutcome = (typeof ANSWER_OUTCOMES)[number];

/** Where an answer's passage comes from. */
export interface Citation {
  sourceId: string; documentId: string | null; endpointId: string | null; method: string | null; path: string | null;
  title: string; url: string | null; score: number;
}

/** A stored answer; the API view adds `object: "answer"`. */
export interface Answer {
  id: string; conversationId: string; messageId: string; agentId: string; outcome: AnswerOutcome; text: string;
  citations: Citation[]; model: string | null; createdAt: string;
  /** The visitor's say on it (the widget, docs/api.md#live-chat); absent until given. */
  feedback?: { helpful: boolean; createdAt: string };
}
/** The record types of the answers area. */
export interface AnswerRecords { answer: Answer }

/** Each conversation's answers by (createdAt, id). */
export class AnswersByConversation {
  private readonly byConversation = new Map<string, SortedIndex>();
  constructor(db: Db<AnswerRecords>) {
    db.on('answer', (id, prev, next) => {
      const cid = (next ?? prev)!.conversationId;
      let idx = this.byConversation.get(cid);
      if (!idx) this.byConversation.set(cid, (idx = new SortedIndex()));
      if (prev) idx.remove(prev.createdAt, id);
      if (next) idx.add(next.createdAt, id);
    }, persistSortedMap('answer.byConversation/1', 'answer', () => this.byConversation, () => new SortedIndex()));
  }
  /** The number of conversations with answers. */
  get size(): number { return this.byConversation.size; }
  /** The answers of `conversationId` by (createdAt, id); an empty index when it has none. */
  of(conversationId: string): SortedIndex { return this.byConversation.get(conversationId) ?? EMPTY; }
}
const EMPTY = new SortedIndex();

/** The agent of the newest answer in conversation `conversationId` of `db`, or undefined when none answered there. */
export function answeringAgent(db: Db<AnswerRecords>, answers: AnswersByConversation, conversationId: string):
  string | undefined {
  const index = answers.of(conversationId);
  for (const at of index.desc()) return db.get('answer', index.idAt(at))?.agentId;
  return undefined;
}

const nullableString = s.nullable(s.string());
export const citationSchema = s.named('AnswerCitation', s.object({
  sourceId: s.string(), documentId: nullableString, endpointId: nullableString, method: nullableString,
  path: nullableString, title: s.string(),
  url: s.nullable(s.string({ description: 'The public docs anchor of the cited part, when the source is published.' })),
  score: s.number({ description: 'BM25 score of the cited chunk for the question (0 for an endpoint the question '
    + 'named that no chunk matched).' }),
}));
export const answerSchema = s.named('Answer', s.object({
  object: s.enum(['answer'] as const), id: s.string(), conversationId: s.string(),
  messageId: s.string({ description: 'The customer message answered (the newest one).' }), agentId: s.string(),
  outcome: s.enum(ANSWER_OUTCOMES, { description: '`answered`; `uncertain` when the sources may not answer; '
    + '`no_sources` when nothing matches or there is no source.' }),
  text: s.string(), citations: s.array(citationSchema),
  model: s.nullable(s.string({ description: 'The model that wrote `text`; null for an extractive answer.' })),
  createdAt: s.string({ format: 'date-time' }),
  feedback: s.optional(s.object({ helpful: s.boolean(), createdAt: s.string({ format: 'date-time' }) },
    { description: 'The visitor\'s say on it in the widget, when given (a second one replaces the first).' })),
}));

/** The API view of an answer. */
export const answerView = (a: Answer): Record<string, unknown> => ({ object: 'answer', ...a });
