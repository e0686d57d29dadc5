/**
 * A JSON Schema 2020-12 checker for the subset the OpenAPI document uses (docs/api.md#openapi-document):
 * `type` (one or a list), `enum`, `const`, `properties`, `required`, `additionalProperties`
 * (false or a schema), `items`, `minItems`/`maxItems`, `minLength`/`maxLength` (code points),
 * `minimum`/`maximum`, `format` (`date-time`, `email`, `uuid`, `uri` are asserted), `pattern`,
 * `oneOf`/`anyOf`, and `$ref` into the same document (`#/components/...`).
 *
 * It is written independently of `http/schema.ts` on purpose: the contract test checks the
 * server's answers against the document with a second implementation, not with the code that
 * produced them. A keyword outside the subset is a bug in the document and throws, so nothing
 * is ever passed unchecked.
 */

export type JsonSchema = Record<string, unknown> | boolean;

/** One violation: a JSON pointer (RFC 6901) into the value and what is wrong there. */
export interface SchemaError { pointer: string; message: string }

/** Keywords that only describe (never constrain) a value. */
const ANNOTATIONS = new Set(['description', 'title', 'summary', 'default', 'examples', 'example', 'deprecated', 'readOnly', 'writeOnly', '$comment']);
const ASSERTIONS = new Set([
  'type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', 'minItems', 'maxItems',
  'minLength', 'maxLength', 'minimum', 'maximum', 'format', 'pattern', 'oneOf', 'anyOf', '$ref',
]);

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;
const EMAIL = /^[^\s@"<>()[\],;:\\]+@[^\s@"<>()[\],;:\\]+\.[^\s@"<>()[\],;:\\.]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** RFC 3339 §5.6 `date-time`: the grammar plus a real calendar day and clock time (leap second allowed). */
export function isRfc3339DateTime(v: string): boolean {
  const m = DATE_TIME.exec(v);
  if (!m) return false;
  const [y, mo, d, h, mi, sec] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i]));
  if (mo < 1 || mo > 12 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1];
  if (d > days || h > 23 || mi > 59 || sec > 60) return false;
  return m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59);
}

const FORMATS: Record<string, (v: string) => boolean> = {
  'date-time': isRfc3339DateTime,
  email: (v) => EMAIL.test(v),
  uuid: (v) => UUID.test(v),
  uri: (v) => { try { return /^[a-z][a-z0-9+.-]*:/i.test(v) && Boolean(new URL(v)); } catch { return false; } },
};

/** Unicode code points in `v` (JSON Schema counts characters, not UTF-16 units). */
function codePoints(v: string): number {
  let n = 0;
  for (const _ of v) n++;
  return n;
}

/** The JSON type of `v` as JSON Schema names it (`integer` for whole numbers). */
function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

const typeMatches = (want: string, got: string) => want === got || (want === 'number' && got === 'integer');
const escape = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');
const show = (v: unknown) => JSON.stringify(v);

/**
 * `#/a/b` → the part of `root` it names (RFC 6901, in a URI fragment).
 * @throws Error for a reference outside the document or one that does not resolve.
 */
export function resolveRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) throw new Error(`$ref ${ref}: only references into the same document are supported`);
  let cur: unknown = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof cur !== 'object' || cur === null || !Object.hasOwn(cur, part)) throw new Error(`$ref ${ref} does not resolve`);
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function resolveSchema(root: unknown, ref: string): JsonSchema {
  const target = resolveRef(root, ref);
  if (typeof target !== 'boolean' && (typeof target !== 'object' || target === null)) throw new Error(`$ref ${ref} is not a schema`);
  return target as JsonSchema;
}

/**
 * Checks `value` against `schema`; `root` is the document `$ref`s resolve in (default: the
 * schema itself). Returns every violation found, in document order; empty when valid.
 * @throws Error when the schema uses a keyword outside the supported subset or a `$ref` that
 *   does not resolve (a bug in the document, not in the value).
 */
export function validateSchema(schema: JsonSchema, value: unknown, root: unknown = schema): SchemaError[] {
  const errors: SchemaError[] = [];
  check(schema, value, '', root, errors);
  return errors;
}

/** {@link validateSchema} with each error formatted as `pointer: message` (the root is `(root)`). */
export function schemaErrors(schema: JsonSchema, value: unknown, root: unknown = schema): string[] {
  return validateSchema(schema, value, root).map(formatError);
}

export const formatError = (e: SchemaError): string => `${e.pointer || '(root)'}: ${e.message}`;

