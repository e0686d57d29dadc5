/**
 * Every real public document of `test/fixtures/corpus/` (except `yaml-suite/`) ingested through the
 * HTTP API as pasted content with `type: auto` (docs/sources.md#what-ingestion-extracts;
 * docs/api.md#create-source, docs/api.md#ingestion-result): status, detected type, endpoint counts from `expected.json`,
 * non-empty documents and chunks, the exact response shape, and GET agreeing with the create.
 * Plus a few explicit types, right and wrong.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PENDING_AUTO } from './helpers/corpus.js';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';
import type { Ingestion } from './helpers/answers.js';

const CORPUS = new URL('./fixtures/corpus/', import.meta.url);
const expected = JSON.parse(readFileSync(new URL('expected.json', CORPUS), 'utf8')) as Record<string, { endpoints: number | null }>;

/** Folder → the type `auto` must detect. */
const TYPE_BY_FOLDER: Record<string, string> = {
  openapi: 'openapi', asyncapi: 'asyncapi', postman: 'postman', graphql: 'graphql', grpc: 'grpc',
  soap: 'soap', json: 'json', text: 'text', html: 'text',
};
/** The one corpus file that is not valid content (JSONTestSuite `n_` case). */
const INVALID = 'json/jsontestsuite-n_object_trailing_comma.json';

const files: string[] = readdirSync(fileURLToPath(CORPUS), { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== 'yaml-suite')
  .flatMap((d) => readdirSync(fileURLToPath(new URL(`${d.name}/`, CORPUS))).map((f) => `${d.name}/${f}`))
  .sort();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SUMMARY_KEYS = ['auth', 'createdAt', 'error', 'id', 'inputUrl', 'name', 'object', 'publicDocs', 'status', 'type', 'updatedAt'];
const DEFAULT_AUTH = { configured: false, hasSecret: false, lastError: null, lastVerifiedAt: null, status: 'not_configured', type: null };
const DEFAULT_PUBLIC_DOCS = { enabled: false, published: false, slug: null, url: null };

let srv: TestServer;
before(async () => { srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } }); });
after(async () => { await srv.close(); });

const read = (rel: string): string => readFileSync(new URL(rel, CORPUS), 'utf8');

/** Asserts the Ingestion result's exact shape (no additional properties anywhere: docs/api.md#ingestion-result). */
function assertShape(r: CallResult<Ingestion>): void {
  assert.deepEqual(Object.keys(r.body).sort(), ['counts', 'documents', 'endpoints', 'source']);
  const { source, counts, documents, endpoints } = r.body;
  assert.deepEqual(Object.keys(source).sort(), SUMMARY_KEYS);
  assert.equal(source.object, 'source');
  assert.match(source.id, UUID);
  assert.equal(typeof source.name, 'string');
  assert.match(source.createdAt, ISO);
  assert.match(String(source.updatedAt), ISO);
  assert.equal(source.inputUrl, null);
  assert.deepEqual(source.auth, DEFAULT_AUTH);
  assert.deepEqual(source.publicDocs, DEFAULT_PUBLIC_DOCS);
  assert.deepEqual(Object.keys(counts).sort(), ['chunks', 'documents', 'endpoints']);
  for (const k of ['chunks', 'documents', 'endpoints'] as const) assert.ok(Number.isSafeInteger(counts[k]) && counts[k] >= 0, k);
  for (const d of documents) {
    assert.deepEqual(Object.keys(d).sort(), ['id', 'kind', 'title']);
    assert.equal(typeof d.id, 'string');
    assert.ok(d.kind === null || typeof d.kind === 'string');
    assert.ok(d.title === null || typeof d.title === 'string');
  }
  for (const e of endpoints) {
    assert.deepEqual(Object.keys(e).sort(), ['id', 'method', 'path']);
    assert.equal(typeof e.id, 'string');
    assert.ok(e.method === null || typeof e.method === 'string');
    assert.ok(e.path === null || typeof e.path === 'string');
  }
  assert.equal(documents.length, Math.min(counts.documents, 1000));
  assert.equal(endpoints.length, Math.min(counts.endpoints, 1000));
}

describe('every corpus file pasted with type auto', () => {
  test('the corpus has files in every folder and an expected.json entry for each', () => {
    assert.ok(files.length >= 60, `only ${files.length} files`);
    for (const f of files) if (f !== 'expected.json' && f !== 'SOURCES.md') assert.ok(f in expected, `${f} missing from expected.json`);
  });

  for (const file of files) {
    const folder = file.split('/')[0];
    test(`${file} → 201, ${file === INVALID ? 'failed with a line/column error' : `ready as ${TYPE_BY_FOLDER[folder]} with ${expected[file]?.endpoints ?? 0} endpoints`}`, { skip: PENDING_AUTO[file] }, async () => {
      const r = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { content: read(file) } });
      assert.equal(r.status, 201, r.text.slice(0, 500));
      assertShape(r);
      const { source, counts, documents, endpoints } = r.body;
      if (file === INVALID) {
        assert.equal(source.status, 'failed');
        assert.equal(typeof source.error, 'string');
        // `{"id":0,}`: the stray `}` is at line 1, column 9.
        assert.match(String(source.error), /^JSON: .* at line 1, column 9$/);
        assert.deepEqual(counts, { chunks: 0, documents: 0, endpoints: 0 });
        assert.deepEqual(documents, []);
        assert.deepEqual(endpoints, []);
      } else {
        assert.equal(source.status, 'ready', `error: ${source.error}`);
        assert.equal(source.error, null);
        assert.equal(source.type, TYPE_BY_FOLDER[folder]);
        assert.equal(counts.endpoints, expected[file].endpoints ?? 0);
        assert.ok(counts.documents > 0, 'documents');
        assert.ok(counts.chunks > 0, 'chunks');
        assert.ok(source.name.length > 0 && source.name.length <= 200);
      }
      const g = await srv.call<Ingestion>('GET', `/api/v1/sources/${source.id}`);
      assert.equal(g.status, 200, g.text.slice(0, 500));
      assertShape(g);
      assert.deepEqual(g.body, r.body);
    });
  }
});

