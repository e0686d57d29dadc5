/** The route table: every operation of the API, in one list (the router and the OpenAPI document read it). */
import type { Route } from './http/route.js';
import type { Store } from './store/store.js';
import { conversationRoutes } from './areas/conversations.js';
import { issueRoutes } from './areas/issues.js';
import { definitionRoutes } from './areas/definitions.js';
import { healthRoutes } from './areas/health.js';

export function buildRoutes(store: Store): Route[] {
  return [...healthRoutes(store), ...conversationRoutes, ...issueRoutes, ...definitionRoutes];
}
