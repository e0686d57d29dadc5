/**
 * Post/redirect/get for the forms that make a secret (docs/web.md#shown-once): the create form answers 303 to a
 * page that shows the secret once, to the session that made it; a reload, the back button or another session sees
 * "already shown", never a second key or endpoint; after 10 minutes it is gone; another workspace's id is a 404.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csrfOf, keysOf, owner, shownKey, userOf, withServer, OWNER, PASSWORD, WebClient } from './helpers/web.js';
import { startReceiver } from './helpers/receiver.js';

const ALREADY = 'This secret was already shown, or more than 10 minutes have passed: it cannot be shown again. '
  + 'If it was not copied, make a new one.';

test('new key: POST → 303, the page shows it once, a reload shows "already shown" and the list holds one key', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const before = keysOf(srv).length;
    const posted = await c.submit('/settings/keys', { name: 'prg key', scopes: '*' });
    assert.equal(posted.status, 303);
    const id = keysOf(srv).find((k) => k.name === 'prg key')!.id;
    assert.equal(posted.location, `/settings/keys/${id}/created`);
    assert.equal(posted.text, '');
    // Another session of the same user does not get it, and does not use it up.
    const second = new WebClient(srv);
    await second.signIn(OWNER, PASSWORD);
    const elsewhere = await second.get(posted.location!);
    assert.equal(elsewhere.status, 200);
    assert.ok(elsewhere.text.includes(ALREADY));
    const shown = await c.get(posted.location!);
    assert.equal(shown.status, 200);
    assert.equal(shown.headers.get('cache-control'), 'no-store');
    const key = shownKey(shown.text);
    srv.watch(key);
    assert.equal((await srv.call('GET', '/api/v1/issues', { key })).status, 200);
    // Reload: no secret, no second key.
    const reload = await c.get(posted.location!);
    assert.equal(reload.status, 200);
    assert.ok(reload.text.includes(ALREADY), reload.text.slice(0, 300));
    assert.doesNotMatch(reload.text, /svck_[0-9A-Za-z]{43}/);
    assert.equal(keysOf(srv).length, before + 1);
    const list = await c.get('/settings/keys');
    assert.equal(list.text.split('prg key').length - 1, 1, 'one key of that name in the list');
    // Another workspace's key, or none: 404.
    const other = await srv.newWorkspace('Other');
    const theirs = await userOf(srv, other.workspaceId, 'other@example.com');
    const made = await theirs.submit('/settings/keys', { name: 'theirs', scopes: '*' });
    const theirId = keysOf(srv, other.workspaceId).find((k) => k.name === 'theirs')!.id;
    const stolen = await c.get(`/settings/keys/${theirId}/created`);
    assert.equal(stolen.status, 404);
    assert.match(stolen.text, /There is no such key in this workspace\./);
    srv.watch(shownKey((await theirs.get(made.location!)).text));
  });
});

test('new key: not viewed within 10 minutes, the secret is gone', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const posted = await c.submit('/settings/keys', { name: 'late', scopes: '*' });
    srv.clock.advance(10 * 60_000);
    const late = await c.get(posted.location!);
    assert.equal(late.status, 200);
    assert.ok(late.text.includes(ALREADY));
    assert.doesNotMatch(late.text, /svck_[0-9A-Za-z]{43}/);
  });
});

test('new webhook endpoint: POST → 303, its secret shown once, a reload shows "already shown" and one endpoint', async () => {
  const rx = await startReceiver();
  try {
    await withServer(async (srv) => {
      const c = await owner(srv);
      const posted = await c.submit('/settings/webhooks', { url: `${rx.url}/prg`, events: '*' });
      assert.equal(posted.status, 303, posted.text.slice(0, 300));
      const ws = srv.store.workspace(srv.workspaceId)!;
      const endpoints = () => [...ws.db.table('webhook_endpoint').values()];
      assert.equal(endpoints().length, 1);
      assert.equal(posted.location, `/settings/webhooks/${endpoints()[0].id}/created`);
      const shown = await c.get(posted.location!);
      const secret = /id="secret" value="(whsec_[^"]+)"/.exec(shown.text)?.[1];
      assert.ok(secret);
      srv.watch(secret);
      const reload = await c.get(posted.location!);
      assert.ok(reload.text.includes(ALREADY));
      assert.doesNotMatch(reload.text, /whsec_/);
      assert.equal(endpoints().length, 1, 'a reload makes no second endpoint');
      const csrf = csrfOf(reload.text);
      const none = await c.get('/settings/webhooks/no-such-id/created');
      assert.equal(none.status, 404);
      assert.match(none.text, /<p>There is no such webhook endpoint in this workspace\.<\/p>/);
      assert.equal((await c.post('/settings/webhooks/x/created', { csrf })).status, 405);
    }, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  } finally { await rx.close(); }
});
