/**
 * The keys page of the settings area over HTTP (docs/web.md#keys-page): create with scopes and
 * an expiry (the secret shown once and working on the API), validation (422), escaping, revoke
 * with a confirm step and the API refusing the key at once, workspace isolation (404), and the
 * security headers on every answer of the settings area (docs/security.md#headers).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebClient, csrfOf, shownKey, withServer, owner, userOf, assertSecurityHeaders, keysOf, type WebPage } from './helpers/web.js';

/** Creates a key on the keys page; returns the answer, or for a 303 the page it leads to (which shows the secret). */
async function createKey(c: WebClient, fields: Record<string, string | string[]>): Promise<WebPage> {
  const r = await c.submit('/settings/keys', fields);
  if (r.status !== 303) return r;
  assert.match(r.location!, /^\/settings\/keys\/[^/]+\/created$/);
  return c.get(r.location!);
}

test('keys page: create with scopes and an expiry, the secret shown once and working on the API, validation 422, escaping', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const page = await c.get('/settings/keys');
    for (const sc of ['*', 'issues:read', 'conversations:write', 'webhooks:write']) assert.ok(page.text.includes(`name="scopes" value="${sc}"`), sc);
    const evil = '<img src=x onerror=alert(1)>';
    const made = await createKey(c, { name: evil, scopes: ['issues:read', 'conversations:write'], expiresAt: '2030-01-31' });
    assert.equal(made.status, 200);
    assertSecurityHeaders(made, 'new key');
    assert.equal(made.headers.get('cache-control'), 'no-store');
    const secret = shownKey(made.text);
    srv.watch(secret);
    assert.ok(!made.text.includes(evil), 'the name is escaped');
    assert.ok(made.text.includes('&lt;img src=x onerror=alert(1)&gt;'));
    assert.match(made.text, /data-copy="secret" hidden/);
    const rec = keysOf(srv).find((k) => k.name === evil)!;
    assert.deepEqual(rec.scopes, ['issues:read', 'conversations:write']);
    assert.equal(rec.expiresAt, '2030-01-31T00:00:00.000Z');
    // The key works on the API, within its scopes.
    assert.equal((await srv.call('GET', '/api/v1/issues', { key: secret })).status, 200);
    assert.equal((await srv.call('POST', '/api/v1/conversations', { key: secret, body: { subject: 'Hi', customer: { email: 'a@example.com' } } })).status, 201);
    assert.equal((await srv.call('GET', '/api/v1/sources', { key: secret })).status, 403);
    // The list shows the prefix, never the secret; the name escaped.
    const list = await c.get('/settings/keys');
    assert.ok(!list.text.includes(secret));
    assert.ok(list.text.includes(`${secret.slice(0, 12)}…`));
    assert.ok(!list.text.includes(evil));
    assert.match(list.text, /2030-01-31 00:00 UTC/);
    // Validation: 422 with the problem and the form filled in again.
    const bad: Array<[Record<string, string | string[]>, RegExp]> = [
      [{ name: '', scopes: '*' }, /Give the key a name/],
      [{ name: 'x'.repeat(201), scopes: '*' }, /at most 200 characters/],
      [{ name: 'n' }, /at least one scope/],
      [{ name: 'n', scopes: ['*', 'issues:read'] }, /either “all scopes” or single scopes/],
      [{ name: 'n', scopes: 'admin:all' }, /no scope named “admin:all”/],
      [{ name: 'n', scopes: '*', expiresAt: '2026-06-29' }, /must be in the future/],
      [{ name: 'n', scopes: '*', expiresAt: '2027-02-30' }, /must be a date such as/],
      [{ name: 'n', scopes: '*', expiresAt: 'tomorrow' }, /must be a date such as/],
    ];
    const count = keysOf(srv).length;
    for (const [fields, why] of bad) {
      const r = await createKey(c, fields);
      assert.equal(r.status, 422, JSON.stringify(fields));
      assert.match(r.text, why);
    }
    const kept = await createKey(c, { name: 'kept name', scopes: 'issues:read', expiresAt: '2020-01-01' });
    assert.match(kept.text, /value="kept name"/);
    assert.match(kept.text, /value="issues:read" checked/);
    assert.equal(keysOf(srv).length, count, 'no key made by a refused form');
    const all = await createKey(c, { name: 'everything', scopes: '*' });
    assert.equal(all.status, 200);
    srv.watch(shownKey(all.text));
    const events = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.event === 'key.created');
    assert.equal(events.length, 2);
    assert.equal(events[0].prefix, secret.slice(0, 12));
  });
});

