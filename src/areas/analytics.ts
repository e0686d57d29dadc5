/** `GET /api/v1/analytics?from&to` (docs/api.md#analytics): sanitized counts and durations. */
import { s } from '../http/schema.js';
import { invalid } from '../http/errors.js';
import { route } from '../http/route.js';
import { computeAnalytics } from '../analytics.js';
import { CONVERSATION_STATUSES, CHANNELS } from './conversations.js';
import { ISSUE_STATES } from './issues.js';
import { PRIORITIES } from './common.js';

const DATE = /^\d{4}-\d{2}-\d{2}$/;
export const MAX_RANGE_DAYS = 366;
export const DEFAULT_RANGE_DAYS = 30;

/** Parses a `YYYY-MM-DD` query value that names a real day. @throws ApiError 400 */
function parseDate(name: string, v: string): number {
  const t = Date.parse(`${v}T00:00:00.000Z`);
  if (!DATE.test(v) || Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== v) throw invalid(`${name} must be a date such as 2026-06-29`, 'query');
  return t;
}

const counts = (keys: readonly string[]) => s.object(Object.fromEntries(keys.map((k) => [k, s.integer({ minimum: 0 })])));
const seconds = s.nullable(s.integer({ minimum: 0, description: 'Median in seconds; null when there is nothing to measure.' }));
export const analyticsSchema = s.object({
  object: s.enum(['analytics'] as const),
  from: s.string(), to: s.string(),
  conversations: s.object({
    created: s.integer({ minimum: 0 }), solved: s.integer({ minimum: 0 }),
    byStatus: counts(CONVERSATION_STATUSES), byChannel: counts(CHANNELS),
    medianFirstResponseSeconds: seconds, medianResolutionSeconds: seconds,
  }),
  issues: s.object({ created: s.integer({ minimum: 0 }), closed: s.integer({ minimum: 0 }), byState: counts(ISSUE_STATES), byPriority: counts(PRIORITIES) }),
  daily: s.array(s.object({
    date: s.string(), conversationsCreated: s.integer({ minimum: 0 }), conversationsSolved: s.integer({ minimum: 0 }),
    issuesCreated: s.integer({ minimum: 0 }), issuesClosed: s.integer({ minimum: 0 }),
  })),
});

export const analyticsRoutes = [
  route({
    method: 'GET', path: '/api/v1/analytics', operationId: 'retrieveAnalytics', tag: 'Analytics', scope: 'analytics:read',
    summary: 'Counts, breakdowns, median first-response and resolution times and a daily series for the UTC dates from..to (default: the last 30 days; at most 366 days).',
    query: s.object({
      from: s.optional(s.string({ maxLength: 10, description: 'First day, YYYY-MM-DD (UTC).' })),
      to: s.optional(s.string({ maxLength: 10, description: 'Last day, YYYY-MM-DD (UTC), inclusive.' })),
    }),
    success: { status: 200, schema: analyticsSchema, description: 'The analytics of the range.' },
    handler: (ctx) => {
      const today = Date.parse(new Date(ctx.now).toISOString().slice(0, 10) + 'T00:00:00.000Z');
      const to = ctx.query.to === undefined ? today : parseDate('to', ctx.query.to);
      const from = ctx.query.from === undefined ? to - (DEFAULT_RANGE_DAYS - 1) * 86_400_000 : parseDate('from', ctx.query.from);
      if (from > to) throw invalid('from must not be after to', 'query');
      if ((to - from) / 86_400_000 + 1 > MAX_RANGE_DAYS) throw invalid(`to must be at most ${MAX_RANGE_DAYS - 1} days after from (a range of at most ${MAX_RANGE_DAYS} days)`, 'query');
      const iso = (t: number) => new Date(t).toISOString().slice(0, 10);
      return { status: 200, body: computeAnalytics(ctx.ws, iso(from), iso(to)) };
    },
  }),
];
