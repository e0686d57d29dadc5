/**
 * I/O faults (docs/storage.md#faults), injected through the store's file-system seam
 * (`StoreFs`) into a real in-process server: `ENOSPC`/`EIO` on a log write, a partial write,
 * a failed truncate, an `fdatasync` failure, a failed compaction; and data dirs the server cannot
 * use at start (in process and as the real `node dist/server.js`).
 *
 * A fault is aimed at one request by a marker string in its body: only a `write` whose bytes
 * contain the marker fails, so background writes (usage counts, `lastUsedAt`) never take it.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import {
  chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { nodeFs, type StoreFs } from '../src/store/log/fs.js';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';
import { runServerToExit, SERVER_JS } from './helpers/child.js';
import { tryMountTmpfs } from './helpers/tmpfs.js';
import type { ConversationAnswer, ConversationList, IssueAnswer, IssueList, MessageList } from './helpers/answers.js';
import { bytesOf } from './helpers/storeFs.js';

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');
const customer = { email: 'ada@example.com', name: 'Ada' };
const INTERNAL = { code: 'internal_error', error: 'The API request could not be completed.' };
const STORAGE_FULL = { code: 'storage_full', error: 'The server is out of disk space and saved nothing; try again later.' };
const STORAGE_FAILED = {
  code: 'service_unavailable',
  error: 'The server is shutting down or cannot accept writes right now: writes are refused after a storage failure; see the server log.',
};
const DESCRIPTIONS: Record<string, string> = {
  ENOSPC: 'no space left on device', EIO: 'i/o error', EROFS: 'read-only file system', EDQUOT: 'disk quota exceeded',
};

/** An error shaped like the ones `node:fs` throws. */
function errno(code: string, syscall: string, path?: string): NodeJS.ErrnoException {
  const msg = `${code}: ${DESCRIPTIONS[code] ?? 'unknown error'}, ${syscall}${path ? ` '${path}'` : ''}`;
  return Object.assign(new Error(msg), { code, syscall, ...(path ? { path } : {}) });
}

/**
 * A `StoreFs` over the real one whose faults are switched on and off by the test. Every call is
 * counted per path, so a test can also check what was *not* called (an fdatasync never retried).
 */
class FaultFs {
  /**
   * @param synced whether the fs has `openSynced` (O_DSYNC descriptors), as `nodeFs` has on Linux:
   *   a store that syncs then writes through one and never fdatasyncs its log, so `syncFault`
   *   never fires and a failed write may be a failed sync. Without it the log fdatasyncs each batch.
   */
  constructor(synced = false) {
    if (synced) this.fs.openSynced = (path) => this.opened('openSynced', path, nodeFs.openSynced!);
  }

  /** An open through `opener`, counted, failing with `openFault` when set, its fd's path kept. */
  private async opened(op: string, path: string, opener: (path: string) => Promise<number>): Promise<number> {
    this.calls.push({ op, path });
    if (this.openFault) throw errno(this.openFault, 'open', path);
    const fd = await opener(path);
    this.paths.set(fd, path);
    return fd;
  }

  private readonly paths = new Map<number, string>();
  /** A write whose bytes contain `marker` fails with `code`, after writing `portion` of its bytes. */
  writeFault: { marker: string; code: string; portion: number } | null = null;
  /** Every ftruncate fails with this code. */
  truncateFault: string | null = null;
  /** The fdatasync that follows a write containing `marker` (on the same file) fails with `code`. */
  syncFault: { marker: string; code: string } | null = null;
  /** Every fsyncDir fails with this code. */
  fsyncDirFault: string | null = null;
  /** Every open fails with this code. */
  openFault: string | null = null;
  readonly calls: Array<{ op: string; path: string }> = [];
  private readonly doomed = new Set<number>();

  private pathOf(fd: number): string { return this.paths.get(fd) ?? `fd ${fd}`; }

  readonly fs: StoreFs = {
    open: (path) => this.opened('open', path, nodeFs.open),
    write: async (fd, data, position) => {
      this.calls.push({ op: 'write', path: this.pathOf(fd) });
      const buf = bytesOf(data);
      const f = this.writeFault;
      if (f && buf.includes(f.marker)) {
        const part = Math.floor(buf.length * f.portion);
        if (part > 0) await nodeFs.write(fd, buf.subarray(0, part), position);
        throw errno(f.code, 'write');
      }
      if (this.syncFault && buf.includes(this.syncFault.marker)) this.doomed.add(fd);
      return nodeFs.write(fd, data, position);
    },
    fdatasync: async (fd) => {
      this.calls.push({ op: 'fdatasync', path: this.pathOf(fd) });
      if (this.syncFault && this.doomed.delete(fd)) throw errno(this.syncFault.code, 'fdatasync');
      return nodeFs.fdatasync(fd);
    },
    ftruncate: async (fd, length) => {
      this.calls.push({ op: 'ftruncate', path: this.pathOf(fd) });
      if (this.truncateFault) throw errno(this.truncateFault, 'ftruncate');
      return nodeFs.ftruncate(fd, length);
    },
    close: async (fd) => {
      this.calls.push({ op: 'close', path: this.pathOf(fd) });
      await nodeFs.close(fd);
      this.paths.delete(fd);
    },
    rename: async (from, to) => {
      this.calls.push({ op: 'rename', path: to });
      await nodeFs.rename(from, to);
      for (const [fd, p] of this.paths) if (p === from) this.paths.set(fd, to);
    },
    fsyncDir: async (dir) => {
      this.calls.push({ op: 'fsyncDir', path: dir });
      if (this.fsyncDirFault) throw errno(this.fsyncDirFault, 'fsync', dir);
      return nodeFs.fsyncDir(dir);
    },
  };

