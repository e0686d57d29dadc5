/** `GET /api/v1/usage` (docs/api.md#usage): the current UTC month's API requests and live API checks. */
import { s } from '../../http/schema.js';
import { route } from '../../domain/route.js';
import type { UsageCounter } from './counter.js';

export const usageSchema = s.named('Usage', s.object({
  object: s.enum(['usage'] as const),
  periodStart: s.string({ format: 'date-time', description: 'The first instant of the current UTC month.' }),
  periodEnd: s.string({ format: 'date-time', description: 'The first instant of the next UTC month.' }),
  apiRequests: s.integer({ minimum: 0,
    description: 'Authenticated API requests of the workspace this month, this one included.' }),
  liveApiChecks: s.integer({ minimum: 0, description: 'Live API checks sent this month, failed ones included.' }),
}));

export function usageRoutes(usage: UsageCounter) {
  return [
    route({
      method: 'GET', path: '/api/v1/usage', operationId: 'retrieveUsage', tag: 'Usage', scope: 'usage:read',
      summary: 'Current UTC month: authenticated API requests (this one included) and live API checks of the ' +
        'workspace.',
      success: { status: 200, schema: usageSchema, description: 'The usage of the current month.' },
      handler: (ctx) => ({ status: 200, body: { object: 'usage', ...usage.current(ctx.ws.id) } }),
    }),
  ];
}