describe('explicit types', () => {
  test('the petstore JSON with type openapi → ready openapi with its 3 operations', async () => {
    const r = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { type: 'openapi', content: read('openapi/oai-v2.0-petstore.json') } });
    assert.equal(r.status, 201, r.text);
    assertShape(r);
    assert.equal(r.body.source.status, 'ready');
    assert.equal(r.body.source.type, 'openapi');
    assert.equal(r.body.source.name, 'Swagger Petstore');
    assert.deepEqual(r.body.endpoints.map((e) => `${e.method} ${e.path}`).sort(), ['GET /pets', 'GET /pets/{petId}', 'POST /pets']);
  });

  test('a .proto with type openapi → 201 failed, error saying it is not OpenAPI, stored type openapi', async () => {
    const r = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { type: 'openapi', content: read('grpc/grpc-health-v1.proto') } });
    assert.equal(r.status, 201, r.text);
    assertShape(r);
    assert.equal(r.body.source.status, 'failed');
    assert.equal(r.body.source.type, 'openapi');
    assert.equal(r.body.source.error, 'the content is not an OpenAPI document (it looks like plain JSON/YAML data)');
    assert.equal(r.body.source.name, 'Untitled source');
    assert.deepEqual(r.body.counts, { chunks: 0, documents: 0, endpoints: 0 });
  });

  test('a Postman collection with type openapi → failed: not an OpenAPI document', async () => {
    const r = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { type: 'openapi', content: read('postman/newman-sample-collection-v2.0.json') } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.source.status, 'failed');
    assert.match(String(r.body.source.error), /not an OpenAPI document/);
  });

  test('type grpc, graphql, soap, asyncapi, postman and json on their own files → ready with that type', async () => {
    const cases: Array<[string, string]> = [
      ['grpc', 'grpc/grpc-go-echo.proto'], ['graphql', 'graphql/swapi-schema.graphql'], ['graphql', 'graphql/star-wars-introspection.json'],
      ['soap', 'soap/zeep-soap.wsdl'], ['asyncapi', 'asyncapi/asyncapi-2.0-streetlights.json'], ['postman', 'postman/github-api-v2.1.json'],
      ['json', 'json/github-webhook-push.json'], ['text', 'text/newman-README.md'],
    ];
    for (const [type, file] of cases) {
      const r = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { type, content: read(file) } });
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.source.status, 'ready', `${file}: ${r.body.source.error}`);
      assert.equal(r.body.source.type, type, file);
      assert.equal(r.body.counts.endpoints, expected[file].endpoints ?? 0, file);
    }
  });

  test('an OpenAPI document with type json is ingested as plain JSON data (no endpoints)', async () => {
    const r = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { type: 'json', content: read('openapi/oai-v2.0-petstore.json') } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.source.status, 'ready');
    assert.equal(r.body.source.type, 'json');
    assert.equal(r.body.counts.endpoints, 0);
    assert.ok(r.body.counts.documents > 0);
  });

  test('broken YAML with type openapi → failed with a line and column', async () => {
    const r = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { type: 'openapi', content: 'openapi: 3.0.0\ninfo:\n  title: "unterminated\n' } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.source.status, 'failed');
    assert.equal(r.body.source.error, 'YAML: unterminated double-quoted scalar at line 3, column 10');
  });

  test('YAML that YAML 1.2 rejects → failed with the rule, line and column', async () => {
    const cases: Array<[string, string]> = [
      ['openapi: 3.0.0\ninfo:\n\ttitle: T\n\tversion: "1"\npaths: {}\n', 'YAML: tabs cannot be used for indentation at line 3, column 1'],
      ['--- openapi: 3.0.0\ninfo: {title: T, version: "1"}\npaths: {}\n', "YAML: a block mapping cannot start on the '---' line at line 1, column 5"],
      // Properties on lines of their own used to recurse once per line until the stack overflowed.
      [`openapi: 3.0.0\ninfo: ${'&a\n  '.repeat(25_000)}x\n`, 'YAML: a node can have only one anchor at line 3, column 3'],
    ];
    for (const [content, error] of cases) {
      const r = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { type: 'openapi', content } });
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.source.status, 'failed');
      assert.equal(r.body.source.error, error);
    }
  });

  test('broken WSDL and broken proto → failed with a line and column', async () => {
    const wsdl = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { type: 'soap', content: '<definitions xmlns="http://schemas.xmlsoap.org/wsdl/">\n<portType name="x">\n</definitions>' } });
    assert.equal(wsdl.status, 201);
    assert.equal(wsdl.body.source.status, 'failed');
    assert.equal(wsdl.body.source.error, 'XML: mismatched closing tag </definitions>, expected </portType> at line 3, column 1');
    const proto = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { type: 'grpc', content: 'syntax = "proto3";\nservice S {\n  rpc A(B) returns (C)\n' } });
    assert.equal(proto.status, 201);
    assert.equal(proto.body.source.status, 'failed');
    assert.equal(proto.body.source.error, "Proto: expected ';', found end of input at line 4, column 1");
  });

  test('whitespace-only content → failed: the content is empty', async () => {
    const r = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { content: '  \n\t ' } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.source.status, 'failed');
    assert.equal(r.body.source.error, 'the content is empty');
    assert.equal(r.body.source.name, 'Untitled source');
  });
});
