/**
 * AI support agents (docs/api.md#agents): created by the CLI or import, each with a public
 * `widgetKey` (`svcw_…`) for embedding that is never accepted as an API key.
 */
import { s, type Static } from '../http/schema.js';
import { newId } from '../core/ids.js';
import { iso } from '../core/clock.js';
import { generateWidgetKey } from '../auth/keys.js';
import type { Tx } from '../store/db.js';
import { orderBy } from '../store/indexes.js';
import { route } from '../domain/route.js';
import { listSchema, notFound, pageParams, paginate } from './common.js';

export interface Agent { id: string; name: string; description: string; enabled: boolean; widgetKey: string; createdAt: string; updatedAt: string }
/** The record types of the agents area. */
export interface AgentRecords { agent: Agent }
/** The indexes of agents (docs/storage.md#indexes): by (createdAt, id), the list order. */
export const agentIndexes = { order: orderBy((a: Agent) => a.createdAt) };

export const agentInput = s.object({
  name: s.string({ minLength: 1, maxLength: 200 }),
  description: s.optional(s.string({ maxLength: 2000 })),
  enabled: s.optional(s.boolean()),
});

/** Creates an agent with a fresh widget key in `tx`. */
export function createAgent(tx: Tx<AgentRecords>, input: Static<typeof agentInput>, at: number): Agent {
  const now = iso(at);
  const a: Agent = { id: newId(), name: input.name, description: input.description ?? '', enabled: input.enabled ?? true, widgetKey: generateWidgetKey(), createdAt: now, updatedAt: now };
  tx.put('agent', a.id, a);
  return a;
}

const isoSchema = s.string({ format: 'date-time' });
export const agentSchema = s.named('Agent', s.object({
  object: s.enum(['agent'] as const), id: s.string(), name: s.string(), description: s.string(), enabled: s.boolean(),
  widgetKey: s.string({ description: 'The public key (`svcw_…`) for embedding the agent\'s widget; never accepted as an API key.' }),
  createdAt: isoSchema, updatedAt: isoSchema,
}));
const agentView = (a: Agent) => ({ object: 'agent', ...a });

export const agentRoutes = [
  route({
    method: 'GET', path: '/api/v1/agents', operationId: 'listAgents', tag: 'Agents', scope: 'agents:read',
    summary: 'List AI support agents, oldest first, with their public widget keys.',
    query: s.object({ ...pageParams }),
    success: { status: 200, schema: listSchema('agents', agentSchema), description: 'A page of agents.' },
    handler: (ctx) => {
      const page = paginate(ctx, 'agents', ctx.ws.agents.order, 'asc', ctx.query, (id) => ctx.ws.get('agent', id));
      return { status: 200, body: { object: 'list', hasMore: page.hasMore, nextCursor: page.nextCursor, agents: page.items.map(agentView) } };
    },
  }),
  route({
    method: 'GET', path: '/api/v1/agents/{agentId}', operationId: 'retrieveAgent', tag: 'Agents', scope: 'agents:read',
    summary: 'Retrieve an agent.',
    success: { status: 200, schema: s.named('AgentResponse', s.object({ agent: agentSchema })), description: 'The agent.' },
    handler: (ctx) => {
      const a = ctx.ws.get('agent', ctx.params.agentId);
      if (!a) throw notFound();
      return { status: 200, body: { agent: agentView(a) } };
    },
  }),
];
