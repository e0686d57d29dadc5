/**
 * One settings-area request as the pages see it (docs/web.md): the path and query, cookies,
 * the session (resumed at most once), form reading with the origin and CSRF checks
 * (docs/security.md#csrf), cookies to set, and the answer types a page returns.
 */
import type { IncomingMessage } from 'node:http';
import type { Html } from './html.js';
import { cookies, readForm, sameOrigin, WebError } from './forms.js';
import type { NotOwned } from '../metrics/serverMetrics.js';
import { PRE_COOKIE, SESSION_COOKIE, Sessions, type SignedIn } from './sessions.js';
import type { SignInLimits } from './signInLimits.js';
import type { TokenBucketLimiter } from '../http/ratelimit.js';
import type { Passwords } from './passwords.js';
import type { Viewer } from './layout.js';
import type { Logger } from '../core/logger.js';
import type { Store } from '../store/store.js';
import type { Clock } from '../core/clock.js';
import type { SecretBox } from '../core/secrets.js';
import type { ShownOnce } from './shownOnce.js';
import type { Operations } from './operations.js';
import { roleOf } from './users.js';

/** An answer: a page with its status, or a 303 redirect. */
export type WebAnswer =
  | { kind: 'page'; status: number; body: Html; headers?: Record<string, string> }
  | { kind: 'redirect'; location: string };

/** A page answer. */
export const pageAnswer = (status: number, body: Html, headers?: Record<string, string>): WebAnswer =>
  ({ kind: 'page', status, body, headers });
/** A 303 See Other to `location` (a path of ours). */
export const redirect = (location: string): WebAnswer => ({ kind: 'redirect', location });

/** Thrown by a page that needs a session when there is none: answered 303 to the sign-in page. */
export class SignInRequired extends Error {}

/** What the pages share: the store, the clock, sessions, the log, and how to name the client in it. */
export interface WebServices {
  store: Store;
  clock: Clock;
  logger: Logger;
  sessions: Sessions;
  /** The sign-in limits per email, address and device (docs/security.md#lockout). */
  limits: SignInLimits;
  /** One token a minute per event and client address, for events a flood repeats ({@link WebCtx.security}). */
  eventLogBudget: TokenBucketLimiter;
  /** Hashes and checks passwords on the hasher's own lanes (docs/security.md#sign-in-cost). */
  passwords: Passwords;
  /** `PUBLIC_URL` (or `http://HOST:PORT`), without a trailing slash. */
  publicUrl: string;
  /** Seals webhook secrets (docs/web.md#webhooks-page). */
  secrets: SecretBox;
  /** `WEBHOOK_ALLOW_PRIVATE`. */
  webhookAllowPrivate: boolean;
  /** `CELL_NAME` (docs/deployment.md#several-machines), or null outside a cell. */
  cell?: string | null;
  /** Told of each request for a workspace this server does not serve (metrics). */
  notOwned?: NotOwned;
  /** Secrets waiting for the one page that shows them (docs/web.md#shown-once). */
  shownOnce: ShownOnce;
  /** The API's operations, run for the sources pages (docs/web.md#sources-in-the-browser). */
  operations: Operations;
}

export class WebCtx {
  /** `Set-Cookie` values to send with the answer. */
  readonly setCookies: string[] = [];
  private readonly jar: Map<string, string>;
  private resumed: SignedIn | undefined | null = null;

  constructor(readonly req: IncomingMessage, readonly path: string, readonly query: URLSearchParams,
    readonly https: boolean,
    readonly services: WebServices, readonly requestId: string, readonly client: string) {
    this.jar = cookies(req);
  }

  /** The signed-in session of this request, if any (activity counted once per request). */
  session(): SignedIn | undefined {
    if (this.resumed === null) {
      const token = this.jar.get(SESSION_COOKIE);
      this.resumed = this.services.sessions.resume(token);
      if (this.resumed === undefined && token) this.services.notOwned?.('unknown_credential');
    }
    return this.resumed;
  }

