import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { parseYaml } from '../src/ingest/parsers/yaml.js';
import { parseOpenApi } from '../src/ingest/parsers/openapi.js';
import { parseAsyncApi } from '../src/ingest/parsers/asyncapi.js';
import type { ParsedSource } from '../src/ingest/types.js';
import { CORPUS, readCorpus } from './helpers/corpus.js';

const read = readCorpus;
const expected = JSON.parse(read('expected.json')) as Record<string, { endpoints: number; webhook_operations?: number; channels?: number; title?: string }>;

function load(rel: string): unknown {
  return rel.endsWith('.json') ? JSON.parse(read(rel)) : parseYaml(read(rel));
}

function kinds(src: ParsedSource): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const d of src.documents) counts[d.kind] = (counts[d.kind] ?? 0) + 1;
  return counts;
}

/** Shape checks every parser result must pass. */
function assertWellFormed(src: ParsedSource, endpointKind: string): void {
  assert.ok(src.documents.length > 0);
  for (const d of src.documents) {
    assert.ok(d.title.trim() !== '', `a ${d.kind} document has an empty title`);
    assert.ok(d.text.trim() !== '', `${d.kind} '${d.title}' has an empty text`);
  }
  for (const e of src.endpoints) {
    assert.ok(e.path !== '', 'an endpoint has an empty path');
    if (e.documentIndex !== undefined) assert.equal(src.documents[e.documentIndex]?.kind, endpointKind);
  }
}

describe('OpenAPI corpus', () => {
  const files = readdirSync(new URL('openapi/', CORPUS)).map((f) => `openapi/${f}`);
  it('finds the 15 OpenAPI / Swagger files', () => assert.equal(files.length, 15));
  for (const rel of files) {
    it(`${rel}: endpoints, webhooks, schemas and title as expected.json says`, () => {
      const src = parseOpenApi(load(rel));
      const exp = expected[rel];
      assert.equal(src.endpoints.length, exp.endpoints);
      assert.equal(kinds(src).operation ?? 0, exp.endpoints);
      assert.equal(kinds(src).webhook ?? 0, exp.webhook_operations ?? 0);
      assert.equal(kinds(src).overview, 1);
      if (exp.title !== undefined) assert.equal(src.title, exp.title); // entries added for detection cases omit it
      assert.equal(new Set(src.endpoints.map((e) => `${e.method} ${e.path}`)).size, src.endpoints.length);
      for (const e of src.endpoints) assert.match(e.method, /^(GET|PUT|POST|DELETE|OPTIONS|HEAD|PATCH|TRACE)$/);
      assertWellFormed(src, 'operation');
    });
  }
  it('server URLs: 3.x servers[0].url, 2.0 scheme://host+basePath', () => {
    assert.equal(parseOpenApi(load('openapi/openai-openapi-2024-01.yaml')).serverUrl, 'https://api.openai.com/v1');
    assert.equal(parseOpenApi(load('openapi/oai-v2.0-petstore.json')).serverUrl, 'http://petstore.swagger.io/v1');
    assert.equal(parseOpenApi(load('openapi/oai-v3.1-webhook-example.yaml')).serverUrl, undefined);
  });
  it('a Swagger 2.0 operation lists parameters and the response schema properties', () => {
    const src = parseOpenApi(load('openapi/oai-v2.0-petstore.json'));
    const show = src.documents[src.endpoints.find((e) => e.path === '/pets/{petId}')?.documentIndex ?? -1];
    assert.deepEqual(show, {
      kind: 'operation',
      title: 'Info for a specific pet',
      text: [
        'GET /pets/{petId}', 'Info for a specific pet', 'Operation ID: showPetById', 'Tags: pets', '',
        'Parameters:', '- petId (path, required): string — The id of the pet to retrieve', '',
        'Responses:', '- 200: Expected response to a valid request — Pets',
        '    - id (integer (int64), required)', '    - name (string, required)', '    - tag (string)',
        '- default: unexpected error — Error',
      ].join('\n'),
    });
  });
  it('the JSON Schema of Swagger 2.0 (which is not an API description) is rejected', () => {
    assert.throws(() => parseOpenApi(load('json/oas-2.0-json-schema.json')), {
      name: 'IngestError',
      message: 'OpenAPI: not an OpenAPI or Swagger document (no "openapi" or "swagger" version field)',
    });
  });
});

