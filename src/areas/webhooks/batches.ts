/**
 * Which webhook deliveries are stored in batches of first-attempt successes (record type `webhook_delivered`,
 * docs/decisions.md#first-attempt-successes-are-stored-in-batches): each batched delivery's batch by delivery id, each
 * endpoint's batches, and the lookup of one delivery as its own record would be. Kept by the webhooks area's state
 * (state.ts), which gives it its endpoints' deliveries indexes and what is owed.
 */
import type { Db } from '../../store/db.js';
import type { SortedIndex } from '../../store/memory/sorted.js';
import { deliveryIdOf } from './deliveryId.js';
import { deliveredRec, type DeliveredRec, type DeliveryRec, type WebhookRecords } from './model.js';

/** What the batches need of the area's state. */
export interface BatchHost {
  /** Whether delivery `id` of endpoint `endpointId` is owed (its index entry is the owed one's). */
  isOwed(endpointId: string, id: string): boolean;
  /** Endpoint `endpointId`'s deliveries index, made when it has none. */
  deliveriesOf(endpointId: string): SortedIndex;
  /** Endpoint `endpointId`'s deliveries index, if it has one. */
  indexOf(endpointId: string): SortedIndex | undefined;
}

/** The batched deliveries of one workspace (see the module's comment). */
export class DeliveredBatches {
  /** Delivery id → the id of the batch holding it. */
  private readonly batchOf = new Map<string, string>();
  /** Each endpoint's batches (their ids); an endpoint with none has no entry. */
  private readonly byEndpoint = new Map<string, Set<string>>();
  /** The batch {@link delivery} parsed last (a page of a list reads many of one batch). */
  private last: DeliveredRec | null = null;

  constructor(private readonly db: Db<WebhookRecords>, private readonly host: BatchHost) {}

  /**
   * Files batch `id`'s deliveries under it. `ids` (a batch the dispatcher writes) are already in their index; without
   * them (a replayed or undone batch), each delivery not owed also goes in its endpoint's index.
   */
  add(id: string, b: DeliveredRec, ids: string[] | null): void {
    let set = this.byEndpoint.get(b.endpointId);
    if (set === undefined) this.byEndpoint.set(b.endpointId, (set = new Set()));
    set.add(id);
    if (ids !== null) { for (const did of ids) this.batchOf.set(did, id); return; }
    for (const d of b.deliveries) {
      const did = deliveryIdOf(d[0], b.endpointId);
      this.batchOf.set(did, id);
      if (!this.host.isOwed(b.endpointId, did)) this.host.deliveriesOf(b.endpointId).add(d[2], did);
    }
  }

  /** Batch `id` is gone (its endpoint deleted, past retention, or its write undone): its deliveries with it, but those
   * owed again. */
  remove(id: string, b: DeliveredRec): void {
    if (this.last?.id === id) this.last = null;
    const set = this.byEndpoint.get(b.endpointId);
    if (set !== undefined && set.delete(id) && set.size === 0) this.byEndpoint.delete(b.endpointId);
    const idx = this.host.indexOf(b.endpointId);
    for (const d of b.deliveries) {
      const did = deliveryIdOf(d[0], b.endpointId);
      if (this.batchOf.get(did) !== id) continue;
      this.batchOf.delete(did);
      if (!this.host.isOwed(b.endpointId, did)) idx?.remove(d[2], did);
    }
  }

  /** Whether delivery `id` is in a batch. */
  has(id: string): boolean { return this.batchOf.has(id); }

  /** The ids of endpoint `endpointId`'s batches (a copy). */
  of(endpointId: string): string[] { return [...this.byEndpoint.get(endpointId) ?? []]; }

  /** Drops the entry of deleted endpoint `endpointId` (its batches were deleted with it). */
  forget(endpointId: string): void { this.byEndpoint.delete(endpointId); }

  /** Delivery `id` of endpoint `endpointId` as its record would be, when a batch holds it; else undefined. */
  delivery(endpointId: string, id: string): DeliveryRec | undefined {
    const batchId = this.batchOf.get(id);
    if (batchId === undefined) return undefined;
    let b = this.last;
    if (b?.id !== batchId) {
      b = this.db.get('webhook_delivered', batchId) ?? null;
      if (b === null || b.endpointId !== endpointId) return undefined;
      this.last = b;
    }
    // The event's id from the delivery's: deliveryIdOf is its own inverse on the ids of 36 characters it makes; a
    // longer id (its text join) is looked for item by item.
    const eventId = id.length === 36 ? deliveryIdOf(id, endpointId) : undefined;
    for (const d of b.deliveries) if (eventId !== undefined ? d[0] === eventId : deliveryIdOf(d[0],
      endpointId) === id) return deliveredRec(b, id, d);
    return undefined;
  }
}
