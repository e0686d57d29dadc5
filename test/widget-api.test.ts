/**
 * The widget API (docs/api.md#live-chat): sessions with a widget key, the visitor's own conversations and messages,
 * hand-over, identity tokens, CORS, the limits, and which credentials each surface refuses.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type Space } from './helpers/server.js';
import { signIdentity } from '../src/areas/widget/jwt.js';

let srv: TestServer;
before(async () => { srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } }); });
after(async () => { await srv.close(); });

const ORIGIN = 'https://shop.example';
const W = '/widget/v1';
const WIDGET_UNAUTHORIZED = (detail: string) => ({ code: 'widget_unauthorized', error: `A valid widget key or widget session is required: ${detail}` });
const NOT_FOUND = { code: 'not_found', error: 'Record not found.' };

interface Widget { space: Space; agentId: string; widgetKey: string }

/** A workspace with an agent allowing ORIGIN. */
async function widget(origins: string[] = [ORIGIN]): Promise<Widget> {
  const space = await srv.space();
  const agent = await srv.admin.createDefinition('agent', space.workspaceId, { name: 'Front desk' }) as any;
  const r = await space.call('PATCH', `/api/v1/agents/${agent.id}`, { body: { allowedOrigins: origins } });
  assert.equal(r.status, 200, r.text);
  return { space, agentId: agent.id, widgetKey: agent.widgetKey };
}

async function session(w: Widget, body: unknown = {}): Promise<{ token: string; body: any }> {
  const r = await srv.call<any>('POST', `${W}/sessions`, { key: w.widgetKey, body, headers: { Origin: ORIGIN } });
  assert.equal(r.status, 201, r.text);
  srv.watch(r.body.session.token);
  return { token: r.body.session.token, body: r.body };
}

const as = (token: string) => ({ key: token, headers: { Origin: ORIGIN } });

