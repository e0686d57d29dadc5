/**
 * The schema builder's parts that the OpenAPI document uses for client generators
 * (docs/api.md#openapi-document): named schemas, "at least one of" objects, `date` and `number`,
 * `default` — each validated by the server exactly as the document states it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertValid, isDate, s, type TSchema } from '../src/http/schema.js';
import { toJsonSchema } from '../src/openapi/jsonSchema.js';
import { ApiError } from '../src/http/errors.js';

/** The 400 message `assertValid` throws for `value`, or '' when it passes. */
function refusal(schema: TSchema, value: unknown): string {
  try { assertValid(schema, value); return ''; } catch (e) { assert.ok(e instanceof ApiError); return e.message; }
}

test('requireAnyOf: at least one of the properties, several allowed; emitted as an anyOf of the object with each required', () => {
  const body = s.object({ name: s.optional(s.string()), url: s.optional(s.string()), content: s.optional(s.string()) }, { requireAnyOf: ['url', 'content'], description: 'd' });
  assert.equal(refusal(body, {}), 'Request body is invalid: url or content is required.');
  assert.equal(refusal(body, { name: 'x' }), 'Request body is invalid: url or content is required.');
  assert.equal(refusal(body, { name: 5 }), 'Request body is invalid: name must be a string.', 'the properties are checked first');
  for (const ok of [{ url: 'u' }, { content: 'c' }, { url: 'u', content: 'c' }]) assert.equal(refusal(body, ok), '');
  const props = { name: { type: 'string' }, url: { type: 'string' }, content: { type: 'string' } };
  assert.deepEqual(toJsonSchema(body), {
    description: 'd',
    anyOf: [
      { type: 'object', properties: props, required: ['url'], additionalProperties: false },
      { type: 'object', properties: props, required: ['content'], additionalProperties: false },
    ],
  });
  const nested = s.object({ a: s.object({ x: s.optional(s.integer()), y: s.optional(s.integer()), z: s.optional(s.integer()) }, { requireAnyOf: ['x', 'y', 'z'] }) });
  assert.equal(refusal(nested, { a: {} }), 'Request body is invalid: a.x, a.y or a.z is required.');
});

test('format date: a real YYYY-MM-DD day, with the message the analytics query has always given', () => {
  const d = s.object({ from: s.string({ format: 'date' }) });
  assert.equal(refusal(d, { from: '2024-02-29' }), '');
  for (const bad of ['2026-02-29', '2026-6-1', '2026-13-01', '2026-06-31', '2026-06-29T00:00:00Z', '']) {
    assert.equal(refusal(d, { from: bad }), 'Request body is invalid: from must be a date such as 2026-06-29.', bad);
  }
  assert.equal(isDate('2000-02-29'), true);
  assert.equal(isDate('1900-02-29'), false);
  assert.deepEqual(toJsonSchema(s.string({ format: 'date' })), { type: 'string', format: 'date' });
});

test('number: any finite JSON number within its bounds, emitted as type number', () => {
  const n = s.object({ score: s.number({ minimum: 0 }) });
  for (const ok of [0, 7.31, 1e300]) assert.equal(refusal(n, { score: ok }), '');
  assert.equal(refusal(n, { score: '7' }), 'Request body is invalid: score must be a number.');
  assert.equal(refusal(n, { score: -0.5 }), 'Request body is invalid: score must be a number from 0 to ∞.');
  assert.deepEqual(toJsonSchema(s.number({ minimum: 0, description: 'x' })), { description: 'x', type: 'number', minimum: 0 });
});

test('default is stated in the JSON Schema (the handler applies it)', () => {
  assert.deepEqual(toJsonSchema(s.enum(['auto', 'text'] as const, { default: 'auto' })), { default: 'auto', type: 'string', enum: ['auto', 'text'] });
});

test('named schemas: a $ref (with the use\'s own description beside it), collected once, validated through; two different ones under one name throw', () => {
  const thing = s.named('Thing', s.object({ id: s.string() }));
  const refs = new Map<string, TSchema>();
  const out = toJsonSchema(s.object({ a: thing, b: s.optional({ ...thing, description: 'the other one' }), c: s.array(thing) }), refs);
  assert.deepEqual(out.properties, {
    a: { $ref: '#/components/schemas/Thing' },
    b: { $ref: '#/components/schemas/Thing', description: 'the other one' },
    c: { type: 'array', items: { $ref: '#/components/schemas/Thing' } },
  });
  assert.deepEqual([...refs.keys()], ['Thing']);
  assert.deepEqual(toJsonSchema(refs.get('Thing')!), { type: 'object', properties: { id: { type: 'string' } }, required: ['id'], additionalProperties: false });
  assert.equal(refusal(s.object({ a: thing }), { a: { id: 1 } }), 'Request body is invalid: a.id must be a string.');
  const same = s.named('Thing', s.object({ id: s.string() }));
  assert.doesNotThrow(() => toJsonSchema(s.object({ a: thing, b: same }), new Map()));
  const other = s.named('Thing', s.object({ id: s.integer() }));
  assert.throws(() => toJsonSchema(s.object({ a: thing, b: other }), new Map()), /two different schemas are named Thing/);
});
