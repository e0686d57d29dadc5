/**
 * Detection on real-world documents over HTTP (docs/sources.md#type-detection,
 * docs/sources.md#failed-sources): `type: auto` decides from the whole document's top-level
 * keys, for pasted content and for fetched URLs alike, whatever the server's Content-Type says;
 * a source that fails after detection keeps the detected type.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { startTestServer, type TestServer } from './helpers/server.js';
import { openApiPaths, h2Page } from './helpers/ingest-inputs.js';
import type { Ingestion } from './helpers/answers.js';

const CORPUS = new URL('./fixtures/corpus/', import.meta.url);
const corpus = (rel: string): string => readFileSync(new URL(rel, CORPUS), 'utf8');
const expected = JSON.parse(corpus('expected.json')) as Record<string, { endpoints: number | null; documents?: number }>;
const S = '/api/v1/sources';
const EMPTY_COUNTS = { chunks: 0, documents: 0, endpoints: 0 };

/**
 * A JSON value written as block YAML with its keys sorted and double-quoted, as some generators
 * write OpenAPI documents: the `openapi` key lands after `components`, far from the start.
 */
function sortedQuotedYaml(v: unknown, indent = ''): string {
  if (Array.isArray(v)) {
    if (v.length === 0) return ' []';
    return v.map((x) => `\n${indent}-${sortedQuotedYaml(x, `${indent}  `).replace(/^\n\s*/, ' ')}`).join('');
  }
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    if (keys.length === 0) return ' {}';
    return keys.map((k) => `\n${indent}${JSON.stringify(k)}:${sortedQuotedYaml((v as Record<string, unknown>)[k], `${indent}  `)}`).join('');
  }
  return ` ${JSON.stringify(v)}`;
}

let srv: TestServer;
let site: http.Server;
let origin = '';
/** Path → [Content-Type, body] served by the local site. */
const routes = new Map<string, [string, string]>();

