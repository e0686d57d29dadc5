/**
 * Request and record shapes declared as data (docs/decisions.md#the-route-table-is-the-single-description): a small builder of JSON
 * Schema objects whose TypeScript type is inferred ({@link Static}), a validator that turns a
 * parsed JSON value into that type or throws a 400 naming the field (docs/api.md#errors), and
 * {@link toJsonSchema}, which emits the same definition for the OpenAPI document.
 */
import { invalid as invalidIn, type ApiError, type RequestPart } from './errors.js';

export type Format = 'email' | 'date-time' | 'uuid' | 'uri';

interface Base { description?: string; optional?: boolean }
export interface TString<E extends string = string> extends Base {
  kind: 'string'; minLength?: number; maxLength?: number; enum?: readonly E[]; format?: Format; pattern?: string;
}
export interface TInteger extends Base { kind: 'integer'; minimum?: number; maximum?: number }
export interface TBoolean extends Base { kind: 'boolean' }
export interface TArray<I extends TSchema = TSchema> extends Base { kind: 'array'; items: I; maxItems?: number; minItems?: number }
export interface TObject<P extends Props = Props> extends Base {
  kind: 'object'; properties: P; additionalProperties?: boolean;
}
export interface TNullable<I extends TSchema = TSchema> extends Base { kind: 'nullable'; inner: I }
export interface TRef extends Base { kind: 'ref'; name: string; target: () => TSchema }
export interface TAny extends Base { kind: 'any' }
export type TSchema = TString<string> | TInteger | TBoolean | TArray<any> | TObject<any> | TNullable<any> | TRef | TAny;
export type Props = Record<string, TSchema>;

type Opt<S> = S & { optional: true };
type OptionalKeys<P> = { [K in keyof P]: P[K] extends { optional: true } ? K : never }[keyof P];
type RequiredKeys<P> = Exclude<keyof P, OptionalKeys<P>>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
/** The TypeScript type of a value that passed validation against `S`. */
export type Static<S> =
  S extends TString<infer E> ? E :
  S extends TInteger ? number :
  S extends TBoolean ? boolean :
  S extends TArray<infer I> ? Static<I>[] :
  S extends TObject<infer P> ? Simplify<{ [K in RequiredKeys<P>]: Static<P[K]> } & { [K in OptionalKeys<P>]?: Static<P[K]> }> :
  S extends TNullable<infer I> ? Static<I> | null :
  unknown;

/** Schema builders. Each returns a plain, JSON-Schema-like object (see {@link toJsonSchema}). */
export const s = {
  string: (o: Omit<TString, 'kind'> = {}): TString => ({ kind: 'string', ...o }),
  enum: <const E extends string>(values: readonly E[], o: Omit<TString<E>, 'kind' | 'enum'> = {}): TString<E> => ({ kind: 'string', enum: values, ...o }),
  integer: (o: Omit<TInteger, 'kind'> = {}): TInteger => ({ kind: 'integer', ...o }),
  boolean: (o: Omit<TBoolean, 'kind'> = {}): TBoolean => ({ kind: 'boolean', ...o }),
  array: <I extends TSchema>(items: I, o: Omit<TArray<I>, 'kind' | 'items'> = {}): TArray<I> => ({ kind: 'array', items, ...o }),
  object: <P extends Props>(properties: P, o: Omit<TObject<P>, 'kind' | 'properties'> = {}): TObject<P> =>
    ({ kind: 'object', properties, additionalProperties: false, ...o }),
  nullable: <I extends TSchema>(inner: I): TNullable<I> => ({ kind: 'nullable', inner }),
  optional: <S extends TSchema>(schema: S): Opt<S> => ({ ...schema, optional: true }),
  ref: (name: string, target: () => TSchema): TRef => ({ kind: 'ref', name, target }),
  any: (o: Omit<TAny, 'kind'> = {}): TAny => ({ kind: 'any', ...o }),
};

