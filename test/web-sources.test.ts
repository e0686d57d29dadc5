/**
 * The sources page of the settings area over HTTP (docs/web.md#sources-page): the workspace's
 * sources with type, status, counts and last error; publish under a slug (CSRF-checked form),
 * 422 for a malformed slug, 409 with a message for a slug another workspace's source has,
 * unpublish; another workspace's sources never listed and their forms 404; escaping.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebClient, csrfOf, withServer, owner, assertSecurityHeaders } from './helpers/web.js';

const EVIL = '<img src=x onerror=alert(1)>';
const SPEC = (title: string) => JSON.stringify({ openapi: '3.0.3', info: { title, version: '1' }, paths: { '/a': { get: { summary: 'A', responses: { 200: { description: 'OK' } } } } } });

test('sources page: list with counts and errors, publish, 422, 409 across workspaces, unpublish, isolation, CSRF', async () => {
  await withServer(async (srv) => {
    const made = await srv.call<{ source: { id: string } }>('POST', '/api/v1/sources', { body: { content: SPEC('Quokka API'), name: EVIL } });
    assert.equal(made.status, 201, made.text);
    const id = made.body.source.id;
    const broken = await srv.call<{ source: { id: string } }>('POST', '/api/v1/sources', { body: { content: '{"openapi": "3.0.3", "paths": ' } });
    assert.equal(broken.status, 201);
    const other = await srv.space();
    const theirs = await other.call<{ source: { id: string } }>('POST', '/api/v1/sources', { body: { content: SPEC('Their API'), name: 'Theirs' } });
    assert.equal((await other.call('PATCH', `/api/v1/sources/${theirs.body.source.id}`, { body: { publicDocs: { slug: 'taken-slug' } } })).status, 200);

    const c = await owner(srv);
    const list = await c.get('/settings/sources');
    assert.equal(list.status, 200);
    assertSecurityHeaders(list, 'sources page');
    assert.ok(!list.text.includes(EVIL) && list.text.includes('&lt;img src=x onerror=alert(1)&gt;'), 'the name is escaped');
    assert.match(list.text, /<td data-label="Type"><code>openapi<\/code><\/td>/);
    assert.match(list.text, /<td data-label="Documents">2<\/td><td data-label="Endpoints">1<\/td><td data-label="Chunks">2<\/td>/, 'counts: documents, endpoints, chunks');
    assert.match(list.text, /status-revoked">failed/);
    assert.ok(!list.text.includes('Theirs'), 'another workspace\'s source is not listed');
    assert.match(list.text, /<a href="\/settings\/sources" aria-current="page">Sources<\/a>/);

    // Malformed slug → 422, nothing changed.
    const bad = await c.submit('/settings/sources', { slug: '-Bad' }, `/settings/sources/${id}/publish`);
    assert.equal(bad.status, 422);
    assert.match(bad.text, /A slug is 2 to 63 characters/);
    assert.match(bad.text, /value="-Bad"/);
    // Taken by another workspace's source → 409 with the message, nothing changed.
    const taken = await c.submit('/settings/sources', { slug: 'taken-slug' }, `/settings/sources/${id}/publish`);
    assert.equal(taken.status, 409);
    assert.match(taken.text, /The address \/docs\/taken-slug is taken by another source on this server/);
    const still = await srv.call<{ source: { publicDocs: unknown } }>('GET', `/api/v1/sources/${id}`);
    assert.deepEqual(still.body.source.publicDocs, { enabled: false, published: false, slug: null, url: null });
    // Without the CSRF token → 403, nothing changed.
    const forged = await c.post(`/settings/sources/${id}/publish`, { slug: 'quokka' });
    assert.equal(forged.status, 403);
    // Publish → 303, the docs are served, the API shows it.
    const pub = await c.submit('/settings/sources', { slug: 'quokka' }, `/settings/sources/${id}/publish`);
    assert.equal(pub.status, 303);
    assert.equal(pub.location, `/settings/sources?published=${id}`);
    const after = await c.get(pub.location!);
    assert.match(after.text, /is published at <a href="\/docs\/quokka">/);
    assert.equal((await new WebClient(srv).get('/docs/quokka')).status, 200);
    const api = await srv.call<{ source: { publicDocs: unknown } }>('GET', `/api/v1/sources/${id}`);
    assert.deepEqual(api.body.source.publicDocs, { enabled: true, published: true, slug: 'quokka', url: `${srv.publicUrl}/docs/quokka` });
    // The change is an event like the API's PATCH (webhooks get it).
    const events = await srv.call<{ events: Array<{ type: string; data: { object: { id: string; publicDocs: { published: boolean } } } }> }>('GET', '/api/v1/events?type=source.updated');
    assert.equal(events.status, 200, events.text);
    assert.ok(events.body.events.some((e) => e.data.object.id === id && e.data.object.publicDocs.published), 'a source.updated event');
    // Unpublish → 303, 404 on the docs, the slug kept.
    const un = await c.post(`/settings/sources/${id}/unpublish`, { csrf: csrfOf(after.text) });
    assert.equal(un.status, 303);
    assert.match((await c.get(un.location!)).text, /is no longer published/);
    assert.equal((await new WebClient(srv).get('/docs/quokka')).status, 404);
    const kept = await srv.call<{ source: { publicDocs: unknown } }>('GET', `/api/v1/sources/${id}`);
    assert.deepEqual(kept.body.source.publicDocs, { enabled: true, published: false, slug: 'quokka', url: `${srv.publicUrl}/docs/quokka` });
    // Another workspace's source: 404 like an unknown id.
    const csrf = csrfOf(after.text);
    for (const sid of [theirs.body.source.id, 'no-such-id']) {
      assert.equal((await c.post(`/settings/sources/${sid}/publish`, { csrf, slug: 'stolen' })).status, 404);
      assert.equal((await c.post(`/settings/sources/${sid}/unpublish`, { csrf })).status, 404);
    }
    // Without a session: to sign-in.
    assert.equal((await new WebClient(srv).get('/settings/sources')).location, '/settings/login');
  });
});
