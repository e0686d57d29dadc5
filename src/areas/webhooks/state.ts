/**
 * What the webhooks area keeps of a workspace's log (docs/storage.md#indexes): endpoints in creation order, each
 * endpoint's deliveries, retries by due time, and the deliveries *owed* — events on disk an endpoint is to receive that
 * have no record yet (docs/decisions.md#deliveries-owed-by-the-event-log). A record is written only when an attempt
 * ends; a per-endpoint cursor bounds what a restart walks ({@link WebhookState.resume}). An owed delivery and its
 * record share an id ({@link deliveryIdOf}).
 */
import type { Columns, Db, Persist, Tx } from '../../store/db.js';
import { SortedIndex, compositeKey } from '../../store/memory/sorted.js';
import { orderBy, attachIndexes, persistSortedMap } from '../../store/indexes.js';
import { eventHead, type EventRecords, type EventState, type EventType } from '../events/events.js';
import { deliveryIdOf } from './deliveryId.js';
import { DeliveredBatches } from './batches.js';
import { subscribes, type DeliveredRec, type DeliveryRec, type WebhookCursorRec,
  type WebhookRecords } from './model.js';

export { deliveryIdOf } from './deliveryId.js';

/** The cursor bound below every event. */
const EPOCH = new Date(0).toISOString();

/** A delivery owed and not yet recorded: its event, and whether its first attempt is out. */
export interface Owed {
  readonly id: string; readonly endpointId: string; readonly eventId: string; readonly eventType: EventType;
  readonly createdAt: string;
  /** Its attempt is out. */
  running: boolean;
  /** A disabling not yet on disk put its record: owed until that commits, its record looked up first. */
  closing: boolean;
}

