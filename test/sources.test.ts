/**
 * The sources area over a real socket (docs/api.md#sources,
 * docs/api.md#conventions): create validation and limits, scopes, duplicate urls, name
 * and default objects, list, retrieve, update (auth secrets never shown nor stored in clear),
 * delete, rescan of pasted content, BM25 search and workspace isolation. URLs used here are never
 * fetched successfully (private or unresolvable hosts); fetching is tested in sources-fetch.test.ts.
 * Every test works in a workspace of its own, so lists hold only what the test made.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type CallOptions, type CallResult, type TestServer, type Space } from './helpers/server.js';
import { idsOf, walkList } from './helpers/lists.js';
import type { ErrorAnswer, Ingestion, Page, SearchAnswer, SourceList } from './helpers/answers.js';

let srv: TestServer;
before(async () => {
  srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000', SOURCE_FETCH_TIMEOUT_MS: '3000' } });
});
after(async () => { await srv.close(); });

/** A fresh workspace with a full-access key; `call` uses that key unless told otherwise. */
const space = () => srv.space();

const CORPUS = new URL('./fixtures/corpus/', import.meta.url);
const corpus = (rel: string): string => readFileSync(new URL(rel, CORPUS), 'utf8');
const PETSTORE = corpus('openapi/oai-v2.0-petstore.json');
const SWAPI = corpus('graphql/swapi-schema.graphql');

const S = '/api/v1/sources';
const iso = (ms: number) => new Date(ms).toISOString();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const invalid = (detail: string) => ({ code: 'invalid_request', error: `Request body is invalid: ${detail}.` });
const invalidQuery = (detail: string) => ({ code: 'invalid_request', error: `Query parameter ${detail}.` });
const NOT_FOUND = { code: 'not_found', error: 'Record not found.' };
const CONFLICT_URL = { code: 'conflict', error: 'A record with this identifier already exists: a source with this url already exists.' };
const DEFAULT_AUTH = { configured: false, hasSecret: false, lastError: null, lastVerifiedAt: null, status: 'not_configured', type: null };
const DEFAULT_PUBLIC_DOCS = { enabled: false, published: false, slug: null, url: null };
const EMPTY_COUNTS = { chunks: 0, documents: 0, endpoints: 0 };

/** Creates a source and returns the 201 body (asserting the status). */
async function create(w: Space, body: Record<string, unknown>): Promise<any> {
  const r = await w.call('POST', S, { body });
  assert.equal(r.status, 201, r.text.slice(0, 500));
  return r.body;
}

async function get(w: Space, id: string): Promise<any> {
  const r = await w.call('GET', `${S}/${id}`);
  assert.equal(r.status, 200, r.text.slice(0, 500));
  return r.body;
}

async function search(w: Space, q: string, limit?: number): Promise<any[]> {
  const r = await w.call<SearchAnswer>('GET', `${S}/search?q=${encodeURIComponent(q)}${limit === undefined ? '' : `&limit=${limit}`}`);
  assert.equal(r.status, 200, r.text.slice(0, 500));
  assert.deepEqual(Object.keys(r.body).sort(), ['hasMore', 'nextCursor', 'object', 'results']);
  assert.equal(r.body.object, 'list');
  assert.equal(r.body.hasMore, false);
  assert.equal(r.body.nextCursor, null);
  for (const hit of r.body.results) {
    assert.deepEqual(Object.keys(hit).sort(), ['documentId', 'object', 'score', 'sourceId', 'text', 'title']);
    assert.equal(hit.object, 'search_result');
    assert.equal(typeof hit.score, 'number');
    assert.equal(typeof hit.text, 'string');
  }
  return r.body.results;
}

/** Every file under `dir`, recursively. */
function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    const st = statSync(p);
    return st.isDirectory() ? allFiles(p) : st.isFile() ? [p] : []; // not the admin socket
  });
}

// ---------------------------------------------------------------------------------------------

