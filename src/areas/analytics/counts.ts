/**
 * Analytics (docs/api.md#analytics). Events are kept as they happen: every
 * conversation created or solved and every issue created or closed adds to a daily counter
 * (`stats_day/<YYYY-MM-DD>`) in the same transaction as the change, so the counts survive
 * compaction. Breakdowns and medians come from the records created in the range (found
 * through the creation-time index, not a scan of the workspace). Only counts and durations
 * leave this module: never a name, an email, a subject or a body.
 */
import type { Db, Tx } from '../../store/db.js';
import type { Workspace } from '../../domain/workspace.js';
import { CONVERSATION_STATUSES, CHANNELS, type ConversationRecords } from '../conversations/conversations.js';
import { ISSUE_STATES, type IssueRecords } from '../issues.js';
import { PRIORITIES } from '../common.js';

/** The event counts of one UTC day (record type `stats_day`, id = the date). */
export interface DayRec { date: string; conversationsCreated: number; conversationsSolved: number; issuesCreated: number; issuesClosed: number }
/** The record types of analytics. */
export interface AnalyticsRecords { stats_day: DayRec }
type Counter = Exclude<keyof DayRec, 'date'>;

const day = (isoTime: string) => isoTime.slice(0, 10);

/** The records analytics reads and writes. */
type Counted = AnalyticsRecords & ConversationRecords & IssueRecords;

/** Adds one to the counter `field` of `date` in `tx` (the day's record as memory holds it, this transaction's changes included). */
function bump(db: Db<Counted>, tx: Tx<Counted>, date: string, field: Counter): void {
  const prev = db.get('stats_day', date);
  const next: DayRec = prev ? { ...prev } : { date, conversationsCreated: 0, conversationsSolved: 0, issuesCreated: 0, issuesClosed: 0 };
  next[field] += 1;
  tx.put('stats_day', date, next);
}

/**
 * Registers on `db` the daily event counters: every put of a conversation or an issue that
 * creates it, solves it or closes it adds to its day's counter in the same transaction.
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

const zeroes = <K extends string>(keys: readonly K[]) => Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;

/** Median of `xs` (seconds), rounded to a whole second; null for none. */
export function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  xs.sort((a, b) => a - b);
  const m = xs.length >> 1;
  return Math.round(xs.length % 2 ? xs[m] : (xs[m - 1] + xs[m]) / 2);
}

/**
 * The analytics of `ws` for the UTC dates `from`..`to` inclusive (`YYYY-MM-DD`, already validated).
 * Shape: docs/api.md#analytics.
 */
export function computeAnalytics(ws: Workspace, from: string, to: string) {
  const start = `${from}T00:00:00.000Z`;
  const endDate = new Date(Date.parse(`${to}T00:00:00.000Z`) + 86_400_000).toISOString();
  const daily: DayRec[] = [];
  for (let t = Date.parse(start); t < Date.parse(endDate); t += 86_400_000) {
    const date = new Date(t).toISOString().slice(0, 10);
    const d = ws.get('stats_day', date);
    daily.push({ date, conversationsCreated: d?.conversationsCreated ?? 0, conversationsSolved: d?.conversationsSolved ?? 0, issuesCreated: d?.issuesCreated ?? 0, issuesClosed: d?.issuesClosed ?? 0 });
  }
  const sum = (f: Counter) => daily.reduce((n, d) => n + d[f], 0);

  const byStatus = zeroes(CONVERSATION_STATUSES);
  const byChannel = zeroes(CHANNELS);
  const firstResponse: number[] = [];
  const resolution: number[] = [];
  const conversations = ws.conversations.order;
  for (const at of conversations.asc(start, endDate)) {
    const c = ws.get('conversation', conversations.idAt(at));
    if (!c) continue;
    byStatus[c.status]++;
    byChannel[c.channel]++;
    const created = Date.parse(c.createdAt);
    if (c.firstResponseAt) firstResponse.push((Date.parse(c.firstResponseAt) - created) / 1000);
    if (c.status === 'solved' && c.closedAt) resolution.push((Date.parse(c.closedAt) - created) / 1000);
  }
  const byState = zeroes(ISSUE_STATES);
  const byPriority = zeroes(PRIORITIES);
  const issues = ws.issues.order;
  for (const at of issues.asc(start, endDate)) {
    const i = ws.get('issue', issues.idAt(at));
    if (!i) continue;
    byState[i.state]++;
    byPriority[i.priority]++;
  }
  return {
    object: 'analytics', from, to,
    conversations: {
      created: sum('conversationsCreated'), solved: sum('conversationsSolved'), byStatus, byChannel,
      medianFirstResponseSeconds: median(firstResponse), medianResolutionSeconds: median(resolution),
    },
    issues: { created: sum('issuesCreated'), closed: sum('issuesClosed'), byState, byPriority },
    daily,
  };
}
