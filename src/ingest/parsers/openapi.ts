/**
 * OpenAPI 3.0/3.1 and Swagger 2.0 parser (docs/sources.md#what-ingestion-extracts): one endpoint per operation;
 * `overview`, `operation`, `schema` and (3.1) `webhook` documents. Local `$ref`s and schemas are followed to a bounded
 * depth, so recursion cannot loop; external references are shown by name, never fetched.
 */
import { IngestError, parsedSource, type ParsedDocument, type ParsedEndpoint, type ParsedSource } from '../types.js';
import { clip, cutLine, isObj, nonBlankString, oneLine, type Obj } from './values.js';

/** HTTP methods that are operations of a Path Item (OpenAPI 3.x §4.8.9; Swagger 2.0 has no `trace`). */
const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** A Path Item followed through its `$ref`, fields beside the `$ref` winning (3.x); a bad reference: the siblings. */
function resolvePathItem(root: Obj, raw: unknown): Obj | undefined {
  if (!isObj(raw) || typeof raw.$ref !== 'string') return isObj(raw) ? raw : undefined;
  const { $ref: _ref, ...own } = raw;
  const target = deref(root, raw);
  return target !== undefined && target !== raw ? { ...target, ...own } : own;
}

/** The operations of a Path Item, in the order they are written. */
function operationsOf(item: Obj): Array<[string, Obj]> {
  const ops: Array<[string, Obj]> = [];
  for (const [key, op] of Object.entries(item)) if (METHODS.has(key) && isObj(op)) ops.push([key.toUpperCase(), op]);
  return ops;
}
/** Longest `$ref` chain followed before giving up (also stops `$ref` cycles). */
const MAX_REF_HOPS = 32;
/** Nesting levels of inline object properties listed under a schema or body. */
const MAX_PROPERTY_DEPTH = 3;
/** Most property lines listed for one schema or body. */
const MAX_PROPERTY_LINES = 200;
/** Longest text kept for one document. */
const MAX_TEXT_CHARS = 20_000;
/** Longest one-line description kept in a list entry. */
const MAX_LINE_CHARS = 300;

/** A document's text, cut to {@link MAX_TEXT_CHARS} with a note saying how long it was. */
export function clipText(s: string): string {
  return clip(s, MAX_TEXT_CHARS);
}

/** White space collapsed, cut to one list line ({@link MAX_LINE_CHARS}, then `…`); `''` for a non-string. */
export function listLine(v: unknown): string {
  return cutLine(oneLine(v), MAX_LINE_CHARS);
}

/** One JSON pointer token (RFC 6901): percent-decoded (a malformed escape kept as written), `~1` → `/`, `~0` → `~`. */
export function pointerToken(raw: string): string {
  let key = raw;
  try {
    key = decodeURIComponent(raw);
  } catch {
    // kept as written
  }
  return key.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Value at a local JSON pointer `#/a/b~1c`; undefined if absent or not local. */
function resolvePointer(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let cur = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = pointerToken(raw);
    if (Array.isArray(cur)) {
      const i = Number(key);
      if (!Number.isInteger(i) || i < 0 || i >= cur.length) return undefined;
      cur = cur[i];
    } else if (isObj(cur) && Object.hasOwn(cur, key)) {
      cur = cur[key];
    } else {
      return undefined;
    }
  }
  return cur;
}

/**
 * Follows `$ref`s from `value` to an object. An unresolvable (external or dangling) reference is returned as the
 * reference object itself; a chain longer than 32 hops (a cycle) gives undefined, as does a non-object.
 */
export function deref(root: unknown, value: unknown): Obj | undefined {
  let v = value;
  for (let hops = 0; hops < MAX_REF_HOPS; hops++) {
    if (!isObj(v)) return undefined;
    if (typeof v.$ref !== 'string') return v;
    const next = resolvePointer(root, v.$ref);
    if (next === undefined) return v;
    v = next;
  }
  return undefined;
}

/** Last segment of a reference: `#/components/schemas/Pet` → `Pet`. */
function refName(ref: string): string {
  return pointerToken(ref.slice(ref.lastIndexOf('/') + 1) || ref);
}