describe('POST /api/v1/sources: request validation', () => {
  const cases: Array<[string, unknown, string]> = [
    ['no url and no content', {}, 'url or content is required'],
    ['only a name and a type', { name: 'x', type: 'text' }, 'url or content is required'],
    ['an unknown property', { content: 'x', tags: ['a'] }, 'tags is not an allowed property'],
    ['type not in the enum (a stored-only type)', { content: 'x', type: 'notion' }, 'type must be one of auto, openapi, json, url, website, text, graphql, postman, asyncapi, grpc, soap, github'],
    ['type of the wrong case', { content: 'x', type: 'OpenAPI' }, 'type must be one of auto, openapi, json, url, website, text, graphql, postman, asyncapi, grpc, soap, github'],
    ['name of 201 characters', { content: 'x', name: 'n'.repeat(201) }, 'name must be at most 200 characters'],
    ['url of 2001 characters', { url: `http://docs.example.invalid/${'a'.repeat(2001 - 28)}` }, 'url must be at most 2000 characters'],
    ['content that is not a string', { content: 42 }, 'content must be a string'],
    ['a file: url', { url: 'file:///etc/passwd' }, 'url must use http or https, not file'],
    ['an ftp: url', { url: 'ftp://x' }, 'url must use http or https, not ftp'],
    ['a relative url', { url: '/openapi.json' }, 'url must be an absolute http or https URL'],
    ['a url with credentials', { url: 'https://user:pw@docs.example.invalid/' }, 'url must not contain credentials; configure them with auth'],
    ['type url without a url', { type: 'url', content: 'x' }, 'url is required for type url'],
    ['type website without a url', { type: 'website', content: '<html></html>' }, 'url is required for type website'],
    ['type github without a url', { type: 'github', content: '# readme' }, 'url is required for type github'],
    ['type url with content too', { type: 'url', url: 'http://docs.example.invalid/', content: 'x' }, 'content cannot be given with type url: a url source is fetched from its url'],
    ['type website with content too', { type: 'website', url: 'http://docs.example.invalid/', content: 'x' }, 'content cannot be given with type website: a website source is fetched from its url'],
    ['type github with content too', { type: 'github', url: 'https://github.com/o/r', content: '# readme' }, 'content cannot be given with type github: a github source is fetched from its url'],
  ];
  for (const [what, body, detail] of cases) {
    test(`${what} → 400 "${detail}", nothing created`, async () => {
      const w = await space();
      const r = await w.call('POST', S, { body });
      assert.equal(r.status, 400, r.text);
      assert.deepEqual(r.body, invalid(detail));
      const list = await w.call<SourceList>('GET', S);
      assert.deepEqual(list.body.sources, []);
    });
  }

  test('a body that is not a JSON object → 400', async () => {
    const w = await space();
    for (const raw of ['[]', '"x"', 'null', '{']) {
      const r = await w.call<ErrorAnswer>('POST', S, { raw, headers: { 'Content-Type': 'application/json' } });
      assert.equal(r.status, 400, `${raw}: ${r.text}`);
      assert.equal(r.body.code, 'invalid_request');
    }
  });

  test('name of 200 characters and url of 2000 characters → 201', async () => {
    const w = await space();
    const name = 'n'.repeat(200);
    const a = await create(w, { content: '# Title\n\ntext', name });
    assert.equal(a.source.name, name);
    const url = `http://127.0.0.1/${'a'.repeat(2000 - 17)}`;
    assert.equal(url.length, 2000);
    const b = await create(w, { url });
    assert.equal(b.source.inputUrl, url);
    assert.equal(b.source.status, 'failed');
  });

  test('content of 2,000,001 characters → 400; exactly 2,000,000 characters → 201 ready', async () => {
    const w = await space();
    const big = '# Big\n\n' + 'lorem ipsum dolor sit amet '.repeat(80_000);
    const over = big.slice(0, 2_000_001);
    assert.equal(over.length, 2_000_001);
    const r = await w.call('POST', S, { body: { content: over } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, invalid('content must be at most 2000000 characters'));
    const ok = await create(w, { content: big.slice(0, 2_000_000) });
    assert.equal(ok.source.status, 'ready');
    assert.equal(ok.source.name, 'Big');
    assert.ok(ok.counts.chunks >= 1000, `${ok.counts.chunks} chunks for 2 MB of text`);
  });

  test('content counts characters, not bytes: 2,000,000 three-byte characters (6 MB body) → 201', async () => {
    const w = await space();
    const r = await create(w, { content: '€ '.repeat(1_000_000) });
    assert.equal(r.source.status, 'ready');
  });

  test('the body limit of create is 16 MiB: a 16 MiB body is read (400 for its content), 16 MiB + 1 byte → 413', async () => {
    const w = await space();
    const limit = 16 * 1024 * 1024;
    const exact = `{"content":"${'a'.repeat(limit - 14)}"}`;
    assert.equal(Buffer.byteLength(exact), limit);
    const r = await w.call('POST', S, { raw: exact, headers: { 'Content-Type': 'application/json' } });
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(r.body, invalid('content must be at most 2000000 characters'));
    const over = `{"content":"${'a'.repeat(limit - 13)}"}`;
    const big = await w.call('POST', S, { raw: over, headers: { 'Content-Type': 'application/json' } });
    assert.equal(big.status, 413, big.text);
    assert.deepEqual(big.body, { code: 'payload_too_large', error: 'The request body is too large: the limit for this request is 16777216 bytes.' });
    // A body above the 1 MiB limit of other routes is fine here.
    const mid = await create(w, { content: `# Mid\n\n${'x y z '.repeat(300_000)}` });
    assert.equal(mid.source.status, 'ready');
  });

  test('no body at all, without or with a Content-Type, or an empty one → 400 "a JSON body is required"; nothing created', async () => {
    const w = await space();
    const cases: Array<Record<string, string>> = [{}, { 'Content-Type': 'text/plain' }, { 'Content-Type': 'application/json' }];
    for (const headers of cases) {
      const r = await w.call('POST', S, { headers });
      assert.equal(r.status, 400, JSON.stringify(headers));
      assert.deepEqual(r.body, invalid('a JSON body is required'), JSON.stringify(headers));
      const empty = await w.call('POST', S, { raw: '', headers });
      assert.equal(empty.status, 400, JSON.stringify(headers));
      assert.deepEqual(empty.body, invalid('a JSON body is required'), JSON.stringify(headers));
    }
    assert.deepEqual((await w.call<SourceList>('GET', S)).body.sources, []);
  });

  test('a body that is not application/json → 415', async () => {
    const w = await space();
    const r = await w.call<ErrorAnswer>('POST', S, { raw: '{"content":"x"}', headers: { 'Content-Type': 'text/plain' } });
    assert.equal(r.status, 415);
    assert.equal(r.body.code, 'unsupported_media_type');
  });
});

describe('POST /api/v1/sources: the created source', () => {
  test('pasted OpenAPI → 201 with the exact ingestion result: name from the title, default auth and publicDocs', async () => {
    const w = await space();
    const now = iso(srv.clock.now());
    const r = await w.call<Ingestion>('POST', S, { body: { content: PETSTORE } });
    assert.equal(r.status, 201);
    const id = r.body.source.id;
    assert.match(id, UUID);
    assert.deepEqual(r.body.source, {
      object: 'source', id, name: 'Swagger Petstore', type: 'openapi', status: 'ready', inputUrl: null, error: null,
      auth: DEFAULT_AUTH, publicDocs: DEFAULT_PUBLIC_DOCS, createdAt: now, updatedAt: now,
    });
    assert.deepEqual(r.body.counts, { chunks: r.body.counts.chunks, documents: r.body.documents.length, endpoints: 3 });
    assert.ok(r.body.counts.chunks >= r.body.counts.documents);
    assert.deepEqual(r.body.endpoints.map((e: any) => [e.method, e.path]).sort(), [['GET', '/pets'], ['GET', '/pets/{petId}'], ['POST', '/pets']]);
    for (const e of r.body.endpoints) assert.equal(typeof e.id, 'string');
    const kinds = new Set(r.body.documents.map((d: any) => d.kind));
    assert.ok(kinds.has('overview') && kinds.has('operation') && kinds.has('schema'), [...kinds].join());
    assert.equal(new Set(r.body.documents.map((d: any) => d.id)).size, r.body.documents.length, 'document ids are unique');
    assert.deepEqual(await get(w, id), r.body);
  });

  test('name: given name wins; else the document title; else "Untitled source"', async () => {
    const w = await space();
    assert.equal((await create(w, { content: PETSTORE, name: 'Pets API' })).source.name, 'Pets API');
    assert.equal((await create(w, { content: '# Getting started\n\nInstall it.' })).source.name, 'Getting started');
    assert.equal((await create(w, { content: '<html><head><title>Help Centre</title></head><body><p>Hi</p></body></html>' })).source.name, 'Help Centre');
    assert.equal((await create(w, { content: 'just some words without any heading' })).source.name, 'Untitled source');
    const failed = await create(w, { content: '{"a":' });
    assert.equal(failed.source.status, 'failed');
    assert.equal(failed.source.name, 'Untitled source');
  });

  test('name "" is the default name, as when it is left out: the title, else the URL host, else "Untitled source"', async () => {
    const w = await space();
    for (const name of [undefined, '']) {
      const given = name === undefined ? {} : { name };
      assert.equal((await create(w, { content: PETSTORE, ...given })).source.name, 'Swagger Petstore', JSON.stringify(given));
      assert.equal((await create(w, { content: 'words without a heading', ...given })).source.name, 'Untitled source', JSON.stringify(given));
      const host = name === undefined ? 'absent.example.invalid' : 'empty.example.invalid';
      assert.equal((await create(w, { url: `https://${host}/api`, ...given })).source.name, host, JSON.stringify(given));
    }
    // An empty name is not a given name: a rescan derives the name again (here, of content with a title).
    const r = await create(w, { content: '# Guide\n\ntext', name: '' });
    assert.equal(r.source.name, 'Guide');
    assert.equal((await w.call<Ingestion>('POST', `${S}/${r.source.id}/rescan`)).body.source.name, 'Guide');
  });

  test('a derived name is cut to 200 characters', async () => {
    const w = await space();
    const r = await create(w, { content: `# ${'T'.repeat(300)}\n\nbody` });
    assert.equal(r.source.name, 'T'.repeat(200));
  });

  test('more than 1,000 documents: counts give the total, documents lists the first 1,000 (create and GET)', async () => {
    const w = await space();
    const content = Array.from({ length: 1200 }, (_, i) => `# Section ${i}\n\nText of section ${i}.`).join('\n\n');
    const r = await create(w, { content });
    assert.equal(r.counts.documents, 1200);
    assert.equal(r.documents.length, 1000);
    assert.equal(r.documents[0].title, 'Section 0');
    assert.equal(r.documents[999].title, 'Section 999');
    assert.deepEqual(await get(w, r.source.id), r);
  });

  test('name of a url source whose document has no title → the URL host', async () => {
    const w = await space();
    // Refused (loopback) and unresolvable hosts: nothing is fetched, so the host is the name.
    const a = await create(w, { url: 'http://localhost:9/docs' });
    assert.equal(a.source.name, 'localhost:9');
    assert.equal(a.source.status, 'failed');
    const b = await create(w, { url: 'https://Docs.Example.invalid/api' });
    assert.equal(b.source.name, 'docs.example.invalid');
    assert.equal(b.source.status, 'failed');
    assert.equal(b.source.type, 'url');
    assert.equal(b.source.inputUrl, 'https://docs.example.invalid/api');
    const c = await create(w, { url: 'http://127.0.0.1:9/x', name: 'Mine' });
    assert.equal(c.source.name, 'Mine');
  });

  test('a url source that cannot be fetched → 201 failed with the reason, type url, no documents', async () => {
    const w = await space();
    const now = iso(srv.clock.now());
    const r = await create(w, { url: 'http://127.0.0.1:9/openapi.json' });
    assert.deepEqual(r, {
      source: {
        object: 'source', id: r.source.id, name: '127.0.0.1:9', type: 'url', status: 'failed', inputUrl: 'http://127.0.0.1:9/openapi.json',
        error: 'the host of http://127.0.0.1:9/openapi.json cannot be reached from this server',
        auth: DEFAULT_AUTH, publicDocs: DEFAULT_PUBLIC_DOCS, createdAt: now, updatedAt: now,
      },
      counts: EMPTY_COUNTS, documents: [], endpoints: [],
    });
  });

  test('duplicate url after normalisation (scheme/host case, default port, fragment) → 409, in the same workspace only', async () => {
    const w = await space();
    const a = await create(w, { url: 'HTTP://Example.com:80/a#x' });
    assert.equal(a.source.inputUrl, 'http://example.com/a');
    for (const url of ['http://example.com/a', 'http://EXAMPLE.com/a#other', 'http://example.com:80/a']) {
      const r = await w.call('POST', S, { body: { url } });
      assert.equal(r.status, 409, url);
      assert.deepEqual(r.body, CONFLICT_URL);
    }
    // A different path, query, scheme or port is another source.
    for (const url of ['http://example.com/a/', 'http://example.com/a?v=2', 'https://example.com/a', 'http://example.com:8080/a']) {
      assert.equal((await w.call('POST', S, { body: { url } })).status, 201, url);
    }
    const list = await w.call<SourceList>('GET', `${S}?limit=100`);
    assert.equal(list.body.sources.length, 5);
    // Another workspace may hold the same url.
    const other = await space();
    assert.equal((await other.call('POST', S, { body: { url: 'http://example.com/a' } })).status, 201);
    // Once deleted, the url is free again.
    assert.equal((await w.call('DELETE', `${S}/${a.source.id}`)).status, 200);
    assert.equal((await w.call('POST', S, { body: { url: 'http://example.com/a#again' } })).status, 201);
  });

  test('two simultaneous creates of the same url → one 201 and one 409', async () => {
    const w = await space();
    const rs = await Promise.all([1, 2].map(() => w.call('POST', S, { body: { url: 'http://127.0.0.1:9/same' } })));
    assert.deepEqual(rs.map((r) => r.status).sort(), [201, 409]);
  });
});

describe('scopes', () => {
  test('sources:read can list, retrieve and search but not create, update, delete or rescan → 403', async () => {
    const w = await space();
    const src = (await create(w, { content: PETSTORE })).source;
    const read = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'sources:read' });
    const denied = { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs sources:write.' };
    for (const [m, p, body] of [['POST', S, { content: 'x' }], ['PATCH', `${S}/${src.id}`, { name: 'y' }], ['DELETE', `${S}/${src.id}`, undefined], ['POST', `${S}/${src.id}/rescan`, undefined]] as const) {
      const r = await srv.call(m, p, { key: read, body });
      assert.equal(r.status, 403, `${m} ${p}`);
      assert.deepEqual(r.body, denied);
    }
    assert.equal((await srv.call('GET', S, { key: read })).status, 200);
    assert.equal((await srv.call('GET', `${S}/${src.id}`, { key: read })).status, 200);
    assert.equal((await srv.call('GET', `${S}/search?q=pet`, { key: read })).status, 200);
    // Nothing changed.
    assert.equal((await get(w, src.id)).source.name, 'Swagger Petstore');
  });

  test('sources:write implies sources:read; other scopes cannot read sources', async () => {
    const w = await space();
    const write = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'sources:write' });
    const r = await srv.call<Ingestion>('POST', S, { key: write, body: { content: PETSTORE } });
    assert.equal(r.status, 201);
    assert.equal((await srv.call('GET', S, { key: write })).status, 200);
    assert.equal((await srv.call('GET', `${S}/${r.body.source.id}`, { key: write })).status, 200);
    assert.equal((await srv.call('GET', `${S}/search?q=pet`, { key: write })).status, 200);
    const conv = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'conversations:write' });
    const g = await srv.call('GET', S, { key: conv });
    assert.equal(g.status, 403);
    assert.deepEqual(g.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs sources:read.' });
  });

  test('no key → 401 unauthorized', async () => {
    const r = await srv.call('POST', S, { key: null, body: { content: 'x' } });
    assert.equal(r.status, 401);
    assert.deepEqual(r.body, { code: 'unauthorized', error: 'A valid workspace API key is required.' });
  });
});

