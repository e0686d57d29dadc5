/**
 * Events (docs/api.md#events): every change an integration cares about, written in the same log transaction as the
 * change, so a 2xx means its event exists and a crash keeps both or neither. Events are derived from the records by the
 * log's derive hooks (docs/storage.md#indexes), not written by each handler: whatever route changes a record, the event
 * follows. Kept 30 days.
 */
import { s } from '../../http/schema.js';
import { iso } from '../../core/clock.js';
import { newId } from '../../core/ids.js';
import type { Db, Tx } from '../../store/db.js';
import { orderBy, attachIndexes, persistSortedMap } from '../../store/indexes.js';
import { SortedIndex } from '../../store/memory/sorted.js';
import { listJson, ViewCache } from '../../http/viewCache.js';
import { route } from '../../domain/route.js';
import type { Workspace } from '../../domain/workspace.js';
import { conversationSchema, conversationView, conversationViewJson, messageSchema, messageView, messageViewJson,
  type ConversationRecords } from '../conversations/conversations.js';
import { issueSchema, issueView, type IssueRecords } from '../issues.js';
import { sourceSummarySchema, sourceView, type Source } from '../sources/model.js';
import type { TSchema } from '../../http/schema.js';
import { answerSchema, answerView, type AnswerRecords } from '../answers/model.js';
import { listSchema, notFound, pageParams, paginate } from '../common.js';

