/**
 * The webhooks page of the settings area over HTTP (docs/web.md#webhooks-page): create (the
 * signing secret shown once, and it signs the deliveries), validation (422 with the API's URL
 * rules), last deliveries listed, disable/enable, delete, another workspace's endpoint 404,
 * CSRF, escaping.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csrfOf, withServer, owner, assertSecurityHeaders } from './helpers/web.js';
import { startReceiver, verifyWebhook } from './helpers/receiver.js';

const EVIL = '<img src=x onerror=alert(1)>';

test('webhooks page: create with the secret shown once, deliveries listed, 422, disable/enable, delete, isolation', async () => {
  const rx = await startReceiver();
  try {
    await withServer(async (srv) => {
      const c = await owner(srv);
      const empty = await c.get('/settings/webhooks');
      assert.equal(empty.status, 200);
      assertSecurityHeaders(empty, 'webhooks page');
      assert.match(empty.text, /no webhook endpoints yet/);
      for (const t of ['*', 'conversation.created', 'source.deleted']) assert.ok(empty.text.includes(`name="events" value="${t}"`), t);
      // Refusals: 422 with the form filled in again.
      const noEvent = await c.submit('/settings/webhooks', { url: rx.url, description: EVIL });
      assert.equal(noEvent.status, 422);
      assert.match(noEvent.text, /Choose at least one event/);
      assert.ok(!noEvent.text.includes(EVIL) && noEvent.text.includes('&lt;img src=x onerror=alert(1)&gt;'));
      const badUrl = await c.submit('/settings/webhooks', { url: 'ftp://example.com/x', events: '*' });
      assert.equal(badUrl.status, 422);
      assert.match(badUrl.text, /The URL is refused/);
      assert.equal((await c.post('/settings/webhooks', { url: rx.url, events: '*' })).status, 403, 'no csrf token');
      assert.equal((await srv.call<{ webhookEndpoints: unknown[] }>('GET', '/api/v1/webhook-endpoints')).body.webhookEndpoints.length, 0);
      // Create: the secret once.
      const posted = await c.submit('/settings/webhooks', { url: `${rx.url}/hook`, events: ['conversation.created'], description: EVIL });
      assert.equal(posted.status, 303, posted.text.slice(0, 500));
      assert.match(posted.location!, /^\/settings\/webhooks\/[^/]+\/created$/);
      const made = await c.get(posted.location!);
      assert.equal(made.status, 200, made.text.slice(0, 500));
      assert.equal(made.headers.get('cache-control'), 'no-store');
      const secret = /id="secret" value="(whsec_[^"]+)"/.exec(made.text)?.[1];
      assert.ok(secret, 'the secret is shown');
      srv.watch(secret);
      const list = await c.get('/settings/webhooks');
      assert.ok(!list.text.includes(secret), 'the list never shows the secret');
      assert.ok(!list.text.includes(EVIL) && list.text.includes('&lt;img src=x onerror=alert(1)&gt;'));
      const api = await srv.call<{ webhookEndpoints: Array<{ id: string; enabled: boolean; events: string[] }> }>('GET', '/api/v1/webhook-endpoints');
      assert.equal(api.body.webhookEndpoints.length, 1);
      const id = api.body.webhookEndpoints[0].id;
      assert.deepEqual(api.body.webhookEndpoints[0].events, ['conversation.created']);
      // A delivery, signed with the secret shown, listed on the page.
      assert.equal((await srv.call('POST', '/api/v1/conversations', { body: { subject: 'Hi', customer: { email: 'a@example.com' } } })).status, 201);
      const [got] = await rx.waitFor(1);
      assert.ok(verifyWebhook(secret, got.headers, got.body, srv.clock.now()), 'signed with the secret shown');
      let page = await c.get('/settings/webhooks');
      for (let i = 0; i < 50 && !/status-active">succeeded/.test(page.text); i++) { await new Promise((r) => setTimeout(r, 50)); page = await c.get('/settings/webhooks'); }
      assert.match(page.text, /<code>conversation\.created<\/code><\/td>\s*<td data-label="Status"><span class="status-active">succeeded/);
      // Disable, enable.
      const csrf = csrfOf(page.text);
      const off = await c.post(`/settings/webhooks/${id}/disable`, { csrf });
      assert.equal(off.status, 303);
      assert.equal((await srv.call<{ webhookEndpoint: { enabled: boolean } }>('GET', `/api/v1/webhook-endpoints/${id}`)).body.webhookEndpoint.enabled, false);
      assert.match((await c.get('/settings/webhooks')).text, /status-revoked">Disabled/);
      assert.equal((await c.post(`/settings/webhooks/${id}/enable`, { csrf })).status, 303);
      assert.equal((await srv.call<{ webhookEndpoint: { enabled: boolean } }>('GET', `/api/v1/webhook-endpoints/${id}`)).body.webhookEndpoint.enabled, true);
      // Another workspace's endpoint: 404 like an unknown id, untouched.
      const other = await srv.space();
      const theirs = await other.call<{ webhookEndpoint: { id: string } }>('POST', '/api/v1/webhook-endpoints', { body: { url: `${rx.url}/theirs`, events: ['*'] } });
      assert.equal(theirs.status, 201, theirs.text);
      assert.ok(!(await c.get('/settings/webhooks')).text.includes('/theirs'));
      for (const what of ['disable', 'enable', 'delete']) {
        assert.equal((await c.post(`/settings/webhooks/${theirs.body.webhookEndpoint.id}/${what}`, { csrf })).status, 404, what);
      }
      assert.equal((await other.call('GET', `/api/v1/webhook-endpoints/${theirs.body.webhookEndpoint.id}`)).status, 200);
      // Delete.
      const del = await c.post(`/settings/webhooks/${id}/delete`, { csrf });
      assert.equal(del.status, 303);
      assert.match((await c.get(del.location!)).text, /The endpoint is deleted/);
      assert.equal((await srv.call('GET', `/api/v1/webhook-endpoints/${id}`)).status, 404);
    }, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  } finally {
    await rx.close();
  }
});
