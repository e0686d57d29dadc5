/**
 * One delivery attempt over HTTP (docs/api.md#webhook-deliveries): `POST` of the event's JSON to
 * the endpoint URL. The host is checked just before every attempt
 * (docs/api.md#webhook-endpoint-urls), and a new connection goes to the addresses checked (it is
 * pinned to them as source fetches pin theirs, so DNS is not asked twice); an idle keep-alive
 * connection of the same endpoint may carry the attempt instead, only when the address it is
 * connected to is among those just checked. The outcome is decided at the answer's status line:
 * a 2xx within the timeout succeeds; anything else — a redirect (never followed), another
 * status, no answer in time, a refused or reset connection, a refused address, an answer that
 * is not HTTP/1.x — fails. The answer's body is read and thrown away. The HTTP client is our own
 * (src/areas/webhooks/http1.ts, docs/decisions.md#a-lean-http-client-for-deliveries).
 */
import { performance } from 'node:perf_hooks';
import { unreachableMessage } from '../../ingest/fetch/addresses.js';
import { deliveryAddresses, knownAddresses } from './urls.js';
import type { HostResolver } from '../../ingest/fetch/hosts.js';
import { TimeoutError, exchange, headerLines, requestBytes } from './http1.js';
import { NotSentError, type ConnectionPool } from './pool.js';
import { AnswerError } from './answer.js';

/** What one attempt gave. */
export interface AttemptOutcome {
  /** 2xx within the timeout. */
  ok: boolean;
  /** The answer's HTTP status; null when none came. */
  status: number | null;
  /** Why it failed, a sentence; null when it succeeded. */
  error: string | null;
  /** The answer's `Retry-After` header, as sent (read on 429 and 503 only). */
  retryAfter?: string;
  /** Wall time until the status line (or the failure), ms. */
  durationMs: number;
  /** True when the attempt was never made (the delivery worker dropped it): nothing to record. */
  notSent?: boolean;
}

/** Options of {@link sendAttempt}. */
export interface SendOptions {
  /** `WEBHOOK_TIMEOUT_MS`: DNS, connecting, sending and the answer's status line, ms. */
  timeoutMs: number;
  /** `WEBHOOK_ALLOW_PRIVATE`. */
  allowPrivate: boolean;
  /**
   * The endpoint's keep-alive pool (one per endpoint and URL, made by the caller); without one,
   * every attempt opens a connection of its own and closes it after the answer.
   */
  pool?: ConnectionPool;
  /** Certificate authorities trusted besides the system's (tests' own). */
  ca?: string | Buffer;
  /** Resolves the endpoint's host (tests' own; default this thread's, docs/sources.md#name-resolution). */
  hosts?: HostResolver;
}

const USER_AGENT = 'support-workspace-webhooks/1.0';
/** The headers every attempt sends besides the caller's, as lines made once. */
const FIXED_LINES = headerLines({ 'content-type': 'application/json', 'user-agent': USER_AGENT });

/**
 * Sends `body` to `url` (its text, or as parsed once by the caller) with `headers` (the caller's
 * signature headers; content-type, content-length, host and user-agent are added, so `headers`
 * holds none of those four). Never throws: every failure is an outcome.
 */
export async function sendAttempt(url: string | URL, body: string | Uint8Array, headers: Record<string, string>, opts: SendOptions): Promise<AttemptOutcome> {
  const started = performance.now();
  const elapsed = (): number => Math.max(0, Math.round(performance.now() - started));
  const fail = (error: string, status: number | null = null, retryAfter?: string): AttemptOutcome => ({ ok: false, status, error, retryAfter, durationMs: elapsed() });
  const timedOut = (): AttemptOutcome => fail(`no answer within ${opts.timeoutMs} ms`);
  let u: URL;
  if (typeof url !== 'string') u = url;
  else try { u = new URL(url); } catch { return fail('the endpoint URL is not a valid URL'); }
  let request: Buffer;
  try {
    request = requestBytes(u, headers, body, FIXED_LINES);
  } catch (e) { return fail((e as Error).message); }
  // One time limit covers the host check (DNS), connecting, sending, the status line and the
  // body's drain: a name whose servers do not answer fails the attempt when the time is up.
  let addresses = knownAddresses(u, opts.allowPrivate, opts.hosts);
  if (addresses === null) {
    let timer: NodeJS.Timeout | undefined;
    const asked = await Promise.race([
      deliveryAddresses(u, opts.allowPrivate, opts.hosts),
      new Promise<'timeout'>((resolve) => { timer = setTimeout(resolve, opts.timeoutMs, 'timeout'); }),
    ]);
    clearTimeout(timer);
    if (asked === 'timeout') return timedOut();
    addresses = asked;
  }
  if (!addresses) return fail(unreachableMessage(u.href));
  const left = opts.timeoutMs - (performance.now() - started);
  if (left <= 0) return timedOut();
  try {
    const head = await exchange(opts.pool ?? null, { url: u, addresses, ca: opts.ca }, request, left);
    const status = head.status;
    if (status >= 200 && status <= 299) return { ok: true, status, error: null, durationMs: elapsed() };
    const retryAfter = status === 429 || status === 503 ? head.headers.get('retry-after') : undefined;
    const text = head.reason ? ` ${head.reason}` : '';
    if (status >= 300 && status <= 399) return fail(`the endpoint answered HTTP ${status}${text}; redirects are not followed`, status);
    return fail(`the endpoint answered HTTP ${status}${text}`, status, retryAfter);
  } catch (e) {
    if (e instanceof TimeoutError) return timedOut();
    if (e instanceof NotSentError) return { ok: false, status: null, error: 'not sent', durationMs: 0, notSent: true };
    if (e instanceof AnswerError) return fail(`the endpoint's answer is not valid HTTP/1.1: ${e.message}`);
    const err = e as NodeJS.ErrnoException;
    return fail(`could not connect to the endpoint: ${err.code ?? err.message}`);
  }
}

/**
 * A `Retry-After` value (delay in seconds, or an HTTP date) as an instant, ms; undefined when
 * it is neither. `now` is the clock's time.
 */
export function retryAfterAt(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d{1,10}$/.test(v)) return now + Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) || !/[a-z]/i.test(v) ? undefined : at;
}