  clear(): void {
    this.writeFault = null; this.truncateFault = null; this.syncFault = null; this.fsyncDirFault = null; this.openFault = null;
    this.doomed.clear();
  }
}

const logFile = (srv: TestServer) => join(srv.dataDir, 'workspaces', `${srv.workspaceId}.log`);
const corruptFiles = (dataDir: string) => readdirSync(join(dataDir, 'workspaces')).filter((f) => f.includes('.corrupt-'));
const parsedLogs = (srv: TestServer) => srv.logs.map((l) => JSON.parse(l) as Record<string, any>);

/** Servers (and their fault switches) a test started; closed after each test, pass or fail. */
const started: Array<{ srv: TestServer; faults?: FaultFs }> = [];
afterEach(async () => {
  for (const { srv, faults } of started.splice(0)) { faults?.clear(); await srv.close().catch(() => {}); }
});

/** An in-process server (SYNC=always, logs captured) over `faults`' file system. */
async function faultServer(faults: FaultFs, opts: { compactionSlack?: number } = {}): Promise<TestServer> {
  const srv = await startTestServer({ fs: faults.fs, captureLogs: true, env: { SYNC: 'always' }, ...opts });
  started.push({ srv, faults });
  return srv;
}

async function createConversation(srv: TestServer, subject: string, extra: Record<string, unknown> = {}) {
  return srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: { subject, customer, ...extra } });
}

/** The ids of every conversation the server lists (one page of up to 100 is enough here). */
async function conversationIds(srv: TestServer): Promise<string[]> {
  const r = await srv.call<ConversationAnswer & ConversationList>('GET', '/api/v1/conversations?limit=100');
  assert.equal(r.status, 200, r.text);
  return r.body.conversations.map((c: { id: string }) => c.id).sort();
}

/** Restarts on the same data dir with the real file system and runs `fn` against it. */
async function restarted(srv: TestServer, fn: (again: TestServer) => Promise<void>): Promise<void> {
  const again = await startTestServer({ dataDir: srv.dataDir, captureLogs: true, env: { SYNC: 'always' } });
  started.push({ srv: again });
  await fn(Object.assign(again, { key: srv.key, workspaceId: srv.workspaceId, call: withKey(again, srv.key) }));
  await again.close();
}

/** `again.call` with the first server's key (a restart prints no new key). */
function withKey(again: TestServer, key: string): TestServer['call'] {
  const call = again.call;
  return (method, path, o = {}) => call(method, path, { key, ...o });
}

// ---------------------------------------------------------------- ENOSPC / EIO on write

/** How a failed log write is answered: out of space → 503 `storage_full` to retry later; any other error → 500. */
const WRITE_FAILURES: Record<string, { status: number; body: object; retryAfter: string | null; logged: string; level: string }> = {
  ENOSPC: { status: 503, body: STORAGE_FULL, retryAfter: '30', logged: 'write refused: out of disk space', level: 'warn' },
  EDQUOT: { status: 503, body: STORAGE_FULL, retryAfter: '30', logged: 'write refused: out of disk space', level: 'warn' },
  EIO: { status: 500, body: INTERNAL, retryAfter: null, logged: 'unexpected error', level: 'error' },
};

