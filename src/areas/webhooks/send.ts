/**
 * One delivery attempt over HTTP (docs/api.md#webhook-deliveries): `POST` of the event's JSON to
 * the endpoint URL. The host is checked just before every attempt
 * (docs/api.md#webhook-endpoint-urls), and a new connection goes to the addresses checked (it is
 * pinned to them as source fetches pin theirs, so DNS is not asked twice); an idle keep-alive
 * connection of the same endpoint, made to an address checked earlier, may carry the attempt
 * instead — only once the host passed the check again. The outcome is decided at the answer's status line: a 2xx
 * within the timeout succeeds; anything else — a redirect (never followed), another status, no
 * answer in time, a refused or reset connection, a refused address — fails. The answer's body
 * is read and thrown away.
 */
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { performance } from 'node:perf_hooks';
import { fixedLookup } from '../../ingest/fetch/fetch.js';
import { unreachableMessage } from '../../ingest/fetch/addresses.js';
import { deliveryAddresses, hostOf } from './urls.js';

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
   * every attempt opens a connection of its own.
   */
  agent?: http.Agent;
}

const USER_AGENT = 'support-workspace-webhooks/1.0';

/**
 * Sends `body` to `url` with `headers` (the caller's signature headers; content-type,
 * content-length and user-agent are added). Never throws: every failure is an outcome.
 */
export async function sendAttempt(url: string, body: string, headers: Record<string, string>, opts: SendOptions): Promise<AttemptOutcome> {
  const started = performance.now();
  const elapsed = (): number => Math.max(0, Math.round(performance.now() - started));
  const fail = (error: string, status: number | null = null, retryAfter?: string): AttemptOutcome => ({ ok: false, status, error, retryAfter, durationMs: elapsed() });
  let u: URL;
  try { u = new URL(url); } catch { return fail('the endpoint URL is not a valid URL'); }
  let timedOut = false;
  let req: http.ClientRequest | undefined;
  // One timer covers DNS, connecting, sending, the status line and the body's drain: when it
  // fires, the request (and its socket) is destroyed. No AbortSignal: its listeners cost more
  // than the attempt's own work on a busy endpoint.
  const timer = setTimeout(() => { timedOut = true; req?.destroy(); }, opts.timeoutMs);
  let draining = false;
  try {
    const addresses = await deliveryAddresses(u, opts.allowPrivate);
    if (!addresses) return fail(unreachableMessage(u.href));
    if (timedOut) return fail(`no answer within ${opts.timeoutMs} ms`);
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const payload = Buffer.from(body, 'utf8');
      req = (u.protocol === 'https:' ? https : http).request({
        protocol: u.protocol, hostname: hostOf(u), port: u.port || undefined, path: `${u.pathname}${u.search}`, method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(payload.length), 'user-agent': USER_AGENT },
        // New connections go to the checked addresses; the pool only holds connections made so.
        agent: opts.agent ?? false,
        lookup: fixedLookup(addresses) as unknown as net.LookupFunction,
      });
      req.once('response', resolve);
      req.on('error', reject);
      req.end(payload);
    });
    const status = res.statusCode ?? 0;
    // The body is not needed: drain it in the background, cut by the same timer.
    res.on('error', () => {});
    draining = true;
    res.once('close', () => clearTimeout(timer));
    res.resume();
    if (status >= 200 && status <= 299) return { ok: true, status, error: null, durationMs: elapsed() };
    const header = res.headers['retry-after'];
    const retryAfter = status === 429 || status === 503 ? (Array.isArray(header) ? header[0] : header) : undefined;
    const text = res.statusMessage ? ` ${res.statusMessage}` : '';
    if (status >= 300 && status <= 399) return fail(`the endpoint answered HTTP ${status}${text}; redirects are not followed`, status);
    return fail(`the endpoint answered HTTP ${status}${text}`, status, retryAfter);
  } catch (e) {
    if (timedOut) return fail(`no answer within ${opts.timeoutMs} ms`);
    const err = e as NodeJS.ErrnoException;
    return fail(`could not connect to the endpoint: ${err.code ?? err.message}`);
  } finally {
    if (!draining) clearTimeout(timer);
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
