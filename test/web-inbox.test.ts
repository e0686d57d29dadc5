/**
 * The inbox of the settings area over HTTP (docs/web.md#inbox): the list with its filters, one conversation with
 * its messages and suggested answers, a reply (the API sees it), a status change, 422s with exact messages, CSRF,
 * escaping of customer text, another workspace's conversation 404, a member like an owner, and the live stream
 * the page script follows (session cookie; an event arrives after a reply).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csrfOf, withServer, owner, userOf, assertSecurityHeaders } from './helpers/web.js';
import type { TestServer } from './helpers/server.js';

const EVIL = '<img src=x onerror=alert(1)>';
const ESCAPED = '&lt;img src=x onerror=alert(1)&gt;';

interface Conv { id: string; status: string; channel: string }
interface Msg { id: string; role: string; body: string }

async function conversation(srv: TestServer, subject: string, body: string, key?: string): Promise<Conv> {
  const c = await srv.call<{ conversation: Conv }>('POST', '/api/v1/conversations', { key,
    body: { subject, customer: { email: 'ada@example.com', name: `Ada ${EVIL}` } } });
  assert.equal(c.status, 201, c.text);
  const m = await srv.call('POST', `/api/v1/conversations/${c.body.conversation.id}/messages`, { key,
    body: { role: 'user', body } });
  assert.equal(m.status, 201, m.text);
  return c.body.conversation;
}

test('inbox: list with filters, a conversation with its messages escaped, reply, status, 422, CSRF', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const empty = await c.get('/settings/inbox');
    assert.equal(empty.status, 200);
    assertSecurityHeaders(empty, 'inbox');
    assert.match(empty.text, /<p class="empty">No conversation yet\.<\/p>/);
    assert.match(empty.text, /<script src="\/assets\/inbox\.js" defer><\/script>/);
    assert.match(empty.text, /data-live="\/settings\/inbox\/stream"/);
    const conv = await conversation(srv, `Refund ${EVIL}`, `Where is my refund? ${EVIL}\nsecond line`);
    const other = await conversation(srv, 'Solved one', 'thanks');
    assert.equal((await srv.call('PATCH', `/api/v1/conversations/${other.id}`, { body: { status: 'solved' } })).status,
      200);

    const list = await c.get('/settings/inbox');
    assert.ok(!list.text.includes(EVIL), 'customer text is escaped in the list');
    assert.ok(list.text.includes(`Refund ${ESCAPED}`) && list.text.includes(`Ada ${ESCAPED}`));
    assert.ok(list.text.includes(`href="/settings/inbox/${conv.id}"`) && list.text.includes(`/settings/inbox/${other.id}`));
    const open = await c.get('/settings/inbox?status=open');
    assert.ok(open.text.includes(conv.id) && !open.text.includes(other.id), 'status filter');
    assert.match(open.text, /<option value="open" selected>open<\/option>/);
    assert.ok(open.text.includes(`href="/settings/inbox/${conv.id}?status=open"`), 'the filters follow the links');
    const chat = await c.get('/settings/inbox?channel=live-chat');
    assert.match(chat.text, /No conversation matches these filters\./);
    const person = await c.get('/settings/inbox?person=1');
    assert.match(person.text, /No conversation matches these filters\./, 'no hand-over was asked for');
    assert.equal((await c.get('/settings/inbox?status=bogus&channel=x')).status, 200, 'unknown filter values are ignored');

    const page = await c.get(`/settings/inbox/${conv.id}`);
    assert.equal(page.status, 200);
    assert.ok(!page.text.includes(EVIL), 'customer text is escaped in the conversation');
    assert.ok(page.text.includes(`<p class="msg-body">Where is my refund? ${ESCAPED}\nsecond line</p>`));
    assert.ok(page.text.includes(`Ada ${ESCAPED} (customer)`), 'the author of a customer message');
    assert.match(page.text, /<option value="open" selected>open<\/option>/);
    const csrf = csrfOf(page.text);

    // Refusals: exact messages, nothing changed.
    const blank = await c.post(`/settings/inbox/${conv.id}/reply`, { csrf, body: '   ' });
    assert.equal(blank.status, 422);
    assert.match(blank.text, /<div class="message error" role="alert">Write a reply first\.<\/div>/);
    const long = await c.post(`/settings/inbox/${conv.id}/reply`, { csrf, body: 'x'.repeat(4001) });
    assert.equal(long.status, 422);
    assert.match(long.text, /A reply must be at most 4000 characters long\./);
    assert.ok(long.text.includes(`>${'x'.repeat(4001)}</textarea>`), 'what was typed comes back');
    const badStatus = await c.post(`/settings/inbox/${conv.id}/status`, { csrf, status: 'closed' });
    assert.equal(badStatus.status, 422);
    assert.match(badStatus.text, /The status must be one of open, waiting, solved\./);
    const noCsrf = await c.post(`/settings/inbox/${conv.id}/reply`, { body: 'hello' });
    assert.equal(noCsrf.status, 403);
    assert.match(noCsrf.text, /This form has expired or did not come from this browser/);
    const foreign = await c.post(`/settings/inbox/${conv.id}/reply`, { csrf, body: 'hello' },
      { origin: 'https://evil.example' });
    assert.equal(foreign.status, 403);
    const before = await srv.call<{ messages: Msg[] }>('GET', `/api/v1/conversations/${conv.id}/messages`);
    assert.equal(before.body.messages.length, 1, 'no refused form added a message');

    // A reply: 303 to the conversation, seen by the API as support's message; the status moves to waiting.
    const sent = await c.post(`/settings/inbox/${conv.id}/reply`, { csrf, body: `We sent it ${EVIL}` });
    assert.equal(sent.status, 303, sent.text.slice(0, 300));
    assert.match(sent.location!, new RegExp(`^/settings/inbox/${conv.id}#m-[0-9a-f-]+$`));
    const after = await srv.call<{ messages: Msg[] }>('GET', `/api/v1/conversations/${conv.id}/messages`);
    assert.deepEqual(after.body.messages.map((m) => [m.role, m.body]), [['user', `Where is my refund? ${EVIL}\nsecond line`],
      ['agent', `We sent it ${EVIL}`]]);
    const shown = await c.get(`/settings/inbox/${conv.id}`);
    assert.ok(shown.text.includes(`<p class="msg-body">We sent it ${ESCAPED}</p>`));
    assert.match(shown.text, /<option value="waiting" selected>waiting<\/option>/);

    // Status change.
    const solved = await c.post(`/settings/inbox/${conv.id}/status`, { csrf, status: 'solved' });
    assert.equal(solved.status, 303);
    assert.equal(solved.location, `/settings/inbox/${conv.id}`);
    const api = await srv.call<{ conversation: Conv & { closedAt?: string } }>('GET', `/api/v1/conversations/${conv.id}`);
    assert.equal(api.body.conversation.status, 'solved');
    assert.ok(api.body.conversation.closedAt);
  });
});

test('inbox: another workspace\'s conversation answers 404 like an unknown id; a member uses the inbox', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const other = await srv.newWorkspace('Other');
    const theirs = await conversation(srv, 'Their secret subject', 'their body', other.key);
    const list = await c.get('/settings/inbox');
    assert.ok(!list.text.includes('Their secret subject'));
    const csrf = csrfOf(list.text);
    const foreign = await c.get(`/settings/inbox/${theirs.id}`);
    const unknown = await c.get('/settings/inbox/00000000-0000-4000-8000-000000000000');
    assert.equal(foreign.status, 404);
    assert.match(foreign.text, /There is no such conversation in this workspace\./);
    assert.equal(foreign.text.replace(/[0-9a-f-]{36}/g, ''), unknown.text.replace(/[0-9a-f-]{36}/g, ''));
    assert.equal((await c.post(`/settings/inbox/${theirs.id}/reply`, { csrf, body: 'hi' })).status, 404);
    assert.equal((await c.post(`/settings/inbox/${theirs.id}/status`, { csrf, status: 'solved' })).status, 404);
    const still = await srv.call<{ messages: Msg[] }>('GET', `/api/v1/conversations/${theirs.id}/messages`,
      { key: other.key });
    assert.equal(still.body.messages.length, 1);

    // A member of the workspace reads and replies like an owner.
    const mine = await conversation(srv, 'For the member', 'hello');
    const member = await userOf(srv, srv.workspaceId, 'member@example.com');
    const page = await member.get(`/settings/inbox/${mine.id}`);
    assert.equal(page.status, 200);
    const r = await member.post(`/settings/inbox/${mine.id}/reply`, { csrf: csrfOf(page.text), body: 'from a member' });
    assert.equal(r.status, 303);
  });
});

test('inbox stream: session cookie only, 406 without text/event-stream, events of the workspace after a reply', async () => {
  await withServer(async (srv) => {
    const anon = await fetch(`${srv.url}/settings/inbox/stream`, { headers: { Accept: 'text/event-stream' },
      redirect: 'manual' });
    assert.equal(anon.status, 303);
    assert.equal(anon.headers.get('location'), '/settings/login');
    const c = await owner(srv);
    const plain = await c.get('/settings/inbox/stream');
    assert.equal(plain.status, 406);
    assert.match(plain.text, /This address is the inbox&#39;s live event stream/);
    const conv = await conversation(srv, 'Live', 'first');
    const ac = new AbortController();
    const res = await fetch(`${srv.url}/settings/inbox/stream`, { signal: ac.signal, headers: {
      Accept: 'text/event-stream', Cookie: `sw_session=${c.jar.get('sw_session')}` } });
    try {
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      assert.equal(res.headers.get('cache-control'), 'no-store');
      const reader = res.body!.getReader();
      let text = '';
      const page = await c.get(`/settings/inbox/${conv.id}`);
      await c.post(`/settings/inbox/${conv.id}/reply`, { csrf: csrfOf(page.text), body: 'live reply' });
      while (!text.includes('live reply')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString('utf8');
      }
      assert.match(text, /^retry: 2000\n\n/);
      assert.match(text, /event: message\.created\ndata: \{[^\n]*"live reply"/);
      assert.ok(!text.includes('"body":"first"'), 'the stream starts from now, not with older events');
    } finally { ac.abort(); }
  });
});
