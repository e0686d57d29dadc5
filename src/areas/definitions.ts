/**
 * Definitions (docs/api.md#custom-fields): custom field definitions are stored with internal settings (AI instructions,
 * position) but the API returns only the spec's sanitized fields.
 */
import { s, type Static } from '../http/schema.js';
import { route } from '../domain/route.js';
import { InvalidInputError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { iso } from '../core/clock.js';
import type { Workspace } from '../domain/workspace.js';
import type { Tx } from '../store/db.js';
import { orderBy, uniqueBy } from '../store/indexes.js';
import { listAnswer, listSchema, pageParams, paginate, paginateArray, PRIORITIES } from './common.js';
import { CONVERSATION_STATUSES } from './conversations/conversations.js';
import { ISSUE_STATES } from './issues.js';

export const FIELD_TYPES = ['text', 'number', 'decimal', 'boolean', 'date', 'datetime', 'url', 'select',
  'multiselect'] as const;
export const FILL_MODES = ['manual', 'ai', 'api', 'customer'] as const;

export interface CustomField {
  id: string; label: string; type: (typeof FIELD_TYPES)[number]; enabled: boolean;
  fillMode: (typeof FILL_MODES)[number]; description: string; options: string[];
  /** Internal: never returned by the API. */
  aiInstructions?: string;
  position: number;
  createdAt: string;
}

/** The import shape of a custom field definition (docs/configuration.md#import-file). */
export const customFieldInput = s.object({
  label: s.string({ minLength: 1, maxLength: 200 }),
  type: s.enum(FIELD_TYPES),
  enabled: s.optional(s.boolean()),
  fillMode: s.optional(s.enum(FILL_MODES)),
  description: s.optional(s.string({ maxLength: 2000 })),
  options: s.optional(s.array(s.string({ minLength: 1, maxLength: 200 }), { maxItems: 500 })),
  aiInstructions: s.optional(s.string({ maxLength: 10000 })),
  position: s.optional(s.integer({ minimum: 0, maximum: 1_000_000 })),
});

export const customFieldSchema = s.named('CustomField', s.object({
  object: s.enum(['custom_field'] as const), id: s.string(), label: s.string(), type: s.enum(FIELD_TYPES),
  enabled: s.boolean(), fillMode: s.enum(FILL_MODES, {
    description: 'Who fills the field in: support by hand, AI, an API client, or the customer.' }),
  description: s.string(), options: s.array(s.string(), {
    description: 'The choices of a `select` or `multiselect` field; empty for the other types.' }),
}, { description: 'A custom field definition, sanitized: internal settings (AI instructions, position) are not ' +
  'returned.' }));

/** The sanitized API view: the spec's fields only. */
export function customFieldView(f: CustomField): Record<string, unknown> {
  return { object: 'custom_field', id: f.id, label: f.label, type: f.type, enabled: f.enabled, fillMode: f.fillMode,
    description: f.description, options: f.options };
}

/** Creates a custom field definition in `tx` (import and CLI). Without `position` it goes last. */
/**
 * Options belong to choice fields: `select` and `multiselect` need at least one, other types none.
 * @throws InvalidInputError about `options`, naming the problem.
 */
export function checkCustomFieldOptions(input: { type: string; options?: string[] }): void {
  const choice = input.type === 'select' || input.type === 'multiselect';
  const invalid = (reason: string) => new InvalidInputError(['options'], reason);
  if (choice && !input.options?.length) throw invalid(`must list at least one option for a ${input.type} field`);
  if (!choice && input.options?.length) throw invalid('are only allowed for select and multiselect fields');
  if (input.options && new Set(input.options).size !== input.options.length) throw invalid('must not repeat an option');
}

export function createCustomField(ws: Workspace, tx: Tx<DefinitionRecords>, input: Static<typeof customFieldInput>,
  at: number): CustomField {
  checkCustomFieldOptions(input);
  // "Last" means after the highest position in use: the count alone would slot it before sparse positions (10, 20, …).
  let last = -1;
  for (const r of ws.db.table('custom_field').values()) last = Math.max(last, r.position);
  const f: CustomField = {
    id: newId(), label: input.label, type: input.type, enabled: input.enabled ?? true, fillMode: input.fillMode ??
      'manual',
    description: input.description ?? '', options: input.options ?? [], position: input.position ?? last + 1,
    createdAt: iso(at),
  };
  if (input.aiInstructions !== undefined) f.aiInstructions = input.aiInstructions;
  tx.put('custom_field', f.id, f);
  return f;
}

export const definitionRoutes = [
  route({
    method: 'GET', path: '/api/v1/custom-fields', operationId: 'listCustomFields', tag: 'Definitions',
      scope: 'definitions:read',
    summary: 'List custom field definitions in their defined order (position, then creation).',
    query: s.object({ ...pageParams }),
    success: { status: 200, schema: listSchema('customFields', customFieldSchema),
      description: 'A page of custom field definitions.' },
    handler: (ctx) => {
      const page = paginate(ctx, 'custom-fields', ctx.ws.customFields.order, 'asc', ctx.query, (id) =>
        ctx.ws.get('custom_field', id));
      return listAnswer('customFields', page, page.items.map(customFieldView));
    },
  }),
];

/** A tag record: tags come from import, the CLI, and use on issues (docs/api.md#tags). */
export interface Tag { id: string; name: string; createdAt: string; enabled?: boolean }
/** The record types of the definitions area. */
export interface DefinitionRecords { custom_field: CustomField; tag: Tag }

/** The indexes of custom fields (docs/storage.md#indexes). */
export const customFieldIndexes = {
  /** By (position, createdAt, id): the defined order; the position is zero-padded so the "\0" sits at one place. */
  order: orderBy((f: CustomField) => `${String(f.position).padStart(10, '0')}\u0000${f.createdAt}`),
};

/** A tag's name as tags are matched: without case (docs/decisions.md#tags-ignore-case). */
const tagKey = (t: Tag): string => t.name.toLowerCase();
/** The indexes of tags (docs/storage.md#indexes). */
export const tagIndexes = {
  /** By (name without case, id): the list order. */
  order: orderBy(tagKey),
  /** Name without case → id. */
  byName: uniqueBy(tagKey),
};

export const tagSchema = s.named('Tag', s.object({ object: s.enum(['tag'] as const), id: s.string(),
  name: s.string() }));
export const statusSchema = s.named('Status', s.object({
  object: s.enum(['status'] as const), id: s.string({ description: '`<resource>.<name>`, e.g. `conversation.open`.' }),
  name: s.string({ description: 'A conversation `status` or an issue `state` value.' }),
    resource: s.enum(['conversation', 'issue'] as const),
}));
export const prioritySchema = s.named('Priority', s.object({
  object: s.enum(['priority'] as const), id: s.string(), name: s.string({
    description: 'A `priority` value of conversations and issues.' }),
  rank: s.integer({ minimum: 1, maximum: 4, description: '1 is the most urgent.' }),
}));

/** One status per enumeration value (docs/api.md#statuses); the id is `<resource>.<value>`. */
export const STATUSES = [
  ...CONVERSATION_STATUSES.map((v) => ({ object: 'status', id: `conversation.${v}`, name: v,
    resource: 'conversation' })),
  ...ISSUE_STATES.map((v) => ({ object: 'status', id: `issue.${v}`, name: v, resource: 'issue' })),
];
/** `urgent` rank 1 … `low` rank 4 (docs/api.md#priorities). */
export const PRIORITY_LIST = PRIORITIES.map((v, i) => ({ object: 'priority', id: v, name: v, rank: i + 1 }));

export const definitionListRoutes = [
  route({
    method: 'GET', path: '/api/v1/tags', operationId: 'listTags', tag: 'Definitions', scope: 'definitions:read',
    summary: 'List the workspace\'s tags (from import, the CLI and use on issues), by name; disabled tags are left ' +
      'out.',
    query: s.object({ ...pageParams }),
    success: { status: 200, schema: listSchema('tags', tagSchema), description: 'A page of tags.' },
    handler: (ctx) => {
      const page = paginate(ctx, 'tags', ctx.ws.tags.order, 'asc', ctx.query, (id) => ctx.ws.get('tag', id), (t) =>
        t.enabled !== false);
      return listAnswer('tags', page, page.items.map((t) => ({ object: 'tag', id: t.id, name: t.name })));
    },
  }),
  route({
    method: 'GET', path: '/api/v1/statuses', operationId: 'listStatuses', tag: 'Definitions', scope: 'definitions:read',
    summary: 'List the statuses of conversations and the states of issues.',
    query: s.object({ ...pageParams }),
    success: { status: 200, schema: listSchema('statuses', statusSchema), description: 'A page of statuses.' },
    handler: (ctx) => {
      const page = paginateArray(ctx, 'statuses', STATUSES, ctx.query);
      return listAnswer('statuses', page, page.items);
    },
  }),
  route({
    method: 'GET', path: '/api/v1/priorities', operationId: 'listPriorities', tag: 'Definitions',
      scope: 'definitions:read',
    summary: 'List the priorities, most urgent first.',
    query: s.object({ ...pageParams }),
    success: { status: 200, schema: listSchema('priorities', prioritySchema), description: 'A page of priorities.' },
    handler: (ctx) => {
      const page = paginateArray(ctx, 'priorities', PRIORITY_LIST, ctx.query);
      return listAnswer('priorities', page, page.items);
    },
  }),
];