/**
 * Short type label of a JSON Schema / OpenAPI Schema Object: `string (date-time)`, `array of Pet`, `map of integer`,
 * `one of (Cat | Dog)`, `string enum: "a", "b"`. A `$ref` is labelled by the referenced name without being followed.
 */
export function typeLabel(schema: unknown, depth = 0): string {
  if (!isObj(schema)) return 'any';
  if (typeof schema.$ref === 'string') return refName(schema.$ref);
  if (depth > 3) return '…';
  const types = Array.isArray(schema.type) ? schema.type.filter((t): t is string => typeof t === 'string') : [];
  let type = typeof schema.type === 'string' ? schema.type : types.filter((t) => t !== 'null').join(' | ');
  if (type === '') {
    for (const [kw, joiner, name] of [['oneOf', ' | ', 'one of'], ['anyOf', ' | ', 'any of'],
      ['allOf', ' & ', 'all of']] as const) {
      const list = schema[kw];
      if (Array.isArray(list) &&
        list.length > 0) return `${name} (${list.slice(0, 8).map((s) => typeLabel(s, depth + 1)).join(joiner)})`;
    }
    type = isObj(schema.properties) ? 'object' : schema.items !== undefined ? 'array' : '';
  }
  if (type === 'array') type = `array of ${typeLabel(schema.items, depth + 1)}`;
  else if (type === 'object' && !isObj(schema.properties) && isObj(schema.additionalProperties)) {
    type = `map of ${typeLabel(schema.additionalProperties, depth + 1)}`;
  }
  if (typeof schema.format === 'string') type = `${type || 'any'} (${schema.format})`;
  if (schema.nullable === true || types.includes('null')) type = `${type || 'any'} | null`;
  if (Array.isArray(schema.enum)) {
    const values = schema.enum.slice(0, 12).map((v) => JSON.stringify(v)).join(', ');
    type = `${type || 'any'} enum: ${values}${schema.enum.length > 12 ? ', …' : ''}`;
  } else if (schema.const !== undefined) {
    type = `${type || 'any'} const ${JSON.stringify(schema.const)}`;
  }
  return type || 'any';
}

/**
 * Lines `- name (type, required): description` for the properties of a schema (through `$ref`, `allOf`/`oneOf`/`anyOf`
 * and `items`), inline object properties nested below to a bounded depth; `$ref` properties are labelled, not expanded.
 */
export function propertyLines(root: unknown, schema: unknown, indent = '  '): string[] {
  const out: string[] = [];
  collectProperties(root, schema, indent, 0, new Set(), out, { visits: 0 });
  return out;
}

function collectProperties(root: unknown, schema: unknown, indent: string, depth: number, seen: Set<Obj>,
  out: string[], budget: { visits: number }): void {
  const s = deref(root, schema);
  if (s === undefined || seen.has(s) || ++budget.visits > 500 || out.length >= MAX_PROPERTY_LINES) return;
  seen.add(s);
  if (s.items !== undefined && !isObj(s.properties)) collectProperties(root, s.items, indent, depth, seen, out, budget);
  for (const kw of ['allOf', 'oneOf', 'anyOf']) {
    const list = s[kw];
    if (Array.isArray(list)) for (const sub of list) collectProperties(root, sub, indent, depth, seen, out, budget);
  }
  const required = new Set(Array.isArray(s.required) ? s.required : []);
  if (isObj(s.properties)) {
    for (const [name, prop] of Object.entries(s.properties)) {
      if (out.length >= MAX_PROPERTY_LINES) {
        out.push(`${indent}…`);
        break;
      }
      const p = isObj(prop) ? prop : {};
      const desc = listLine(p.description ?? deref(root, p)?.description);
      out.push(`${indent}- ${name} (${typeLabel(p)}${required.has(name) ? ', required' : ''})${desc ? `: ${
        desc}` : ''}`);
      const inline = typeof p.$ref !== 'string' && (isObj(p.properties) || (isObj(p.items) &&
        typeof p.items.$ref !== 'string'));
      if (inline && depth + 1 < MAX_PROPERTY_DEPTH) collectProperties(root, p, `${indent}  `, depth + 1, seen, out,
        budget);
    }
  }
  seen.delete(s);
}

