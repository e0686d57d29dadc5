/**
 * The settings area over HTTP (docs/web.md, docs/security.md#settings-area): a real server on
 * port 0 and real fetch with redirects handled by hand (test/helpers/web.ts). Activation (reuse,
 * expiry, new links), users and the CLI's `user create`, sign-in answers that do not tell
 * whether an email exists, lockout, sessions and the idle timeout on the injected clock, Secure
 * cookies behind a trusted proxy, CSRF and Origin refusals that change nothing, WEB_UI=false.
 * The keys page and the security headers are in test/web-keys.test.ts. The harness's secrets
 * scan sees every password, session token and activation token used here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer } from './helpers/server.js';
import { WebClient, csrfOf, withServer, owner, userOf, assertSecurityHeaders, keysOf, OWNER, PASSWORD, type WebPage } from './helpers/web.js';
import { runCli } from './helpers/child.js';
import { ConflictError } from '../src/core/errors.js';

test('the bootstrap prints an owner activation link; activation sets the password once; sign-in and the keys page', async () => {
  await withServer(async (srv) => {
    assert.match(srv.ownerLink, /^http:\/\/127\.0\.0\.1:\d+\/settings\/activate\?token=[0-9A-Za-z]{43}$/);
    assert.equal(new URL(srv.ownerLink).port, String(srv.port), 'PUBLIC_URL defaults to http://HOST:PORT with the bound port');
    const c = new WebClient(srv);
    const path = new URL(srv.ownerLink).pathname + new URL(srv.ownerLink).search;
    const form = await c.get(path);
    assert.equal(form.status, 200);
    assert.match(form.text, /Set your password/);
    assert.match(form.text, /owner@localhost/);
    // A short password: 422 with the form again, the link still usable.
    const short = await c.post(path, { csrf: csrfOf(form.text), password: 'short' });
    assert.equal(short.status, 422);
    assert.match(short.text, /at least 12 characters/);
    const done = await c.post(path, { csrf: csrfOf(short.text), password: PASSWORD });
    assert.equal(done.status, 303);
    assert.equal(done.location, '/settings/login?activated=1');
    // Used once: the link is gone (410), GET and POST alike.
    assert.equal((await c.get(path)).status, 410);
    const again = await c.post(path, { csrf: csrfOf(form.text), password: 'another long password' });
    assert.equal(again.status, 410);
    assert.match(again.text, /already used/);
    const user = srv.store.userByEmail(OWNER)!;
    assert.match(user.passwordHash!, /^scrypt\$32768\$8\$1\$/);
    // Sign in.
    const login = await c.get('/settings/login?activated=1');
    assert.match(login.text, /Your password is set/);
    const signed = await c.post('/settings/login', { csrf: csrfOf(login.text), email: 'Owner@Localhost', password: PASSWORD });
    assert.equal(signed.status, 303);
    assert.equal(signed.location, '/settings/keys');
    const cookie = signed.setCookies.find((x) => x.startsWith('sw_session='))!;
    assert.match(cookie, /^sw_session=[0-9A-Za-z]{43}; HttpOnly; SameSite=Strict; Path=\/settings$/);
    const keys = await c.get('/settings/keys');
    assert.equal(keys.status, 200);
    assert.match(keys.text, /<h1>API keys<\/h1>/);
    assert.match(keys.text, /bootstrap/);
    assert.equal((await c.get('/settings')).location, '/settings/keys');
    assert.equal((await c.get('/settings/login')).location, '/settings/keys', 'signed in: the sign-in page sends on');
    // Only the token's hash is stored.
    const token = c.jar.get('sw_session')!;
    assert.ok(!readFileSync(join(srv.dataDir, 'system.log'), 'utf8').includes(token));
  });
});

test('activation links: unknown 404, expired after 24 h 410, a new link from user link works and ends old sessions', async () => {
  await withServer(async (srv) => {
    const c = new WebClient(srv);
    assert.equal((await c.get('/settings/activate?token=nope')).status, 404);
    assert.equal((await c.get('/settings/activate')).status, 404);
    const u = await srv.admin.execute('user.create', { workspace: srv.workspaceId, email: 'ada@example.com' }) as { activationUrl: string };
    srv.watch(new URL(u.activationUrl).searchParams.get('token')!);
    const path = new URL(u.activationUrl).pathname + new URL(u.activationUrl).search;
    srv.clock.advance(24 * 3600_000 - 1000);
    assert.equal((await c.get(path)).status, 200, 'valid just before 24 h');
    srv.clock.advance(1000);
    const expired = await c.get(path);
    assert.equal(expired.status, 410);
    assert.match(expired.text, /expired/);
    // A new link (lost link or password): sets the password and ends the user's sessions.
    const fresh = await srv.admin.execute('user.link', { email: 'ADA@example.com' }) as { activationUrl: string };
    await c.activateAndSignIn(fresh.activationUrl, 'ada@example.com', PASSWORD);
    assert.equal((await c.get('/settings/keys')).status, 200);
    const reset = await srv.admin.execute('user.link', { email: 'ada@example.com' }) as { activationUrl: string };
    const other = new WebClient(srv);
    await other.activateAndSignIn(reset.activationUrl, 'ada@example.com', 'a brand new password');
    assert.equal((await c.get('/settings/keys')).location, '/settings/login', 'the old session ended with the new password');
  });
});

test('users: one email per server (ignoring case), checked email, unknown workspace; user create through the CLI', async () => {
  await withServer(async (srv) => {
    const made = await srv.admin.execute('user.create', { workspace: srv.workspaceId, email: 'bo@example.com' }) as Record<string, unknown>;
    assert.equal(made.object, 'user');
    assert.equal(made.email, 'bo@example.com');
    assert.match(String(made.activationUrl), new RegExp(`^${srv.url}/settings/activate\\?token=[0-9A-Za-z]{43}$`));
    srv.watch(new URL(String(made.activationUrl)).searchParams.get('token')!);
    const other = await srv.newWorkspace('Other');
    await assert.rejects(srv.admin.execute('user.create', { workspace: other.workspaceId, email: 'BO@example.com' }), ConflictError);
    await assert.rejects(srv.admin.execute('user.create', { workspace: srv.workspaceId, email: 'not an email' }), /email must be an email address/);
    await assert.rejects(srv.admin.execute('user.create', { workspace: 'nope', email: 'x@example.com' }), /no workspace/);
  });
  // The CLI without a server: PUBLIC_URL absent → http://HOST:PORT of its environment's defaults.
  const srv = await startTestServer();
  const dataDir = srv.dataDir, ws = srv.workspaceId;
  await srv.close();
  const r = await runCli<{ object: string; email: string; activationUrl: string }>(dataDir, ['user', 'create', '--workspace', ws, '--email', 'cy@example.com']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.object, 'user');
  assert.match(r.json.activationUrl, /^http:\/\/127\.0\.0\.1:3000\/settings\/activate\?token=[0-9A-Za-z]{43}$/);
  const dup = await runCli(dataDir, ['user', 'create', '--workspace', ws, '--email', 'CY@example.com']);
  assert.equal(dup.code, 1);
  assert.match(dup.stderr, /already exists/);
  const usage = await runCli(dataDir, ['user', 'create', '--workspace', ws]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--email is required/);
});

test('sign-in: wrong password, unknown email and a user not yet activated answer alike (401); missing fields 422', async () => {
  await withServer(async (srv) => {
    await owner(srv);
    await srv.admin.execute('user.create', { workspace: srv.workspaceId, email: 'pending@example.com' });
    const c = new WebClient(srv);
    const problem = (p: WebPage) => /class="message error"[^>]*>([^<]*)</.exec(p.text)?.[1];
    const wrong = await c.submit('/settings/login', { email: OWNER, password: 'wrong password!!' });
    const unknown = await c.submit('/settings/login', { email: 'nobody@example.com', password: 'wrong password!!' });
    const pending = await c.submit('/settings/login', { email: 'pending@example.com', password: 'wrong password!!' });
    for (const p of [wrong, unknown, pending]) {
      assert.equal(p.status, 401);
      assert.equal(problem(p), 'The email or the password is not right.');
      assert.equal(p.setCookies.filter((x) => x.startsWith('sw_session')).length, 0);
    }
    const missing = await c.submit('/settings/login', { email: OWNER, password: '' });
    assert.equal(missing.status, 422);
    assert.match(missing.text, /Enter your email and your password/);
    assert.match(missing.text, /value="owner@localhost"/, 'the email is filled in again');
    const events = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'security event').map((l) => l.event);
    assert.deepEqual(events.filter((e) => e.startsWith('signin')), ['signin.ok', 'signin.failed', 'signin.failed', 'signin.failed']);
    assert.ok(!srv.logs.some((l) => l.includes('nobody@example.com')), 'an email no user has is not logged (it may be a password typed in the wrong field)');
  });
});

test('lockout: 10 failures for one email in 15 min lock it for 15 min, the right password too; unknown emails alike', async () => {
  await withServer(async (srv) => {
    await owner(srv);
    for (const email of [OWNER, 'ghost@example.com']) {
      const c = new WebClient(srv);
      for (let i = 0; i < 9; i++) assert.equal((await c.submit('/settings/login', { email, password: `wrong password ${i}` })).status, 401);
      const tenth = await c.submit('/settings/login', { email, password: 'wrong password 9' });
      assert.equal(tenth.status, 429);
      assert.match(tenth.text, /Too many failed sign-ins for this email/);
      assert.equal(tenth.headers.get('retry-after'), '900');
      const right = await c.submit('/settings/login', { email: email.toUpperCase(), password: PASSWORD });
      assert.equal(right.status, 429, 'locked: even the right password is refused');
      assert.equal(right.headers.get('retry-after'), '900');
    }
    // Another email is not locked.
    const c = new WebClient(srv);
    await srv.admin.execute('user.create', { workspace: srv.workspaceId, email: 'free@example.com' });
    assert.equal((await c.submit('/settings/login', { email: 'free@example.com', password: 'wrong password' })).status, 401);
    srv.clock.advance(15 * 60_000);
    const after = await c.submit('/settings/login', { email: OWNER, password: PASSWORD });
    assert.equal(after.status, 303, 'the lock ends after 15 min');
    // Failures older than 15 min do not count.
    const d = new WebClient(srv);
    for (let i = 0; i < 9; i++) await d.submit('/settings/login', { email: 'free@example.com', password: `wrong ${i} password` });
    srv.clock.advance(15 * 60_000);
    assert.equal((await d.submit('/settings/login', { email: 'free@example.com', password: 'wrong password x' })).status, 401);
    const events = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'security event').map((l) => l.event);
    assert.ok(events.includes('signin.locked'));
  });
});

test('sessions: 303 to sign-in without one; idle timeout of 12 h on the clock; sign-out ends it', async () => {
  await withServer(async (srv) => {
    const anon = new WebClient(srv);
    for (const p of ['/settings/keys', '/settings', '/settings/keys/x/revoke']) {
      const r = await anon.get(p);
      assert.equal(r.status, 303, p);
      assert.equal(r.location, '/settings/login', p);
      assertSecurityHeaders(r, p);
    }
    const post = await anon.post('/settings/keys', { name: 'x', scopes: '*' });
    assert.equal(post.status, 303);
    assert.equal(post.location, '/settings/login');
    assert.equal((await anon.post('/settings/logout', {})).location, '/settings/login');
    const forged = await anon.get('/settings/keys', { Cookie: 'sw_session=' + 'A'.repeat(43) });
    assert.equal(forged.location, '/settings/login');

    const c = await owner(srv);
    srv.clock.advance(12 * 3600_000 - 60_000);
    assert.equal((await c.get('/settings/keys')).status, 200, 'active just before the idle timeout');
    srv.clock.advance(12 * 3600_000 - 60_000);
    assert.equal((await c.get('/settings/keys')).status, 200, 'each request restarts the idle time');
    srv.clock.advance(12 * 3600_000);
    assert.equal((await c.get('/settings/keys')).location, '/settings/login', 'idle 12 h: the session is over');

    const d = await owner(srv).catch(async () => { const x = new WebClient(srv); await x.signIn(OWNER, PASSWORD); return x; });
    const keys = await d.get('/settings/keys');
    const token = d.jar.get('sw_session')!;
    const out = await d.post('/settings/logout', { csrf: csrfOf(keys.text) });
    assert.equal(out.status, 303);
    assert.equal(out.location, '/settings/login?signedOut=1');
    assert.ok(out.setCookies.some((x) => /^sw_session=; .*Max-Age=0/.test(x)));
    assert.equal((await d.get('/settings/keys', { Cookie: `sw_session=${token}` })).location, '/settings/login', 'the old cookie no longer works');
    const events = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'security event').map((l) => l.event);
    assert.ok(events.includes('signout') && events.includes('activation') && events.includes('signin.ok'));
  });
});

test('cookies are Secure when the request came over https through a trusted proxy', async () => {
  await withServer(async (srv) => {
    const c = new WebClient(srv);
    const https = { 'X-Forwarded-Proto': 'https' };
    const link = new URL(srv.ownerLink);
    const form = await c.get(link.pathname + link.search, https);
    assert.match(form.setCookies[0], /; Secure$/);
    srv.watch(link.searchParams.get('token')!);
    const origin = `https://${new URL(srv.url).host}`;
    const done = await c.post(link.pathname + link.search, { csrf: csrfOf(form.text), password: PASSWORD }, { origin, headers: https });
    assert.equal(done.status, 303);
    const login = await c.get('/settings/login', https);
    const r = await c.post('/settings/login', { csrf: csrfOf(login.text), email: OWNER, password: PASSWORD }, { origin, headers: https });
    assert.match(r.setCookies.find((x) => x.startsWith('sw_session='))!, /; Secure$/);
  }, { TRUST_PROXY: '127.0.0.1' });
  // From a peer that is not a trusted proxy the header is not believed.
  await withServer(async (srv) => {
    const plain = new WebClient(srv);
    assert.doesNotMatch((await plain.get('/settings/login', { 'X-Forwarded-Proto': 'https' })).setCookies[0], /Secure/);
  });
});

test('CSRF: a missing, wrong or other session\'s token, a foreign or null Origin → 403 and nothing changed', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const other = await userOf(srv, srv.workspaceId, 'second@example.com');
    const page = await c.get('/settings/keys');
    const csrf = csrfOf(page.text);
    const otherCsrf = csrfOf((await other.get('/settings/keys')).text);
    assert.notEqual(csrf, otherCsrf);
    const fields = { name: 'forged', scopes: '*' };
    const before = keysOf(srv).length;
    const refusals: Array<[string, Promise<WebPage>]> = [
      ['no token', c.post('/settings/keys', fields)],
      ['wrong token', c.post('/settings/keys', { ...fields, csrf: csrf.slice(0, -2) + 'xx' })],
      ['two tokens', c.post('/settings/keys', { ...fields, csrf: [csrf, csrf] })],
      ['another session\'s token', c.post('/settings/keys', { ...fields, csrf: otherCsrf })],
      ['a foreign Origin', c.post('/settings/keys', { ...fields, csrf }, { origin: 'https://evil.example' })],
      ['Origin null', c.post('/settings/keys', { ...fields, csrf }, { origin: 'null' })],
      ['no Origin, no Referer', c.post('/settings/keys', { ...fields, csrf }, { origin: null })],
      ['no Origin, a foreign Referer', c.post('/settings/keys', { ...fields, csrf }, { origin: null, headers: { Referer: 'https://evil.example/settings/keys' } })],
    ];
    for (const [what, p] of refusals) {
      const r = await p;
      assert.equal(r.status, 403, what);
      assertSecurityHeaders(r, what);
      assert.match(r.text, /nothing was changed/, what);
    }
    assert.equal(keysOf(srv).length, before, 'no key was made');
    // Revoke and sign-out are refused the same way.
    const k = keysOf(srv)[0];
    assert.equal((await c.post(`/settings/keys/${k.id}/revoke`, { csrf: otherCsrf })).status, 403);
    assert.equal(srv.store.key(k.id)!.revokedAt, null);
    assert.equal((await c.post('/settings/logout', { csrf: 'nope' })).status, 403);
    assert.equal((await c.get('/settings/keys')).status, 200, 'still signed in');
    // Sign-in and activation forms: their token is bound to the browser's pre-session cookie.
    const stranger = new WebClient(srv);
    const login = await stranger.get('/settings/login');
    const noCookie = await stranger.post('/settings/login', { csrf: csrfOf(login.text), email: OWNER, password: PASSWORD }, { headers: { Cookie: '' } });
    assert.equal(noCookie.status, 403);
    const foreign = await stranger.post('/settings/login', { csrf: csrfOf(login.text), email: OWNER, password: PASSWORD }, { origin: 'http://evil.example' });
    assert.equal(foreign.status, 403);
    // Without Origin, a same-origin Referer is accepted (documented fallback).
    const viaReferer = await c.post('/settings/keys', { ...fields, csrf }, { origin: null, headers: { Referer: `${srv.url}/settings/keys` } });
    assert.equal(viaReferer.status, 303);
    const events = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.event === 'csrf.refused');
    assert.ok(events.length >= 10);
  });
});

test('WEB_UI=false: /settings/*, /docs/* and /assets/* answer 404 and no owner link is printed', async () => {
  await withServer(async (srv) => {
    assert.equal(srv.ownerLink, '');
    for (const p of ['/settings/login', '/settings', '/settings/keys', '/docs/x', '/assets/style.css']) {
      const r = await fetch(srv.url + p, { redirect: 'manual' });
      assert.equal(r.status, 404, p);
      await r.text();
    }
    const post = await fetch(srv.url + '/settings/login', { method: 'POST', body: 'email=a', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    assert.equal(post.status, 404);
    await post.text();
    assert.equal((await srv.call('GET', '/api/v1/issues')).status, 200);
  }, { WEB_UI: 'false' });
});
