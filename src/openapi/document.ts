/**
 * The OpenAPI 3.1 document of the whole API (docs/api.md#openapi-document), generated from the route table: the same
 * schema objects the request pipeline validates with. Each operation lists every status it can answer. Made for client
 * generators: every request and success body is a named component (`$ref`) whose name is a TypeScript identifier no
 * global type has (`ErrorResponse`, not `Error`), with an example (examples.ts).
 */
import { ERRORS, type ErrorCode } from '../http/errors.js';
import { MiB, type Route } from '../http/route.js';
import { s, type TSchema } from '../http/schema.js';
import { toJsonSchema } from './jsonSchema.js';
import { API_VERSION } from '../http/pipeline.js';
import { SCOPES } from '../auth/keys.js';
import { EXAMPLES } from './examples.js';
import { EVENT_PAYLOADS, pascalType } from '../areas/events/events.js';

type Json = Record<string, unknown>;

/**
 * Header components (docs/api.md#request-ids, docs/api.md#rate-limit-headers, docs/api.md#idempotency); `required` is
 * where they are always sent.
 */
const HEADERS: Record<string, Json> = {
  'X-Request-Id': {
    description: 'The request id: the client\'s own `X-Request-Id` when it is 1–128 printable ASCII characters, else ' +
      'a generated UUID. Logged with the request.',
    required: true, schema: { type: 'string', minLength: 1, maxLength: 128 },
  },
  'Api-Version': { description: `The API version that answered: always \`${API_VERSION}\`.`, required: true,
    schema: { type: 'string', enum: [API_VERSION] } },
  'RateLimit-Limit': { description: 'Capacity of the API key\'s token bucket (`RATE_LIMIT_BURST`).', required: true,
    schema: { type: 'integer', minimum: 1 } },
  'RateLimit-Remaining': { description: 'Requests the key may still make right now.', required: true,
    schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Reset': { description: 'Seconds until the key\'s bucket is full again.', required: true,
    schema: { type: 'integer', minimum: 0 } },
  'Retry-After': { description: 'Seconds to wait before the next attempt.', required: true,
    schema: { type: 'integer', minimum: 1 } },
  Allow: { description: 'The methods the path supports.', required: true, schema: { type: 'string' } },
  'Idempotent-Replayed': {
    description: '`true` when the answer is the stored answer to an earlier request with the same `Idempotency-Key`.',
    required: false, schema: { type: 'string', enum: ['true'] } },
};
const RATE_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

/** The component name of the `{code, error}` body. */
export const ERROR_SCHEMA = 'ErrorResponse';
/**
 * Names that shadow a global type in generated code (`Error`, `Document`, `Response`…): the document test checks every
 * name against TypeScript's library; this list stops the obvious ones early.
 */
const SHADOWING = new Set(['Error', 'Object', 'Array', 'String', 'Number', 'Boolean', 'Date', 'Function', 'Symbol',
  'Promise', 'Map', 'Set',
  'Record', 'Partial', 'Document', 'Response', 'Request', 'Headers', 'Event', 'Node', 'Element', 'URL', 'Blob', 'File',
    'Location', 'Storage']);
/** A component name: a TypeScript identifier in PascalCase. */
const COMPONENT_NAME = /^[A-Z][A-Za-z0-9]*$/;

/** Descriptions of the operation tags, the API's areas. */
const TAG_DESCRIPTIONS: Record<string, string> = {
  Conversations: 'Create, read, update and message support conversations.',
  Issues: 'Create, read and update support issues.',
  Sources: 'Create, inspect, update, delete, rescan and search API context sources (material ingested from a URL or ' +
    'pasted content); live API checks.',
  Definitions: 'Read the workspace\'s tags, statuses, priorities and custom field definitions.',
  Agents: 'Read AI support agents and their public widget keys.',
  Clients: 'Read client aggregates derived from the workspace\'s conversations and issues.',
  Usage: 'Read the current month\'s API requests and live API checks.',
  Analytics: 'Read sanitized workspace analytics: counts and durations.',
  Health: 'Liveness of the server.',
  Webhooks: 'Manage webhook endpoints: the events they receive, signed per Standard Webhooks, and their deliveries.',
  Events: 'Read the workspace\'s events: every change to conversations, messages, issues and sources, kept 30 days.',
  Meta: 'This document.',
  'Live chat': 'The widget API under `/widget/v1`: visitor sessions opened with an agent\'s widget key, the '
    + 'visitor\'s conversations, messages, hand-over and stream (CORS for the agent\'s `allowedOrigins`).',
};