for (const [code, expected] of Object.entries(WRITE_FAILURES)) {
  test(`${code} on a log write → ${expected.status} ${expected.body === INTERNAL ? 'internal_error' : 'storage_full with Retry-After: 30'}; earlier records still served, nothing of the failed write visible or on disk, the log replays, and writes succeed once the fault clears`, async () => {
    const faults = new FaultFs();
    const srv = await faultServer(faults);
    const a = await createConversation(srv, 'Printer on fire');
    assert.equal(a.status, 201, a.text);
    const m = await srv.call('POST', `/api/v1/conversations/${a.body.conversation.id}/messages`, { body: { role: 'user', body: 'It is still burning' } });
    assert.equal(m.status, 201, m.text);
    const convA = (await srv.call<ConversationAnswer>('GET', `/api/v1/conversations/${a.body.conversation.id}`)).body.conversation;
    const issue1 = await srv.call<IssueAnswer>('POST', '/api/v1/issues', { body: { subject: 'First issue' } });
    assert.equal(issue1.status, 201, issue1.text);
    assert.equal(issue1.body.issue.number, 1);
    const sizeBefore = statSync(logFile(srv)).size;

    faults.writeFault = { marker: 'FAULT-1', code, portion: 0 };
    const failures = [
      await createConversation(srv, 'FAULT-1 create', { externalId: 'ext-fault' }),
      await srv.call('PATCH', `/api/v1/conversations/${convA.id}`, { body: { subject: 'FAULT-1 renamed', status: 'solved' } }),
      await srv.call('POST', `/api/v1/conversations/${convA.id}/messages`, { body: { role: 'agent', body: 'FAULT-1 reply' } }),
      await srv.call('POST', '/api/v1/issues', { body: { subject: 'FAULT-1 issue' }, headers: { 'Idempotency-Key': 'idem-fault-1' } }),
    ];
    for (const f of failures) {
      assert.deepEqual({ status: f.status, body: f.body, retryAfter: f.headers.get('retry-after') }, { status: expected.status, body: expected.body, retryAfter: expected.retryAfter });
    }
    assert.equal(statSync(logFile(srv)).size, sizeBefore, 'the log is back to its size before the failed writes');
    assert.ok(!readFileSync(logFile(srv), 'utf8').includes('FAULT-1'));
    const logged = parsedLogs(srv).filter((l) => l.msg === expected.logged && l.level === expected.level);
    assert.equal(logged.length, 4, srv.logs.join(''));
    assert.ok(logged.every((l) => String(l.error).includes(code)), 'the log names the file-system error');

    // Reads go on, and show nothing of the failed writes.
    const g = await srv.call('GET', `/api/v1/conversations/${convA.id}`);
    assert.equal(g.status, 200, g.text);
    assert.deepEqual(g.body, { conversation: convA });
    assert.deepEqual(await conversationIds(srv), [convA.id]);
    const msgs = await srv.call<MessageList>('GET', `/api/v1/conversations/${convA.id}/messages`);
    assert.equal(msgs.status, 200);
    assert.deepEqual(msgs.body.messages.map((x: { body: string }) => x.body), ['It is still burning']);
    const issues = await srv.call<IssueList>('GET', '/api/v1/issues');
    assert.deepEqual(issues.body.issues.map((i: { subject: string }) => i.subject), ['First issue']);
    assert.deepEqual((await srv.call('GET', '/healthz', { key: null })).body, { status: 'ok' });

    // The fault clears: the same requests now succeed — the externalId and the issue number
    // were released, and the failed idempotent request was not stored.
    faults.clear();
    const retry = await createConversation(srv, 'FAULT-1 create', { externalId: 'ext-fault' });
    assert.equal(retry.status, 201, retry.text);
    const retryIssue = await srv.call<IssueAnswer>('POST', '/api/v1/issues', { body: { subject: 'FAULT-1 issue' }, headers: { 'Idempotency-Key': 'idem-fault-1' } });
    assert.equal(retryIssue.status, 201, retryIssue.text);
    assert.equal(retryIssue.headers.get('idempotent-replayed'), null);
    assert.equal(retryIssue.body.issue.number, 2);
    await srv.close();

    await restarted(srv, async (again) => {
      assert.equal(again.store.workspace(srv.workspaceId)!.db.replay.tornTailSavedTo, undefined);
      assert.deepEqual(corruptFiles(srv.dataDir), []);
      assert.ok(!again.logs.some((l) => l.includes('torn log tail')), again.logs.join(''));
      const a2 = await again.call('GET', `/api/v1/conversations/${convA.id}`);
      assert.deepEqual(a2.body, { conversation: convA });
      assert.deepEqual(await conversationIds(again), [convA.id, retry.body.conversation.id].sort());
      const i2 = await again.call('GET', `/api/v1/issues/${retryIssue.body.issue.id}`);
      assert.deepEqual(i2.body, retryIssue.body);
      const replay = await again.call('POST', '/api/v1/issues', { body: { subject: 'FAULT-1 issue' }, headers: { 'Idempotency-Key': 'idem-fault-1' } });
      assert.equal(replay.status, 201);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(replay.body, retryIssue.body);
    });
  });
}

