/**
 * Live API checks, `POST /api/v1/sources/{sourceId}/checks` (docs/api.md#live-checks, docs/sources.md#live-checks): one
 * request to the customer's API for an ingested endpoint, at the document's server URL, with the source's credential,
 * under the SSRF rules and time limit of fetching. Refusals before sending are 400; once sent, the answer is always 200
 * `live_check`, the upstream status being the result. The secret is redacted from what is returned (./redaction.ts).
 */
import { performance } from 'node:perf_hooks';
import { s } from '../../http/schema.js';
import { invalid } from '../../http/errors.js';
import { MiB } from '../../http/route.js';
import { route } from '../../domain/route.js';
import { iso } from '../../core/clock.js';
import { fetchDocument, FetchError, type FetchedDocument } from '../../ingest/fetch/fetch.js';
import { resolveReachable, unreachableMessage } from '../../ingest/fetch/addresses.js';
import { SecretError } from '../../core/secrets.js';
import type { RouteDeps } from '../common.js';
import { notFound } from '../common.js';
import type { Credential, Source } from './model.js';
import type { SourceIndexRec } from '../../ingest/types.js';
import { credentialAllows, RESERVED_HEADERS, serverBase } from './credentials.js';
import { Redactor } from './redaction.js';

/** Methods a live check can send. TRACE is left out: it echoes the request, credential included. */
const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const NO_BODY = new Set(['GET', 'HEAD']);
/** Returned body text, bytes of UTF-8. */
const BODY_LIMIT = 16 * 1024;
/** Longest URL a check sends. */
const URL_LIMIT = 8192;
const ALLOWED_HEADERS = new Set(['content-type', 'content-length', 'cache-control', 'etag', 'last-modified',
  'retry-after', 'x-request-id']);
const allowedHeader = (name: string): boolean => ALLOWED_HEADERS.has(name) || name.startsWith('ratelimit-') ||
  name.startsWith('x-ratelimit-');
/** `{{postman}}`, `{openapi}` and `:express` path parameters. */
const PATH_PARAM = /\{\{([^{}/]+)\}\}|\{([^{}/]+)\}|(?<=\/):([A-Za-z_][A-Za-z0-9_.-]*)/g;

const checkBody = s.named('LiveCheckRequest', s.object({
  endpointId: s.string({ minLength: 1, maxLength: 100,
    description: 'An endpoint id of this source (from GET /api/v1/sources/{sourceId}). Ids change when the source is '
      + 'rescanned.' }),
  parameters: s.optional(s.object({}, {
    additionalProperties: true,
    description: 'Values (string, number or boolean) for the path parameters ({name}, {{name}} or :name segments), '
      + 'URL-encoded; the others are sent as query parameters.',
  })),
  body: s.optional(s.any({
    description: 'A JSON value sent as the application/json request body (not for GET or HEAD).' })),
}));

export const liveCheckSchema = s.named('LiveCheck', s.object({
  object: s.enum(['live_check'] as const),
  endpointId: s.string(),
  method: s.string(),
  url: s.string({ format: 'uri', description: 'The URL requested (before redirects); it never holds the credential.' }),
  status: s.nullable(s.integer({ minimum: 100, maximum: 999,
    description: 'The upstream HTTP status; null when no HTTP answer arrived (see error).' })),
  durationMs: s.integer({ minimum: 0 }),
  headers: s.object({}, { additionalProperties: true,
    description: 'Allow-listed response headers (lower-case names, string values).' }),
  body: s.nullable(s.string({
    description: 'The response text (UTF-8), at most 16 KiB (see `truncated`), whatever the upstream status; null when '
      + 'no HTTP answer arrived.' })),
  truncated: s.boolean(),
  error: s.optional(s.string({
    description: 'Why no HTTP answer arrived (timeout, connection, size limit, refused redirect); present only when '
      + 'status is null.' })),
}));

type Params = Record<string, string | number | boolean>;

function checkParameters(raw: Record<string, unknown> | undefined): Params {
  const out: Params = {};
  for (const [k, v] of Object.entries(raw ?? {})) {
    if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) out[k] = v;
    else throw invalid(`parameters.${k} must be a string, number or boolean`);
  }
  return out;
}

/** The base URL: the document's server URL, a relative one resolved against the source's URL; 400 when none. */
function baseUrl(src: Source, idx: SourceIndexRec | undefined): URL {
  const base = serverBase(src.inputUrl, idx?.serverUrl);
  if (!base.url) throw invalid(base.error);
  return base.url;
}

