/** The route table: every operation of the API, in one list (the router and the OpenAPI document read it). */
import type { Route } from './http/route.js';
import type { Store } from './store/store.js';
import { conversationRoutes } from './areas/conversations.js';
import { issueRoutes } from './areas/issues.js';
import { definitionRoutes } from './areas/definitions.js';
import { healthRoutes } from './areas/health.js';
import { sourceRoutes } from './areas/sources.js';
import type { Config } from './config.js';
import type { SecretBox } from './secrets.js';
import type { Logger } from './logger.js';
import type { Analyzer } from './ingest/analyze.js';
import type { UsageCounter } from './usage.js';
import { usageRoutes } from './areas/usage.js';

export interface RouteDeps { store: Store; config: Config; secrets: SecretBox; logger: Logger; analyzer: Analyzer; usage: UsageCounter }

export function buildRoutes(deps: RouteDeps): Route[] {
  return [...healthRoutes(deps.store), ...conversationRoutes, ...issueRoutes, ...definitionRoutes, ...sourceRoutes(deps), ...usageRoutes(deps.usage)];
}
