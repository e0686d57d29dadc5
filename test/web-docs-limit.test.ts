/**
 * Public docs pages per client address (docs/security.md#public-docs): a reader never notices, a loop over the pages
 * from one address gets 429 with Retry-After once past the burst, other addresses are served, and the bucket refills
 * on the clock.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from './helpers/server.js';
/** The default `DOCS_VIEWS_PER_MINUTE`: a burst of half, then that many a minute. */
const DOCS_VIEWS = { burst: 300, perMinute: 600 };

test(`past ${DOCS_VIEWS.burst} docs pages from one address: 429 with Retry-After; another address is served`, async () => {
  const srv = await startTestServer({ env: { TRUST_PROXY: '127.0.0.1' } });
  try {
    const made = await srv.call<{ source: { id: string } }>('POST', '/api/v1/sources',
      { body: { name: 'Limits', content: '# Limits\nHow many pages one address may view.\n' } });
    const pub = await srv.call('PATCH', `/api/v1/sources/${made.body.source.id}`,
      { body: { publicDocs: { enabled: true, published: true, slug: 'limits' } } });
    assert.equal(pub.status, 200, pub.text);
    const view = (ip: string, path = '/docs/limits') => fetch(srv.url + path, { headers: { 'X-Forwarded-For': ip } });
    for (let i = 0; i < DOCS_VIEWS.burst; i++) {
      const r = await view('203.0.113.9', i % 2 ? '/docs/limits' : '/docs/limits/search?q=pages');
      assert.equal(r.status, 200, `view ${i}`);
      await r.arrayBuffer();
    }
    const refused = await view('203.0.113.9');
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.match(await refused.text(), /Too many docs pages from this address\. Try again in 1 second\./);
    assert.equal((await view('203.0.113.10')).status, 200, 'another address');
    srv.clock.advance(60_000);
    assert.equal((await view('203.0.113.9')).status, 200, 'refilled');
  } finally { await srv.close(); }
});
