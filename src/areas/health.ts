/** `GET /healthz` (DESIGN §2): no authentication; 503 once storage has failed. */
import { s } from '../http/schema.js';
import { route } from '../http/route.js';
import type { Store } from '../store/store.js';

export function healthRoutes(store: Store) {
  return [
    route({
      method: 'GET', path: '/healthz', operationId: 'health', tag: 'Health', scope: null,
      summary: 'Liveness: `{status:"ok"}`, or 503 `{status:"storage_failed"}` once the server refuses writes.',
      success: { status: 200, schema: s.object({ status: s.enum(['ok', 'storage_failed'] as const) }), description: 'The server is up.' },
      handler: () => {
        const failed = store.system.failed || [...store.workspaces.values()].some((w) => w.db.failed);
        return failed ? { status: 503, body: { status: 'storage_failed' } } : { status: 200, body: { status: 'ok' } };
      },
    }),
  ];
}
