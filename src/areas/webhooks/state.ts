/**
 * What the webhooks area keeps of a workspace's log (docs/storage.md#indexes): its endpoints in
 * creation order, each endpoint's deliveries, the pending deliveries by due time — and the hook
 * that makes the deliveries: a `webhook_delivery` record (pending, due at the event's time) for
 * every enabled endpoint subscribed to the event's type, put in the SAME transaction as the
 * event (docs/api.md#webhook-deliveries). So a 2xx answer means its deliveries are on disk, a
 * crash keeps the event and its deliveries or neither, and a restart finds them pending.
 *
 * A delivery is only sent once the transaction that made it is durable: until then it is
 * "unconfirmed" (a failed write undoes it, and nothing may have been sent for it).
 */
import { newId } from '../../core/ids.js';
import type { Db, Tx } from '../../store/db.js';
import { SortedIndex } from '../../store/sorted.js';
import { orderBy, attachIndexes, persistSortedMap } from '../../store/indexes.js';
import { STATELESS, type Columns, type Persist } from '../../store/db.js';
import type { EventRecords } from '../events/events.js';
import { DELIVERY_RETENTION_MS, deliveryRecJson, subscribes, type DeliveryRec, type WebhookEndpointRec, type WebhookRecords } from './model.js';

/** The webhooks area's indexes of one workspace, and which deliveries may be sent yet. */
export class WebhookState {
  /** Endpoints by (createdAt, id). */
  readonly endpoints: SortedIndex;
  /** Each endpoint's deliveries by (createdAt, id). */
  private readonly byEndpoint = new Map<string, SortedIndex>();
  /** Each endpoint's pending deliveries by (nextAttemptAt, id): what the dispatcher sends next. */
  private readonly dueByEndpoint = new Map<string, SortedIndex>();
  /**
   * Both maps saved in the snapshot block (docs/storage.md#snapshots). `unconfirmed` is not: what
   * a block holds is on disk once the block is.
   */
  private persist(): Persist {
    const by = persistSortedMap('webhook_delivery.byEndpoint/1', 'webhook_delivery', () => this.byEndpoint, () => new SortedIndex());
    const due = persistSortedMap('webhook_delivery.due/1', 'webhook_delivery', () => this.dueByEndpoint, () => new SortedIndex());
    const cols = (prefix: string, c: Columns) => Object.fromEntries(Object.entries(c).map(([k, v]) => [`${prefix}.${k}`, v]));
    const part = (prefix: string, c: Columns) => Object.fromEntries(Object.entries(c).filter(([k]) => k.startsWith(`${prefix}.`)).map(([k, v]) => [k.slice(prefix.length + 1), v]));
    return {
      name: 'webhook_delivery.state/1',
      capture: () => {
        const a = by.capture();
        const b = due.capture();
        return (ctx) => ({ ...cols('byEndpoint', a(ctx)), ...cols('due', b(ctx)) });
      },
      restore: (c, ctx) => {
        const a = by.restore(part('byEndpoint', c), ctx);
        const b = due.restore(part('due', c), ctx);
        return () => { a(); b(); };
      },
    };
  }
  /** Deliveries whose transaction is not on disk yet (not to be sent). */
  private readonly unconfirmed = new Set<string>();
  /** The deliveries each open transaction made. */
  private readonly madeBy = new WeakMap<object, string[]>();
  /**
   * Called when new deliveries became durable (their event's transaction is on disk): the
   * dispatcher's wake-up (src/areas/webhooks/dispatcher.ts sets it).
   */
  onReady: (() => void) | null = null;

  constructor(db: Db<WebhookRecords>) {
    this.endpoints = attachIndexes(db, 'webhook_endpoint', { order: orderBy((e) => e.createdAt) }).order;
    db.on('webhook_delivery', (id, prev, next) => {
      if (prev !== undefined && (next === undefined || next.createdAt !== prev.createdAt)) this.deliveriesOf(prev.endpointId).remove(prev.createdAt, id);
      if (next !== undefined && (prev === undefined || next.createdAt !== prev.createdAt)) this.deliveriesOf(next.endpointId).add(next.createdAt, id);
      const before = prev?.status === 'pending' ? prev.nextAttemptAt : null;
      const after = next?.status === 'pending' ? next.nextAttemptAt : null;
      if (before !== after) {
        if (before !== null) this.dueByEndpoint.get(prev!.endpointId)?.remove(before, id);
        if (after !== null) {
          let idx = this.dueByEndpoint.get(next!.endpointId);
          if (idx === undefined) this.dueByEndpoint.set(next!.endpointId, (idx = new SortedIndex()));
          idx.add(after, id);
        }
      }
      if (next === undefined) this.unconfirmed.delete(id);
    }, this.persist());
    db.on('webhook_endpoint', (id, _prev, next) => {
      if (next === undefined) { this.byEndpoint.delete(id); this.dueByEndpoint.delete(id); }
    }, STATELESS);
    db.afterCommit((tx) => {
      const made = this.madeBy.get(tx);
      if (made === undefined) return;
      this.madeBy.delete(tx);
      for (const id of made) this.unconfirmed.delete(id);
      this.onReady?.();
    });
  }

