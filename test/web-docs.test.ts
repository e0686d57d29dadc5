/**
 * Public docs over HTTP (docs/web.md#public-docs): a published source served without auth at
 * `/docs/{slug}` (grouped endpoints, anchors, documentation, escaping, security headers), its
 * search over that source's chunks only, the 404 page for unknown, unpublished or disabled
 * sources and for another workspace's unpublished one, slugs unique on the server (409 across
 * workspaces), `publicDocs.url` derived from `PUBLIC_URL`, and the size of a 1,000-endpoint page.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebClient, withServer, assertSecurityHeaders } from './helpers/web.js';
import type { Space, TestServer } from './helpers/server.js';
import { PAGE_SECTIONS } from '../src/web/docsModel.js';

const EVIL = '<img src=x onerror=alert(1)>';

/** An OpenAPI 3 document with `n` operations; tagged ones carry `tags`; `extra` goes into the first summary. */
export function openapiDoc(n: number, o: { tagged?: boolean; title?: string; firstSummary?: string } = {}): string {
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    const group = `res${i % 10}`;
    paths[`/${group}/item${i}`] = {
      get: {
        operationId: `getItem${i}`, summary: i === 0 && o.firstSummary ? o.firstSummary : `Read item ${i} of ${group}`,
        description: `Returns item number ${i}. The quokka endpoint answers with JSON.`,
        ...(o.tagged ? { tags: [i % 2 ? 'Odd things' : 'Even things'] } : {}),
        responses: { 200: { description: 'OK' } },
      },
    };
  }
  return JSON.stringify({ openapi: '3.0.3', info: { title: o.title ?? 'Quokka API', version: '1.0', description: 'The quokka service overview.' }, paths });
}

