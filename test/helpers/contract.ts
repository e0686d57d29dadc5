/**
 * The contract check (docs/api.md#openapi-document): an HTTP answer is compared with the OpenAPI document
 * the server publishes — the operation found by method and path template, the status documented
 * for it, the body checked against the documented JSON Schema (extra properties included), the
 * error `code` among the ones the response names, and the documented headers (`X-Request-Id`,
 * `Api-Version`, `RateLimit-*` on authenticated operations, `Retry-After`, `Allow`) present and
 * well-formed. `call()` in `server.ts` runs every answer of the test suite through it.
 */
import { buildOpenApiDocument } from '../../src/openapi/document.js';
import { resolveRef, schemaErrors, type JsonSchema } from './openapiValidate.js';
import type { Route } from '../../src/http/route.js';

/** A `$ref` to a component of the same document. */
interface Ref { $ref: string }
/** A header of a response: whether it must be sent, and its value's schema. */
interface HeaderObject { required?: boolean; schema: JsonSchema }
/** A documented response: headers, the JSON body's schema, and the error codes it may carry. */
interface ResponseObject {
  headers?: Record<string, HeaderObject | Ref>;
  content?: Record<string, { schema: JsonSchema }>;
  'x-error-codes'?: string[];
}
/** A JSON Schema object as the document writes it (the keywords tests read; the rest as JSON). */
export interface SchemaObject { type?: string | string[]; description?: string; properties?: Record<string, SchemaObject>; [keyword: string]: unknown }
/** A parameter of an operation. */
export interface ParameterObject { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema: SchemaObject; description?: string }
/** An operation: its id, responses by status, and the OpenAPI fields tests read. */
export interface Operation {
  operationId: string;
  responses: Record<string, ResponseObject | Ref>;
  description?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<ParameterObject | Ref>;
  requestBody?: { required?: boolean; content: Record<string, { schema: SchemaObject; example?: unknown }> };
  'x-required-scope'?: string;
  [field: string]: unknown;
}

/** The server's OpenAPI document: the parts the contract check and the tests read, the rest as JSON. */
export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: {
    responses: Record<string, ResponseObject>;
    schemas: Record<string, SchemaObject>;
    headers: Record<string, HeaderObject>;
    securitySchemes: Record<string, { type: string; scheme?: string; description?: string }>;
    [kind: string]: Record<string, unknown>;
  };
  tags: Array<{ name: string; description?: string }>;
  [k: string]: unknown;
}

export interface ContractResponse { status: number; headers: Headers; text: string }

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const documents = new WeakMap<Route[], OpenApiDocument>();

/** The document of `routes`, built once per route table. */
export function contractDocument(routes: Route[]): OpenApiDocument {
  let doc = documents.get(routes);
  if (!doc) { doc = buildOpenApiDocument(routes) as unknown as OpenApiDocument; documents.set(routes, doc); }
  return doc;
}

/**
 * The path template of `doc` that serves `path` (no query string), as the router picks it: a
 * `{param}` matches one non-empty, percent-decodable segment, and a static segment wins over
 * a parameter at the first place they differ.
 */
export function matchPath(doc: OpenApiDocument, path: string): string | undefined {
  const segs = path.split('/');
  let best: { template: string; kinds: string } | undefined;
  for (const template of Object.keys(doc.paths)) {
    const t = template.split('/');
    if (t.length !== segs.length) continue;
    let kinds = '';
    const ok = t.every((part, i) => {
      if (/^\{\w+\}$/.test(part)) {
        kinds += 'p';
        if (segs[i] === '') return false;
        try { decodeURIComponent(segs[i]); return true; } catch { return false; }
      }
      kinds += 's';
      return part === segs[i];
    });
    // 's' > 'p': the template with a static segment first where they differ wins.
    if (ok && (!best || kinds > best.kinds)) best = { template, kinds };
  }
  return best?.template;
}

/** `o`, or the component its `$ref` names. */
function deref<T extends object>(doc: OpenApiDocument, o: T | Ref): T {
  return '$ref' in o && typeof o.$ref === 'string' ? (resolveRef(doc, o.$ref) as T) : (o as T);
}

/** Header values are text; integer headers are compared as the numbers they spell. */
function headerValue(schema: JsonSchema, raw: string): unknown {
  return typeof schema === 'object' && schema.type === 'integer' && /^-?\d{1,15}$/.test(raw) ? Number(raw) : raw;
}