/** The request URL: base path + endpoint path with path parameters substituted, other parameters as query. */
function requestUrl(base: URL, path: string, params: Params): URL {
  const used = new Set<string>();
  const missing: string[] = [];
  // A lone UTF-16 surrogate has no UTF-8 form: it can be neither percent-encoded in the path nor sent in the query.
  for (const [k, v] of Object.entries(params)) {
    if (!k.isWellFormed()) throw invalid(
      'parameters has a name that is not well-formed Unicode text (it has a lone surrogate)');
    if (!String(v).isWellFormed()) throw invalid(
      `parameters.${k} must be well-formed Unicode text (it has a lone surrogate)`);
  }
  const filled = path.replace(PATH_PARAM, (_m, a?: string, b?: string, c?: string) => {
    const name = (a ?? b ?? c ?? '').trim();
    if (!Object.hasOwn(params, name)) { missing.push(name); return ''; }
    used.add(name);
    const value = String(params[name]);
    // A URL parser removes `.`/`..` segments (encoded ones too): they would leave the endpoint's path.
    if (value === '.' || value === '..') throw invalid(`parameters.${name} cannot be "." or ".."`);
    return encodeURIComponent(value);
  });
  if (missing.length) throw invalid(`parameters.${missing[0]} is required by the endpoint path ${path.slice(0, 200)}`);
  const u = new URL(base.href);
  const rel = filled.startsWith('/') ? filled : `/${filled}`;
  // OpenAPI: the endpoint path is appended to the server URL's path.
  u.pathname = (u.pathname.endsWith('/') ? u.pathname.slice(0, -1) : u.pathname) + rel;
  for (const [k, v] of Object.entries(params)) if (!used.has(k)) u.searchParams.append(k, String(v));
  if (u.href.length > URL_LIMIT) throw invalid(`the request URL would be longer than ${URL_LIMIT} characters`);
  return u;
}

/** The headers carrying the credential, and the redactor of every form of it. */
function credentialHeaders(cred: Credential, secret: string): { headers: Record<string, string>; redactor: Redactor } {
  if (cred.type === 'bearer') {
    const value = `Bearer ${secret}`;
    return { headers: { authorization: value }, redactor: new Redactor({ secret, headerValues: [value] }) };
  }
  if (cred.type === 'basic') {
    const value = `Basic ${Buffer.from(`${cred.username ?? ''}:${secret}`).toString('base64')}`;
    return { headers: { authorization: value }, redactor: new Redactor({ secret, username: cred.username ?? '',
      headerValues: [value] }) };
  }
  const name = (cred.headerName ?? '').toLowerCase();
  if (!name || RESERVED_HEADERS.has(name)) throw invalid(
    `the credential header name ${cred.headerName ?? ''} cannot be used for a live check; set auth again with another `
      + `headerName`);
  return { headers: { [name]: secret }, redactor: new Redactor({ secret }) };
}

/** Message of a fetch that got no HTTP answer. */
function failureText(e: FetchError, customHeader: boolean): string {
  if (e.code === 'too_many_redirects' &&
    customHeader) return 'the API answered with a redirect, which a check with a custom-header credential does not '
      + 'follow (it could carry the credential to another origin)';
  return e.message;
}

