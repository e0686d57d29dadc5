/**
 * SSRF-safe fetching of source URLs (docs/sources.md#fetching). Every URL and redirect target is checked before
 * connecting, and the socket goes to exactly the checked addresses (Host and SNI keep the name). One deadline covers
 * the whole fetch; the byte cap counts decoded bytes, so a compression bomb stops at the cap, and at most
 * {@link MAX_ENCODINGS} layers are decoded (each a zlib stream: thousands would cost CPU seconds).
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Writable, type Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { busyMessage, fixedLookup, reachableOrBusy, unreachableMessage, type ResolvedAddress } from './addresses.js';
import { BUSY } from './hosts.js';

export { isPrivateAddress, unreachableMessage } from './addresses.js';

/** Options of {@link fetchDocument}; times in milliseconds, sizes in bytes. */
export interface FetchOptions {
  /** Deadline for the whole fetch, redirects and body included (`SOURCE_FETCH_TIMEOUT_MS`). */
  timeoutMs: number;
  /** Largest body accepted, counted after decoding (`SOURCE_FETCH_MAX_BYTES`). */
  maxBytes: number;
  /** Allow loopback/private/link-local… addresses (`SOURCE_FETCH_ALLOW_PRIVATE`). */
  allowPrivate: boolean;
  /** Redirects followed at most (default 5). */
  maxRedirects?: number;
  /** Request headers; they override the defaults (User-Agent, Accept, Accept-Encoding). */
  headers?: Record<string, string>;
  /** Origins (`https://host:port`) exempt from the private-address rule, e.g. `GITHUB_API_URL`'s. */
  trustedOrigins?: string[];
  /** HTTP method (default `GET`). */
  method?: string;
  /** Request body, sent with the first request (and kept on 307/308 redirects). */
  body?: string | Buffer;
  /** Return a final non-2xx answer (headers and body) instead of failing with `http_status` (live checks). */
  acceptAnyStatus?: boolean;
  /** Headers to drop when a redirect leaves the first origin, besides Authorization, Cookie, Proxy-Authorization. */
  credentialHeaders?: string[];
}

/** A fetched document: the final response after redirects. */
export interface FetchedDocument {
  /** Final URL, after redirects. */
  url: string;
  status: number;
  /** Lower-cased media type without parameters (`text/html`), `''` when absent. */
  contentType: string;
  /** Response headers, names lower-cased, repeated values joined with `, `. */
  headers: Record<string, string>;
  /** The body, decoded from its `Content-Encoding`. */
  body: Buffer;
}

/** Why a fetch failed; `unreachable` is both "does not resolve" and "refused address", so none can tell them apart. */
export type FetchErrorCode = 'invalid_url' | 'scheme' | 'unreachable' | 'resolver_busy' | 'network' | 'timeout'
  | 'too_large' | 'too_many_redirects' | 'http_status' | 'decode';

/** A failed or refused fetch; `message` is meant for users (it becomes a source's `error`). */
export class FetchError extends Error {
  readonly code: FetchErrorCode;
  /** The final HTTP status, for `http_status`. */
  readonly status?: number;
  constructor(code: FetchErrorCode, message: string, status?: number) {
    super(message);
    this.name = 'FetchError';
    this.code = code;
    this.status = status;
  }
}

const DEFAULT_MAX_REDIRECTS = 5;
/** Most `Content-Encoding` layers decoded (e.g. `gzip, br`); more fail with `decode`. */
export const MAX_ENCODINGS = 2;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers not forwarded when a redirect leaves the original origin. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

/** The URL's host name without IPv6 brackets. */
const hostOf = (url: URL): string => (url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname);

