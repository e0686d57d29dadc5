/**
 * Analytics' breakdowns and durations by the UTC day records were created (docs/api.md#analytics): per day,
 * conversations by status and channel, issues by state and priority, and each day's first-response and resolution times
 * in sorted bags (also by month) — kept on every change, replay and undo, and saved in the snapshot block: a range's
 * answer reads at most 366 days.
 */
import type { Columns, Db, Persist, RestoreContext } from '../../store/db.js';
import {
  CONVERSATION_STATUSES, CHANNELS, type Conversation, type ConversationRecords,
} from '../conversations/conversations.js';
import { ISSUE_STATES, type Issue, type IssueRecords } from '../issues.js';
import { PRIORITIES } from '../common.js';
import { SortedBag } from './sortedBag.js';

/** The conversations created on one day: counts by status then channel, and durations in ms. */
export interface ConversationDay {
  counts: number[]; firstResponse: SortedBag<number>; resolution: SortedBag<number>; total: number;
}
/** The issues created on one day: counts by state then priority. */
export interface IssueDay { counts: number[]; total: number }
/** The durations of the conversations created in one month (ms): a range's whole month is one bag, not 28–31. */
export interface Durations { firstResponse: SortedBag<number>; resolution: SortedBag<number> }

const N_CONV = CONVERSATION_STATUSES.length + CHANNELS.length;
const N_ISSUE = ISSUE_STATES.length + PRIORITIES.length;
const STATUS_AT = new Map<string, number>(CONVERSATION_STATUSES.map((s, i) => [s, i]));
const CHANNEL_AT = new Map<string, number>(CHANNELS.map((c, i) => [c, CONVERSATION_STATUSES.length + i]));
const STATE_AT = new Map<string, number>(ISSUE_STATES.map((s, i) => [s, i]));
const PRIORITY_AT = new Map<string, number>(PRIORITIES.map((p, i) => [p, ISSUE_STATES.length + i]));

/** Milliseconds from `from` to `to` (ISO times); NaN when either is missing or not a time. */
const span = (from: string, to: string | undefined) => (to === undefined ? NaN : Date.parse(to) - Date.parse(from));
/** A conversation's first-response time in ms (NaN: none yet). */
export const firstResponseMs = (c: Conversation) => span(c.createdAt, c.firstResponseAt);
/** A conversation's resolution time in ms, while it is solved (NaN otherwise). */
export const resolutionMs = (c: Conversation) => (c.status === 'solved' ? span(c.createdAt, c.closedAt) : NaN);

/** The per-day state of one workspace's analytics. */
export class AnalyticsByDay {
  /** UTC date (`YYYY-MM-DD`) → the conversations created that day. */
  private conversations = new Map<string, ConversationDay>();
  /** UTC date → the issues created that day. */
  private issues = new Map<string, IssueDay>();
  /** UTC month (`YYYY-MM`) → the durations of its days together (not saved: rebuilt from the days). */
  private months = new Map<string, Durations>();
  /** Answers made since the last change, by range. A `#` field: not log state (`Workspace.indexSizes` skips it). */
  readonly #answers = new Map<string, object>();

  constructor(db: Db<ConversationRecords & IssueRecords>) {
    db.on('conversation', (_id, prev, next) => {
      this.changed();
      if (prev !== undefined && next !== undefined && prev.createdAt === next.createdAt && prev.status === next.status
        && prev.channel === next.channel && prev.firstResponseAt === next.firstResponseAt
        && prev.closedAt === next.closedAt) return;
      if (prev !== undefined) this.countConversation(prev, -1);
      if (next !== undefined) this.countConversation(next, 1);
    }, this.persistConversations());
    db.on('issue', (_id, prev, next) => {
      this.changed();
      if (prev !== undefined && next !== undefined && prev.createdAt === next.createdAt && prev.state === next.state
        && prev.priority === next.priority) return;
      if (prev !== undefined) this.countIssue(prev, -1);
      if (next !== undefined) this.countIssue(next, 1);
    }, this.persistIssues());
  }

