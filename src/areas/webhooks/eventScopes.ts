/**
 * Which read scope an event type needs (docs/api.md#webhooks): a key may subscribe an endpoint only to events it could
 * read through the API, so `webhooks:write` alone cannot receive conversations.
 */
import { ApiError } from '../../http/errors.js';
import { hasScope } from '../../auth/keys.js';
import { EVENT_TYPES, type EventType } from '../events/events.js';

/** The read scope of each event type's resource. */
export function readScopeOf(type: EventType): string {
  if (type.startsWith('issue.')) return 'issues:read';
  if (type.startsWith('source.')) return 'sources:read';
  return 'conversations:read'; // conversation.*, message.created
}

/**
 * Refuses a subscription to `events` (types or `*`, which stands for every type) that the key's `scopes` could not
 * read. @throws ApiError 403 `insufficient_scope` naming the first missing scope and its event type.
 */
export function assertMaySubscribe(scopes: readonly string[], events: readonly string[]): void {
  const types = events.includes('*') ? EVENT_TYPES : events as readonly EventType[];
  for (const type of types) {
    const scope = readScopeOf(type);
    if (!hasScope(scopes, scope)) {
      throw new ApiError('insufficient_scope', `subscribing to ${events.includes('*') ? '*' : type} needs ${scope}`);
    }
  }
}