/** Creates a source from `content` in `w`; returns its id. */
async function source(w: Space, content: string): Promise<string> {
  const r = await w.call<{ source: { id: string; status: string } }>('POST', '/api/v1/sources', { body: { content } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.source.status, 'ready');
  return r.body.source.id;
}

type PatchAnswer = { source: { publicDocs: Record<string, unknown> } };
const patch = (w: Space, id: string, publicDocs: Record<string, unknown>) => w.call<PatchAnswer>('PATCH', `/api/v1/sources/${id}`, { body: { publicDocs } });

async function publish(w: Space, id: string, slug: string): Promise<void> {
  const r = await patch(w, id, { enabled: true, published: true, slug });
  assert.equal(r.status, 200, r.text);
}

const anon = (srv: TestServer) => new WebClient(srv);

test('public docs: published page without auth, grouped by tag with badges and anchors, escaped; url derived; unpublished/disabled/unknown 404', async () => {
  await withServer(async (srv) => {
    const w = await srv.space();
    const id = await source(w, openapiDoc(4, { tagged: true, firstSummary: EVIL }));
    const set = await patch(w, id, { enabled: true, slug: 'quokka-docs' });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body.source.publicDocs, { enabled: true, published: false, slug: 'quokka-docs', url: `${srv.url}/docs/quokka-docs` });
    // Not yet published: 404, the same page as an unknown slug.
    const c = anon(srv);
    const before = await c.get('/docs/quokka-docs');
    assert.equal(before.status, 404);
    const unknown = await c.get('/docs/no-such-docs');
    assert.equal(unknown.status, 404);
    assert.equal(before.text, unknown.text);
    assertSecurityHeaders(unknown, '404');
    await publish(w, id, 'quokka-docs');
    const p = await c.get('/docs/quokka-docs');
    assert.equal(p.status, 200, p.text);
    assertSecurityHeaders(p, 'docs page');
    assert.equal(p.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.deepEqual(p.setCookies, [], 'no cookie on a public page');
    assert.ok(!/<script(?! src="\/assets\/copy\.js" defer><\/script>)|style=/.test(p.text), 'no inline script or style');
    assert.match(p.text, /<h1>Quokka API<\/h1>/);
    assert.match(p.text, /The quokka service overview\./);
    // Grouped by tag, with method badges and anchors.
    assert.match(p.text, /<h3 id="group-even-things">Even things<\/h3>/);
    assert.match(p.text, /<h3 id="group-odd-things">Odd things<\/h3>/);
    assert.match(p.text, /<section class="op" id="get-res1-item1"/);
    assert.match(p.text, /<span class="method m-get">GET<\/span> <code class="path">\/res1\/item1<\/code>/);
    assert.match(p.text, /href="#get-res1-item1"/);
    assert.match(p.text, /Returns item number 1\./);
    // The source is untrusted: its summary renders as text.
    assert.ok(!p.text.includes(EVIL));
    assert.ok(p.text.includes('&lt;img src=x onerror=alert(1)&gt;'));
    // HEAD like GET without a body; POST 405.
    const head = await c.request('HEAD', '/docs/quokka-docs');
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal((await c.request('POST', '/docs/quokka-docs')).status, 405);
    // Disabled → 404; enabled again → 200; slug removed → url null and 404.
    assert.equal((await patch(w, id, { enabled: false })).status, 200);
    assert.equal((await c.get('/docs/quokka-docs')).status, 404);
    assert.equal((await patch(w, id, { enabled: true })).status, 200);
    assert.equal((await c.get('/docs/quokka-docs')).status, 200);
    const cleared = await patch(w, id, { slug: null });
    assert.deepEqual(cleared.body.source.publicDocs, { enabled: true, published: true, slug: null, url: null });
    assert.equal((await c.get('/docs/quokka-docs')).status, 404);
    // Malformed slugs are simply not found.
    for (const path of ['/docs/A', '/docs/-x', '/docs/a%2e%2e', '/docs/x%2Fy']) assert.equal((await c.get(path)).status, 404, path);
  });
});

test('public docs: grouped by path without tags; a source without endpoints shows its documents', async () => {
  await withServer(async (srv) => {
    const w = await srv.space();
    const id = await source(w, openapiDoc(3));
    await publish(w, id, 'by-path');
    const p = await anon(srv).get('/docs/by-path');
    assert.match(p.text, /<h3 id="group-res0"><code>\/res0<\/code><\/h3>/);
    assert.match(p.text, /<h3 id="group-res2"><code>\/res2<\/code><\/h3>/);
    const md = await source(w, '# Guide\n\nHow to feed the <b>quokka</b>.\n\n## Setup\n\nInstall the quokka feeder.\n');
    await publish(w, md, 'guide');
    const g = await anon(srv).get('/docs/guide');
    assert.equal(g.status, 200);
    assert.match(g.text, /Other documents/);
    assert.ok(g.text.includes('&lt;b&gt;quokka&lt;/b&gt;'));
  });
});

test('public docs search: BM25 over this source only, results link to anchors, escaped, empty query', async () => {
  await withServer(async (srv) => {
    const w = await srv.space();
    const id = await source(w, openapiDoc(5, { firstSummary: `${EVIL} wombat` }));
    await publish(w, id, 'searchable');
    // Another published source with the same words must never show in this one's results.
    const other = await source(w, openapiDoc(5, { title: 'Other API', firstSummary: 'wombat elsewhere' }));
    await publish(w, other, 'other-docs');
    const c = anon(srv);
    const r = await c.get('/docs/searchable/search?q=wombat');
    assert.equal(r.status, 200, r.text);
    assertSecurityHeaders(r, 'search');
    assert.match(r.text, /<ol class="results"><li><a href="\/docs\/searchable#get-res0-item0">/);
    const results = r.text.slice(r.text.indexOf('<ol class="results">'));
    assert.equal((results.match(/<li>/g) ?? []).length, 1, 'one hit: the other source is not searched');
    assert.ok(!r.text.includes(EVIL));
    assert.ok(r.text.includes('&lt;img src=x onerror=alert(1)&gt; wombat'), 'the hit is shown escaped');
    assert.match(r.text, /value="wombat"/);
    const item3 = await c.get('/docs/searchable/search?q=item+number+3');
    assert.match(item3.text, /href="\/docs\/searchable#get-res3-item3"/);
    const none = await c.get('/docs/searchable/search?q=zebra');
    assert.match(none.text, /Nothing in these docs matches <strong>zebra<\/strong>/);
    const empty = await c.get('/docs/searchable/search?q=');
    assert.equal(empty.status, 200);
    assert.match(empty.text, /Type words to look for/);
    const evilQ = await c.get(`/docs/searchable/search?q=${encodeURIComponent(EVIL)}`);
    assert.ok(!evilQ.text.includes(EVIL), 'the query is escaped');
    assert.equal((await c.get('/docs/unknown-slug/search?q=wombat')).status, 404);
  });
});

test('slugs are unique on the server: 409 across workspaces, exact body; another workspace\'s unpublished source never visible', async () => {
  await withServer(async (srv) => {
    const a = await srv.space();
    const b = await srv.space();
    const mine = await source(a, openapiDoc(2));
    const theirs = await source(b, openapiDoc(2, { title: 'Secret API', firstSummary: 'internal only' }));
    assert.equal((await patch(b, theirs, { slug: 'shared-name' })).status, 200);
    const taken = await patch(a, mine, { enabled: true, published: true, slug: 'shared-name' });
    assert.equal(taken.status, 409);
    assert.deepEqual(taken.body, { code: 'conflict', error: 'A record with this identifier already exists: publicDocs.slug is taken by another source on this server.' });
    // Nothing changed on the refused source.
    const g = await a.call<{ source: { publicDocs: unknown } }>('GET', `/api/v1/sources/${mine}`);
    assert.deepEqual(g.body.source.publicDocs, { enabled: false, published: false, slug: null, url: null });
    // The other workspace's source is unpublished: its slug shows nothing, its search neither.
    const c = anon(srv);
    const p = await c.get('/docs/shared-name');
    assert.equal(p.status, 404);
    assert.ok(!p.text.includes('Secret API') && !p.text.includes('internal only'));
    assert.equal((await c.get('/docs/shared-name/search?q=internal')).status, 404);
    // Its own slug again is no conflict; once released, the slug can be taken.
    assert.equal((await patch(b, theirs, { slug: 'shared-name' })).status, 200);
    assert.equal((await patch(b, theirs, { slug: null })).status, 200);
    assert.equal((await patch(a, mine, { slug: 'shared-name' })).status, 200);
    // A deleted source frees its slug.
    assert.equal((await a.call('DELETE', `/api/v1/sources/${mine}`)).status, 200);
    assert.equal((await patch(b, theirs, { slug: 'shared-name' })).status, 200);
    // The url is not taken from the client.
    const url = await patch(b, theirs, { url: 'https://evil.example/' });
    assert.equal(url.status, 400);
  }, { PUBLIC_URL: 'https://docs.example.com' });
});

test('publicDocs.url is PUBLIC_URL + /docs/{slug}', async () => {
  await withServer(async (srv) => {
    const w = await srv.space();
    const id = await source(w, openapiDoc(1));
    const r = await patch(w, id, { slug: 'pub-url' });
    assert.deepEqual(r.body.source.publicDocs, { enabled: false, published: false, slug: 'pub-url', url: 'https://docs.example.com/docs/pub-url' });
  }, { PUBLIC_URL: 'https://docs.example.com' });
});

test('a 1,000-endpoint source: every page under 1 MB, every endpoint anchored on one of them', async () => {
  await withServer(async (srv) => {
    const w = await srv.space();
    const id = await source(w, openapiDoc(1000, { tagged: true }));
    await publish(w, id, 'big-api');
    let anchored = 0;
    for (let page = 1; page <= Math.ceil(1000 / PAGE_SECTIONS); page++) {
      const p = await anon(srv).get(page === 1 ? '/docs/big-api' : `/docs/big-api?page=${page}`);
      assert.equal(p.status, 200);
      const bytes = Buffer.byteLength(p.text);
      assert.ok(bytes < 1024 * 1024, `page ${page}: ${bytes} bytes`);
      anchored += (p.text.match(/<section class="op" id="get-res/g) ?? []).length;
    }
    assert.equal(anchored, 1000);
  });
});

test('WEB_UI=false: /docs answers the API 404', async () => {
  await withServer(async (srv) => {
    const w = await srv.space();
    const id = await source(w, openapiDoc(1));
    await publish(w, id, 'off-docs');
    const r = await srv.call('GET', '/docs/off-docs', { key: null });
    assert.equal(r.status, 404);
    assert.match(r.headers.get('content-type') ?? '', /json/);
  }, { WEB_UI: 'false' });
});
