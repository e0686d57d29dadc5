/**
 * The Origin check does not trust the request's own Host (docs/security.md#csrf): a POST with
 * `Host: evil.example:PORT` and `Origin: http://evil.example:PORT` (what a page of a rebound
 * name sends) is refused even with a valid session and token; the listening address's forms
 * and PUBLIC_URL's origin are accepted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startTestServer } from './helpers/server.js';
import { csrfOf, keysOf, owner, withServer } from './helpers/web.js';

/** A POST through node:http, which (unlike fetch) lets the test write its own `Host`. */
function rawPost(port: number, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string; location?: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), location: res.headers.location }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const refusal = 'This form was not sent from a page of this server, so nothing was changed.';

test('POST /settings/keys with Host and Origin evil.example:PORT, a valid session and token → 403 and no key made', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const page = await c.get('/settings/keys');
    const before = keysOf(srv).length;
    const cookie = [...c.jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const form = new URLSearchParams({ csrf: csrfOf(page.text), name: 'rebound', scopes: 'conversations:read' }).toString();
    const evil = `evil.example:${srv.port}`;
    const r = await rawPost(srv.port, '/settings/keys', { Host: evil, Origin: `http://${evil}`, Cookie: cookie, 'Content-Type': 'application/x-www-form-urlencoded' }, form);
    assert.equal(r.status, 403);
    assert.equal(/<div class="card"><p>([^<]*)<\/p>/.exec(r.text)?.[1], refusal);
    assert.equal(keysOf(srv).length, before, 'nothing was created');
    // The same with a Referer instead of an Origin.
    const viaReferer = await rawPost(srv.port, '/settings/keys', { Host: evil, Referer: `http://${evil}/settings/keys`, Cookie: cookie, 'Content-Type': 'application/x-www-form-urlencoded' }, form);
    assert.equal(viaReferer.status, 403);
    assert.equal(keysOf(srv).length, before);
    // A name for the listening address is not the address: set PUBLIC_URL to post from it.
    const named = await rawPost(srv.port, '/settings/keys', { Host: evil, Origin: `http://localhost:${srv.port}`, Cookie: cookie, 'Content-Type': 'application/x-www-form-urlencoded' }, form);
    assert.equal(named.status, 403);
    // The listening address is ours, whatever Host says.
    for (const origin of [`http://127.0.0.1:${srv.port}`]) {
      const ok = await rawPost(srv.port, '/settings/keys', { Host: evil, Origin: origin, Cookie: cookie, 'Content-Type': 'application/x-www-form-urlencoded' }, form);
      assert.equal(ok.status, 303, origin);
      assert.match(ok.location ?? '', /^\/settings\/keys\/[^/]+\/created$/);
    }
    assert.equal(keysOf(srv).length, before + 1);
  });
});

test('with PUBLIC_URL set, its origin is accepted and a Host naming it is not needed; another port of the same host is not', async () => {
  const srv = await startTestServer({ env: { PUBLIC_URL: 'https://support.example.com' }, captureLogs: true });
  try {
    const c = await owner(srv).catch(() => undefined);
    // The owner's link is under PUBLIC_URL; the test client posts with the listening origin, accepted too.
    assert.ok(c, 'signed in through the listening address');
    const page = await c.get('/settings/keys');
    const cookie = [...c.jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const form = new URLSearchParams({ csrf: csrfOf(page.text), name: 'public', scopes: 'conversations:read' }).toString();
    const headers = { Cookie: cookie, 'Content-Type': 'application/x-www-form-urlencoded' };
    const viaPublic = await rawPost(srv.port, '/settings/keys', { ...headers, Host: 'support.example.com', Origin: 'https://support.example.com' }, form);
    assert.equal(viaPublic.status, 303);
    const otherPort = await rawPost(srv.port, '/settings/keys', { ...headers, Host: `127.0.0.1:${srv.port + 1}`, Origin: `http://127.0.0.1:${srv.port + 1}` }, form);
    assert.equal(otherPort.status, 403);
    assert.equal(/<div class="card"><p>([^<]*)<\/p>/.exec(otherPort.text)?.[1], refusal);
  } finally { await srv.close(); }
});