/** Path-level then operation-level parameters, followed through `$ref`; the later `name`+`in` wins. */
function mergedParameters(root: Obj, pathItem: Obj, op: Obj): Obj[] {
  const byKey = new Map<string, Obj>();
  for (const list of [pathItem.parameters, op.parameters]) {
    if (!Array.isArray(list)) continue;
    for (const raw of list) {
      const p = deref(root, raw);
      if (p !== undefined) byKey.set(`${String(p.in)}\u0000${String(p.name)}`, p);
    }
  }
  return [...byKey.values()];
}

/** Schema of a 3.x Media Type map's first entry that has one. */
function firstSchema(content: unknown): unknown {
  if (!isObj(content)) return undefined;
  for (const media of Object.values(content)) if (isObj(media) && media.schema !== undefined) return media.schema;
  return undefined;
}

/** Longest example (as one line of JSON) copied into an operation's text; a longer one is left out, never cut. */
const MAX_EXAMPLE_CHARS = 4000;

/**
 * `Example: {json}` for the example a Media Type (3.x: `example`, else the first `examples` entry's `value`) or a
 * Swagger 2.0 response (`examples`, first media type) gives, when it is at most {@link MAX_EXAMPLE_CHARS} as JSON.
 */
function exampleLine(root: Obj, holder: unknown, indent: string): string[] {
  if (!isObj(holder)) return [];
  let value: unknown = holder.example;
  if (value === undefined && isObj(holder.examples)) {
    const first = deref(root, Object.values(holder.examples)[0]);
    value = first && 'value' in first ? first.value : holder.examples[Object.keys(holder.examples)[0]];
  }
  if (value === undefined) return [];
  let json: string | undefined;
  try { json = JSON.stringify(value); } catch { return []; }
  return json !== undefined && json.length <= MAX_EXAMPLE_CHARS ? [`${indent}Example: ${json}`] : [];
}

/** The first media type object of a 3.x `content` map. */
const firstMedia = (content: unknown): unknown => (isObj(content) ? Object.values(content)[0] : undefined);

/** Lines describing an operation's parameters, request body, responses and callbacks. */
function operationLines(root: Obj, op: Obj, pathItem: Obj): string[] {
  const lines: string[] = [];
  const params = mergedParameters(root, pathItem, op);
  const plain = params.filter((p) => p.in !== 'body');
  if (plain.length > 0) {
    lines.push('', 'Parameters:');
    for (const p of plain) {
      const schema = p.schema ?? firstSchema(p.content) ?? p;
      const desc = listLine(p.description);
      lines.push(`- ${String(p.name)} (${String(p.in)}${p.required === true ? ', required' : ''}): ` +
        `${typeLabel(schema)}${desc ? ` — ${desc}` : ''}`);
    }
  }
  const body = params.find((p) => p.in === 'body');
  const requestBody = body ?? deref(root, op.requestBody);
  if (requestBody !== undefined) {
    const desc = listLine(requestBody.description);
    lines.push('', `Request body${requestBody.required === true ? ' (required)' : ''}:${desc ? ` ${desc}` : ''}`);
    if (body !== undefined) {
      const consumes = Array.isArray(op.consumes) ? op.consumes : Array.isArray(root.consumes) ? root.consumes : [];
      lines.push(`- ${consumes.length > 0 ? consumes.join(', ') : 'body'}: ${typeLabel(body.schema)}`);
    } else if (isObj(requestBody.content)) {
      for (const [type, media] of Object.entries(requestBody.content)) lines.push(
        `- ${type}: ${typeLabel(isObj(media) ? media.schema : undefined)}`);
    }
    lines.push(...propertyLines(root, body !== undefined ? body.schema : firstSchema(requestBody.content)));
    lines.push(...exampleLine(root, body !== undefined ? body.schema : firstMedia(requestBody.content), ''));
  }
  if (isObj(op.responses)) {
    lines.push('', 'Responses:');
    let detailed = false;
    for (const [code, raw] of Object.entries(op.responses)) {
      const r = deref(root, raw) ?? {};
      const desc = listLine(r.description);
      const schema = r.schema ?? firstSchema(r.content);
      const types = isObj(r.content) ? Object.keys(r.content).join(', ') : '';
      const shape = schema !== undefined ? ` — ${types ? `${types}: ` : ''}${typeLabel(schema)}` : '';
      lines.push(`- ${code}: ${desc || '(no description)'}${shape}`);
      if (!detailed && schema !== undefined && code.startsWith('2')) {
        detailed = true;
        lines.push(...propertyLines(root, schema, '    '));
        lines.push(...exampleLine(root, r.content !== undefined ? firstMedia(r.content) : isObj(r.examples)
          ? { example: Object.values(r.examples)[0] } : undefined, '    '));
      }
    }
  }
  if (isObj(op.callbacks)) {
    lines.push('', 'Callbacks:');
    for (const [name, raw] of Object.entries(op.callbacks)) {
      const cb = deref(root, raw) ?? {};
      for (const [expression, item] of Object.entries(cb)) {
        const pi = resolvePathItem(root, item) ?? {};
        for (const [method] of operationsOf(pi)) lines.push(`- ${name}: ${method} ${expression}`);
      }
    }
  }
  return lines;
}