describe('PATCH /api/v1/agents/{id} allowedOrigins', () => {
  test('exact origins are kept canonical (lower case, default port dropped), repeats once', async () => {
    const w = await widget(['https://Shop.Example:443', 'http://localhost:8080', 'https://shop.example']);
    const r = await w.space.call<any>('GET', `/api/v1/agents/${w.agentId}`);
    assert.deepEqual(r.body.agent.allowedOrigins, ['https://shop.example', 'http://localhost:8080']);
  });

  test('an origin with a path, another scheme, or no host → 400 naming the entry; nothing changed', async () => {
    const w = await widget();
    for (const [bad, i] of [['https://shop.example/', 0], ['ftp://shop.example', 0], ['https://', 0], ['shop.example', 0]] as const) {
      const r = await w.space.call('PATCH', `/api/v1/agents/${w.agentId}`, { body: { allowedOrigins: [bad] } });
      assert.equal(r.status, 400, bad);
      assert.deepEqual(r.body, { code: 'invalid_request', error: `Request body is invalid: allowedOrigins[${i}] must be an origin such as https://shop.example (http or https, a host, an optional port, no path).` });
    }
    const r = await w.space.call<any>('GET', `/api/v1/agents/${w.agentId}`);
    assert.deepEqual(r.body.agent.allowedOrigins, [ORIGIN]);
  });

  test('more than 20 origins → 400', async () => {
    const w = await widget();
    const r = await w.space.call('PATCH', `/api/v1/agents/${w.agentId}`, { body: { allowedOrigins: Array.from({ length: 21 }, (_, i) => `https://s${i}.example`) } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: allowedOrigins must have at most 20 items.' });
  });

  test('PATCH with only agents:read → 403 insufficient_scope', async () => {
    const w = await widget();
    const key = await srv.newKey({ scopes: 'agents:read', workspaceId: w.space.workspaceId });
    const r = await srv.call('PATCH', `/api/v1/agents/${w.agentId}`, { key, body: { name: 'X' } });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs agents:write.' });
  });
});

describe('POST /widget/v1/sessions', () => {
  test('anonymous → 201 svcs_ token naming the workspace, 24 h, a vis_ visitor', async () => {
    const w = await widget();
    const { token, body } = await session(w);
    assert.match(token, new RegExp(`^svcs_${w.space.workspaceId}_[0-9A-Za-z]{43}$`));
    assert.match(body.session.visitorId, /^vis_[0-9A-Za-z]{22}$/);
    assert.deepEqual(body.session.customer, { id: body.session.visitorId, name: null, email: null, identitySource: 'anonymous' });
    assert.equal(body.session.expiresAt, new Date(srv.clock.now() + 24 * 3600_000).toISOString());
  });

  test('the same visitorId again → the same customer and its conversations', async () => {
    const w = await widget();
    const a = await session(w);
    await srv.call('POST', `${W}/conversations`, { ...as(a.token), body: { body: 'Hello' } });
    const b = await session(w, { visitorId: a.body.session.visitorId });
    const list = await srv.call<any>('GET', `${W}/conversations`, as(b.token));
    assert.equal(list.body.conversations.length, 1);
  });

  test('a visitorId the server did not make → 400 exact', async () => {
    const w = await widget();
    const r = await srv.call('POST', `${W}/sessions`, { key: w.widgetKey, body: { visitorId: 'guess' }, headers: { Origin: ORIGIN } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: visitorId must be a visitorId this server gave (vis_ and 22 letters or digits).' });
  });

  test('an API key (svck_) on /widget/v1 → 401; a widget key or session on /api/v1 → 401', async () => {
    const w = await widget();
    const r = await srv.call('POST', `${W}/sessions`, { key: w.space.key, body: {}, headers: { Origin: ORIGIN } });
    assert.equal(r.status, 401);
    assert.deepEqual(r.body, WIDGET_UNAUTHORIZED("send Authorization: Bearer svcw_… (the agent's widget key)."));
    const s = await session(w);
    const c = await srv.call('GET', `${W}/conversations`, { key: w.space.key, headers: { Origin: ORIGIN } });
    assert.deepEqual(c.body, WIDGET_UNAUTHORIZED('send Authorization: Bearer svcs_… (a session from POST /widget/v1/sessions).'));
    for (const key of [w.widgetKey, s.token]) {
      const api = await srv.call('GET', '/api/v1/conversations', { key });
      assert.equal(api.status, 401);
      assert.deepEqual(api.body, { code: 'unauthorized', error: 'A valid workspace API key is required.' });
    }
  });

  test('an agent without allowed origins → 403 origin_not_allowed; a disabled agent → 401', async () => {
    const w = await widget([]);
    const r = await srv.call('POST', `${W}/sessions`, { key: w.widgetKey, body: {} });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { code: 'origin_not_allowed', error: "This origin is not allowed to use this widget: the agent allows no origins." });
    const v = await widget();
    await v.space.call('PATCH', `/api/v1/agents/${v.agentId}`, { body: { enabled: false } });
    const d = await srv.call('POST', `${W}/sessions`, { key: v.widgetKey, body: {}, headers: { Origin: ORIGIN } });
    assert.equal(d.status, 401);
    assert.deepEqual(d.body, WIDGET_UNAUTHORIZED('the agent is disabled.'));
  });
});

describe('identity tokens', () => {
  const now = () => Math.floor(srv.clock.now() / 1000);
  async function withSecret(): Promise<{ w: Widget; secret: string }> {
    const w = await widget();
    const { secret } = await srv.admin.identitySecret(w.space.workspaceId);
    srv.watch(secret);
    assert.match(secret, /^svci_[0-9A-Za-z]{43}$/);
    return { w, secret };
  }
  const refused = async (w: Widget, identity: string, detail: string) => {
    const r = await srv.call('POST', `${W}/sessions`, { key: w.widgetKey, body: { identity }, headers: { Origin: ORIGIN } });
    assert.equal(r.status, 401, identity);
    assert.deepEqual(r.body, { code: 'invalid_identity', error: `The identity token could not be verified: ${detail}` });
  };

  test('a valid HS256 token → a verified customer with its claims', async () => {
    const { w, secret } = await withSecret();
    const { body } = await session(w, { identity: signIdentity({ sub: 'u-42', email: 'ada@example.com', name: 'Ada', exp: now() + 3600 }, secret) });
    assert.deepEqual(body.session.customer, { id: 'u-42', name: 'Ada', email: 'ada@example.com', identitySource: 'verified' });
  });

  test('forged, expired, alg none, too far ahead, without sub, malformed → 401 invalid_identity exact', async () => {
    const { w, secret } = await withSecret();
    await refused(w, signIdentity({ sub: 'u', exp: now() + 60 }, 'svci_wrong'), "the identity token's signature does not match the workspace's identity secret.");
    await refused(w, signIdentity({ sub: 'u', exp: now() - 61 }, secret), 'the identity token has expired.');
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'u', exp: now() + 60 })).toString('base64url')}.`;
    await refused(w, none, 'the identity token must be signed with HS256.');
    await refused(w, signIdentity({ sub: 'u', exp: now() + 60 }, secret, 'HS512'), 'the identity token must be signed with HS256.');
    await refused(w, signIdentity({ sub: 'u', exp: now() + 25 * 3600 }, secret), 'the identity token expires more than 24 h ahead.');
    await refused(w, signIdentity({ exp: now() + 60 }, secret), 'the identity token has no sub claim.');
    await refused(w, signIdentity({ sub: 'u' }, secret), 'the identity token has no exp claim (seconds since the epoch).');
    await refused(w, 'not.a.jwt', "the identity token's header is not JSON.");
    await refused(w, 'n$t.a.b', "the identity token's header is not base64url.");
    await refused(w, 'abc', 'the identity token is not a JWT.');
  });

  test('60 s of skew: expired 30 s ago → still accepted', async () => {
    const { w, secret } = await withSecret();
    await session(w, { identity: signIdentity({ sub: 'u', exp: now() - 30 }, secret) });
  });

  test('no identity secret in the workspace → 401 invalid_identity', async () => {
    const w = await widget();
    await refused(w, signIdentity({ sub: 'u', exp: now() + 60 }, 'x'), 'the workspace has no identity secret.');
  });
});

describe('conversations of the visitor', () => {
  test('create, list, messages, reply from the API → author customer / api; another visitor → 404', async () => {
    const w = await widget();
    const a = await session(w);
    const c = await srv.call<any>('POST', `${W}/conversations`, { ...as(a.token), body: { body: 'Where is my order?' } });
    assert.equal(c.status, 201, c.text);
    const conv = c.body.conversation;
    assert.equal(conv.subject, 'Where is my order?');
    assert.equal(conv.status, 'open');
    const api = await w.space.call<any>('GET', `/api/v1/conversations/${conv.id}`);
    assert.equal(api.body.conversation.channel, 'live-chat');
    assert.deepEqual(api.body.conversation.customer, { id: a.body.session.visitorId, identitySource: 'anonymous' });
    const reply = await w.space.call<any>('POST', `/api/v1/conversations/${conv.id}/messages`, { body: { role: 'agent', body: 'On its way.' } });
    assert.equal(reply.body.message.author.type, 'api');
    const msgs = await srv.call<any>('GET', `${W}/conversations/${conv.id}/messages`, as(a.token));
    assert.deepEqual(msgs.body.messages.map((m: any) => [m.author, m.body]), [[{ type: 'customer' }, 'Where is my order?'], [{ type: 'api' }, 'On its way.']]);
    const b = await session(w);
    for (const [method, path, body] of [['GET', `${W}/conversations/${conv.id}/messages`, undefined], ['POST', `${W}/conversations/${conv.id}/messages`, { body: 'hi' }], ['POST', `${W}/conversations/${conv.id}/handoff`, undefined]] as const) {
      const r = await srv.call(method, path, { ...as(b.token), body });
      assert.equal(r.status, 404, path);
      assert.deepEqual(r.body, NOT_FOUND);
    }
    assert.deepEqual((await srv.call<any>('GET', `${W}/conversations`, as(b.token))).body.conversations, []);
  });

  test('a body of 4,001 characters → 400 exact; 4,000 → 201', async () => {
    const w = await widget();
    const a = await session(w);
    const r = await srv.call('POST', `${W}/conversations`, { ...as(a.token), body: { body: 'x'.repeat(4001) } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: body must be 1 to 4000 characters.' });
    const ok = await srv.call('POST', `${W}/conversations`, { ...as(a.token), body: { body: 'x'.repeat(4000) } });
    assert.equal(ok.status, 201);
  });

  test('hand-over from the widget and the API: reason kept, first requestedAt kept, event once', async () => {
    const w = await widget();
    const a = await session(w);
    const conv = (await srv.call<any>('POST', `${W}/conversations`, { ...as(a.token), body: { body: 'Help' } })).body.conversation;
    const t0 = new Date(srv.clock.now()).toISOString();
    const h = await srv.call<any>('POST', `${W}/conversations/${conv.id}/handoff`, as(a.token));
    assert.equal(h.status, 200, h.text);
    assert.deepEqual(h.body.conversation.handoff, { requestedAt: t0, reason: 'customer' });
    srv.clock.advance(5000);
    const again = await w.space.call<any>('POST', `/api/v1/conversations/${conv.id}/handoff`);
    assert.deepEqual(again.body.conversation.handoff, { requestedAt: t0, reason: 'customer' });
    const ev = await w.space.call<any>('GET', '/api/v1/events?type=conversation.handoff_requested');
    assert.equal(ev.body.events.length, 1);
  });

  test('POST /api/v1/conversations/{id}/handoff → reason api, status open', async () => {
    const w = await widget();
    const c = await w.space.call<any>('POST', '/api/v1/conversations', { body: { subject: 'S', customer: { email: 'a@example.com' } } });
    await w.space.call('PATCH', `/api/v1/conversations/${c.body.conversation.id}`, { body: { status: 'waiting' } });
    const h = await w.space.call<any>('POST', `/api/v1/conversations/${c.body.conversation.id}/handoff`);
    assert.equal(h.body.conversation.status, 'open');
    assert.deepEqual(h.body.conversation.handoff, { requestedAt: new Date(srv.clock.now()).toISOString(), reason: 'api' });
  });
});

describe('CORS', () => {
  test('an allowed origin → Access-Control-Allow-Origin, no credentials; on a 404 too', async () => {
    const w = await widget();
    const a = await session(w);
    const r = await srv.call('GET', `${W}/conversations`, as(a.token));
    assert.equal(r.headers.get('access-control-allow-origin'), ORIGIN);
    assert.equal(r.headers.get('access-control-allow-credentials'), null);
    const nf = await srv.call('GET', `${W}/conversations/00000000-0000-4000-8000-000000000000/messages`, as(a.token));
    assert.equal(nf.status, 404);
    assert.equal(nf.headers.get('access-control-allow-origin'), ORIGIN);
    const bad = await srv.call('GET', `${W}/conversations`, { key: 'svcs_nope', headers: { Origin: ORIGIN } });
    assert.equal(bad.status, 401);
    assert.equal(bad.headers.get('access-control-allow-origin'), ORIGIN);
  });

  test('another origin → 403 origin_not_allowed without CORS headers', async () => {
    const w = await widget();
    const a = await session(w);
    const r = await srv.call('GET', `${W}/conversations`, { key: a.token, headers: { Origin: 'https://evil.example' } });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { code: 'origin_not_allowed', error: "This origin is not allowed to use this widget: https://evil.example is not in the agent's allowedOrigins." });
    assert.equal(r.headers.get('access-control-allow-origin'), null);
  });

  test('preflight: an allowed origin → 204 with Allow-*; an unknown one → 403', async () => {
    await widget(['https://pre.example']);
    const r = await fetch(`${srv.url}${W}/sessions`, { method: 'OPTIONS', headers: { Origin: 'https://pre.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type' } });
    assert.equal(r.status, 204);
    assert.equal(r.headers.get('access-control-allow-origin'), 'https://pre.example');
    assert.equal(r.headers.get('access-control-allow-methods'), 'GET, POST, OPTIONS');
    assert.equal(r.headers.get('access-control-allow-headers'), 'Authorization, Content-Type, Last-Event-ID, Idempotency-Key');
    assert.equal(r.headers.get('access-control-allow-credentials'), null);
    const no = await fetch(`${srv.url}${W}/sessions`, { method: 'OPTIONS', headers: { Origin: 'https://nobody.example' } });
    assert.equal(no.status, 403);
    assert.deepEqual(await no.json(), { code: 'origin_not_allowed', error: 'This origin is not allowed to use this widget: no widget on this server allows this origin.' });
  });
});

describe('session lifetime and feedback', () => {
  test('a session 24 h old → 401 the session has expired', async () => {
    const w = await widget();
    const a = await session(w);
    srv.clock.advance(24 * 3600_000);
    const r = await srv.call('GET', `${W}/conversations`, as(a.token));
    assert.equal(r.status, 401);
    assert.deepEqual(r.body, WIDGET_UNAUTHORIZED('the session has expired; open a new one.'));
  });

  test('feedback on an unknown answer → 404; helpful not a boolean → 400 exact', async () => {
    const w = await widget();
    const a = await session(w);
    const nf = await srv.call('POST', `${W}/answers/00000000-0000-4000-8000-000000000000/feedback`, { ...as(a.token), body: { helpful: true } });
    assert.equal(nf.status, 404);
    assert.deepEqual(nf.body, NOT_FOUND);
    const bad = await srv.call('POST', `${W}/answers/x/feedback`, { ...as(a.token), body: { helpful: 'yes' } });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { code: 'invalid_request', error: 'Request body is invalid: helpful must be true or false.' });
  });
});