  /** The deliveries of endpoint `id` by (createdAt, id); an empty index when it has none. */
  deliveriesOf(id: string): SortedIndex {
    let idx = this.byEndpoint.get(id);
    if (idx === undefined) this.byEndpoint.set(id, (idx = new SortedIndex()));
    return idx;
  }

  /** The ids of endpoint `id`'s pending deliveries, soonest due first (a copy). */
  pendingOf(id: string): string[] {
    const idx = this.dueByEndpoint.get(id);
    if (idx === undefined) return [];
    const out: string[] = [];
    for (const at of idx.asc()) out.push(idx.idAt(at));
    return out;
  }

  /** Every endpoint with pending deliveries, and those deliveries by (nextAttemptAt, id) (live views: do not change them). */
  dueByEndpointId(): ReadonlyMap<string, SortedIndex> { return this.dueByEndpoint; }

  /** Whether delivery `id` was made by a transaction that is not durable yet. */
  isUnconfirmed(id: string): boolean { return this.unconfirmed.has(id); }

  /** @internal the derive hook's bookkeeping: `id` was put by `tx`. */
  made(tx: object, id: string): void {
    this.unconfirmed.add(id);
    const list = this.madeBy.get(tx);
    if (list === undefined) this.madeBy.set(tx, [id]); else list.push(id);
  }

  /** The number of endpoints (tests that check a request changed no state). */
  get size(): number { return this.endpoints.size; }
}

/**
 * Registers the webhooks area on a workspace's log: its indexes, the derive hook that puts a
 * pending delivery for each subscribed enabled endpoint in the transaction of every new event
 * (none for a bulk import, which makes no events), and retention: settled deliveries are kept
 * 30 days (docs/api.md#webhook-deliveries). `now` is the workspace's clock (ms).
 */
export function attachWebhooks(db: Db<WebhookRecords & EventRecords>, now: () => number): WebhookState {
  const state = new WebhookState(db);
  // The enabled endpoints, in creation order, as of the last endpoint change (every event walks
  // them; a change of any endpoint, undone ones included, makes the list again on next use).
  let enabled: WebhookEndpointRec[] | null = null;
  db.on('webhook_endpoint', () => { enabled = null; }, STATELESS);
  db.derive('event', (tx: Tx<WebhookRecords & EventRecords>, eventId, prev, e) => {
    if (prev !== undefined || tx.bulk) return;
    enabled ??= [...db.table('webhook_endpoint').values()].filter((x) => x.enabled);
    if (enabled.length === 0) return;
    let at = NaN;
    for (const endpoint of enabled) {
      if (!subscribes(endpoint, e.type)) continue;
      if (Number.isNaN(at)) at = Date.parse(e.createdAt);
      const d: DeliveryRec = {
        id: newId(at), endpointId: endpoint.id, eventId, eventType: e.type, attempt: 0, status: 'pending',
        responseStatus: null, error: null, durationMs: null, createdAt: e.createdAt, nextAttemptAt: e.createdAt,
      };
      tx.put('webhook_delivery', d.id, d, deliveryRecJson(d));
      state.made(tx, d.id);
    }
  });
  db.retain('webhook_delivery', (d) => d.status === 'pending' || Date.parse(d.createdAt) >= now() - DELIVERY_RETENTION_MS, (json) => {
    // Held as bytes (below), a delivery's status and time are read from its text: a compaction parses none.
    const status = flatString(json, 'status');
    const createdAt = flatString(json, 'createdAt');
    if (status === undefined || createdAt === undefined) return undefined;
    return status === 'pending' || Date.parse(createdAt) >= now() - DELIVERY_RETENTION_MS;
  });
  // A settled delivery changes no more: held as bytes once on disk (docs/storage.md#memory). A
  // pending one, which the dispatcher reads and updates, stays an object.
  db.holdAsBytes('webhook_delivery', (d) => d.status !== 'pending');
  return state;
}

/**
 * The string member `name` of `json`, the JSON text of a flat object (no object or array inside,
 * as a delivery record): found as `"name":"` — a sequence no JSON string can hold, its quotes
 * being escaped there, so in a flat object it is the member itself. Undefined when absent, not a
 * string, or holding an escape.
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

/** Whether `d` is still shown at `now` (settled deliveries older than 30 days are hidden before compaction drops them). */
export const deliveryKept = (d: DeliveryRec, now: number): boolean => d.status === 'pending' || Date.parse(d.createdAt) >= now - DELIVERY_RETENTION_MS;