/** The webhooks area's indexes of one workspace, and the deliveries owed. */
export class WebhookState {
  /** Endpoints by (createdAt, id). */
  readonly endpoints: SortedIndex;
  /** Each endpoint's deliveries, recorded and owed, by (createdAt, id). */
  private readonly byEndpoint = new Map<string, SortedIndex>();
  /** Each endpoint's pending delivery records by (nextAttemptAt, id): the retries. */
  private readonly dueByEndpoint = new Map<string, SortedIndex>();
  /** Each endpoint's owed deliveries by id, in the order their events reached the disk. */
  private readonly owed = new Map<string, Map<string, Owed>>();
  /** Each endpoint's owed deliveries not being attempted, first owed first (`items` from `head`; stale skipped). */
  private readonly waiting = new Map<string, { items: Owed[]; head: number }>();
  /** Per endpoint, the owed deliveries whose event is older than one owed before it (see {@link owedFrom}). */
  private readonly early = new Map<string, Set<Owed>>();
  /** Per endpoint, the order key (createdAt, id) of the event last owed (updated in place). */
  private readonly lastOwed = new Map<string, { createdAt: string; eventId: string }>();
  /** Transactions not on disk yet whose events owe deliveries: endpoint id, event id, type, createdAt per delivery. */
  private readonly madeBy = new Map<Tx<WebhookRecords>, string[]>();
  /** Owed deliveries a transaction not yet on disk put the record of (a disabling): owed no more once it is. */
  private readonly recordedBy = new WeakMap<object, Owed[]>();
  /** Endpoints a transaction not yet on disk deletes: their owed state goes once it is. */
  private readonly deletedBy = new WeakMap<object, string[]>();
  /** Endpoints being deleted by a transaction not yet on disk (their events are still owed until then). */
  private readonly deleting = new Set<string>();
  /** The deliveries stored in batches (docs/decisions.md#first-attempt-successes-are-stored-in-batches). */
  private readonly batches: DeliveredBatches;
  /** Enabled endpoints with no cursor at start-up (a log of an earlier build): see {@link cursorsToWrite}. */
  private needCursor: string[] = [];
  /** Both maps in the snapshot block (docs/storage.md#snapshots); owed deliveries are not, {@link resume} owes them. */
  private persist(): Persist {
    const by = persistSortedMap('webhook_delivery.byEndpoint/1', 'webhook_delivery', () => this.byEndpoint, () =>
      new SortedIndex());
    const due = persistSortedMap('webhook_delivery.due/1', 'webhook_delivery', () => this.dueByEndpoint, () =>
      new SortedIndex());
    const cols = (prefix: string, c: Columns) =>
      Object.fromEntries(Object.entries(c).map(([k, v]) => [`${prefix}.${k}`, v]));
    const part = (prefix: string, c: Columns) => Object.fromEntries(Object.entries(c)
      .filter(([k]) => k.startsWith(`${prefix}.`)).map(([k, v]) => [k.slice(prefix.length + 1), v]));
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
  /** Called when deliveries became owed (their event's transaction is on disk): the dispatcher's wake-up. */
  onReady: (() => void) | null = null;

  constructor(private readonly db: Db<WebhookRecords & EventRecords>, private readonly events: EventState) {
    this.endpoints = attachIndexes(db, 'webhook_endpoint', { order: orderBy((e) => e.createdAt) }).order;
    this.batches = new DeliveredBatches(db, {
      isOwed: (endpointId, id) => this.owed.get(endpointId)?.has(id) === true,
      deliveriesOf: (endpointId) => this.deliveriesOf(endpointId),
      indexOf: (endpointId) => this.byEndpoint.get(endpointId),
    });
    db.on('webhook_delivery', (id, prev, next) => {
      // A record undone while its delivery is still owed (a disabling whose write failed) leaves the owed entry.
      if (prev !== undefined && (next === undefined || next.createdAt !== prev.createdAt) &&
        !(next === undefined && this.owed.get(prev.endpointId)?.has(id))) {
        this.deliveriesOf(prev.endpointId).remove(prev.createdAt, id);
      }
      // An owed delivery is in the index already: its record is not looked for (a binary search per outcome).
      if (next !== undefined && (prev === undefined ? this.owed.get(next.endpointId)?.has(
        id) !== true : next.createdAt !== prev.createdAt)) this.deliveriesOf(next.endpointId).add(next.createdAt, id);
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
    }, this.persist());
    // Batches of first-attempt successes (docs/decisions.md#first-attempt-successes-are-stored-in-batches): replayed at
    // each start (no saved state), which puts their deliveries in the index; a live batch's deliveries are there
    // already, put when they were owed.
    db.on('webhook_delivered', (id, prev, next, ids) => {
      if (prev !== undefined) this.batches.remove(id, prev);
      if (next !== undefined) this.batches.add(id, next, ids ?? null);
    });
    // Owed state changes with transactions once they are on disk, never when a put is undone (a disabling or a deletion
    // whose write failed leaves everything owed as it was).
    db.afterCommit((tx) => {
      const made = this.madeBy.get(tx);
      if (made !== undefined) {
        this.madeBy.delete(tx);
        for (let i = 0; i < made.length; i += 4) {
          // An endpoint deleted by a transaction still being written is owed until that is on disk.
          if (db.get('webhook_endpoint', made[i]) === undefined && !this.deleting.has(made[i])) continue;
          this.owe(made[i], made[i + 1], made[i + 2] as EventType, made[i + 3], false);
        }
        this.onReady?.();
      }
      const recorded = this.recordedBy.get(tx);
      if (recorded !== undefined) for (const o of recorded) this.recorded(o);
      const deleted = this.deletedBy.get(tx);
      if (deleted !== undefined) {
        for (const id of deleted) {
          this.deleting.delete(id);
          if (db.get('webhook_endpoint', id) === undefined) this.forget(id);
        }
      }
    });
  }

  /** Puts in `tx` the dispatcher's batch `b` of first-attempt successes; `ids`: its deliveries' ids, in order. */
  putBatch(tx: Tx<WebhookRecords>, b: DeliveredRec, json: string, ids: string[]): void {
    tx.put('webhook_delivered', b.id, b, json, ids);
  }

  /** The ids of endpoint `id`'s batches of first-attempt successes (a copy). */
  batchesOf(id: string): string[] { return this.batches.of(id); }

  /** Whether delivery `id` has an outcome stored: its record, or a place in a batch. */
  hasRecord(id: string): boolean { return this.batches.has(id) || this.db.table('webhook_delivery').has(id); }

  /** The deliveries of endpoint `id`, recorded and owed, by (createdAt, id); an empty index when it has none. */
  deliveriesOf(id: string): SortedIndex {
    let idx = this.byEndpoint.get(id);
    if (idx === undefined) this.byEndpoint.set(id, (idx = new SortedIndex()));
    return idx;
  }

  /**
   * Delivery `id` of endpoint `endpointId` as the API shows it: its record, or for one owed and not yet recorded,
   * pending with no attempt made (due at its event's time); undefined when it is neither.
   */
  delivery(endpointId: string, id: string): DeliveryRec | undefined {
    const rec = this.db.get('webhook_delivery', id);
    if (rec !== undefined) return rec;
    const o = this.owed.get(endpointId)?.get(id);
    return o !== undefined ? owedRec(o) : this.batches.delivery(endpointId, id);
  }

  /** The ids of endpoint `id`'s pending delivery records (retries), soonest due first (a copy). */
  pendingOf(id: string): string[] {
    const idx = this.dueByEndpoint.get(id);
    return idx === undefined ? [] : [...idx.asc()].map((at) => idx.idAt(at));
  }

  /** Endpoint `id`'s pending delivery records by (nextAttemptAt, id) (a live view: do not change it), or undefined. */
  retriesOf(id: string): SortedIndex | undefined { return this.dueByEndpoint.get(id); }

  /** Endpoint `id`'s owed deliveries, oldest on disk first (a live view: do not change it), or undefined. */
  owedOf(id: string): ReadonlyMap<string, Owed> | undefined { return this.owed.get(id); }

  /** Adds this workspace's owed deliveries and scheduled retries to `q` (metrics). */
  countQueued(q: { owed: number; retries: number }): void {
    for (const m of this.owed.values()) q.owed += m.size;
    for (const i of this.dueByEndpoint.values()) q.retries += i.size;
  }

  /** The number of deliveries owed to endpoint `id`. */
  owedCount(id: string): number { return this.owed.get(id)?.size ?? 0; }

  /**
   * Owes endpoint `endpointId` the delivery of event `eventId` (on disk, of `type`, created at `createdAt`); nothing
   * when it is owed already or (with `check`) has its record.
   */
  owe(endpointId: string, eventId: string, type: EventType, createdAt: string, check = true): void {
    const id = deliveryIdOf(eventId, endpointId);
    let map = this.owed.get(endpointId);
    if (map === undefined) this.owed.set(endpointId, (map = new Map()));
    else if (map.has(id)) return;
    if (check && this.hasRecord(id)) return;
    const o: Owed = { id, endpointId, eventId, eventType: type, createdAt, running: false, closing: false };
    map.set(id, o);
    this.enqueue(o);
    // Compared as (createdAt, eventId), the order of their composite key, without making it.
    const last = this.lastOwed.get(endpointId);
    if (last === undefined) this.lastOwed.set(endpointId, { createdAt, eventId });
    else if (createdAt > last.createdAt || (createdAt === last.createdAt && eventId > last.eventId)) { last.createdAt =
      createdAt; last.eventId = eventId; }
    else {
      let set = this.early.get(endpointId);
      if (set === undefined) this.early.set(endpointId, (set = new Set()));
      set.add(o);
    }
    this.deliveriesOf(endpointId).add(createdAt, id);
  }

  /** Whether `o` is still owed (not recorded since, nor its endpoint deleted). */
  isOwed(o: Owed): boolean { return this.owed.get(o.endpointId)?.get(o.id) === o; }

  /**
   * Takes up to `max` of endpoint `endpointId`'s owed deliveries not being attempted, first owed first; one that ends
   * without a record goes back with {@link requeue}.
   */
  takeWaiting(endpointId: string, max: number): Owed[] {
    const q = this.waiting.get(endpointId);
    const out: Owed[] = [];
    if (q === undefined) return out;
    const map = this.owed.get(endpointId);
    while (q.head < q.items.length && out.length < max) {
      const o = q.items[q.head++];
      if (!o.running && map?.get(o.id) === o) out.push(o);
    }
    if (q.head === q.items.length) { q.items = []; q.head = 0; }
    else if (q.head >= 1024 && q.head * 2 >= q.items.length) { q.items = q.items.slice(q.head); q.head = 0; }
    return out;
  }

  /** `o`, whose attempt ended without a record (not made, or not written), waits again when still owed. */
  requeue(o: Owed): void {
    o.running = false;
    if (this.isOwed(o)) this.enqueue(o);
  }

  private enqueue(o: Owed): void {
    const q = this.waiting.get(o.endpointId);
    if (q === undefined) this.waiting.set(o.endpointId, { items: [o], head: 0 });
    else q.items.push(o);
  }

  /** @internal `tx` puts the record of owed delivery `o` (a disabling): owed no more once `tx` is on disk. */
  recordOnCommit(tx: object, o: Owed): void {
    o.closing = true;
    const list = this.recordedBy.get(tx);
    if (list === undefined) this.recordedBy.set(tx, [o]); else list.push(o);
  }

  /** @internal `tx` deletes endpoint `id`: its owed deliveries and indexes go once `tx` is on disk. */
  forgetOnCommit(tx: object, id: string): void {
    this.deleting.add(id);
    const list = this.deletedBy.get(tx);
    if (list === undefined) this.deletedBy.set(tx, [id]); else list.push(id);
  }

  /** Drops what is kept of deleted endpoint `id`. */
  private forget(id: string): void {
    for (const m of [this.byEndpoint, this.dueByEndpoint, this.owed, this.waiting, this.early, this.lastOwed]) {
      m.delete(id);
    }
    this.batches.forget(id);
  }

  /**
   * `o` is no longer owed: its record was put (an attempt's outcome, a disabled endpoint's failure). Its entry in the
   * deliveries index stays, now the record's.
   */
  recorded(o: Owed): void {
    const map = this.owed.get(o.endpointId);
    if (map === undefined || map.get(o.id) !== o) return;
    map.delete(o.id);
    this.early.get(o.endpointId)?.delete(o);
  }

  /** `o`, whose record could not be written after all (a failed write), is owed again. */
  reowe(o: Owed): void {
    if (this.db.get('webhook_endpoint', o.endpointId) === undefined) return;
    o.running = false;
    this.owe(o.endpointId, o.eventId, o.eventType, o.createdAt);
  }

  /**
   * The `from` to write for endpoint `id`'s cursor now ({@link WebhookCursorRec}): just below the oldest event it is
   * owed, on disk or being written; else the newest event (event times never go back).
   */
  cursorNow(id: string): string {
    let min: string | undefined;
    const map = this.owed.get(id);
    if (map !== undefined) for (const o of map.values()) { min = compositeKey(o.createdAt, o.eventId); break; }
    const early = this.early.get(id);
    if (early !== undefined) for (const o of early) { const k =
      compositeKey(o.createdAt, o.eventId); if (min === undefined || k < min) min = k; }
    for (const [tx, made] of this.madeBy) {
      if (tx.undone) { this.madeBy.delete(tx); continue; } // aborted or failed: it owes nothing
      for (let i = 0; i < made.length; i += 4) {
        if (made[i] !== id) continue;
        const k = compositeKey(made[i + 3], made[i + 1]);
        if (min === undefined || k < min) min = k;
      }
    }
    if (min === undefined) return this.cursorAtNewest();
    // The bound is exclusive: the key of the event just before the oldest owed (the epoch when none is).
    const order = this.events.order;
    for (const at of order.desc(min)) return order.keyAt(at);
    return EPOCH;
  }

  /** The cursor of an endpoint created or enabled now: the newest event's order key (the epoch when none). */
  cursorAtNewest(): string {
    const order = this.events.order;
    for (const at of order.desc()) return order.keyAt(at);
    return EPOCH;
  }

  /** @internal event `eventId` of `tx` owes endpoint `endpointId` a delivery once `tx` is on disk. */
  made(tx: Tx<WebhookRecords>, endpointId: string, eventId: string, type: EventType, createdAt: string): void {
    const list = this.madeBy.get(tx);
    if (list !== undefined) { list.push(endpointId, eventId, type, createdAt); return; }
    // Transactions aborted or failed never reach afterCommit: swept now and then.
    if (this.madeBy.size >= 256) for (const t of this.madeBy.keys()) if (t.undone) this.madeBy.delete(t);
    this.madeBy.set(tx, [endpointId, eventId, type, createdAt]);
  }

  /**
   * After the log is loaded: owes again each enabled endpoint the events from its cursor on that have no delivery
   * record (docs/api.md#webhook-deliveries). An enabled endpoint without a cursor is owed nothing and gets one at the
   * newest event before the server serves ({@link cursorsToWrite}).
   */
  resume(): void {
    for (const e of this.db.table('webhook_endpoint').values()) {
      if (!e.enabled) continue;
      const from = this.db.get('webhook_cursor', e.id)?.from;
      if (from === undefined) { this.needCursor.push(e.id); continue; }
      const order = this.events.order;
      for (const at of order.asc(from)) {
        const head = eventHead(this.db, order.idAt(at));
        if (head === undefined || !subscribes(e, head.type)) continue;
        this.owe(e.id, order.idAt(at), head.type, head.createdAt);
      }
    }
  }

  /** The cursors {@link resume} found missing, to be written once (then forgotten): endpoint id and `from`. */
  cursorsToWrite(): Array<{ id: string; from: string }> {
    const out = this.needCursor.map((id) => ({ id, from: this.cursorAtNewest() }));
    this.needCursor = [];
    return out;
  }

  /**
   * Endpoint `id`'s pending deliveries (owed and retries) by (createdAt, id), in an index made for this call: a
   * `status=pending` list walks these, not every delivery of 30 days.
   */
  pendingIndex(id: string): SortedIndex {
    const rows: Array<[string, string]> = [];
    for (const o of this.owed.get(id)?.values() ?? []) rows.push([o.createdAt, o.id]);
    const due = this.dueByEndpoint.get(id);
    if (due !== undefined) {
      for (const at of due.asc()) {
        const d = this.db.get('webhook_delivery', due.idAt(at));
        if (d !== undefined) rows.push([d.createdAt, d.id]);
      }
    }
    rows.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    const idx = new SortedIndex();
    idx.replace(rows.map((r) => r[0]), rows.map((r) => r[1]));
    return idx;
  }

  /** The number of endpoints (tests that check a request changed no state). */
  get size(): number { return this.endpoints.size; }
}

/** An owed delivery as its record would be before any attempt. */
export const owedRec = (o: Owed): DeliveryRec => ({
  id: o.id, endpointId: o.endpointId, eventId: o.eventId, eventType: o.eventType, attempt: 0, status: 'pending',
  responseStatus: null, error: null, durationMs: null, createdAt: o.createdAt, nextAttemptAt: o.createdAt,
});
