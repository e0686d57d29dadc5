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

test('agents page: how it answers — mode, sources ticked, instructions, hand-over; 422 exact, nothing half-saved',
  async () => {
    await withServer(async (srv) => {
      const c = await owner(srv);
      const made = await srv.call<AgentBody>('POST', '/api/v1/agents', { body: { name: 'Helper' } });
      const id = made.body.agent.id;
      const src = await srv.call<any>('POST', '/api/v1/sources', { body: { name: `Payments ${EVIL}`,
        content: '# Payments\n\nCreate a customer with POST /v1/customers.' } });
      assert.equal(src.status, 201, src.text);
      const sourceId = src.body.source.id;
      const page = await c.get('/settings/agents');
      assert.ok(page.text.includes(`<form method="post" action="/settings/agents/${id}/answering">`));
      assert.ok(page.text.includes('name="mode" value="off" checked>'), 'the mode is shown: off by default');
      assert.ok(page.text.includes(`name="sources" value="${sourceId}"> Payments ${ESCAPED}</label>`));
      assert.ok(page.text.includes(`name="handoffAfterUncertain" min="1" max="20" step="1" value="2">`));
      const csrf = csrfOf(page.text);
      const api = async () => (await srv.call<any>('GET', `/api/v1/agents/${id}`)).body.agent;
      const before = await api();
      const ok = { csrf, mode: 'reply', sources: [sourceId, sourceId], instructions: 'Be brief.\r\nCite the endpoint.',
        handoffAfterUncertain: '3' };
      const refusals: Array<[Record<string, string | string[]>, string]> = [
        [{ mode: 'loud' }, 'Choose a mode: off, suggest or reply.'],
        [{ sources: ['00000000-0000-4000-8000-000000000000'] },
          'A source ticked is no longer in this workspace; the list is shown again as it is now.'],
        [{ instructions: 'x'.repeat(4001) }, 'The instructions are 4,001 characters long; the most is 4,000.'],
        [{ handoffAfterUncertain: '0' }, 'Hand over after must be a whole number from 1 to 20.'],
        [{ handoffAfterUncertain: '21' }, 'Hand over after must be a whole number from 1 to 20.'],
        [{ handoffAfterUncertain: '2.5' }, 'Hand over after must be a whole number from 1 to 20.'],
      ];
      for (const [change, problem] of refusals) {
        const r = await c.post(`/settings/agents/${id}/answering`, { ...ok, ...change });
        assert.equal(r.status, 422, problem);
        assert.ok(r.text.includes(`<div class="message error" role="alert">${problem}</div>`), problem);
        assert.deepEqual(await api(), before, 'nothing half-saved');
      }
      // What was typed comes back, escaped.
      const typed = await c.post(`/settings/agents/${id}/answering`, { ...ok, mode: 'x', instructions: EVIL });
      assert.ok(typed.text.includes(`${ESCAPED}</textarea>`) && !typed.text.includes(EVIL));
      assert.equal((await c.post(`/settings/agents/${id}/answering`, { ...ok, csrf: 'wrong' })).status, 403);
      const saved = await c.post(`/settings/agents/${id}/answering`, ok);
      assert.equal(saved.status, 303);
      assert.equal(saved.location, `/settings/agents?answering=${id}#agent-${id}`);
      const now = await api();
      assert.deepEqual([now.mode, now.sources, now.instructions, now.handoffAfterUncertain],
        ['reply', [sourceId], 'Be brief.\nCite the endpoint.', 3]);
      const shown = await c.get(saved.location!.replace(/#.*/, ''));
      assert.match(shown.text, /How it answers is saved\./);
      assert.ok(shown.text.includes('name="mode" value="reply" checked>'));
      assert.ok(shown.text.includes(`name="sources" value="${sourceId}" checked>`));
      // Characters are code points, as the API counts them: 4,000 emoji (8,000 UTF-16 units) are within the limit.
      assert.equal((await c.post(`/settings/agents/${id}/answering`, { ...ok, instructions: '😀'.repeat(4000) })).status,
        303);
      assert.equal((await api()).instructions.length, 8000);
      // None ticked: every ready source.
      assert.equal((await c.post(`/settings/agents/${id}/answering`, { csrf, mode: 'suggest', instructions: '',
        handoffAfterUncertain: '1' })).status, 303);
      const last = await api();
      assert.deepEqual([last.mode, last.sources, last.instructions, last.handoffAfterUncertain], ['suggest', [], '', 1]);
      // Another workspace's agent: 404.
      const other = await srv.newWorkspace('Other');
      const theirs = await srv.call<AgentBody>('POST', '/api/v1/agents', { key: other.key, body: { name: 'Theirs' } });
      const r = await c.post(`/settings/agents/${theirs.body.agent.id}/answering`, ok);
      assert.equal(r.status, 404);
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
