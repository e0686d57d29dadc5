/** `GET /healthz` (docs/api.md#health): no authentication; 503 once storage has failed. */
import { s } from '../http/schema.js';
import { route } from '../domain/route.js';
import { ApiError } from '../http/errors.js';
import type { Store } from '../store/store.js';

export function healthRoutes(store: Store) {
  return [
    route({
      method: 'GET', path: '/healthz', operationId: 'health', tag: 'Health', scope: null,
      summary: 'Liveness: `{status:"ok"}`, or 503 `service_unavailable` once the server refuses writes after a ' +
        'storage failure.',
      success: { status: 200, schema: s.named('Health', s.object({ status: s.enum(['ok'] as const) })),
        description: 'The server is up.' },
      handler: () => {
        const failed = store.system.failed || [...store.workspaces.values()].some((w) => w.db.failed);
        if (failed) throw new ApiError('service_unavailable',
          'writes are refused after a storage failure; see the server log');
        return { status: 200, body: { status: 'ok' } };
      },
    }),
  ];
}
