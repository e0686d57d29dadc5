/**
 * What an attempt's outcome does to its delivery and endpoint: when the next attempt is due
 * (docs/api.md#webhook-retries), and the endpoint's failure record, which disables it when a rule says so
 * (docs/api.md#webhook-disabling).
 */
import { iso } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import type { Workspace } from '../../domain/workspace.js';
import { DISABLE_AFTER_FAILED_DELIVERIES, DISABLE_AFTER_MS, type DeliveryRec,
  type WebhookEndpointRec } from './model.js';
import { putDisabled } from './endpoints.js';

/** The longest wait a `Retry-After` may ask for: 24 h (docs/api.md#webhook-retries). */
export const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;

/**
 * When attempt `attempt + 1` is due after `attempt` failed at `now` (ms): schedule step `attempt` stretched by `random`
 * × 10 %, or the later instant `retryAfter` capped at 24 h; null when the schedule ended (docs/api.md#webhook-retries).
 */
export function nextAttemptTime(attempt: number, schedule: readonly number[], now: number, random: number,
  retryAfter?: number): number | null {
  if (attempt > schedule.length) return null;
  let at = now + Math.round(schedule[attempt - 1] * (1 + 0.1 * random));
  if (retryAfter !== undefined && retryAfter > at) at = Math.min(retryAfter, now + MAX_RETRY_AFTER_MS);
  return at;
}

/**
 * Adds to `tx` endpoint `e`'s failure record after `d`'s attempt at `now` (ms; `gone`: it answered 410), and disables
 * it when a rule says so (docs/api.md#webhook-disabling), logging that on `logger`.
 */
export function recordOutcome(ws: Workspace, tx: ReturnType<Workspace['db']['begin']>, e: WebhookEndpointRec,
  d: DeliveryRec, gone: boolean, now: number, logger: Logger): void {
  if (d.status === 'succeeded') {
    if (e.failingSince === undefined && !e.failedInARow) return;
    const { failingSince: _a, failedInARow: _b, ...rest } = e;
    tx.put('webhook_endpoint', e.id, rest);
    return;
  }
  const failingSince = e.failingSince ?? iso(now);
  const failedInARow = (e.failedInARow ?? 0) + (d.status === 'failed' ? 1 : 0);
  let reason: string | null = null;
  if (gone) reason = `the endpoint answered HTTP 410 Gone on ${iso(now)}`;
  else if (failedInARow >= DISABLE_AFTER_FAILED_DELIVERIES) reason =
    `${failedInARow} deliveries in a row failed (the last on ${iso(now)})`;
  else if (now - Date.parse(failingSince) >= DISABLE_AFTER_MS) reason =
    `every delivery attempt failed for 5 days (since ${failingSince})`;
  const next: WebhookEndpointRec = { ...e, failingSince, failedInARow };
  if (reason === null || !e.enabled) { tx.put('webhook_endpoint', e.id, next); return; }
  // This delivery keeps its own outcome; the endpoint's other pending deliveries fail with it.
  if (d.status === 'pending') tx.put('webhook_delivery', d.id, { ...d, status: 'failed', nextAttemptAt: null });
  putDisabled(ws, tx, { ...next, enabled: false, disabledReason: reason, updatedAt: iso(now) });
  logger.warn('webhook endpoint disabled', { workspaceId: ws.id, endpointId: e.id, reason });
}