describe('GET /api/v1/sources', () => {
  test('newest first, filters by status and type, pagination', async () => {
    const w = await space();
    const made: any[] = [];
    const bodies = [
      { content: PETSTORE }, // openapi ready
      { content: '# Guide\n\nHello.' }, // text ready
      { content: '{"broken": ' }, // failed
      { content: SWAPI }, // graphql ready
      { content: PETSTORE, name: 'Pets again' }, // openapi ready
    ];
    for (const b of bodies) {
      srv.clock.advance(1000);
      made.push((await create(w, b)).source);
    }
    const ids = made.map((s) => s.id);
    const all = await w.call<SourceList>('GET', S);
    assert.equal(all.status, 200);
    assert.deepEqual(Object.keys(all.body).sort(), ['hasMore', 'nextCursor', 'object', 'sources']);
    assert.deepEqual(all.body.sources.map((s: any) => s.id), [...ids].reverse());
    assert.deepEqual({ ...all.body, sources: undefined }, { object: 'list', hasMore: false, nextCursor: null, sources: undefined });
    // Items are SourceSummary objects equal to the retrieved ones.
    for (const s of all.body.sources) assert.deepEqual(s, (await get(w, s.id)).source);

    const byType = await w.call<SourceList>('GET', `${S}?type=openapi`);
    assert.deepEqual(byType.body.sources.map((s: any) => s.id), [ids[4], ids[0]]);
    const failed = await w.call<SourceList>('GET', `${S}?status=failed`);
    assert.deepEqual(failed.body.sources.map((s: any) => s.id), [ids[2]]);
    const both = await w.call<SourceList>('GET', `${S}?status=ready&type=graphql`);
    assert.deepEqual(both.body.sources.map((s: any) => s.id), [ids[3]]);
    const none = await w.call('GET', `${S}?status=processing`);
    assert.deepEqual(none.body, { object: 'list', hasMore: false, nextCursor: null, sources: [] });

    // Pages of 2: 2 + 2 + 1, in order (test/lists.test.ts checks paging on every list).
    const { items: paged, sizes } = await walkList<{ id: string }>((p) => w.call('GET', p), S, 'sources', 2);
    assert.deepEqual(idsOf(paged), [...ids].reverse());
    assert.deepEqual(sizes, [2, 2, 1]);
    // A filtered page.
    const p1 = await w.call<SourceList>('GET', `${S}?type=openapi&limit=1`);
    assert.equal(p1.body.hasMore, true);
    const p2 = await w.call<SourceList>('GET', `${S}?type=openapi&limit=1&cursor=${encodeURIComponent(p1.body.nextCursor!)}`);
    assert.deepEqual([p1.body.sources[0].id, p2.body.sources[0].id], [ids[4], ids[0]]);
    assert.equal(p2.body.hasMore, false);
  });

  test('invalid filters and limits → 400', async () => {
    const w = await space();
    const cases: Array<[string, string]> = [
      ['status=bogus', 'status must be one of pending, processing, ready, failed'],
      ['type=auto', 'type must be one of openapi, json, url, website, text, graphql, postman, asyncapi, grpc, soap, github, notion, confluence, hubspot'],
      ['limit=0', 'limit must be an integer from 1 to 100'],
      ['limit=101', 'limit must be an integer from 1 to 100'],
    ];
    for (const [q, detail] of cases) {
      const r = await w.call('GET', `${S}?${q}`);
      assert.equal(r.status, 400, q);
      assert.deepEqual(r.body, invalidQuery(detail), q);
    }
    const bad = await w.call<ErrorAnswer>('GET', `${S}?cursor=garbage`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid_request');
  });
});

describe('GET /api/v1/sources/{id}', () => {
  test('an unknown id, a malformed id and another workspace\'s id → 404 exact, for every operation', async () => {
    const w = await space();
    const other = await space();
    const theirs = (await create(other, { content: PETSTORE })).source.id;
    for (const id of ['00000000-0000-7000-8000-000000000000', 'not-a-uuid', theirs]) {
      for (const [m, body] of [['GET', undefined], ['PATCH', { name: 'x' }], ['DELETE', undefined], ['POST', undefined]] as const) {
        const r = await w.call(m, m === 'POST' ? `${S}/${id}/rescan` : `${S}/${id}`, { body });
        assert.equal(r.status, 404, `${m} ${id}`);
        assert.deepEqual(r.body, NOT_FOUND);
      }
    }
    // The other workspace's source is untouched.
    const g = await get(other, theirs);
    assert.equal(g.source.name, 'Swagger Petstore');
  });
});

describe('PATCH /api/v1/sources/{id}', () => {
  test('name and publicDocs (merged, slug validated, url derived from PUBLIC_URL) → 200 {source} with updatedAt moved', async () => {
    const w = await space();
    const created = (await create(w, { content: PETSTORE })).source;
    srv.clock.advance(5000);
    const now = iso(srv.clock.now());
    const r = await w.call('PATCH', `${S}/${created.id}`, { body: { name: 'Renamed', publicDocs: { enabled: true, slug: 'pet-store-2' } } });
    assert.equal(r.status, 200, r.text);
    const url = `${srv.publicUrl}/docs/pet-store-2`;
    assert.deepEqual(r.body, {
      source: { ...created, name: 'Renamed', publicDocs: { enabled: true, published: false, slug: 'pet-store-2', url }, updatedAt: now },
    });
    const r2 = await w.call<Ingestion>('PATCH', `${S}/${created.id}`, { body: { publicDocs: { published: true } } });
    assert.equal(r2.status, 200);
    assert.deepEqual(r2.body.source.publicDocs, { enabled: true, published: true, slug: 'pet-store-2', url });
    const r3 = await w.call<Ingestion>('PATCH', `${S}/${created.id}`, { body: { publicDocs: { slug: null } } });
    assert.deepEqual(r3.body.source.publicDocs, { enabled: true, published: true, slug: null, url: null });
    assert.deepEqual((await get(w, created.id)).source, r3.body.source);
    // A rescan keeps a given name.
    await w.call('PATCH', `${S}/${created.id}`, { body: { name: 'Kept' } });
    const rescan = await w.call<Ingestion>('POST', `${S}/${created.id}/rescan`);
    assert.equal(rescan.body.source.name, 'Kept');
  });

  test('name "" → back to the name derived from the document (kept up to date by rescans); a given name sticks again afterwards', async () => {
    const w = await space();
    const created = (await create(w, { content: PETSTORE, name: 'Mine' })).source;
    assert.equal(created.name, 'Mine');
    const reset = await w.call<Ingestion>('PATCH', `${S}/${created.id}`, { body: { name: '' } });
    assert.equal(reset.status, 200, reset.text);
    assert.equal(reset.body.source.name, 'Swagger Petstore');
    assert.equal((await get(w, created.id)).source.name, 'Swagger Petstore');
    assert.equal((await w.call<Ingestion>('POST', `${S}/${created.id}/rescan`)).body.source.name, 'Swagger Petstore');
    await w.call('PATCH', `${S}/${created.id}`, { body: { name: 'Again mine' } });
    assert.equal((await w.call<Ingestion>('POST', `${S}/${created.id}/rescan`)).body.source.name, 'Again mine');
    // A source that never ingested: its URL's host, else "Untitled source".
    const failed = (await create(w, { url: 'https://docs.example.invalid/x', name: 'Named' })).source;
    assert.equal((await w.call<Ingestion>('PATCH', `${S}/${failed.id}`, { body: { name: '' } })).body.source.name, 'docs.example.invalid');
    const untitled = (await create(w, { content: '{"a":', name: 'Broken' })).source;
    assert.equal((await w.call<Ingestion>('PATCH', `${S}/${untitled.id}`, { body: { name: '' } })).body.source.name, 'Untitled source');
  });

  test('invalid updates → 400 exact, nothing changed', async () => {
    const w = await space();
    const created = (await create(w, { content: PETSTORE })).source;
    const cases: Array<[unknown, string]> = [
      [{ name: 'n'.repeat(201) }, 'name must be at most 200 characters'],
      [{ publicDocs: { slug: 'Bad Slug' } }, 'publicDocs.slug has an invalid format'],
      [{ publicDocs: { slug: '-leading' } }, 'publicDocs.slug has an invalid format'],
      [{ publicDocs: { slug: 'x' } }, 'publicDocs.slug must be 2 to 63 characters'],
      [{ publicDocs: { slug: 's'.repeat(64) } }, 'publicDocs.slug must be 2 to 63 characters'],
      [{ publicDocs: { enabled: 'yes' } }, 'publicDocs.enabled must be true or false'],
      [{ publicDocs: { theme: 'dark' } }, 'publicDocs.theme is not an allowed property'],
      [{ publicDocs: { url: 'https://docs.example.com/pets' } }, 'publicDocs.url is not an allowed property'],
      [{ status: 'ready' }, 'status is not an allowed property'],
      [{ auth: { type: 'bearer' } }, 'auth.secret is required'],
      [{ auth: { type: 'oauth', secret: 's' } }, 'auth.type must be one of bearer, header, basic'],
      [{ auth: { type: 'header', secret: 's' } }, 'auth.headerName is required for type header'],
      [{ auth: { type: 'header', secret: 's', headerName: 'X Bad' } }, 'auth.headerName has an invalid format'],
      [{ auth: { type: 'basic', secret: 's' } }, 'auth.username is required for type basic'],
      [{ auth: { type: 'bearer', secret: 's', username: 'u' } }, 'auth.username is only allowed for type basic'],
      [{ auth: { type: 'bearer', secret: 's', headerName: 'X-Key' } }, 'auth.headerName is only allowed for type header'],
      [{ auth: { type: 'bearer', secret: '' } }, 'auth.secret must be 1 to 4096 characters'],
    ];
    for (const [body, detail] of cases) {
      const r = await w.call('PATCH', `${S}/${created.id}`, { body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.deepEqual(r.body, invalid(detail), JSON.stringify(body));
    }
    assert.deepEqual((await get(w, created.id)).source, created);
  });

  test('auth bearer/header/basic with a secret → auth {configured, hasSecret, unverified}; the secret is never returned nor stored in clear; auth null clears', async () => {
    const w = await space();
    const created = (await create(w, { content: PETSTORE })).source;
    const SECRET = 'sk_live_SUPER-SECRET-9f8e7d6c5b4a';
    const r = await w.call<Ingestion>('PATCH', `${S}/${created.id}`, { body: { auth: { type: 'bearer', secret: SECRET } } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.source.auth, { configured: true, hasSecret: true, status: 'unverified', type: 'bearer', lastError: null, lastVerifiedAt: null });
    const texts = [r.text];
    texts.push((await w.call('GET', `${S}/${created.id}`)).text, (await w.call('GET', S)).text, (await w.call('GET', `${S}/search?q=pet`)).text);

    const h = await w.call<Ingestion>('PATCH', `${S}/${created.id}`, { body: { auth: { type: 'header', headerName: 'X-Api-Key', secret: `${SECRET}-h` } } });
    assert.equal(h.status, 200, h.text);
    assert.deepEqual(h.body.source.auth, { configured: true, hasSecret: true, status: 'unverified', type: 'header', lastError: null, lastVerifiedAt: null });
    const b = await w.call<Ingestion>('PATCH', `${S}/${created.id}`, { body: { auth: { type: 'basic', username: 'ada', secret: `${SECRET}-b` } } });
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(b.body.source.auth, { configured: true, hasSecret: true, status: 'unverified', type: 'basic', lastError: null, lastVerifiedAt: null });
    texts.push(h.text, b.text, (await w.call('GET', `${S}/${created.id}`)).text, (await w.call('POST', `${S}/${created.id}/rescan`)).text);
    for (const t of texts) {
      assert.ok(!t.includes(SECRET), 'a response holds the secret');
      assert.ok(!/"secret"|sealed|"ct"|"iv"/.test(t), 'a response holds credential internals');
    }
    // Nothing under the data dir holds the secret in clear (logs, key file, anything).
    const files = allFiles(srv.dataDir);
    assert.ok(files.length > 0);
    for (const f of files) {
      const data = readFileSync(f);
      for (const s of [SECRET, `${SECRET}-h`, `${SECRET}-b`]) {
        assert.equal(data.includes(Buffer.from(s)), false, `${f} holds a secret`);
        assert.equal(data.includes(Buffer.from(Buffer.from(s).toString('base64'))), false, `${f} holds a secret in base64`);
      }
    }

    const cleared = await w.call<Ingestion>('PATCH', `${S}/${created.id}`, { body: { auth: null } });
    assert.equal(cleared.status, 200);
    assert.deepEqual(cleared.body.source.auth, DEFAULT_AUTH);
    assert.deepEqual((await get(w, created.id)).source.auth, DEFAULT_AUTH);
  });

  test('url of a url source: normalised, conflicting with another source → 409', async () => {
    const w = await space();
    const a = (await create(w, { url: 'http://127.0.0.1:9/a' })).source;
    const b = (await create(w, { url: 'http://127.0.0.1:9/b' })).source;
    const r = await w.call<Ingestion>('PATCH', `${S}/${a.id}`, { body: { url: 'HTTP://127.0.0.1:9/c#frag' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.source.inputUrl, 'http://127.0.0.1:9/c');
    const c = await w.call('PATCH', `${S}/${a.id}`, { body: { url: 'http://127.0.0.1:9/b#x' } });
    assert.equal(c.status, 409);
    assert.deepEqual(c.body, CONFLICT_URL);
    // Its own url again is not a conflict.
    assert.equal((await w.call('PATCH', `${S}/${a.id}`, { body: { url: 'http://127.0.0.1:9/c' } })).status, 200);
    // The old url is free: a new source may use it; the new one is taken.
    assert.equal((await w.call('POST', S, { body: { url: 'http://127.0.0.1:9/a' } })).status, 201);
    assert.equal((await w.call('POST', S, { body: { url: 'http://127.0.0.1:9/c' } })).status, 409);
    const bad = await w.call('PATCH', `${S}/${b.id}`, { body: { url: 'ftp://x/' } });
    assert.deepEqual(bad.body, invalid('url must use http or https, not ftp'));
  });
});

describe('DELETE /api/v1/sources/{id}', () => {
  test('→ {object, id, deleted:true}; then 404 everywhere; search no longer finds its chunks', async () => {
    const w = await space();
    const pets = (await create(w, { content: PETSTORE })).source;
    const swapi = (await create(w, { content: SWAPI })).source;
    assert.ok((await search(w, 'pets')).some((h) => h.sourceId === pets.id));
    const r = await w.call('DELETE', `${S}/${pets.id}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { object: 'source', id: pets.id, deleted: true });
    for (const [m, p] of [['GET', `${S}/${pets.id}`], ['DELETE', `${S}/${pets.id}`], ['PATCH', `${S}/${pets.id}`], ['POST', `${S}/${pets.id}/rescan`]] as const) {
      const x = await w.call(m, p, { body: m === 'PATCH' ? { name: 'x' } : undefined });
      assert.equal(x.status, 404, `${m} ${p}`);
      assert.deepEqual(x.body, NOT_FOUND);
    }
    assert.deepEqual((await w.call<SourceList>('GET', S)).body.sources.map((s: any) => s.id), [swapi.id]);
    const hits = await search(w, 'pets petId createPets', 50);
    assert.equal(hits.filter((h) => h.sourceId === pets.id).length, 0);
    // The other source is still found.
    assert.equal((await search(w, 'starship'))[0]?.sourceId, swapi.id);
  });
});

describe('POST /api/v1/sources/{id}/rescan', () => {
  test('a pasted source → 200 ingestion result, same counts, new document and endpoint ids, search follows', async () => {
    const w = await space();
    const first = await create(w, { content: PETSTORE });
    const id = first.source.id;
    srv.clock.advance(2000);
    const now = iso(srv.clock.now());
    const r = await w.call<Ingestion>('POST', `${S}/${id}/rescan`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.body).sort(), ['counts', 'documents', 'endpoints', 'source']);
    assert.deepEqual(r.body.source, { ...first.source, updatedAt: now });
    assert.deepEqual(r.body.counts, first.counts);
    assert.deepEqual(r.body.documents.map((d: any) => [d.kind, d.title]), first.documents.map((d: any) => [d.kind, d.title]));
    assert.deepEqual(r.body.endpoints.map((e: any) => [e.method, e.path]), first.endpoints.map((e: any) => [e.method, e.path]));
    const oldIds = new Set([...first.documents, ...first.endpoints].map((x: any) => x.id));
    for (const x of [...r.body.documents, ...r.body.endpoints]) assert.ok(!oldIds.has(x.id), 'an id survived the rescan');
    assert.deepEqual(await get(w, id), r.body);
    // Search returns the new documents only.
    const docIds = new Set(r.body.documents.map((d: any) => d.id));
    const hits = await search(w, 'pets', 50);
    assert.ok(hits.length > 0);
    for (const h of hits) assert.ok(docIds.has(h.documentId), 'a search hit points at a replaced document');
  });

  test('a failed pasted source stays failed on rescan, with the same error', async () => {
    const w = await space();
    const first = await create(w, { content: '{"a": [1, 2,, 3]}' });
    assert.equal(first.source.status, 'failed');
    const r = await w.call<Ingestion>('POST', `${S}/${first.source.id}/rescan`);
    assert.equal(r.status, 200);
    assert.equal(r.body.source.status, 'failed');
    assert.equal(r.body.source.error, first.source.error);
    assert.deepEqual(r.body.counts, EMPTY_COUNTS);
  });

  test('rescan of a url source re-fetches (and fails again for a refused address)', async () => {
    const w = await space();
    const first = await create(w, { url: 'http://[::1]:9/spec.yaml' });
    assert.equal(first.source.status, 'failed');
    const r = await w.call<Ingestion>('POST', `${S}/${first.source.id}/rescan`);
    assert.equal(r.status, 200);
    assert.equal(r.body.source.status, 'failed');
    assert.equal(r.body.source.error, 'the host of http://[::1]:9/spec.yaml cannot be reached from this server');
  });
});

describe('GET /api/v1/sources/search', () => {
  test('returns the relevant chunk first from two ingested corpus documents', async () => {
    const w = await space();
    const pets = await create(w, { content: PETSTORE });
    const swapi = await create(w, { content: SWAPI });
    const petHits = await search(w, 'pet');
    assert.ok(petHits.length > 0);
    assert.equal(petHits[0].sourceId, pets.source.id);
    assert.ok(pets.documents.some((d: any) => d.id === petHits[0].documentId));
    assert.match(petHits[0].text, /pet/i);
    for (let i = 1; i < petHits.length; i++) assert.ok(petHits[i - 1].score >= petHits[i].score, 'scores are descending');

    const starHits = await search(w, 'starships');
    assert.ok(starHits.length > 0);
    assert.equal(starHits[0].sourceId, swapi.source.id);
    assert.ok(swapi.documents.some((d: any) => d.id === starHits[0].documentId && d.title === starHits[0].title));
    assert.match(starHits[0].text, /starship/i);

    const pet = await search(w, 'list all pets', 3);
    assert.equal(pet[0].sourceId, pets.source.id);
    assert.deepEqual(await search(w, 'zzyzxnonexistentterm'), []);
  });

  test('limit: default 10, 1..50; q missing/empty/too long and limit out of range → 400', async () => {
    const w = await space();
    const sections = Array.from({ length: 60 }, (_, i) => `## Widget ${i}\n\nThe widget number ${i} is configured here.`).join('\n\n');
    const doc = await create(w, { content: `# Widgets\n\n${sections}` });
    assert.ok(doc.counts.chunks >= 60, `${doc.counts.chunks} chunks`);
    assert.equal((await search(w, 'widget')).length, 10);
    assert.equal((await search(w, 'widget', 1)).length, 1);
    assert.equal((await search(w, 'widget', 50)).length, 50);
    // The section that names the number is first.
    assert.equal((await search(w, 'widget 42', 5))[0].title, 'Widget 42');
    const cases: Array<[string, string]> = [
      ['?limit=5', 'q is required'],
      ['?q=', 'q must be 1 to 500 characters'],
      [`?q=${'a'.repeat(501)}`, 'q must be 1 to 500 characters'],
      ['?q=pet&limit=0', 'limit must be an integer from 1 to 50'],
      ['?q=pet&limit=51', 'limit must be an integer from 1 to 50'],
      ['?q=pet&limit=abc', 'limit must be an integer from 1 to 50'],
    ];
    // No query string at all: the missing parameter is named as one all the same.
    const bare = await w.call('GET', `${S}/search`);
    assert.equal(bare.status, 400);
    assert.deepEqual(bare.body, invalidQuery('q is required'));
    for (const [q, detail] of cases) {
      const r = await w.call('GET', `${S}/search${q}`);
      assert.equal(r.status, 400, q);
      assert.deepEqual(r.body, invalidQuery(detail), q);
    }
  });
});

describe('workspace isolation', () => {
  test('another workspace never sees the sources, documents or search hits', async () => {
    const w = await space();
    const other = await space();
    const pets = (await create(w, { content: PETSTORE })).source;
    assert.ok((await search(w, 'pet')).length > 0);
    assert.deepEqual((await other.call('GET', S)).body, { object: 'list', hasMore: false, nextCursor: null, sources: [] });
    assert.deepEqual(await search(other, 'pet'), []);
    assert.deepEqual((await other.call('GET', `${S}/${pets.id}`)).body, NOT_FOUND);
    assert.deepEqual((await other.call<SourceList>('GET', `${S}?type=openapi`)).body.sources, []);
    // The other workspace's own data does not leak back either.
    const swapi = (await create(other, { content: SWAPI })).source;
    assert.deepEqual((await search(w, 'starships')).filter((h) => h.sourceId === swapi.id), []);
    assert.deepEqual((await w.call<SourceList>('GET', S)).body.sources.map((s: any) => s.id), [pets.id]);
    // A cursor of one workspace's list is not valid in another's.
    await create(w, { content: '# Two' });
    const page = await w.call<Page>('GET', `${S}?limit=1`);
    assert.equal(page.body.hasMore, true);
    const foreign = await other.call('GET', `${S}?limit=1&cursor=${encodeURIComponent(page.body.nextCursor!)}`);
    assert.equal(foreign.status, 400);
  });
});

test('POST /sources/{id}/rescan with an unknown body property → 400; with no body or {} → 200', async () => {
  const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000' } });
  try {
    const created = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { content: '# Guide\n\nHello.' } });
    const id = created.body.source.id;
    const bad = await srv.call('POST', `/api/v1/sources/${id}/rescan`, { body: { x: 1 } });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { code: 'invalid_request', error: 'Request body is invalid: x is not an allowed property.' });
    assert.equal((await srv.call('POST', `/api/v1/sources/${id}/rescan`)).status, 200);
    assert.equal((await srv.call('POST', `/api/v1/sources/${id}/rescan`, { body: {} })).status, 200);
  } finally { await srv.close(); }
});