test('concurrent writes sharing a batch with a failed write (ENOSPC): each one is either 201 and kept, or 503 storage_full and gone — also after a restart', async () => {
  const faults = new FaultFs();
  const srv = await faultServer(faults);
  faults.writeFault = { marker: 'FAULT-BATCH', code: 'ENOSPC', portion: 0.5 };
  // Sent together, so that several land in the batch that holds the doomed one.
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    createConversation(srv, i === 7 ? 'FAULT-BATCH' : `batch ${i}`, { externalId: `batch-${i}` })));
  faults.clear();
  const created = answers.filter((r) => r.status === 201).map((r) => r.body.conversation.id).sort();
  for (const r of answers) {
    if (r.status !== 201) assert.deepEqual({ status: r.status, body: r.body }, { status: 503, body: STORAGE_FULL });
  }
  assert.equal(answers[7].status, 503);
  assert.deepEqual(await conversationIds(srv), created);
  // Every refused externalId is free again.
  for (const [i, r] of answers.entries()) {
    if (r.status === 201) continue;
    const again = await createConversation(srv, `batch ${i} again`, { externalId: `batch-${i}` });
    assert.equal(again.status, 201, again.text);
    created.push(again.body.conversation.id);
  }
  await srv.close();
  await restarted(srv, async (again) => {
    assert.deepEqual(await conversationIds(again), created.sort());
    assert.deepEqual(corruptFiles(srv.dataDir), []);
  });
});

for (const synced of [false, true]) test(`a partial write (half the bytes, then ENOSPC) is cut back: the file ends on a whole line and replays without a torn tail${synced ? '; on an O_DSYNC descriptor too (lack of space is not final)' : ''}`, async () => {
  const faults = new FaultFs(synced);
  const srv = await faultServer(faults);
  assert.equal(faults.calls.some((c) => c.op === 'openSynced' && c.path === logFile(srv)), synced);
  const a = await createConversation(srv, 'Before the fault');
  assert.equal(a.status, 201);
  const bytesBefore = readFileSync(logFile(srv));
  faults.writeFault = { marker: 'FAULT-HALF', code: 'ENOSPC', portion: 0.5 };
  const r = await createConversation(srv, `FAULT-HALF ${'x'.repeat(150)}`);
  assert.deepEqual({ status: r.status, body: r.body }, { status: 503, body: STORAGE_FULL });
  const half = faults.calls.filter((c) => c.op === 'ftruncate' && c.path === logFile(srv));
  assert.equal(half.length, 1, 'the partial line was truncated away');
  assert.deepEqual(readFileSync(logFile(srv)), bytesBefore, 'the file is byte for byte what it was before the failed write');
  faults.clear();
  const b = await createConversation(srv, 'After the fault');
  assert.equal(b.status, 201);
  await srv.close();
  await restarted(srv, async (again) => {
    const replay = again.store.workspace(srv.workspaceId)!.db.replay;
    assert.equal(replay.tornTailSavedTo, undefined);
    assert.deepEqual(corruptFiles(srv.dataDir), []);
    assert.deepEqual(await conversationIds(again), [a.body.conversation.id, b.body.conversation.id].sort());
  });
});

test('a failed write whose truncate fails too → that write 500, every later write 503, /healthz 503; the restart sets the torn tail aside and keeps every acknowledged write', async () => {
  const faults = new FaultFs();
  const srv = await faultServer(faults);
  const a = await createConversation(srv, 'Acknowledged');
  assert.equal(a.status, 201);
  faults.writeFault = { marker: 'FAULT-TRUNC', code: 'EIO', portion: 0.5 };
  faults.truncateFault = 'EIO';
  const r = await createConversation(srv, 'FAULT-TRUNC');
  assert.deepEqual({ status: r.status, body: r.body }, { status: 500, body: INTERNAL });
  faults.clear();
  const later = await createConversation(srv, 'Refused');
  assert.deepEqual({ status: later.status, body: later.body }, { status: 503, body: STORAGE_FAILED });
  const h = await srv.call('GET', '/healthz', { key: null });
  assert.deepEqual({ status: h.status, body: h.body }, { status: 503, body: STORAGE_FAILED });
  const why = parsedLogs(srv).find((l) => l.msg === 'storage failed');
  assert.ok(why, srv.logs.join(''));
  assert.match(why.error, /could not truncate .*\.log after a failed write: EIO/);
  assert.deepEqual(await conversationIds(srv), [a.body.conversation.id]);
  await srv.close();
  await restarted(srv, async (again) => {
    assert.ok(again.logs.some((l) => l.includes('torn log tail set aside') && l.includes(srv.workspaceId)), again.logs.join(''));
    assert.equal(corruptFiles(srv.dataDir).length, 1);
    assert.deepEqual(await conversationIds(again), [a.body.conversation.id]);
    assert.equal((await createConversation(again, 'Accepted again')).status, 201);
    assert.deepEqual((await again.call('GET', '/healthz', { key: null })).body, { status: 'ok' });
  });
});

// ---------------------------------------------------------------- fdatasync

