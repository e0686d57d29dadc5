/**
 * Analytics (docs/api.md#analytics). Events are kept as they happen: every conversation created or solved and every
 * issue created or closed adds to a daily counter (`stats_day/<YYYY-MM-DD>`) in the same transaction as the change, so
 * the counts survive compaction. Breakdowns and medians come from the state kept by day of creation (byDay.ts), never
 * from a scan of records. Only counts and durations leave this module: never a name, an email, a subject or a body.
 */
import { STATELESS, type Db, type Tx } from '../../store/db.js';
import type { Workspace } from '../../domain/workspace.js';
import { CONVERSATION_STATUSES, CHANNELS, type ConversationRecords } from '../conversations/conversations.js';
import { ISSUE_STATES, type IssueRecords } from '../issues.js';
import { PRIORITIES } from '../common.js';
import { AnalyticsByDay } from './byDay.js';
import { medianSeconds } from './median.js';
import type { SortedBag } from './sortedBag.js';
import { answersAnalytics } from './answers.js';

/** The event counts of one UTC day (record type `stats_day`, id = the date). */
export interface DayRec {
  date: string; conversationsCreated: number; conversationsSolved: number; issuesCreated: number; issuesClosed: number }
/** The record types of analytics. */
export interface AnalyticsRecords { stats_day: DayRec }
type Counter = Exclude<keyof DayRec, 'date'>;

const day = (isoTime: string) => isoTime.slice(0, 10);

/** The records analytics reads and writes. */
type Counted = AnalyticsRecords & ConversationRecords & IssueRecords;

/** Adds one to the counter `field` of `date` in `tx` (the day's record as memory holds it, this transaction's changes
 * included). */
function bump(db: Db<Counted>, tx: Tx<Counted>, date: string, field: Counter): void {
  const prev = db.get('stats_day', date);
  const next: DayRec = prev ? { ...prev } : { date, conversationsCreated: 0, conversationsSolved: 0, issuesCreated: 0,
    issuesClosed: 0 };
  next[field] += 1;
  tx.put('stats_day', date, next);
}

/**
 * Registers on `db` the daily event counters: every put of a conversation or an issue that creates it, solves it or
 * closes it adds to its day's counter in the same transaction.
 */
export function countDailyEvents(db: Db<Counted>): void {
  db.derive('conversation', (tx, _id, prev, next) => {
    if (!prev) bump(db, tx, day(next.createdAt), 'conversationsCreated');
    if (next.status === 'solved' && prev?.status !== 'solved') bump(db, tx, day(next.closedAt!), 'conversationsSolved');
  });
  db.derive('issue', (tx, _id, prev, next) => {
    if (!prev) bump(db, tx, day(next.createdAt), 'issuesCreated');
    if (next.state === 'closed' && prev?.state !== 'closed') bump(db, tx, day(next.closedAt!), 'issuesClosed');
  });
}

const zeroes = <K extends string>(keys: readonly K[]) => Object.fromEntries(keys.map((k) => [k, 0])) as Record<K,
  number>;

/** Whether the month starting at `t` (ms, a first day) ends on or before the day `end` (ms). */
function wholeMonth(t: number, end: number): boolean {
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0) <= end;
}

/**
 * The analytics state of a workspace log: the daily event counters (records, written with each change) and the
 * breakdowns and durations by day of creation ({@link AnalyticsByDay}). Register before the log's replay.
 */
export function attachAnalytics(db: Db<Counted>): AnalyticsByDay {
  countDailyEvents(db);
  const byDay = new AnalyticsByDay(db);
  db.on('stats_day', () => byDay.changed(), STATELESS);
  return byDay;
}

/**
 * The analytics of `ws` for the UTC dates `from`..`to` inclusive (`YYYY-MM-DD`, validated), shaped as
 * docs/api.md#analytics: O(days) whatever the workspace's size; a range asked again before any change is answered as it
 * was.
 */
export function computeAnalytics(ws: Workspace, from: string, to: string) {
  return ws.analytics.answer(`${from}/${to}`, () => analyticsOf(ws, from, to));
}

/** {@link computeAnalytics}, computed. */
function analyticsOf(ws: Workspace, from: string, to: string) {
  const daily: DayRec[] = [];
  const byStatus = zeroes(CONVERSATION_STATUSES);
  const byChannel = zeroes(CHANNELS);
  const byState = zeroes(ISSUE_STATES);
  const byPriority = zeroes(PRIORITIES);
  const firstResponse: Array<SortedBag<number>> = [];
  const resolution: Array<SortedBag<number>> = [];
  const end = Date.parse(`${to}T00:00:00.000Z`);
  /** The month whose durations were taken whole, if the current day is in it. */
  let inMonth = '';
  for (let t = Date.parse(`${from}T00:00:00.000Z`); t <= end; t += 86_400_000) {
    const date = new Date(t).toISOString().slice(0, 10);
    const d = ws.get('stats_day', date);
    daily.push({ date, conversationsCreated: d?.conversationsCreated ?? 0,
      conversationsSolved: d?.conversationsSolved ?? 0, issuesCreated: d?.issuesCreated ?? 0,
      issuesClosed: d?.issuesClosed ?? 0 });
    const c = ws.analytics.conversationDay(date);
    if (c !== undefined) {
      CONVERSATION_STATUSES.forEach((s, i) => { byStatus[s] += c.counts[i]; });
      CHANNELS.forEach((ch, i) => { byChannel[ch] += c.counts[CONVERSATION_STATUSES.length + i]; });
    }
    // Durations: a whole month of the range as one bag, the days of a month cut by the range one by one.
    if (date.endsWith('-01') && t + 27 * 86_400_000 <= end && wholeMonth(t, end)) {
      const m = ws.analytics.month(date.slice(0, 7));
      if (m !== undefined) { firstResponse.push(m.firstResponse); resolution.push(m.resolution); }
      inMonth = date.slice(0, 7);
    } else if (c !== undefined && date.slice(0, 7) !== inMonth) {
      firstResponse.push(c.firstResponse);
      resolution.push(c.resolution);
    }
    const i = ws.analytics.issueDay(date);
    if (i !== undefined) {
      ISSUE_STATES.forEach((s, k) => { byState[s] += i.counts[k]; });
      PRIORITIES.forEach((p, k) => { byPriority[p] += i.counts[ISSUE_STATES.length + k]; });
    }
  }
  const sum = (f: Counter) => daily.reduce((n, d) => n + d[f], 0);
  const answers = answersAnalytics(ws, daily.map((d) => d.date));
  return {
    object: 'analytics', from, to,
    conversations: {
      created: sum('conversationsCreated'), solved: sum('conversationsSolved'), byStatus, byChannel,
      medianFirstResponseSeconds: medianSeconds(firstResponse), medianResolutionSeconds: medianSeconds(resolution),
    },
    issues: { created: sum('issuesCreated'), closed: sum('issuesClosed'), byState, byPriority },
    answers: answers.section,
    daily: daily.map((d, i) => ({ ...d, answersCreated: answers.perDay[i][0],
      handoffsRequested: answers.perDay[i][1] })),
  };
}
