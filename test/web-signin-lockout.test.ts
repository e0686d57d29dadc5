/**
 * No one can lock the owner out (docs/security.md#lockout): failed sign-ins lock an email for
 * unknown browsers, but a browser that signed in before (its `sw_device` cookie) still signs in
 * with the right password; failures per client address lock the address too. On the injected
 * clock; clients are told apart by X-Forwarded-For from a trusted proxy.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from './helpers/server.js';
import { WebClient, csrfOf, OWNER, PASSWORD, type WebPage } from './helpers/web.js';

const problem = (p: WebPage) => /class="message error"[^>]*>([^<]*)</.exec(p.text)?.[1];

/** Signs in from client address `ip` (X-Forwarded-For through the trusted proxy). */
async function signIn(c: WebClient, ip: string, email: string, password: string): Promise<WebPage> {
  const headers = { 'X-Forwarded-For': ip };
  const page = await c.get('/settings/login', headers);
  return c.post('/settings/login', { csrf: csrfOf(page.text), email, password }, { headers });
}

test('an attacker locks the owner\'s email; the owner\'s known browser still signs in, an unknown one is refused', async () => {
  const srv = await startTestServer({ env: { TRUST_PROXY: '127.0.0.1' }, captureLogs: true });
  try {
    const known = new WebClient(srv);
    await known.activateAndSignIn(srv.ownerLink, OWNER, PASSWORD);
    const device = known.jar.get('sw_device');
    assert.match(device ?? '', /^[0-9A-Za-z]{22}\.[0-9a-z]+\.[0-9A-Za-z_-]{43}$/);
    await known.post('/settings/logout', { csrf: csrfOf((await known.get('/settings/keys')).text) });
    const attacker = new WebClient(srv);
    for (let i = 0; i < 9; i++) assert.equal((await signIn(attacker, '203.0.113.9', OWNER, `wrong password ${i}`)).status, 401);
    const tenth = await signIn(attacker, '203.0.113.9', OWNER, 'wrong password 9');
    assert.equal(tenth.status, 429);
    assert.equal(problem(tenth), 'Too many failed sign-ins for this email (10 within 15 minutes). Try again in 15 minutes.');
    assert.equal(tenth.headers.get('retry-after'), '900');
    // An unknown browser, from another address, with the right password: refused while locked.
    const stranger = await signIn(new WebClient(srv), '198.51.100.7', OWNER, PASSWORD);
    assert.equal(stranger.status, 429);
    assert.equal(problem(stranger), 'Too many failed sign-ins for this email (10 within 15 minutes). Try again in 15 minutes.');
    // A device cookie of another user, or a forged one, is an unknown browser.
    const forged = new WebClient(srv);
    forged.jar.set('sw_device', device!.slice(0, -2) + (device!.endsWith('A') ? 'BB' : 'AA'));
    assert.equal((await signIn(forged, '192.0.2.2', OWNER, PASSWORD)).status, 429);
    // The owner's browser that signed in before: through (which clears the email's failures), its device cookie renewed.
    const owner = await signIn(known, '192.0.2.1', OWNER, PASSWORD);
    assert.equal(owner.status, 303);
    assert.equal(owner.location, '/settings/keys');
    assert.match(owner.setCookies.find((x) => x.startsWith('sw_device='))!, /^sw_device=[^;]+; HttpOnly; SameSite=Strict; Path=\/settings\/login; Max-Age=7776000$/);
    // The lock ends after 15 min.
    srv.clock.advance(15 * 60_000);
    assert.equal((await signIn(new WebClient(srv), '198.51.100.7', OWNER, PASSWORD)).status, 303);
  } finally { await srv.close(); }
});

test('per-address limits: 30 failures lock the address for unknown browsers, 30 attempts a minute; a known browser there is let through', async () => {
  const srv = await startTestServer({ env: { TRUST_PROXY: '127.0.0.1' }, captureLogs: true });
  try {
    const known = new WebClient(srv);
    await known.activateAndSignIn(srv.ownerLink, OWNER, PASSWORD);
    await known.post('/settings/logout', { csrf: csrfOf((await known.get('/settings/keys')).text) });
    const attacker = new WebClient(srv);
    const ip = '203.0.113.50';
    // 30 failures within 15 min lock the address.
    for (let i = 0; i < 29; i++) assert.equal((await signIn(attacker, ip, `user${i}@example.com`, 'wrong password x')).status, 401);
    const thirtieth = await signIn(attacker, ip, 'user29@example.com', 'wrong password x');
    assert.equal(thirtieth.status, 429);
    assert.equal(problem(thirtieth), 'Too many sign-ins from this address. Try again in 15 minutes.');
    assert.equal(thirtieth.headers.get('retry-after'), '900');
    srv.clock.advance(60_000);
    // Locked: the right password from an unknown browser at that address too; not another address.
    assert.equal((await signIn(new WebClient(srv), ip, OWNER, PASSWORD)).status, 429);
    assert.equal((await signIn(new WebClient(srv), '203.0.113.51', OWNER, PASSWORD)).status, 303);
    // The owner's known browser behind the same address: through.
    assert.equal((await signIn(known, ip, OWNER, PASSWORD)).status, 303);
    // 30 attempts a minute, whatever their outcome: the 31st is refused without a hash.
    for (let i = 0; i < 30; i++) assert.equal((await signIn(new WebClient(srv), '203.0.113.60', OWNER, PASSWORD)).status, 303);
    const fast = await signIn(new WebClient(srv), '203.0.113.60', OWNER, PASSWORD);
    assert.equal(fast.status, 429);
    assert.equal(problem(fast), 'Too many sign-ins from this address. Try again in 1 minute.');
    assert.equal(fast.headers.get('retry-after'), '2');
    // Refused again: held like the first, and not logged again within the minute.
    assert.equal((await signIn(new WebClient(srv), '203.0.113.60', OWNER, PASSWORD)).status, 429);
    const events = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'security event' && l.event === 'signin.limited');
    assert.deepEqual(events.map((e) => e.client), ['203.0.113.50', '203.0.113.60']);
  } finally { await srv.close(); }
});