test('an fdatasync failure → that write 503 naming the storage failure, every later write 503 (never retried), reads 200, /healthz 503, the reason logged; a restart serves again', async () => {
  const faults = new FaultFs();
  const srv = await faultServer(faults);
  const a = await createConversation(srv, 'Durable before the fault');
  assert.equal(a.status, 201);
  const convA = a.body.conversation;

  faults.syncFault = { marker: 'FAULT-SYNC', code: 'EIO' };
  const r = await createConversation(srv, 'FAULT-SYNC', { externalId: 'ext-sync' });
  assert.deepEqual({ status: r.status, body: r.body }, { status: 503, body: STORAGE_FAILED });
  faults.clear(); // the device answers again: the server must still refuse (fsyncgate)
  const syncsAfterFailure = faults.calls.length;

  const refused = [
    await createConversation(srv, 'after the failure'),
    await srv.call('PATCH', `/api/v1/conversations/${convA.id}`, { body: { status: 'solved' } }),
    await srv.call('POST', `/api/v1/conversations/${convA.id}/messages`, { body: { role: 'user', body: 'hello?' } }),
    await srv.call('POST', '/api/v1/issues', { body: { subject: 'after the failure' }, headers: { 'Idempotency-Key': 'idem-after' } }),
  ];
  for (const x of refused) assert.deepEqual({ status: x.status, body: x.body }, { status: 503, body: STORAGE_FAILED });
  const ws = logFile(srv);
  assert.equal(faults.calls.slice(syncsAfterFailure).filter((c) => c.path === ws && (c.op === 'write' || c.op === 'fdatasync')).length, 0,
    'nothing more is written to (or fdatasync\'d on) the failed log');

  const g = await srv.call('GET', `/api/v1/conversations/${convA.id}`);
  assert.deepEqual({ status: g.status, body: g.body }, { status: 200, body: { conversation: convA } });
  assert.deepEqual(await conversationIds(srv), [convA.id]);
  const h = await srv.call('GET', '/healthz', { key: null });
  assert.deepEqual({ status: h.status, body: h.body }, { status: 503, body: STORAGE_FAILED });

  const errors = parsedLogs(srv).filter((l) => l.msg === 'storage failed');
  assert.equal(errors.length, 5, srv.logs.join(''));
  for (const e of errors) {
    assert.equal(e.level, 'error');
    assert.equal(e.error, `fdatasync failed on ${ws}: EIO: i/o error, fdatasync; writes are refused until restart`);
  }
  await srv.close();

  await restarted(srv, async (again) => {
    assert.deepEqual((await again.call('GET', '/healthz', { key: null })).body, { status: 'ok' });
    assert.deepEqual((await again.call('GET', `/api/v1/conversations/${convA.id}`)).body, { conversation: convA });
    // The refused write was cut from the file, so it does not come back after the restart.
    assert.deepEqual(await conversationIds(again), [convA.id]);
    const retry = await createConversation(again, 'FAULT-SYNC', { externalId: 'ext-sync' });
    assert.equal(retry.status, 201, retry.text);
  });
});

// ---------------------------------------------------------------- compaction

test('on an O_DSYNC descriptor a write failing with EIO (it may be its sync) → that write 503 naming it, every later write 503 (never retried), /healthz 503; the partial batch is cut; a restart serves again', async () => {
  const faults = new FaultFs(true);
  const srv = await faultServer(faults);
  const ws = logFile(srv);
  assert.ok(faults.calls.some((c) => c.op === 'openSynced' && c.path === ws));
  const a = await createConversation(srv, 'Durable before the fault');
  assert.equal(a.status, 201);
  const convA = a.body.conversation;
  const bytesBefore = readFileSync(ws);

  faults.writeFault = { marker: 'FAULT-DSYNC', code: 'EIO', portion: 0.5 };
  const r = await createConversation(srv, 'FAULT-DSYNC', { externalId: 'ext-dsync' });
  assert.deepEqual({ status: r.status, body: r.body }, { status: 503, body: STORAGE_FAILED });
  faults.clear(); // the device answers again: the server must still refuse
  const callsAfterFailure = faults.calls.length;
  assert.deepEqual(readFileSync(ws), bytesBefore, 'the half-written batch was cut');

  const refused = [
    await createConversation(srv, 'after the failure'),
    await srv.call('PATCH', `/api/v1/conversations/${convA.id}`, { body: { status: 'solved' } }),
  ];
  for (const x of refused) assert.deepEqual({ status: x.status, body: x.body }, { status: 503, body: STORAGE_FAILED });
  assert.deepEqual(faults.calls.slice(callsAfterFailure).filter((c) => c.path === ws && (c.op === 'write' || c.op === 'fdatasync')), [],
    'nothing more is written to the failed log');
  const logOps = faults.calls.filter((c) => c.path === ws && ['write', 'ftruncate', 'fdatasync'].includes(c.op)).map((c) => c.op);
  assert.deepEqual(logOps.filter((op) => op === 'fdatasync').length, 1, 'its writes are synchronized: the one fdatasync of the log is of the cut');
  assert.deepEqual(logOps.slice(-3), ['write', 'ftruncate', 'fdatasync'], 'the failed write, the cut, its sync');
  const g = await srv.call('GET', `/api/v1/conversations/${convA.id}`);
  assert.deepEqual({ status: g.status, body: g.body }, { status: 200, body: { conversation: convA } });
  const h = await srv.call('GET', '/healthz', { key: null });
  assert.deepEqual({ status: h.status, body: h.body }, { status: 503, body: STORAGE_FAILED });
  const errors = parsedLogs(srv).filter((l) => l.msg === 'storage failed');
  assert.equal(errors.length, 3, srv.logs.join(''));
  for (const e of errors) assert.equal(e.error, `synchronized write failed on ${ws}: EIO: i/o error, write; writes are refused until restart`);
  await srv.close();

  await restarted(srv, async (again) => {
    assert.deepEqual((await again.call('GET', '/healthz', { key: null })).body, { status: 'ok' });
    assert.deepEqual(await conversationIds(again), [convA.id]);
    assert.deepEqual(corruptFiles(srv.dataDir), []);
    const retry = await createConversation(again, 'FAULT-DSYNC', { externalId: 'ext-dsync' });
    assert.equal(retry.status, 201, retry.text);
  });
});

