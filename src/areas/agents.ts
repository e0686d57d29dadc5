/**
 * AI support agents (docs/api.md#agents): created by the API, the CLI or import, each with a public `widgetKey`
 * (`svcw_…`) for embedding that is never accepted as an API key, and the settings of its answers from sources
 * (docs/api.md#answers): `sources`, `mode`, `instructions`, `handoffAfterUncertain`.
 */
import { s, type Static } from '../http/schema.js';
import { newId } from '../core/ids.js';
import { iso } from '../core/clock.js';
import { generateWidgetKey } from '../auth/keys.js';
import type { Tx } from '../store/db.js';
import { orderBy } from '../store/indexes.js';
import { route } from '../domain/route.js';
import { invalid } from '../http/errors.js';
import type { Ctx } from '../domain/route.js';
import { listAnswer, listSchema, notFound, pageParams, paginate } from './common.js';
import { checkOrigins, MAX_ALLOWED_ORIGINS } from './widget/origins.js';

/** What an agent does with customers' messages (docs/api.md#answers): nothing, suggest answers, or reply. */
export const AGENT_MODES = ['off', 'suggest', 'reply'] as const;
export type AgentMode = (typeof AGENT_MODES)[number];
/** Defaults of the answer settings; records stored before they existed read as these. */
export const AGENT_DEFAULTS = { sources: [] as string[], mode: 'off' as AgentMode, instructions: '',
  handoffAfterUncertain: 2 };

export interface Agent {
  id: string; name: string; description: string; enabled: boolean; widgetKey: string; createdAt: string;
    updatedAt: string;
  /** Source ids the agent answers from; empty: every ready source. Absent in older records (= defaults). */
  sources?: string[]; mode?: AgentMode; instructions?: string; handoffAfterUncertain?: number;
  /** Exact origins the widget may be embedded on (docs/api.md#live-chat); absent or empty: the widget is refused. */
  allowedOrigins?: string[] }
/** The record types of the agents area. */
export interface AgentRecords { agent: Agent }
/** The indexes of agents (docs/storage.md#indexes): by (createdAt, id), the list order. */
export const agentIndexes = { order: orderBy((a: Agent) => a.createdAt) };

const settingFields = {
  sources: s.optional(s.array(s.string({ format: 'uuid' }), { maxItems: 100,
    description: 'Ids of the sources it answers from (at most 100); empty: every ready source.' })),
  mode: s.optional(s.enum(AGENT_MODES, { description: '`off` (default), `suggest` (answers stored for the inbox) '
    + 'or `reply` (answers sent to the customer).' })),
  instructions: s.optional(s.string({ maxLength: 4000, description: 'Guidance given to the model (≤ 4,000).' })),
  handoffAfterUncertain: s.optional(s.integer({ minimum: 1, maximum: 20,
    description: 'Uncertain answers in a row after which a person is asked for (default 2).' })),
  allowedOrigins: s.optional(s.array(s.string({ maxLength: 300 }), { maxItems: MAX_ALLOWED_ORIGINS,
    description: 'Exact origins (`https://shop.example`, http or https, optional port, no path) the widget may be '
      + 'embedded on, at most 20; empty (default): the widget is refused.' })),
};
/** The fields of a new agent (also the import file's, src/admin/import.ts). */
export const agentInputFields = {
  name: s.string({ minLength: 1, maxLength: 200 }),
  description: s.optional(s.string({ maxLength: 2000 })),
  enabled: s.optional(s.boolean()),
  ...settingFields,
};
export const agentInput = s.named('CreateAgentRequest', s.object(agentInputFields));
const updateAgentBody = s.named('UpdateAgentRequest', s.object({
  name: s.optional(s.string({ minLength: 1, maxLength: 200 })),
  description: s.optional(s.string({ maxLength: 2000 })),
  enabled: s.optional(s.boolean()),
  ...settingFields,
}));

/**
 * `sources` without repeats, each checked to be a source of the workspace `has` knows.
 * @throws ApiError 400 `invalid_request` naming the first unknown id.
 */
export function checkSources(ids: string[], has: (id: string) => boolean): string[] {
  const out = [...new Set(ids)];
  const unknown = out.find((id) => !has(id));
  if (unknown !== undefined) throw invalid(`sources: ${unknown} is not a source of this workspace`);
  return out;
}

/**
 * Creates an agent with a fresh widget key in `tx`; `sources` must have been checked ({@link checkSources}) by a
 * caller that can see the workspace's sources.
 */
export function createAgent(tx: Tx<AgentRecords>, input: Static<typeof agentInput>, at: number): Agent {
  const now = iso(at);
  const a: Agent = { id: newId(), name: input.name, description: input.description ?? '', enabled: input.enabled ??
    true, widgetKey: generateWidgetKey(), createdAt: now, updatedAt: now,
    sources: input.sources ? [...new Set(input.sources)] : [], mode: input.mode ?? 'off',
    instructions: input.instructions ?? '', handoffAfterUncertain: input.handoffAfterUncertain ?? 2,
    allowedOrigins: checkOrigins(input.allowedOrigins ?? []) };
  tx.put('agent', a.id, a);
  return a;
}

