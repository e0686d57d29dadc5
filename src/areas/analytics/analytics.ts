/** `GET /api/v1/analytics?from&to` (docs/api.md#analytics): sanitized counts and durations. */
import { s } from '../../http/schema.js';
import { invalid } from '../../http/errors.js';
import { route } from '../../domain/route.js';
import { computeAnalytics } from './counts.js';
import { CONVERSATION_STATUSES, CHANNELS } from '../conversations/conversations.js';
import { ISSUE_STATES } from '../issues.js';
import { PRIORITIES } from '../common.js';
import { answersAnalyticsSchema } from './answers.js';

export const MAX_RANGE_DAYS = 366;
export const DEFAULT_RANGE_DAYS = 30;

/** Midnight UTC of a `YYYY-MM-DD` day the query schema (`format: date`) already checked, ms since the epoch. */
const dayStart = (v: string): number => Date.parse(`${v}T00:00:00.000Z`);
const date = (description: string) => s.string({ format: 'date', description });

const counts = (keys: readonly string[]) =>
  s.object(Object.fromEntries(keys.map((k) => [k, s.integer({ minimum: 0 })])));
const seconds = s.nullable(s.integer({ minimum: 0,
  description: 'Median in seconds; null when there is nothing to measure.' }));
export const analyticsSchema = s.named('Analytics', s.object({
  object: s.enum(['analytics'] as const),
  from: date('The first day of the range (UTC).'), to: date('The last day of the range (UTC), inclusive.'),
  conversations: s.object({
    created: s.integer({ minimum: 0 }), solved: s.integer({ minimum: 0 }),
    byStatus: counts(CONVERSATION_STATUSES), byChannel: counts(CHANNELS),
    medianFirstResponseSeconds: seconds, medianResolutionSeconds: seconds,
  }),
  issues: s.object({ created: s.integer({ minimum: 0 }), closed: s.integer({ minimum: 0 }),
    byState: counts(ISSUE_STATES), byPriority: counts(PRIORITIES) }),
  answers: answersAnalyticsSchema,
  daily: s.array(s.named('AnalyticsDay', s.object({
    date: date('The UTC day.'), conversationsCreated: s.integer({ minimum: 0 }),
      conversationsSolved: s.integer({ minimum: 0 }),
    issuesCreated: s.integer({ minimum: 0 }), issuesClosed: s.integer({ minimum: 0 }),
    answersCreated: s.integer({ minimum: 0 }), handoffsRequested: s.integer({ minimum: 0 }),
  })), { description: 'One entry per day of the range, oldest first: events counted on the UTC day they happened.' }),
}, { description: 'Counts and durations only: never a name, email, subject or body.' }));

export const analyticsRoutes = [
  route({
    method: 'GET', path: '/api/v1/analytics', operationId: 'retrieveAnalytics', tag: 'Analytics',
      scope: 'analytics:read',
    summary: 'Counts, breakdowns, median first-response and resolution times and a daily series for the UTC dates '
      + 'from..to (default: the last 30 days; at most 366 days).',
    query: s.object({
      from: s.optional(date(
        `First day, YYYY-MM-DD (UTC); default: ${DEFAULT_RANGE_DAYS - 1} days before \`to\`. Must not be after \`to\`, `
          + `and the range from..to is at most ${MAX_RANGE_DAYS} days (else 400 \`invalid_request\`).`)),
      to: s.optional(date('Last day, YYYY-MM-DD (UTC), inclusive; default: today (UTC).')),
    }),
    success: { status: 200, schema: analyticsSchema, description: 'The analytics of the range.' },
    handler: (ctx) => {
      const today = Date.parse(new Date(ctx.now).toISOString().slice(0, 10) + 'T00:00:00.000Z');
      const to = ctx.query.to === undefined ? today : dayStart(ctx.query.to);
      const from = ctx.query.from === undefined ? to - (DEFAULT_RANGE_DAYS - 1) * 86_400_000 : dayStart(ctx.query.from);
      if (from > to) throw invalid('from must not be after to', 'query');
      if ((to - from) / 86_400_000 + 1 > MAX_RANGE_DAYS) throw invalid(
        `to must be at most ${MAX_RANGE_DAYS - 1} days after from (a range of at most ${MAX_RANGE_DAYS} days)`,
        'query');
      const iso = (t: number) => new Date(t).toISOString().slice(0, 10);
      return { status: 200, body: computeAnalytics(ctx.ws, iso(from), iso(to)) };
    },
  }),
];