  /** The answer for range `key` made since the last change, else `make()`'s (8 kept at most); shared: keep it as is. */
  answer<A extends object>(key: string, make: () => A): A {
    const hit = this.#answers.get(key);
    if (hit !== undefined) return hit as A;
    const made = make();
    if (this.#answers.size >= 8) this.#answers.delete(this.#answers.keys().next().value!);
    this.#answers.set(key, made);
    return made;
  }

  /** Drops the answers made so far: a record they count changed (the daily counters' listener calls it too). */
  changed(): void { if (this.#answers.size > 0) this.#answers.clear(); }

  /** The conversations created on `date`, or undefined when none was. */
  conversationDay(date: string): ConversationDay | undefined { return this.conversations.get(date); }
  /** The issues created on `date`, or undefined when none was. */
  issueDay(date: string): IssueDay | undefined { return this.issues.get(date); }
  /** The durations of the conversations created in `month` (`YYYY-MM`), or undefined when none was. */
  month(month: string): Durations | undefined { return this.months.get(month); }

  /** Adds (`by` 1) or removes (-1) a conversation's share of its day. */
  private countConversation(c: Conversation, by: 1 | -1): void {
    const date = c.createdAt.slice(0, 10);
    let d = this.conversations.get(date);
    if (d === undefined) {
      if (by < 0) return;
      const counts = new Array<number>(N_CONV).fill(0);
      d = { counts, firstResponse: new SortedBag(), resolution: new SortedBag(), total: 0 };
      this.conversations.set(date, d);
    }
    d.total += by;
    const s = STATUS_AT.get(c.status);
    const ch = CHANNEL_AT.get(c.channel);
    if (s !== undefined) d.counts[s] += by;
    if (ch !== undefined) d.counts[ch] += by;
    const fr = firstResponseMs(c);
    const res = resolutionMs(c);
    // A time that is not one (a damaged record) is left out of the medians rather than sorting as NaN.
    if (Number.isFinite(fr) || Number.isFinite(res)) {
      const m = this.monthOf(date);
      const count = (bag: SortedBag<number>, v: number) => { if (by > 0) bag.add(v); else bag.delete(v); };
      if (Number.isFinite(fr)) { count(d.firstResponse, fr); count(m.firstResponse, fr); }
      if (Number.isFinite(res)) { count(d.resolution, res); count(m.resolution, res); }
      if (m.firstResponse.size === 0 && m.resolution.size === 0) this.months.delete(date.slice(0, 7));
    }
    if (d.total === 0) this.conversations.delete(date);
  }

  /** The durations of the month of `date`, made when missing. */
  private monthOf(date: string): Durations {
    const key = date.slice(0, 7);
    let m = this.months.get(key);
    if (m === undefined) this.months.set(key, (m = { firstResponse: new SortedBag(), resolution: new SortedBag() }));
    return m;
  }

  /** Adds (`by` 1) or removes (-1) an issue's share of its day. */
  private countIssue(i: Issue, by: 1 | -1): void {
    const date = i.createdAt.slice(0, 10);
    let d = this.issues.get(date);
    if (d === undefined) {
      if (by < 0) return;
      this.issues.set(date, (d = { counts: new Array<number>(N_ISSUE).fill(0), total: 0 }));
    }
    d.total += by;
    const s = STATE_AT.get(i.state);
    const p = PRIORITY_AT.get(i.priority);
    if (s !== undefined) d.counts[s] += by;
    if (p !== undefined) d.counts[p] += by;
    if (d.total === 0) this.issues.delete(date);
  }

  /**
   * The conversations' days in the snapshot block (docs/storage.md#snapshots): `dates`, `totals`, `counts` (statuses
   * then channels, per day), `frN`/`fr` and `resN`/`res` (each day's sorted durations in ms, one day after the other).
   */
  private persistConversations(): Persist {
    return {
      name: 'conversation.analyticsByDay/1',
      capture: () => {
        const days = [...this.conversations].map(([date, d]) => ({
          date, total: d.total, counts: d.counts.slice(), fr: d.firstResponse.values(), res: d.resolution.values(),
        }));
        return () => ({
          dates: days.map((d) => d.date), totals: Uint32Array.from(days, (d) => d.total),
          counts: Uint32Array.from(days.flatMap((d) => d.counts)),
          frN: Uint32Array.from(days, (d) => d.fr.length), fr: Float64Array.from(days.flatMap((d) => d.fr)),
          resN: Uint32Array.from(days, (d) => d.res.length), res: Float64Array.from(days.flatMap((d) => d.res)),
        });
      },
      restore: (cols: Columns, ctx: RestoreContext) => {
        const dates = ctx.strings(cols.dates);
        const totals = ctx.numbers(cols.totals);
        const counts = ctx.numbers(cols.counts);
        const frN = ctx.numbers(cols.frN);
        const resN = ctx.numbers(cols.resN);
        const fr = ctx.float64(cols.fr);
        const res = ctx.float64(cols.res);
        const n = dates.length;
        if (totals.length !== n || counts.length !== n * N_CONV || frN.length !== n || resN.length !== n) {
          throw new Error('columns differ in length');
        }
        const m = new Map<string, ConversationDay>();
        let f = 0, r = 0;
        for (let i = 0; i < n; i++) {
          const firstResponse = SortedBag.fromSorted(fr.subarray(f, (f += frN[i])));
          const resolution = SortedBag.fromSorted(res.subarray(r, (r += resN[i])));
          if (f > fr.length || r > res.length) throw new Error('durations missing');
          const dayCounts = Array.from({ length: N_CONV }, (_, k) => counts[i * N_CONV + k]);
          m.set(dates[i], { counts: dayCounts, firstResponse, resolution, total: totals[i] });
        }
        if (f !== fr.length || r !== res.length) throw new Error('durations left over');
        // The months, from the days: one sort of each month's values.
        const byMonth = new Map<string, { fr: number[]; res: number[] }>();
        for (const [date, d] of m) {
          let x = byMonth.get(date.slice(0, 7));
          if (x === undefined) byMonth.set(date.slice(0, 7), (x = { fr: [], res: [] }));
          for (const v of d.firstResponse.values()) x.fr.push(v);
          for (const v of d.resolution.values()) x.res.push(v);
        }
        const months = new Map<string, Durations>();
        const up = (a: number, b: number) => a - b;
        for (const [k, x] of byMonth) {
          if (x.fr.length + x.res.length === 0) continue;
          const firstResponse = SortedBag.fromSorted(x.fr.sort(up));
          months.set(k, { firstResponse, resolution: SortedBag.fromSorted(x.res.sort(up)) });
        }
        return () => { this.conversations = m; this.months = months; this.changed(); };
      },
    };
  }

  /** The issues' days in the snapshot block: `dates`, `totals`, `counts` (states then priorities, per day). */
  private persistIssues(): Persist {
    return {
      name: 'issue.analyticsByDay/1',
      capture: () => {
        const days = [...this.issues].map(([date, d]) => ({ date, total: d.total, counts: d.counts.slice() }));
        return () => ({
          dates: days.map((d) => d.date), totals: Uint32Array.from(days, (d) => d.total),
          counts: Uint32Array.from(days.flatMap((d) => d.counts)),
        });
      },
      restore: (cols: Columns, ctx: RestoreContext) => {
        const dates = ctx.strings(cols.dates);
        const totals = ctx.numbers(cols.totals);
        const counts = ctx.numbers(cols.counts);
        if (totals.length !== dates.length || counts.length !== dates.length * N_ISSUE) {
          throw new Error('columns differ in length');
        }
        const m = new Map<string, IssueDay>();
        for (let i = 0; i < dates.length; i++) {
          const dayCounts = Array.from({ length: N_ISSUE }, (_, k) => counts[i * N_ISSUE + k]);
          m.set(dates[i], { counts: dayCounts, total: totals[i] });
        }
        return () => { this.issues = m; this.changed(); };
      },
    };
  }
}