  /** The session, or a redirect to the sign-in page. @throws SignInRequired */
  requireSession(): SignedIn {
    const s = this.session();
    if (!s) throw new SignInRequired();
    return s;
  }

  /**
   * The session of an owner (docs/web.md#people). @throws SignInRequired without a session; WebError 403 for a
   * member.
   */
  requireOwner(): SignedIn {
    const s = this.requireSession();
    if (roleOf(s.user) !== 'owner') throw new WebError(403, 'Only an owner of this workspace can manage its users.');
    return s;
  }

  /** The top bar's view of the signed-in user. */
  viewer(s: SignedIn): Viewer { return { email: s.user.email, csrf: s.csrf, owner: roleOf(s.user) === 'owner' }; }

  /**
   * The CSRF token of a pre-session form (sign-in, activation): bound to this browser's
   * `sw_pre` nonce, which is set now if the browser has none.
   */
  preCsrf(): string {
    let nonce = this.jar.get(PRE_COOKIE);
    if (nonce === undefined || !/^[0-9A-Za-z]{43}$/.test(nonce)) {
      nonce = Sessions.nonce();
      this.jar.set(PRE_COOKIE, nonce);
      this.cookie(PRE_COOKIE, nonce);
    }
    return this.services.sessions.preCsrf(nonce);
  }

  /**
   * Reads a POSTed form and checks that it came from one of our pages: the origin, then the
   * `csrf` field against the session's token (`session`) or the browser's pre-session token
   * (`pre`). A form posted without a session where one is needed redirects to the sign-in page.
   * `limit`: the largest body in bytes (default 16 KiB).
   * @throws WebError 403 (foreign origin, missing or wrong token), 400/413/415 (the body); SignInRequired.
   */
  async form(kind: 'session' | 'pre', limit?: number): Promise<URLSearchParams> {
    const form = await readForm(this.req, limit);
    if (!sameOrigin(this.req, this.https, this.services.publicUrl)) {
      this.security('csrf.refused', { reason: 'origin' });
      throw new WebError(403, 'This form was not sent from a page of this server, so nothing was changed.');
    }
    let expected: string | undefined;
    if (kind === 'session') expected = this.requireSession().csrf;
    else {
      const nonce = this.jar.get(PRE_COOKIE);
      expected = nonce === undefined ? undefined : this.services.sessions.preCsrf(nonce);
    }
    const given = form.getAll('csrf');
    if (expected === undefined || given.length !== 1 || !Sessions.sameToken(given[0], expected)) {
      this.security('csrf.refused', { reason: expected === undefined ? 'no cookie' : 'token' });
      throw new WebError(403, 'This form has expired or did not come from this browser\'s session, so nothing was '
        + 'changed. Reload the page and try again.');
    }
    return form;
  }

  /**
   * Adds a cookie to the answer: HttpOnly, SameSite=Strict, `path` (default `/settings`), Secure
   * over https; `maxAge` in seconds (0 deletes it; none: it ends with the browser).
   */
  cookie(name: string, value: string, maxAge?: number, path = '/settings'): void {
    const secure = this.https ? '; Secure' : '';
    const age = maxAge === undefined ? '' : `; Max-Age=${maxAge}`;
    this.setCookies.push(`${name}=${value}; HttpOnly; SameSite=Strict; Path=${path}${secure}${age}`);
  }

  /** The value of the request's cookie `name`. */
  cookieValue(name: string): string | undefined { return this.jar.get(name); }

  /**
   * Logs a security event (docs/security.md#security-events): never a password, token or key. `'once a minute'`
   * logs an event that a flood repeats at most once a minute per event and client address.
   */
  security(event: string, fields: Record<string, unknown> = {}, rate?: 'once a minute'): void {
    if (rate && !this.services.eventLogBudget.take(`${event} ${this.client}`).allowed) return;
    this.services.logger.info('security event', { event, requestId: this.requestId, client: this.client, ...fields });
  }
}
