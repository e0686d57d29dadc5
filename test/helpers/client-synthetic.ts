/**
 * A small OpenAPI 3.1 document that uses every schema keyword the client generator translates
 * (docs/api.md#generating-a-client) and the request features its runtime sends (path-item
 * parameters, an array query parameter, a header parameter, `security: []`, a `default`
 * response, a `+json` media type, a relative server URL), and a TypeScript file written against
 * the client generated from it: each value that fits a schema, and after each `@ts-expect-error`
 * one that does not. test/client-generated.test.ts type-checks both.
 */
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ 'application/json': { schema } });

export const SYNTHETIC = {
  openapi: '3.1.0',
  info: { title: 'Synthetic', version: '1' },
  servers: [{ url: '/v2/' }],
  security: [{ bearer: [] }],
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    schemas: {
      Kind: { type: 'string', enum: ['cat', 'dog'], description: 'What the pet is.' },
      Pet: {
        type: 'object', description: 'A pet. A comment end */ in a description stays inside the comment.',
        required: ['id', 'kind', 'weird-key'], additionalProperties: false,
        properties: {
          id: { type: 'integer', format: 'int64', minimum: 1, examples: [7] },
          kind: ref('Kind'),
          'weird-key': { const: 7 },
          nick: { type: ['string', 'null'], maxLength: 20, default: null },
          legacy: { type: 'string', nullable: true, deprecated: true },
          tags: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] }, maxItems: 3 },
          owner: { oneOf: [ref('Person'), { type: 'null' }] },
          extra: { type: 'object', additionalProperties: { type: 'number' } },
          open: { type: 'object', properties: { a: { type: 'string' } } },
          nothing: { type: 'object', additionalProperties: false },
          anything: {},
        },
      },
      Person: { type: 'object', required: ['name'], properties: { name: { type: 'string', title: 'Name' } }, additionalProperties: false },
      Employee: { allOf: [ref('Person'), { type: 'object', required: ['badge'], properties: { badge: { type: 'string', pattern: '^B' } } }] },
      Scores: { type: 'object', properties: { total: { type: 'integer' } }, additionalProperties: { type: 'string' } },
      Problem: { type: 'object', required: ['title'], properties: { title: { type: 'string' } }, additionalProperties: true },
    },
  },
  paths: {
    '/pets/{petId}': {
      parameters: [{ name: 'petId', in: 'path', required: true, schema: { type: 'integer' } }],
      get: {
        operationId: 'getPet',
        parameters: [
          { name: 'tags', in: 'query', schema: { type: 'array', items: { type: 'string' } } },
          { name: 'skip', in: 'query', schema: { type: 'boolean' } },
          { name: 'X-Trace', in: 'header', schema: { type: 'string' } },
          { name: 'Accept', in: 'header', schema: { type: 'string' } },
        ],
        responses: {
          200: { description: 'The pet.', content: json(ref('Pet')) },
          404: { description: 'No such pet.', content: { 'application/problem+json': { schema: ref('Problem') } } },
        },
      },
    },
    '/pets': {
      post: {
        operationId: 'createPet',
        requestBody: { required: true, content: json(ref('Pet')) },
        responses: { 201: { description: 'Created.', content: json(ref('Pet')) }, default: { description: 'An error.', content: json(ref('Problem')) } },
      },
    },
    '/ping': { get: { operationId: 'ping', security: [], responses: { 204: { description: 'Pong.' } } } },
  },
};

export const SYNTHETIC_USE = `import type { ApiClient, Employee, Kind, Pet, Scores } from './client.js';

const pet: Pet = {
  id: 1, kind: 'cat', 'weird-key': 7, nick: null, legacy: null, tags: ['a', 2], owner: null,
  extra: { w: 1.5 }, open: { a: 'x', other: true }, nothing: {}, anything: [1, 'x'],
};
const owned: Pet = { id: 2, kind: 'dog', 'weird-key': 7, nick: 'Rex', legacy: 'old', owner: { name: 'Ada' } };
const employee: Employee = { name: 'Ada', badge: 'B1' };
const scores: Scores = { total: 3, note: 'fine' };
const kinds: Kind[] = ['cat', 'dog'];
void [pet, owned, employee, scores, kinds];

// @ts-expect-error enum: no cow
const cow: Kind = 'cow';
// @ts-expect-error const: weird-key is 7
const seven: Pet = { ...pet, 'weird-key': 8 };
// @ts-expect-error required: no id
const noId: Pet = { kind: 'cat', 'weird-key': 7 };
// @ts-expect-error additionalProperties false: no color
const colored: Pet = { ...pet, color: 'red' };
// @ts-expect-error type array: nick is a string or null
const numbered: Pet = { ...pet, nick: 3 };
// @ts-expect-error nullable 3.0 style: legacy is a string or null
const legacyNumber: Pet = { ...pet, legacy: 3 };
// @ts-expect-error anyOf in items: no booleans
const boolTags: Pet = { ...pet, tags: [true] };
// @ts-expect-error oneOf with $ref: the owner needs a name
const nameless: Pet = { ...pet, owner: {} };
// @ts-expect-error additionalProperties schema: numbers
const heavy: Pet = { ...pet, extra: { w: 'heavy' } };
// @ts-expect-error an object with no properties allowed
const something: Pet = { ...pet, nothing: { a: 1 } };
// @ts-expect-error allOf: an employee needs a badge
const plain: Employee = { name: 'Ada' };
// @ts-expect-error additionalProperties with properties: total stays an integer
const totals: Scores = { total: 'three' };
void [cow, seven, noId, colored, numbered, legacyNumber, boolTags, nameless, heavy, something, plain, totals];

export async function calls(api: ApiClient): Promise<void> {
  const got = await api.getPet({ path: { petId: 1 }, query: { tags: ['a'] }, headers: { 'X-Trace': 't' } });
  if (got.status === 404) {
    const title: string = got.data.title;
    void title;
  } else {
    const id: number = got.data.id;
    void id;
  }
  const created = await api.createPet({ body: pet });
  const status: number = created.status;
  const pong = await api.ping();
  const nothing: undefined = pong.data;
  void [status, nothing];
  // @ts-expect-error path parameter type: petId is an integer
  await api.getPet({ path: { petId: 'x' } });
  // @ts-expect-error a path parameter declared on the path item is required
  await api.getPet({ query: { tags: ['a'] } });
  // @ts-expect-error query array: items are strings
  await api.getPet({ path: { petId: 1 }, query: { tags: [1] } });
  // @ts-expect-error Accept is set by the client, not a parameter
  await api.getPet({ path: { petId: 1 }, headers: { Accept: 'text/plain' } });
  // @ts-expect-error a required body
  await api.createPet({});
  // @ts-expect-error a 2xx body is the Pet, not the Problem
  if (got.ok) void got.data.title;
  // @ts-expect-error no method without an operationId
  await api.deletePet();
}
`;
