/**
 * Cells behind a real HAProxy (docs/deployment.md#several-machines), on loopback: 3 cells (`node dist/server.js`,
 * data dirs of their own sharing `secret` and `master.keys`), 30 workspaces spread over them, `cli cells routes` on
 * each and `cli cells haproxy` writing the configuration; then API keys, widget keys and sessions, docs slugs, activation links
 * and the sign-in form through HAProxy all reach the owning cell (no cell answers 401 or 404 for one); a key, a slug
 * and a user made after HAProxy started are routed within 1 s through its runtime API. Without `haproxy`: skipped
 * with a banner.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from './helpers/child.js';
import { haproxyMissing, startCells } from './helpers/cells.js';
import { within } from './helpers/poll.js';
import { WebClient } from './helpers/web.js';
import type { TestServer } from './helpers/server.js';

const missing = haproxyMissing('the cells were');

const SPEC = JSON.stringify({ openapi: '3.0.3', info: { title: 'Cell API', version: '1' }, paths: {
  '/things': { get: { summary: 'List things', responses: { 200: { description: 'OK' } } } } } });
const PASSWORD = 'a long cell passphrase 9';
const SHOP = 'https://shop.example';

test('3 cells behind HAProxy: every request reaches the owning cell; new credentials routable within 1 s',
  { skip: missing ? 'haproxy is not installed' : false, timeout: 180_000 }, async (t) => {
    const names = ['a', 'b', 'c'];
    const deployment = await startCells(names);
    const { cells, admin, url } = deployment;
    try {
      // 30 workspaces, 10 a cell: a key each, an agent (its widget key), every third a published docs page and a user.
      interface Ws { cell: string; id: string; key: string; widgetKey: string; slug?: string; email?: string;
        link?: string }
      const spaces: Ws[] = [];
      for (let i = 0; i < 30; i++) {
        const cell = names[i % 3];
        const w = await admin(cell, 'workspace.create', { name: `Workspace ${i}` });
        const k = await admin(cell, 'key.create', { workspace: w.id, scopes: '*' });
        const base = cells[cell].url;
        const headers = { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' };
        const agent = await (await fetch(`${base}/api/v1/agents`, { method: 'POST', headers,
          body: JSON.stringify({ name: `Agent ${i}`, allowedOrigins: [SHOP] }) })).json() as any;
        assert.ok(agent.agent?.widgetKey, JSON.stringify(agent));
        const ws: Ws = { cell, id: w.id, key: k.key, widgetKey: agent.agent.widgetKey };
        if (i % 3 === 0) {
          const s = await (await fetch(`${base}/api/v1/sources`, { method: 'POST', headers,
            body: JSON.stringify({ content: SPEC }) })).json() as any;
          ws.slug = `cell-docs-${i}`;
          const p = await fetch(`${base}/api/v1/sources/${s.source.id}`, { method: 'PATCH', headers,
            body: JSON.stringify({ publicDocs: { enabled: true, published: true, slug: ws.slug } }) });
          assert.equal(p.status, 200, await p.text());
          ws.email = `person${i}@example.com`;
          ws.link = (await admin(cell, 'user.create', { workspace: w.id, email: ws.email })).activationUrl;
        }
        spaces.push(ws);
      }

      // The proxy's files from each cell's routes, as an operator runs it.
      await deployment.startProxy();

      // The client mix, through HAProxy.
      let sent = 0;
      for (const ws of spaces) {
        const headers = { authorization: `Bearer ${ws.key}`, 'content-type': 'application/json' };
        const made = await fetch(`${url}/api/v1/conversations`, { method: 'POST', headers,
          body: JSON.stringify({ subject: 'Through the proxy', customer: { email: 'c@example.com' } }) });
        assert.equal(made.status, 201, `${ws.cell}: ${await made.text()}`);
        const list = await (await fetch(`${url}/api/v1/conversations`, { headers })).json() as any;
        assert.equal(list.conversations.length, 1);
        // The widget: a session by the widget key, then the visitor's conversations by the session token.
        const widgetHeaders = (token: string) => ({ authorization: `Bearer ${token}`, origin: SHOP,
          'content-type': 'application/json' });
        const session = await fetch(`${url}/widget/v1/sessions`, { method: 'POST', headers: widgetHeaders(ws.widgetKey),
          body: '{}' });
        assert.equal(session.status, 201, `${ws.cell}: ${await session.clone().text()}`);
        const token = ((await session.json()) as any).session.token as string;
        const chat = await fetch(`${url}/widget/v1/conversations`, { method: 'POST', headers: widgetHeaders(token),
          body: JSON.stringify({ body: 'Hello from the shop' }) });
        assert.equal(chat.status, 201, `${ws.cell}: ${await chat.text()}`);
        const mine = await fetch(`${url}/widget/v1/conversations`, { headers: widgetHeaders(token) });
        assert.equal(((await mine.json()) as any).conversations.length, 1);
        sent += 5;
        if (ws.slug) {
          const page = await fetch(`${url}/docs/${ws.slug}`);
          assert.equal(page.status, 200, ws.slug);
          assert.match(await page.text(), /List things/);
          const web = new WebClient({ url, watch: () => {}, scan: () => {} } as unknown as TestServer);
          const keys = await web.activateAndSignIn(ws.link!, ws.email!, PASSWORD);
          assert.equal(keys.status, 200, keys.text.slice(0, 300));
          assert.equal((await web.get('/settings/keys')).status, 200);
          sent += 6;
        }
      }

      // No cell refused a credential or missed a page: none was sent to a cell that does not own it.
      for (const name of names) {
        assert.deepEqual(await deployment.notOwned(name), { unknown_credential: 0, unknown_slug: 0, moved: 0 }, `cell ${name}`);
        const refused = cells[name].logLines().filter((l) => l.msg === 'request' && (l.status === 401
          || l.status === 404));
        assert.deepEqual(refused, [], `cell ${name}`);
      }

      // Made after HAProxy started: routable within 1 s (until then, a request goes to the default cell, refused).
      const late = spaces[4];
      const key = (await admin(late.cell, 'key.create', { workspace: late.id, scopes: '*' })).key;
      const keyMs = await within(1000, 'a new key routed', async () => (await fetch(`${url}/api/v1/conversations`,
        { headers: { authorization: `Bearer ${key}` } })).status === 200);
      const fresh = await admin('c', 'workspace.create', { name: 'Late workspace' });
      const freshKey = (await admin('c', 'key.create', { workspace: fresh.id, scopes: '*' })).key;
      const wsMs = await within(1000, 'a new workspace\'s key routed', async () =>
        (await fetch(`${url}/api/v1/conversations`, { headers: { authorization: `Bearer ${freshKey}` } })).status === 200);
      const s = await (await fetch(`${cells.c.url}/api/v1/sources`, { method: 'POST', headers: {
        authorization: `Bearer ${freshKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ content: SPEC }),
      })).json() as any;
      await fetch(`${cells.c.url}/api/v1/sources/${s.source.id}`, { method: 'PATCH', headers: {
        authorization: `Bearer ${freshKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ publicDocs: { enabled: true, published: true, slug: 'late-docs' } }) });
      const slugMs = await within(1000, 'a new docs slug routed', async () =>
        (await fetch(`${url}/docs/late-docs`)).status === 200);
      t.diagnostic(`routable after: key ${keyMs.toFixed(0)} ms, workspace ${wsMs.toFixed(0)} ms, slug ${
        slugMs.toFixed(0)} ms; ${sent} requests in the mix`);

    } finally {
      await deployment.stop();
    }
  });
