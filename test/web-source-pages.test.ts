/**
 * Sources in the browser over HTTP (docs/web.md#sources-in-the-browser): add from pasted text or a URL (type
 * detected as the API does), open a source (status, type, counts, endpoints with summaries, documents, last error),
 * rescan, delete with a confirm step; publishing a failed or empty source refused on the page and by the API alike;
 * another workspace's source is a 404; refusals with their exact messages.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { csrfOf, owner, userOf, withServer, WebClient } from './helpers/web.js';

const spec = (title: string, n = 1) => JSON.stringify({ openapi: '3.0.3', info: { title, version: '1' },
  paths: Object.fromEntries(Array.from({ length: n }, (_, i) => [`/things/${i}`, { get: { summary: `Read thing ${i}`,
    responses: { 200: { description: 'OK' } } } }])) });

/** The message box of a page (the first one). */
const messageOf = (text: string) => /<div class="message (?:error|ok|warn)" role="\w+">([^<]*)<\/div>/.exec(text)?.[1];

async function add(c: WebClient, fields: Record<string, string>) {
  return c.submit('/settings/sources', fields);
}

test('add by paste → 303 to its page; open, rescan, delete with a confirm step', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const made = await add(c, { content: spec('Quokka API', 3), name: '' });
    assert.equal(made.status, 303, made.text.slice(0, 400));
    const id = /^\/settings\/sources\/([^/?]+)\?added=1$/.exec(made.location!)?.[1];
    assert.ok(id, made.location!);
    const page = await c.get(made.location!);
    assert.equal(page.status, 200);
    assert.equal(messageOf(page.text), 'The source is added.');
    assert.match(page.text, /<h1 class="wrap">Quokka API<\/h1>/, 'named from the document');
    assert.match(page.text, /<dt>Status<\/dt><dd><span class="status-active">ready<\/span><\/dd>/);
    assert.match(page.text, /<dt>Type<\/dt><dd><code>openapi<\/code><\/dd>/, 'type detected');
    assert.match(page.text, /<dd>4 documents, 3 endpoints, \d+ chunks<\/dd>/);
    assert.match(page.text, /<td data-label="Method"><code>GET<\/code><\/td><td data-label="Path"><code class="wrap">\/things\/2<\/code><\/td><td data-label="Summary">Read thing 2<\/td>/);
    assert.match(page.text, /<h2 id="endpoints">Endpoints \(3\)<\/h2>/);
    assert.match(page.text, /<h2 id="documents">Documents \(4\)<\/h2>/);
    assert.match(page.text, /<dt>Public docs<\/dt><dd>not published<\/dd>/);
    const api = await srv.call<{ source: { type: string; status: string } }>('GET', `/api/v1/sources/${id}`);
    assert.equal(api.body.source.type, 'openapi');
    // Listed, linked to its page.
    assert.match((await c.get('/settings/sources')).text, new RegExp(`<a href="/settings/sources/${id}">Quokka API</a>`));
    // Rescan → 303 back with a notice; the API sees it.
    const rescan = await c.post(`/settings/sources/${id}/rescan`, { csrf: csrfOf(page.text) });
    assert.equal(rescan.status, 303);
    assert.equal(rescan.location, `/settings/sources/${id}?rescanned=1`);
    assert.equal(messageOf((await c.get(rescan.location!)).text), 'The source is rescanned.');
    const events = await srv.call<{ events: Array<{ type: string }> }>('GET', '/api/v1/events?type=source.updated');
    assert.ok(events.body.events.length >= 1, 'a rescan is an event like the API\'s');
    // Delete: the confirm page changes nothing; the POST deletes.
    const confirm = await c.get(`/settings/sources/${id}/delete`);
    assert.equal(confirm.status, 200);
    assert.match(confirm.text, /<h1>Delete this source\?<\/h1>/);
    assert.equal((await srv.call('GET', `/api/v1/sources/${id}`)).status, 200);
    const del = await c.post(`/settings/sources/${id}/delete`, { csrf: csrfOf(confirm.text) });
    assert.equal(del.status, 303);
    assert.equal(del.location, '/settings/sources?deleted=1');
    assert.equal(messageOf((await c.get(del.location!)).text), 'The source is deleted, with its documents.');
    assert.equal((await srv.call('GET', `/api/v1/sources/${id}`)).status, 404);
    const gone = await c.get(`/settings/sources/${id}`);
    assert.equal(gone.status, 404);
    assert.match(gone.text, /<p>There is no such source in this workspace\.<\/p>/);
    // Without the csrf token: 403, nothing made.
    const count = () => srv.store.workspace(srv.workspaceId)!.db.table('source').size;
    const before = count();
    assert.equal((await c.post('/settings/sources', { content: spec('Forged') })).status, 403);
    assert.equal(count(), before);
  });
});

