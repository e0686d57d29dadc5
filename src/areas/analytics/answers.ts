/**
 * Analytics of agents' answers (docs/api.md#analytics): answers by outcome, the visitors' feedback and hand-overs, per
 * agent and per cited source, counted on the UTC day each happened in a daily record (`stats_answers_day`) written in
 * the same transaction as the change, so the counts survive compaction and restarts.
 */
import { STATELESS, type Db, type Tx } from '../../store/db.js';
import type { AnalyticsByDay } from './byDay.js';
import type { Workspace } from '../../domain/workspace.js';
import { ANSWER_OUTCOMES, type Answer, type AnswerRecords } from '../answers/model.js';
import { HANDOFF_REASONS, type ConversationRecords } from '../conversations/conversations.js';
import { s } from '../../http/schema.js';

/**
 * The counters of one subject for one day, by position: the outcomes (`answered`, `uncertain`, `no_sources`), then
 * `helpful`, `unhelpful`, then the hand-over reasons (`customer`, `uncertain`, `api`).
 */
type Tally = number[];
/** What one UTC day counted (record type `stats_answers_day`, id = the date). */
export interface AnswersDayRec {
  date: string; all: Tally; agents: Record<string, Tally>; sources: Record<string, Tally>;
}
/** The record types of answers' analytics. */
export interface AnswerAnalyticsRecords { stats_answers_day: AnswersDayRec }
type Counted = AnswerAnalyticsRecords & AnswerRecords & ConversationRecords;

const N_OUTCOMES = ANSWER_OUTCOMES.length;
const HELPFUL = N_OUTCOMES;
const UNHELPFUL = N_OUTCOMES + 1;
const HANDOFF = N_OUTCOMES + 2;
const WIDTH = HANDOFF + HANDOFF_REASONS.length;
/** The most agents and sources an answer lists (the busiest first). */
export const MAX_LISTED = 100;

/** Adds `by` at position `at` to the day `date`'s tally of everything, of `agentId` and of each of `sourceIds`. */
function bump(db: Db<Counted>, tx: Tx<Counted>, date: string, at: number, by: 1 | -1, agentId: string | undefined,
  sourceIds: readonly string[]): void {
  const prev = db.get('stats_answers_day', date);
  const next: AnswersDayRec = prev
    ? { date, all: prev.all.slice(), agents: { ...prev.agents }, sources: { ...prev.sources } }
    : { date, all: new Array<number>(WIDTH).fill(0), agents: {}, sources: {} };
  // Never below 0: feedback given before the counters existed was not counted, so changing it takes nothing off.
  const add = (t: Tally | undefined): Tally => {
    const out = t === undefined ? new Array<number>(WIDTH).fill(0) : t.slice();
    out[at] = Math.max(0, out[at] + by);
    return out;
  };
  next.all = add(next.all);
  if (agentId !== undefined) next.agents[agentId] = add(next.agents[agentId]);
  for (const id of sourceIds) next.sources[id] = add(next.sources[id]);
  tx.put('stats_answers_day', date, next);
}

/** The distinct sources an answer cites. */
const citedSources = (a: Answer): string[] => [...new Set(a.citations.map((c) => c.sourceId))];

/**
 * Registers on `db` the daily counters of answers: an answer created counts on its day by outcome; its feedback on the
 * day given (a second one moves the count); a hand-over on the day requested, for the agent that handed over. A change
 * of the counters drops the analytics answers `byDay` has kept.
 */
export function attachAnswerAnalytics(db: Db<Counted>, byDay: AnalyticsByDay): void {
  db.on('stats_answers_day', () => byDay.changed(), STATELESS);
  db.derive('answer', (tx, _id, prev, next) => {
    const sources = citedSources(next);
    if (!prev) bump(db, tx, next.createdAt.slice(0, 10), ANSWER_OUTCOMES.indexOf(next.outcome), 1, next.agentId,
      sources);
    const was = prev?.feedback;
    const now = next.feedback;
    if (was?.helpful === now?.helpful && was?.createdAt.slice(0, 10) === now?.createdAt.slice(0, 10)) return;
    if (was) bump(db, tx, was.createdAt.slice(0, 10), was.helpful ? HELPFUL : UNHELPFUL, -1, next.agentId, sources);
    if (now) bump(db, tx, now.createdAt.slice(0, 10), now.helpful ? HELPFUL : UNHELPFUL, 1, next.agentId, sources);
  });
  db.derive('conversation', (tx, _id, prev, next) => {
    const h = next.handoff;
    if (h === undefined || prev?.handoff?.requestedAt === h.requestedAt) return;
    bump(db, tx, h.requestedAt.slice(0, 10), HANDOFF + HANDOFF_REASONS.indexOf(h.reason), 1, h.agentId, []);
  });
}

