/**
 * The OpenAPI 3.1 document (docs/api.md#openapi-document) and the contract check built on it:
 * the document lists exactly the route table's operations with their security, parameters and
 * every status the pipeline can answer; the JSON Schema checker fails on each kind of
 * violation; and a real answer passes while the same answer with an extra property fails.
 * (Every other HTTP test is a contract test too: `call()` checks each answer it receives.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { contractDocument, contractViolations, matchPath, type OpenApiDocument } from './helpers/contract.js';
import { buildOpenApiDocument } from '../src/openapi/document.js';
import { isRfc3339DateTime, resolveRef, schemaErrors, type JsonSchema } from './helpers/openapiValidate.js';
import { ERRORS } from '../src/http/errors.js';
import type { ConversationAnswer, OpenApiAnswer } from './helpers/answers.js';

let srv: TestServer;
let doc: OpenApiDocument;
before(async () => {
  srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } });
  doc = contractDocument(srv.routes);
});
after(async () => { await srv.close(); });

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options', 'trace'];
const operations = () => Object.entries(doc.paths as Record<string, Record<string, any>>)
  .flatMap(([path, item]) => Object.entries(item).filter(([m]) => METHODS.includes(m)).map(([m, op]) => ({ method: m.toUpperCase(), path, op })));
const status = (op: any) => Object.keys(op.responses).map(Number);

describe('GET /api/v1/openapi.json', () => {
  test('without a key → 200, OpenAPI 3.1.0, info.version 2026-06-29, the same document the route table builds', async () => {
    const r = await srv.call<OpenApiAnswer>('GET', '/api/v1/openapi.json', { key: null });
    assert.equal(r.status, 200);
    assert.equal(r.body.openapi, '3.1.0');
    assert.deepEqual(r.body.info.title, 'Support Workspace API');
    assert.equal(r.body.info.version, '2026-06-29');
    assert.deepEqual(r.body.servers, [{ url: '/' }]);
    assert.deepEqual(r.body.security, [{ bearerAuth: [] }]);
    assert.deepEqual(r.body, JSON.parse(JSON.stringify(buildOpenApiDocument(srv.routes))));
    assert.equal(r.headers.get('ratelimit-limit'), null, 'an unauthenticated answer has no rate-limit headers');
  });

  test('a second request answers with the identical cached document', async () => {
    const a = await srv.call('GET', '/api/v1/openapi.json', { key: null });
    const b = await srv.call('GET', '/api/v1/openapi.json');
    assert.equal(a.text, b.text);
  });

  test('the bearer scheme and the shared headers are declared', () => {
    assert.equal(doc.components.securitySchemes.bearerAuth.type, 'http');
    assert.equal(doc.components.securitySchemes.bearerAuth.scheme, 'bearer');
    assert.match(String(doc.components.securitySchemes.bearerAuth.description), /svck_…/);
    assert.deepEqual(Object.keys(doc.components.headers).sort(),
      ['Allow', 'Api-Version', 'Idempotent-Replayed', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'X-Request-Id']);
    const e = doc.components.schemas.ErrorResponse;
    assert.deepEqual(e, {
      type: 'object',
      description: e.description,
      properties: {
        code: { type: 'string', enum: Object.keys(ERRORS), description: e.properties?.code.description },
        error: { type: 'string', description: e.properties?.error.description },
      },
      required: ['code', 'error'],
      additionalProperties: false,
    });
  });
});

describe('the document and the route table', () => {
  test('list exactly the same (method, path) operations', () => {
    const fromRoutes = srv.routes.map((r) => `${r.method} ${r.path}`).sort();
    const fromDoc = operations().map((o) => `${o.method} ${o.path}`).sort();
    assert.deepEqual(fromDoc, fromRoutes);
    assert.equal(new Set(fromRoutes).size, fromRoutes.length);
    assert.ok(fromRoutes.includes('GET /api/v1/openapi.json'));
  });

  test('operationIds are unique and match the routes\'', () => {
    const ids = operations().map((o) => o.op.operationId);
    assert.equal(new Set(ids).size, ids.length);
    for (const r of srv.routes) assert.equal(doc.paths[r.path][r.method.toLowerCase()].operationId, r.operationId);
  });

  test('security: none for /healthz and the document; the bearer key with the route\'s scope elsewhere, and 401/403/429 documented', () => {
    for (const r of srv.routes) {
      const op = doc.paths[r.path][r.method.toLowerCase()];
      const name = `${r.method} ${r.path}`;
      if (r.path === '/healthz' || r.path === '/api/v1/openapi.json') assert.equal(r.scope, null, name);
      if (r.auth) {
        // The widget API (test/widget-api.test.ts): its own schemes, never an API key.
        assert.deepEqual(op.security, [{ [r.auth.scheme]: [] }], name);
        assert.equal(op['x-required-scope'], undefined, name);
      } else if (r.scope === null) {
        assert.deepEqual(op.security, [], name);
        assert.equal(op['x-required-scope'], undefined, name);
        for (const st of [401, 403, 429]) assert.ok(!status(op).includes(st), `${name} documents ${st}`);
      } else {
        assert.deepEqual(op.security, [{ bearerAuth: [r.scope] }], name);
        assert.equal(op['x-required-scope'], r.scope, name);
        assert.ok(op.description?.includes(`\`${r.scope}\``), `${name}: the description names the scope`);
        for (const st of [401, 403, 429]) assert.ok(status(op).includes(st), `${name} lacks ${st}`);
      }
    }
  });

  test('every status the pipeline can produce is documented (431 on every operation), each error as the ErrorResponse schema', () => {
    for (const r of srv.routes) {
      const op = doc.paths[r.path][r.method.toLowerCase()];
      const name = `${r.method} ${r.path}`;
      const want = new Set([r.success.status, 400, 431, 500, 503, ...(r.errors ?? [])]);
      if (r.scope !== null) [401, 403, 429].forEach((s) => want.add(s));
      if (r.body) [413, 415].forEach((s) => want.add(s));
      if (r.path.includes('{')) want.add(404);
      if (r.method === 'POST') [409, 422].forEach((s) => want.add(s));
      assert.deepEqual(status(op).sort(), [...want].sort(), name);
      for (const st of status(op).filter((s) => s >= 400)) {
        const given = op.responses[st];
        const res = ('$ref' in given ? resolveRef(doc, given.$ref) : given) as { content: Record<string, { schema: unknown }>; 'x-error-codes': string[] };
        const schema = res.content['application/json'].schema;
        assert.deepEqual(schema, { $ref: '#/components/schemas/ErrorResponse' }, `${name} ${st}`);
        for (const c of res['x-error-codes']) assert.equal(ERRORS[c as keyof typeof ERRORS].status, st, `${name} ${st} ${c}`);
      }
    }
  });

  test('parameters: path params required strings, query params from the query schema, Idempotency-Key on POST, Api-Version', () => {
    for (const r of srv.routes) {
      const op = doc.paths[r.path][r.method.toLowerCase()];
      const params = (op.parameters as any[]).map((p) => (p.$ref ? resolveRef(doc, p.$ref) : p) as any);
      const pathParams = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      assert.deepEqual(params.filter((p) => p.in === 'path').map((p) => [p.name, p.required, p.schema.type]), pathParams.map((n) => [n, true, 'string']));
      const query = Object.entries(r.query?.properties ?? {}).map(([k, v]) => [k, !(v as any).optional]);
      assert.deepEqual(params.filter((p) => p.in === 'query').map((p) => [p.name, p.required]), query);
      const headers = params.filter((p) => p.in === 'header').map((p) => p.name);
      assert.deepEqual(headers, [...(r.method === 'POST' ? ['Idempotency-Key'] : []), 'Api-Version', 'X-Request-Id']);
      assert.equal(Boolean(op.requestBody), Boolean(r.body));
      if (r.body) assert.equal(op.requestBody?.required, !r.bodyOptional);
    }
    const list = doc.paths['/api/v1/conversations'].get.parameters?.find((p) => 'name' in p && p.name === 'limit');
    assert.ok(list && 'schema' in list);
    assert.deepEqual(list.schema, { description: 'Page size, 1–100 (default 20).', type: 'integer', minimum: 1, maximum: 100 });
  });

  test('every $ref resolves and every schema uses only keywords the checker knows', () => {
    const walk = (v: unknown, at: string): void => {
      if (Array.isArray(v)) { v.forEach((x, i) => walk(x, `${at}/${i}`)); return; }
      if (typeof v !== 'object' || v === null) return;
      for (const [k, x] of Object.entries(v)) {
        if (k === '$ref') assert.doesNotThrow(() => resolveRef(doc, x as string), `${at}: ${x}`);
        // A schema the checker cannot read throws; `null` and `{}` are enough to visit every keyword of the root.
        if (k === 'schema') { schemaErrors(x as JsonSchema, null, doc); schemaErrors(x as JsonSchema, {}, doc); }
        walk(x, `${at}/${k}`);
      }
    };
    walk(doc, '');
  });

  test('matchPath picks the template the router picks: static segments win, parameters need a decodable segment', () => {
    assert.equal(matchPath(doc, '/api/v1/sources/search'), '/api/v1/sources/search');
    assert.equal(matchPath(doc, '/api/v1/sources/abc'), '/api/v1/sources/{sourceId}');
    assert.equal(matchPath(doc, '/api/v1/sources/abc/rescan'), '/api/v1/sources/{sourceId}/rescan');
    assert.equal(matchPath(doc, '/api/v1/issues/'), undefined);
    assert.equal(matchPath(doc, '/api/v1/issues/%E2%82'), undefined);
    assert.equal(matchPath(doc, '/nope'), undefined);
  });
});

describe('the JSON Schema checker', () => {
  const customer = {
    type: 'object',
    properties: { email: { type: 'string', format: 'email' }, name: { type: 'string', maxLength: 3 } },
    required: ['email'], additionalProperties: false,
  };
  const thing = {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      status: { type: 'string', enum: ['open', 'waiting', 'solved'] },
      count: { type: 'integer', minimum: 0, maximum: 10 },
      createdAt: { type: 'string', format: 'date-time' },
      closedAt: { type: ['string', 'null'], format: 'date-time' },
      customer: { $ref: '#/components/schemas/Customer' },
      others: { type: 'array', items: { $ref: '#/components/schemas/Customer' }, maxItems: 2 },
      meta: { type: 'object', properties: {}, additionalProperties: { type: 'string' } },
    },
    required: ['id', 'status', 'createdAt', 'customer'],
    additionalProperties: false,
  };
  const root = { components: { schemas: { Customer: customer, Thing: thing } } };
  const valid = {
    id: '5f0c6a4e-8a5b-4c1e-9d2f-0a1b2c3d4e5f', status: 'open', count: 3, createdAt: '2026-06-29T12:00:00.000Z', closedAt: null,
    customer: { email: 'ada@example.com', name: 'Ada' }, others: [{ email: 'bob@example.com' }], meta: { a: 'b' },
  };
  const errs = (value: unknown) => schemaErrors({ $ref: '#/components/schemas/Thing' }, value, root);

  test('a valid value has no errors (null where the type allows it, 3 code points of emoji within maxLength 3)', () => {
    assert.deepEqual(errs(valid), []);
    assert.deepEqual(errs({ ...valid, customer: { email: 'a@b.co', name: '😀😀😀' } }), []);
  });

  test('a missing required field', () => {
    const { status: _s, ...rest } = valid;
    assert.deepEqual(errs(rest), ['/status: required property is missing']);
  });

  test('a wrong type', () => {
    assert.deepEqual(errs({ ...valid, count: '3' }), ['/count: must be of type integer (got string)']);
    assert.deepEqual(errs({ ...valid, count: 2.5 }), ['/count: must be of type integer (got number)']);
    assert.deepEqual(errs({ ...valid, closedAt: 5 }), ['/closedAt: must be of type string or null (got integer)']);
    assert.deepEqual(errs([]), ['(root): must be of type object (got array)']);
  });

  test('an extra property where additionalProperties is false (and one that breaks an additionalProperties schema)', () => {
    assert.deepEqual(errs({ ...valid, extra: 1 }), ['/extra: additional property not allowed']);
    assert.deepEqual(errs({ ...valid, meta: { a: 1 } }), ['/meta/a: must be of type string (got integer)']);
  });

  test('a bad enum value', () => {
    assert.deepEqual(errs({ ...valid, status: 'closed' }), ['/status: must be one of "open", "waiting", "solved" (got "closed")']);
  });

  test('a bad date-time (format is asserted, with a real calendar)', () => {
    assert.deepEqual(errs({ ...valid, createdAt: '2026-02-30T10:00:00Z' }), ['/createdAt: must be a valid date-time (got "2026-02-30T10:00:00Z")']);
    assert.deepEqual(errs({ ...valid, closedAt: '2026-06-29 10:00' }), ['/closedAt: must be a valid date-time (got "2026-06-29 10:00")']);
    assert.equal(isRfc3339DateTime('2024-02-29T23:59:60+01:00'), true);
    assert.equal(isRfc3339DateTime('2023-02-29T00:00:00Z'), false);
    assert.equal(isRfc3339DateTime('2026-06-29T00:00:00'), false);
  });

  test('a string too long, counted in code points', () => {
    assert.deepEqual(errs({ ...valid, customer: { email: 'a@b.co', name: 'Adam' } }), ['/customer/name: must be at most 3 characters long (got 4)']);
  });

  test('a violation inside a $ref\'d schema, in an array item, is reported with its pointer', () => {
    assert.deepEqual(errs({ ...valid, others: [{ email: 'a@b.co' }, { email: 'nope', extra: true }] }), [
      '/others/1/email: must be a valid email (got "nope")',
      '/others/1/extra: additional property not allowed',
    ]);
    assert.deepEqual(errs({ ...valid, customer: {} }), ['/customer/email: required property is missing']);
  });

  test('several violations at once are all listed; numbers, uuid, maxItems', () => {
    assert.deepEqual(errs({ ...valid, id: 'x', count: 11, others: [valid.customer, valid.customer, valid.customer] }), [
      '/id: must be a valid uuid (got "x")',
      '/count: must be at most 10 (got 11)',
      '/others: must have at most 2 items (got 3)',
    ]);
  });

  test('const, pattern, minLength, minItems, anyOf and oneOf', () => {
    const s = (schema: object, v: unknown) => schemaErrors(schema as JsonSchema, v);
    assert.deepEqual(s({ const: 'a' }, 'b'), ['(root): must be "a" (got "b")']);
    assert.deepEqual(s({ type: 'string', pattern: '^[a-z]+$' }, 'A1'), ['(root): must match the pattern ^[a-z]+$']);
    assert.deepEqual(s({ type: 'string', minLength: 2 }, 'a'), ['(root): must be at least 2 characters long (got 1)']);
    assert.deepEqual(s({ type: 'array', minItems: 1 }, []), ['(root): must have at least 1 items (got 0)']);
    const nullableObject = { oneOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'null' }] };
    assert.deepEqual(s(nullableObject, null), []);
    assert.deepEqual(s(nullableObject, {}), ['/a: required property is missing'], 'the only branch taking an object explains the failure');
    assert.deepEqual(s(nullableObject, 3), ['(root): must match exactly one schema in oneOf (matched none)']);
    assert.deepEqual(s({ oneOf: [{ type: 'integer' }, { type: 'number' }] }, 1), ['(root): must match exactly one schema in oneOf (matched 2)']);
    assert.deepEqual(s({ anyOf: [{ type: 'integer' }, { type: 'number' }] }, 1), []);
    assert.deepEqual(s({ anyOf: [{ type: 'integer' }, { type: 'boolean' }] }, 'x'), ['(root): must match at least one schema in anyOf (matched none)']);
  });

  test('a keyword outside the supported subset, or a $ref that does not resolve, throws (never passes unchecked)', () => {
    assert.throws(() => schemaErrors({ type: 'string', contentEncoding: 'base64' } as JsonSchema, 'x'), /unsupported JSON Schema keyword "contentEncoding"/);
    assert.throws(() => schemaErrors({ $ref: '#/components/schemas/Nope' } as JsonSchema, 'x'), /does not resolve/);
  });
});

describe('the contract check against real answers', () => {
  test('POST /api/v1/conversations passes; the same body with an extra, a missing or a mistyped field fails', async () => {
    const r = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: { subject: 'Printer on fire', customer: { email: 'ada@example.com', name: 'Ada' } } });
    assert.equal(r.status, 201);
    const check = (body: unknown) => contractViolations(doc, 'POST', '/api/v1/conversations', { status: r.status, headers: r.headers, text: JSON.stringify(body) });
    assert.deepEqual(check(r.body), []);
    assert.deepEqual(check({ conversation: { ...r.body.conversation, extra: 1 } }), ['/conversation/extra: additional property not allowed']);
    assert.deepEqual(check({ ...r.body, extra: 1 }), ['/extra: additional property not allowed']);
    assert.deepEqual(check({ conversation: { ...r.body.conversation, customer: { ...r.body.conversation.customer, extra: 'x' } } }), ['/conversation/customer/extra: additional property not allowed']);
    const { subject: _s, ...noSubject } = r.body.conversation;
    assert.deepEqual(check({ conversation: noSubject }), ['/conversation/subject: required property is missing']);
    assert.deepEqual(check({ conversation: { ...r.body.conversation, createdAt: 17 } }), ['/conversation/createdAt: must be of type string (got integer)']);
  });

  test('an undocumented status, a missing rate-limit header or an error code of another status fails', async () => {
    const r = await srv.call('GET', '/api/v1/conversations');
    assert.equal(r.status, 200);
    const res = (status: number, text: string, drop: string[] = []) => {
      const headers = new Headers(r.headers);
      for (const d of drop) headers.delete(d);
      return { status, headers, text };
    };
    assert.deepEqual(contractViolations(doc, 'GET', '/api/v1/conversations?limit=1', res(200, r.text)), []);
    assert.deepEqual(contractViolations(doc, 'GET', '/api/v1/conversations', res(200, r.text, ['RateLimit-Remaining', 'X-Request-Id'])),
      ['header X-Request-Id is missing', 'header RateLimit-Remaining is missing']);
    assert.deepEqual(contractViolations(doc, 'GET', '/api/v1/conversations', res(404, '{"code":"not_found","error":"x"}')),
      ['status 404 is not documented for listConversations (documented: 200, 400, 401, 403, 429, 431, 500, 503)']);
    assert.deepEqual(contractViolations(doc, 'GET', '/api/v1/conversations', res(403, '{"code":"not_found","error":"x"}')),
      ['/code: "not_found" is not one of the codes documented for 403 (insufficient_scope)']);
    assert.deepEqual(contractViolations(doc, 'GET', '/api/v1/conversations', res(403, '{"code":"insufficient_scope"}')),
      ['/error: required property is missing']);
  });

  test('an unknown path must be a 404 Error; a known path with another method a 405 with the right Allow', async () => {
    const nope = await srv.call('GET', '/nope');
    assert.equal(nope.status, 404);
    assert.deepEqual(contractViolations(doc, 'GET', '/nope', { status: 200, headers: nope.headers, text: '{}' }), ['no operation matches GET /nope, so the answer must be 404 (got 200)']);
    assert.deepEqual(contractViolations(doc, 'GET', '/nope', { status: 404, headers: nope.headers, text: '{"code":"not_found","error":"x","at":1}' }), ['/at: additional property not allowed']);
    const put = await srv.call('PUT', '/api/v1/sources/x', { key: null });
    assert.equal(put.status, 405);
    assert.equal(put.headers.get('allow'), 'GET, PATCH, DELETE, HEAD');
    const wrong = new Headers(put.headers);
    wrong.set('Allow', 'GET');
    assert.deepEqual(contractViolations(doc, 'PUT', '/api/v1/sources/x', { status: 405, headers: wrong, text: put.text }),
      ['header Allow is "GET", expected "GET, PATCH, DELETE, HEAD"']);
  });

  test('a walk through every operation without path parameters: 200 with a full key, 403 with a key of another scope', async () => {
    const other = await srv.newKey({ scopes: 'usage:read' });
    for (const r of srv.routes.filter((x) => x.method === 'GET' && !x.path.includes('{') && !x.auth)) {
      const required = Object.entries(r.query?.properties ?? {}).filter(([, v]) => !(v as any).optional).map(([k]) => k);
      const qs = required.includes('q') ? '?q=printer' : '';
      const full = await srv.call('GET', r.path + qs);
      assert.equal(full.status, r.success.status, `${r.path}: ${full.text}`);
      if (r.scope !== null && r.scope !== 'usage:read') {
        const denied = await srv.call('GET', r.path + qs, { key: other });
        assert.equal(denied.status, 403, r.path);
      }
    }
    for (const r of srv.routes.filter((x) => x.scope !== null && !x.auth)) {
      // One failed authentication's token back (30 a minute per address): the table has more than 30 routes.
      srv.clock.advance(2000);
      const anon = await srv.call(r.method, r.path.replace(/\{\w+\}/g, 'x'), { key: null });
      assert.equal(anon.status, 401, `${r.method} ${r.path}`);
    }
  });
});
