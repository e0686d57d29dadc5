/**
 * The settings area in a real browser (docs/web.md): headless Chromium over the DevTools pipe
 * (test/helpers/browser.ts) walks activation link → set password → sign in → keys page →
 * create a key → see the secret → use it on the API → revoke → 401, and saves screenshots of
 * the sign-in page, the keys list and the new key (to test/artifacts/, git-ignored, or to docs/screenshots/ when run
 * with UPDATE_SCREENSHOTS=1). Without Chromium the test is skipped, saying why.
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