export function liveCheckRoutes(deps: RouteDeps) {
  const { config, secrets, usage } = deps;
  return [
    route({
      method: 'POST', path: '/api/v1/sources/{sourceId}/checks', operationId: 'createLiveCheck', tag: 'Sources',
        scope: 'sources:write',
      summary: 'Call the customer\'s API for one ingested endpoint at the document\'s server URL with the source\'s '
        + 'credential (sent only to that origin), '
        + 'under the fetching rules (SSRF, timeout, 1 MiB). Any upstream status is a 200 result; status null with '
        + 'error when no answer arrived. '
        + 'Updates auth.lastVerifiedAt, auth.status (2xx valid, 401/403 invalid) and auth.lastError; counts as a live '
        + 'API check. '
        + '400 when nothing can be sent: endpoint not of this source or not HTTP, missing path parameter, no usable '
        + 'server URL, '
        + 'a credential bound to another origin (it is bound to the server URL\'s origin when set), a host that cannot '
        + 'be reached.',
      body: checkBody,
      success: { status: 200, schema: liveCheckSchema, description: 'The result of the check.' },
      handler: async (ctx) => {
        const src = ctx.ws.get('source', ctx.params.sourceId);
        if (!src) throw notFound();
        const b = ctx.body;
        const params = checkParameters(b.parameters as Record<string, unknown> | undefined);
        const idx = ctx.ws.get('source_index', src.id);
        const endpoint = ctx.ws.sources.search.endpoints.get(b.endpointId) === src.id ? idx?.endpoints.find((e) =>
          e.id === b.endpointId) : undefined;
        if (!endpoint) throw invalid('endpointId is not an endpoint of this source');
        const method = (endpoint.method ?? '').toUpperCase();
        if (!HTTP_METHODS.has(method)) {
          throw invalid(`live checks need an HTTP endpoint (GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS); this `
            + `endpoint is ${method || 'without a method'}`);
        }
        if (b.body !== undefined && NO_BODY.has(method)) throw invalid(`body cannot be sent with a ${method} request`);
        const base = baseUrl(src, idx);
        const url = requestUrl(base, endpoint.path ?? '/', params);

        const cred = src.credential;
        if (cred && !credentialAllows(cred, url.origin)) {
          throw invalid(`the source's credential may not be sent to ${url.origin}: it is bound to the origin the `
            + `source described when it was set; set auth again`);
        }
        let auth: { headers: Record<string, string>; redactor: Redactor } =
          { headers: {}, redactor: new Redactor(undefined) };
        if (cred) {
          let secret: string;
          try { secret = secrets.open(cred.sealed, `${ctx.ws.id}/${src.id}`); } catch (e) {
            if (e instanceof SecretError) throw invalid(
              'the source\'s stored credential cannot be decrypted; set auth again');
            throw e;
          }
          auth = credentialHeaders(cred, secret);
        }
        // Checked here (the fetch checks again) so that a refusal is a 400 with nothing sent.
        if (!await resolveReachable(url.hostname, config.sourceFetchAllowPrivate)) throw invalid(
          unreachableMessage(url.href));

        const customHeader = cred?.type === 'header';
        const headers: Record<string, string> = { ...auth.headers };
        let body: string | undefined;
        if (b.body !== undefined) { body = JSON.stringify(b.body); headers['content-type'] = 'application/json'; }
        const started = performance.now();
        let res: FetchedDocument | undefined;
        let status: number | null = null;
        let error: string | undefined;
        try {
          res = await fetchDocument(url.href, {
            method, body, headers,
            timeoutMs: config.sourceFetchTimeoutMs,
            maxBytes: Math.min(config.sourceFetchMaxBytes, MiB),
            allowPrivate: config.sourceFetchAllowPrivate,
            // Any upstream status is the check's result; a custom credential header is dropped like Authorization when
            // a redirect leaves the server's origin.
            acceptAnyStatus: true,
            ...(customHeader && cred?.headerName ? { credentialHeaders: [cred.headerName] } : {}),
          });
          status = res.status;
        } catch (e) {
          if (!(e instanceof FetchError)) throw e;
          if (e.code === 'http_status' && e.status !== undefined) status = e.status;
          else error = auth.redactor.redact(failureText(e, customHeader));
        }
        const durationMs = Math.max(0, Math.round(performance.now() - started));
        usage.countLiveCheck(ctx.ws.id);

        // Side effects, unless the source was deleted or its credential replaced meanwhile.
        const current = ctx.ws.get('source', src.id);
        if (current && current.credential?.sealed.ct === cred?.sealed.ct) {
          const a = { ...current.auth, lastVerifiedAt: iso(ctx.now) };
          if (cred) {
            if (status !== null && status >= 200 && status <= 299) { a.status = 'valid'; a.lastError = null; }
            else if (status === 401 || status === 403) { a.status = 'invalid'; a.lastError =
              `upstream answered ${status}`; }
            else if (status === null) a.lastError = error ?? 'no answer';
          }
          ctx.tx().put('source', src.id, { ...current, auth: a });
        }

        const outHeaders: Record<string, string> = {};
        for (const [k, v] of Object.entries(res?.headers ?? {})) if (allowedHeader(k)) outHeaders[k] =
          auth.redactor.redact(v);
        const text = res ? auth.redactor.redactPrefix(res.body.toString('utf8'), BODY_LIMIT) : { text: null,
          truncated: false };
        return {
          status: 200,
          body: {
            object: 'live_check', endpointId: endpoint.id, method, url: url.href, status, durationMs,
            headers: outHeaders, body: text.text, truncated: text.truncated, ...(error !== undefined ? { error } : {}),
          },
        };
      },
    }),
  ];
}
