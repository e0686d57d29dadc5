/**
 * URL sources through the HTTP API against local HTTP servers (docs/sources.md#fetching,
 * docs/sources.md#website-crawl, docs/sources.md#github, docs/sources.md#rescans; `SOURCE_FETCH_*`
 * and `GITHUB_API_URL` in docs/configuration.md#settings): type detection from a fetched document, website crawl, GitHub docs through a local
 * fake of the API, rescan re-fetching, the processing state and the 409 of a concurrent rescan
 * while a fetch is held open, and — without SOURCE_FETCH_ALLOW_PRIVATE — private addresses
 * refused without any connection, plus the time and size limits.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { startTestServer, type CallOptions, type CallResult, type TestServer } from './helpers/server.js';
import type { Ingestion, SearchAnswer, SourceList } from './helpers/answers.js';

const CORPUS = new URL('./fixtures/corpus/', import.meta.url);
const corpus = (rel: string): string => readFileSync(new URL(rel, CORPUS), 'utf8');
const PETSTORE = corpus('openapi/oai-v2.0-petstore.json');
const LINKS_YAML = corpus('openapi/oai-v3.0-link-example.yaml'); // 6 endpoints

const S = '/api/v1/sources';
const RATE = { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' };
const DEFAULT_AUTH = { configured: false, hasSecret: false, lastError: null, lastVerifiedAt: null, status: 'not_configured', type: null };
const DEFAULT_PUBLIC_DOCS = { enabled: false, published: false, slug: null, url: null };
const EMPTY_COUNTS = { chunks: 0, documents: 0, endpoints: 0 };
const CONFLICT_SCAN = { code: 'conflict', error: 'A record with this identifier already exists: a scan of this source is already running.' };
const DELETED_MEANWHILE = { code: 'conflict', error: 'A record with this identifier already exists: the source was deleted while it was being ingested.' };

// ---------------------------------------------------------------------------------------------
// Local servers

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

interface Local {
  origin: string;
  port: number;
  /** Paths requested, in order. */
  requests: string[];
  /** TCP connections accepted. */
  connections: number;
  handler: Handler;
  close(): Promise<void>;
}

const locals: Local[] = [];

