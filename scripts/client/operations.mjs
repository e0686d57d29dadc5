// The operations of an OpenAPI document → the typed methods of the generated client
// (docs/api.md#generating-a-client): for each operation its input (`path`, `query`, `headers`,
// `body`) and its result, a union over the documented statuses discriminated by `status` and
// `ok`. Parameter styles, media types and security schemes the runtime cannot honour stop the
// generator rather than produce a client that sends something else than the document says.
import { GenerateError, jsDoc, propertyKey, token, union } from './schema-types.mjs';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const PATH_ITEM_KEYS = new Set([...METHODS, 'parameters', 'summary', 'description']);
/** Header parameters OpenAPI says to ignore: the client sets them itself. */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);
const DEFAULT_STYLE = { path: 'simple', query: 'form', header: 'simple' };
const isJson = (mediaType) => /^application\/(?:[\w.-]+\+)?json(?:;|$)/i.test(mediaType);

/** Follows local `$ref`s (`#/…`) from `value` at `ptr`; returns the target and its pointer. */
export function deref(doc, value, ptr) {
  const seen = new Set();
  while (value && typeof value === 'object' && typeof value.$ref === 'string') {
    const ref = value.$ref;
    if (!ref.startsWith('#/')) throw new GenerateError(`${ptr}: only local $refs (#/…) are supported, not ${ref}`);
    if (seen.has(ref)) throw new GenerateError(`${ptr}: $ref cycle through ${ref}`);
    seen.add(ref);
    value = ref.slice(2).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~')).reduce((o, k) => o?.[k], doc);
    if (value === undefined) throw new GenerateError(`${ptr}: $ref ${ref} points at nothing`);
    ptr = ref;
  }
  return { value, ptr };
}

/** The JSON media type of a request body or response `content`, or undefined when it has none. */
function jsonMedia(content, ptr, what) {
  const types = Object.keys(content ?? {});
  if (!types.length) return undefined;
  const json = types.find(isJson);
  if (json) return { mediaType: json, schema: content[json].schema ?? true, ptr: `${ptr}/content/${token(json)}/schema` };
  if (what === 'response' && types.some((t) => t.startsWith('text/'))) return { text: true };
  throw new GenerateError(`${ptr}: ${what} media types ${types.join(', ')} are not supported (only JSON${what === 'response' ? ' and text/*' : ''})`);
}

/** Whether the operation needs the key: its `security` (else the document's) has a requirement naming a scheme. */
function needsKey(doc, op, ptr) {
  const requirements = op.security ?? doc.security ?? [];
  const schemes = doc.components?.securitySchemes ?? {};
  for (const req of requirements) {
    for (const name of Object.keys(req)) {
      const scheme = deref(doc, schemes[name], `#/components/securitySchemes/${token(name)}`).value;
      if (scheme?.type !== 'http' || String(scheme.scheme).toLowerCase() !== 'bearer') {
        throw new GenerateError(`${ptr}/security: scheme ${name} is not HTTP bearer, the only one the client sends (apiKey as a bearer token)`);
      }
    }
  }
  return requirements.some((req) => Object.keys(req).length > 0);
}

/**
 * Every operation of `doc`, in document order, as `{ id, method, path, auth, statuses, doc,
 * init, result, errorTypes }`: `init` and `result` are TypeScript type text built with
 * `toType` (the schema translator), `errorTypes` the body types of its non-2xx answers.
 * Throws GenerateError for a missing or duplicate operationId, a cookie or non-default-style
 * parameter, an object-typed query parameter, or an unsupported media type or security scheme.
 */
export function collectOperations(doc, toType) {
  const out = [];
  const ids = new Set();
  for (const [path, rawItem] of Object.entries(doc.paths ?? {})) {
    const itemPtr = `#/paths/${token(path)}`;
    const item = rawItem ?? {};
    for (const k of Object.keys(item)) {
      if (!PATH_ITEM_KEYS.has(k) && !k.startsWith('x-')) throw new GenerateError(`${itemPtr}: path item field "${k}" is not supported`);
    }
    for (const method of Object.keys(item).filter((k) => METHODS.includes(k))) {
      const ptr = `${itemPtr}/${method}`;
      const op = item[method];
      const id = op.operationId;
      if (typeof id !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(id)) throw new GenerateError(`${ptr}: operationId ${JSON.stringify(id)} is not an identifier (every operation needs one: it names the client's method)`);
      if (ids.has(id)) throw new GenerateError(`${ptr}: operationId ${id} is used twice`);
      ids.add(id);
      if (op.servers) throw new GenerateError(`${ptr}/servers: operation-level servers are not supported`);
      const init = initType(doc, toType, item.parameters ?? [], op, path, ptr);
      const { result, statuses, errorTypes } = resultType(doc, toType, op, ptr);
      const docLines = [`\`${method.toUpperCase()} ${path}\``, ''];
      out.push({ id, method: method.toUpperCase(), path, auth: needsKey(doc, op, ptr), statuses, init, result, errorTypes,
        doc: jsDoc({ description: op.description ?? op.summary, deprecated: op.deprecated }, '  ', docLines) });
    }
  }
  return out;
}

