/**
 * The settings area in a real browser (docs/web.md): headless Chromium over the DevTools pipe
 * (test/helpers/browser.ts) walks activation → sign in → create, use and revoke a key; then every
 * settings page at 390 and 1280 px (no sideways scroll), a source added, rescanned, published and
 * deleted, a reloaded new-key page, an invite, a password change, the invited member signed in (403 on users).
 * Screenshots go to test/artifacts/ (git-ignored), or docs/screenshots/ with UPDATE_SCREENSHOTS=1. Without
 * Chromium: skipped, saying why.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';
import { Browser, browserOrLoudSkip, screenshotDir } from '../helpers/browser.js';

const SHOTS = screenshotDir();
const PASSWORD = 'correct horse battery staple';
const chromium = browserOrLoudSkip();

test('in Chromium: activate, sign in, create a key, use it, revoke it', { skip: 'reason' in chromium ? chromium.reason : false, timeout: 120_000 }, async () => {
  const srv = await startTestServer();
  srv.watch(PASSWORD);
  let browser: Browser | undefined;
  try {
    try { browser = await Browser.launch((chromium as { path: string }).path); } catch (e) {
      assert.fail(`Chromium is installed but did not start over the DevTools pipe: ${(e as Error).message}`);
    }
    const b = browser;
    // The activation link, as printed at the first start.
    await b.goto(srv.ownerLink);
    let s = await b.state();
    assert.equal(s.title, 'Set your password · Support Workspace');
    assert.match(s.text, /owner@localhost/);
    await b.fill('#password', PASSWORD);
    await b.clickAndWait('button[type=submit]');
    s = await b.state();
    assert.equal(new URL(s.url).pathname, '/settings/login');
    assert.match(s.text, /Your password is set/);
    await b.screenshot(SHOTS + 'login.png');

    await b.fill('#email', 'owner@localhost');
    await b.fill('#password', PASSWORD);
    await b.clickAndWait('button[type=submit]');
    s = await b.state();
    assert.equal(new URL(s.url).pathname, '/settings/keys');
    assert.match(s.text, /API keys/);
    assert.match(s.text, /bootstrap/);
    // The session cookie is HttpOnly: the page cannot read it.
    assert.equal(await b.eval('document.cookie'), '');

    await b.fill('#name', 'Zapier integration');
    await b.check('input[name=scopes][value="conversations:read"]');
    await b.check('input[name=scopes][value="issues:write"]');
    await b.fill('#expiresAt', '2030-01-31');
    await b.clickAndWait('form[action="/settings/keys"] button[type=submit]');
    s = await b.state();
    assert.equal(s.title, 'New API key · Support Workspace');
    assert.match(s.text, /shown only this once/);
    const secret = await b.eval<string>('document.getElementById("secret").value');
    assert.match(secret, /^svck_[0-9A-Za-z]{43}$/);
    srv.watch(secret);
    // The copy button was shown by the script (hidden without JavaScript).
    assert.equal(await b.eval('document.querySelector("button[data-copy]").hidden'), false);
    await b.screenshot(SHOTS + 'new-key.png');

    // The key works on the API.
    assert.equal((await srv.call('GET', '/api/v1/issues', { key: secret })).status, 200);

    await b.goto(srv.url + '/settings/keys');
    await b.screenshot(SHOTS + 'keys.png');
    const keyId = await b.eval<string>(`[...document.querySelectorAll('tbody tr')].find((r) => r.textContent.includes('Zapier integration')).querySelector('a[href$="/revoke"]').getAttribute('href')`);
    await b.goto(srv.url + keyId);
    assert.match((await b.state()).text, /Revoke this key\?/);
    await b.clickAndWait('button.danger');
    s = await b.state();
    assert.match(s.text, /is revoked: it no longer authenticates/);
    const t0 = performance.now();
    const refused = await srv.call('GET', '/api/v1/issues', { key: secret });
    assert.equal(refused.status, 401);
    assert.ok(performance.now() - t0 < 1000);

    await b.clickAndWait('header form button[type=submit]');
    assert.equal(new URL((await b.state()).url).pathname, '/settings/login');
    await b.goto(srv.url + '/settings/keys');
    assert.equal(new URL((await b.state()).url).pathname, '/settings/login', 'signed out: the keys page sends to sign-in');
  } finally {
    await browser?.close();
    await srv.close();
  }
});

const SPEC = JSON.stringify({ openapi: '3.0.3', info: { title: 'Petstore', version: '1.0.0' }, paths: {
  '/pets': { get: { summary: 'List all pets', tags: ['pets'], responses: { 200: { description: 'OK' } } },
    post: { summary: 'Create a pet', tags: ['pets'], responses: { 201: { description: 'Made' } } } },
  '/pets/{petId}': { get: { summary: 'Info for a specific pet, with a rather long summary that must wrap on a phone',
    tags: ['pets'], responses: { 200: { description: 'OK' } } } } } });
const NEW_PASSWORD = 'a much longer passphrase 42';
const MEMBER_PASSWORD = 'ada invited passphrase 7';

test('in Chromium: every settings page fits 390 px and 1280 px; a source added, opened, rescanned, published and deleted; a reloaded new-key page; a password changed; an invited member who may not manage users', { skip: 'reason' in chromium ? chromium.reason : false, timeout: 240_000 }, async () => {
  const srv = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  srv.watch(PASSWORD);
  srv.watch(NEW_PASSWORD);
  srv.watch(MEMBER_PASSWORD);
  let browser: Browser | undefined;
  try {
    browser = await Browser.launch((chromium as { path: string }).path, { width: 1280 });
    const b = browser;
    // Something to list: keys, a failed source, a webhook endpoint.
    for (const name of ['Zendesk sync', 'Nightly export']) srv.watch((await srv.admin.createKey({ workspace: srv.workspaceId, name, scopes: 'conversations:read,issues:write' })).key);
    assert.equal((await srv.call('POST', '/api/v1/sources', { body: { content: '{"openapi": "3.0.3", "paths": ', name: 'Broken upload' } })).status, 201);
    const hook = await srv.call<{ webhookEndpoint: { secret: string } }>('POST', '/api/v1/webhook-endpoints', { body: { url: 'http://127.0.0.1:9/support/events', events: ['conversation.created'], description: 'CRM' } });
    assert.equal(hook.status, 201, hook.text);
    srv.watch(hook.body.webhookEndpoint.secret);

    const fits = async (what: string) => {
      const f = await b.fitsWidth();
      assert.ok(f.fits, `${what} at ${f.innerWidth} px: scrollWidth ${f.scrollWidth} (${f.widest})`);
    };
    const atBoth = async (what: string, url: string, shots?: { wide?: string; narrow?: string }) => {
      for (const width of [390, 1280]) {
        await b.resize(width);
        await b.goto(url);
        await fits(what);
        const shot = width === 390 ? shots?.narrow : shots?.wide;
        if (shot) await b.screenshot(SHOTS + shot);
      }
    };

    await atBoth('landing page', srv.url + '/');
    await atBoth('activate', srv.ownerLink);
    await b.fill('#password', PASSWORD);
    await b.clickAndWait('button[type=submit]');
    await atBoth('login', srv.url + '/settings/login');
    await b.fill('#email', 'owner@localhost');
    await b.fill('#password', PASSWORD);
    await b.clickAndWait('button[type=submit]');
    assert.equal(new URL((await b.state()).url).pathname, '/settings/keys');

    // A new key; the page that shows it, reloaded, shows it no more; the list holds one.
    await b.fill('#name', 'Phone test key');
    await b.check('input[name=scopes][value="sources:read"]');
    await b.clickAndWait('form[action="/settings/keys"] button[type=submit]');
    const createdUrl = (await b.state()).url;
    assert.match(new URL(createdUrl).pathname, /^\/settings\/keys\/[^/]+\/created$/);
    const secret = await b.eval<string>('document.getElementById("secret").value');
    assert.match(secret, /^svck_[0-9A-Za-z]{43}$/);
    srv.watch(secret);
    await fits('new key');
    await b.resize(390);
    await b.goto(createdUrl);
    await fits('new key, reloaded');
    let s = await b.state();
    assert.match(s.text, /already shown/);
    assert.equal(await b.eval('document.getElementById("secret")'), null);
    await atBoth('keys', srv.url + '/settings/keys', { wide: 'keys-1280.png', narrow: 'keys-390.png' });
    assert.equal(await b.eval(`[...document.querySelectorAll('tbody tr')].filter((r) => r.textContent.includes('Phone test key')).length`), 1);
    await atBoth('revoke', srv.url + (await b.eval<string>(`document.querySelector('a[href$="/revoke"]').getAttribute('href')`)));
    await atBoth('webhooks', srv.url + '/settings/webhooks');

    // A source: add by paste, open, rescan, publish, view its docs, delete.
    await b.resize(1280);
    await b.goto(srv.url + '/settings/sources');
    await b.fill('#content', SPEC);
    await b.clickAndWait('form[action="/settings/sources"] button[type=submit]');
    s = await b.state();
    const sourceUrl = s.url.replace(/\?.*$/, '');
    assert.match(new URL(sourceUrl).pathname, /^\/settings\/sources\/[^/]+$/);
    assert.match(s.text, /The source is added/);
    assert.match(s.text, /ready/);
    assert.match(s.text, /List all pets/);
    await b.clickAndWait('form[action$="/rescan"] button');
    assert.match((await b.state()).text, /The source is rescanned/);
    await atBoth('source detail', sourceUrl, { narrow: 'source-390.png' });
    await atBoth('sources', srv.url + '/settings/sources', { wide: 'sources-1280.png', narrow: 'sources-390.png' });
    await b.goto(sourceUrl);
    await b.fill('form.publish input[name=slug]', 'petstore');
    await b.clickAndWait('form.publish button');
    assert.match((await b.state()).text, /Petstore is published at \/docs\/petstore/);
    await b.goto(srv.url + '/docs/petstore');
    assert.match((await b.state()).text, /List all pets/);
    await atBoth('delete source', sourceUrl + '/delete');
    await b.clickAndWait('button.danger');
    s = await b.state();
    assert.match(s.text, /The source is deleted/);
    assert.doesNotMatch(s.text, /Petstore/);

    // People: invite (the link shown once), the activation page it leads to, the users page.
    await b.resize(1280);
    await b.goto(srv.url + '/settings/users');
    await b.fill('#email', 'ada@example.com');
    await b.clickAndWait('form[action="/settings/users"] button[type=submit]');
    const link = await b.eval<string>('document.getElementById("secret").value');
    srv.watch(new URL(link).searchParams.get('token')!);
    await fits('invited');
    await atBoth('users', srv.url + '/settings/users', { wide: 'users-1280.png' });
    await atBoth('remove user', srv.url + (await b.eval<string>(`[...document.querySelectorAll('tbody tr')].find((r) => r.textContent.includes('ada@')).querySelector('a').getAttribute('href')`)));
    await atBoth('activate (invited user)', link);

    // The password, changed on the account page; then signed out and in with the new one.
    await atBoth('account', srv.url + '/settings/account', { narrow: 'account-390.png' });
    await b.fill('#current', PASSWORD);
    await b.fill('#password-new', NEW_PASSWORD);
    await b.clickAndWait('form[action="/settings/account/password"] button[type=submit]');
    assert.match((await b.state()).text, /Your password is changed/);
    await b.clickAndWait('header form button[type=submit]');
    await b.fill('#email', 'owner@localhost');
    await b.fill('#password', PASSWORD);
    await b.clickAndWait('button[type=submit]');
    assert.match((await b.state()).text, /The email or the password is not right/);
    await b.fill('#password', NEW_PASSWORD);
    await b.clickAndWait('button[type=submit]');
    assert.equal(new URL((await b.state()).url).pathname, '/settings/keys');

    // The invited member: signed out, activates through the link, signs in, and may not manage users.
    await b.clickAndWait('header form button[type=submit]');
    await b.goto(link);
    await b.fill('#password', MEMBER_PASSWORD);
    await b.clickAndWait('button[type=submit]');
    assert.equal(new URL((await b.state()).url).pathname, '/settings/login');
    await b.fill('#email', 'ada@example.com');
    await b.fill('#password', MEMBER_PASSWORD);
    await b.clickAndWait('button[type=submit]');
    s = await b.state();
    assert.equal(new URL(s.url).pathname, '/settings/keys');
    assert.match(s.text, /ada@example\.com/);
    await b.goto(srv.url + '/settings/users');
    s = await b.state();
    assert.match(s.title, /Forbidden/);
    assert.match(s.text, /Only an owner of this workspace can manage its users\./);
    assert.equal(await b.eval('document.querySelector(\'form[action="/settings/users"]\')'), null);
  } finally {
    await browser?.close();
    await srv.close();
  }
});
