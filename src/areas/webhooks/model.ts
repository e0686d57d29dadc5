/**
 * Webhook endpoints and deliveries as stored and as the API shows them (docs/api.md#webhooks): the record types, their
 * views and schemas, the endpoint secret (`whsec_…`) and the Standard Webhooks signature
 * (docs/api.md#webhook-signatures).
 */
import { randomBytes } from 'node:crypto';
import { SECRET_PREFIX } from './signature.js';
import { s } from '../../http/schema.js';
import type { Sealed } from '../../core/secrets.js';
import type { WithPrepared } from '../../store/db.js';
import { EVENT_TYPES, eventSchema, type EventType } from '../events/events.js';


/** The most endpoints one workspace may have (docs/api.md#webhook-limits); one more is a 409. */
export const MAX_ENDPOINTS = 16;
/** How long the secret before a rotation keeps signing beside the new one: 24 h. */
export const SECRET_OVERLAP_MS = 24 * 3600 * 1000;
/** An endpoint whose attempts all failed for this long is disabled (docs/api.md#webhook-disabling): 5 days. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;
/** An endpoint with this many deliveries in a row ended `failed` is disabled. */
export const DISABLE_AFTER_FAILED_DELIVERIES = 100;
/** How long deliveries are kept, like events (docs/api.md#webhook-deliveries): 30 days. */
export const DELIVERY_RETENTION_MS = 30 * 24 * 3600 * 1000;
/** What an endpoint subscribes to: event types, or `*` for all of them. */
export const SUBSCRIBABLE = [...EVENT_TYPES, '*'] as const;
export type Subscribable = (typeof SUBSCRIBABLE)[number];