/** An HTTP server on port 0 (`host` `::` also accepts 127.0.0.1 and ::1), handler swappable. */
async function serve(handler: Handler, host = '127.0.0.1'): Promise<Local> {
  const server = http.createServer();
  const local: Local = {
    origin: '', port: 0, requests: [], connections: 0, handler,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
  server.on('connection', () => { local.connections++; });
  server.on('request', (req, res) => { local.requests.push(req.url ?? '/'); local.handler(req, res); });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  local.port = (server.address() as AddressInfo).port;
  local.origin = `http://127.0.0.1:${local.port}`;
  locals.push(local);
  return local;
}

const send = (res: http.ServerResponse, type: string, body: string | Buffer, status = 200): void => {
  res.writeHead(status, { 'content-type': type });
  res.end(body);
};

/** Resolves once `cond` holds (polling), or fails after `ms`. */
async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const page = (title: string, links: string[], extra = ''): string =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1><p>About ${title}. ${extra}</p>` +
  links.map((l) => `<a href="${l}">${l}</a>`).join(' ') + '</body></html>';

// The fake GitHub REST API (same routes as test/crawl.test.ts uses).
const README = '# Acme widgets\n\nThe widgets library: install it with npm.\n';
const DOCS: Record<string, string> = {
  'docs/intro.md': '# Intro\n\nStart here with widgets.\n',
  'docs/guide/setup.md': '# Setup\n\nConfigure the widget token.\n',
};
const json = (res: http.ServerResponse, status: number, v: unknown): void => send(res, 'application/json; charset=utf-8', JSON.stringify(v), status);
const github = await serve((req, res) => {
  const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
  const raw = req.headers.accept === 'application/vnd.github.raw';
  if (path === '/repos/o/r') return json(res, 200, { full_name: 'o/r', description: 'A repo' });
  if (path === '/repos/o/r/readme') return raw ? send(res, 'application/vnd.github.raw', README) : json(res, 200, { path: 'README.md', encoding: 'base64', content: Buffer.from(README).toString('base64') });
  if (path === '/repos/o/r/contents/docs') return json(res, 200, [{ type: 'file', name: 'intro.md', path: 'docs/intro.md' }, { type: 'dir', name: 'guide', path: 'docs/guide' }, { type: 'file', name: 'logo.png', path: 'docs/logo.png' }]);
  if (path === '/repos/o/r/contents/docs/guide') return json(res, 200, [{ type: 'file', name: 'setup.md', path: 'docs/guide/setup.md' }]);
  const m = /^\/repos\/o\/r\/contents\/(.+)$/.exec(path);
  if (m && DOCS[m[1]] !== undefined && raw) return send(res, 'application/vnd.github.raw', DOCS[m[1]]);
  json(res, 404, { message: 'Not Found' });
});

let open: TestServer;
before(async () => {
  open = await startTestServer({ env: { ...RATE, SOURCE_FETCH_ALLOW_PRIVATE: 'true', GITHUB_API_URL: github.origin } });
});
after(async () => {
  await open?.close();
  await Promise.all(locals.map((l) => l.close()));
});

async function space(srv: TestServer) {
  const { key } = await srv.newWorkspace();
  return { call: <B = unknown>(m: string, p: string, o: CallOptions = {}) => srv.call<B>(m, p, { key, ...o }) };
}

async function created(r: CallResult): Promise<any> {
  assert.equal(r.status, 201, r.text.slice(0, 500));
  return r.body;
}

// ---------------------------------------------------------------------------------------------

describe('with SOURCE_FETCH_ALLOW_PRIVATE=true', () => {
  test('a URL serving OpenAPI JSON (application/json), type auto → openapi, inputUrl normalised, name from the title', async () => {
    const site = await serve((_req, res) => send(res, 'application/json', PETSTORE));
    const w = await space(open);
    const now = new Date(open.clock.now()).toISOString();
    const r = await created(await w.call('POST', S, { body: { url: `HTTP://127.0.0.1:${site.port}/v2/swagger.json#top` } }));
    assert.deepEqual(r.source, {
      object: 'source', id: r.source.id, name: 'Swagger Petstore', type: 'openapi', status: 'ready',
      inputUrl: `http://127.0.0.1:${site.port}/v2/swagger.json`, error: null, auth: DEFAULT_AUTH, publicDocs: DEFAULT_PUBLIC_DOCS,
      createdAt: now, updatedAt: now,
    });
    assert.equal(r.counts.endpoints, 3);
    assert.deepEqual(r.endpoints.map((e: any) => `${e.method} ${e.path}`).sort(), ['GET /pets', 'GET /pets/{petId}', 'POST /pets']);
    assert.deepEqual(site.requests, ['/v2/swagger.json'], 'the fragment is not sent; one request');
    // The normalised url is taken.
    const dup = await w.call('POST', S, { body: { url: `http://127.0.0.1:${site.port}/v2/swagger.json` } });
    assert.equal(dup.status, 409);
  });

  test('a URL serving OpenAPI YAML as application/yaml → openapi; with type openapi → openapi; with type url → url', async () => {
    const site = await serve((_req, res) => send(res, 'application/yaml', LINKS_YAML));
    const w = await space(open);
    const a = await created(await w.call('POST', S, { body: { url: `${site.origin}/a.yaml` } }));
    assert.equal(a.source.type, 'openapi');
    assert.equal(a.source.status, 'ready', a.source.error);
    assert.equal(a.counts.endpoints, 6);
    const b = await created(await w.call('POST', S, { body: { url: `${site.origin}/b.yaml`, type: 'openapi' } }));
    assert.equal(b.source.type, 'openapi');
    assert.equal(b.counts.endpoints, 6);
    const c = await created(await w.call('POST', S, { body: { url: `${site.origin}/c.yaml`, type: 'url' } }));
    assert.equal(c.source.type, 'url');
    assert.equal(c.source.status, 'ready');
  });

  test('a URL serving HTML, type auto → url with page documents, name from the <title>', async () => {
    const site = await serve((_req, res) => send(res, 'text/html; charset=utf-8', page('Support handbook', [], 'Refunds take five days.')));
    const w = await space(open);
    const r = await created(await w.call('POST', S, { body: { url: `${site.origin}/handbook` } }));
    assert.equal(r.source.type, 'url');
    assert.equal(r.source.status, 'ready', r.source.error);
    assert.equal(r.source.name, 'Support handbook');
    assert.ok(r.counts.documents > 0 && r.counts.chunks > 0);
    assert.equal(r.counts.endpoints, 0);
    for (const d of r.documents) assert.equal(d.kind, 'page');
    const hits = await w.call<SearchAnswer>('GET', `${S}/search?q=refunds`);
    assert.equal(hits.body.results[0]?.sourceId, r.source.id);
  });

  test('type website crawls the linked same-origin pages → website with a page document per page', async () => {
    const PAGES: Record<string, string[]> = { '/': ['/guide', 'faq'], '/guide': ['/', '/faq#top'], '/faq': ['/guide', 'http://192.0.2.1/elsewhere'] };
    const site = await serve((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (PAGES[path]) return send(res, 'text/html', page(`Page ${path}`, PAGES[path]));
      send(res, 'text/html', '<title>Not found</title>', 404);
    });
    const w = await space(open);
    const r = await created(await w.call('POST', S, { body: { url: `${site.origin}/`, type: 'website' } }));
    assert.equal(r.source.type, 'website');
    assert.equal(r.source.status, 'ready', r.source.error);
    assert.equal(r.source.name, 'Page /');
    assert.equal(r.counts.endpoints, 0);
    assert.deepEqual(r.documents.map((d: any) => d.kind), r.documents.map(() => 'page'));
    for (const t of ['Page /', 'Page /guide', 'Page /faq']) assert.ok(r.documents.some((d: any) => d.title === t), `${t} missing: ${JSON.stringify(r.documents)}`);
    assert.deepEqual([...site.requests].sort(), ['/', '/faq', '/guide'], 'each page fetched once');
  });

  test('rescan re-fetches the url: changed content → changed counts', async () => {
    let body = PETSTORE;
    const site = await serve((_req, res) => send(res, 'application/json', body));
    const w = await space(open);
    const first = await created(await w.call('POST', S, { body: { url: `${site.origin}/spec` } }));
    assert.equal(first.counts.endpoints, 3);
    body = JSON.stringify({ openapi: '3.0.0', info: { title: 'Tiny', version: '1' }, paths: { '/ping': { get: { responses: { 200: { description: 'ok' } } } } } });
    const r = await w.call<Ingestion>('POST', `${S}/${first.source.id}/rescan`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.source.status, 'ready');
    assert.deepEqual(r.body.endpoints.map((e: any) => `${e.method} ${e.path}`), ['GET /ping']);
    assert.equal(r.body.counts.endpoints, 1);
    assert.notDeepEqual(r.body.counts, first.counts);
    assert.equal(r.body.source.name, 'Tiny', 'a derived name follows the document');
    assert.deepEqual(site.requests, ['/spec', '/spec']);
    // The server now fails: the source is failed with the reason; the previous documents stay.
    site.handler = (_req, res) => send(res, 'text/plain', 'down', 503);
    const down = await w.call<Ingestion>('POST', `${S}/${first.source.id}/rescan`);
    assert.equal(down.status, 200);
    assert.equal(down.body.source.status, 'failed');
    assert.equal(down.body.source.error, `${site.origin}/spec answered HTTP 503 Service Unavailable`);
    assert.deepEqual(down.body.counts, r.body.counts);
    // A new url (PATCH) is what the next rescan fetches.
    site.handler = (_req, res) => send(res, 'application/json', PETSTORE);
    const moved = await w.call<Ingestion>('PATCH', `${S}/${first.source.id}`, { body: { url: `${site.origin}/v2#x` } });
    assert.equal(moved.body.source.inputUrl, `${site.origin}/v2`);
    const again = await w.call<Ingestion>('POST', `${S}/${first.source.id}/rescan`);
    assert.equal(again.body.source.status, 'ready');
    assert.equal(again.body.source.error, null);
    assert.equal(again.body.counts.endpoints, 3);
    assert.equal(site.requests.at(-1), '/v2');
  });

  test('while a fetch is held: GET shows processing, a second rescan → 409 exact; the first then completes', async () => {
    let release: () => void = () => {};
    let hold = false;
    const site = await serve((_req, res) => {
      if (!hold) return send(res, 'application/json', PETSTORE);
      new Promise<void>((r) => { release = r; }).then(() => send(res, 'application/json', PETSTORE));
    });
    const w = await space(open);
    const src = (await created(await w.call('POST', S, { body: { url: `${site.origin}/held` } }))).source;
    hold = true;
    const first = w.call<Ingestion>('POST', `${S}/${src.id}/rescan`);
    await until(() => site.requests.length === 2);
    const during = await w.call<Ingestion>('GET', `${S}/${src.id}`);
    assert.equal(during.status, 200);
    assert.equal(during.body.source.status, 'processing');
    assert.equal(during.body.counts.endpoints, 3, 'the previous ingestion stays visible meanwhile');
    assert.deepEqual((await w.call<SourceList>('GET', `${S}?status=processing`)).body.sources.map((s: any) => s.id), [src.id]);
    const second = await w.call('POST', `${S}/${src.id}/rescan`);
    assert.equal(second.status, 409);
    assert.deepEqual(second.body, CONFLICT_SCAN);
    assert.equal(site.requests.length, 2, 'the refused rescan fetched nothing');
    release();
    const done = await first;
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.source.status, 'ready');
    assert.equal((await w.call<Ingestion>('GET', `${S}/${src.id}`)).body.source.status, 'ready');
    // Once finished, a rescan runs again.
    hold = false;
    assert.equal((await w.call('POST', `${S}/${src.id}/rescan`)).status, 200);
  });

  test('two rescans sent at the same moment → exactly one fetch, one 200 and one 409', async () => {
    const releases: Array<() => void> = [];
    let hold = false;
    const site = await serve((_req, res) => {
      if (!hold) return send(res, 'application/json', PETSTORE);
      releases.push(() => send(res, 'application/json', PETSTORE));
    });
    const w = await space(open);
    const src = (await created(await w.call('POST', S, { body: { url: `${site.origin}/race` } }))).source;
    hold = true;
    const settled: number[] = [];
    const calls = [1, 2].map(() => w.call('POST', `${S}/${src.id}/rescan`).then((r) => { settled.push(r.status); return r; }));
    // Wait for the first rescan's fetch, and for the second either to be answered or (wrongly) to fetch too.
    await until(() => site.requests.length >= 2 && (settled.length >= 1 || site.requests.length >= 3));
    await new Promise((r) => setTimeout(r, 100));
    const fetches = site.requests.length - 1;
    hold = false;
    for (const r of releases) r();
    const rs = await Promise.all(calls);
    assert.deepEqual(rs.map((r) => r.status).sort(), [200, 409]);
    assert.deepEqual(rs.find((r) => r.status === 409)?.body, CONFLICT_SCAN);
    assert.equal(fetches, 1);
  });

  test('while a create is still fetching: the source is listed as processing and a rescan → 409', async () => {
    let release: () => void = () => {};
    const site = await serve((_req, res) => { new Promise<void>((r) => { release = r; }).then(() => send(res, 'application/json', PETSTORE)); });
    const w = await space(open);
    const creating = w.call('POST', S, { body: { url: `${site.origin}/slow-create` } });
    await until(() => site.requests.length === 1);
    const list = await w.call<SourceList>('GET', S);
    assert.equal(list.body.sources.length, 1);
    const s = list.body.sources[0];
    assert.equal(s.status, 'processing');
    assert.equal(s.inputUrl, `${site.origin}/slow-create`);
    assert.deepEqual((await w.call<Ingestion>('GET', `${S}/${s.id}`)).body.counts, EMPTY_COUNTS);
    const rescan = await w.call('POST', `${S}/${s.id}/rescan`);
    assert.equal(rescan.status, 409);
    assert.deepEqual(rescan.body, CONFLICT_SCAN);
    const dup = await w.call('POST', S, { body: { url: `${site.origin}/slow-create` } });
    assert.equal(dup.status, 409, 'the url is reserved while it is fetched');
    release();
    const r = await created(await creating);
    assert.equal(r.source.id, s.id);
    assert.equal(r.source.status, 'ready');
  });

  test('deleting a source while its create is fetching: the create answers 409 conflict and nothing comes back to life', async () => {
    let release: () => void = () => {};
    const site = await serve((_req, res) => { new Promise<void>((r) => { release = r; }).then(() => send(res, 'application/json', PETSTORE)); });
    const w = await space(open);
    const creating = w.call('POST', S, { body: { url: `${site.origin}/doomed` } });
    await until(() => site.requests.length === 1);
    const id = (await w.call<SourceList>('GET', S)).body.sources[0].id;
    const del = await w.call('DELETE', `${S}/${id}`);
    assert.deepEqual(del.body, { object: 'source', id, deleted: true });
    release();
    const r = await creating;
    assert.equal(r.status, 409, r.text);
    assert.deepEqual(r.body, DELETED_MEANWHILE);
    assert.equal((await w.call('GET', `${S}/${id}`)).status, 404);
    assert.deepEqual((await w.call<SourceList>('GET', S)).body.sources, []);
    assert.deepEqual((await w.call<SearchAnswer>('GET', `${S}/search?q=pets`)).body.results, []);
    site.handler = (_req, res) => send(res, 'application/json', PETSTORE);
    assert.equal((await w.call('POST', S, { body: { url: `${site.origin}/doomed` } })).status, 201, 'the url is free again');
  });

  test('deleting a source while its rescan is fetching: the rescan answers 409 conflict and the source stays deleted', async () => {
    let release: () => void = () => {};
    let hold = false;
    const site = await serve((_req, res) => {
      if (!hold) return send(res, 'application/json', PETSTORE);
      new Promise<void>((r) => { release = r; }).then(() => send(res, 'application/json', PETSTORE));
    });
    const w = await space(open);
    const src = (await created(await w.call('POST', S, { body: { url: `${site.origin}/doomed-rescan` } }))).source;
    hold = true;
    const rescanning = w.call('POST', `${S}/${src.id}/rescan`);
    await until(() => site.requests.length === 2);
    assert.equal((await w.call('DELETE', `${S}/${src.id}`)).status, 200);
    release();
    const r = await rescanning;
    assert.equal(r.status, 409, r.text);
    assert.deepEqual(r.body, DELETED_MEANWHILE);
    assert.equal((await w.call('GET', `${S}/${src.id}`)).status, 404);
    assert.deepEqual((await w.call<SearchAnswer>('GET', `${S}/search?q=pets`)).body.results, []);
  });

  test('url and content together → the content is ingested and nothing fetched; the url is inputUrl (and reserved); a rescan fetches it', async () => {
    const tiny = JSON.stringify({ openapi: '3.0.0', info: { title: 'Tiny', version: '1' }, paths: { '/ping': { get: { responses: { 200: { description: 'ok' } } } } } });
    const site = await serve((_req, res) => send(res, 'application/json', tiny));
    const w = await space(open);
    const now = new Date(open.clock.now()).toISOString();
    const r = await created(await w.call('POST', S, { body: { url: `${site.origin}/spec#v2`, content: PETSTORE } }));
    assert.deepEqual(r.source, {
      object: 'source', id: r.source.id, name: 'Swagger Petstore', type: 'openapi', status: 'ready', inputUrl: `${site.origin}/spec`,
      error: null, auth: DEFAULT_AUTH, publicDocs: DEFAULT_PUBLIC_DOCS, createdAt: now, updatedAt: now,
    });
    assert.equal(r.counts.endpoints, 3);
    assert.deepEqual([site.requests, site.connections], [[], 0], 'nothing was fetched at create');
    assert.deepEqual((await w.call('GET', `${S}/${r.source.id}`)).body, r);
    // The url is taken like any source's.
    const dup = await w.call('POST', S, { body: { url: `${site.origin}/spec`, content: 'other' } });
    assert.equal(dup.status, 409, dup.text);
    assert.deepEqual(dup.body, { code: 'conflict', error: 'A record with this identifier already exists: a source with this url already exists.' });
    // Content without a title, with a url: named after the URL's host; typed from the content.
    const plain = await created(await w.call('POST', S, { body: { url: `${site.origin}/notes`, content: 'words without a heading' } }));
    assert.deepEqual([plain.source.name, plain.source.type, plain.source.status], [`127.0.0.1:${site.port}`, 'text', 'ready']);
    assert.deepEqual(site.requests, []);
    // The rescan fetches the url: what it serves replaces what the content gave.
    const again = await w.call<Ingestion>('POST', `${S}/${r.source.id}/rescan`);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(site.requests, ['/spec']);
    assert.deepEqual(again.body.endpoints.map((e: any) => `${e.method} ${e.path}`), ['GET /ping']);
    assert.deepEqual([again.body.source.name, again.body.source.status], ['Tiny', 'ready']);
  });

  test('PATCH url on a source made from pasted content → the next rescan fetches the url instead of parsing the content again', async () => {
    const site = await serve((_req, res) => send(res, 'application/json', PETSTORE));
    const w = await space(open);
    const pasted = await created(await w.call('POST', S, { body: { content: '# Notes\n\nPasted text.' } }));
    assert.equal(pasted.source.inputUrl, null);
    const moved = await w.call<Ingestion>('PATCH', `${S}/${pasted.source.id}`, { body: { url: `${site.origin}/v2` } });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.source.inputUrl, `${site.origin}/v2`);
    assert.deepEqual(site.requests, [], 'a PATCH fetches nothing');
    const r = await w.call<Ingestion>('POST', `${S}/${pasted.source.id}/rescan`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(site.requests, ['/v2']);
    assert.deepEqual([r.body.source.name, r.body.source.type, r.body.counts.endpoints], ['Swagger Petstore', 'openapi', 3]);
  });

  test('a fetched page is decoded with its Content-Type charset; a .proto served as text/plain is detected as grpc', async () => {
    const site = await serve((req, res) => {
      if (req.url === '/latin1') return send(res, 'text/html; charset=iso-8859-1', Buffer.from('<html><head><title>Caf\xe9 menu</title></head><body><p>R\xe9sum\xe9 of the day</p></body></html>', 'latin1'));
      send(res, 'text/plain', 'syntax = "proto3";\npackage shop.v1;\nservice Shop { rpc Buy(Order) returns (Order); }\nmessage Order { string id = 1; }\n');
    });
    const w = await space(open);
    const a = await created(await w.call('POST', S, { body: { url: `${site.origin}/latin1` } }));
    assert.equal(a.source.name, 'Café menu');
    assert.deepEqual(a.documents.map((d: any) => [d.kind, d.title]), [['page', 'Café menu']]);
    const hit = (await w.call<SearchAnswer>('GET', `${S}/search?q=menu`)).body.results[0];
    assert.match(hit.text, /Résumé of the day/);
    const b = await created(await w.call('POST', S, { body: { url: `${site.origin}/shop.proto` } }));
    assert.equal(b.source.type, 'grpc');
    assert.deepEqual(b.endpoints.map((e: any) => [e.method, e.path]), [['RPC', '/shop.v1.Shop/Buy']]);
  });

  test('an Idempotency-Key replays the create: one fetch, one source, the same body', async () => {
    const site = await serve((_req, res) => send(res, 'application/json', PETSTORE));
    const w = await space(open);
    const headers = { 'Idempotency-Key': 'create-pets-1' };
    const a = await created(await w.call('POST', S, { body: { url: `${site.origin}/idem` }, headers }));
    const again = await w.call('POST', S, { body: { url: `${site.origin}/idem` }, headers });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, a);
    assert.equal(site.requests.length, 1);
    assert.equal((await w.call<SourceList>('GET', S)).body.sources.length, 1);
  });

  test('type github with https://github.com/o/r (type auto) → github with file documents from the fake API', async () => {
    const w = await space(open);
    const r = await created(await w.call('POST', S, { body: { url: 'https://github.com/o/r' } }));
    assert.equal(r.source.type, 'github');
    assert.equal(r.source.status, 'ready', r.source.error);
    assert.equal(r.source.name, 'o/r');
    assert.equal(r.source.inputUrl, 'https://github.com/o/r');
    assert.deepEqual(r.documents.map((d: any) => [d.kind, d.title]), [['file', 'README.md'], ['file', 'docs/guide/setup.md'], ['file', 'docs/intro.md']]);
    assert.equal(r.counts.endpoints, 0);
    assert.ok(r.counts.chunks >= 3);
    assert.equal((await w.call<SearchAnswer>('GET', `${S}/search?q=token`)).body.results[0]?.title, 'docs/guide/setup.md');
    const explicit = await created(await w.call('POST', S, { body: { url: 'https://github.com/o/r/tree/main', type: 'github' } }));
    assert.equal(explicit.source.type, 'github');
    assert.equal(explicit.source.status, 'ready', explicit.source.error);
    const missing = await created(await w.call('POST', S, { body: { url: 'https://github.com/o/missing' } }));
    assert.equal(missing.source.status, 'failed');
    assert.equal(missing.source.type, 'github');
    assert.match(missing.source.error, /HTTP 404/);
  });

  test('an HTTP error status → failed with it', async () => {
    const site = await serve((_req, res) => send(res, 'text/html', '<title>Nope</title>', 404));
    const w = await space(open);
    const r = await created(await w.call('POST', S, { body: { url: `${site.origin}/gone` } }));
    assert.equal(r.source.status, 'failed');
    assert.equal(r.source.error, `${site.origin}/gone answered HTTP 404 Not Found`);
    assert.deepEqual(r.counts, EMPTY_COUNTS);
  });
});

