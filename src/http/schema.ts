/**
 * Request and record shapes declared as data (docs/decisions.md#the-route-table-is-the-single-description): a small
 * builder of JSON Schema objects whose TypeScript type is inferred ({@link Static}), and a validator that throws an
 * {@link InvalidInputError} naming the field's path and reason (docs/api.md#errors). src/openapi/jsonSchema.ts emits
 * the same definitions for the OpenAPI document.
 */
import { domainAnswer, type RequestPart } from './errors.js';
import { InvalidInputError } from '../core/errors.js';

/**
 * String formats: {@link validate} asserts `email`, `date-time`, `date` and `uuid`; `uri` is for clients only, the
 * handlers parse URLs with stricter rules of their own (docs/api.md#create-source).
 */
export type Format = 'email' | 'date-time' | 'date' | 'uuid' | 'uri';

interface Base {
  description?: string; optional?: boolean;
  /** The value the server assumes when the property is left out (stated in the document; the handler applies it). */
  default?: string | number | boolean;
}
export interface TString<E extends string = string> extends Base {
  kind: 'string'; minLength?: number; maxLength?: number; enum?: readonly E[]; format?: Format; pattern?: string;
}
export interface TInteger extends Base { kind: 'integer'; minimum?: number; maximum?: number }
/** Any finite JSON number. */
export interface TNumber extends Base { kind: 'number'; minimum?: number; maximum?: number }
export interface TBoolean extends Base { kind: 'boolean' }
export interface TArray<I extends TSchema = TSchema> extends Base {
  kind: 'array'; items: I; maxItems?: number; minItems?: number }
export interface TObject<P extends Props = Props> extends Base {
  kind: 'object'; properties: P; additionalProperties?: boolean;
  /** At least one of these optional properties must be present; emitted as an `anyOf` (a union for clients). */
  requireAnyOf?: readonly string[];
  /**
   * Rules that depend on the value of one property (`by`, an enum): emitted as a `oneOf` with one alternative per case,
   * checked after the object's own rules, in declaration order.
   */
  cases?: { by: string; list: readonly ObjectCase[] };
}
/** One case of {@link TObject.cases}: for the values `when` of `by`, properties required and properties refused. */
export interface ObjectCase {
  /** The values of `by` this case is for; the one that is `by`'s default also covers `by` left out. */
  when: readonly string[];
  /** Properties this case requires (`is required for type header`). */
  require?: readonly string[];
  /** Properties this case refuses. */
  forbid?: readonly string[];
  /** The reason a refused property is given for value `v` (default: `is only allowed for type …`). */
  forbidden?: (v: string) => string;
}
export interface TNullable<I extends TSchema = TSchema> extends Base { kind: 'nullable'; inner: I }
/** A named schema: `components.schemas[name]` in the document, `$ref`'d wherever it is used. */
export interface TRef<S extends TSchema = TSchema> extends Base { kind: 'ref'; name: string; target: () => S }
export interface TAny extends Base { kind: 'any' }
export type TSchema =
  TString<string> | TInteger | TNumber | TBoolean | TArray<any> | TObject<any> | TNullable<any> | TRef<any> | TAny;
export type Props = Record<string, TSchema>;

type Opt<S> = S & { optional: true };
type OptionalKeys<P> = { [K in keyof P]: P[K] extends { optional: true } ? K : never }[keyof P];
type RequiredKeys<P> = Exclude<keyof P, OptionalKeys<P>>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
/** The TypeScript type of a value that passed validation against `S`. */
export type Static<S> =
  S extends TString<infer E> ? E :
  S extends TInteger ? number :
  S extends TNumber ? number :
  S extends TBoolean ? boolean :
  S extends TArray<infer I> ? Static<I>[] :
  S extends TObject<infer P> ? Simplify<{ [K in RequiredKeys<P>]: Static<P[K]> } & {
    [K in OptionalKeys<P>]?: Static<P[K]> }> :
  S extends TNullable<infer I> ? Static<I> | null :
  S extends TRef<infer T> ? Static<T> :
  unknown;