test('ENOSPC while compacting → the temp file is removed, the log is untouched, and writes go on and survive a restart', async () => {
  const faults = new FaultFs();
  const srv = await faultServer(faults, { compactionSlack: 1_000_000 });
  const a = await createConversation(srv, 'COMPACT-ME');
  assert.equal(a.status, 201);
  for (let i = 0; i < 5; i++) assert.equal((await srv.call('PATCH', `/api/v1/conversations/${a.body.conversation.id}`, { body: { subject: `COMPACT-ME ${i}` } })).status, 200);
  const before = readFileSync(logFile(srv));
  faults.writeFault = { marker: 'COMPACT-ME', code: 'ENOSPC', portion: 0.5 };
  // Patches that are not aimed at by the fault are fine; the snapshot holds the marker and fails.
  await assert.rejects(srv.store.workspace(srv.workspaceId)!.db.compact(), /ENOSPC/);
  faults.clear();
  assert.deepEqual(readFileSync(logFile(srv)), before);
  assert.deepEqual(readdirSync(join(srv.dataDir, 'workspaces')).filter((f) => f.includes('.compact-')), []);
  const b = await createConversation(srv, 'After the failed compaction');
  assert.equal(b.status, 201);
  await srv.close();
  await restarted(srv, async (again) => {
    assert.deepEqual(await conversationIds(again), [a.body.conversation.id, b.body.conversation.id].sort());
    assert.equal((await again.call<ConversationAnswer>('GET', `/api/v1/conversations/${a.body.conversation.id}`)).body.conversation.subject, 'COMPACT-ME 4');
  });
});

test('a failed folder fsync after the compaction rename → later writes 503 (never to the unlinked old file), the reason logged; after a restart every acknowledged write is there', async () => {
  const faults = new FaultFs();
  const srv = await faultServer(faults, { compactionSlack: 1_000_000 });
  const a = await createConversation(srv, 'Compacted');
  assert.equal(a.status, 201);
  for (let i = 0; i < 3; i++) assert.equal((await srv.call('PATCH', `/api/v1/conversations/${a.body.conversation.id}`, { body: { subject: `Compacted ${i}` } })).status, 200);
  faults.fsyncDirFault = 'EIO';
  await srv.store.workspace(srv.workspaceId)!.db.compact();
  faults.clear();
  const b = await createConversation(srv, 'Written after the failed compaction');
  assert.deepEqual({ status: b.status, body: b.body }, { status: 503, body: STORAGE_FAILED });
  const why = parsedLogs(srv).find((l) => l.msg === 'storage failed');
  assert.match(why?.error ?? '', /^fsync of .*workspaces after compacting .*\.log failed: EIO: i\/o error, fsync '.*'; writes are refused until restart$/);
  const h = await srv.call('GET', '/healthz', { key: null });
  assert.deepEqual({ status: h.status, body: h.body }, { status: 503, body: STORAGE_FAILED });
  await srv.close();
  await restarted(srv, async (again) => {
    assert.deepEqual(await conversationIds(again), [a.body.conversation.id]);
    assert.equal((await again.call<ConversationAnswer>('GET', `/api/v1/conversations/${a.body.conversation.id}`)).body.conversation.subject, 'Compacted 2');
    assert.equal((await createConversation(again, 'Accepted again')).status, 201);
  });
});

