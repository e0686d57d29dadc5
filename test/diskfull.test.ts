/**
 * A real full disk (README Limits): a small tmpfs filled to the last byte under a running
 * server. Writes answer 503 `storage_full` with `Retry-After`, reads go on, and writes succeed
 * as soon as space is freed, without a restart (the injected-fault versions of ENOSPC are in
 * test/faults.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './helpers/server.js';
import { tryMountTmpfs } from './helpers/tmpfs.js';
import type { ConversationAnswer, MessageAnswer, MessageList } from './helpers/answers.js';

const STORAGE_FULL = { code: 'storage_full', error: 'The server is out of disk space and saved nothing; try again later.' };
const customer = { email: 'ada@example.com', name: 'Ada' };
const started: TestServer[] = [];

test('a real full disk (a 4 MiB tmpfs filled up): writes answer 503 storage_full with Retry-After, reads go on, and writes succeed as soon as space is freed — no restart', async (t) => {
  const mnt = tryMountTmpfs('4m');
  if (!mnt) { t.skip('cannot mount a tmpfs here'); return; }
  try {
    const srv = await startTestServer({ dataDir: join(mnt, 'data'), captureLogs: true, env: { SYNC: 'always' } });
    started.push(srv);
    const a = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: { subject: 'Before the disk filled up', customer } });
    assert.equal(a.status, 201, a.text);
    const id = a.body.conversation.id;
    // Fill the file system to the last byte.
    const filler = join(mnt, 'filler');
    const fd = openSync(filler, 'w');
    const chunk = Buffer.alloc(64 * 1024, 1);
    try { for (;;) writeSync(fd, chunk); } catch (e) { assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC'); }
    try { for (;;) writeSync(fd, chunk, 0, 1); } catch (e) { assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC'); }
    closeSync(fd);
    // A message bigger than a page: it cannot fit in the log's last, partly used page.
    const body = { role: 'user', body: 'x'.repeat(10_000) };
    for (let i = 0; i < 3; i++) {
      const w = await srv.call('POST', `/api/v1/conversations/${id}/messages`, { body });
      assert.deepEqual({ status: w.status, body: w.body, retryAfter: w.headers.get('retry-after') }, { status: 503, body: STORAGE_FULL, retryAfter: '30' });
    }
    const g = await srv.call('GET', `/api/v1/conversations/${id}`);
    assert.deepEqual({ status: g.status, body: g.body }, { status: 200, body: a.body });
    assert.deepEqual((await srv.call<MessageList>('GET', `/api/v1/conversations/${id}/messages`)).body.messages, []);
    assert.deepEqual((await srv.call('GET', '/healthz', { key: null })).body, { status: 'ok' });
    const warned = srv.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'write refused: out of disk space');
    assert.ok(warned.length >= 3 && warned.every((l) => l.level === 'warn' && /ENOSPC/.test(l.error)), srv.logs.join(''));

    unlinkSync(filler);
    const w = await srv.call<MessageAnswer>('POST', `/api/v1/conversations/${id}/messages`, { body });
    assert.equal(w.status, 201, w.text);
    await srv.close();
    const again = await startTestServer({ dataDir: srv.dataDir });
    started.push(again);
    assert.equal(again.store.workspace(srv.workspaceId)!.db.replay.tornTailSavedTo, undefined);
    const msgs = await again.call<MessageList>('GET', `/api/v1/conversations/${id}/messages`, { key: srv.key });
    assert.deepEqual(msgs.body.messages.map((m: { id: string }) => m.id), [w.body.message.id]);
  } finally {
    for (const s of started.splice(0)) await s.close().catch(() => {});
    execFileSync('umount', ['-l', mnt], { stdio: 'ignore' });
  }
});