describe('without SOURCE_FETCH_ALLOW_PRIVATE', () => {
  let closed: TestServer;
  let trap: Local;
  before(async () => {
    closed = await startTestServer({ env: { ...RATE, GITHUB_API_URL: 'http://127.0.0.1:9' } });
    trap = await serve((_req, res) => send(res, 'application/json', PETSTORE), '::');
  });
  after(async () => { await closed?.close(); });

  test('loopback, link-local and alternative IPv4 forms → 201 failed, the host "cannot be reached" (the address not named); no connection is opened', async () => {
    const w = await space(closed);
    const p = trap.port;
    const cases: Array<[string, string, string]> = [
      [`http://127.0.0.1:${p}/`, `http://127.0.0.1:${p}/`, '127.0.0.1'],
      [`http://localhost:${p}/`, `http://localhost:${p}/`, '127.0.0.1'],
      [`http://[::1]:${p}/`, `http://[::1]:${p}/`, '::1'],
      [`http://[::ffff:127.0.0.1]:${p}/`, `http://[::ffff:7f00:1]:${p}/`, '::ffff:7f00:1'],
      ['http://169.254.169.254/latest/meta-data/', 'http://169.254.169.254/latest/meta-data/', '169.254.169.254'],
      ['http://2130706433/', 'http://127.0.0.1/', '127.0.0.1'],
      [`http://2130706433:${p}/decimal`, `http://127.0.0.1:${p}/decimal`, '127.0.0.1'],
      [`http://0x7f000001:${p}/hex`, `http://127.0.0.1:${p}/hex`, '127.0.0.1'],
      [`http://0177.0.0.1:${p}/octal`, `http://127.0.0.1:${p}/octal`, '127.0.0.1'],
      [`http://0.0.0.0:${p}/`, `http://0.0.0.0:${p}/`, '0.0.0.0'],
      [`http://10.0.0.1:${p}/`, `http://10.0.0.1:${p}/`, '10.0.0.1'],
    ];
    for (const [url, normalized] of cases) {
      const r = await created(await w.call('POST', S, { body: { url } }));
      assert.equal(r.source.status, 'failed', url);
      assert.equal(r.source.type, 'url', url);
      assert.equal(r.source.inputUrl, normalized, url);
      assert.equal(r.source.error, `the host of ${normalized} cannot be reached from this server`, url);
      assert.deepEqual(r.counts, EMPTY_COUNTS);
      // Rescan is refused the same way.
      const again = await w.call<Ingestion>('POST', `${S}/${r.source.id}/rescan`);
      assert.equal(again.body.source.status, 'failed');
    }
    assert.equal(trap.connections, 0, 'the local server received a connection');
    assert.deepEqual(trap.requests, []);
  });

  test('type website and type openapi on a private address are refused too, without a connection', async () => {
    const w = await space(closed);
    const a = await created(await w.call('POST', S, { body: { url: `http://127.0.0.1:${trap.port}/site`, type: 'website' } }));
    assert.equal(a.source.status, 'failed');
    assert.equal(a.source.type, 'website');
    assert.equal(a.source.error, `the host of http://127.0.0.1:${trap.port}/site cannot be reached from this server`);
    const b = await created(await w.call('POST', S, { body: { url: `http://[::1]:${trap.port}/spec.json`, type: 'openapi' } }));
    assert.equal(b.source.status, 'failed');
    assert.equal(b.source.type, 'openapi');
    assert.equal(b.source.error, `the host of http://[::1]:${trap.port}/spec.json cannot be reached from this server`);
    assert.equal(trap.connections, 0);
  });

  test('an unknown host fails with the same text as a private one: the error does not tell whether an internal name exists', async () => {
    const w = await space(closed);
    const unknown = await created(await w.call('POST', S, { body: { url: 'http://no-such-host.invalid/spec.json' } }));
    const internal = await created(await w.call('POST', S, { body: { url: `http://localhost:${trap.port}/spec.json` } }));
    assert.equal(unknown.source.error, 'the host of http://no-such-host.invalid/spec.json cannot be reached from this server');
    assert.equal(internal.source.error, `the host of http://localhost:${trap.port}/spec.json cannot be reached from this server`);
    assert.equal(trap.connections, 0);
  });
});