const errorSchema = {
  type: 'object',
  description: 'Every error: a machine-readable `code` and a human-readable message.',
  properties: {
    code: { type: 'string', enum: Object.keys(ERRORS),
      description: 'The contract; see the status of each response for the codes it can carry.' },
    error: { type: 'string',
      description: 'The spec\'s message text, optionally followed by one sentence naming the field or cause; a 400 ' +
        'about a query parameter or a header says so instead (`Query parameter limit must be …`, `Header ' +
        'Idempotency-Key must be …`).' },
  },
  required: ['code', 'error'],
  additionalProperties: false,
};

/** Component names of the error answers, by status. */
const NAMES: Record<number, string> = {
  400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType', 422: 'IdempotencyKeyReused', 429: 'TooManyRequests', 500: 'InternalError',
    503: 'ServiceUnavailable',
};

/** Why the widget API's 401 and 403 happen. */
const WIDGET_WHY: Record<number, string> = {
  401: 'The widget key or session token is missing, unknown or expired, or the agent is disabled; on '
    + '`POST /widget/v1/sessions` also an identity token that does not verify (`invalid_identity`).',
  403: 'The request\'s Origin is not in the agent\'s `allowedOrigins` (or the agent allows none).',
};

/** Why each error status can happen, for the response descriptions. */
const WHY: Record<number, string> = {
  400: 'The request is invalid: a query parameter, the body, `Idempotency-Key` or `Api-Version`.',
  401: 'The API key is missing, malformed, unknown or revoked (`unauthorized`), or expired (`key_expired`).',
  403: 'The API key lacks the scope this operation requires.',
  404: 'No record with this id in the key\'s workspace.',
  405: 'The path exists but not with this method (answered before authentication).',
  409: 'A conflicting record or operation.',
  413: 'The request body is over the size limit.',
  415: 'The body is not `application/json` (UTF-8, uncompressed).',
  422: 'This `Idempotency-Key` was already used with a different request.',
  429: 'Too many requests for the API key, or too many failed authentications from this address; see `Retry-After`.',
  431: 'The request headers are over 16 KiB (answered by the HTTP parser, before routing; the connection is closed).',
  500: 'An unexpected failure; details are in the server log under the request id.',
  503: 'The server is shutting down, or refuses writes after a storage failure (`service_unavailable`); the API ' +
    'key\'s workspace is offline because its data could not be read (`storage_failed`); the disk is full and nothing ' +
    'was saved (`storage_full`, with `Retry-After`); the workspace is moving to another cell and this write must wait '
    + '(`moving`) or it moved (`moved`), both with `Retry-After: 1`.',
};

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const errorRef = { $ref: `#/components/schemas/${ERROR_SCHEMA}` };
/** A header component inlined as optional, for answers that carry it only on some paths. */
const optionalHeader = (name: string, why: string): Json => ({ ...HEADERS[name],
  description: `${HEADERS[name].description} ${why}`, required: false });

/** Request header parameters shared by operations. */
const PARAMETERS: Record<string, Json> = {
  IdempotencyKey: {
    name: 'Idempotency-Key', in: 'header', required: false,
    description: 'Makes the POST safe to retry for 24 h: the same key with the same request answers with the stored ' +
      'status and body (`Idempotent-Replayed: true`); with a different request → 422; while the first one runs → 409.',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
  },
  ApiVersion: { name: 'Api-Version', in: 'header', required: false,
    description: `Pins the API version; any other value than \`${API_VERSION}\` → 400.`,
    schema: { type: 'string', enum: [API_VERSION] } },
  RequestId: {
    name: 'X-Request-Id', in: 'header', required: false,
    description: 'A request id to echo back and log. Any value is accepted (no length limit): 1–128 printable '
      + 'ASCII characters are used as the id, any other value is replaced by a generated UUID.',
    schema: { type: 'string' },
  },
};
const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });

/** The codes an error response of `status` can carry on `r` (the ERRORS table, narrowed for 409). */
function codesFor(r: Route, status: number): ErrorCode[] {
  return (Object.keys(ERRORS) as ErrorCode[]).filter((c) => {
    if (ERRORS[c].status !== status) return false;
    if (c === 'idempotency_in_progress') return r.method === 'POST';
    if (c === 'conflict') return r.errors?.includes(409) ?? false;
    // Both concern the API key's workspace: only an authenticated operation reaches one.
    if (c === 'storage_failed' || c === 'storage_full' || c === 'moved') return r.scope !== null;
    // Writes wait while a workspace moves between cells; reads go on (docs/deployment.md#moving-a-workspace).
    if (c === 'moving') return r.scope !== null && r.method !== 'GET';
    // The widget API has its own authentication (docs/api.md#live-chat); API keys have theirs.
    if (c === 'widget_unauthorized' || c === 'origin_not_allowed') return r.auth !== undefined;
    if (c === 'invalid_identity') return r.auth?.scheme === 'widgetKey';
    if (c === 'unauthorized' || c === 'key_expired' || c === 'insufficient_scope') return r.auth === undefined;
    return true;
  });
}