const int = s.integer({ minimum: 0 });
const outcomes = s.object(Object.fromEntries(ANSWER_OUTCOMES.map((k) => [k, int])));
const feedback = s.object({ helpful: int, unhelpful: int });
const handoffs = s.object(Object.fromEntries(HANDOFF_REASONS.map((k) => [k, int])));
export const answersAnalyticsSchema = s.object({
  created: int, byOutcome: outcomes, feedback, handoffs,
  byAgent: s.array(s.named('AnalyticsAgentAnswers', s.object({
    agentId: s.string(), created: int, byOutcome: outcomes, feedback, handoffs,
  })), { description: `The agents that answered or handed over, most answers first (at most ${MAX_LISTED}).` }),
  bySource: s.array(s.named('AnalyticsSourceAnswers', s.object({
    sourceId: s.string(), cited: int, byOutcome: outcomes, feedback,
  })), { description: `The sources cited, most answers citing them first (at most ${MAX_LISTED}).` }),
}, { description: 'Answers of agents made, by outcome; feedback given; hand-overs requested, by reason.' });

/** The parts of a tally as the answer shows them. */
function shape(t: Tally) {
  return {
    created: ANSWER_OUTCOMES.reduce((n, _k, i) => n + t[i], 0),
    byOutcome: Object.fromEntries(ANSWER_OUTCOMES.map((k, i) => [k, t[i]])),
    feedback: { helpful: t[HELPFUL], unhelpful: t[UNHELPFUL] },
    handoffs: Object.fromEntries(HANDOFF_REASONS.map((k, i) => [k, t[HANDOFF + i]])),
  };
}

/** The tallies of `by` summed into `into`. */
function sumInto(into: Map<string, Tally>, by: Record<string, Tally>): void {
  for (const [id, t] of Object.entries(by)) {
    let acc = into.get(id);
    if (acc === undefined) into.set(id, (acc = new Array<number>(WIDTH).fill(0)));
    for (let i = 0; i < WIDTH; i++) acc[i] += t[i] ?? 0;
  }
}

/** The busiest `MAX_LISTED` of `m`, by answers then id. */
const busiest = (m: Map<string, Tally>) => [...m].map(([id, t]) => ({ id, ...shape(t) }))
  .sort((a, b) => b.created - a.created || (a.id < b.id ? -1 : 1)).slice(0, MAX_LISTED);

/**
 * The `answers` section of analytics for `dates` (UTC days, validated): O(days × agents and sources counted).
 * Returns the section and, per date, `[answers created, hand-overs]` for the daily series.
 */
export function answersAnalytics(ws: Workspace, dates: readonly string[]) {
  const all = new Array<number>(WIDTH).fill(0);
  const agents = new Map<string, Tally>();
  const sources = new Map<string, Tally>();
  const perDay: Array<[number, number]> = [];
  for (const date of dates) {
    const d = ws.get('stats_answers_day', date);
    if (d === undefined) { perDay.push([0, 0]); continue; }
    for (let i = 0; i < WIDTH; i++) all[i] += d.all[i] ?? 0;
    sumInto(agents, d.agents);
    sumInto(sources, d.sources);
    const t = shape(d.all);
    perDay.push([t.created, HANDOFF_REASONS.reduce((n, _k, i) => n + d.all[HANDOFF + i], 0)]);
  }
  const section = {
    ...shape(all),
    byAgent: busiest(agents).map(({ id, ...t }) => ({ agentId: id, ...t })),
    bySource: busiest(sources).map(({ id, created, byOutcome, feedback: f }) => ({ sourceId: id, cited: created,
      byOutcome, feedback: f })),
  };
  return { section, perDay };
}