/** `operation` / `webhook` document for one operation. */
function operationDocument(root: Obj, kind: string, heading: string, method: string, path: string, op: Obj,
  pathItem: Obj): ParsedDocument {
  const summary = nonBlankString(op.summary) ?? nonBlankString(pathItem.summary);
  const title = summary ?? nonBlankString(op.operationId) ?? `${method} ${path}`;
  const lines = [heading];
  if (summary !== undefined) lines.push(summary.trim());
  if (nonBlankString(op.operationId) !== undefined) lines.push(`Operation ID: ${String(op.operationId)}`);
  if (Array.isArray(op.tags) && op.tags.length > 0) lines.push(`Tags: ${op.tags.map(String).join(', ')}`);
  if (op.deprecated === true) lines.push('Deprecated.');
  const description = nonBlankString(op.description) ?? nonBlankString(pathItem.description);
  if (description !== undefined) lines.push('', description.trim());
  lines.push(...operationLines(root, op, pathItem));
  return { kind, title, text: clipText(lines.join('\n')) };
}

/** `schema` document for one named schema. */
function schemaDocument(root: Obj, name: string, raw: unknown): ParsedDocument {
  const s = deref(root, raw) ?? {};
  const lines = [`Schema ${name}`];
  if (nonBlankString(s.title) !== undefined && s.title !== name) lines.push(String(s.title));
  if (nonBlankString(s.description) !== undefined) lines.push('', String(s.description).trim());
  lines.push('', `Type: ${typeLabel(isObj(raw) && typeof raw.$ref === 'string' ? raw : s)}`);
  const props = propertyLines(root, s);
  if (props.length > 0) lines.push('Properties:', ...props);
  return { kind: 'schema', title: name, text: clipText(lines.join('\n')) };
}

/** Base URL: 3.x `servers[0].url`; 2.0 `scheme://host` + `basePath` (first scheme, else https). */
function serverUrl(doc: Obj, swagger: boolean): string | undefined {
  if (!swagger) {
    const first: unknown = Array.isArray(doc.servers) ? doc.servers[0] : undefined;
    return isObj(first) ? nonBlankString(first.url) : undefined;
  }
  const host = nonBlankString(doc.host);
  if (host === undefined) return undefined;
  const scheme = Array.isArray(doc.schemes) && typeof doc.schemes[0] === 'string' ? doc.schemes[0] : 'https';
  return `${scheme}://${host}${nonBlankString(doc.basePath) ?? ''}`;
}

/** The first lines of an `overview` document: the title, `Version:`, `specLine` and the description of `info`. */
export function overviewHead(info: Obj, title: string, specLine: string): string[] {
  const lines = [title];
  if (nonBlankString(info.version) !== undefined) lines.push(`Version: ${String(info.version)}`);
  lines.push(specLine);
  if (nonBlankString(info.description) !== undefined) lines.push('', String(info.description).trim());
  return lines;
}

