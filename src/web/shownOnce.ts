/**
 * Secrets shown once after a post/redirect/get (docs/web.md#shown-once): a form that makes a key,
 * a webhook endpoint or an activation link answers 303 to a page that shows the secret; the secret
 * waits here, in memory only, bound to the session that made it, and is gone once that page shows it
 * or after 10 minutes. Nothing of it is stored on disk; a restart forgets it.
 */

/** How long a secret waits for its page (ms). */
export const SHOWN_ONCE_TTL_MS = 10 * 60_000;
/** At most this many secrets wait at once; past it the oldest is dropped. */
const MAX_WAITING = 10_000;

interface Waiting { secret: string; session: string; until: number }

/** The secrets waiting for their one view, by what they belong to (`key/ID`, `webhook/ID`, `invite/ID`). */
export class ShownOnce {
  private readonly waiting = new Map<string, Waiting>();

  /** Keeps `secret` of `what` for session `session` until shown or `now` + {@link SHOWN_ONCE_TTL_MS} (ms). */
  put(what: string, session: string, secret: string, now: number): void {
    this.prune(now);
    this.waiting.set(what, { secret, session, until: now + SHOWN_ONCE_TTL_MS });
    if (this.waiting.size > MAX_WAITING) this.waiting.delete(this.waiting.keys().next().value as string);
  }

  /**
   * The secret of `what` when it waits for session `session` and has not expired at `now`; it is forgotten
   * then, so a second call (a reload, the back button) gets undefined. Another session's call gets undefined and
   * leaves it waiting.
   */
  take(what: string, session: string, now: number): string | undefined {
    const w = this.waiting.get(what);
    if (!w || w.session !== session) return undefined;
    this.waiting.delete(what);
    return w.until > now ? w.secret : undefined;
  }

  private prune(now: number): void {
    for (const [k, w] of this.waiting) if (w.until <= now) this.waiting.delete(k);
  }
}
