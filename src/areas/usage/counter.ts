/**
 * Usage counting (docs/api.md#usage): every authenticated request and every live API check of a workspace counts
 * towards the current UTC month. Counts live in memory and are written to the workspace's log in one batch every
 * `flushMs` (5 s), never once per request — a crash loses at most the last batch. The record `usage/<YYYY-MM>` holds a
 * month.
 */
import type { Clock } from '../../core/clock.js';
import type { Db } from '../../store/db.js';
import type { ServedWorkspace, Store } from '../../store/store.js';
import type { Logger } from '../../core/logger.js';

export interface UsageRec { month: string; apiRequests: number; liveApiChecks: number }
/** The record types of usage counting. */
export interface UsageRecords { usage: UsageRec }

/** `YYYY-MM` of `ms` in UTC. */
export const monthOf = (ms: number): string => new Date(ms).toISOString().slice(0, 7);

/** First instant of the month `m` and of the next one (ms). */
export function monthBounds(m: string): { start: number; end: number } {
  const [y, mo] = m.split('-').map(Number);
  return { start: Date.UTC(y, mo - 1, 1), end: Date.UTC(y, mo, 1) };
}

export class UsageCounter {
  /** workspaceId → month → counts not yet written. */
  private pending = new Map<string, Map<string, { apiRequests: number; liveApiChecks: number }>>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;

  constructor(private readonly store: Store<ServedWorkspace & { readonly db: Db<UsageRecords> }>,
    private readonly clock: Clock, private readonly logger: Logger, readonly flushMs = 5000) {}

  /** Starts the periodic flush (unref'd: it never keeps the process alive). */
  start(): void {
    this.timer = setInterval(() => { void this.flush(); }, this.flushMs);
    this.timer.unref();
  }

  private add(workspaceId: string, month: string, apiRequests: number, liveApiChecks: number): void {
    let byMonth = this.pending.get(workspaceId);
    if (!byMonth) { byMonth = new Map(); this.pending.set(workspaceId, byMonth); }
    let c = byMonth.get(month);
    if (!c) { c = { apiRequests: 0, liveApiChecks: 0 }; byMonth.set(month, c); }
    c.apiRequests += apiRequests;
    c.liveApiChecks += liveApiChecks;
  }

  private month = '';
  private monthEnds = 0;

  /** The current month, recomputed only when the clock passes the end of the cached one. */
  private currentMonth(): string {
    const now = this.clock.now();
    if (now >= this.monthEnds || now < this.monthEnds - 32 * 86_400_000) {
      this.month = monthOf(now);
      this.monthEnds = monthBounds(this.month).end;
    }
    return this.month;
  }

  private bump(workspaceId: string, field: 'apiRequests' | 'liveApiChecks'): void {
    this.add(workspaceId, this.currentMonth(), field === 'apiRequests' ? 1 : 0, field === 'liveApiChecks' ? 1 : 0);
  }

  /** Counts one authenticated API request. */
  countRequest(workspaceId: string): void { this.bump(workspaceId, 'apiRequests'); }
  /** Counts one live API check. */
  countLiveCheck(workspaceId: string): void { this.bump(workspaceId, 'liveApiChecks'); }

  /** The current month's usage of a workspace: written counts plus those not yet written. */
  current(workspaceId: string): { periodStart: string; periodEnd: string; apiRequests: number; liveApiChecks: number } {
    const month = monthOf(this.clock.now());
    const { start, end } = monthBounds(month);
    const stored = this.store.workspaces.get(workspaceId)?.db.get('usage', month);
    const extra = this.pending.get(workspaceId)?.get(month);
    return {
      periodStart: new Date(start).toISOString(),
      periodEnd: new Date(end).toISOString(),
      apiRequests: (stored?.apiRequests ?? 0) + (extra?.apiRequests ?? 0),
      liveApiChecks: (stored?.liveApiChecks ?? 0) + (extra?.liveApiChecks ?? 0),
    };
  }

  /** Writes every pending count (one transaction per workspace). Safe to call at any time. */
  flush(): Promise<void> {
    // A flush already writing took its batch before the counts that arrived since: write those after it.
    if (this.flushing) return this.flushing.then(() => this.flush());
    this.flushing = this.doFlush().finally(() => { this.flushing = null; });
    return this.flushing;
  }

  private async doFlush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    const writes: Promise<void>[] = [];
    for (const [workspaceId, byMonth] of batch) {
      // A workspace moving to another cell counts there from now on; one that moved away, or unknown, is skipped.
      const ws = this.store.workspaces.get(workspaceId);
      if (!ws || this.store.moving.has(workspaceId)) continue;
      const tx = ws.db.begin();
      for (const [month, c] of byMonth) {
        const prev = ws.db.get('usage', month);
        tx.put('usage', month, { month, apiRequests: (prev?.apiRequests ?? 0) + c.apiRequests, liveApiChecks: (
          prev?.liveApiChecks ?? 0) + c.liveApiChecks });
      }
      writes.push(ws.db.commit(tx).catch((e) => {
        // Put the counts back so the next flush retries them.
        for (const [month, c] of byMonth) this.add(workspaceId, month, c.apiRequests, c.liveApiChecks);
        this.logger.warn('could not write usage counts', { workspaceId, error: (e as Error).message });
      }));
    }
    await Promise.all(writes);
  }

  /** Stops the timer and writes what is pending (graceful shutdown). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }
}