test('a conversation create undone by ENOSPC does not give its email the customer id it carried: the email takes another id afterwards', async () => {
  const faults = new FaultFs();
  const srv = await faultServer(faults);
  faults.writeFault = { marker: 'FAULT-ID', code: 'ENOSPC', portion: 0 };
  const failed = await createConversation(srv, 'FAULT-ID', { customer: { id: 'ghost-id', email: 'lost@example.com' } });
  assert.deepEqual({ status: failed.status, body: failed.body }, { status: 503, body: STORAGE_FULL });
  faults.clear();
  const next = await createConversation(srv, 'After the fault', { customer: { email: 'LOST@example.com' } });
  assert.equal(next.status, 201, next.text);
  assert.notEqual(next.body.conversation.customer.id, 'ghost-id', 'the undone id is not the email\'s');
  const again = await createConversation(srv, 'Same email', { customer: { id: next.body.conversation.customer.id, email: 'lost@example.com' } });
  assert.equal(again.status, 201, again.text);
  const ghost = await createConversation(srv, 'The undone id', { customer: { id: 'ghost-id', email: 'lost@example.com' } });
  assert.equal(ghost.status, 409, ghost.text);
});

// ---------------------------------------------------------------- data dirs unusable at start

test('a log that cannot be opened at start (EROFS from the seam) → startServer rejects naming the file and the cause, and leaves the data dir unlocked', async () => {
  const dataDir = tempDir();
  const first = await startTestServer({ dataDir });
  await first.close();
  const faults = new FaultFs();
  faults.openFault = 'EROFS';
  await assert.rejects(startTestServer({ dataDir, fs: faults.fs }), (err: Error) => {
    assert.match(err.message, /^EROFS: read-only file system, open '.*system\.log'$/);
    return true;
  });
  assert.ok(!existsSync(join(dataDir, 'LOCK')), 'the lock is released');
  const again = await startTestServer({ dataDir });
  try {
    assert.deepEqual((await again.call('GET', '/healthz', { key: null })).body, { status: 'ok' });
  } finally { await again.close(); }
});

/** A port that was free a moment ago (bound on port 0, then released). */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as { port: number }).port;
  await new Promise((r) => probe.close(r));
  return port;
}

/** A `StoreFs` whose first open of `system.log` waits until `release(error?)` is called. */
function gatedFs(): { fs: StoreFs; opening: Promise<void>; release: (err?: Error) => void } {
  let release!: (err?: Error) => void;
  let reached!: () => void;
  const opening = new Promise<void>((r) => { reached = r; });
  const gate = new Promise<Error | undefined>((r) => { release = r; });
  let held = false;
  const fs: StoreFs = {
    ...nodeFs,
    open: async (path) => {
      if (!held && path.endsWith('system.log')) {
        held = true;
        reached();
        const err = await gate;
        if (err) throw err;
      }
      return nodeFs.open(path);
    },
  };
  return { fs, opening, release };
}

test('requests that reach the port while the data dir is being opened wait for it and are answered once the server is ready', async () => {
  const port = await freePort();
  const gated = gatedFs();
  const starting = startTestServer({ fs: gated.fs, env: { PORT: String(port) } });
  await gated.opening; // the port is bound by now: binding comes first
  let answered = false;
  const early = fetch(`http://127.0.0.1:${port}/healthz`).then(async (r) => { answered = true; return { status: r.status, body: await r.json() }; });
  // Nothing answers while the data dir is held; a request that went through would have to
  // find the store, which does not exist yet.
  await new Promise((r) => setImmediate(r));
  assert.equal(answered, false);
  gated.release();
  const srv = await starting;
  started.push({ srv });
  assert.deepEqual(await early, { status: 200, body: { status: 'ok' } });
  assert.equal(srv.port, port);
});

test('a start that fails after binding (the system log cannot be opened) drops the requests that were waiting, and releases the port and the lock', async () => {
  const port = await freePort();
  const dataDir = tempDir();
  const gated = gatedFs();
  const starting = startTestServer({ dataDir, fs: gated.fs, env: { PORT: String(port) } });
  await gated.opening;
  const early = fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, (e: Error) => e.name);
  gated.release(Object.assign(new Error('EROFS: read-only file system, open'), { code: 'EROFS' }));
  await assert.rejects(starting, /EROFS/);
  assert.equal(await early, 'TypeError', 'fetch failed: the connection was closed without an answer');
  assert.ok(!existsSync(join(dataDir, 'LOCK')), 'the lock is released');
  const again = await startTestServer({ dataDir, env: { PORT: String(port) } });
  started.push({ srv: again });
  assert.equal(again.port, port, 'the port was released');
});