const EMAIL = /^[^\s@"<>()\[\],;:\\]+@[^\s@"<>()\[\],;:\\]+\.[^\s@"<>()\[\],;:\\.]+$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Length in Unicode code points (JSON Schema's `maxLength` unit), cheap when no surrogates. */
export function codePointLength(str: string): number {
  let n = str.length;
  for (let i = 0; i < str.length; i++) {
    const c = str.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < str.length) {
      const d = str.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { n--; i++; }
    }
  }
  return n;
}

/** True when `v` is an RFC 3339 date-time that denotes a real instant. */
export function isDateTime(v: string): boolean {
  if (!DATE_TIME.test(v) || Number.isNaN(Date.parse(v))) return false;
  // Date.parse rolls impossible dates over (2026-02-30 → 2026-03-02): check the calendar.
  const [y, m, d] = [Number(v.slice(0, 4)), Number(v.slice(5, 7)), Number(v.slice(8, 10))];
  const days = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return m >= 1 && m <= 12 && d >= 1 && d <= days && Number(v.slice(11, 13)) < 24 && Number(v.slice(14, 16)) < 60 && Number(v.slice(17, 19)) < 60;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const fieldName = (path: string) => path || 'the body';

/**
 * Validates `value` against `schema` and returns it typed as `Static<S>`.
 * `part` is the part of the request `value` is (the body by default; `query` for the
 * parameters of a query string, which names them as such in the message).
 * @throws ApiError 400 `invalid_request` whose `detail` names the field by its JSON path, such as
 *   `subject must be at most 200 characters` or `customer.email must be a valid email address`.
 */
export function validate<S extends TSchema>(schema: S, value: unknown, part: RequestPart = 'body'): Static<S> {
  check(schema, value, '', part);
  return value as Static<S>;
}

/** {@link validate} without the static type, for callers holding an erased schema. */
export function assertValid(schema: TSchema, value: unknown, part: RequestPart = 'body'): void {
  check(schema, value, '', part);
}

function check(schema: TSchema, value: unknown, path: string, part: RequestPart): void {
  const name = fieldName(path);
  const invalid = (detail: string): ApiError => invalidIn(detail, part);
  switch (schema.kind) {
    case 'any': return;
    case 'ref': return check(schema.target(), value, path, part);
    case 'nullable':
      if (value === null) return;
      return check(schema.inner, value, path, part);
    case 'string': {
      if (typeof value !== 'string') throw invalid(`${name} must be a string`);
      // JSON can carry lone UTF-16 surrogates (\ud800); they are not text and cannot be stored as UTF-8.
      if (!value.isWellFormed()) throw invalid(`${name} must be well-formed Unicode text (it has a lone surrogate)`);
      if (schema.enum && !schema.enum.includes(value)) throw invalid(`${name} must be one of ${schema.enum.join(', ')}`);
      if (schema.maxLength !== undefined && value.length > schema.maxLength && codePointLength(value) > schema.maxLength) {
        throw invalid(schema.minLength ? `${name} must be ${schema.minLength} to ${plural(schema.maxLength, 'character')}` : `${name} must be at most ${plural(schema.maxLength, 'character')}`);
      }
      if (schema.minLength !== undefined && codePointLength(value) < schema.minLength) {
        throw invalid(schema.maxLength !== undefined ? `${name} must be ${schema.minLength} to ${plural(schema.maxLength, 'character')}` : `${name} must be at least ${plural(schema.minLength, 'character')}`);
      }
      if (schema.format === 'email' && !EMAIL.test(value)) throw invalid(`${name} must be a valid email address`);
      if (schema.format === 'date-time' && !isDateTime(value)) throw invalid(`${name} must be an ISO 8601 date-time such as 2026-06-29T12:00:00Z`);
      if (schema.format === 'uuid' && !UUID.test(value)) throw invalid(`${name} must be a UUID`);
      if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)) throw invalid(`${name} has an invalid format`);
      return;
    }
    case 'integer': {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalid(`${name} must be an integer`);
      if ((schema.minimum !== undefined && value < schema.minimum) || (schema.maximum !== undefined && value > schema.maximum)) {
        throw invalid(`${name} must be an integer from ${schema.minimum ?? Number.MIN_SAFE_INTEGER} to ${schema.maximum ?? Number.MAX_SAFE_INTEGER}`);
      }
      return;
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw invalid(`${name} must be true or false`);
      return;
    case 'array': {
      if (!Array.isArray(value)) throw invalid(`${name} must be an array`);
      if (schema.maxItems !== undefined && value.length > schema.maxItems) throw invalid(`${name} must have at most ${plural(schema.maxItems, 'item')}`);
      if (schema.minItems !== undefined && value.length < schema.minItems) throw invalid(`${name} must have at least ${plural(schema.minItems, 'item')}`);
      for (let i = 0; i < value.length; i++) check(schema.items, value[i], `${path}[${i}]`, part);
      return;
    }
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(`${name} must be a JSON object`);
      const rec = value as Record<string, unknown>;
      if (schema.additionalProperties === false) {
        for (const key of Object.keys(rec)) {
          if (!Object.hasOwn(schema.properties, key)) throw invalid(`${path ? `${path}.` : ''}${key} is not an allowed property`);
        }
      }
      for (const [key, prop] of Object.entries(schema.properties as Props)) {
        const sub = path ? `${path}.${key}` : key;
        if (!Object.hasOwn(rec, key) || rec[key] === undefined) {
          if (!prop.optional) throw invalid(`${sub} is required`);
          continue;
        }
        check(prop, rec[key], sub, part);
      }
      return;
    }
  }
}

