/**
 * The parts of a public docs page over HTTP (docs/web.md#operations): for an OpenAPI source with
 * Markdown, parameters, a request body, responses and examples — the parameters table, schema tree,
 * example JSON, curl sample and rendered Markdown, and nothing of the source as raw HTML; operations
 * of AsyncAPI, GraphQL, gRPC, SOAP and Postman sources; `/docs` listing only published docs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { WebClient, withServer } from './helpers/web.js';
import type { Space } from './helpers/server.js';

const OPENAPI = JSON.stringify({
  openapi: '3.0.3',
  info: { title: 'Zoo API', version: '1.0', description: 'The **zoo** service. See [the guide](https://zoo.example/guide).' },
  servers: [{ url: 'https://api.zoo.example/v1' }],
  paths: {
    '/animals/{animalId}': {
      put: {
        summary: 'Replace an animal', operationId: 'putAnimal', tags: ['Animals'],
        description: 'Replaces **one** animal. Use `PUT` with care; [bad](javascript:alert(1)) and <script>alert(2)</script>.',
        parameters: [
          { name: 'animalId', in: 'path', required: true, schema: { type: 'integer', format: 'int64' }, description: 'The *id*.' },
          { name: 'X-Zoo-Tenant', in: 'header', required: true, schema: { type: 'string' }, description: 'Tenant.' },
          { name: 'dryRun', in: 'query', schema: { type: 'boolean' }, description: 'Only check.' },
        ],
        requestBody: { required: true, content: { 'application/json': {
          schema: { $ref: '#/components/schemas/Animal' }, example: { name: 'Rex', kind: 'dog' } } } },
        responses: {
          200: { description: 'The animal.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Animal' } } } },
          404: { description: 'No such animal.' },
        },
      },
    },
  },
  components: { schemas: { Animal: { type: 'object', required: ['name'], properties: {
    name: { type: 'string', description: 'Its name.' },
    kind: { type: 'string', enum: ['dog', 'cat'] },
    born: { type: 'string', format: 'date' },
    parent: { $ref: '#/components/schemas/Animal' },
  } } } },
});

async function published(w: Space, content: string, slug: string, name?: string): Promise<string> {
  const r = await w.call<{ source: { id: string; status: string } }>('POST', '/api/v1/sources', { body: { content, ...(name ? { name } : {}) } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.source.status, 'ready', r.text);
  const p = await w.call('PATCH', `/api/v1/sources/${r.body.source.id}`, { body: { publicDocs: { enabled: true, published: true, slug } } });
  assert.equal(p.status, 200, p.text);
  return r.body.source.id;
}

const corpus = (p: string) => fs.readFileSync(new URL(`./fixtures/corpus/${p}`, import.meta.url), 'utf8');

test('docs page of an OpenAPI operation: parameters table, schema tree, examples, curl, Markdown, escaped', async () => {
  await withServer(async (srv) => {
    const w = await srv.space();
    await published(w, OPENAPI, 'zoo');
    const r = await new WebClient(srv).get('/docs/zoo');
    assert.equal(r.status, 200, r.text);
    const t = r.text;
    const op = t.slice(t.indexOf('<section class="op" id="put-animals-animalid">'));
    // Markdown rendered; the javascript: link is text; raw HTML is text.
    assert.match(op, /Replaces <strong>one<\/strong> animal\. Use <code>PUT<\/code> with care; bad and &lt;script&gt;alert\(2\)&lt;\/script&gt;\./);
    assert.match(t, /The <strong>zoo<\/strong> service\. See <a href="https:\/\/zoo\.example\/guide" rel="nofollow">the guide<\/a>/);
    assert.ok(!/javascript:/.test(t.replace(/&[a-z]+;/g, '')) || !/href="javascript/.test(t), 'no javascript: link');
    assert.ok(!/<script>|<script (?!src="\/assets\/copy\.js")/.test(t), 'no script from the source');
    // Parameters table: one row per parameter with name, in, type, required, description.
    const rows = [...op.matchAll(/<tr><td data-label="Name"><code>([^<]+)<\/code><\/td><td data-label="In">([^<]+)<\/td><td data-label="Type"><code class="type">([^<]+)<\/code><\/td><td data-label="Required">(.*?)<\/td><td data-label="Description">(.*?)<\/td><\/tr>/g)]
      .map((m) => [m[1], m[2], m[3], m[4].includes('required') ? 'required' : 'no', m[5].replace(/<[^>]+>/g, '')]);
    assert.deepEqual(rows, [
      ['animalId', 'path', 'integer (int64)', 'required', 'The id.'],
      ['X-Zoo-Tenant', 'header', 'string', 'required', 'Tenant.'],
      ['dryRun', 'query', 'boolean', 'no', 'Only check.'],
    ]);
    // Schema tree of the body: properties with types, required, enum, format; the cycle shown once.
    assert.match(op, /<code class="prop-name">name<\/code> <span class="prop-type">string<\/span> <span class="req">required<\/span>/);
    assert.match(op, /<code class="prop-name">kind<\/code> <span class="prop-type">string enum: &quot;dog&quot;, &quot;cat&quot;<\/span>/);
    assert.match(op, /<code class="prop-name">born<\/code> <span class="prop-type">string \(date\)<\/span>/);
    assert.match(op, /<code class="prop-name">parent<\/code> <span class="prop-type">Animal<\/span> <span class="hint">\(circular: shown above\)<\/span>/);
    // The document's example for the body; a generated one for the 200 response.
    assert.match(op, /<code id="put-animals-animalid-body">\{\n {2}&quot;name&quot;: &quot;Rex&quot;,\n {2}&quot;kind&quot;: &quot;dog&quot;\n\}<\/code>/);
    assert.match(op, /<code id="put-animals-animalid-r0">\{\n {2}&quot;name&quot;: &quot;string&quot;,\n {2}&quot;kind&quot;: &quot;dog&quot;,\n {2}&quot;born&quot;: &quot;2024-01-01&quot;,\n {2}&quot;parent&quot;: \{\}\n\}<\/code>/);
    // The curl sample with its copy button.
    assert.match(op, /<button type="button" class="copy secondary" data-copy="put-animals-animalid-sample" hidden>Copy<\/button>/);
    const sample = /<code id="put-animals-animalid-sample">([^<]*)<\/code>/.exec(op)![1].replace(/&#39;/g, "'").replace(/&quot;/g, '"');
    assert.equal(sample, [
      "curl -X PUT 'https://api.zoo.example/v1/animals/<animalId>' \\",
      '  -H "Authorization: Bearer $API_TOKEN" \\',
      "  -H 'X-Zoo-Tenant: <X-Zoo-Tenant>' \\",
      "  -H 'Content-Type: application/json' \\",
      `  -d '{"name":"Rex","kind":"dog"}'`,
    ].join('\n').replace(/</g, '&lt;').replace(/>/g, '&gt;'));
    // The deep link anchor.
    assert.match(op, /<a class="anchor" href="#put-animals-animalid"/);
  });
});

const TYPES: Array<[string, string, string, RegExp[]]> = [
  ['asyncapi', 'asyncapi/asyncapi-2.6-streetlights-mqtt.yml', 'lights', [
    /<td data-label="Name"><code>streetlightId<\/code><\/td><td data-label="In">channel<\/td>/,
    /<code class="prop-name">lumens<\/code> <span class="prop-type">integer<\/span>/]],
  ['graphql', 'graphql/swapi-schema.graphql', 'swapi', [
    /<td data-label="Name"><code>id<\/code><\/td><td data-label="In">argument<\/td><td data-label="Type"><code class="type">ID<\/code>/,
    /<code class="prop-name">title<\/code> <span class="prop-type">String<\/span>/, /curl -X POST &quot;\$BASE_URL\/graphql&quot;/]],
  ['grpc', 'grpc/grpc-go-route_guide.proto', 'routes', [
    /<span class="code-label">Request<\/span> <code class="type">Point<\/code>/,
    /<code class="prop-name">latitude<\/code> <span class="prop-type">int32<\/span>/, /grpcurl -H/]],
  ['soap', 'soap/cxf-customerservice.wsdl', 'customers', [
    /<span class="code-label">Input<\/span>/, /SOAPAction: &quot;getCustomersByName&quot;/,
    /curl -X POST &#39;http:\/\/localhost:9090\/CustomerServicePort&#39;/]],
  ['postman', 'postman/newman-sample-collection-v2.0.json', 'newman', [
    /<td data-label="Name"><code>source<\/code><\/td><td data-label="In">query<\/td>/,
    /curl -X GET &#39;https:\/\/postman-echo\.com\/get\?source=newman-sample-github-collection&#39;/]],
];

for (const [type, file, slug, patterns] of TYPES) {
  test(`docs page of a ${type} source renders its operations`, async () => {
    await withServer(async (srv) => {
      const w = await srv.space();
      await published(w, corpus(file), slug);
      const r = await new WebClient(srv).get(`/docs/${slug}`);
      assert.equal(r.status, 200, r.text);
      assert.ok((r.text.match(/<section class="op" id="/g) ?? []).length > 0, 'operations');
      for (const p of patterns) assert.match(r.text, p);
    });
  });
}

test('/docs lists the published docs only, with title, description and link', async () => {
  await withServer(async (srv) => {
    const w = await srv.space();
    await published(w, OPENAPI, 'zoo');
    const other = await srv.space();
    await published(other, corpus('grpc/grpc-go-route_guide.proto'), 'routes', 'Route <b>guide</b>');
    const hidden = await w.call<{ source: { id: string } }>('POST', '/api/v1/sources', { body: { content: OPENAPI, name: 'Hidden zoo' } });
    await w.call('PATCH', `/api/v1/sources/${hidden.body.source.id}`, { body: { publicDocs: { enabled: true, published: false, slug: 'hidden-zoo' } } });
    const r = await new WebClient(srv).get('/docs');
    assert.equal(r.status, 200, r.text);
    const links = [...r.text.matchAll(/<h2><a href="([^"]+)">([^<]+)<\/a><\/h2>/g)].map((m) => [m[1], m[2]]);
    assert.deepEqual(links, [['/docs/routes', 'Route &lt;b&gt;guide&lt;/b&gt;'], ['/docs/zoo', 'Zoo API']]);
    assert.match(r.text, /<p>The zoo service\. See \[the guide\]\(https:\/\/zoo\.example\/guide\)\.<\/p>/);
    assert.ok(!r.text.includes('hidden-zoo'));
  });
});