before(async () => {
  srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000', SOURCE_FETCH_ALLOW_PRIVATE: 'true' } });
  site = http.createServer((req, res) => {
    const r = routes.get(req.url ?? '');
    if (!r) { res.writeHead(404, { 'content-type': 'text/plain' }); res.end('not found'); return; }
    res.writeHead(200, { 'content-type': r[0] });
    res.end(r[1]);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});
after(async () => {
  await srv.close();
  site.closeAllConnections();
  await new Promise((resolve) => site.close(resolve));
});

/** Creates a source from `url`, served with `contentType` and `body`; asserts the 201 and that GET agrees. */
async function fromUrl(path: string, contentType: string, body: string, type?: string): Promise<any> {
  routes.set(path, [contentType, body]);
  const r = await srv.call<Ingestion>('POST', S, { body: { url: `${origin}${path}`, ...(type ? { type } : {}) } });
  assert.equal(r.status, 201, r.text.slice(0, 500));
  const g = await srv.call('GET', `${S}/${r.body.source.id}`);
  assert.deepEqual(g.body, r.body);
  return r.body;
}

describe('real documents fetched by URL, type auto: detected from their content whatever the Content-Type', () => {
  const cases: Array<[string, string, string]> = [
    // raw.githubusercontent.com serves every file as text/plain.
    ['openapi/twilio-knowledge-v1.yaml', 'text/plain; charset=utf-8', 'openapi'],
    ['openapi/oai-v2.0-petstore-minimal.yaml', 'text/plain; charset=utf-8', 'openapi'],
    // A mislabelled answer: the content still decides.
    ['openapi/oai-v2.0-petstore-minimal.yaml', 'text/html', 'openapi'],
    ['openapi/twilio-knowledge-v1.yaml', 'application/octet-stream', 'openapi'],
    ['asyncapi/asyncapi-3.0-streetlights-kafka.yml', 'text/plain', 'asyncapi'],
    ['postman/github-api-v2.1.json', 'text/plain', 'postman'],
    ['graphql/github-public-schema.graphql', 'text/plain', 'graphql'],
    ['grpc/grpc-health-v1.proto', 'text/plain', 'grpc'],
    ['soap/cxf-cxf1662-import-only.wsdl', 'text/xml', 'soap'],
    ['soap/xmlschema-stockquoteservice-imported-porttype.wsdl', 'text/html', 'soap'],
    ['openapi/adyen-management-v3.json', 'text/plain', 'openapi'],
  ];
  for (const [file, contentType, type] of cases) {
    test(`${file} served as ${contentType} → ready ${type} with ${expected[file].endpoints} endpoints`, async () => {
      const r = await fromUrl(`/${contentType.replace(/\W+/g, '-')}/${file}`, contentType, corpus(file));
      assert.equal(r.source.status, 'ready', r.source.error);
      assert.equal(r.source.type, type);
      assert.equal(r.counts.endpoints, expected[file].endpoints);
      if (expected[file].documents !== undefined) assert.equal(r.counts.documents, expected[file].documents);
      assert.ok(r.counts.documents > 0 && r.counts.chunks > 0);
    });
  }

  test('a 2 MB OpenAPI YAML with sorted, quoted keys (openapi after 500 KB) served as text/plain → openapi with all its endpoints', async () => {
    const yaml = `${sortedQuotedYaml(JSON.parse(corpus('openapi/adyen-management-v3.json'))).slice(1)}\n`;
    assert.ok(yaml.indexOf('\n"openapi":') > 500_000, `openapi key at ${yaml.indexOf('\n"openapi":')}`);
    const r = await fromUrl('/sorted-quoted.yaml', 'text/plain', yaml);
    assert.equal(r.source.status, 'ready', r.source.error);
    assert.equal(r.source.type, 'openapi');
    assert.equal(r.counts.endpoints, expected['openapi/adyen-management-v3.json'].endpoints);
  });

  test('an HTML page and prose are still url sources', async () => {
    const page = await fromUrl('/page', 'text/html', '<!doctype html><title>Help</title><h1>Refunds</h1><p>Five days.</p>');
    assert.deepEqual([page.source.status, page.source.type], ['ready', 'url']);
    const prose = await fromUrl('/notes.txt', 'text/plain', 'Note: refunds take five days.\n\nAsk support otherwise.\n');
    assert.deepEqual([prose.source.status, prose.source.type], ['ready', 'url']);
  });
});

describe('a failed source keeps the type it was detected as', () => {
  test('pasted, type auto: an OpenAPI document over a cap, truncated JSON, broken YAML → failed openapi', async () => {
    const cases: Array<[string, string]> = [
      [openApiPaths(20_000), 'the content has 20,001 documents; at most 20,000 are ingested per source'],
      [corpus('openapi/oai-v2.0-petstore.json').slice(0, 2000), 'JSON: Expected double-quoted property name at line 90, column 7'],
      [`${corpus('openapi/twilio-knowledge-v1.yaml')}\n  bad: [\n`, 'YAML: unterminated flow sequence at line 697, column 8'],
    ];
    for (const [content, error] of cases) {
      const r = await srv.call<Ingestion>('POST', S, { body: { content } });
      assert.equal(r.status, 201, r.text.slice(0, 300));
      assert.deepEqual([r.body.source.status, r.body.source.type, r.body.source.error], ['failed', 'openapi', error]);
      assert.deepEqual(r.body.counts, EMPTY_COUNTS);
      assert.deepEqual((await srv.call('GET', `${S}/${r.body.source.id}`)).body, r.body);
    }
  });

  test('fetched, type auto: an API description that fails keeps its type; a page that fails, or a failed fetch, stays url', async () => {
    const big = await fromUrl('/big.json', 'application/json', openApiPaths(20_000));
    assert.deepEqual([big.source.status, big.source.type, big.source.error], ['failed', 'openapi', 'the content has 20,001 documents; at most 20,000 are ingested per source']);
    assert.deepEqual(big.counts, EMPTY_COUNTS);
    const cut = await fromUrl('/cut.yaml', 'text/plain', 'components: {}\nopenapi: 3.0.0\ninfo: {title: "unterminated\n');
    assert.deepEqual([cut.source.status, cut.source.type], ['failed', 'openapi']);
    assert.match(cut.source.error, /^YAML: .* at line 3, column \d+$/);
    const pages = await fromUrl('/pages.html', 'text/html', h2Page(30_000));
    assert.deepEqual([pages.source.status, pages.source.type, pages.source.error], ['failed', 'url', 'the content has 30,000 documents; at most 20,000 are ingested per source']);
    const asked = await fromUrl('/asked.json', 'application/json', openApiPaths(20_000), 'url');
    assert.deepEqual([asked.source.status, asked.source.type], ['failed', 'url']);
    const gone = await srv.call<Ingestion>('POST', S, { body: { url: `${origin}/missing` } });
    assert.deepEqual([gone.body.source.status, gone.body.source.type], ['failed', 'url']);
  });

  test('a rescan that fails after detection takes the detected type', async () => {
    routes.set('/changing', ['text/plain', '# Notes\n\nPlain text.\n']);
    const first = (await srv.call<Ingestion>('POST', S, { body: { url: `${origin}/changing` } })).body;
    assert.deepEqual([first.source.status, first.source.type], ['ready', 'url']);
    routes.set('/changing', ['text/plain', openApiPaths(20_000)]);
    const again = await srv.call<Ingestion>('POST', `${S}/${first.source.id}/rescan`);
    assert.equal(again.status, 200, again.text.slice(0, 300));
    assert.deepEqual([again.body.source.status, again.body.source.type], ['failed', 'openapi']);
  });
});