/**
 * Emits `schema` as a JSON Schema (2020-12, as used by OpenAPI 3.1). `refs` collects named
 * schemas (`s.ref`) so the caller can place them under `components.schemas`.
 */
export function toJsonSchema(schema: TSchema, refs?: Map<string, TSchema>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (schema.description) out.description = schema.description;
  switch (schema.kind) {
    case 'any': return out;
    case 'ref':
      refs?.set(schema.name, schema.target());
      return { $ref: `#/components/schemas/${schema.name}` };
    case 'nullable': {
      const inner = toJsonSchema(schema.inner, refs);
      if (typeof inner.type === 'string') return { ...inner, type: [inner.type, 'null'], ...(inner.enum ? { enum: [...(inner.enum as unknown[]), null] } : {}) };
      return { ...out, oneOf: [inner, { type: 'null' }] };
    }
    case 'string':
      Object.assign(out, { type: 'string' });
      if (schema.enum) out.enum = [...schema.enum];
      if (schema.minLength !== undefined) out.minLength = schema.minLength;
      if (schema.maxLength !== undefined) out.maxLength = schema.maxLength;
      if (schema.format) out.format = schema.format;
      if (schema.pattern) out.pattern = schema.pattern;
      return out;
    case 'integer':
      out.type = 'integer';
      if (schema.minimum !== undefined) out.minimum = schema.minimum;
      if (schema.maximum !== undefined) out.maximum = schema.maximum;
      return out;
    case 'boolean': out.type = 'boolean'; return out;
    case 'array':
      out.type = 'array';
      out.items = toJsonSchema(schema.items, refs);
      if (schema.maxItems !== undefined) out.maxItems = schema.maxItems;
      if (schema.minItems !== undefined) out.minItems = schema.minItems;
      return out;
    case 'object': {
      out.type = 'object';
      const props: Record<string, unknown> = {};
      const required: string[] = [];
      for (const [k, v] of Object.entries(schema.properties as Props)) {
        props[k] = toJsonSchema(v, refs);
        if (!v.optional) required.push(k);
      }
      out.properties = props;
      if (required.length) out.required = required;
      out.additionalProperties = schema.additionalProperties ?? false;
      return out;
    }
  }
}