/** Schema builders. Each returns a plain, JSON-Schema-like object (see {@link toJsonSchema}). */
export const s = {
  string: (o: Omit<TString, 'kind'> = {}): TString => ({ kind: 'string', ...o }),
  enum: <const E extends string>(values: readonly E[], o: Omit<TString<E>, 'kind' | 'enum'> = {}): TString<E> =>
    ({ kind: 'string', enum: values, ...o }),
  integer: (o: Omit<TInteger, 'kind'> = {}): TInteger => ({ kind: 'integer', ...o }),
  number: (o: Omit<TNumber, 'kind'> = {}): TNumber => ({ kind: 'number', ...o }),
  boolean: (o: Omit<TBoolean, 'kind'> = {}): TBoolean => ({ kind: 'boolean', ...o }),
  array: <I extends TSchema>(items: I, o: Omit<TArray<I>, 'kind' | 'items'> = {}): TArray<I> =>
    ({ kind: 'array', items, ...o }),
  object: <P extends Props>(properties: P, o: Omit<TObject<P>, 'kind' | 'properties'> = {}): TObject<P> =>
    ({ kind: 'object', properties, additionalProperties: false, ...o }),
  nullable: <I extends TSchema>(inner: I): TNullable<I> => ({ kind: 'nullable', inner }),
  optional: <S extends TSchema>(schema: S): Opt<S> => ({ ...schema, optional: true }),
  ref: <S extends TSchema>(name: string, target: () => S): TRef<S> => ({ kind: 'ref', name, target }),
  /** `schema` under a component name that no global type has (docs/api.md#openapi-document). */
  named: <S extends TSchema>(name: string, schema: S): TRef<S> => ({ kind: 'ref', name, target: () => schema }),
  any: (o: Omit<TAny, 'kind'> = {}): TAny => ({ kind: 'any', ...o }),
};

export const EMAIL = /^[^\s@"<>()\[\],;:\\]+@[^\s@"<>()\[\],;:\\]+\.[^\s@"<>()\[\],;:\\.]+$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

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
  return m >= 1 && m <= 12 && d >= 1 && d <= days && Number(v.slice(11, 13)) < 24 && Number(v.slice(14, 16)) < 60 &&
    Number(v.slice(17, 19)) < 60;
}

