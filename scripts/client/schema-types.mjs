// JSON Schema (OpenAPI 3.1, plus 3.0's `nullable`) → TypeScript type text, for
// scripts/generate-client.mjs (docs/api.md#generating-a-client). Every keyword of a schema is
// either translated, or known to have no TypeScript counterpart (validation bounds, formats,
// annotations); any other keyword stops the generator with its JSON pointer, so that a schema
// the generator does not understand never silently becomes `unknown`.

/** Keywords that shape the type. */
const STRUCTURAL = new Set(['$ref', 'type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', 'anyOf', 'oneOf', 'allOf', 'nullable']);
/** Keywords with no TypeScript counterpart: value bounds, formats and annotations (some go into JSDoc). */
const IGNORED = new Set(['description', 'title', 'default', 'example', 'examples', 'deprecated', '$comment', 'format', 'contentMediaType', 'contentEncoding',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minLength', 'maxLength', 'pattern',
  'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties', 'externalDocs', 'xml']);
const PRIMITIVE = { string: 'string', number: 'number', integer: 'number', boolean: 'boolean', null: 'null' };
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A generation error: the document uses something the generator does not handle. */
export class GenerateError extends Error {}

/** Escapes a JSON pointer token (`~` → `~0`, `/` → `~1`). */
export const token = (s) => String(s).replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * A JSDoc block for `schema`'s annotations (description, default, deprecated), indented by
 * `indent`; '' when it has none. `extra` lines come first (e.g. an operation's method and path).
 */
export function jsDoc(schema, indent = '', extra = []) {
  const lines = [...extra];
  if (typeof schema?.description === 'string' && schema.description.trim()) lines.push(...schema.description.trim().split('\n'));
  if (schema && 'default' in schema) lines.push(`@default ${JSON.stringify(schema.default)}`);
  if (schema?.deprecated === true) lines.push('@deprecated');
  if (!lines.length) return '';
  const safe = lines.map((l) => l.replace(/\*\//g, '*\\/').trimEnd());
  if (safe.length === 1) return `${indent}/** ${safe[0]} */\n`;
  return `${indent}/**\n${safe.map((l) => `${indent} *${l ? ` ${l}` : ''}`).join('\n')}\n${indent} */\n`;
}

/** True when `text` has a `|` or `&` outside brackets, strings and comments (it needs parentheses inside another union or array). */
function compound(text) {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '*') { i = text.indexOf('*/', i + 2) + 1; continue; }
    if (c === '"') { i++; while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1; continue; }
    if ('{([<'.includes(c)) depth++;
    else if ('})]>'.includes(c)) depth--;
    else if (depth === 0 && (c === '|' || c === '&')) return true;
  }
  return false;
}
const wrap = (t) => (compound(t) ? `(${t})` : t);
/** `A | B` of distinct members; `never` for none. */
export const union = (parts) => { const u = [...new Set(parts)]; return u.length ? u.map(wrap).join(' | ') : 'never'; };
const intersection = (parts) => { const u = [...new Set(parts)]; return u.length === 1 ? u[0] : u.map(wrap).join(' & '); };

/** A TypeScript literal for an `enum`/`const` value; objects and arrays are refused. */
function literal(value, ptr) {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return JSON.stringify(value);
  throw new GenerateError(`${ptr}: enum/const value ${JSON.stringify(value).slice(0, 60)} is not a string, number, boolean or null`);
}

/** A property key as TypeScript writes it. */
export const propertyKey = (name) => (IDENTIFIER.test(name) ? name : JSON.stringify(name));

/**
 * Translates JSON Schema into TypeScript type text.
 * `refName(ref, ptr)` maps a `$ref` string to the name of the type it denotes (or throws).
 * The keywords of one schema are a conjunction, so the parts they give are intersected:
 * `{$ref: A, properties: …}` → `A & { … }`. An empty schema (`{}` or `true`) is `unknown`, as
 * JSON Schema means; `false` is `never`.
 */
export function createSchemaTranslator(refName) {
  /** The type of `schema` found at JSON pointer `ptr`, objects laid out at `indent`. */
  function toType(schema, ptr, indent = '') {
    if (schema === true) return 'unknown';
    if (schema === false) return 'never';
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new GenerateError(`${ptr}: a schema must be an object or a boolean`);
    for (const k of Object.keys(schema)) {
      if (!STRUCTURAL.has(k) && !IGNORED.has(k) && !k.startsWith('x-')) {
        throw new GenerateError(`${ptr}: unsupported schema keyword "${k}" (the generator understands ${[...STRUCTURAL].join(', ')}, and ignores ${[...IGNORED].join(', ')} and x-*)`);
      }
    }
    const parts = [];
    if ('$ref' in schema) parts.push(refName(schema.$ref, `${ptr}/$ref`));
    if ('const' in schema) parts.push(literal(schema.const, `${ptr}/const`));
    if ('enum' in schema) {
      if (!Array.isArray(schema.enum)) throw new GenerateError(`${ptr}/enum: not an array`);
      parts.push(union(schema.enum.map((v, i) => literal(v, `${ptr}/enum/${i}`))));
    }
    // Listed values (const, enum) already fix the type: `type` adds nothing to them.
    const listed = 'const' in schema || 'enum' in schema;
    if (!listed && ('type' in schema || 'properties' in schema || 'items' in schema || 'additionalProperties' in schema)) {
      const types = schema.type === undefined ? (('items' in schema) ? ['array'] : ['object']) : [schema.type].flat();
      parts.push(union(types.map((t) => typeOf(t, schema, ptr, indent))));
    }
    for (const k of ['anyOf', 'oneOf']) if (k in schema) parts.push(union(list(schema, k, ptr).map((s, i) => toType(s, `${ptr}/${k}/${i}`, indent))));
    if ('allOf' in schema) parts.push(...list(schema, 'allOf', ptr).map((s, i) => toType(s, `${ptr}/allOf/${i}`, indent)));
    let type = parts.length ? intersection(parts) : 'unknown';
    if (schema.nullable === true && type !== 'unknown') type = union([type, 'null']);
    return type;
  }

  function list(schema, k, ptr) {
    if (!Array.isArray(schema[k]) || !schema[k].length) throw new GenerateError(`${ptr}/${k}: not a non-empty array`);
    return schema[k];
  }

  /** The type of one member of `type`. */
  function typeOf(t, schema, ptr, indent) {
    if (t in PRIMITIVE) return PRIMITIVE[t];
    if (t === 'array') return 'items' in schema ? `${wrap(toType(schema.items, `${ptr}/items`, indent))}[]` : 'unknown[]';
    if (t === 'object') return objectType(schema, ptr, indent);
    throw new GenerateError(`${ptr}/type: unknown type ${JSON.stringify(t)}`);
  }

  /**
   * `{ a: A; b?: B }` per `properties` and `required`; `additionalProperties` absent or true
   * gives `[key: string]: unknown` (JSON Schema allows other properties unless told not to), a
   * schema gives an index signature of its type (joined with the properties' types, and
   * `undefined` when one is optional, which TypeScript requires), false none — then TypeScript's excess-property check refuses others.
   */
  function objectType(schema, ptr, indent) {
    const props = schema.properties ?? {};
    if (typeof props !== 'object' || Array.isArray(props)) throw new GenerateError(`${ptr}/properties: not an object`);
    const required = schema.required ?? [];
    if (!Array.isArray(required)) throw new GenerateError(`${ptr}/required: not an array`);
    const inner = `${indent}  `;
    const lines = [];
    const types = [];
    for (const [name, sub] of Object.entries(props)) {
      const t = toType(sub, `${ptr}/properties/${token(name)}`, inner);
      types.push(t);
      lines.push(`${jsDoc(sub, inner)}${inner}${propertyKey(name)}${required.includes(name) ? '' : '?'}: ${t};`);
    }
    for (const name of required) if (!(name in props)) lines.push(`${inner}${propertyKey(name)}: unknown;`);
    const extra = schema.additionalProperties;
    if (extra === undefined || extra === true) lines.push(`${inner}[key: string]: unknown;`);
    else if (extra !== false) {
      const t = toType(extra, `${ptr}/additionalProperties`, inner);
      const optional = Object.keys(props).some((name) => !required.includes(name));
      lines.push(`${inner}[key: string]: ${t === 'unknown' ? t : union([t, ...types, ...(optional ? ['undefined'] : [])])};`);
    }
    // `{}` would be any non-null value; an object that may have no property at all is this:
    return lines.length ? `{\n${lines.join('\n')}\n${indent}}` : '{ [key: string]: never }';
  }

  return toType;
}
