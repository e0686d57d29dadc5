/**
 * The secrets scan of every answer (docs/security.md#secrets-in-answers-and-logs): one function,
 * `scanAnswer` in test/helpers/server.ts, checks the API's answers (`srv.call`) and the
 * settings area's pages (`WebClient`, and the fuzzer's page requests) alike. These tests show
 * that it fails on a page holding a watched secret, in the body or a header; that each secret
 * is allowed only in the one answer that shows it by design (the new key, a new webhook
 * signing secret, the activation page's own token), and is watched from then on; and that the
 * pages a real client receives go through it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { scanAnswer, type Answer } from './helpers/server.js';
import { WebClient, csrfOf, owner, shownKey, withServer } from './helpers/web.js';

const KEY = `svck_${'Ab3'.repeat(14)}x`; // 43 base62 characters
const WHSEC = `whsec_${'Q+/a'.repeat(10)}abc=`;
const PAGE = (inner: string) => `<!doctype html><html><body><main>${inner}</main></body></html>`;
const answer = (method: string, target: string, text: string, status = 200, headers: Record<string, string> = {}): Answer =>
  ({ method, target, status, text, headers: new Headers({ 'Content-Type': 'text/html; charset=utf-8', ...headers }) });

test('the scan fails a page holding a watched secret, in its body or a header, but not in Set-Cookie', () => {
  const watched = new Set(['a watched password 1234']);
  scanAnswer(watched, answer('GET', '/settings/keys', PAGE('nothing secret')));
  assert.throws(() => scanAnswer(watched, answer('GET', '/settings/keys', PAGE('<td>a watched password 1234</td>'))),
    /^Error: SECRET LEAK: the answer to GET \/settings\/keys contains a key or credential \(a watc…\)$/);
  assert.throws(() => scanAnswer(watched, answer('GET', '/settings/keys', PAGE(''), 303, { Location: '/x?p=a watched password 1234' })), /SECRET LEAK/);
  // A Set-Cookie carries the client's own new token by design.
  const token = 'T'.repeat(43);
  watched.add(token);
  scanAnswer(watched, answer('POST', '/settings/login', '', 303, { 'Set-Cookie': `sw_session=${token}; HttpOnly` }));
  assert.throws(() => scanAnswer(watched, answer('GET', '/settings/keys', PAGE(token))), /SECRET LEAK/);
});

test('a new key and a webhook secret are allowed once, on the answer that shows them, then watched', () => {
  const watched = new Set<string>();
  // An API key or a webhook secret of any value is refused outside its one answer…
  assert.throws(() => scanAnswer(watched, answer('GET', '/settings/keys', PAGE(KEY))), /SECRET LEAK: .*contains an API key/);
  assert.throws(() => scanAnswer(watched, answer('POST', '/settings/keys', PAGE(KEY), 422)), /SECRET LEAK: .*contains an API key/);
  assert.throws(() => scanAnswer(watched, answer('POST', '/settings/webhooks', PAGE(KEY))), /SECRET LEAK: .*contains an API key/);
  assert.throws(() => scanAnswer(watched, answer('POST', '/settings/keys', PAGE(WHSEC))), /SECRET LEAK: .*contains a webhook secret/);
  assert.throws(() => scanAnswer(watched, answer('POST', '/settings/keys', PAGE(KEY))), /SECRET LEAK: .*contains an API key/,
    'the create form answers 303; only the page it leads to shows the key');
  // …and allowed on it, after which it is watched: a later page holding it fails.
  scanAnswer(watched, answer('GET', '/settings/keys/K1/created', PAGE(`<input id="secret" value="${KEY}">`)));
  assert.ok(watched.has(KEY));
  assert.throws(() => scanAnswer(watched, answer('GET', '/settings/keys', PAGE(`<code>${KEY}</code>`))), /SECRET LEAK: .*contains a key or credential \(svck_A…\)/);
  assert.throws(() => scanAnswer(watched, answer('GET', '/settings/keys/K1/created', PAGE(KEY))), /SECRET LEAK/, 'a reload cannot show it again');
  scanAnswer(watched, answer('GET', '/settings/webhooks/W1/created', PAGE(`<input id="secret" value="${WHSEC}">`)));
  assert.ok(watched.has(WHSEC));
  assert.throws(() => scanAnswer(watched, answer('GET', '/settings/webhooks', PAGE(WHSEC))), /SECRET LEAK/);
  // The API's create answer shows one too; its idempotent replay (null) and the page after do not.
  const other = WHSEC.replace('abc', 'abd');
  scanAnswer(watched, answer('POST', '/api/v1/webhook-endpoints', JSON.stringify({ webhookEndpoint: { secret: other } }), 201));
  assert.throws(() => scanAnswer(watched, answer('GET', '/api/v1/webhook-endpoints', JSON.stringify({ secret: other }))), /SECRET LEAK/);
});

test('the activation page may hold its own token (its form posts back to its address), never another one', () => {
  const mine = 'M'.repeat(43), theirs = 'N'.repeat(43);
  const watched = new Set([mine, theirs]);
  const form = (t: string) => PAGE(`<form method="post" action="/settings/activate?token=${t}">`);
  scanAnswer(watched, answer('GET', `/settings/activate?token=${mine}`, form(mine)));
  scanAnswer(watched, answer('POST', `/settings/activate?token=${mine}`, form(mine), 422));
  assert.throws(() => scanAnswer(watched, answer('GET', `/settings/activate?token=${mine}`, form(theirs))), /SECRET LEAK/);
  assert.throws(() => scanAnswer(watched, answer('GET', '/settings/login', form(mine))), /SECRET LEAK/);
});

test('every page a WebClient receives is scanned: a watched secret echoed by a page fails; a shown key is watched', async () => {
  await withServer(async (srv) => {
    // The sign-in page fills in the email typed: typed as the email, a watched secret comes back
    // in the 401 page (nothing stores or logs an email no user has).
    const planted = 'planted secret 0123456789';
    srv.watch(planted);
    const anon = new WebClient(srv);
    const login = await anon.get('/settings/login');
    await assert.rejects(anon.post('/settings/login', { csrf: csrfOf(login.text), email: planted, password: 'not the password 123' }),
      /^Error: SECRET LEAK: the answer to POST \/settings\/login contains a key or credential \(plante…\)$/);
    // The key shown on the create answer is watched without the test saying so.
    const c = await owner(srv);
    const posted = await c.submit('/settings/keys', { name: 'shown once', scopes: '*' });
    assert.equal(posted.status, 303);
    const made = await c.get(posted.location!);
    assert.equal(made.status, 200);
    const key = shownKey(made.text);
    assert.throws(() => srv.scan(answer('GET', '/settings/keys', PAGE(key))), /SECRET LEAK/);
    assert.ok(!(await c.get('/settings/keys')).text.includes(key));
  });
});