/** A stored webhook endpoint (record type `webhook_endpoint`). */
export interface WebhookEndpointRec {
  id: string;
  url: string;
  events: Subscribable[];
  description: string;
  /** Deliveries are made only while true; the API's `status` says the same in words. */
  enabled: boolean;
  /** Why the server disabled it (a 410, failures); null when it is enabled or a PATCH disabled it. */
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
  /** The signing secret, sealed with the data dir's master key (docs/storage.md#secrets-at-rest). */
  secret: Sealed;
  /** The secret before the last rotation: it signs beside `secret` until `expiresAt`. */
  previousSecret?: { sealed: Sealed; expiresAt: string };
  /** The first failed attempt since the last successful one (absent while none failed). */
  failingSince?: string;
  /** Deliveries ended `failed` since the last successful attempt. */
  failedInARow?: number;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/**
 * One event to send to one endpoint (record type `webhook_delivery`), updated after each attempt; a first attempt that
 * succeeded is stored in a {@link DeliveredRec} instead.
 */
export interface DeliveryRec {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: EventType;
  /** Attempts made so far (0 before the first). */
  attempt: number;
  status: DeliveryStatus;
  /** The HTTP status of the last attempt's answer; null when none came. */
  responseStatus: number | null;
  /** Why the last attempt failed; null when it succeeded or none was made. */
  error: string | null;
  /** How long the last attempt took until the answer's status line, ms. */
  durationMs: number | null;
  createdAt: string;
  /** When the next attempt is due; null once the delivery succeeded or failed. */
  nextAttemptAt: string | null;
}

/** A string as JSON: quoted as it is when it holds only characters JSON never escapes (ids, times, enum values). */
const quote = (v: string): string => (/^[\w.:-]*$/.test(v) ? `"${v}"` : JSON.stringify(v));

/**
 * The JSON text of a delivery record, as `JSON.stringify(d)` gives for keys in {@link DeliveryRec}'s order, built
 * without walking the object: it goes with the put (docs/storage.md#transactions).
 */
export function deliveryRecJson(d: DeliveryRec): string {
  const num = (n: number | null): string => (n === null ? 'null' : String(n));
  return `{"id":${quote(d.id)},"endpointId":${quote(d.endpointId)},"eventId":${quote(d.eventId)},`
    + `"eventType":${quote(d.eventType)},"attempt":${num(d.attempt)},"status":${quote(d.status)},`
    + `"responseStatus":${num(d.responseStatus)},"error":${d.error === null ? 'null' : JSON.stringify(d.error)},`
    + `"durationMs":${num(d.durationMs)},"createdAt":${quote(d.createdAt)},`
    + `"nextAttemptAt":${d.nextAttemptAt === null ? 'null' : quote(d.nextAttemptAt)}}`;
}

/**
 * One delivery of a {@link DeliveredRec}: its event's id, type and time (the delivery's `createdAt`), the answer's HTTP
 * status and the attempt's duration, ms.
 */
export type DeliveredItem = [eventId: string, eventType: EventType, createdAt: string, responseStatus: number,
  durationMs: number];

/**
 * Deliveries of one endpoint that succeeded at their first attempt, written together (record type `webhook_delivered`,
 * docs/decisions.md#first-attempt-successes-are-stored-in-batches). `createdAt` is the newest delivery's (retention
 * keeps the batch while that one is kept).
 */
export interface DeliveredRec { id: string; endpointId: string; createdAt: string; deliveries: DeliveredItem[] }

/** The JSON text of a batch of first-attempt successes: `JSON.stringify(b)` for a batch made by this area, built
 * without walking the objects. */
export function deliveredRecJson(b: DeliveredRec): string {
  let items = '';
  for (const d of b.deliveries) {
    items += `${items === '' ? '' : ','}[${quote(d[0])},${quote(d[1])},${quote(d[2])},${d[3]},${d[4]}]`;
  }
  return `{"id":${quote(b.id)},"endpointId":${quote(b.endpointId)},"createdAt":${quote(b.createdAt)},`
    + `"deliveries":[${items}]}`;
}

/** Delivery `item` of batch `b` as its own record would be. */
export const deliveredRec = (b: DeliveredRec, id: string, item: DeliveredItem): DeliveryRec => ({
  id, endpointId: b.endpointId, eventId: item[0], eventType: item[1], attempt: 1, status: 'succeeded',
  responseStatus: item[3], error: null, durationMs: item[4], createdAt: item[2], nextAttemptAt: null,
});

/**
 * Endpoint `id`'s cursor (record `webhook_cursor`, docs/decisions.md#deliveries-owed-by-the-event-log): every event
 * below `from` it was owed has a record or a place in a {@link DeliveredRec}. `from` bounds the events' (createdAt, id)
 * order: an ISO time or an event's order key.
 */
export interface WebhookCursorRec { id: string; from: string }

/**
 * The record types of the webhooks area. A batch put by the dispatcher brings its deliveries' ids to the listeners
 * (`prepared`, docs/storage.md#transactions): the strings its index holds already.
 */
export interface WebhookRecords {
  webhook_endpoint: WebhookEndpointRec; webhook_delivery: DeliveryRec; webhook_delivered: WithPrepared<DeliveredRec,
  string[]>; webhook_cursor: WebhookCursorRec }

/** The sealing context of an endpoint's secrets: bound to its workspace and endpoint. */
export const secretContext = (workspaceId: string, endpointId: string): string =>
  `${workspaceId}/webhook_endpoint/${endpointId}`;

/** A new endpoint secret: `whsec_` + base64 of 32 random bytes. */
export const generateSecret = (): string => SECRET_PREFIX + randomBytes(32).toString('base64');


/** Whether `e` receives events of `type`. */
export const subscribes = (e: WebhookEndpointRec, type: EventType): boolean => e.events.includes('*') ||
  e.events.includes(type);

/** The endpoint as the API shows it: never a secret, nor the failure counters. */
export const endpointView = (e: WebhookEndpointRec) => ({
  object: 'webhook_endpoint' as const, id: e.id, url: e.url, events: e.events, description: e.description,
    enabled: e.enabled,
  status: e.enabled ? 'enabled' as const : 'disabled' as const, disabledReason: e.disabledReason,
    createdAt: e.createdAt, updatedAt: e.updatedAt,
});

/** A delivery as the API shows it. */
export const deliveryView = (d: DeliveryRec) => ({
  object: 'webhook_delivery' as const, id: d.id, eventId: d.eventId, eventType: d.eventType, attempt: d.attempt,
    status: d.status,
  responseStatus: d.responseStatus, error: d.error, durationMs: d.durationMs, createdAt: d.createdAt,
    nextAttemptAt: d.nextAttemptAt,
});

const isoSchema = s.string({ format: 'date-time' });
const eventFilter = s.named('WebhookEventFilter', s.enum(SUBSCRIBABLE, {
  description: 'An event type, or `*` for every type (docs/api.md#webhook-endpoint-object).' }));
const eventsSchema = s.array(eventFilter,
  { minItems: 1, maxItems: 20,
    description: 'The event types sent to the endpoint; `*` is all of them. Repeated items count once.' });
const urlSchema = s.string({ minLength: 1, maxLength: 2000, format: 'uri',
  description: 'An absolute http or https URL without credentials; its host must resolve to public addresses '
    + '(docs/api.md#webhook-endpoint-urls).' });
/** The longest endpoint description, characters (the API's schema and the settings page both enforce it). */
export const MAX_DESCRIPTION = 500;
const descriptionSchema = s.string({ maxLength: MAX_DESCRIPTION });

const endpointProps = {
  object: s.enum(['webhook_endpoint'] as const),
  id: s.string(),
  url: s.string(),
  events: s.array(eventFilter),
  description: s.string(),
  enabled: s.boolean({ description: 'Deliveries are made only while true.' }),
  status: s.enum(['enabled', 'disabled'] as const, {
    description: '`disabled` once a PATCH or the server disabled the endpoint.' }),
  disabledReason: s.nullable(s.string({
    description: 'Why the server disabled the endpoint (a 410 Gone, failing deliveries); null otherwise.' })),
  createdAt: isoSchema,
  updatedAt: isoSchema,
};
/** An endpoint as every answer but create and rotate-secret shows it (component `WebhookEndpoint`). */
export const endpointSchema = s.named('WebhookEndpoint', s.object(endpointProps));
/** An endpoint with its secret: the answers of create and rotate-secret. */
export const endpointWithSecretSchema = s.named('WebhookEndpointWithSecret', s.object({
  ...endpointProps,
  secret: s.nullable(s.string({
    description: 'The signing secret (`whsec_` + base64 of 32 bytes), shown only in this answer. Null in an idempotent '
      + 'replay (`Idempotent-Replayed: true`): it is never stored in clear.' })),
}));

/** A delivery as the deliveries list shows it (component `WebhookDelivery`). */
export const deliverySchema = s.named('WebhookDelivery', s.object({
  object: s.enum(['webhook_delivery'] as const),
  id: s.string(),
  eventId: s.string(),
  eventType: eventSchema.target().properties.type,
  attempt: s.integer({ minimum: 0, description: 'Attempts made so far.' }),
  status: s.enum(['pending', 'succeeded', 'failed'] as const),
  responseStatus: s.nullable(s.integer({
    description: 'The HTTP status of the last attempt; null when no answer came.' })),
  error: s.nullable(s.string({ description: 'Why the last attempt failed.' })),
  durationMs: s.nullable(s.integer({ minimum: 0,
    description: 'How long the last attempt took until the answer, ms.' })),
  createdAt: isoSchema,
  nextAttemptAt: s.nullable(s.string({ format: 'date-time',
    description: 'When the next attempt is due; null once the delivery succeeded or failed.' })),
}));

/** The body of `POST /webhook-endpoints`. */
export const createInput = s.named('WebhookEndpointCreate', s.object({
  url: urlSchema,
  events: eventsSchema,
  description: s.optional(descriptionSchema),
  enabled: s.optional(s.boolean({ default: true })),
}));

/** The body of `PATCH /webhook-endpoints/{id}`: any of the fields. */
export const updateInput = s.named('WebhookEndpointUpdate', s.object({
  url: s.optional(urlSchema),
  events: s.optional(eventsSchema),
  description: s.optional(descriptionSchema),
  enabled: s.optional(s.boolean({
    description: 'true enables a disabled endpoint again (clearing disabledReason and the failure count).' })),
}));
