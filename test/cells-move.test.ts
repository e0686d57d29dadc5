/**
 * Moving workspaces between cells behind a real HAProxy (docs/deployment.md#moving-a-workspace): 3 cells, 6
 * workspaces with keys, widget keys, published docs, a signed-in user and a webhook endpoint; writers through HAProxy
 * never stop while 5 workspaces move (`cli workspace move`). Every acknowledged write, event and delivery is on the new
 * cell; credentials, sessions and slugs keep working through the proxy; the old cell answers 503 `moved`.
 * Without `haproxy`: skipped with a banner.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { runCli } from './helpers/child.js';
import { haproxyMissing, startCells } from './helpers/cells.js';
import { within } from './helpers/poll.js';
import { WebClient } from './helpers/web.js';
import type { TestServer } from './helpers/server.js';

const missing = haproxyMissing('moving workspaces was');

const SPEC = JSON.stringify({ openapi: '3.0.3', info: { title: 'Moved API', version: '1' }, paths: {
  '/things': { get: { summary: 'List things', responses: { 200: { description: 'OK' } } } } } });
const PASSWORD = 'a long cell passphrase 9';

interface Ws { cell: string; id: string; key: string; widgetKey: string; slug: string; email: string;
  web?: WebClient; acked: string[]; retried: number }

test('5 workspaces move between cells under write load: nothing acknowledged is lost, credentials follow',
  { skip: missing ? 'haproxy is not installed' : false, timeout: 300_000 }, async (t) => {
    // A webhook receiver: every delivery's event id (at-least-once: duplicates allowed, none missing).
    const delivered = new Map<string, number>();
    const receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const id = String(req.headers['webhook-id'] ?? '');
        delivered.set(id, (delivered.get(id) ?? 0) + 1);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const names = ['a', 'b', 'c'];
    const d = await startCells(names);
    const { cells, admin, url } = d;
    try {
      const spaces: Ws[] = [];
      for (let i = 0; i < 6; i++) {
        const cell = names[i % 3];
        const w = await admin(cell, 'workspace.create', { name: `Moving ${i}` });
        const key = (await admin(cell, 'key.create', { workspace: w.id, scopes: '*' })).key as string;
        const base = cells[cell].url;
        const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
        const post = async (path: string, body: unknown, method = 'POST') => {
          const r = await fetch(`${base}${path}`, { method, headers, body: JSON.stringify(body) });
          assert.ok(r.status < 300, `${path}: ${r.status}`);
          return r.json() as Promise<any>;
        };
        const agent = await post('/api/v1/agents', { name: `Agent ${i}`, allowedOrigins: ['https://shop.example'] });
        const src = await post('/api/v1/sources', { content: SPEC });
        const slug = `moving-docs-${i}`;
        await post(`/api/v1/sources/${src.source.id}`, { publicDocs: { enabled: true, published: true, slug } },
          'PATCH');
        await post('/api/v1/webhook-endpoints', { url: hook, events: ['conversation.created'] });
        const email = `mover${i}@example.com`;
        const link = (await admin(cell, 'user.create', { workspace: w.id, email })).activationUrl as string;
        spaces.push({ cell, id: w.id, key, widgetKey: agent.agent.widgetKey, slug, email, acked: [], retried: 0,
          web: Object.assign(new WebClient({ url, watch: () => {}, scan: () => {} } as unknown as TestServer),
            { link }) });
      }
      await d.startProxy();
      for (const ws of spaces) {
        const page = await ws.web!.activateAndSignIn((ws.web as unknown as { link: string }).link, ws.email, PASSWORD);
        assert.equal(page.status, 200, `${page.location} ${page.text.slice(0, 200)}`);
      }

      // Writers through HAProxy, one per workspace, until told to stop; a 503 is retried after its Retry-After.
      let writing = true;
      const writers = spaces.map(async (ws, n) => {
        let i = 0;
        while (writing) {
          const r = await fetch(`${url}/api/v1/conversations`, { method: 'POST', headers: {
            authorization: `Bearer ${ws.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ subject: `Write ${n}.${i}`, customer: { email: `w${n}@example.com` } }) });
          const body = await r.json() as any;
          if (r.status === 201) { ws.acked.push(body.conversation.id); i++; continue; }
          assert.equal(r.status, 503, JSON.stringify(body));
          assert.ok(['moving', 'moved'].includes(body.code), JSON.stringify(body));
          assert.equal(r.headers.get('retry-after'), '1');
          ws.retried++;
          await new Promise((res) => setTimeout(res, 20));
        }
      });

      // Five moves, one after another, while the writers run: a → b, b → c, c → a, then two back.
      const plan: Array<[number, string]> = [[0, 'b'], [1, 'c'], [2, 'a'], [3, 'c'], [0, 'c']];
      const pauses: number[] = [];
      /** Tombstone answers this test asks for itself, by cell. */
      const asked: Record<string, number> = { a: 0, b: 0, c: 0 };
      for (const [n, to] of plan) {
        const ws = spaces[n];
        await within(10_000, 'some writes before the move', async () => ws.acked.length > 20);
        const r = await runCli<any>(cells[ws.cell].dataDir, ['workspace', 'move', '--workspace', ws.id, '--to', to,
          '--cells', d.list]);
        assert.equal(r.code, 0, r.stderr + r.stdout);
        assert.equal(r.json.to, to);
        assert.deepEqual(r.json.routersMissed, []);
        pauses.push(r.json.pauseMs);
        const from = ws.cell;
        ws.cell = to;
        // The old cell keeps a tombstone; the new one serves the workspace.
        const old = await fetch(`${cells[from].url}/api/v1/conversations?limit=1`, { headers: {
          authorization: `Bearer ${ws.key}` } });
        asked[from]++;
        assert.equal(old.status, 503);
        assert.equal(((await old.json()) as any).code, 'moved');
        assert.equal(old.headers.get('retry-after'), '1');
        const fresh = await fetch(`${cells[to].url}/api/v1/conversations?limit=1`, { headers: {
          authorization: `Bearer ${ws.key}` } });
        assert.equal(fresh.status, 200);
      }
      await within(10_000, 'writes after the last move', async () => spaces[0].acked.length > 100);
      writing = false;
      await Promise.all(writers);

      for (const ws of spaces) {
        const headers = { authorization: `Bearer ${ws.key}` };
        // Every acknowledged write is there, through the proxy.
        const seen = new Set<string>();
        let next: string | null = null;
        do {
          const page = await (await fetch(`${url}/api/v1/conversations?limit=100${next ? `&cursor=${next}` : ''}`,
            { headers })).json() as any;
          for (const c of page.conversations) seen.add(c.id);
          next = page.nextCursor;
        } while (next);
        assert.deepEqual(ws.acked.filter((id) => !seen.has(id)), [], `workspace ${ws.id}: acknowledged writes lost`);
        // Every event of them, and every delivery, at least once.
        const events = new Map<string, string>();
        let cursor: string | null = null;
        do {
          const page = await (await fetch(`${url}/api/v1/events?type=conversation.created&limit=100${cursor
            ? `&cursor=${cursor}` : ''}`, { headers })).json() as any;
          for (const e of page.events) events.set(e.data.object.id, e.id);
          cursor = page.nextCursor;
        } while (cursor);
        assert.deepEqual(ws.acked.filter((id) => !events.has(id)), [], `workspace ${ws.id}: events lost`);
        await within(60_000, `workspace ${ws.id}: every event delivered`, async () =>
          [...events.values()].every((id) => delivered.has(id)));
        // The widget key, the docs slug and the signed-in session reach the workspace's cell now.
        const session = await fetch(`${url}/widget/v1/sessions`, { method: 'POST', headers: {
          authorization: `Bearer ${ws.widgetKey}`, origin: 'https://shop.example', 'content-type': 'application/json' },
        body: '{}' });
        assert.equal(session.status, 201, await session.clone().text());
        assert.equal((await fetch(`${url}/docs/${ws.slug}`)).status, 200);
        assert.equal((await ws.web!.get('/settings/keys')).status, 200);
      }

      // No cell answered a credential it does not hold, a page it does not have, or a workspace moved away.
      for (const name of names) {
        assert.deepEqual(await d.notOwned(name), { unknown_credential: 0, unknown_slug: 0, moved: asked[name] },
          `cell ${name}`);
        const foreign = cells[name].logLines().filter((l) => l.msg === 'request' && (l.status === 401
          || l.status === 404));
        assert.deepEqual(foreign, [], `cell ${name}`);
      }
      const duplicates = [...delivered.values()].filter((n) => n > 1).length;
      pauses.sort((a, b) => a - b);
      t.diagnostic(`moves: pauses ${pauses.join(', ')} ms; writes ${spaces.map((s) => s.acked.length).join(', ')
      }; retried after 503 ${spaces.map((s) => s.retried).join(', ')}; deliveries ${delivered.size}, ${duplicates} twice`);
      assert.ok(pauses.at(-1)! <= 5000, `a pause of ${pauses.at(-1)} ms`);
    } finally {
      await d.stop();
      receiver.close();
    }
  });
