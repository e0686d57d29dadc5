/**
 * Registers the webhooks area on a workspace's log (docs/storage.md#indexes): its state (./state.ts), the hook that
 * makes new events owe deliveries, and the retention of deliveries (docs/api.md#webhook-deliveries).
 */
import { STATELESS, type Db, type Tx } from '../../store/db.js';
import type { EventRecords, EventState } from '../events/events.js';
import { DELIVERY_RETENTION_MS, subscribes, type DeliveryRec, type WebhookEndpointRec,
  type WebhookRecords } from './model.js';
import { WebhookState } from './state.js';

/**
 * Registers the webhooks area on a workspace's log: its indexes, the derive hook that makes every new event owe a
 * delivery to each subscribed enabled endpoint once it is on disk (none for a bulk import, which makes no events), and
 * retention: settled deliveries are kept 30 days (docs/api.md#webhook-deliveries). `now` is the workspace's clock (ms).
 */
export function attachWebhooks(db: Db<WebhookRecords & EventRecords>, events: EventState, now: () =>
  number): WebhookState {
  const state = new WebhookState(db, events);
  // The enabled endpoints, in creation order, as of the last endpoint change (every event walks them; a change of any
  // endpoint, undone ones included, makes the list again on next use).
  let enabled: WebhookEndpointRec[] | null = null;
  db.on('webhook_endpoint', () => { enabled = null; }, STATELESS);
  db.derive('event', (tx: Tx<WebhookRecords & EventRecords>, eventId, prev, e) => {
    if (prev !== undefined || tx.bulk) return;
    enabled ??= [...db.table('webhook_endpoint').values()].filter((x) => x.enabled);
    for (const endpoint of enabled) if (subscribes(endpoint, e.type)) state.made(tx, endpoint.id, eventId, e.type,
      e.createdAt);
  });
  db.retain('webhook_delivery', (d) => d.status === 'pending' ||
    Date.parse(d.createdAt) >= now() - DELIVERY_RETENTION_MS, (json) => {
    // Held as bytes (below), a delivery's status and time are read from its text: a compaction parses none.
    const status = flatString(json, 'status');
    const createdAt = flatString(json, 'createdAt');
    if (status === undefined || createdAt === undefined) return undefined;
    return status === 'pending' || Date.parse(createdAt) >= now() - DELIVERY_RETENTION_MS;
  });
  // A batch of first-attempt successes is kept while its newest delivery is (its time read from its text: the batch's
  // own `createdAt` is its only member of that name).
  db.retain('webhook_delivered', (b) => Date.parse(b.createdAt) >= now() - DELIVERY_RETENTION_MS, (json) => {
    const createdAt = flatString(json, 'createdAt');
    return createdAt === undefined ? undefined : Date.parse(createdAt) >= now() - DELIVERY_RETENTION_MS;
  });
  // A settled delivery changes no more: held as bytes once on disk (docs/storage.md#memory). A pending one, which the
  // dispatcher reads and updates, stays an object. A batch never changes.
  db.holdAsBytes('webhook_delivery', (d) => d.status !== 'pending');
  db.holdAsBytes('webhook_delivered');
  return state;
}

/**
 * The string member `name` of `json`, the JSON text of an object with no object inside (a delivery record, a batch):
 * `"name":"` cannot occur inside a JSON string. Undefined when absent, not a string, or holding an escape.
 */
function flatString(json: string, name: string): string | undefined {
  const key = `"${name}":"`;
  const at = json.indexOf(key);
  if (at < 0) return undefined;
  const from = at + key.length;
  const end = json.indexOf('"', from);
  if (end < 0) return undefined;
  const value = json.slice(from, end);
  return value.includes('\\') ? undefined : value;
}

/** Whether `d` is still shown at `now` (settled ones older than 30 days are hidden before compaction drops them). */
export const deliveryKept = (d: DeliveryRec, now: number): boolean => d.status === 'pending' ||
  Date.parse(d.createdAt) >= now - DELIVERY_RETENTION_MS;
