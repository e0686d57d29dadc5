/** The route table: every operation of the API, in one list (the router and the OpenAPI document read it). */
import type { Route } from '../http/route.js';
import type { RouteDeps } from '../areas/common.js';
import { conversationRoutes } from '../areas/conversations/conversations.js';
import { issueRoutes } from '../areas/issues.js';
import { definitionRoutes, definitionListRoutes } from '../areas/definitions.js';
import { agentRoutes } from '../areas/agents.js';
import { clientRoutes } from '../areas/clients/clients.js';
import { analyticsRoutes } from '../areas/analytics/analytics.js';
import { healthRoutes } from '../areas/health.js';
import { sourceRoutes } from '../areas/sources/sources.js';
import { openapiRoutes } from '../openapi/routes.js';
import { usageRoutes } from '../areas/usage/usage.js';
import { liveCheckRoutes } from '../areas/sources/liveChecks.js';
import { eventRoutes } from '../areas/events/events.js';
import { eventStreamRoutes } from '../areas/events/streamRoute.js';
import { webhookRoutes } from '../areas/webhooks/webhooks.js';
import { answerRoutes } from '../areas/answers/answers.js';
import { widgetRoutes } from '../areas/widget/widget.js';


export function buildRoutes(deps: RouteDeps): Route[] {
  const routes: Route[] = [...healthRoutes(deps.store), ...conversationRoutes, ...issueRoutes, ...definitionRoutes,
    ...definitionListRoutes, ...agentRoutes, ...clientRoutes, ...analyticsRoutes, ...sourceRoutes(deps),
    ...usageRoutes(deps.usage), ...liveCheckRoutes(deps), ...eventStreamRoutes(deps.streams), ...eventRoutes,
    ...webhookRoutes(deps), ...answerRoutes(deps), ...widgetRoutes(deps)];
  // The document describes the whole table, its own route included.
  routes.push(...openapiRoutes(() => routes));
  return routes;
}
