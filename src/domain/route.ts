/**
 * The route declarer and handler context of this API's areas: the HTTP layer's (src/http/route.ts) bound to the
 * domain's {@link Workspace}, so handlers read and write it typed
 * (docs/decisions.md#the-route-table-is-the-single-description).
 */
import { routeFor, type Ctx as HttpCtx } from '../http/route.js';
import type { Workspace } from './workspace.js';

/** What an area's handler sees: {@link HttpCtx} with the request's {@link Workspace}. */
export type Ctx<Q = unknown, B = unknown> = HttpCtx<Q, B, Workspace>;

/** Declares a route with its handler's input types inferred from the schemas. */
export const route = routeFor<Workspace>();