/** Checks an answer against a response object of the document. */
function checkResponse(doc: OpenApiDocument, response: ResponseObject, method: string, res: ContractResponse): string[] {
  const out: string[] = [];
  for (const [name, h] of Object.entries(response.headers ?? {})) {
    const header = deref<HeaderObject>(doc, h);
    const raw = res.headers.get(name);
    if (raw === null) { if (header.required) out.push(`header ${name} is missing`); continue; }
    for (const e of schemaErrors(header.schema, headerValue(header.schema, raw), doc)) out.push(`header ${name}: ${e.replace(/^\(root\): /, '')}`);
  }
  if (response.content?.['text/event-stream']) {
    // A stream's answer: the head, and the frames read before the client let go (test/events-stream.test.ts).
    const ct = res.headers.get('content-type') ?? '';
    if (!/^text\/event-stream(;|$)/i.test(ct)) out.push(`Content-Type is ${JSON.stringify(ct)}, not text/event-stream`);
    return out;
  }
  const media = response.content?.['application/json'];
  if (!media) {
    if (res.text !== '') out.push(`a body is not documented, but one was sent: ${res.text.slice(0, 200)}`);
    return out;
  }
  if (method === 'HEAD') {
    if (res.text !== '') out.push('a HEAD answer has a body');
    return out;
  }
  const ct = res.headers.get('content-type') ?? '';
  if (!/^application\/json(;|$)/i.test(ct)) out.push(`Content-Type is ${JSON.stringify(ct)}, not application/json`);
  let body: unknown;
  try { body = JSON.parse(res.text); } catch { out.push(`the body is not JSON: ${JSON.stringify(res.text.slice(0, 200))}`); return out; }
  out.push(...schemaErrors(media.schema, body, doc));
  const codes = response['x-error-codes'];
  const code = (body as { code?: unknown } | null)?.code;
  if (codes && typeof code === 'string' && res.status >= 400 && !codes.includes(code)) {
    out.push(`/code: ${JSON.stringify(code)} is not one of the codes documented for ${res.status} (${codes.join(', ')})`);
  }
  return out;
}

/**
 * Every way `res`, the answer to `method` `path` (query string allowed), departs from `doc`;
 * empty when it conforms.
 */
export function contractViolations(doc: OpenApiDocument, method: string, path: string, res: ContractResponse): string[] {
  const m = method.toUpperCase();
  const q = path.indexOf('?');
  const template = matchPath(doc, q === -1 ? path : path.slice(0, q));
  const shared = doc.components.responses;
  // Answers given before an operation is chosen: by the HTTP parser, while draining, or by routing.
  if (res.status === 431) return checkResponse(doc, shared.RequestHeaderFieldsTooLarge, m, res);
  if (res.status === 503 && !template) return checkResponse(doc, shared.ServiceUnavailablePublic, m, res);
  if (!template) {
    if (res.status !== 404) return [`no operation matches ${m} ${path}, so the answer must be 404 (got ${res.status})`];
    return checkResponse(doc, shared.RouteNotFound, m, res);
  }
  const item = doc.paths[template];
  const op: Operation | undefined = item[m.toLowerCase()] ?? (m === 'HEAD' ? item.get : undefined);
  if (!op) {
    if (res.status === 503) return checkResponse(doc, shared.ServiceUnavailablePublic, m, res);
    if (res.status !== 405) return [`${template} has no ${m} operation, so the answer must be 405 (got ${res.status})`];
    const out = checkResponse(doc, shared.MethodNotAllowed, m, res);
    // The router lists the methods in the order the routes were added, and HEAD with GET.
    const allow = Object.keys(item).filter((k) => METHODS.includes(k)).map((k) => k.toUpperCase());
    if (allow.includes('GET')) allow.push('HEAD');
    const got = res.headers.get('allow');
    if (got !== null && got !== allow.join(', ')) out.push(`header Allow is ${JSON.stringify(got)}, expected ${JSON.stringify(allow.join(', '))}`);
    return out;
  }
  const documented = op.responses[String(res.status)];
  const response = documented && deref<ResponseObject>(doc, documented);
  if (!response) return [`status ${res.status} is not documented for ${op.operationId} (documented: ${Object.keys(op.responses).join(', ')})`];
  return checkResponse(doc, response, m, res);
}

/** A response that does not match the document. */
export class ContractError extends Error {
  constructor(method: string, path: string, res: ContractResponse, violations: string[]) {
    super(`contract violation: ${method} ${path} → ${res.status}\n  ${violations.join('\n  ')}\n  body: ${res.text.slice(0, 500)}`);
    this.name = 'ContractError';
  }
}

/** @throws ContractError listing every violation of {@link contractViolations}. */
export function assertContract(doc: OpenApiDocument, method: string, path: string, res: ContractResponse): void {
  const v = contractViolations(doc, method, path, res);
  if (v.length) throw new ContractError(method, path, res, v);
}