/** The type of the method's argument, and whether the argument may be left out. */
function initType(doc, toType, itemParams, op, path, ptr) {
  const groups = { path: [], query: [], header: [] };
  const byKey = new Map();
  const params = [...itemParams.map((p, i) => [p, `#/paths/${token(path)}/parameters/${i}`]), ...(op.parameters ?? []).map((p, i) => [p, `${ptr}/parameters/${i}`])];
  for (const [raw, rawPtr] of params) {
    const { value: p, ptr: pPtr } = deref(doc, raw, rawPtr);
    byKey.set(`${p.in}:${p.name}`, [p, pPtr]); // an operation's parameter replaces the path item's
  }
  for (const [p, pPtr] of byKey.values()) {
    if (!(p.in in groups)) throw new GenerateError(`${pPtr}: parameters in ${p.in} are not supported`);
    if (p.in === 'header' && IGNORED_HEADERS.has(p.name.toLowerCase())) continue;
    if (p.content) throw new GenerateError(`${pPtr}: a parameter with content (not schema) is not supported`);
    if ((p.style ?? DEFAULT_STYLE[p.in]) !== DEFAULT_STYLE[p.in] || (p.in === 'query' && p.explode === false)) {
      throw new GenerateError(`${pPtr}: parameter style ${p.style}${p.explode === false ? ' (explode: false)' : ''} is not supported`);
    }
    const schema = p.schema ?? true;
    if (p.in === 'query' && [deref(doc, schema, `${pPtr}/schema`).value.type].flat().includes('object')) {
      throw new GenerateError(`${pPtr}: an object-valued query parameter is not supported`);
    }
    const required = p.in === 'path' || p.required === true;
    groups[p.in].push({ required, line: `${jsDoc(p, '      ')}      ${propertyKey(p.name)}${required ? '' : '?'}: ${toType(schema, `${pPtr}/schema`, '      ')};` });
  }
  for (const name of path.match(/\{[^}]+\}/g) ?? []) {
    if (!byKey.has(`path:${name.slice(1, -1)}`)) throw new GenerateError(`${ptr}: path parameter ${name} is not declared`);
  }
  const members = [];
  for (const [key, list] of [['path', groups.path], ['query', groups.query], ['headers', groups.header]]) {
    if (!list.length) continue;
    const required = list.some((x) => x.required);
    members.push({ required, text: `    ${key}${required ? '' : '?'}: {\n${list.map((x) => x.line).join('\n')}\n    };` });
  }
  if (op.requestBody) {
    const { value: body, ptr: bPtr } = deref(doc, op.requestBody, `${ptr}/requestBody`);
    const media = jsonMedia(body.content, bPtr, 'request body');
    if (media) members.push({ required: body.required === true, text: `${jsDoc(body, '    ')}    body${body.required === true ? '' : '?'}: ${toType(media.schema, media.ptr, '    ')};` });
  }
  if (!members.length) return { optional: true, text: '{}' };
  return { optional: !members.some((m) => m.required), text: `{\n${members.map((m) => m.text).join('\n')}\n  }` };
}

/**
 * The method's result: one member per (ok, body type), e.g. `{ ok: true; status: 201; data:
 * MessageResponse; headers: Headers }`. A 2xx is `ok: true`; `default` and ranges (`4XX`) are
 * `status: number`, and `default` counts as an error answer. A response without content has
 * `data: undefined`, a text one `data: string`.
 */
function resultType(doc, toType, op, ptr) {
  const groups = new Map();
  const errorTypes = [];
  const statuses = Object.keys(op.responses ?? {});
  if (!statuses.length) throw new GenerateError(`${ptr}/responses: no responses`);
  for (const status of statuses) {
    if (!/^(?:[1-5](?:\d\d|XX)|default)$/.test(status)) throw new GenerateError(`${ptr}/responses/${status}: not a status code, range or default`);
    const { value: res, ptr: rPtr } = deref(doc, op.responses[status], `${ptr}/responses/${status}`);
    const media = jsonMedia(res.content, rPtr, 'response');
    const data = !media ? 'undefined' : media.text ? 'string' : toType(media.schema, media.ptr, '  ');
    const ok = status[0] === '2';
    if (!ok) errorTypes.push(data);
    const key = `${ok}\n${data}`;
    if (!groups.has(key)) groups.set(key, { ok, data, statuses: [] });
    groups.get(key).statuses.push(/^\d+$/.test(status) ? status : 'number');
  }
  const members = [...groups.values()].map((g) => `    | { ok: ${g.ok}; status: ${union(g.statuses)}; data: ${g.data}; headers: Headers }`);
  return { result: `Promise<\n${members.join('\n')}\n  >`, statuses, errorTypes };
}
