/** `GET /api/v1/events/stream` (docs/api.md#event-stream): the workspace's events as Server-Sent Events. */
import { s } from '../../http/schema.js';
import { ApiError } from '../../http/errors.js';
import { route } from '../../domain/route.js';
import { EVENT_TYPES, EVENT_WILDCARDS } from './events.js';
import type { EventStreams } from './stream.js';

/** The stream's route on `streams`. */
export function eventStreamRoutes(streams: EventStreams) {
  return [route({
    method: 'GET', path: '/api/v1/events/stream', operationId: 'streamEvents', tag: 'Events', scope: 'events:read',
    summary: 'Stream events as Server-Sent Events: `id:` (the event id), `event:` (its type), `data:` (the event as '
      + 'the events list gives it), in the list\'s order, each once on disk. Send `Last-Event-ID` to resume after an '
      + 'event (within the 30 days events are kept); a comment line comes every 25 s.',
    query: s.object({ type: s.optional(s.enum([...EVENT_TYPES, ...EVENT_WILDCARDS] as const,
      { description: 'Only events of this type, or of every type of one resource (`conversation.*`).' })) }),
    success: { status: 200, contentType: 'text/event-stream', description: 'The stream; it stays open.',
      schema: s.string({ description: 'Server-Sent Events (WHATWG HTML, "Server-sent events").' }) },
    errors: [503],
    handler: (ctx) => {
      if (streams.full) throw new ApiError('service_unavailable', 'too many event streams are open',
        { 'Retry-After': '10' });
      const type = ctx.query.type;
      return { status: 200, body: null, stream: (res, req) => {
        const last = req.headers['last-event-id'];
        streams.start(ctx.ws, res, { lastEventId: typeof last === 'string' && last !== '' ? last : undefined, type,
          now: ctx.now });
      } };
    },
  })];
}
