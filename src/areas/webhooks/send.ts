/**
 * One delivery attempt (docs/api.md#webhook-deliveries): `POST` of the event's JSON to the endpoint on node:http's
 * keep-alive agents (./connections.ts), to the addresses checked just before (docs/api.md#webhook-endpoint-urls). The
 * outcome is decided at the answer's status line; what a receiver may make it read is bounded: the answer's head with
 * its interim (1xx) answers at 16 KiB, its body at 64 KiB, then the connection is closed.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fixedLookup, unreachableMessage, type ResolvedAddress } from '../../ingest/fetch/addresses.js';
import type { HostResolver } from '../../ingest/fetch/hosts.js';
import { deliveryAddresses, hostOf, knownAddresses } from './urls.js';
import { DeliveryAgents } from './connections.js';

/** The most bytes of an answer's head, interim answers included (docs/api.md#webhook-deliveries). */
export const MAX_HEAD_BYTES = 16 * 1024;
/** The most bytes of an answer's body read before the connection is closed. */
export const MAX_BODY_BYTES = 64 * 1024;
const USER_AGENT = 'support-workspace-webhooks/1.0';

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
  /** The attempt was stopped before any of it was written to a socket: nothing to record. */
  notSent?: boolean;
}

/** The settings of every attempt. */
export interface AttemptSettings {
  /** `WEBHOOK_TIMEOUT_MS`: the host check, a connection, sending and the status line, ms. */
  timeoutMs: number;
  /** `WEBHOOK_ALLOW_PRIVATE`. */
  allowPrivate: boolean;
  /** The keep-alive agents (without them, the attempt has a connection of its own). */
  agents?: DeliveryAgents;
  /** Certificate authorities trusted besides the system's (tests' own). */
  ca?: string | Buffer;
  /** Resolves endpoint hosts (tests' own; default this thread's, docs/sources.md#name-resolution). */
  hosts?: HostResolver;
}

/** One attempt under way: its outcome, and a way to stop it while none of it is written. */
export interface Attempt {
  readonly outcome: Promise<AttemptOutcome>;
  /** Whether bytes of the request may have reached a socket (then it can no longer be stopped unsent). */
  readonly written: boolean;
  /** Stops the attempt when nothing of it is written yet (its outcome is then `notSent`); false when too late. */
  stop(): boolean;
  /** Cuts the attempt whatever its state (the dispatcher is closing); its outcome says so. */
  cut(): void;
}

/**
 * Starts the attempt of sending `body` to endpoint `endpointId` at `url` with `headers` (the signature headers;
 * content-type, content-length and user-agent are added). Its outcome never rejects: every failure is an outcome.
 */
