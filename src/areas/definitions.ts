/**
 * Definitions (SPEC "List custom fields", "Custom field definition"; DESIGN §5): custom
 * field definitions are stored with internal settings (AI instructions, position) but the
 * API returns only the spec's sanitized fields.
 */
import { s, type Static } from '../http/schema.js';
import { route } from '../http/route.js';
import { newId } from '../ids.js';
import { iso } from '../clock.js';
import { T, type Workspace } from '../workspace.js';
import type { Rec, Tx } from '../store/db.js';
import { listSchema, pageParams, paginate } from './common.js';

export const FIELD_TYPES = ['text', 'number', 'decimal', 'boolean', 'date', 'datetime', 'url', 'select', 'multiselect'] as const;
export const FILL_MODES = ['manual', 'ai', 'api', 'customer'] as const;

export interface CustomField {
  id: string; label: string; type: (typeof FIELD_TYPES)[number]; enabled: boolean;
  fillMode: (typeof FILL_MODES)[number]; description: string; options: string[];
  /** Internal: never returned by the API. */
  aiInstructions?: string;
  position: number;
  createdAt: string;
}

/** The import shape of a custom field definition (DESIGN §1 "Import file"). */
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

export const customFieldSchema = s.object({
  object: s.enum(['custom_field'] as const), id: s.string(), label: s.string(), type: s.enum(FIELD_TYPES),
  enabled: s.boolean(), fillMode: s.enum(FILL_MODES), description: s.string(), options: s.array(s.string()),
});

/** The sanitized API view: the spec's fields only. */
export function customFieldView(f: CustomField): Record<string, unknown> {
  return { object: 'custom_field', id: f.id, label: f.label, type: f.type, enabled: f.enabled, fillMode: f.fillMode, description: f.description, options: f.options };
}

/** Creates a custom field definition in `tx` (import and CLI). Without `position` it goes last. */
export function createCustomField(ws: Workspace, tx: Tx, input: Static<typeof customFieldInput>, at: number): CustomField {
  // "Last" means after the highest position in use: the count alone would slot it before sparse positions (10, 20, …).
  let last = -1;
  for (const r of ws.db.table(T.customField).values()) last = Math.max(last, r.position as number);
  const f: CustomField = {
    id: newId(), label: input.label, type: input.type, enabled: input.enabled ?? true, fillMode: input.fillMode ?? 'manual',
    description: input.description ?? '', options: input.options ?? [], position: input.position ?? last + 1,
    createdAt: iso(at),
  };
  if (input.aiInstructions !== undefined) f.aiInstructions = input.aiInstructions;
  tx.put(T.customField, f.id, f as unknown as Rec);
  return f;
}

export const definitionRoutes = [
  route({
    method: 'GET', path: '/api/v1/custom-fields', operationId: 'listCustomFields', tag: 'Definitions', scope: 'definitions:read',
    summary: 'List custom field definitions in their defined order (position, then creation).',
    query: s.object({ ...pageParams }),
    success: { status: 200, schema: listSchema('customFields', customFieldSchema), description: 'A page of custom field definitions.' },
    handler: (ctx) => {
      const page = paginate(ctx, 'custom-fields', ctx.ws.customFieldOrder, 'asc', ctx.query, (id) => ctx.ws.get<CustomField>(T.customField, id));
      return { status: 200, body: { object: 'list', hasMore: page.hasMore, nextCursor: page.nextCursor, customFields: page.items.map(customFieldView) } };
    },
  }),
];