/** True when `v` is a `YYYY-MM-DD` date (RFC 3339 `full-date`) that names a real day. */
export function isDate(v: string): boolean {
  const m = DATE.exec(v);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return mo >= 1 && mo <= 12 && d >= 1 && d <= new Date(Date.UTC(y, mo, 0)).getUTCDate();
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * Validates `value`, a request's body (or with `part` `query`, its query parameters), against `schema`.
 * @throws ApiError 400 `invalid_request` from the {@link InvalidInputError} (its `cause`), such as `Request body is
 *   invalid: customer.email must be a valid email address.`
 */
export function validate<S extends TSchema>(schema: S, value: unknown, part: RequestPart = 'body'): Static<S> {
  assertValid(schema, value, part);
  return value as Static<S>;
}

/** {@link validate} without the static type, for callers holding an erased schema. */
export function assertValid(schema: TSchema, value: unknown, part: RequestPart = 'body'): void {
  try {
    check(schema, value, []);
  } catch (e) {
    throw e instanceof InvalidInputError ? domainAnswer(e, part) : e;
  }
}

/**
 * Validates `value`, an input that is not a request (an import file, an admin command's input), against `schema`.
 * @throws InvalidInputError with the JSON path of the first problem (`['customer', 'email']`) and the reason.
 */
export function validateInput<S extends TSchema>(schema: S, value: unknown): Static<S> {
  check(schema, value, []);
  return value as Static<S>;
}

/** {@link validateInput} without the static type, for callers holding an erased schema. */
export function assertValidInput(schema: TSchema, value: unknown): void {
  check(schema, value, []);
}

/** The reason for an integer outside `schema`'s bounds (also a query parameter that is not an integer). */
export function integerReason(schema: TInteger): string {
  return `must be an integer from ${schema.minimum ?? Number.MIN_SAFE_INTEGER} ` +
    `to ${schema.maximum ?? Number.MAX_SAFE_INTEGER}`;
}

/** The reason for a string whose length is outside `schema`'s bounds. */
function lengthReason(schema: TString): string {
  if (schema.maxLength !== undefined) {
    return schema.minLength
      ? `must be ${schema.minLength} to ${plural(schema.maxLength, 'character')}`
      : `must be at most ${plural(schema.maxLength, 'character')}`;
  }
  return `must be at least ${plural(schema.minLength ?? 0, 'character')}`;
}

/** Checks `value` at `path` (a stack) against `schema`. @throws InvalidInputError with a copy of the path. */
function check(schema: TSchema, value: unknown, path: (string | number)[]): void {
  const invalid = (reason: string): InvalidInputError => new InvalidInputError(path.slice(), reason);
  switch (schema.kind) {
    case 'any': return;
    case 'ref': return check(schema.target(), value, path);
    case 'nullable':
      if (value === null) return;
      return check(schema.inner, value, path);
    case 'string': {
      if (typeof value !== 'string') throw invalid('must be a string');
      // JSON can carry lone UTF-16 surrogates (\ud800); they are not text and cannot be stored as UTF-8.
      if (!value.isWellFormed()) throw invalid('must be well-formed Unicode text (it has a lone surrogate)');
      if (schema.enum && !schema.enum.includes(value)) throw invalid(`must be one of ${schema.enum.join(', ')}`);
      if (schema.maxLength !== undefined && value.length > schema.maxLength &&
        codePointLength(value) > schema.maxLength) throw invalid(lengthReason(schema));
      if (schema.minLength !== undefined && codePointLength(value) < schema.minLength) throw invalid(
        lengthReason(schema));
      if (schema.format === 'email' && !EMAIL.test(value)) throw invalid('must be a valid email address');
      if (schema.format === 'date-time' && !isDateTime(value)) throw invalid(
        'must be an ISO 8601 date-time such as 2026-06-29T12:00:00Z');
      if (schema.format === 'date' && !isDate(value)) throw invalid('must be a date such as 2026-06-29');
      if (schema.format === 'uuid' && !UUID.test(value)) throw invalid('must be a UUID');
      if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)) throw invalid(
        'has an invalid format');
      return;
    }
    case 'integer': {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw invalid('must be an integer');
      if ((schema.minimum !== undefined && value < schema.minimum) ||
        (schema.maximum !== undefined && value > schema.maximum)) throw invalid(integerReason(schema));
      return;
    }
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid('must be a number');
      if ((schema.minimum !== undefined && value < schema.minimum) ||
        (schema.maximum !== undefined && value > schema.maximum)) {
        throw invalid(`must be a number from ${schema.minimum ?? '-∞'} to ${schema.maximum ?? '∞'}`);
      }
      return;
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw invalid('must be true or false');
      return;
    case 'array': {
      if (!Array.isArray(value)) throw invalid('must be an array');
      if (schema.maxItems !== undefined && value.length > schema.maxItems) throw invalid(
        `must have at most ${plural(schema.maxItems, 'item')}`);
      if (schema.minItems !== undefined && value.length < schema.minItems) throw invalid(
        `must have at least ${plural(schema.minItems, 'item')}`);
      for (let i = 0; i < value.length; i++) {
        path.push(i);
        check(schema.items, value[i], path);
        path.pop();
      }
      return;
    }
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('must be a JSON object');
      const rec = value as Record<string, unknown>;
      if (schema.additionalProperties === false) {
        for (const key of Object.keys(rec)) {
          if (!Object.hasOwn(schema.properties, key)) throw new InvalidInputError([...path, key],
            'is not an allowed property');
        }
      }
      for (const [key, prop] of Object.entries(schema.properties as Props)) {
        if (!Object.hasOwn(rec, key) || rec[key] === undefined) {
          if (!prop.optional) throw new InvalidInputError([...path, key], 'is required');
          continue;
        }
        path.push(key);
        check(prop, rec[key], path);
        path.pop();
      }
      const anyOf = schema.requireAnyOf;
      if (anyOf?.length && !anyOf.some((k) => rec[k] !== undefined)) {
        throw new InvalidInputError(path.slice(), 'is required', anyOf.map((k) => [...path, k]));
      }
      if (schema.cases) checkCase(schema, rec, path);
      return;
    }
  }
}

/** The value `by` takes in `rec` (its default when left out). */
function caseValue(schema: TObject, rec: Record<string, unknown>): unknown {
  const by = schema.cases!.by;
  return rec[by] !== undefined ? rec[by] : (schema.properties as Props)[by]?.default;
}

/** Applies the case of {@link TObject.cases} that `rec`'s value of `by` falls in (`rec` passed the own rules). */
function checkCase(schema: TObject, rec: Record<string, unknown>, path: (string | number)[]): void {
  const { by, list } = schema.cases!;
  const v = caseValue(schema, rec);
  const c = list.find((x) => x.when.includes(v as string));
  if (c === undefined) return;
  // In the order the properties are declared, as the object's own rules are checked.
  for (const k of Object.keys(schema.properties)) {
    if (c.require?.includes(k) && rec[k] === undefined) {
      throw new InvalidInputError([...path, k], `is required for ${by} ${v}`);
    }
    if (c.forbid?.includes(k) && rec[k] !== undefined) {
      const takers = list.filter((x) => !x.forbid?.includes(k)).flatMap((x) => x.when);
      const reason = c.forbidden ? c.forbidden(v as string) : `is only allowed for ${by} ${takers.join(', ')}`;
      throw new InvalidInputError([...path, k], reason);
    }
  }
}