describe('OpenAPI units', () => {
  it('every method of a path item, in written order; path-level parameters merged and overridden', () => {
    const src = parseOpenApi({
      openapi: '3.1.0',
      info: { title: 'Items', version: '1' },
      paths: {
        '/items/{id}': {
          summary: 'One item',
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'verbose', in: 'query', schema: { type: 'boolean' } },
          ],
          get: { parameters: [{ name: 'verbose', in: 'query', description: 'Level', schema: { type: 'integer' } }], responses: { 204: { description: 'Done' } } },
          head: {}, options: { summary: 'Preflight' }, trace: { operationId: 'traceItem' }, 'x-internal': { get: {} },
        },
      },
    });
    assert.deepEqual(src.endpoints, [
      { method: 'GET', path: '/items/{id}', documentIndex: 1 },
      { method: 'HEAD', path: '/items/{id}', documentIndex: 2 },
      { method: 'OPTIONS', path: '/items/{id}', documentIndex: 3 },
      { method: 'TRACE', path: '/items/{id}', documentIndex: 4 },
    ]);
    assert.deepEqual(src.documents.map((d) => d.title), ['Items', 'One item', 'One item', 'Preflight', 'One item']);
    assert.equal(src.documents[1].text, [
      'GET /items/{id}', 'One item', '', 'Parameters:', '- id (path, required): string', '- verbose (query): integer — Level', '',
      'Responses:', '- 204: Done',
    ].join('\n'));
    assert.equal(src.serverUrl, undefined);
  });
  it('title falls back to operationId, then METHOD path', () => {
    const src = parseOpenApi({ swagger: '2.0', info: { title: 'T' }, host: 'api.example.com', basePath: '/v2', schemes: ['http'], paths: { '/a': { post: { operationId: 'makeA' }, put: {} } } });
    assert.deepEqual(src.documents.slice(1).map((d) => d.title), ['makeA', 'PUT /a']);
    assert.equal(src.serverUrl, 'http://api.example.com/v2');
  });
  it('$ref cycles and self-references terminate', () => {
    const src = parseOpenApi({
      openapi: '3.0.3',
      info: { title: 'Cycles', version: '1' },
      paths: {
        '/nodes': {
          $ref: '#/components/pathItems/Loop',
          post: {
            parameters: [{ $ref: '#/components/parameters/Self' }],
            requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } } },
            responses: { 200: { $ref: '#/components/responses/Again' } },
          },
        },
      },
      components: {
        pathItems: { Loop: { $ref: '#/components/pathItems/Loop' } },
        parameters: { Self: { $ref: '#/components/parameters/Self' } },
        responses: { Again: { $ref: '#/components/responses/Again' } },
        schemas: {
          Node: {
            allOf: [{ $ref: '#/components/schemas/Node' }, { $ref: '#/components/schemas/A' }],
            properties: { child: { $ref: '#/components/schemas/Node' }, inline: { type: 'object', properties: { again: { $ref: '#/components/schemas/Node' } } } },
          },
          A: { $ref: '#/components/schemas/B' },
          B: { $ref: '#/components/schemas/A' },
          Self: { $ref: '#/components/schemas/Self' },
        },
      },
    });
    assert.equal(src.endpoints.length, 1);
    assert.deepEqual(kinds(src), { overview: 1, operation: 1, schema: 4 });
    assert.match(src.documents[1].text, /- child \(Node\)\n {2}- inline \(object\)\n {4}- again \(Node\)/);
  });
  it('3.1 webhooks are documents, not endpoints', () => {
    const src = parseOpenApi({ openapi: '3.1.0', info: { title: 'W', version: '1' }, webhooks: { newPet: { post: { summary: 'A pet was added' } } } });
    assert.deepEqual(src.endpoints, []);
    assert.deepEqual(src.documents[1], { kind: 'webhook', title: 'A pet was added', text: 'Webhook newPet: POST\nA pet was added' });
  });
  it('rejects what is not an OpenAPI or Swagger document', () => {
    assert.throws(() => parseOpenApi({ title: 'x', paths: {} }), { name: 'IngestError', message: 'OpenAPI: not an OpenAPI or Swagger document (no "openapi" or "swagger" version field)' });
    assert.throws(() => parseOpenApi(['openapi']), { name: 'IngestError', message: 'OpenAPI: the document is not an object' });
    assert.throws(() => parseOpenApi({ openapi: '4.0.0' }), { name: 'IngestError', message: 'OpenAPI: unsupported version "4.0.0" (expected Swagger 2.0 or OpenAPI 3.x)' });
    assert.throws(() => parseOpenApi({ swagger: '1.2' }), { name: 'IngestError', message: 'OpenAPI: unsupported version "1.2" (expected Swagger 2.0 or OpenAPI 3.x)' });
  });
});

