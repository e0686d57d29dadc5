/**
 * The widget API's limits (docs/api.md#live-chat-limits): 30 new sessions a minute per client address and widget key,
 * 20 messages a minute per session, 3 open streams per session; over them, 429 `rate_limited` with `Retry-After`.
 */
import { ApiError } from '../../http/errors.js';
import { TokenBucketLimiter } from '../../http/ratelimit.js';
import type { Clock } from '../../core/clock.js';

export const SESSIONS_PER_MINUTE = 30;
export const MESSAGES_PER_MINUTE = 20;
export const STREAMS_PER_SESSION = 3;

export class WidgetLimits {
  private readonly sessions: TokenBucketLimiter;
  private readonly messages: TokenBucketLimiter;
  /** Session id → its open streams. */
  private readonly streams = new Map<string, number>();

  constructor(clock: Clock) {
    this.sessions = new TokenBucketLimiter(SESSIONS_PER_MINUTE, SESSIONS_PER_MINUTE, clock);
    this.messages = new TokenBucketLimiter(MESSAGES_PER_MINUTE, MESSAGES_PER_MINUTE, clock);
  }

  /** Spends a new session of `client` (address key) with widget key `agentId`. @throws ApiError 429. */
  session(client: string, agentId: string): void {
    const r = this.sessions.take(`${client} ${agentId}`);
    if (!r.allowed) throw tooMany(`more than ${SESSIONS_PER_MINUTE} new sessions a minute from this address`,
      r.retryAfterSeconds);
  }

  /** Spends a message of session `sessionId`. @throws ApiError 429. */
  message(sessionId: string): void {
    const r = this.messages.take(sessionId);
    if (!r.allowed) throw tooMany(`more than ${MESSAGES_PER_MINUTE} messages a minute in this session`,
      r.retryAfterSeconds);
  }

  /**
   * Counts a stream of `sessionId` open until `release` is called.
   * @throws ApiError 429 when the session has {@link STREAMS_PER_SESSION} open.
   */
  openStream(sessionId: string): () => void {
    const n = this.streams.get(sessionId) ?? 0;
    if (n >= STREAMS_PER_SESSION) throw tooMany(`a session may have at most ${STREAMS_PER_SESSION} open streams`, 5);
    this.streams.set(sessionId, n + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.streams.get(sessionId) ?? 1) - 1;
      if (left <= 0) this.streams.delete(sessionId); else this.streams.set(sessionId, left);
    };
  }
}

const tooMany = (detail: string, retryAfter: number): ApiError => new ApiError('rate_limited', detail,
  { 'Retry-After': String(Math.max(1, retryAfter)) });
