/**
 * `GET /widget.js` (docs/widget.md#the-script): the embeddable script's answer (type, caching by ETag, CORS for any
 * page, gzip), its size budget (≤ 30 KB gzipped, measured with node:zlib), that it parses, that it keeps to what a
 * strict CSP allows (no eval, no inline handlers, no style attributes), and that it is served with WEB_UI=false.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { Script } from 'node:vm';
import { startTestServer } from './helpers/server.js';
import { WIDGET_JS } from '../src/web/widget/widgetScript.js';
import { WIDGET_VERSION } from '../src/web/widget/serve.js';

test('GET /widget.js → 200 the script, public, cached 5 minutes, revalidated by ETag; gzip when asked', async () => {
  const srv = await startTestServer();
  try {
    const r = await fetch(`${srv.url}/widget.js`, { headers: { 'Accept-Encoding': 'identity' } });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(r.headers.get('access-control-allow-origin'), '*');
    assert.equal(r.headers.get('cross-origin-resource-policy'), 'cross-origin');
    assert.equal(r.headers.get('cache-control'), 'public, max-age=300');
    assert.equal(r.headers.get('etag'), `"${WIDGET_VERSION}"`);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('content-encoding'), null);
    assert.equal(await r.text(), WIDGET_JS);
    // A versioned URL is the same script.
    assert.equal(await (await fetch(`${srv.url}/widget.js?v=${WIDGET_VERSION}`)).text(), WIDGET_JS);
    const again = await fetch(`${srv.url}/widget.js`, { headers: { 'If-None-Match': `W/"${WIDGET_VERSION}"` } });
    assert.equal(again.status, 304);
    assert.equal(await again.text(), '');
    // fetch decodes gzip itself: the header says it was sent compressed.
    const gz = await fetch(`${srv.url}/widget.js`, { headers: { 'Accept-Encoding': 'br;q=1, gzip;q=0.8' } });
    assert.equal(gz.headers.get('content-encoding'), 'gzip');
    assert.equal(gz.headers.get('vary'), 'Accept-Encoding');
    assert.equal(await gz.text(), WIDGET_JS);
    const refused = await fetch(`${srv.url}/widget.js`, { headers: { 'Accept-Encoding': 'gzip;q=0' } });
    assert.equal(refused.headers.get('content-encoding'), null);
    await refused.text();
    const post = await fetch(`${srv.url}/widget.js`, { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
    assert.equal(await post.text(), 'Method not allowed.\n');
  } finally { await srv.close(); }
});

test('the widget script is at most 30 KB gzipped, parses, and uses nothing a strict CSP refuses', () => {
  const size = gzipSync(Buffer.from(WIDGET_JS), { level: 9 }).length;
  assert.ok(size <= 30 * 1024, `gzipped size ${size} bytes`);
  assert.doesNotThrow(() => new Script(WIDGET_JS, { filename: 'widget.js' }));
  for (const bad of [/\beval\s*\(/, /new Function\b/, /\.innerHTML\b/, /setAttribute\(\s*"on/, /setAttribute\(\s*"style"/,
    /\.style\s*=/, /setTimeout\(\s*"/, /document\.write\b/]) {
    assert.doesNotMatch(WIDGET_JS, bad, `the script must not use ${bad}`);
  }
  assert.match(WIDGET_JS, /replaceSync/, 'styles through a constructed style sheet');
  assert.match(WIDGET_JS, /attachShadow/);
});

test('WEB_UI=false: /widget.js is still served (the widget API does not need the settings area)', async () => {
  const srv = await startTestServer({ env: { WEB_UI: 'false' } });
  try {
    const r = await fetch(`${srv.url}/widget.js`);
    assert.equal(r.status, 200);
    assert.equal(await r.text(), WIDGET_JS);
    assert.equal((await fetch(`${srv.url}/settings/keys`)).status, 404);
  } finally { await srv.close(); }
});
