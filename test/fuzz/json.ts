/**
 * The fuzzer's JSON value model: plain JSON plus raw pieces written verbatim (out-of-range
 * numbers, invalid UTF-8, duplicate keys…), paths into values, and the places (slots) of a body
 * with their schemas.
 */
import type { TObject, TSchema, TString } from '../../src/http/schema.js';

/** JSON text emitted verbatim (numbers out of range, deep nesting, broken syntax). */
export class Raw { constructor(readonly text: string) {} }
/** Bytes emitted verbatim (invalid UTF-8, random bytes). */
export class RawBytes { constructor(readonly bytes: Buffer) {} }
/** A JSON object as an ordered list of entries: duplicate keys, `__proto__` as a plain key. */
export class Entries { constructor(readonly entries: Array<[string, unknown]>) {} }
/** A JSON string whose content holds raw (invalid UTF-8) bytes between two valid parts. */
export class BadStr { constructor(readonly before: string, readonly bytes: Buffer, readonly after: string) {} }

/** Whether `v` is one of the raw pieces above. */
export const isSpecial = (v: unknown): boolean => v instanceof Raw || v instanceof RawBytes || v instanceof Entries || v instanceof BadStr;
/** Whether `v` is a plain JSON object (not an array, null or a raw piece). */
export const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !isSpecial(v);

/** The bytes of a JSON value model, raw pieces written verbatim. */
export function serialize(v: unknown): Buffer {
  const out: Array<string | Buffer> = [];
  const emit = (x: unknown): void => {
    if (x instanceof Raw) out.push(x.text);
    else if (x instanceof RawBytes) out.push(x.bytes);
    else if (x instanceof BadStr) { out.push(JSON.stringify(x.before).slice(0, -1)); out.push(x.bytes); out.push(JSON.stringify(x.after).slice(1)); }
    else if (x instanceof Entries) {
      out.push('{');
      x.entries.forEach(([k, val], i) => { if (i) out.push(','); out.push(JSON.stringify(k) + ':'); emit(val); });
      out.push('}');
    } else if (Array.isArray(x)) {
      out.push('[');
      x.forEach((val, i) => { if (i) out.push(','); emit(val === undefined ? null : val); });
      out.push(']');
    } else if (isPlainObject(x)) {
      out.push('{');
      let first = true;
      for (const k of Object.keys(x)) {
        if (x[k] === undefined) continue;
        if (!first) out.push(',');
        first = false;
        out.push(JSON.stringify(k) + ':');
        emit(x[k]);
      }
      out.push('}');
    } else out.push(JSON.stringify(x) ?? 'null');
  };
  emit(v);
  return Buffer.concat(out.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
}

/** Deep copy of plain JSON data; special pieces are shared (they are never changed). */
export function clone<T>(v: T): T {
  if (Array.isArray(v)) return v.map(clone) as T;
  if (isPlainObject(v)) { const o: Record<string, unknown> = {}; for (const k of Object.keys(v)) o[k] = clone(v[k]); return o as T; }
  return v;
}

/** One step of a path into a JSON value: a property name or an array index. */
export type Seg = string | number;

/** The value at `path` in `root`; undefined when the path leaves the value. */
export function getAt(root: unknown, path: Seg[]): unknown {
  let v = root;
  for (const s of path) {
    if (Array.isArray(v) && typeof s === 'number') v = v[s];
    else if (isPlainObject(v) && typeof s === 'string') v = v[s];
    else return undefined;
  }
  return v;
}

/** Sets (or, with `del`, deletes) the value at `path`; returns the new root. */
export function setAt(root: unknown, path: Seg[], value: unknown, del = false): unknown {
  if (path.length === 0) return value;
  const parent = getAt(root, path.slice(0, -1));
  const last = path[path.length - 1];
  if (Array.isArray(parent) && typeof last === 'number') { if (del) parent.splice(last, 1); else parent[last] = value; }
  else if (isPlainObject(parent) && typeof last === 'string') { if (del) delete parent[last]; else parent[last] = value; }
  return root;
}

// ───────────────────────────── schemas ─────────────────────────────

/** `s` itself, or the schema a named reference stands for. */
export function deref(s: TSchema): TSchema {
  let x = s;
  for (let i = 0; i < 10 && x.kind === 'ref'; i++) x = x.target();
  return x;
}

/** The JSON type check of a schema kind (not lengths or formats): certain mismatches only. */
export function typeOk(schema: TSchema | undefined, v: unknown): boolean {
  if (!schema) return true;
  const s = deref(schema);
  switch (s.kind) {
    case 'any': return true;
    case 'nullable': return v === null || typeOk(s.inner, v);
    case 'string': return typeof v === 'string';
    case 'integer': return typeof v === 'number' && Number.isSafeInteger(v);
    case 'boolean': return typeof v === 'boolean';
    case 'array': return Array.isArray(v);
    case 'object': return isPlainObject(v);
    default: return true;
  }
}

/** A place in a body: a present value (with its schema when known) or an absent optional property. */
export interface Slot { path: Seg[]; schema?: TSchema }

/** Every place in `v` (with its schema when `schema` knows it), the root included, and the absent optional properties. */
export function slotsOf(schema: TSchema | undefined, v: unknown, path: Seg[] = [], out: Slot[] = []): Slot[] {
  out.push({ path, schema });
  if (path.length > 8) return out;
  const s = schema && deref(schema);
  const inner = s?.kind === 'nullable' ? deref(s.inner) : s;
  if (Array.isArray(v)) v.forEach((x, i) => slotsOf(inner?.kind === 'array' ? inner.items : undefined, x, [...path, i], out));
  else if (isPlainObject(v)) {
    for (const k of Object.keys(v)) {
      const props = inner?.kind === 'object' ? (inner.properties as Record<string, TSchema>) : undefined;
      slotsOf(props && Object.hasOwn(props, k) ? props[k] : undefined, v[k], [...path, k], out);
    }
  }
  return out;
}

/** The object schema of a slot, when it has one. */
export const objectSchema = (sl: Slot): TObject | undefined => {
  if (!sl.schema) return undefined;
  let s = deref(sl.schema);
  if (s.kind === 'nullable') s = deref(s.inner);
  return s.kind === 'object' ? s : undefined;
};
/** The string schema of a slot, when it has one. */
export const stringSchema = (sl: Slot): TString | undefined => {
  if (!sl.schema) return undefined;
  let s = deref(sl.schema);
  if (s.kind === 'nullable') s = deref(s.inner);
  return s.kind === 'string' ? s : undefined;
};