/** `Tags:` lines (`- name: description`) for a list of tag objects; none when it is not a non-empty array. */
export function tagLines(tags: unknown): string[] {
  if (!Array.isArray(tags) || tags.length === 0) return [];
  const lines = ['', 'Tags:'];
  for (const t of tags) if (isObj(t)) lines.push(`- ${String(t.name)}${nonBlankString(t.description) ? `: ${
    listLine(t.description)}` : ''}`);
  return lines;
}

function overviewDocument(doc: Obj, title: string, versionLine: string, url: string | undefined): ParsedDocument {
  const lines = overviewHead(isObj(doc.info) ? doc.info : {}, title, versionLine);
  if (Array.isArray(doc.servers) && doc.servers.length > 0) {
    lines.push('', 'Servers:');
    for (const s of doc.servers) if (isObj(s)) lines.push(`- ${String(s.url)}${nonBlankString(s.description) ? ` — ${
      listLine(s.description)}` : ''}`);
  } else if (url !== undefined) {
    lines.push('', `Base URL: ${url}`);
  }
  lines.push(...tagLines(doc.tags));
  return { kind: 'overview', title, text: clipText(lines.join('\n')) };
}

/**
 * Endpoints and documents of a parsed Swagger 2.0 or OpenAPI 3.x document (docs/sources.md#what-ingestion-extracts):
 * `overview`, one `operation` per endpoint, one `webhook` per 3.1 webhook, one `schema` per named schema.
 * @throws IngestError `OpenAPI: …` when `doc` is not an object or has no supported `openapi` (3.x) / `swagger` (2.0)
 *   version field.
 */
export function parseOpenApi(doc: unknown): ParsedSource {
  if (!isObj(doc)) throw new IngestError('OpenAPI: the document is not an object');
  const swaggerVersion = doc.swagger === undefined ? undefined : String(doc.swagger);
  const openapiVersion = doc.openapi === undefined ? undefined : String(doc.openapi);
  if (swaggerVersion === undefined && openapiVersion === undefined) {
    throw new IngestError('OpenAPI: not an OpenAPI or Swagger document (no "openapi" or "swagger" version field)');
  }
  const swagger = openapiVersion === undefined;
  const version = (swagger ? swaggerVersion : openapiVersion) ?? '';
  if (swagger ? !/^2(\.0)?$/.test(version) : !/^3(\.|$)/.test(version)) {
    throw new IngestError(`OpenAPI: unsupported version "${version}" (expected Swagger 2.0 or OpenAPI 3.x)`);
  }
  const info = isObj(doc.info) ? doc.info : {};
  const title = nonBlankString(info.title)?.trim();
  const url = serverUrl(doc, swagger);
  const documents: ParsedDocument[] = [overviewDocument(doc, title ?? 'API',
    swagger ? 'Swagger 2.0' : `OpenAPI ${version}`, url)];
  const endpoints: ParsedEndpoint[] = [];
  for (const [path, method, op, item] of operationsIn(doc, doc.paths)) {
    endpoints.push({ method, path, documentIndex: documents.length });
    documents.push(operationDocument(doc, 'operation', `${method} ${path}`, method, path, op, item));
  }
  for (const [name, method, op, item] of operationsIn(doc, doc.webhooks)) {
    documents.push(operationDocument(doc, 'webhook', `Webhook ${name}: ${method}`, method, name, op, item));
  }
  const schemas = swagger ? doc.definitions : isObj(doc.components) ? doc.components.schemas : undefined;
  if (isObj(schemas)) for (const [name, schema] of Object.entries(schemas)) documents.push(
    schemaDocument(doc, name, schema));
  return parsedSource(documents, endpoints, title, url);
}

/** `[key, METHOD, operation, path item]` for every operation of a Paths (or webhooks) object, in order. */
function* operationsIn(root: Obj, paths: unknown): Generator<[string, string, Obj, Obj]> {
  if (!isObj(paths)) return;
  for (const [key, raw] of Object.entries(paths)) {
    const item = resolvePathItem(root, raw);
    if (item !== undefined) for (const [method, op] of operationsOf(item)) yield [key, method, op, item];
  }
}
