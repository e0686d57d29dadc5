/**
 * The JSON Schema (2020-12, OpenAPI 3.1) of a schema declared with src/http/schema.ts, for the OpenAPI document
 * (docs/api.md#openapi-document): the same definition the validator checks.
 */
import { EMAIL, type ObjectCase, type Props, type TObject, type TSchema, type TString } from '../http/schema.js';

/**
 * Emits `schema` as a JSON Schema (2020-12, OpenAPI 3.1); `refs` collects named schemas for `components.schemas`.
 * @throws Error when two different schemas are given the same name.
 */
export function toJsonSchema(schema: TSchema, refs?: Map<string, TSchema>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (schema.description) out.description = schema.description;
  if (schema.default !== undefined) out.default = schema.default;
  switch (schema.kind) {
    case 'any': return out;
    case 'ref': {
      const target = schema.target();
      const prior = refs?.get(schema.name);
      // A name stands for one exact schema: the same definition built twice is fine, two different ones are not.
      if (prior !== undefined && prior !== target && JSON.stringify(toJsonSchema(prior)) !== JSON.stringify(
        toJsonSchema(target))) {
        throw new Error(`two different schemas are named ${schema.name}`);
      }
      refs?.set(schema.name, target);
      // OpenAPI 3.1 lets a description stand next to `$ref`: the use's own words, the target's shape.
      return { $ref: `#/components/schemas/${schema.name}`, ...out };
    }
    case 'nullable': {
      const inner = toJsonSchema(schema.inner, refs);
      if (typeof inner.type === 'string') return { ...inner, type: [inner.type, 'null'],
        ...(inner.enum ? { enum: [...(inner.enum as unknown[]), null] } : {}) };
      return { ...out, oneOf: [inner, { type: 'null' }] };
    }
    case 'string':
      Object.assign(out, { type: 'string' });
      if (schema.enum) out.enum = [...schema.enum];
      if (schema.minLength !== undefined) out.minLength = schema.minLength;
      if (schema.maxLength !== undefined) out.maxLength = schema.maxLength;
      if (schema.format) out.format = schema.format;
      // `format: email` allows a domain without a dot; the pattern says what the server accepts.
      if (schema.pattern) out.pattern = schema.pattern;
      else if (schema.format === 'email') out.pattern = EMAIL.source;
      return out;
    case 'integer':
    case 'number':
      out.type = schema.kind;
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
      if (schema.cases) return casesSchema(schema, out, refs);
      out.type = 'object';
      const props: Record<string, unknown> = {};
      const required: string[] = [];
      for (const [k, v] of Object.entries(schema.properties as Props)) {
        props[k] = toJsonSchema(v, refs);
        if (!v.optional) required.push(k);
      }
      const anyOf = schema.requireAnyOf;
      if (anyOf?.length) {
        // One alternative per property that may satisfy the rule; several present match several.
        const { description, ...rest } = out;
        const alternative = (k: string) => ({ ...rest, properties: props, required: [...required, k],
          additionalProperties: schema.additionalProperties ?? false });
        return { ...(description !== undefined ? { description } : {}), anyOf: describedOnce(anyOf.map(alternative)) };
      }
      out.properties = props;
      if (required.length) out.required = required;
      out.additionalProperties = schema.additionalProperties ?? false;
      return out;
    }
  }
}

type JsonOut = Record<string, unknown>;

/** An object with {@link TObject.cases} as a `oneOf`: per case, `by` narrowed, required added, refused removed. */
function casesSchema(schema: TObject, out: JsonOut, refs?: Map<string, TSchema>): JsonOut {
  const { by, list } = schema.cases!;
  const byProp = (schema.properties as Props)[by] as TString;
  const covered = list.flatMap((c) => c.when);
  const values = byProp.enum ?? [];
  if (covered.length !== values.length || !values.every((v) => covered.includes(v))) {
    throw new Error(`the cases of ${by} must cover each of its values once`);
  }
  const alternative = (c: ObjectCase): Record<string, unknown> => {
    const props: Props = {};
    for (const [k, v] of Object.entries(schema.properties as Props)) {
      if (c.forbid?.includes(k)) continue;
      if (k === by) {
        const holdsDefault = byProp.default !== undefined && c.when.includes(byProp.default as string);
        const optional = byProp.optional && holdsDefault;
        props[k] = { ...byProp, enum: c.when, optional, default: holdsDefault ? byProp.default : undefined };
      } else props[k] = c.require?.includes(k) ? { ...v, optional: false } : v;
    }
    const settled = (k: string): boolean => c.require?.includes(k) === true || c.forbid?.includes(k) === true;
    const anyOf = schema.requireAnyOf?.some(settled) ? undefined : schema.requireAnyOf;
    const { cases: _, description: __, ...rest } = schema;
    return toJsonSchema({ ...rest, properties: props, requireAnyOf: anyOf }, refs);
  };
  return { ...out, oneOf: describedOnce(list.map(alternative)) };
}

/** Alternatives of one object with each property's description kept only in the first that has it. */
function describedOnce(alternatives: JsonOut[]): JsonOut[] {
  const described = new Set<string>();
  const strip = (alt: JsonOut): JsonOut => {
    if (Array.isArray(alt.anyOf)) return { ...alt, anyOf: (alt.anyOf as JsonOut[]).map(strip) };
    const props: JsonOut = {};
    for (const [k, v] of Object.entries((alt.properties ?? {}) as Record<string, JsonOut>)) {
      if (v.description === undefined || !described.has(k)) { props[k] = v; described.add(k); continue; }
      const { description: _, ...rest } = v;
      props[k] = rest;
    }
    return alt.properties === undefined ? alt : { ...alt, properties: props };
  };
  return alternatives.map(strip);
}