describe('AsyncAPI corpus', () => {
  const files = readdirSync(new URL('asyncapi/', CORPUS)).map((f) => `asyncapi/${f}`);
  it('finds the 9 AsyncAPI files', () => assert.equal(files.length, 9));
  for (const rel of files) {
    it(`${rel}: endpoints and channels as expected.json says`, () => {
      const src = parseAsyncApi(load(rel));
      const exp = expected[rel];
      assert.equal(src.endpoints.length, exp.endpoints);
      assert.deepEqual(kinds(src), { overview: 1, channel: exp.channels });
      const v3 = (load(rel) as { asyncapi: string }).asyncapi.startsWith('3.');
      for (const e of src.endpoints) assert.match(e.method, v3 ? /^(SEND|RECEIVE)$/ : /^(PUBLISH|SUBSCRIBE)$/);
      assertWellFormed(src, 'channel');
    });
  }
  it('3.x endpoints use the referenced channel address', () => {
    const src = parseAsyncApi(load('asyncapi/asyncapi-3.0-streetlights-kafka.yml'));
    assert.deepEqual(src.endpoints[0], { method: 'RECEIVE', path: 'smartylighting.streetlights.1.0.event.{streetlightId}.lighting.measured', documentIndex: 1 });
    assert.equal(src.title, 'Streetlights Kafka API');
  });
});

describe('AsyncAPI units', () => {
  it('2.x publish/subscribe per channel', () => {
    const src = parseAsyncApi({
      asyncapi: '2.6.0', info: { title: 'Chat', version: '1' },
      channels: { 'rooms/{id}': { publish: { operationId: 'post', message: { name: 'Msg', payload: { type: 'object', properties: { text: { type: 'string' } } } } }, subscribe: { summary: 'Listen' } } },
    });
    assert.deepEqual(src.endpoints, [
      { method: 'PUBLISH', path: 'rooms/{id}', documentIndex: 1 },
      { method: 'SUBSCRIBE', path: 'rooms/{id}', documentIndex: 1 },
    ]);
    assert.equal(src.documents[1].text, 'Channel rooms/{id}\n\nOperations:\n- PUBLISH (post)\n- SUBSCRIBE: Listen\n\nMessages:\n- Msg — payload: object\n    - text (string)');
  });
  it('3.x operations: a null address falls back to the channel key; other actions are skipped', () => {
    const src = parseAsyncApi({
      asyncapi: '3.0.0', info: { title: 'Q', version: '1' },
      channels: { jobs: { address: null }, done: { address: 'jobs.done' } },
      operations: {
        take: { action: 'receive', channel: { $ref: '#/channels/jobs' } },
        finish: { action: 'send', channel: { $ref: '#/channels/done' } },
        odd: { action: 'publish', channel: { $ref: '#/channels/done' } },
      },
    });
    assert.deepEqual(src.endpoints, [
      { method: 'RECEIVE', path: 'jobs', documentIndex: 1 },
      { method: 'SEND', path: 'jobs.done', documentIndex: 2 },
    ]);
  });
  it('rejects what is not an AsyncAPI document', () => {
    assert.throws(() => parseAsyncApi({ openapi: '3.0.0' }), { name: 'IngestError', message: 'AsyncAPI: not an AsyncAPI document (no "asyncapi" version field)' });
    assert.throws(() => parseAsyncApi({ asyncapi: '1.2.0' }), { name: 'IngestError', message: 'AsyncAPI: unsupported version "1.2.0" (expected 2.x or 3.x)' });
    assert.throws(() => parseAsyncApi(null), { name: 'IngestError', message: 'AsyncAPI: the document is not an object' });
  });
});
