/**
 * The agents page of the settings area over HTTP (docs/web.md#agents-page): the agents listed with their snippet,
 * allowed origins saved (normalized, deduplicated), 422 with exact messages and what was typed, CSRF, escaping,
 * another workspace's agent 404, a member like an owner.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { csrfOf, withServer, owner, userOf, assertSecurityHeaders } from './helpers/web.js';
import { parseOrigins } from '../src/web/agentsPage.js';

const EVIL = '<img src=x onerror=alert(1)>';
const ESCAPED = '&lt;img src=x onerror=alert(1)&gt;';

interface AgentBody { agent: { id: string; widgetKey: string; allowedOrigins?: string[] } }

test('agents page: list, snippet, allowed origins saved, 422, CSRF, escaping', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const none = await c.get('/settings/agents');
    assert.equal(none.status, 200);
    assertSecurityHeaders(none, 'agents');
    assert.match(none.text, /This workspace has no agents yet\./);
    const made = await srv.call<AgentBody>('POST', '/api/v1/agents', { body: { name: `Helper ${EVIL}` } });
    assert.equal(made.status, 201, made.text);
    const { id, widgetKey } = made.body.agent;
    const page = await c.get('/settings/agents');
    assert.ok(!page.text.includes(EVIL) && page.text.includes(`Helper ${ESCAPED}`), 'the name is escaped');
    assert.ok(page.text.includes(`&lt;script src=&quot;${srv.url}/widget.js&quot; data-key=&quot;${widgetKey}&quot; `
      + 'async&gt;&lt;/script&gt;</textarea>'), 'the snippet, escaped, in a read-only field');
    assert.ok(page.text.includes(`data-copy="snippet-${id}" hidden>Copy</button>`));
    assert.match(page.text, /No origin is allowed yet, so the widget is refused on every site\./);
    const csrf = csrfOf(page.text);

    const bad = await c.post(`/settings/agents/${id}/origins`, { csrf,
      allowedOrigins: `https://shop.example\nhttps://shop.example/path ${EVIL}` });
    assert.equal(bad.status, 422);
    assert.ok(bad.text.includes('<div class="message error" role="alert">“https://shop.example/path” is not an origin: '
      + 'write the scheme, the host and, when it is not the default, the port, with no path, such as '
      + 'https://shop.example or http://localhost:8080.</div>'), bad.text.slice(0, 2000));
    assert.ok(bad.text.includes(`https://shop.example/path ${ESCAPED}</textarea>`), 'what was typed comes back');
    assert.equal((await c.post(`/settings/agents/${id}/origins`, { allowedOrigins: 'https://a.example' })).status, 403);
    assert.equal((await c.post(`/settings/agents/${id}/origins`, { csrf, allowedOrigins: 'https://a.example' },
      { origin: 'https://evil.example' })).status, 403);
    const stored = () => (srv.store.workspace(srv.workspaceId)!.get('agent', id) as { allowedOrigins?: string[] })
      .allowedOrigins ?? [];
    assert.deepEqual(stored(), [], 'no refused form changed the agent');

    const ok = await c.post(`/settings/agents/${id}/origins`, { csrf,
      allowedOrigins: 'https://Shop.Example/\r\nhttp://localhost:8080, https://shop.example:443' });
    assert.equal(ok.status, 303);
    assert.equal(ok.location, `/settings/agents?saved=${id}#agent-${id}`);
    assert.deepEqual(stored(), ['https://shop.example', 'http://localhost:8080']);
    const saved = await c.get(ok.location!.replace(/#.*/, ''));
    assert.match(saved.text, /The allowed origins are saved\./);
    assert.ok(saved.text.includes('>https://shop.example\nhttp://localhost:8080</textarea>'));
    // Emptied: the widget is refused everywhere again.
    assert.equal((await c.post(`/settings/agents/${id}/origins`, { csrf, allowedOrigins: '' })).status, 303);
    assert.deepEqual(stored(), []);
  });
});

test('agents page: another workspace\'s agent 404; a member sets origins too', async () => {
  await withServer(async (srv) => {
    const c = await owner(srv);
    const other = await srv.newWorkspace('Other');
    const theirs = await srv.call<AgentBody>('POST', '/api/v1/agents', { key: other.key, body: { name: 'Theirs' } });
    const page = await c.get('/settings/agents');
    assert.ok(!page.text.includes('Theirs') && !page.text.includes(theirs.body.agent.widgetKey));
    const r = await c.post(`/settings/agents/${theirs.body.agent.id}/origins`, { csrf: csrfOf(page.text),
      allowedOrigins: 'https://a.example' });
    assert.equal(r.status, 404);
    assert.match(r.text, /There is no such agent in this workspace\./);
    const mine = await srv.call<AgentBody>('POST', '/api/v1/agents', { body: { name: 'Mine' } });
    const member = await userOf(srv, srv.workspaceId, 'member@example.com');
    const mp = await member.get('/settings/agents');
    assert.equal(mp.status, 200);
    const set = await member.post(`/settings/agents/${mine.body.agent.id}/origins`, { csrf: csrfOf(mp.text),
      allowedOrigins: 'https://a.example' });
    assert.equal(set.status, 303);
  });
});

test('parseOrigins: exact origins only', () => {
  assert.deepEqual(parseOrigins(' https://a.example/ \n http://127.0.0.1:3000,https://A.example '),
    { origins: ['https://a.example', 'http://127.0.0.1:3000'] });
  for (const bad of ['a.example', 'ftp://a.example', 'https://u:p@a.example', 'https://a.example/x', 'https://a.example?q',
    'https://a.example#x', 'https:a.example', 'https://*.a.example', 'javascript:alert(1)']) {
    assert.ok('problem' in parseOrigins(bad), bad);
  }
  assert.deepEqual(parseOrigins(Array.from({ length: 51 }, (_, i) => `https://s${i}.example`).join('\n')),
    { problem: 'An agent takes at most 50 origins.' });
});
