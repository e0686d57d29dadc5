/**
 * People in the settings area over HTTP (docs/web.md#people): the account page (email and password changes with
 * the current password; other sessions end), the users page for owners (invite → a link shown once → activate →
 * a member, who gets 403 there; remove with a confirm step; the last owner cannot be removed), roles read from
 * records without one as owner, CLI users still made, another workspace's user a 404, and `GET /`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csrfOf, owner, userOf, withServer, WebClient, OWNER, PASSWORD } from './helpers/web.js';

const NEW_PASSWORD = 'a much longer passphrase 42';
const messageOf = (text: string) => /<div class="message (?:error|ok|warn)" role="\w+">([^<]*)<\/div>/.exec(text)?.[1];
const cardText = (text: string) => /<div class="card"><p>([^<]*)<\/p>/.exec(text)?.[1];

test('password change: current password required, other sessions end, then the new one signs in and the old not', async () => {
  await withServer(async (srv) => {
    srv.watch(NEW_PASSWORD);
    const c = await owner(srv);
    const other = new WebClient(srv);
    await other.signIn(OWNER, PASSWORD);
    const page = await c.get('/settings/account');
    assert.equal(page.status, 200);
    assert.match(page.text, /<a href="\/settings\/account" aria-current="page">Account<\/a>/);
    const post = (fields: Record<string, string>) => c.post('/settings/account/password', { csrf: csrfOf(page.text), ...fields });
    const cases: Array<[Record<string, string>, number, string]> = [
      [{ current: '', password: NEW_PASSWORD }, 422, 'Enter your current password and the new one.'],
      [{ current: PASSWORD, password: 'short' }, 422, 'The password must be at least 12 characters long.'],
      [{ current: 'not the password at all', password: NEW_PASSWORD }, 401, 'Your current password is not right.'],
    ];
    for (const [fields, status, text] of cases) {
      const r = await post(fields);
      assert.equal(r.status, status, text);
      assert.equal(messageOf(r.text), text);
    }
    assert.equal((await other.get('/settings/keys')).status, 200, 'a refused change ends nothing');
    assert.equal((await c.post('/settings/account/password', { current: PASSWORD, password: NEW_PASSWORD })).status, 403, 'no csrf');
    const done = await post({ current: PASSWORD, password: NEW_PASSWORD });
    assert.equal(done.status, 303);
    assert.equal(done.location, '/settings/account?password=1');
    assert.equal(messageOf((await c.get(done.location!)).text), 'Your password is changed. Your other sessions are ended.');
    assert.equal((await other.get('/settings/keys')).location, '/settings/login', 'the other session ended');
    // The old password is refused, the new one signs in.
    const old = new WebClient(srv);
    const login = await old.get('/settings/login');
    const refused = await old.post('/settings/login', { csrf: csrfOf(login.text), email: OWNER, password: PASSWORD });
    assert.equal(refused.status, 401);
    assert.equal((await new WebClient(srv).signIn(OWNER, NEW_PASSWORD)).status, 200);
  });
});

test('email change: current password required, the email unique on the server, then sign-in with the new email', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    await userOf(srv, srv.workspaceId, 'taken@example.com');
    const page = await c.get('/settings/account');
    const post = (fields: Record<string, string>) => c.post('/settings/account/email', { csrf: csrfOf(page.text), ...fields });
    const cases: Array<[Record<string, string>, number, string]> = [
      [{ email: '', password: PASSWORD }, 422, 'Enter the new email and your current password.'],
      [{ email: 'no-at-sign', password: PASSWORD }, 422, 'The email must be an address such as ada@example.com.'],
      [{ email: 'TAKEN@example.com', password: PASSWORD }, 409, 'Another user has this email.'],
      [{ email: 'ada@example.com', password: 'wrong password here' }, 401, 'Your current password is not right.'],
    ];
    for (const [fields, status, text] of cases) {
      const r = await post(fields);
      assert.equal(r.status, status, text);
      assert.equal(messageOf(r.text), text);
    }
    // Wrong current passwords count as failed sign-ins of the email: the 10th locks it.
    for (let i = 0; i < 8; i++) assert.equal((await post({ email: 'ada@example.com', password: `wrong password ${i}` })).status, 401);
    const locked = await post({ email: 'ada@example.com', password: 'wrong password 9' });
    assert.equal(locked.status, 429);
    assert.equal(messageOf(locked.text), 'Too many wrong passwords. Try again in 15 minutes.');
    assert.equal(locked.headers.get('retry-after'), '900');
    assert.equal((await post({ email: 'ada@example.com', password: PASSWORD })).status, 429, 'locked: the right password too');
    srv.clock.advance(15 * 60_000);
    const done = await post({ email: 'ada@example.com', password: PASSWORD });
    assert.equal(done.status, 303);
    assert.equal(messageOf((await c.get(done.location!)).text), 'Your email is changed. Sign in with it from now on.');
    assert.match((await c.get('/settings/keys')).text, /<span class="who">ada@example\.com<\/span>/);
    assert.equal((await new WebClient(srv).signIn('ada@example.com', PASSWORD)).status, 200);
  });
});

test('invite → link shown once → activate → a member gets 403 on the users pages; the last owner cannot be removed', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const users = await c.get('/settings/users');
    assert.equal(users.status, 200);
    assert.match(users.text, /<td data-label="Role">owner<\/td>/, 'the bootstrap user (no role stored) is an owner');
    assert.equal(srv.store.userByEmail(OWNER)!.role, undefined, 'its record is not rewritten');
    const csrf = csrfOf(users.text);
    const refusals: Array<[Record<string, string>, number, string]> = [
      [{ email: 'nope', role: 'member' }, 422, 'The email must be an address such as ada@example.com.'],
      [{ email: 'x@example.com', role: 'admin' }, 422, 'The role must be owner or member.'],
      [{ email: OWNER.toUpperCase(), role: 'member' }, 409, 'A user with this email already exists on this server.'],
    ];
    for (const [fields, status, text] of refusals) {
      const r = await c.post('/settings/users', { csrf, ...fields });
      assert.equal(r.status, status, text);
      assert.equal(messageOf(r.text), text);
    }
    const invited = await c.post('/settings/users', { csrf, email: 'member@example.com', role: 'member' });
    assert.equal(invited.status, 303);
    const member = srv.store.userByEmail('member@example.com')!;
    assert.equal(member.role, 'member');
    assert.equal(invited.location, `/settings/users/${member.id}/invited`);
    const shown = await c.get(invited.location!);
    assert.equal(shown.headers.get('cache-control'), 'no-store');
    const link = /id="secret" value="([^"]+)"/.exec(shown.text)![1];
    assert.match(link, new RegExp(`^${srv.publicUrl}/settings/activate\\?token=[0-9A-Za-z]{43}$`));
    srv.watch(new URL(link).searchParams.get('token')!);
    assert.doesNotMatch((await c.get(invited.location!)).text, /activate\?token=/, 'shown once');
    assert.match((await c.get('/settings/users')).text, /member@example\.com<\/td>\n<td data-label="Role">member<\/td>\n<td data-label="Status"><span class="hint">invited/);
    // The member activates and signs in: no Users link, 403 on every users page.
    const m = new WebClient(srv);
    const keys = await m.activateAndSignIn(link, 'member@example.com', PASSWORD);
    assert.equal(keys.status, 200);
    assert.doesNotMatch(keys.text, /href="\/settings\/users"/);
    const mCsrf = csrfOf(keys.text);
    for (const [method, path] of [['GET', '/settings/users'], ['POST', '/settings/users'], ['GET', `/settings/users/${member.id}/remove`],
      ['POST', `/settings/users/${srv.store.userByEmail(OWNER)!.id}/remove`]] as const) {
      const r = method === 'GET' ? await m.get(path) : await m.post(path, { csrf: mCsrf, email: 'y@example.com', role: 'owner' });
      assert.equal(r.status, 403, `${method} ${path}`);
      assert.equal(cardText(r.text), 'Only an owner of this workspace can manage its users.');
    }
    assert.equal(srv.store.userByEmail('y@example.com'), undefined);
    // The member still manages keys.
    assert.equal((await m.get('/settings/keys')).status, 200);
    // The last owner: refused on the confirm page and the POST.
    const ownerId = srv.store.userByEmail(OWNER)!.id;
    for (const r of [await c.get(`/settings/users/${ownerId}/remove`), await c.post(`/settings/users/${ownerId}/remove`, { csrf })]) {
      assert.equal(r.status, 409);
      assert.equal(cardText(r.text), 'The last owner of this workspace cannot be removed. Invite another owner first.');
    }
    assert.ok(srv.store.userByEmail(OWNER));
    // Remove the member: confirm, then its session ends and it can no longer sign in.
    const confirm = await c.get(`/settings/users/${member.id}/remove`);
    assert.equal(confirm.status, 200);
    assert.match(confirm.text, /<h1>Remove this user\?<\/h1>/);
    const removed = await c.post(`/settings/users/${member.id}/remove`, { csrf });
    assert.equal(removed.status, 303);
    assert.equal(removed.location, '/settings/users?removed=1');
    assert.equal(messageOf((await c.get(removed.location!)).text), 'The user is removed.');
    assert.equal(srv.store.userByEmail('member@example.com'), undefined);
    assert.equal((await m.get('/settings/keys')).location, '/settings/login', 'its session ended');
    // Another workspace's user: 404 like an unknown id.
    const other = await srv.newWorkspace('Other');
    await userOf(srv, other.workspaceId, 'them@example.com');
    const theirs = srv.store.userByEmail('them@example.com')!;
    for (const path of [`/settings/users/${theirs.id}/remove`, `/settings/users/${theirs.id}/invited`]) {
      const r = await c.get(path);
      assert.equal(r.status, 404, path);
      assert.equal(cardText(r.text), 'There is no such user in this workspace.');
    }
    assert.equal((await c.post(`/settings/users/${theirs.id}/remove`, { csrf })).status, 404);
    assert.ok(srv.store.userByEmail('them@example.com'));
  });
});

test('CLI users are owners; an invited owner can remove the first one; GET / is the landing page', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const cli = await srv.admin.execute('user.create', { workspace: srv.workspaceId, email: 'cli@example.com' }) as Record<string, unknown>;
    assert.deepEqual(Object.keys(cli).sort(), ['activatedAt', 'activationUrl', 'createdAt', 'email', 'id', 'object', 'workspaceId']);
    srv.watch(new URL(cli.activationUrl as string).searchParams.get('token')!);
    const second = new WebClient(srv);
    await second.activateAndSignIn(cli.activationUrl as string, 'cli@example.com', PASSWORD);
    const page = await second.get('/settings/users');
    assert.equal(page.status, 200, 'a CLI user is an owner');
    const ownerId = srv.store.userByEmail(OWNER)!.id;
    assert.equal((await second.post(`/settings/users/${ownerId}/remove`, { csrf: csrfOf(page.text) })).status, 303);
    assert.equal((await c.get('/settings/keys')).location, '/settings/login');
    const home = await new WebClient(srv).get('/');
    assert.equal(home.status, 200);
    for (const href of ['/settings', '/docs', '/api/v1/openapi.json']) assert.ok(home.text.includes(`href="${href}"`), href);
  });
  await withServer(async (srv) => {
    const r = await fetch(srv.url + '/');
    assert.equal(r.status, 404);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    assert.equal((await r.json() as { code: string }).code, 'not_found');
  }, { WEB_UI: 'false' });
});
