/**
 * The changes of a webhook endpoint as the API and the settings area both make them (docs/api.md#webhooks,
 * docs/web.md#webhooks-page): create one with its secret, enable or disable it, delete it with its deliveries. Each
 * writes into a transaction the caller commits; the URL is checked by the caller first (./urls.ts `checkEndpointUrl`,
 * which resolves names).
 */
import { iso } from '../../core/clock.js';
import { newId } from '../../core/ids.js';
import { ConflictError } from '../../core/errors.js';
import type { SecretBox } from '../../core/secrets.js';
import type { Tx } from '../../store/db.js';
import type { Workspace } from '../../domain/workspace.js';
import { MAX_ENDPOINTS, deliveryRecJson, endpointView, generateSecret, secretContext, type DeliveryRec,
  type Subscribable, type WebhookEndpointRec, type WebhookRecords } from './model.js';
import { owedRec } from './state.js';

/** `events` with repeated items dropped (the first of each kept, in order). */
export const distinct = (events: Subscribable[]): Subscribable[] => [...new Set(events)];

/** The reason a pending delivery fails with when its endpoint is disabled. */
export const DISABLED_ERROR = 'the endpoint was disabled before this delivery succeeded';

/**
 * Puts `next` (an endpoint disabled now) and fails every pending delivery of it in the same transaction: a disabled
 * endpoint gets nothing more (docs/api.md#webhook-disabling).
 */
export function putDisabled(ws: Workspace, tx: Tx<WebhookRecords>, next: WebhookEndpointRec): void {
  tx.put('webhook_endpoint', next.id, next);
  for (const id of ws.webhooks.pendingOf(next.id)) {
    const d = ws.get('webhook_delivery', id);
    if (d !== undefined && d.status === 'pending') tx.put('webhook_delivery', id,
      { ...d, status: 'failed', nextAttemptAt: null, error: DISABLED_ERROR });
  }
  // The deliveries owed and not yet recorded get their record, failed, and are owed no more once this transaction is on
  // disk (should it fail, they stay owed as they were).
  const owed = ws.webhooks.owedOf(next.id);
  if (owed !== undefined) {
    for (const o of [...owed.values()]) {
      const d: DeliveryRec = { ...owedRec(o), status: 'failed', nextAttemptAt: null, error: DISABLED_ERROR };
      tx.put('webhook_delivery', o.id, d, deliveryRecJson(d));
      ws.webhooks.recordOnCommit(tx, o);
    }
  }
}

/**
 * Puts a new endpoint of `ws` for `url` (already checked); returns it with its secret in clear, shown once, stored
 * sealed. @param now ms. @throws ConflictError at {@link MAX_ENDPOINTS} endpoints (docs/api.md#webhook-limits).
 */
export function createEndpoint(ws: Workspace, tx: Tx<WebhookRecords>, secrets: SecretBox, now: number,
  input: { url: string; events: Subscribable[]; description?: string; enabled?: boolean }): {
    rec: WebhookEndpointRec; secret: string } {
  if (ws.webhooks.size >= MAX_ENDPOINTS) {
    throw new ConflictError(
      `this workspace already has ${MAX_ENDPOINTS} webhook endpoints, the most allowed; delete one before creating `
        + `another`);
  }
  const at = iso(now);
  const id = newId(now);
  const secret = generateSecret();
  const rec: WebhookEndpointRec = {
    id, url: input.url, events: distinct(input.events), description: input.description ?? '', enabled: input.enabled ??
      true, disabledReason: null,
    createdAt: at, updatedAt: at, secret: secrets.seal(secret, secretContext(ws.id, id)),
  };
  tx.put('webhook_endpoint', id, rec);
  tx.put('webhook_cursor', id, { id, from: ws.webhooks.cursorAtNewest() });
  return { rec, secret };
}

/**
 * `e` enabled or disabled by a person: enabling clears what the server's disabling left (reason, failure counts);
 * disabling fails its pending deliveries. Puts nothing and returns `e` when it is already so. @param now ms.
 */
export function setEnabled(ws: Workspace, tx: Tx<WebhookRecords>, e: WebhookEndpointRec, enabled: boolean,
  now: number): WebhookEndpointRec {
  const next = enabledAs(e, enabled);
  if (JSON.stringify(endpointView(next)) === JSON.stringify(endpointView(e))) return e;
  next.updatedAt = iso(now);
  if (!next.enabled) putDisabled(ws, tx, next);
  else putEnabled(ws, tx, e, next);
  return next;
}

/**
 * Puts `next`, the endpoint `prev` changed and still (or again) enabled. One enabled again is owed the events from now
 * on, none of those made while it was disabled: its cursor tells a restart where to start
 * (docs/decisions.md#deliveries-owed-by-the-event-log).
 */
export function putEnabled(ws: Workspace, tx: Tx<WebhookRecords>, prev: WebhookEndpointRec,
  next: WebhookEndpointRec): void {
  tx.put('webhook_endpoint', next.id, next);
  if (!next.enabled) return;
  if (!prev.enabled) tx.put('webhook_cursor', next.id, { id: next.id, from: ws.webhooks.cursorAtNewest() });
  // New types subscribed: a restart must not owe it the older events of those types, so its cursor moves up to what it
  // is still owed (or the newest event).
  else if (next.events.some((t) => !prev.events.includes(t))) tx.put('webhook_cursor', next.id,
    { id: next.id, from: ws.webhooks.cursorNow(next.id) });
}


/** A copy of `e` enabled or disabled (nothing put, `updatedAt` unchanged). */
export function enabledAs(e: WebhookEndpointRec, enabled: boolean): WebhookEndpointRec {
  const next: WebhookEndpointRec = { ...e };
  if (enabled && !e.enabled) {
    next.enabled = true;
    next.disabledReason = null;
    delete next.failingSince;
    delete next.failedInARow;
  }
  if (!enabled && e.enabled) { next.enabled = false; next.disabledReason = null; }
  return next;
}

/** Deletes `e` and every delivery of it. */
export function deleteEndpoint(ws: Workspace, tx: Tx<WebhookRecords>, e: WebhookEndpointRec): void {
  const deliveries = ws.webhooks.deliveriesOf(e.id);
  const ids: string[] = [];
  for (const at of deliveries.asc()) ids.push(deliveries.idAt(at));
  for (const id of ids) tx.del('webhook_delivery', id);
  for (const id of ws.webhooks.batchesOf(e.id)) tx.del('webhook_delivered', id);
  tx.del('webhook_cursor', e.id);
  tx.del('webhook_endpoint', e.id);
  ws.webhooks.forgetOnCommit(tx, e.id);
}