function check(schema: JsonSchema, value: unknown, ptr: string, root: unknown, out: SchemaError[]): void {
  if (schema === true) return;
  if (schema === false) { out.push({ pointer: ptr, message: 'no value is allowed here' }); return; }
  for (const k of Object.keys(schema)) {
    if (!ASSERTIONS.has(k) && !ANNOTATIONS.has(k) && !k.startsWith('x-')) throw new Error(`unsupported JSON Schema keyword "${k}" at ${ptr || '(root)'}`);
  }
  const err = (message: string, pointer = ptr) => out.push({ pointer, message });

  if (typeof schema.$ref === 'string') check(resolveSchema(root, schema.$ref), value, ptr, root, out);

  const got = jsonType(value);
  if (schema.type !== undefined) {
    const want = (Array.isArray(schema.type) ? schema.type : [schema.type]) as string[];
    if (!want.some((t) => typeMatches(t, got))) {
      // Further keywords would only repeat the mismatch in other words.
      err(`must be of type ${want.join(' or ')} (got ${got})`);
      return;
    }
  }
  if (schema.enum !== undefined && !(schema.enum as unknown[]).some((e) => deepEqual(e, value))) {
    err(`must be one of ${(schema.enum as unknown[]).map(show).join(', ')} (got ${show(value)})`);
  }
  if (Object.hasOwn(schema, 'const') && !deepEqual(schema.const, value)) err(`must be ${show(schema.const)} (got ${show(value)})`);

  if (typeof value === 'string') {
    const n = schema.minLength !== undefined || schema.maxLength !== undefined ? codePoints(value) : 0;
    if (typeof schema.minLength === 'number' && n < schema.minLength) err(`must be at least ${schema.minLength} characters long (got ${n})`);
    if (typeof schema.maxLength === 'number' && n > schema.maxLength) err(`must be at most ${schema.maxLength} characters long (got ${n})`);
    if (typeof schema.format === 'string' && FORMATS[schema.format] && !FORMATS[schema.format](value)) {
      err(`must be a valid ${schema.format} (got ${show(value.length > 80 ? value.slice(0, 80) + '…' : value)})`);
    }
    if (typeof schema.pattern === 'string' && !regex(schema.pattern).test(value)) err(`must match the pattern ${schema.pattern}`);
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) err(`must be at least ${schema.minimum} (got ${value})`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) err(`must be at most ${schema.maximum} (got ${value})`);
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === 'number' && value.length < schema.minItems) err(`must have at least ${schema.minItems} items (got ${value.length})`);
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) err(`must have at most ${schema.maxItems} items (got ${value.length})`);
    if (schema.items !== undefined) value.forEach((item, i) => check(schema.items as JsonSchema, item, `${ptr}/${i}`, root, out));
  }
  if (got === 'object') {
    const obj = value as Record<string, unknown>;
    const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
    for (const name of (schema.required ?? []) as string[]) {
      if (!Object.hasOwn(obj, name)) err('required property is missing', `${ptr}/${escape(name)}`);
    }
    for (const [name, v] of Object.entries(obj)) {
      const at = `${ptr}/${escape(name)}`;
      if (Object.hasOwn(props, name)) check(props[name], v, at, root, out);
      else if (schema.additionalProperties === false) err('additional property not allowed', at);
      else if (schema.additionalProperties !== undefined && schema.additionalProperties !== true) check(schema.additionalProperties as JsonSchema, v, at, root, out);
    }
  }
  if (Array.isArray(schema.oneOf)) combine(schema.oneOf as JsonSchema[], 'oneOf', value, ptr, root, out);
  if (Array.isArray(schema.anyOf)) combine(schema.anyOf as JsonSchema[], 'anyOf', value, ptr, root, out);
}

/**
 * `oneOf` (exactly one branch matches) and `anyOf` (at least one). When no branch matches and
 * only one branch accepts the value's type, that branch's errors are reported — they say what
 * is wrong far better than "matches none" (a nullable object that is an object, say).
 */
function combine(branches: JsonSchema[], kw: 'oneOf' | 'anyOf', value: unknown, ptr: string, root: unknown, out: SchemaError[]): void {
  const results = branches.map((b) => { const e: SchemaError[] = []; check(b, value, ptr, root, e); return e; });
  const matched = results.filter((r) => r.length === 0).length;
  if (kw === 'oneOf' && matched > 1) { out.push({ pointer: ptr, message: `must match exactly one schema in oneOf (matched ${matched})` }); return; }
  if (matched >= 1) return;
  const typeOk = results.filter((r) => !r.some((e) => e.pointer === ptr && e.message.startsWith('must be of type ')));
  if (typeOk.length === 1) { out.push(...typeOk[0]); return; }
  out.push({ pointer: ptr, message: `must match ${kw === 'oneOf' ? 'exactly one' : 'at least one'} schema in ${kw} (matched none)` });
}

const regexCache = new Map<string, RegExp>();
function regex(p: string): RegExp {
  let r = regexCache.get(p);
  if (!r) { r = new RegExp(p, 'u'); regexCache.set(p, r); }
  return r;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