describe('time and size limits', () => {
  let limited: TestServer;
  before(async () => {
    limited = await startTestServer({ env: { ...RATE, SOURCE_FETCH_ALLOW_PRIVATE: 'true', SOURCE_FETCH_TIMEOUT_MS: '300', SOURCE_FETCH_MAX_BYTES: '2048' } });
  });
  after(async () => { await limited?.close(); });

  test('a server that never answers → failed with a timeout error within the limit', async () => {
    const site = await serve(() => { /* never answers */ });
    const w = await space(limited);
    const t0 = Date.now();
    const r = await created(await w.call('POST', S, { body: { url: `${site.origin}/slow` } }));
    const took = Date.now() - t0;
    assert.equal(r.source.status, 'failed');
    assert.equal(r.source.error, `fetching ${site.origin}/slow took longer than 300 ms`);
    assert.ok(took >= 250 && took < 3000, `took ${took} ms`);
  });

  test('a server that sends headers then trickles the body forever → failed with a timeout error', async () => {
    const timers: NodeJS.Timeout[] = [];
    const site = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write('<html><title>drip</title>');
      const t = setInterval(() => res.write(' '), 50);
      timers.push(t);
      res.on('close', () => clearInterval(t));
    });
    const w = await space(limited);
    const t0 = Date.now();
    const r = await created(await w.call('POST', S, { body: { url: `${site.origin}/drip` } }));
    for (const t of timers) clearInterval(t);
    assert.equal(r.source.status, 'failed');
    assert.equal(r.source.error, `fetching ${site.origin}/drip took longer than 300 ms`);
    assert.ok(Date.now() - t0 < 3000);
  });

  test('a document larger than SOURCE_FETCH_MAX_BYTES → failed (with and without Content-Length, and gzip-decoded size)', async () => {
    const big = JSON.stringify({ openapi: '3.0.0', info: { title: 'Big', version: '1', description: 'x'.repeat(5000) }, paths: {} });
    const site = await serve((req, res) => {
      if (req.url === '/length') return send(res, 'application/json', big);
      if (req.url === '/chunked') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(big.slice(0, 1000));
        res.end(big.slice(1000));
        return;
      }
      if (req.url === '/gzip') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        return res.end(zlib.gzipSync(big)); // well under 2048 bytes compressed
      }
      send(res, 'application/json', PETSTORE.slice(0, 0) + JSON.stringify({ openapi: '3.0.0', info: { title: 'Small', version: '1' }, paths: {} }));
    });
    assert.ok(zlib.gzipSync(big).length < 2048);
    const w = await space(limited);
    for (const path of ['/length', '/chunked', '/gzip']) {
      const r = await created(await w.call('POST', S, { body: { url: `${site.origin}${path}` } }));
      assert.equal(r.source.status, 'failed', path);
      assert.equal(r.source.error, `${site.origin}${path} is larger than the limit of 2048 bytes`, path);
      assert.deepEqual(r.counts, EMPTY_COUNTS);
    }
    const small = await created(await w.call('POST', S, { body: { url: `${site.origin}/small` } }));
    assert.equal(small.source.status, 'ready', small.source.error);
    assert.equal(small.source.type, 'openapi');
  });
});
