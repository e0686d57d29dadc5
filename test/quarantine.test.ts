/**
 * A corrupt line in one workspace's log takes only that workspace offline (README "Storage and
 * durability"): the server starts, the other workspaces serve, every request authenticated for
 * the damaged one answers 503 `storage_failed`, `/healthz` stays 200, and the log names file,
 * line and byte offset. `workspace.repair` (the CLI's `repair --workspace ID`) keeps a copy,
 * cuts the log at its last good line and serves the workspace again without a restart.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './helpers/server.js';
import { AdminError } from '../src/admin/operations.js';
import { refusedWith } from './helpers/refusal.js';
import { damageLine } from './helpers/damage.js';
import type { ConversationAnswer, ConversationList } from './helpers/answers.js';

const STORAGE_FAILED = { code: 'storage_failed', error: "This workspace's data could not be read; see the server log." };
const customer = { email: 'ada@example.com', name: 'Ada' };

const started: TestServer[] = [];
afterEach(async () => { for (const s of started.splice(0)) await s.close().catch(() => {}); });

/**
 * Two workspaces with three conversations each (subjects `<name>-0..2`), stopped; then
 * workspace A's log damaged at `A-1`, and the server started again on the same data dir.
 */
async function damagedServer() {
  const first = await startTestServer();
  started.push(first);
  const b = await first.newWorkspace('B');
  const ids: Record<string, string[]> = { A: [], B: [] };
  for (const [name, key] of [['A', first.key], ['B', b.key]] as const) {
    for (let i = 0; i < 3; i++) {
      const r = await first.call<ConversationAnswer>('POST', '/api/v1/conversations', { key, body: { subject: `${name}-${i}`, customer } });
      assert.equal(r.status, 201, r.text);
      ids[name].push(r.body.conversation.id);
    }
  }
  await first.close();
  const log = join(first.dataDir, 'workspaces', `${first.workspaceId}.log`);
  const bad = damageLine(log, 'A-1');
  const srv = await startTestServer({ dataDir: first.dataDir, captureLogs: true });
  started.push(srv);
  return { srv, keyA: first.key, wsA: first.workspaceId, keyB: b.key, ids, log, bad };
}

test('a corrupt line in one workspace\'s log: the server starts, that workspace answers 503 storage_failed to every authenticated request, the others serve, /healthz 200, the log names file, line and offset', async () => {
  const { srv, keyA, wsA, keyB, ids, log, bad } = await damagedServer();
  const damaged = readFileSync(log);

  for (const [method, path, body] of [
    ['GET', '/api/v1/conversations', undefined],
    ['GET', `/api/v1/conversations/${ids.A[0]}`, undefined],
    ['POST', '/api/v1/conversations', { subject: 'new', customer }],
    ['GET', '/api/v1/issues', undefined],
  ] as const) {
    const r = await srv.call(method, path, { key: keyA, body });
    assert.deepEqual({ status: r.status, body: r.body }, { status: 503, body: STORAGE_FAILED }, `${method} ${path}`);
  }
  // Authentication still comes first: a wrong key is a 401, whatever the workspace.
  const unauth = await srv.call('GET', '/api/v1/conversations', { key: 'svck_' + 'x'.repeat(43) });
  assert.equal(unauth.status, 401);

  const listB = await srv.call<ConversationList>('GET', '/api/v1/conversations', { key: keyB });
  assert.equal(listB.status, 200, listB.text);
  assert.deepEqual(listB.body.conversations.map((c: { id: string }) => c.id).sort(), [...ids.B].sort());
  const writeB = await srv.call('POST', '/api/v1/conversations', { key: keyB, body: { subject: 'B-new', customer } });
  assert.equal(writeB.status, 201, writeB.text);

  const h = await srv.call('GET', '/healthz', { key: null });
  assert.deepEqual({ status: h.status, body: h.body }, { status: 200, body: { status: 'ok' } });

  const logged = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'workspace offline: its log is corrupt');
  assert.equal(logged.length, 1, srv.logs.join(''));
  assert.deepEqual(
    { level: logged[0].level, workspaceId: logged[0].workspaceId, file: logged[0].file, line: logged[0].line, offset: logged[0].offset, reason: logged[0].reason, fix: logged[0].fix },
    { level: 'error', workspaceId: wsA, file: log, line: bad.line, offset: bad.offset, reason: 'checksum mismatch', fix: `cli repair --workspace ${wsA}` });

  // Admin commands on the damaged workspace say what to do; on the system log they work.
  await assert.rejects(srv.admin.execute('tag.create', { workspace: wsA, input: { name: 'x' } }), (e: unknown) =>
    e instanceof AdminError && e.message.startsWith(`workspace ${wsA} is offline: ${log}: line ${bad.line} (byte offset ${bad.offset}) is corrupt: checksum mismatch; run "cli repair --workspace ${wsA}"`));
  const key = await srv.admin.execute('key.create', { workspace: wsA }) as { key: string };
  assert.equal((await srv.call('GET', '/api/v1/conversations', { key: key.key })).status, 503);
  assert.deepEqual(readFileSync(log), damaged, 'the damaged log is left as it was');
});

test('workspace.repair keeps a copy of the damaged log, cuts it at the last good line, reports what it dropped, and serves the workspace again at once', async () => {
  const { srv, keyA, wsA, ids, log, bad } = await damagedServer();
  const damaged = readFileSync(log);
  srv.clock.set(Date.parse('2026-07-01T00:00:00Z'));
  const out = await srv.admin.execute('workspace.repair', { workspace: wsA }) as Record<string, unknown>;
  const linesAfter = damaged.subarray(bad.offset).toString('latin1').split('\n').filter(Boolean).length;
  assert.deepEqual(out, {
    object: 'repair', workspaceId: wsA, file: log,
    corruptLine: { line: bad.line, offset: bad.offset, reason: 'checksum mismatch' },
    keptLines: bad.line - 1, keptBytes: bad.offset,
    droppedLines: linesAfter, droppedValidLines: linesAfter - 1, droppedBytes: damaged.length - bad.offset,
    damagedCopy: `${log}.damaged-${Date.parse('2026-07-01T00:00:00Z')}`,
  });
  assert.deepEqual(readFileSync(out.damagedCopy as string), damaged, 'the copy is the damaged log, byte for byte');
  assert.deepEqual(readFileSync(log), damaged.subarray(0, bad.offset));

  const list = await srv.call<ConversationList>('GET', '/api/v1/conversations', { key: keyA });
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.body.conversations.map((c: { id: string }) => c.id), [ids.A[0]], 'what came before the bad line is served');
  const w = await srv.call('POST', '/api/v1/conversations', { key: keyA, body: { subject: 'after the repair', customer } });
  assert.equal(w.status, 201, w.text);

  await assert.rejects(srv.admin.execute('workspace.repair', { workspace: wsA }), (e: unknown) =>
    e instanceof AdminError && e.message === `workspace ${wsA} is not damaged: its log was read without error, so there is nothing to repair`);
  await assert.rejects(srv.admin.execute('workspace.repair', { workspace: 'nope' }), refusedWith('workspace.repair', 'no workspace "nope"'));
  await srv.close();

  const again = await startTestServer({ dataDir: srv.dataDir });
  started.push(again);
  const r = await again.call<ConversationList>('GET', '/api/v1/conversations', { key: keyA });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.conversations.map((c: { subject: string }) => c.subject).sort(), ['A-0', 'after the repair']);
  assert.deepEqual(readdirSync(join(srv.dataDir, 'workspaces')).filter((f) => f.includes('.damaged-')).length, 1);
});
