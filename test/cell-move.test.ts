/**
 * Moving a workspace between two cells in this process (docs/deployment.md#moving-a-workspace): the pause's answers,
 * the tombstone (kept across a restart), the target serving everything, a move back, the cells' own API refusing
 * strangers, and a refused move leaving the source writable. The test behind real HAProxy is cells-move.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { WorkspaceMovedError } from '../src/store/store.js';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';
import { runCli } from './helpers/child.js';
import { WebClient } from './helpers/web.js';

const MOVING = { code: 'moving', error: 'This workspace is being moved to another machine; try again shortly.' };
const MOVED = { code: 'moved', error: 'This workspace has moved to another machine; try again shortly.' };
const conversation = { subject: 'Before the move', customer: { email: 'c@example.com' } };

/** Two cells sharing the data dir's secrets; `x` holds a bootstrap workspace, `y` none. */
async function twoCells(): Promise<{ x: TestServer; y: TestServer; yDir: string }> {
  const x = await startTestServer({ env: { CELL_NAME: 'x' } });
  const yDir = tempDir('sw-cell-y-');
  for (const f of ['secret', 'master.keys']) copyFileSync(join(x.dataDir, f), join(yDir, f));
  const y = await startTestServer({ dataDir: yDir, env: { CELL_NAME: 'y', BOOTSTRAP: 'false' } });
  return { x, y, yDir };
}

const move = (from: TestServer, id: string, to: TestServer, name: string) =>
  from.admin.execute('workspace.move', { workspace: id, to: { name, address: `127.0.0.1:${to.port}` } }) as
    Promise<Record<string, unknown>>;

test('a workspace moving answers 503 moving to writes, reads on, and takes writes again after', async () => {
  const { x, y } = await twoCells();
  try {
    const ws = x.store.workspace(x.workspaceId)!;
    x.store.moving.add(x.workspaceId);
    await ws.db.refuseWrites(new WorkspaceMovedError(x.workspaceId, true));
    const w = await x.call('POST', '/api/v1/conversations', { body: conversation });
    assert.equal(w.status, 503);
    assert.deepEqual(w.body, MOVING);
    assert.equal(w.headers.get('retry-after'), '1');
    assert.equal((await x.call('GET', '/api/v1/conversations')).status, 200);
    // A key made meanwhile would stay behind: refused too (the system log's records of the workspace move with it).
    await assert.rejects(x.admin.execute('key.create', { workspace: x.workspaceId, scopes: '*' }),
      (e: Error) => e instanceof WorkspaceMovedError && e.moving);
    x.store.moving.delete(x.workspaceId);
    await ws.db.refuseWrites(null);
    assert.equal((await x.call('POST', '/api/v1/conversations', { body: conversation })).status, 201);
  } finally { await x.close(); await y.close(); }
});