test('revoke: a confirm step, then the API refuses the key (401) within 1 s; another workspace\'s keys are never listed nor revocable (404)', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const made = await createKey(c, { name: 'to revoke', scopes: '*' });
    const secret = shownKey(made.text);
    srv.watch(secret);
    const k = keysOf(srv).find((x) => x.name === 'to revoke')!;
    assert.equal((await srv.call('GET', '/api/v1/issues', { key: secret })).status, 200);
    const confirm = await c.get(`/settings/keys/${k.id}/revoke`);
    assert.equal(confirm.status, 200);
    assert.match(confirm.text, /Revoke this key\?/);
    assert.equal(srv.store.key(k.id)!.revokedAt, null, 'the confirm page changes nothing');
    const t0 = performance.now();
    const done = await c.post(`/settings/keys/${k.id}/revoke`, { csrf: csrfOf(confirm.text) });
    assert.equal(done.status, 303);
    assert.equal(done.location, `/settings/keys?revoked=${k.id}`);
    const refused = await srv.call('GET', '/api/v1/issues', { key: secret });
    const elapsed = performance.now() - t0;
    assert.equal(refused.status, 401);
    assert.ok(elapsed < 1000, `refused ${elapsed} ms after the revoke was asked`);
    const list = await c.get(done.location!);
    assert.match(list.text, /is revoked: it no longer authenticates/);
    assert.match(list.text, /class="revoked"/);
    assert.equal((await c.get(`/settings/keys/${k.id}/revoke`)).location, '/settings/keys', 'already revoked');

    // Another workspace with its own user and key.
    const other = await srv.newWorkspace('Other');
    const theirs = keysOf(srv, other.workspaceId)[0];
    const b = await userOf(srv, other.workspaceId, 'b@example.com');
    const bPage = await b.get('/settings/keys');
    assert.ok(bPage.text.includes(theirs.prefix));
    assert.ok(!bPage.text.includes(k.prefix), 'the owner\'s keys are not listed for another workspace');
    const ownerPage = await c.get('/settings/keys');
    assert.ok(!ownerPage.text.includes(theirs.prefix), 'nor theirs for the owner');
    const foreignGet = await c.get(`/settings/keys/${theirs.id}/revoke`);
    const unknownGet = await c.get('/settings/keys/00000000-0000-7000-8000-000000000000/revoke');
    assert.equal(foreignGet.status, 404);
    assert.equal(unknownGet.status, 404);
    assert.equal(foreignGet.text.replace(/<span class="who">[^<]*/, ''), unknownGet.text.replace(/<span class="who">[^<]*/, ''), 'a foreign key answers like an unknown one');
    const foreignPost = await c.post(`/settings/keys/${theirs.id}/revoke`, { csrf: csrfOf(ownerPage.text) });
    assert.equal(foreignPost.status, 404);
    assert.equal(srv.store.key(theirs.id)!.revokedAt, null);
    assert.equal((await srv.call('GET', '/api/v1/issues', { key: other.key })).status, 200);
    const events = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.event === 'key.revoked');
    assert.equal(events.length, 1);
  });
});

test('security headers on every answer; 404 and 405 pages; the style sheet and the script are files of their own', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const k = keysOf(srv)[0];
    const pages: Array<[string, WebPage, number]> = [
      ['login', await new WebClient(srv).get('/settings/login'), 200],
      ['keys', await c.get('/settings/keys'), 200],
      ['revoke confirm', await c.get(`/settings/keys/${k.id}/revoke`), 200],
      ['404', await c.get('/settings/nothing'), 404],
      ['docs 404', await c.get('/docs/nothing'), 404],
      ['405', await c.request('DELETE', '/settings/keys'), 405],
      ['css', await c.get('/assets/style.css'), 200],
      ['js', await c.get('/assets/copy.js'), 200],
      ['redirect', await c.get('/settings'), 303],
      ['415', await c.request('POST', '/settings/keys', { body: '{}', headers: { 'Content-Type': 'application/json', Origin: c.origin } }), 415],
      ['413', await c.request('POST', '/settings/keys', { body: 'name=' + 'x'.repeat(17 * 1024), headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: c.origin } }), 413],
    ];
    for (const [what, p, status] of pages) {
      assert.equal(p.status, status, what);
      assertSecurityHeaders(p, what);
      assert.ok(p.headers.get('x-request-id'), what);
    }
    assert.equal(pages[5][1].headers.get('allow'), 'GET, HEAD, POST');
    assert.match(pages[6][1].headers.get('content-type')!, /^text\/css/);
    assert.match(pages[7][1].headers.get('content-type')!, /^text\/javascript/);
    assert.match(pages[7][1].text, /data-copy/);
    for (const [what, p] of pages.slice(0, 3)) {
      assert.match(p.headers.get('content-type')!, /^text\/html; charset=utf-8$/, what);
      assert.doesNotMatch(p.text, /<script>|<style>|\sstyle="|\son[a-z]+=/i, `${what}: no inline script or style`);
    }
    // HEAD: headers only.
    const head = await new WebClient(srv).request('HEAD', '/settings/login');
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    // The API is untouched: JSON answers, no page headers.
    const api = await srv.call('GET', '/api/v1/nothing');
    assert.equal(api.status, 404);
    assert.equal(api.headers.get('content-security-policy'), null);
    assert.equal((await srv.call('GET', '/settingsx')).status, 404);
    assert.match((await srv.call('GET', '/settingsx')).headers.get('content-type')!, /application\/json/);
  });
});

test('a form body over 16 KiB sent without Content-Length (chunked) is answered 413 and the connection closed', async () => {
  await withServer(async (srv) => {
    const { request } = await import('node:http');
    const answer = await new Promise<{ status: number; connection: string | undefined; text: string }>((resolve, reject) => {
      const req = request(srv.url + '/settings/login', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Transfer-Encoding': 'chunked' } }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => { text += d; }).on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, text }));
      });
      req.on('error', reject);
      for (let i = 0; i < 20; i++) req.write('x'.repeat(1024));
      req.end();
    });
    assert.equal(answer.status, 413);
    assert.equal(answer.connection, 'close');
    assert.match(answer.text, /larger than 16 KiB/);
  });
});