function parseHttpUrl(raw: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchError('invalid_url', `${what} ${JSON.stringify(raw.slice(0, 200))} is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new FetchError('scheme', `refused to fetch ${url.protocol}… URL: only http and https URLs can be fetched`);
  }
  return url;
}

/** Resolves the URL's host and checks every address; throws before any connection is made. */
async function resolveChecked(url: URL, opts: FetchOptions, trusted: Set<string>): Promise<ResolvedAddress[]> {
  const addresses = await reachableOrBusy(hostOf(url), opts.allowPrivate || trusted.has(url.origin));
  if (addresses === BUSY) throw new FetchError('resolver_busy', busyMessage(url.href));
  // Neither the resolved address nor the DNS error is named: either would map internal host names.
  if (!addresses) throw new FetchError('unreachable', unreachableMessage(url.href));
  return addresses;
}

/** One request to the checked addresses; resolves at the response headers. */
function request(url: URL, addresses: ResolvedAddress[], method: string, headers: Record<string, string>,
  body: string | Buffer | undefined, signal: AbortSignal): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const h = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    const req = (url.protocol === 'https:' ? https : http).request({
      protocol: url.protocol, hostname: hostOf(url), port: url.port || undefined, path: `${url.pathname}${url.search}`,
      method, headers: h, signal,
      agent: false, // a fresh connection to the checked address, never a pooled one
      lookup: fixedLookup(addresses) as unknown as net.LookupFunction,
    });
    req.once('response', resolve);
    req.on('error', reject); // later errors (after a response) surface on the response stream
    req.end(body);
  });
}

function decoderFor(encoding: string, url: string, first: Buffer | null): Transform {
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate': {
      // RFC 9110 says zlib-wrapped, but some servers send raw deflate: look at the header.
      const wrapped = first === null || first.length < 2 || ((first[0] & 0x0f) === 8 && ((first[0] << 8) | first[
        1]) % 31 === 0);
      return wrapped ? zlib.createInflate() : zlib.createInflateRaw();
    }
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      throw new FetchError('decode',
        `could not decode ${url}: unsupported Content-Encoding ${JSON.stringify(encoding)}`);
  }
}

/** Waits for the first readable bytes of a stream without consuming them (null at the end). */
function peek(stream: Readable): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const settle = (fn: () => void): void => {
      stream.off('readable', onReadable).off('end', onEnd).off('close', onEnd).off('error', reject);
      fn();
    };
    const onReadable = (): void => settle(() => {
      const chunk = stream.read() as Buffer | null;
      if (chunk !== null) stream.unshift(chunk);
      resolve(chunk);
    });
    const onEnd = (): void => settle(() => resolve(null));
    stream.on('readable', onReadable).on('end', onEnd).on('close', onEnd).once('error', reject);
  });
}

async function readBody(res: http.IncomingMessage, url: string, maxBytes: number, signal: AbortSignal, headRequest =
  false): Promise<Buffer> {
  const tooLarge = (): FetchError => new FetchError('too_large',
    `${url} is larger than the limit of ${maxBytes} bytes`);
  const encodings = (res.headers['content-encoding'] ?? '').toLowerCase().split(',').map((s) => s.trim())
    .filter((s) => s !== '' && s !== 'identity').reverse();
  if (encodings.length > MAX_ENCODINGS) {
    res.destroy();
    throw new FetchError('decode',
      `could not decode ${url}: it has ${encodings.length} Content-Encoding layers, more than the ${MAX_ENCODINGS} `
        + `accepted`);
  }
  const length = Number(res.headers['content-length']);
  // A HEAD answer's Content-Length describes a body that is not sent.
  if (!headRequest && encodings.length === 0 && Number.isFinite(length) && length > maxBytes) {
    res.destroy();
    throw tooLarge();
  }
  const first = encodings[0] === 'deflate' ? await peek(res) : null;
  let decoders: Transform[];
  // An encoding we cannot decode is refused before the body is read: the connection goes now.
  try { decoders = encodings.map((e, i) => decoderFor(e, url, i === 0 ? first : null)); } catch (e) {
    res.destroy(); throw e; }
  const chunks: Buffer[] = [];
  let total = 0;
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      total += chunk.length;
      if (total > maxBytes) return cb(tooLarge());
      chunks.push(chunk);
      cb();
    },
  });
  try {
    await pipeline([res, ...decoders, sink], { signal });
  } catch (e) {
    if (e instanceof FetchError || signal.aborted) throw e;
    const code = (e as NodeJS.ErrnoException).code ?? '';
    if (decoders.length > 0 && code.startsWith('Z_')) {
      throw new FetchError('decode',
        `could not decode the ${encodings.join(', ')} body of ${url}: ${(e as Error).message}`);
    }
    throw new FetchError('network', `connection to ${url} failed while reading the body: ${(e as Error).message}`);
  }
  return Buffer.concat(chunks, total);
}

function flattenHeaders(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

function originsOf(list: string[] | undefined): Set<string> {
  const set = new Set<string>();
  for (const o of list ?? []) {
    try {
      set.add(new URL(o).origin);
    } catch { /* an unparseable trusted origin trusts nothing */ }
  }
  return set;
}

/**
 * Fetches one URL under the SSRF rules of docs/sources.md#fetching (redirects checked alike, docs/sources.md#redirects)
 * and returns the final response, its body decoded from gzip/deflate/br.
 * @throws FetchError with `code`: `invalid_url`; `scheme` (not http/https); `unreachable` (the host does not resolve,
 *   or a resolved address is loopback/private/…, see {@link isPrivateAddress}; no connection is opened; the message is
 *   {@link unreachableMessage}, the same for both); `resolver_busy` (too many host names wait to be resolved,
 *   docs/sources.md#name-resolution; {@link busyMessage}); `network` (connection refused/reset, TLS failure); `timeout`
 *   (the whole fetch took more than `timeoutMs`); `too_large` (more than `maxBytes` bytes after decoding);
 *   `too_many_redirects`; `http_status` (the final status is not 2xx; `status` set); `decode` (bad or unsupported
 *   Content-Encoding, or more than {@link MAX_ENCODINGS} layers).
 */
export async function fetchDocument(url: string, opts: FetchOptions): Promise<FetchedDocument> {
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const trusted = originsOf(opts.trustedOrigins);
  const controller = new AbortController();
  const signal = controller.signal;
  const timeoutError = (): FetchError => new FetchError('timeout',
    `fetching ${url} took longer than ${opts.timeoutMs} ms`);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(timeoutError());
    }, opts.timeoutMs);
  });
  deadline.catch(() => undefined);

  const attempt = async (): Promise<FetchedDocument> => {
    const firstUrl = parseHttpUrl(url, 'URL');
    let current = firstUrl;
    let method = (opts.method ?? 'GET').toUpperCase();
    let body = opts.body;
    const headers: Record<string, string> = {
      'user-agent': 'support-workspace-source-fetcher/0.1',
      accept: '*/*',
      'accept-encoding': 'gzip, deflate, br',
    };
    for (const [k, v] of Object.entries(opts.headers ?? {})) headers[k.toLowerCase()] = v;
    for (let hop = 0; ; hop++) {
      const addresses = await resolveChecked(current, opts, trusted);
      if (signal.aborted) throw timeoutError();
      let res: http.IncomingMessage;
      try {
        res = await request(current, addresses, method, headers, body, signal);
      } catch (e) {
        if (signal.aborted) throw timeoutError();
        const err = e as NodeJS.ErrnoException;
        throw new FetchError('network', `could not connect to ${current.href}: ${err.code ?? err.message}`);
      }
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECTS.has(status) && location) {
        res.destroy();
        if (hop >= maxRedirects) throw new FetchError('too_many_redirects',
          `${url} redirected more than ${maxRedirects} times`);
        let next: URL;
        try {
          next = new URL(location, current);
        } catch {
          throw new FetchError('invalid_url',
            `${current.href} redirected to an invalid URL ${JSON.stringify(location.slice(0, 200))}`);
        }
        next = parseHttpUrl(next.href, 'redirect target');
        next.hash = '';
        if (status === 303 || ((status === 301 || status === 302) && method !== 'GET' && method !== 'HEAD')) {
          if (method !== 'HEAD') method = 'GET';
          body = undefined;
          delete headers['content-type'];
        }
        if (next.origin !== firstUrl.origin) for (const h of [...CREDENTIAL_HEADERS, ...(opts.credentialHeaders ??
          []).map((x) => x.toLowerCase())]) delete headers[h];
        current = next;
        continue;
      }
      if ((status < 200 || status > 299) && !opts.acceptAnyStatus) {
        res.destroy();
        const text = res.statusMessage ? ` ${res.statusMessage}` : '';
        throw new FetchError('http_status', `${current.href} answered HTTP ${status}${text}`, status);
      }
      const data = await readBody(res, current.href, opts.maxBytes, signal, method === 'HEAD');
      const resHeaders = flattenHeaders(res.headers);
      const contentType = (resHeaders['content-type'] ?? '').split(';')[0].trim().toLowerCase();
      return { url: current.href, status, contentType, headers: resHeaders, body: data };
    }
  };

  try {
    return await Promise.race([attempt(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