export function startAttempt(
  endpointId: string, url: URL, body: Uint8Array, headers: Record<string, string>, s: AttemptSettings,
): Attempt {
  const started = performance.now();
  const elapsed = (): number => Math.max(0, Math.round(performance.now() - started));
  let req: http.ClientRequest | null = null;
  let written = false;
  let settled = false;
  let finish!: (o: AttemptOutcome) => void;
  const outcome = new Promise<AttemptOutcome>((resolve) => {
    finish = (o) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
  });
  const fail = (error: string, status: number | null = null): void =>
    finish({ ok: false, status, error, durationMs: elapsed() });
  const headTooLarge = `the endpoint's answer head is over ${MAX_HEAD_BYTES} bytes (interim answers included)`;
  /** The outcome decided at the status line, while the body is read. */
  let answered: AttemptOutcome | null = null;
  const timer = setTimeout(() => {
    req?.destroy();
    if (answered !== null) finish(answered); else fail(`no answer within ${s.timeoutMs} ms`);
  }, s.timeoutMs);

  /** One request on the agent; `again`: a kept connection the receiver had closed is replaced once. */
  const send = (addresses: readonly ResolvedAddress[], again: boolean): void => {
    const agents = s.agents;
    const options: https.RequestOptions & { pin: string } = {
      protocol: url.protocol, hostname: hostOf(url), port: url.port || undefined, path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: {
        ...headers, 'content-type': 'application/json', 'content-length': String(body.length), 'user-agent': USER_AGENT,
      },
      agent: agents === undefined ? false : url.protocol === 'https:' ? agents.https : agents.http,
      lookup: fixedLookup(addresses) as unknown as LookupFunction,
      maxHeaderSize: MAX_HEAD_BYTES, ca: s.ca, pin: DeliveryAgents.pin(endpointId, addresses),
    };
    const r = (url.protocol === 'https:' ? https : http).request(options);
    req = r;
    let headBytes = 0;
    r.on('socket', (sock) => {
      if (!sock.connecting) { written = true; return; }
      sock.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => { written = true; });
    });
    r.on('information', (info) => {
      headBytes += headSize(info.statusCode, info.statusMessage, info.rawHeaders);
      if (headBytes > MAX_HEAD_BYTES) { r.destroy(); fail(headTooLarge); }
    });
    r.on('response', (res) => {
      const status = res.statusCode ?? 0;
      headBytes += headSize(status, res.statusMessage ?? '', res.rawHeaders);
      if (headBytes > MAX_HEAD_BYTES) { r.destroy(); return fail(headTooLarge); }
      const durationMs = elapsed();
      const text = res.statusMessage ? ` ${res.statusMessage}` : '';
      const redirect = status >= 300 && status <= 399 ? '; redirects are not followed' : '';
      const o: AttemptOutcome = status >= 200 && status <= 299 ? { ok: true, status, error: null, durationMs }
        : { ok: false, status, error: `the endpoint answered HTTP ${status}${text}${redirect}`, durationMs };
      const retryAfter = res.headers['retry-after'];
      if ((status === 429 || status === 503) && retryAfter !== undefined) o.retryAfter = retryAfter;
      // The body is read and thrown away, up to its bound; the outcome counts once it ended, so a connection is held by
      // one attempt until the next may use it.
      answered = o;
      let read = 0;
      const done = (): void => finish(o);
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_BODY_BYTES) { r.destroy(); done(); }
      });
      res.on('end', done);
      res.on('close', done);
      res.on('error', done);
    });
    r.on('error', (e: NodeJS.ErrnoException) => {
      if (answered !== null) return finish(answered);
      if (settled) return;
      if (again && r.reusedSocket && (e.code === 'ECONNRESET' || e.code === 'EPIPE')) {
        written = false;
        return send(addresses, false);
      }
      if (e.code === 'HPE_HEADER_OVERFLOW') return fail(`the endpoint's answer head is over ${MAX_HEAD_BYTES} bytes`);
      if (e.code?.startsWith('HPE_')) return fail(`the endpoint's answer is not valid HTTP/1.1: ${e.code}`);
      const why = e.code ?? e.message;
      fail(written ? `the connection ended before an answer: ${why}` : `could not connect to the endpoint: ${why}`);
    });
    r.end(body);
  };

  const begin = async (): Promise<void> => {
    let addresses = knownAddresses(url, s.allowPrivate, s.hosts);
    if (addresses === null) addresses = await deliveryAddresses(url, s.allowPrivate, s.hosts);
    if (settled) return;
    if (!addresses) return fail(unreachableMessage(url.href));
    send(addresses, true);
  };
  begin().catch((e: Error) => fail(`could not connect to the endpoint: ${e.message}`));

  return {
    outcome,
    get written() { return written; },
    stop() {
      if (written) return false;
      if (settled) return true;
      req?.destroy();
      finish({ ok: false, status: null, error: 'not sent', durationMs: 0, notSent: true });
      return true;
    },
    cut() { req?.destroy(); fail('the attempt was stopped'); },
  };
}

/** {@link startAttempt} of `body` (text, or parsed) to `url` for no endpoint in particular; an invalid URL fails it. */
export function sendAttempt(
  url: string | URL, body: string | Uint8Array, headers: Record<string, string>, s: AttemptSettings,
): Promise<AttemptOutcome> {
  let u: URL;
  try { u = typeof url === 'string' ? new URL(url) : url; } catch {
    return Promise.resolve({ ok: false, status: null, error: 'the endpoint URL is not a valid URL', durationMs: 0 });
  }
  return startAttempt('', u, typeof body === 'string' ? Buffer.from(body) : body, headers, s).outcome;
}

/** The bytes of an answer's head as it came: status line, header lines, blank line. */
function headSize(status: number, reason: string, raw: string[]): number {
  let n = `HTTP/1.1 ${status} ${reason}\r\n\r\n`.length;
  for (const part of raw) n += part.length + 2; // "name: " and "value\r\n"
  return n;
}

/** A `Retry-After` value (seconds, or an HTTP date) as an instant, ms from clock time `now`; undefined if neither. */
export function retryAfterAt(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d{1,10}$/.test(v)) return now + Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) || !/[a-z]/i.test(v) ? undefined : at;
}