/** The answer settings of `a`, defaults filled in. */
export function agentSettings(a: Agent): typeof AGENT_DEFAULTS {
  return { sources: a.sources ?? [], mode: a.mode ?? 'off', instructions: a.instructions ?? '',
    handoffAfterUncertain: a.handoffAfterUncertain ?? 2 };
}

const isoSchema = s.string({ format: 'date-time' });
export const agentSchema = s.named('Agent', s.object({
  object: s.enum(['agent'] as const), id: s.string(), name: s.string(), description: s.string(), enabled: s.boolean(),
  widgetKey: s.string({
    description: 'The public key (`svcw_…`) for embedding the agent\'s widget; never accepted as an API key.' }),
  sources: s.array(s.string(), { description: 'Source ids it answers from; empty: every ready source.' }),
  mode: s.enum(AGENT_MODES), instructions: s.string(), handoffAfterUncertain: s.integer(),
  allowedOrigins: s.array(s.string(), { description: 'Origins the widget may be embedded on; empty: refused.' }),
  createdAt: isoSchema, updatedAt: isoSchema,
}));
/** The API view of an agent: every field, the answer settings' defaults filled in. */
export const agentView = (a: Agent) => ({ object: 'agent', id: a.id, name: a.name, description: a.description,
  enabled: a.enabled, widgetKey: a.widgetKey, ...agentSettings(a), allowedOrigins: a.allowedOrigins ?? [],
  createdAt: a.createdAt, updatedAt: a.updatedAt });
const agentResponse = s.named('AgentResponse', s.object({ agent: agentSchema }));
const hasSource = (ctx: Ctx<unknown, unknown>) => (id: string): boolean => ctx.ws.get('source', id) !== undefined;

export const agentRoutes = [
  route({
    method: 'GET', path: '/api/v1/agents', operationId: 'listAgents', tag: 'Agents', scope: 'agents:read',
    summary: 'List AI support agents, oldest first, with their public widget keys.',
    query: s.object({ ...pageParams }),
    success: { status: 200, schema: listSchema('agents', agentSchema), description: 'A page of agents.' },
    handler: (ctx) => {
      const page = paginate(ctx, 'agents', ctx.ws.agents.order, 'asc', ctx.query, (id) => ctx.ws.get('agent', id));
      return listAnswer('agents', page, page.items.map(agentView));
    },
  }),
  route({
    method: 'GET', path: '/api/v1/agents/{agentId}', operationId: 'retrieveAgent', tag: 'Agents', scope: 'agents:read',
    summary: 'Retrieve an agent.',
    success: { status: 200, schema: agentResponse, description: 'The agent.' },
    handler: (ctx) => {
      const a = ctx.ws.get('agent', ctx.params.agentId);
      if (!a) throw notFound();
      return { status: 200, body: { agent: agentView(a) } };
    },
  }),
  route({
    method: 'POST', path: '/api/v1/agents', operationId: 'createAgent', tag: 'Agents', scope: 'agents:write',
    summary: 'Create an agent with a fresh widget key; `sources` must be sources of the workspace.',
    body: agentInput,
    success: { status: 201, schema: agentResponse, description: 'The created agent.' },
    handler: (ctx) => {
      const b = ctx.body;
      const input = b.sources === undefined ? b : { ...b, sources: checkSources(b.sources, hasSource(ctx)) };
      return { status: 201, body: { agent: agentView(createAgent(ctx.tx(), input, ctx.now)) } };
    },
  }),
  route({
    method: 'PATCH', path: '/api/v1/agents/{agentId}', operationId: 'updateAgent', tag: 'Agents',
    scope: 'agents:write',
    summary: 'Update an agent; `sources` and `allowedOrigins` replace their lists.',
    body: updateAgentBody,
    success: { status: 200, schema: agentResponse, description: 'The updated agent.' },
    handler: (ctx) => {
      const a = ctx.ws.get('agent', ctx.params.agentId);
      if (!a) throw notFound();
      const b = ctx.body;
      const next: Agent = { ...a, ...agentSettings(a) };
      if (b.name !== undefined) next.name = b.name;
      if (b.description !== undefined) next.description = b.description;
      if (b.enabled !== undefined) next.enabled = b.enabled;
      if (b.sources !== undefined) next.sources = checkSources(b.sources, hasSource(ctx));
      if (b.mode !== undefined) next.mode = b.mode;
      if (b.instructions !== undefined) next.instructions = b.instructions;
      if (b.handoffAfterUncertain !== undefined) next.handoffAfterUncertain = b.handoffAfterUncertain;
      if (b.allowedOrigins !== undefined) next.allowedOrigins = checkOrigins(b.allowedOrigins);
      if (JSON.stringify(agentView(next)) === JSON.stringify(agentView(a))) return { status: 200,
        body: { agent: agentView(a) } };
      next.updatedAt = iso(ctx.now);
      ctx.tx().put('agent', a.id, next);
      return { status: 200, body: { agent: agentView(next) } };
    },
  }),
];