/** The resources events are about, and their event types (docs/api.md#event-types). */
export const EVENT_TYPES = [
  'conversation.created', 'conversation.updated', 'conversation.handoff_requested', 'message.created',
  'issue.created', 'issue.updated', 'source.created', 'source.updated', 'source.deleted', 'answer.created',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** `conversation.*` and the like: every type of one resource (the `type` filter). */
export const EVENT_WILDCARDS = [...new Set(EVENT_TYPES.map((t) => `${t.slice(0, t.indexOf('.'))}.*`))] as const;

/** How long events are kept (docs/api.md#events): 30 days. */
export const EVENT_RETENTION_MS = 30 * 24 * 3600 * 1000;

/** A stored event (record type `event`); the API view adds `object: "event"`. */
export interface EventRec {
  id: string;
  type: EventType;
  createdAt: string;
  data: { object: Record<string, unknown> };
  /** On `*.updated`: the changed top-level fields' previous values. */
  previousAttributes?: Record<string, unknown>;
}

/** The record types of the events area. */
export interface EventRecords { event: EventRec }

/** An event type in PascalCase (`conversation.handoff_requested` → `ConversationHandoffRequested`), for names. */
export const pascalType = (type: EventType): string => type.split(/[._]/).map((w) => w[0].toUpperCase() + w.slice(1))
  .join('');

/** The resource an event type is about (`conversation.updated` → `conversation`). */
export const resourceOf = (type: string): string => type.slice(0, type.indexOf('.'));

/** The fields of `next` whose JSON differs from `prev`'s, with `prev`'s values (`null` when absent). */
export function previousAttributes(prev: Record<string, unknown>, next: Record<string, unknown>): Record<string,
  unknown> {
  const out: Record<string, unknown> = {};
  const differ = (a: unknown, b: unknown): boolean =>
    a !== b && (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null ||
      JSON.stringify(a) !== JSON.stringify(b));
  for (const k in next) if (differ(prev[k], next[k])) out[k] = prev[k] ?? null;
  for (const k in prev) if (!(k in next)) out[k] = prev[k];
  return out;
}

/** The events of one workspace: in time order, and per resource (for the `type` filter). */
export class EventState {
  /** Every event by (createdAt, id). */
  readonly order: SortedIndex;
  /** The events of each resource (`conversation`, `message`, …) by (createdAt, id). */
  private readonly byResource = new Map<string, SortedIndex>();

  constructor(db: Db<EventRecords>) {
    this.order = attachIndexes(db, 'event', { order: orderBy((e: EventRec) => e.createdAt) }).order;
    db.on('event', (id, prev, next) => {
      const e = (next ?? prev)!;
      let idx = this.byResource.get(resourceOf(e.type));
      if (idx === undefined) this.byResource.set(resourceOf(e.type), (idx = new SortedIndex()));
      if (prev) idx.remove(prev.createdAt, id);
      if (next) idx.add(next.createdAt, id);
    }, persistSortedMap('event.byResource/1', 'event', () => this.byResource, () => new SortedIndex()));
  }

  /** The events of `resource` by (createdAt, id); an empty index when there are none. */
  of(resource: string): SortedIndex { return this.byResource.get(resource) ?? EMPTY; }

  /** The number of events (tests that check a request changed no state). */
  get size(): number { return this.order.size; }
}
const EMPTY = new SortedIndex();

/** Registers the events area on a workspace's log: indexes, derive hooks, retention; `now`: the clock, ms. */
export function attachEvents(ws: Workspace, db: Db<EventRecords & ConversationRecords & IssueRecords & AnswerRecords
  & { source: Source }>, now: () => number): EventState {
  const state = new EventState(db);
  /** Puts the event; `objectJson`, when given, is `object`'s JSON text, taken as it is. */
  // Event times never go back within a workspace, whatever the clock does: a webhook endpoint's cursor relies on it
  // (docs/decisions.md#deliveries-owed-by-the-event-log).
  let floor = NaN;
  const emit = (tx: Tx<EventRecords>, type: EventType, object: Record<string, unknown>, previous?: Record<string,
    unknown>, objectJson?: string): void => {
    if (tx.bulk) return;
    if (Number.isNaN(floor)) {
      floor = -Infinity;
      for (const i of state.order.desc()) { floor = Date.parse(state.order.sortKeyAt(i)) + 1; break; }
    }
    const at = Math.max(now(), floor);
    floor = at;
    const e: EventRec = { id: newId(at), type, createdAt: iso(at), data: { object } };
    if (previous !== undefined) e.previousAttributes = previous;
    if (objectJson === undefined) return tx.put('event', e.id, e);
    // The same text as JSON.stringify(e): the keys in the order `e` has them.
    const fields = `"id":${JSON.stringify(e.id)},"type":${JSON.stringify(type)},` +
      `"createdAt":${JSON.stringify(e.createdAt)},"data":{"object":`;
    const tail = previous === undefined ? '}}' : `},"previousAttributes":${JSON.stringify(previous)}}`;
    // Once on disk the event is held as this text (docs/storage.md#memory); its view is made from it.
    tx.put('event', e.id, e, [`{${fields}`, objectJson, tail]);
  };
  /** `created`, or `updated` when the API view changed (nothing when it did not). */
  const change = <V>(resource: string, view: (v: V) => Record<string, unknown>, json?: (v: V) => string) =>
    (tx: Tx<EventRecords>, _id: string, prev: V | undefined, next: V): void => {
    const after = view(next);
    if (prev === undefined) return emit(tx, `${resource}.created` as EventType, after, undefined, json?.(next));
    const changed = previousAttributes(view(prev), after);
    if (Object.keys(changed).length > 0) emit(tx, `${resource}.updated` as EventType, after, changed, json?.(next));
  };
  const conversationChange = change('conversation', conversationView, conversationViewJson);
  db.derive('conversation', (tx, id, prev, next) => {
    conversationChange(tx, id, prev, next);
    // A new hand-over request (docs/api.md#hand-over): after the update that carries it.
    if (next.handoff && next.handoff.requestedAt !== prev?.handoff?.requestedAt) emit(tx,
      'conversation.handoff_requested', conversationView(next), undefined, conversationViewJson(next));
  });
  db.derive('message', (tx, id, prev, next) => { if (prev === undefined) emit(tx, 'message.created', messageView(next),
    undefined, messageViewJson(next)); });
  db.derive('issue', change('issue', (i) => issueView(ws, i)));
  db.derive('source', change('source', sourceView));
  db.derive('answer', (tx, _id, prev, next) => { if (prev === undefined) emit(tx, 'answer.created', answerView(next));
  });
  db.deriveOnDelete('source', (tx, _id, prev) => emit(tx, 'source.deleted', { ...sourceView(prev), deleted: true }));
  // Held as bytes, an event's time is read from the start of its text: a compaction parses none.
  db.retain('event', (e) => Date.parse(e.createdAt) >= now() - EVENT_RETENTION_MS, (json) => {
    const head = EVENT_HEAD.exec(json);
    return head === null ? undefined : Date.parse(head[2]) >= now() - EVENT_RETENTION_MS;
  });
  // Events are many and read seldom: once on disk each is held as its log line's bytes (docs/storage.md#memory).
  db.holdAsBytes('event');
  return state;
}

/** Whether an event created at `createdAt` (ISO) is still kept at `now` (older ones are hidden until compacted). */
const kept = (createdAt: string, now: number): boolean => Date.parse(createdAt) >= now - EVENT_RETENTION_MS;

const eventView = (e: EventRec): Record<string, unknown> => ({ object: 'event', ...e });
const eventJson = new ViewCache<EventRec>(eventView, 'event');

/** The API view's JSON text of a stored event's text: `{"object":"event",` + the text after its `{`. */
const viewOfText = (text: string): string => (
  text === '{}' ? '{"object":"event"}' : `{"object":"event",${text.slice(1)}`);

/** What reads of an event held as bytes need without parsing it (docs/storage.md#memory). */
type EventReader = Pick<Db<EventRecords>, 'get' | 'text'>;

const VIEW_PREFIX = Buffer.from('{"object":"event",');

/** {@link eventViewJson} as UTF-8 bytes (a delivery's body), copied from the held bytes without decoding. */
export function eventViewBytes(db: EventReader & Pick<Db<EventRecords>, 'textBytes'>,
  id: string): Uint8Array | string | undefined {
  // The stored text's `{` goes where the prefix's last byte (`,`) is written over it.
  const out = db.textBytes('event', id, VIEW_PREFIX.length - 1);
  if (out === undefined || out.length <= VIEW_PREFIX.length + 1) return eventViewJson(db, id);
  VIEW_PREFIX.copy(out, 0);
  return out;
}

/** The JSON text of event `id`'s API view (a delivery's body), or undefined when there is no such event. */
export function eventViewJson(db: EventReader, id: string): string | undefined {
  const text = db.text('event', id);
  if (text !== undefined) return viewOfText(text);
  const e = db.get('event', id);
  return e === undefined ? undefined : eventJson.json(e);
}

/** An event as a list walks it: its type, its time (ISO) and its API view's JSON text. */
interface EventItem { type: string; createdAt: string; json: string }

/** How every stored event's text begins (`emit` writes the fields in this order): type and time are read there. */
const EVENT_HEAD = /^\{"id":"[^"\\]*","type":"([^"\\]*)","createdAt":"([^"\\]*)",/;

/** The type and time (ISO) of event `id`, or undefined: read from the start of its held text, nothing parsed. */
export function eventHead(db: EventReader, id: string): { type: EventType; createdAt: string } | undefined {
  const text = db.text('event', id);
  if (text !== undefined) {
    const head = EVENT_HEAD.exec(text);
    if (head !== null) return { type: head[1] as EventType, createdAt: head[2] };
    const e = JSON.parse(text) as EventRec;
    return { type: e.type, createdAt: e.createdAt };
  }
  const e = db.get('event', id);
  return e === undefined ? undefined : { type: e.type, createdAt: e.createdAt };
}

/** Event `id` as a list, a retrieve or a stream needs it, or undefined; from its held text, nothing parsed. */
export function eventItem(db: EventReader, id: string): EventItem | undefined {
  const text = db.text('event', id);
  if (text !== undefined) {
    const json = viewOfText(text);
    const head = EVENT_HEAD.exec(text);
    if (head !== null) return { type: head[1], createdAt: head[2], json };
    const e = JSON.parse(text) as EventRec;
    return { type: e.type, createdAt: e.createdAt, json };
  }
  const e = db.get('event', id);
  return e === undefined ? undefined : { type: e.type, createdAt: e.createdAt, json: eventJson.json(e) };
}

const eventFields = {
  object: s.enum(['event'] as const),
  id: s.string(),
  type: s.named('EventType', s.enum(EVENT_TYPES, { description: 'What happened (docs/api.md#event-types).' })),
  createdAt: s.string({ format: 'date-time' }),
  data: s.object({ object: s.any({
    description: 'The resource as the API returns it after the change (before it, for `source.deleted`, with ' +
      '`deleted: true`).' }) }),
  previousAttributes: s.optional(s.any({
    description: 'On `*.updated`: the previous values of the fields that changed (null for a field that had none).' })),
};
// `Event` would shadow the DOM's Event type in generated clients (docs/api.md#openapi-document).
export const eventSchema = s.named('WorkspaceEvent', s.object(eventFields));

/** The resource schema of each resource events are about. */
const RESOURCE_SCHEMAS: Record<string, TSchema> = {
  conversation: conversationSchema, message: messageSchema, issue: issueSchema, source: sourceSummarySchema,
  answer: answerSchema,
};

/** Each event type's payload as delivered and in the OpenAPI `webhooks` section (`ConversationUpdatedEvent`, …). */

export const EVENT_PAYLOADS: ReadonlyArray<{ type: EventType; schema: TSchema }> = EVENT_TYPES.map((type) => {
  const resource = resourceOf(type);
  const name = `${pascalType(type)}Event`;
  const object = type === 'source.deleted'
    ? s.any({ description: 'The source summary as it was before the delete, with `deleted: true`.' })
    : RESOURCE_SCHEMAS[resource];
  return {
    type,
    schema: s.named(name, s.object({
      ...eventFields,
      type: s.enum([type] as const),
      data: s.object({ object }),
      ...(type.endsWith('.updated') ? { previousAttributes: s.any({
        description: 'The previous values of the fields that changed (null for a field that had none).' }) } : {}),
    })),
  };
});

const listQuery = s.object({
  ...pageParams,
  type: s.optional(s.enum([...EVENT_TYPES, ...EVENT_WILDCARDS] as const,
    { description: 'Only events of this type, or of every type of one resource (`conversation.*`).' })),
  createdAfter: s.optional(s.string({ format: 'date-time', description: 'Only events created after this instant.' })),
});

const base = '/api/v1/events';
export const eventRoutes = [
  route({
    method: 'GET', path: base, operationId: 'listEvents', tag: 'Events', scope: 'events:read',
    summary: 'List events, newest first (kept 30 days), filtered by type (`conversation.updated`, or ' +
      '`conversation.*` for every conversation event) and creation time.',
    query: listQuery,
    success: { status: 200, schema: listSchema('events', eventSchema), description: 'A page of events.' },
    handler: (ctx) => {
      const q = ctx.query;
      const after = q.createdAfter === undefined ? undefined : iso(Date.parse(q.createdAfter));
      const oldest = iso(ctx.now - EVENT_RETENTION_MS);
      const index = q.type === undefined ? ctx.ws.events.order : ctx.ws.events.of(resourceOf(q.type));
      const exact = q.type === undefined || q.type.endsWith('.*') ? undefined : q.type;
      const page = paginate(ctx, 'events', index, 'desc', q, (id) => eventItem(ctx.ws.db, id),
        (e) => exact === undefined || e.type === exact,
        // Newest first: the walk ends at the first event at or before `createdAfter` or past retention.
        (e) => (after !== undefined && e.createdAt <= after) || e.createdAt < oldest);
      return { status: 200, body: null, json: listJson('events', page.hasMore, page.nextCursor, page.items.map((e) =>
        e.json)) };
    },
  }),
  route({
    method: 'GET', path: `${base}/{eventId}`, operationId: 'retrieveEvent', tag: 'Events', scope: 'events:read',
    summary: 'Retrieve an event (404 once it is older than 30 days).',
    success: { status: 200, schema: s.named('EventResponse', s.object({ event: eventSchema })),
      description: 'The event.' },
    handler: (ctx) => {
      const e = eventItem(ctx.ws.db, ctx.params.eventId);
      if (e === undefined || !kept(e.createdAt, ctx.now)) throw notFound();
      return { status: 200, body: null, json: `{"event":${e.json}}` };
    },
  }),
];
