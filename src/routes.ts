/** The route table: every operation of the API, in one list (the router and the OpenAPI document read it). */
import type { Route } from './http/route.js';
import type { Store } from './store/store.js';
import { conversationRoutes } from './areas/conversations.js';
import { issueRoutes } from './areas/issues.js';
import { definitionRoutes, definitionListRoutes } from './areas/definitions.js';
import { agentRoutes } from './areas/agents.js';
import { clientRoutes } from './areas/clients.js';
import { analyticsRoutes } from './areas/analytics.js';
import { healthRoutes } from './areas/health.js';
import { sourceRoutes } from './areas/sources.js';
import { openapiRoutes } from './areas/openapi.js';
import type { Config } from './config.js';
import type { SecretBox } from './secrets.js';
import type { Logger } from './logger.js';
import type { Analyzer } from './ingest/analyze.js';
import type { UsageCounter } from './usage.js';
import { usageRoutes } from './areas/usage.js';
import { checkRoutes } from './areas/checks.js';

export interface RouteDeps { store: Store; config: Config; secrets: SecretBox; logger: Logger; analyzer: Analyzer; usage: UsageCounter }

export function buildRoutes(deps: RouteDeps): Route[] {
  const routes: Route[] = [...healthRoutes(deps.store), ...conversationRoutes, ...issueRoutes, ...definitionRoutes, ...definitionListRoutes, ...agentRoutes, ...clientRoutes, ...analyticsRoutes, ...sourceRoutes(deps), ...usageRoutes(deps.usage), ...checkRoutes(deps)];
  // The document describes the whole table, its own route included.
  routes.push(...openapiRoutes(() => routes));
  return routes;
}
