/** Clients (docs/api.md#client-object): read-only aggregates derived from conversations and issues. */
import { s } from '../../http/schema.js';
import { route } from '../../domain/route.js';
import type { Ctx } from '../../domain/route.js';
import { SEP } from '../../store/memory/sorted.js';
import { DEFAULT_LIMIT, listAnswer, listSchema, notFound, pageParams, type Page } from '../common.js';
import type { ClientView } from './aggregates.js';

const isoSchema = s.string({ format: 'date-time' });
export const clientSchema = s.named('Client', s.object({
  object: s.enum(['client'] as const), id: s.string(), name: s.string({
    description: 'The company, else the email domain.' }), domain: s.nullable(s.string()),
  conversationCount: s.integer({ minimum: 0 }), openCount: s.integer({ minimum: 0 }),
    waitingCount: s.integer({ minimum: 0 }),
  solvedCount: s.integer({ minimum: 0 }), customerCount: s.integer({ minimum: 0 }),
    issueCount: s.integer({ minimum: 0 }),
  firstSeenAt: isoSchema, lastActivityAt: isoSchema,
}, { description: 'An aggregate of the customers of one company (or email domain), derived from conversations and '
  + 'issues.' }));

/**
 * A page of clients, most recent activity first (docs/api.md#lists): the walk starts below the cursor's key
 * (`lastActivityAt "\0" id`, the form every list's cursor carries) and stops after `limit` + 1 keys.
 * @throws ApiError 400 for a cursor of another list or workspace.
 */
function clientPage(ctx: Ctx<unknown, unknown>, q: { limit?: number; cursor?: string }): Page<ClientView> {
  const limit = q.limit ?? DEFAULT_LIMIT;
  const from = q.cursor === undefined ? undefined : ctx.cursors.decode(ctx.ws.id, 'clients', q.cursor);
  const items: ClientView[] = [];
  let last = '';
  for (const key of ctx.ws.clients.listed(from)) {
    if (items.length === limit) return { items, hasMore: true,
      nextCursor: ctx.cursors.encode(ctx.ws.id, 'clients', last) };
    const c = ctx.ws.clients.get(key.slice(key.lastIndexOf(SEP) + 1));
    if (c === undefined) continue;
    items.push(c);
    last = key;
  }
  return { items, hasMore: false, nextCursor: null };
}

export const clientRoutes = [
  route({
    method: 'GET', path: '/api/v1/clients', operationId: 'listClients', tag: 'Clients', scope: 'clients:read',
    summary: 'List clients (customers grouped by company, else email domain), most recent activity first.',
    query: s.object({ ...pageParams }),
    success: { status: 200, schema: listSchema('clients', clientSchema), description: 'A page of clients.' },
    handler: (ctx) => {
      const page = clientPage(ctx, ctx.query);
      return listAnswer('clients', page, page.items);
    },
  }),
  route({
    method: 'GET', path: '/api/v1/clients/{clientId}', operationId: 'retrieveClient', tag: 'Clients',
      scope: 'clients:read',
    summary: 'Retrieve a client aggregate.',
    success: { status: 200, schema: s.named('ClientResponse', s.object({ client: clientSchema })),
      description: 'The client.' },
    handler: (ctx) => {
      const c = ctx.ws.clients.get(ctx.params.clientId);
      if (!c) throw notFound();
      return { status: 200, body: { client: c } };
    },
  }),
];
