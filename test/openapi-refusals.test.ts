/**
 * The served OpenAPI document refuses exactly what the server refuses (docs/api.md#openapi-document),
 * for the rules a schema used to leave to prose: `PATCH /sources/{id}` `auth` by `type` (a `oneOf`),
 * `POST /sources` with a fetched type and `content`, the `X-Request-Id` request header (any value;
 * the server substitutes its own id) and the email `pattern`. Each case is sent to a real server
 * and checked against the document with the tests' JSON Schema validator.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { schemaErrors, type JsonSchema } from './helpers/openapiValidate.js';

let srv: TestServer;
let doc: any;
before(async () => {
  // GITHUB_API_URL on a closed local port: a github source fails at once instead of going out.
  const env = { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000', GITHUB_API_URL: 'http://127.0.0.1:9' };
  srv = await startTestServer({ env });
  doc = (await srv.call('GET', '/api/v1/openapi.json')).body;
});
after(async () => { await srv.close(); });

const component = (name: string): JsonSchema => doc.components.schemas[name];
const refuses = (schema: JsonSchema, value: unknown): boolean => schemaErrors(schema, value, doc).length > 0;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('PATCH /sources/{id} auth: a oneOf by type; headerName for header, username for basic, as served', async () => {
  const auth = component('SourceAuthRequest') as any;
  assert.deepEqual(auth.oneOf.map((b: any) => [b.properties.type.enum, b.required, Object.keys(b.properties)]), [
    [['bearer'], ['type', 'secret'], ['type', 'secret']],
    [['header'], ['type', 'secret', 'headerName'], ['type', 'secret', 'headerName']],
    [['basic'], ['type', 'secret', 'username'], ['type', 'secret', 'username']],
  ]);
  const body = component('UpdateSourceRequest');
  const created = await srv.call<any>('POST', '/api/v1/sources', { body: { content: 'hello', type: 'text' } });
  assert.equal(created.status, 201, created.text);
  const id = created.body.source.id;
  const seen: string[] = [];
  for (const type of ['bearer', 'header', 'basic']) {
    for (const headerName of [undefined, 'X-Api-Key']) {
      for (const username of [undefined, 'ada']) {
        const extra = { ...(headerName && { headerName }), ...(username && { username }) };
        const sent = { auth: { type, secret: 's3cret', ...extra } };
        const r = await srv.call<any>('PATCH', `/api/v1/sources/${id}`, { body: sent });
        const schemaSays = refuses(body, sent);
        const why = `${JSON.stringify(sent)}: ${r.status} ${r.text}; ${schemaErrors(body, sent, doc)}`;
        assert.equal(r.status === 400, schemaSays, why);
        if (r.status === 400) seen.push(r.body.error);
        else assert.equal(r.body.source.auth.type, type);
      }
    }
  }
  assert.deepEqual(seen, [
    'Request body is invalid: auth.username is only allowed for type basic.',
    'Request body is invalid: auth.headerName is only allowed for type header.',
    'Request body is invalid: auth.headerName is only allowed for type header.',
    'Request body is invalid: auth.headerName is required for type header.',
    'Request body is invalid: auth.headerName is required for type header.',
    'Request body is invalid: auth.username is only allowed for type basic.',
    'Request body is invalid: auth.username is required for type basic.',
    'Request body is invalid: auth.headerName is only allowed for type header.',
    'Request body is invalid: auth.headerName is only allowed for type header.',
  ]);
  // null removes the credential, in both.
  assert.equal(refuses(body, { auth: null }), false);
  assert.equal((await srv.call<any>('PATCH', `/api/v1/sources/${id}`, { body: { auth: null } })).status, 200);
});

test('POST /sources: url, website and github need a url and take no content, in schema and server', async () => {
  const body = component('CreateSourceRequest');
  let n = 0;
  const verdicts: string[] = [];
  for (const type of [undefined, 'auto', 'openapi', 'text', 'url', 'website', 'github']) {
    for (const given of ['url', 'content', 'both', 'neither'] as const) {
      n++;
      // Loopback without SOURCE_FETCH_ALLOW_PRIVATE: a fetched source fails at once (201 failed), nothing goes out.
      const url = type === 'github' ? `https://github.com/o/r${n}` : `http://127.0.0.1:9/doc-${n}`;
      const sent: Record<string, unknown> = { ...(type && { type }), name: `case ${n}`,
        ...(given === 'url' || given === 'both' ? { url } : {}),
        ...(given === 'content' || given === 'both' ? { content: '# Doc\n\ntext' } : {}) };
      const r = await srv.call<any>('POST', '/api/v1/sources', { body: sent });
      const schemaSays = refuses(body, sent);
      const why = `${JSON.stringify(sent)}: ${r.status} ${r.text}; ${schemaErrors(body, sent, doc)}`;
      assert.equal(r.status === 400, schemaSays, why);
      assert.ok(r.status === 400 || r.status === 201, r.text);
      if (r.status === 400) verdicts.push(`${type} ${given}: ${r.body.error}`);
    }
  }
  assert.deepEqual(verdicts, [
    'undefined neither: Request body is invalid: url or content is required.',
    'auto neither: Request body is invalid: url or content is required.',
    'openapi neither: Request body is invalid: url or content is required.',
    'text neither: Request body is invalid: url or content is required.',
    'url content: Request body is invalid: url is required for type url.',
    'url both: Request body is invalid: content cannot be given with type url: a url source is fetched from its url.',
    'url neither: Request body is invalid: url or content is required.',
    'website content: Request body is invalid: url is required for type website.',
    'website both: Request body is invalid: content cannot be given with type website: '
      + 'a website source is fetched from its url.',
    'website neither: Request body is invalid: url or content is required.',
    'github content: Request body is invalid: url is required for type github.',
    'github both: Request body is invalid: content cannot be given with type github: '
      + 'a github source is fetched from its url.',
    'github neither: Request body is invalid: url or content is required.',
  ]);
});

test('X-Request-Id: any value answered, one not 1–128 printable ASCII is replaced', async () => {
  const param = doc.components.parameters.RequestId;
  assert.deepEqual(param.schema, { type: 'string' });
  assert.match(param.description, /Any value is accepted \(no length limit\)/);
  assert.match(param.description, /replaced by a generated UUID/);
  const values = ['r-1', 'a'.repeat(128), 'a'.repeat(129), 'a'.repeat(8000), '', 'tab\there', 'caf\u00e9'];
  for (const v of values) {
    assert.deepEqual(schemaErrors(param.schema, v, doc), [], 'the schema takes it');
    const r = await srv.call('GET', '/api/v1/conversations', { headers: { 'X-Request-Id': v } });
    assert.equal(r.status, 200, `${JSON.stringify(v.slice(0, 20))}: ${r.text}`);
    const echoed = r.headers.get('x-request-id')!;
    const own = v.length >= 1 && v.length <= 128 && /^[\x20-\x7e]+$/.test(v);
    if (own) assert.equal(echoed, v);
    else assert.match(echoed, UUID, `${JSON.stringify(v.slice(0, 20))} is replaced`);
  }
});

test('every format: email in the document carries the pattern the server applies: a domain with a dot', async () => {
  const found: string[] = [];
  const walk = (node: unknown, at: string): void => {
    if (Array.isArray(node)) { node.forEach((x, i) => walk(x, `${at}/${i}`)); return; }
    if (typeof node !== 'object' || node === null) return;
    const o = node as Record<string, unknown>;
    if (o.format === 'email') {
      found.push(at);
      assert.equal(typeof o.pattern, 'string', `${at} has a pattern`);
    }
    for (const [k, v] of Object.entries(o)) walk(v, `${at}/${k}`);
  };
  walk(doc, '#');
  assert.ok(found.includes('#/components/schemas/CustomerInput/properties/email'), found.join(', '));
  const pattern = new RegExp((component('CustomerInput') as any).properties.email.pattern, 'u');
  const emails = ['ada@example.com', 'a.b+c@sub.example.co', 'ada@localhost', 'ada@example', 'ada@example.', 'ada@.com',
    'ada@@example.com',
    'ada example@x.com', 'ada@ex ample.com', '@example.com', 'ada@'];
  const verdicts: string[] = [];
  for (const email of emails) {
    const body = { subject: 'Hi', customer: { email, name: 'Ada' } };
    const r = await srv.call('POST', '/api/v1/conversations', { body });
    assert.ok(r.status === 201 || r.status === 400, r.text);
    assert.equal(r.status === 201, pattern.test(email), `${email}: server ${r.status}, pattern ${pattern.test(email)}`);
    verdicts.push(`${email} ${r.status}`);
  }
  assert.deepEqual(verdicts.filter((v) => v.endsWith('201')), ['ada@example.com 201', 'a.b+c@sub.example.co 201']);
});
