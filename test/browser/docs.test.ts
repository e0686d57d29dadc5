/**
 * Public docs in a real browser (docs/web.md#public-docs): headless Chromium (test/helpers/browser.ts)
 * opens a published source's page without signing in, follows the contents to an anchor, uses
 * the search box, and checks that a hostile summary stays text, that the style sheet applies
 * (CSP allows it, nothing inline) and that a phone-width window has no sideways scroll. Saves
 * docs/screenshots/public-docs.png, public-docs-search.png, sources.png and webhooks.png (the
 * settings area's sources and webhooks pages, signed in) with UPDATE_SCREENSHOTS=1. Without Chromium it is skipped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';
import { Browser, browserOrLoudSkip, screenshotDir } from '../helpers/browser.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

const SHOTS = screenshotDir();
const chromium = browserOrLoudSkip();

const op = (summary: string, tag: string, description: string, extra: Record<string, unknown> = {}) =>
  ({ summary, tags: [tag], description, responses: { 200: { description: 'OK' } }, ...extra });
const PETSTORE = JSON.stringify({
  openapi: '3.0.3',
  info: { title: 'Petstore API', version: '2.1', description: 'Manage the pets of a shop: list them, add new ones, and record adoptions.' },
  servers: [{ url: 'https://api.petstore.example/v2' }],
  tags: [{ name: 'Pets', description: 'The animals' }, { name: 'Adoptions', description: 'Who took which pet' }],
  paths: {
    '/pets': {
      get: op('List pets', 'Pets', 'Returns the pets, newest first, 20 at a time.', { parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', maximum: 100 } }] }),
      post: op('Add a pet', 'Pets', 'Creates a pet. The name must be unique in the shop.'),
    },
    '/pets/{petId}': {
      get: op('<img src=x onerror=alert(1)> Show a pet', 'Pets', 'One pet by its id.'),
      delete: op('Remove a pet', 'Pets', 'Deletes the pet; its adoptions are kept.'),
    },
    '/adoptions': { post: op('Record an adoption', 'Adoptions', 'Marks a pet as adopted by a customer (email required).') },
  },
});

test('in Chromium: a published source\'s docs without signing in, anchors, search, escaping, narrow screen', { skip: 'reason' in chromium ? chromium.reason : false, timeout: 120_000 }, async () => {
  const srv = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  let rx: Receiver | undefined;
  let wide: Browser | undefined;
  let narrow: Browser | undefined;
  try {
    const made = await srv.call<{ source: { id: string } }>('POST', '/api/v1/sources', { body: { content: PETSTORE } });
    assert.equal(made.status, 201, made.text);
    const pub = await srv.call('PATCH', `/api/v1/sources/${made.body.source.id}`, { body: { publicDocs: { enabled: true, published: true, slug: 'petstore' } } });
    assert.equal(pub.status, 200, pub.text);
    const path = (chromium as { path: string }).path;
    wide = await Browser.launch(path, { width: 1200, height: 900 });
    await wide.goto(`${srv.url}/docs/petstore`);
    let s = await wide.state();
    assert.equal(s.title, 'Petstore API · API documentation');
    assert.match(s.text, /Manage the pets of a shop/);
    assert.match(s.text, /<img src=x onerror=alert\(1\)> Show a pet/, 'the hostile summary shows as text');
    assert.equal(await wide.eval('document.querySelectorAll("main img, nav img").length'), 0);
    // The style sheet applies: a GET badge has its colour.
    assert.equal(await wide.eval('getComputedStyle(document.querySelector(".method.m-get")).backgroundColor'), 'rgb(10, 91, 211)');
    assert.equal(await wide.eval('document.querySelectorAll("section.op").length'), 5);
    await wide.screenshot(SHOTS + 'public-docs.png');
    // The contents link to the operation's anchor.
    const href = await wide.eval<string>('document.querySelector(".toc a[href=\\"#post-adoptions\\"]").getAttribute("href")');
    assert.equal(href, '#post-adoptions');
    assert.equal(await wide.eval('!!document.getElementById("post-adoptions")'), true);
    // The search box.
    await wide.fill('#q', 'adopted customer');
    await wide.clickAndWait('form[role=search] button[type=submit]');
    s = await wide.state();
    assert.equal(new URL(s.url).pathname, '/docs/petstore/search');
    assert.match(s.text, /Record an adoption/);
    assert.equal(await wide.eval('document.querySelector(".results a").getAttribute("href")'), '/docs/petstore#post-adoptions');
    await wide.screenshot(SHOTS + 'public-docs-search.png');

    // The sources page shows the published source, with its link and the Unpublish button.
    const password = 'correct horse battery staple';
    srv.watch(password);
    await wide.goto(srv.ownerLink);
    await wide.fill('#password', password);
    await wide.clickAndWait('button[type=submit]');
    await wide.fill('#email', 'owner@localhost');
    await wide.fill('#password', password);
    await wide.clickAndWait('button[type=submit]');
    await srv.call('POST', '/api/v1/sources', { body: { content: '# Onboarding guide\n\nHow to start.\n', name: 'Onboarding guide' } });
    await wide.goto(`${srv.url}/settings/sources`);
    s = await wide.state();
    assert.match(s.text, /Petstore API/);
    assert.match(s.text, /\/docs\/petstore/);
    assert.equal(await wide.eval('document.querySelectorAll("form.publish").length'), 1, 'the unpublished source has a publish form');
    await wide.screenshot(SHOTS + 'sources.png');

    // The webhooks page, with an endpoint and its deliveries.
    rx = await startReceiver();
    const hook = await srv.call('POST', '/api/v1/webhook-endpoints', { body: { url: `${rx.url}/support-events`, events: ['conversation.created', 'issue.created'], description: 'Help desk sync' } });
    assert.equal(hook.status, 201, hook.text);
    for (const subject of ['Printer on fire', 'Refund please']) await srv.call('POST', '/api/v1/conversations', { body: { subject, customer: { email: 'ada@example.com' } } });
    await rx.waitFor(2);
    await new Promise((r) => setTimeout(r, 300));
    await wide.goto(`${srv.url}/settings/webhooks`);
    s = await wide.state();
    assert.match(s.text, /support-events/);
    assert.match(s.text, /succeeded/);
    await wide.screenshot(SHOTS + 'webhooks.png');

    narrow = await Browser.launch(path, { width: 390, height: 844 });
    await narrow.goto(`${srv.url}/docs/petstore`);
    assert.ok(await narrow.eval<boolean>('document.documentElement.scrollWidth <= window.innerWidth'), 'no sideways scroll at 390 px');
    await narrow.screenshot(SHOTS + 'public-docs-narrow.png');
  } finally {
    await wide?.close();
    await narrow?.close();
    await rx?.close();
    await srv.close();
  }
});