test('a moved workspace: the target serves its records, keys and events; the source keeps a tombstone', async () => {
  const { x, y, yDir } = await twoCells();
  let source: TestServer | undefined;
  let target: TestServer | undefined;
  try {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      made.push(((await x.call('POST', '/api/v1/conversations', { body: conversation })).body as any).conversation.id);
    }
    const other = await x.newWorkspace('Stays');
    const report = await move(x, x.workspaceId, y, 'y');
    assert.equal(report.object, 'workspace_move');
    assert.equal(report.from, 'x');
    assert.equal(report.to, 'y');
    assert.ok((report.bytes as number) > 0 && (report.pauseMs as number) >= 0);
    // The source answers every request of the workspace with the tombstone; its other workspace is untouched.
    const old = await x.call('GET', '/api/v1/conversations');
    assert.equal(old.status, 503);
    assert.deepEqual(old.body, MOVED);
    assert.equal(old.headers.get('retry-after'), '1');
    assert.equal((await x.call('GET', '/api/v1/conversations', { key: other.key })).status, 200);
    assert.ok(existsSync(join(x.dataDir, 'workspaces', `${x.workspaceId}.log.moved`)));
    // The target: the same key, the same conversations and events, and writes.
    const list = await fetch(`${y.url}/api/v1/conversations?limit=100`, { headers: { authorization: `Bearer ${x.key}` } });
    assert.equal(list.status, 200);
    assert.deepEqual(((await list.json()) as any).conversations.map((c: any) => c.id).sort(), [...made].sort());
    const events = await (await fetch(`${y.url}/api/v1/events?type=conversation.created`, {
      headers: { authorization: `Bearer ${x.key}` } })).json() as any;
    assert.equal(events.events.length, 5);
    const w = await fetch(`${y.url}/api/v1/conversations`, { method: 'POST', headers: {
      authorization: `Bearer ${x.key}`, 'content-type': 'application/json' }, body: JSON.stringify(conversation) });
    assert.equal(w.status, 201);
    // The settings area's owner comes along: the activation link works on the target.
    const web = new WebClient({ ...y, url: y.url } as TestServer);
    const keys = await web.activateAndSignIn(x.ownerLink.replace(x.publicUrl, y.url), 'owner@localhost',
      'a long moving passphrase 1');
    assert.equal(keys.status, 200);
    // Both restart as they were: the tombstone is kept, the target serves the workspace.
    await x.close();
    source = await startTestServer({ dataDir: x.dataDir, env: { CELL_NAME: 'x' } });
    const again = await fetch(`${source.url}/api/v1/conversations`, { headers: { authorization: `Bearer ${x.key}` } });
    assert.equal(again.status, 503);
    assert.deepEqual(await again.json(), MOVED);
    await y.close();
    target = await startTestServer({ dataDir: yDir, env: { CELL_NAME: 'y', BOOTSTRAP: 'false' } });
    const served = await fetch(`${target.url}/api/v1/conversations?limit=100`, {
      headers: { authorization: `Bearer ${x.key}` } });
    assert.equal(((await served.json()) as any).conversations.length, 6);
    // And back again: the tombstone goes, the source serves it with the write made on the target.
    await move(target, x.workspaceId, source, 'x');
    const back = await fetch(`${source.url}/api/v1/conversations?limit=100`, {
      headers: { authorization: `Bearer ${x.key}` } });
    assert.equal(back.status, 200);
    assert.equal(((await back.json()) as any).conversations.length, 6);
  } finally {
    await (source ?? x).close().catch(() => {});
    await (target ?? y).close().catch(() => {});
  }
});

test('a refused move leaves the source serving and writable; bad requests are refused', async () => {
  const { x, y } = await twoCells();
  const plain = await startTestServer();
  try {
    // The target already serves a workspace of that id: it refuses, the source resumes.
    await move(x, x.workspaceId, y, 'y');
    await assert.rejects(move(y, x.workspaceId, y, 'y'), /is on cell y already/);
    await assert.rejects(move(y, '00000000-0000-4000-8000-000000000000', x, 'x'), /no workspace/);
    await assert.rejects(move(plain, plain.workspaceId, y, 'y'), /not a cell: start it with CELL_NAME/);
    const second = await y.newWorkspace('Second');
    const r = await y.admin.execute('workspace.move', { workspace: second.workspaceId, to: { name: 'x',
      address: `127.0.0.1:${y.port}` } }).catch((e: Error) => e);
    assert.match(String(r), /did not take workspace|refused the log/);
    const w = await fetch(`${y.url}/api/v1/conversations`, { method: 'POST', headers: {
      authorization: `Bearer ${second.key}`, 'content-type': 'application/json' }, body: JSON.stringify(conversation) });
    assert.equal(w.status, 201);
    // The cells' own API answers only a cell's token.
    for (const authorization of [undefined, 'Cell 0000', `Bearer ${x.key}`]) {
      const a = await fetch(`${y.url}/cell/v1/incoming/${second.workspaceId}?offset=0`, { method: 'PUT',
        headers: authorization ? { authorization } : {}, body: 'x' });
      assert.equal(a.status, 401);
      assert.deepEqual(await a.json(), { error: 'a cell token is required' });
    }
    // A server that is not a cell has no such API.
    assert.equal((await fetch(`${plain.url}/cell/v1/incoming/${second.workspaceId}`, { method: 'PUT' })).status, 404);
    // The CLI names a target missing from --cells.
    const cli = await runCli(x.dataDir, ['workspace', 'move', '--workspace', x.workspaceId, '--to', 'z', '--cells',
      'x=127.0.0.1:1,y=127.0.0.1:2']);
    assert.equal(cli.code, 2);
    assert.match(cli.stderr, /^--to z is not one of --cells/);
  } finally { await x.close(); await y.close(); await plain.close(); }
});