test('DATA_DIR naming a regular file, or a path below one (ENOTDIR) → exit 2 with one stderr line naming it, never listening', async () => {
  const file = join(tempDir(), 'a-file');
  writeFileSync(file, 'not a directory');
  for (const dataDir of [file, join(file, 'data')]) {
    const r = await runServerToExit({ dataDir });
    assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null }, r.stderr);
    const err = lines(r.stderr);
    assert.equal(err.length, 1, r.stderr);
    assert.equal(err[0], `support-workspace: cannot start: data dir ${dataDir} is not usable: ENOTDIR`);
    assert.ok(!r.stdout.includes('"listening"'), r.stdout);
    assert.equal(readFileSync(file, 'utf8'), 'not a directory');
  }
});

/**
 * A copy of what the server process needs (`dist/`, `package.json`) that user `nobody` can read:
 * the checkout itself may sit below a directory only its owner can enter (a home dir of mode
 * 0700), where `nobody` could not load `dist/server.js`. Returns the copy's `dist/server.js` and
 * a function that removes the copy.
 */
function serverReadableByAll(): { serverJs: string; remove: () => void } {
  const repo = dirname(dirname(SERVER_JS));
  const dir = mkdtempSync(join(tmpdir(), 'sw-nobody-'));
  cpSync(join(repo, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(repo, 'package.json'), join(dir, 'package.json'));
  // Whatever the umask made of the copies: directories 0755, files 0644.
  const loosen = (p: string): void => {
    const dirEntry = statSync(p).isDirectory();
    chmodSync(p, dirEntry ? 0o755 : 0o644);
    if (dirEntry) for (const name of readdirSync(p)) loosen(join(p, name));
  };
  loosen(dir);
  return { serverJs: join(dir, 'dist', 'server.js'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs the server as user `nobody` (root's chmod does not restrict root itself), from a copy it can read. */
type NobodyRun = { code: number | null; stdout: string; stderr: string };
async function runAsNobody(dataDir: string, timeoutMs = 15_000): Promise<NobodyRun> {
  const copy = serverReadableByAll();
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, PORT: '0', DATA_DIR: dataDir, SYNC: 'none' };
  const stdio = ['ignore', 'pipe', 'pipe'] as const;
  const proc = spawn(process.execPath, [copy.serverJs], { env, uid: 65534, gid: 65534, stdio: [...stdio] });
  let stdout = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
  proc.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`no exit\n${stdout}\n${stderr}`));
      }, timeoutMs);
      proc.once('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
    });
  } finally { copy.remove(); }
}

test('an unreadable DATA_DIR (mode 000, server not root) → exit 2 with one stderr line naming it and EACCES', { skip: process.getuid?.() !== 0 && 'needs root to run the server as another user' }, async () => {
  const dataDir = join(tempDir(), 'locked');
  mkdirSync(dataDir, { mode: 0o000 });
  chmodSync(join(dataDir, '..'), 0o755);
  const r = await runAsNobody(dataDir);
  assert.equal(r.code, 2, r.stderr);
  assert.deepEqual(lines(r.stderr), [`support-workspace: cannot start: data dir ${dataDir} is not usable: EACCES`]);
  assert.ok(!r.stdout.includes('"listening"'));
});


test('a read-only DATA_DIR (EROFS), empty or holding data → exit 2 with one stderr line; the data is untouched and serves again once writable', async (t) => {
  const mnt = tryMountTmpfs();
  if (!mnt) { t.skip('cannot mount a tmpfs here'); return; }
  try {
    const dataDir = join(mnt, 'data');
    const first = await startTestServer({ dataDir });
    const a = await first.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: { subject: 'Kept', customer } });
    assert.equal(a.status, 201);
    await first.close();
    const snapshot = () => readdirSync(dataDir, { recursive: true }).map(String).sort().map((f) => [f, statSync(join(dataDir, f)).isFile() ? readFileSync(join(dataDir, f), 'latin1') : 'dir']);
    const before = snapshot();
    execFileSync('mount', ['-o', 'remount,ro', mnt]);
    for (const dir of [dataDir, join(mnt, 'fresh')]) {
      const r = await runServerToExit({ dataDir: dir });
      assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null }, r.stderr);
      const err = lines(r.stderr);
      assert.equal(err.length, 1, r.stderr);
      assert.ok(err[0].startsWith(`support-workspace: cannot start: data dir ${dir} is not usable: `), err[0]);
      if (dir === dataDir) assert.ok(err[0].endsWith(': EROFS'), err[0]);
      assert.ok(!r.stdout.includes('"listening"'));
    }
    assert.deepEqual(snapshot(), before);
    execFileSync('mount', ['-o', 'remount,rw', mnt]);
    const again = await startTestServer({ dataDir });
    try {
      const g = await again.call('GET', `/api/v1/conversations/${a.body.conversation.id}`, { key: first.key });
      assert.deepEqual(g.body, a.body);
    } finally { await again.close(); }
  } finally {
    execFileSync('umount', ['-l', mnt], { stdio: 'ignore' });
  }
});
