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
import { Browser, browserOrLoudSkip, screenshotDir, signInOwner } from '../helpers/browser.js';
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
    await signInOwner(wide, srv.ownerLink, password);
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

const RICH = JSON.stringify({
  openapi: '3.0.3',
  info: { title: 'Petstore API', version: '2.1', description: 'Manage the **pets** of a shop. See [the guide](https://petstore.example/guide).' },
  servers: [{ url: 'https://api.petstore.example/v2' }],
  tags: [{ name: 'Pets' }],
  paths: {
    '/pets': {
      get: { summary: 'List pets', tags: ['Pets'], description: 'Returns the pets, *newest first*.\n\n- 20 at a time\n- sorted by `createdAt`',
        parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', maximum: 100 }, description: 'How many pets to return, at most 100; the default is a sensible twenty.' },
          { name: 'X-Request-Tag', in: 'header', required: true, schema: { type: 'string' }, description: 'A tag echoed back.' }],
        responses: { 200: { description: 'The pets.', content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Pet' } } } } } } },
      post: { summary: 'Add a pet', tags: ['Pets'], description: 'Creates a pet. The name must be unique in the shop.',
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' }, example: { name: 'Rex', species: 'dog', tags: ['good boy'] } } } },
        responses: { 201: { description: 'Created.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } } }, 409: { description: 'The name is taken.' } } },
    },
  },
  components: { schemas: { Pet: { type: 'object', required: ['name'], properties: {
    id: { type: 'string', format: 'uuid', description: 'Set by the server.' }, name: { type: 'string' },
    species: { type: 'string', enum: ['dog', 'cat', 'bird'] }, tags: { type: 'array', items: { type: 'string' } },
    parent: { $ref: '#/components/schemas/Pet' } } } } },
});

test('in Chromium: docs pages fit 390 px and 1280 px, the copy button copies the curl sample, the nav stays in view', { skip: 'reason' in chromium ? chromium.reason : false, timeout: 240_000 }, async () => {
  const srv = await startTestServer({});
  const browsers: Browser[] = [];
  try {
    const publish = async (content: string, slug: string) => {
      const made = await srv.call<{ source: { id: string; status: string } }>('POST', '/api/v1/sources', { body: { content } });
      assert.equal(made.status, 201, made.text);
      const pub = await srv.call('PATCH', `/api/v1/sources/${made.body.source.id}`, { body: { publicDocs: { enabled: true, published: true, slug } } });
      assert.equal(pub.status, 200, pub.text);
    };
    await publish(RICH, 'petstore');
    const { readFileSync } = await import('node:fs');
    await publish(readFileSync(new URL('../fixtures/corpus/openapi/openai-openapi-2024-01.yaml', import.meta.url), 'utf8'), 'openai');
    const path = (chromium as { path: string }).path;
    for (const width of [390, 1280]) {
      const b = await Browser.launch(path, { width, height: 900 });
      browsers.push(b);
      for (const page of ['/docs/petstore', '/docs/petstore/search?q=pets', '/docs', '/docs/openai']) {
        await b.goto(`${srv.url}${page}`);
        const fits = await b.eval<[number, number]>('[document.documentElement.scrollWidth, window.innerWidth]');
        assert.ok(fits[0] <= fits[1], `${page} at ${width} px: scrollWidth ${fits[0]} > ${fits[1]}`);
        if (page === '/docs/petstore') await b.screenshot(SHOTS + `docs-petstore-${width}.png`);
        if (page === '/docs/openai' && width === 1280) await b.screenshot(SHOTS + 'docs-openai-1280.png', 2400);
      }
    }
    const wide = browsers[1];
    await wide.goto(`${srv.url}/docs/petstore`);
    // The copy button is shown by the script and copies the curl sample.
    assert.equal(await wide.eval('document.querySelector("button[data-copy=\\"post-pets-sample\\"]").hidden'), false);
    const copied = await wide.eval<string>(`new Promise((resolve) => {
      navigator.clipboard.writeText = (t) => { resolve(t); return Promise.resolve(); };
      Object.defineProperty(window, 'isSecureContext', { value: true });
      document.querySelector('button[data-copy="post-pets-sample"]').click();
    })`);
    assert.equal(copied, await wide.eval('document.getElementById("post-pets-sample").textContent'));
    assert.match(copied, /^curl -X POST 'https:\/\/api\.petstore\.example\/v2\/pets'/);
    assert.match(copied, /-d '\{"name":"Rex","species":"dog","tags":\["good boy"\]\}'$/);
    // The nav stays in view after scrolling at 1280 px.
    await wide.goto(`${srv.url}/docs/openai`);
    await wide.eval('window.scrollTo(0, 6000)');
    const top = await wide.eval<number>('document.querySelector("nav.toc").getBoundingClientRect().top');
    assert.ok(top >= 0 && top < 5, `nav top at ${top} after scrolling`);
  } finally {
    for (const b of browsers) await b.close();
    await srv.close();
  }
});
