/** Clients (docs/api.md#client-object): read-only aggregates derived from conversations and issues. */
import { s } from '../../http/schema.js';
import { route } from '../../domain/route.js';
import { listSchema, notFound, pageParams, paginate } from '../common.js';

const isoSchema = s.string({ format: 'date-time' });
export const clientSchema = s.named('Client', s.object({
  object: s.enum(['client'] as const), id: s.string(), name: s.string({ description: 'The company, else the email domain.' }), domain: s.nullable(s.string()),
  conversationCount: s.integer({ minimum: 0 }), openCount: s.integer({ minimum: 0 }), waitingCount: s.integer({ minimum: 0 }),
  solvedCount: s.integer({ minimum: 0 }), customerCount: s.integer({ minimum: 0 }), issueCount: s.integer({ minimum: 0 }),
  firstSeenAt: isoSchema, lastActivityAt: isoSchema,
}, { description: 'An aggregate of the customers of one company (or email domain), derived from conversations and issues.' }));

export const clientRoutes = [
  route({
    method: 'GET', path: '/api/v1/clients', operationId: 'listClients', tag: 'Clients', scope: 'clients:read',
    summary: 'List clients (customers grouped by company, else email domain), most recent activity first.',
    query: s.object({ ...pageParams }),
    success: { status: 200, schema: listSchema('clients', clientSchema), description: 'A page of clients.' },
    handler: (ctx) => {
      const page = paginate(ctx, 'clients', ctx.ws.clients.order, 'desc', ctx.query, (id) => ctx.ws.clients.get(id));
      return { status: 200, body: { object: 'list', hasMore: page.hasMore, nextCursor: page.nextCursor, clients: page.items } };
    },
  }),
  route({
    method: 'GET', path: '/api/v1/clients/{clientId}', operationId: 'retrieveClient', tag: 'Clients', scope: 'clients:read',
    summary: 'Retrieve a client aggregate.',
    success: { status: 200, schema: s.named('ClientResponse', s.object({ client: clientSchema })), description: 'The client.' },
    handler: (ctx) => {
      const c = ctx.ws.clients.get(ctx.params.clientId);
      if (!c) throw notFound();
      return { status: 200, body: { client: c } };
    },
  }),
];