/** Statuses answered before any route is chosen, that every operation can get: the shared component of each. */
const BEFORE_ROUTING: Record<number, string> = { 431: 'RequestHeaderFieldsTooLarge' };

/** Every error status the pipeline can answer `r` with, ascending. */
export function errorStatuses(r: Route): number[] {
  const set = new Set<number>([400, 431, 500, 503, ...(r.errors ?? [])]);
  if (r.scope !== null) for (const st of [401, 403, 429]) set.add(st);
  if (r.body) { set.add(413); set.add(415); }
  if (/\{\w+\}/.test(r.path)) set.add(404);
  if (r.method === 'POST') { set.add(409); set.add(422); }
  return [...set].sort((a, b) => a - b);
}

/** The headers of an answer with `status`, with (`authenticated`) or without an API key. */
function responseHeaders(authenticated: boolean, post: boolean, status: number): Json {
  const h: Json = { 'X-Request-Id': headerRef('X-Request-Id'), 'Api-Version': headerRef('Api-Version') };
  if (authenticated) {
    // 401 is answered before the key's bucket is known, as a 429 for failed authentication and a 500/503 may be.
    if (status === 429 || status === 500 || status === 503) {
      for (const n of RATE_HEADERS) h[n] = optionalHeader(n,
        'Absent when the answer comes before the API key is known.');
    } else if (status !== 401) for (const n of RATE_HEADERS) h[n] = headerRef(n);
  }
  if (status === 405) h.Allow = headerRef('Allow');
  if (status === 429) h['Retry-After'] = headerRef('Retry-After');
  if (status === 503 && authenticated) h['Retry-After'] = optionalHeader('Retry-After',
    'Sent with `storage_full`, `moving` and `moved`.');
  if (status < 300 && post) h['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
  return h;
}

/** Shared error answers, `components.responses`: each name stands for one exact object. */
class ResponseComponents {
  readonly all: Record<string, Json> = {};

  /** Registers the `{code, error}` answer with `status` and returns a reference to it. */
  error(status: number, authenticated: boolean, codes: string[], why = WHY[status], given?: string): Json {
    let name = given ?? NAMES[status] + (authenticated ? '' : 'Public');
    // A read goes on while its workspace moves between cells; only writes wait (`moving`).
    if (status === 503 && authenticated && !given && !codes.includes('moving')) {
      name = 'ServiceUnavailableRead';
    }
    if (status === 409 && !given) name = codes.map((c) => c.replace(/(^|_)(\w)/g, (_m, _u, ch: string) =>
      ch.toUpperCase())).join('Or');
    const obj: Json = {
      description: `${why} Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
      headers: responseHeaders(authenticated, false, status),
      content: { 'application/json': { schema: errorRef } },
      'x-error-codes': codes,
    };
    const prior = this.all[name];
    if (prior && JSON.stringify(prior) !== JSON.stringify(obj)) throw new Error(
      `two different responses are named ${name}`);
    this.all[name] = obj;
    return { $ref: `#/components/responses/${name}` };
  }
}

function parameters(r: Route, refs: Map<string, TSchema>): Json[] {
  const out: Json[] = [];
  for (const m of r.path.matchAll(/\{(\w+)\}/g)) {
    out.push({ name: m[1], in: 'path', required: true, description: 'The record\'s id.', schema: { type: 'string' } });
  }
  for (const [name, prop] of Object.entries(r.query?.properties ?? {})) {
    const p = prop as TSchema;
    out.push({ name, in: 'query', required: !p.optional, ...(p.description ? { description: p.description } : {}),
      schema: toJsonSchema(p, refs) });
  }
  if (r.method === 'POST') out.push(parameterRef('IdempotencyKey'));
  out.push(parameterRef('ApiVersion'), parameterRef('RequestId'));
  return out;
}

/** `Op` of an operationId `op`: the first letter upper-cased. */
const pascal = (id: string) => id[0].toUpperCase() + id.slice(1);

/** `schema` as a named component: as it is when already named, else under `fallback`. */
const named = (schema: TSchema, fallback: string): TSchema =>
  (schema.kind === 'ref' ? schema : s.named(fallback, schema));

/** The sentence naming the scopes that allow `scope`: `X:read` is implied by `X:write` where that scope exists. */
function scopeNote(scope: string): string {
  const write = scope.replace(/:read$/, ':write');
  const implied = write !== scope && (SCOPES as readonly string[]).includes(
    write) ? ` (or \`${write}\`, which implies it)` : '';
  return `Requires an API key with scope \`${scope}\`${implied}, or \`*\`.`;
}

function operation(r: Route, refs: Map<string, TSchema>, shared: ResponseComponents): Json {
  const notes: string[] = [r.summary];
  if (r.auth) notes.push(r.auth.scheme === 'widgetKey' ? 'Requires the agent\'s widget key (`Bearer svcw_…`); API '
    + 'keys are refused.' : 'Requires a widget session token (`Bearer svcs_…`); API keys are refused.');
  else if (r.scope !== null) notes.push(scopeNote(r.scope));
  else notes.push('No authentication.');
  if (r.body) notes.push(`Body limit ${(r.bodyLimit ?? MiB) / MiB} MiB.`);
  const op: Json = { operationId: r.operationId, summary: r.summary, description: notes.join('\n\n'), tags: [r.tag] };
  if (r.scope === null) op.security = [];
  else if (r.auth) op.security = [{ [r.auth.scheme]: [] }];
  else { op.security = [{ bearerAuth: [r.scope] }]; op['x-required-scope'] = r.scope; }
  op.parameters = parameters(r, refs);
  const example = EXAMPLES[r.operationId];
  if (r.body) {
    op.requestBody = {
      required: !r.bodyOptional,
      ...(r.bodyOptional ? { description: 'May be left out entirely.' } : {}),
      content: { 'application/json': { schema: toJsonSchema(named(r.body, `${pascal(r.operationId)}Request`), refs),
        ...(example?.request !== undefined ? { example: example.request } : {}) } },
    };
  }
  const authenticated = r.scope !== null;
  const responses: Json = {
    [String(r.success.status)]: {
      description: r.success.description,
      headers: responseHeaders(authenticated, r.method === 'POST', r.success.status),
      content: { [r.success.contentType ?? 'application/json']: { schema: toJsonSchema(named(r.success.schema,
        `${pascal(r.operationId)}Response`), refs), ...(example ? { example: example.response } : {}) } },
    },
  };
  for (const st of errorStatuses(r)) {
    const before = BEFORE_ROUTING[st];
    // The widget API's own answers are named apart (`WidgetUnauthorized`, `WidgetKeyUnauthorized`, …).
    const widget = r.auth && [401, 403].includes(st) ? `${r.auth.scheme === 'widgetKey' ? 'WidgetKey' : 'Widget'}${
      NAMES[st]}` : undefined;
    responses[String(st)] = before ? { $ref: `#/components/responses/${before}` } : shared.error(st,
      authenticated && !widget, codesFor(r, st), widget ? WIDGET_WHY[st] : undefined, widget);
  }
  op.responses = responses;
  return op;
}

/** The Standard Webhooks headers of every delivery (docs/api.md#webhook-deliveries). */
const WEBHOOK_HEADERS: Json[] = [
  { name: 'webhook-id', in: 'header', required: true,
    description: 'The event id: the same on every retry of the delivery (deduplicate on it).',
    schema: { type: 'string' } },
  { name: 'webhook-timestamp', in: 'header', required: true,
    description: 'When this attempt was signed, in Unix seconds (refuse old ones to stop replays).',
    schema: { type: 'string', pattern: '^[0-9]+$' } },
  { name: 'webhook-signature', in: 'header', required: true,
    description: '`v1,<base64 HMAC-SHA256>` of `{webhook-id}.{webhook-timestamp}.{body}` keyed with the ' +
      'base64-decoded part of the endpoint secret after `whsec_`; several space-separated while a rotated secret ' +
      'still signs.', schema: { type: 'string' } },
];

/** The `webhooks` section: one operation per event type, the POST an endpoint receives (docs/api.md#events). */
function webhookOperations(refs: Map<string, TSchema>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const { type, schema } of EVENT_PAYLOADS) {
    out[type] = {
      post: {
        operationId: `on${pascalType(type)}`,
        summary: `The \`${type}\` event, delivered to the endpoints subscribed to it.`,
        description: 'Signed per the Standard Webhooks specification. Answer 2xx within `WEBHOOK_TIMEOUT_MS` to ' +
          'acknowledge; anything else is retried on the schedule, and `410 Gone` disables the endpoint.',
        tags: ['Events'],
        security: [],
        parameters: WEBHOOK_HEADERS,
        requestBody: { required: true, content: { 'application/json': { schema: toJsonSchema(schema, refs) } } },
        responses: { '2XX': { description: 'Received: the delivery succeeded.' },
          default: { description: 'Not received: the delivery is retried.' } },
      },
    };
  }
  return out;
}

/**
 * Builds the OpenAPI 3.1 document of `routes`: one operation per route, named schemas under `components.schemas`.
 * @throws Error when two routes share an operationId, two different schemas share a name, or a name is not a PascalCase
 *   identifier or shadows a global type.
 */
export function buildOpenApiDocument(routes: Route[]): object {
  const refs = new Map<string, TSchema>();
  const paths: Record<string, Json> = {};
  const ids = new Set<string>();
  const tags: string[] = [];
  const shared = new ResponseComponents();
  // Answers given before an operation is chosen (routing, the HTTP parser, draining).
  shared.error(404, false, ['not_found'],
    'No route matches the path, for any method (answered before authentication).', 'RouteNotFound');
  shared.error(405, false, ['method_not_allowed'], WHY[405], 'MethodNotAllowed');
  shared.error(431, false, ['request_header_fields_too_large'], WHY[431], 'RequestHeaderFieldsTooLarge');
  shared.error(503, false, ['service_unavailable'], WHY[503], 'ServiceUnavailablePublic');
  for (const r of routes) {
    if (ids.has(r.operationId)) throw new Error(`duplicate operationId ${r.operationId}`);
    ids.add(r.operationId);
    if (!tags.includes(r.tag)) tags.push(r.tag);
    (paths[r.path] ??= {})[r.method.toLowerCase()] = operation(r, refs, shared);
  }
  const webhooks = webhookOperations(refs);
  // Named schemas may name more schemas: emit until no new name turns up.
  const schemas: Json = {};
  for (let pending = [...refs]; pending.length; pending = [...refs].filter(([n]) => !Object.hasOwn(schemas, n))) {
    for (const [name, target] of pending) {
      if (name === ERROR_SCHEMA || SHADOWING.has(name) || !COMPONENT_NAME.test(name)) throw new Error(
        `the schema name ${name} is reserved or not a PascalCase identifier`);
      schemas[name] = toJsonSchema(target, refs);
    }
  }
  schemas[ERROR_SCHEMA] = errorSchema;

  return {
    openapi: '3.1.0',
    info: {
      title: 'Support Workspace API',
      version: API_VERSION,
      description: [
        'A REST API over JSON for a support workspace: conversations, issues, clients, agents, sources, definitions, ' +
        'usage and analytics.',
        'Authenticate with `Authorization: Bearer svck_…` (a workspace API key); each operation names the scope it ' +
        'requires (`x-required-scope`).',
        'Errors are always `{code, error}`. An unknown path answers 404 `not_found`; a known path with another ' +
        'method answers 405 `method_not_allowed` with `Allow` (`components.responses.MethodNotAllowed`). Every ' +
        'answer carries `X-Request-Id` and `Api-Version`; answers to authenticated requests carry `RateLimit-Limit`, ' +
        '`RateLimit-Remaining` and `RateLimit-Reset`.',
      ].join('\n\n'),
    },
    servers: [{ url: '/' }],
    security: [{ bearerAuth: [] }],
    tags: tags.map((name) => ({ name, ...(TAG_DESCRIPTIONS[name] ? { description: TAG_DESCRIPTIONS[name] } : {}) })),
    paths,
    webhooks,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http', scheme: 'bearer',
          description: 'A workspace API key, `svck_…`, created with the admin CLI (`key create`). Server-side use ' +
            'only. A public widget key (`svcw_…`) is not accepted.',
        },
        widgetKey: {
          type: 'http', scheme: 'bearer',
          description: 'An agent\'s public widget key, `svcw_…`: opens visitor sessions under `/widget/v1` only.',
        },
        widgetSession: {
          type: 'http', scheme: 'bearer',
          description: 'A visitor session token, `svcs_…` (24 h), from `POST /widget/v1/sessions`; on the stream also '
            + 'as `?session=`.',
        },
      },
      // Alphabetical, so a generated client lists its types in an order a reader can search.
      schemas: Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => (a < b ? -1 : 1))),
      headers: HEADERS,
      responses: shared.all,
      parameters: PARAMETERS,
    },
  };
}