test('add by URL (type detected), a failed source shows its error; refusals 422/409 with the API\'s reason', async () => {
  const doc = spec('Fetched API', 2);
  // Requests past the first wait while `hold` is set, so a rescan can be caught running.
  let requests = 0;
  let hold: { arrived: () => void; release: Promise<void> } | undefined;
  const origin = http.createServer(async (req, res) => {
    requests++;
    if (hold) { hold.arrived(); await hold.release; }
    res.writeHead(200, { 'Content-Type': 'application/json' }); res.end(doc);
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(origin.address() as AddressInfo).port}/openapi.json`;
  try {
    await withServer(async (srv) => {
      const c = await owner(srv);
      const made = await add(c, { url });
      assert.equal(made.status, 303, made.text.slice(0, 400));
      const page = await c.get(made.location!);
      assert.match(page.text, /<dt>Type<\/dt><dd><code>openapi<\/code><\/dd>/);
      assert.match(page.text, /<dd>3 documents, 2 endpoints, \d+ chunks<\/dd>/);
      assert.ok(page.text.includes(`<dt>URL</dt><dd class="wrap">${url}</dd>`));
      // The same URL again: the API's 409.
      const again = await add(c, { url });
      assert.equal(again.status, 409);
      assert.equal(messageOf(again.text), 'The source is refused: a source with this url already exists.');
      assert.ok(again.text.includes(`value="${url}"`), 'the form is filled in again');
      // A rescan while one runs: 409 with the page and the API's reason.
      let release!: () => void;
      let arrived!: () => void;
      const isHere = new Promise<void>((r) => { arrived = r; });
      hold = { arrived, release: new Promise<void>((r) => { release = r; }) };
      const first = c.post(`${made.location!.replace(/\?.*$/, '')}/rescan`, { csrf: csrfOf(page.text) });
      await isHere;
      const second = await c.post(`${made.location!.replace(/\?.*$/, '')}/rescan`, { csrf: csrfOf(page.text) });
      assert.equal(second.status, 409);
      assert.equal(messageOf(second.text), 'Not rescanned: a scan of this source is already running.');
      hold = undefined;
      release();
      assert.equal((await first).status, 303);
      assert.equal(requests, 2, 'the second rescan fetched nothing');
      // Neither field.
      const empty = await add(c, { url: '', content: '  ' });
      assert.equal(empty.status, 422);
      assert.equal(messageOf(empty.text), 'Give the URL of the document, or paste it.');
      // A URL the API's schema refuses.
      const bad = await add(c, { url: 'not a url' });
      assert.equal(bad.status, 422);
      assert.equal(messageOf(bad.text), 'The source is refused: url must be an absolute http or https URL.');
      // Unparseable content: made, failed, its error on its page.
      const broken = await add(c, { content: '{"openapi": "3.0.3", "paths": ' });
      assert.equal(broken.status, 303);
      const failed = await c.get(broken.location!);
      assert.match(failed.text, /<dt>Status<\/dt><dd><span class="status-revoked">failed<\/span><\/dd>/);
      assert.match(failed.text, /<dt>Last error<\/dt><dd>JSON: Unexpected end of JSON input<\/dd>/);
    }, { SOURCE_FETCH_ALLOW_PRIVATE: 'true' });
  } finally { origin.close(); }
});

test('publishing a failed or empty source is refused: the page 409 with the reason, the API 409 with the same rule', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const ws = srv.store.workspace(srv.workspaceId)!;
    const idOf = (loc: string) => /^\/settings\/sources\/([^/?]+)/.exec(loc)![1];
    const failed = idOf((await add(c, { content: '{"openapi": "3.0.3", "paths": ' })).location!);
    // Ingestion never makes a ready source without documents (it fails instead); one stored so (an older
    // record) is made here by hand, to check the rule that guards it.
    const empty = idOf((await add(c, { content: spec('Empty'), name: 'Empty' })).location!);
    const tx = ws.db.begin();
    tx.put('source_index', empty, { documents: [], endpoints: [], chunks: [] });
    await ws.db.commit(tx);
    assert.equal(ws.db.get('source', empty)!.status, 'ready');
    for (const [id, why] of [[failed, 'This source cannot be published: its status is failed, not ready. Fix it and rescan it first.'],
      [empty, 'This source cannot be published: it has no documents.']] as const) {
      const r = await c.submit('/settings/sources', { slug: `slug-${id.slice(-6)}` }, `/settings/sources/${id}/publish`);
      assert.equal(r.status, 409);
      assert.equal(messageOf(r.text), why);
      assert.deepEqual(ws.db.get('source', id)!.publicDocs, { enabled: false, published: false, slug: null, url: null });
    }
    const api = await srv.call('PATCH', `/api/v1/sources/${failed}`, { body: { publicDocs: { enabled: true, published: true, slug: 'failed-one' } } });
    assert.equal(api.status, 409);
    assert.deepEqual(api.body, { code: 'conflict', error: 'A record with this identifier already exists: publicDocs cannot be published: the source is failed, not ready.' });
    const apiEmpty = await srv.call('PATCH', `/api/v1/sources/${empty}`, { body: { publicDocs: { enabled: true, published: true, slug: 'empty-one' } } });
    assert.equal(apiEmpty.status, 409);
    assert.deepEqual(apiEmpty.body, { code: 'conflict', error: 'A record with this identifier already exists: publicDocs cannot be published: the source has no documents.' });
    // A slug alone (not served) is still taken; a ready source with documents publishes.
    assert.equal((await srv.call('PATCH', `/api/v1/sources/${failed}`, { body: { publicDocs: { slug: 'failed-one' } } })).status, 200);
    const good = idOf((await add(c, { content: spec('Good') })).location!);
    const pub = await c.submit(`/settings/sources/${good}`, { slug: 'good-one' }, `/settings/sources/${good}/publish`);
    assert.equal(pub.status, 303);
    assert.match((await c.get(`/settings/sources/${good}`)).text, /<dt>Public docs<\/dt><dd>published<\/dd>/);
  });
});

test('a source page lists the first 200 endpoints and counts the rest; another workspace\'s source answers 404', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const made = await add(c, { content: spec('Big API', 205) });
    const page = await c.get(made.location!);
    assert.match(page.text, /<p class="hint">The first 200 of 205 endpoints\.<\/p>/);
    assert.equal(page.text.split('<td data-label="Method">').length - 1, 200);
    const other = await srv.newWorkspace('Other');
    const theirs = await userOf(srv, other.workspaceId, 'them@example.com');
    const id = /^\/settings\/sources\/([^/?]+)/.exec(made.location!)![1];
    for (const path of [`/settings/sources/${id}`, `/settings/sources/${id}/delete`]) {
      const r = await theirs.get(path);
      assert.equal(r.status, 404, path);
      assert.match(r.text, /<p>There is no such source in this workspace\.<\/p>/);
    }
    const csrf = csrfOf((await theirs.get('/settings/sources')).text);
    for (const action of ['rescan', 'delete']) assert.equal((await theirs.post(`/settings/sources/${id}/${action}`, { csrf })).status, 404);
    assert.equal((await srv.call('GET', `/api/v1/sources/${id}`)).status, 200, 'nothing changed');
  });
});
