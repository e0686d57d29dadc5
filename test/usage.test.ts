/**
 * GET /api/v1/usage (docs/api.md#usage): every authenticated request of a
 * workspace counts toward the current UTC month; counts live in memory and are written in a
 * batch (every 5 s, or `usage.flush()`), survive restarts, and roll over at the month boundary
 * of the injected clock.
 */
import { after, before, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, lstatSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { startTestServer, tempDir, type CallOptions, type CallResult, type TestServer } from './helpers/server.js';
import type { Usage } from './helpers/answers.js';

const ENV = { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' };
let srv: TestServer;
before(async () => { srv = await startTestServer({ env: ENV }); });
after(async () => { await srv.close(); });

interface Space { workspaceId: string; key: string; call(method: string, path: string, opts?: CallOptions): Promise<CallResult> }

async function space(on: TestServer = srv): Promise<Space> {
  const { workspaceId, key } = await on.newWorkspace();
  return { workspaceId, key, call: (m, p, o = {}) => on.call(m, p, { key, ...o }) };
}
/** The bootstrap workspace of `on`, reached through `current()` (which may change on restart). */
function bootSpace(key: string, workspaceId: string, current: () => TestServer): Space {
  return { workspaceId, key, call: (m, p, o = {}) => current().call(m, p, { key, ...o }) };
}

const U = '/api/v1/usage';
const JUNE = { periodStart: '2026-06-01T00:00:00.000Z', periodEnd: '2026-07-01T00:00:00.000Z' };
const JULY = { periodStart: '2026-07-01T00:00:00.000Z', periodEnd: '2026-08-01T00:00:00.000Z' };
const usage = (period: { periodStart: string; periodEnd: string }, apiRequests: number, liveApiChecks = 0) =>
  ({ object: 'usage', ...period, apiRequests, liveApiChecks });

async function getUsage(w: Space): Promise<any> {
  const r = await w.call('GET', U);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** Copies a data dir as a crash would leave it (without the lock and the admin socket). */
function copyDataDir(from: string): string {
  const to = tempDir('sw-usage-copy-');
  cpSync(from, to, {
    recursive: true,
    filter: (src) => !basename(src).startsWith('LOCK') && !lstatSync(src).isSocket(),
  });
  return to;
}

/** Stops the periodic flush of `on`, so that only explicit flushes write (a deterministic "crash" point). */
function stopPeriodicFlush(on: TestServer): void {
  clearInterval((on.usage as unknown as { timer: NodeJS.Timeout }).timer);
}

describe('GET /api/v1/usage', () => {
  test('GET /usage in a new workspace → the current UTC month, apiRequests 1 (the call itself), liveApiChecks 0', async () => {
    const w = await space();
    assert.equal(new Date(srv.clock.now()).toISOString().slice(0, 7), '2026-06');
    const r = await w.call('GET', U);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, usage(JUNE, 1, 0));
    assert.deepEqual(Object.keys(r.body), ['object', 'periodStart', 'periodEnd', 'apiRequests', 'liveApiChecks']);
  });

  test('every authenticated request counts — 200, 201, 400, 404 answers, any key of the workspace — grows by exactly the requests made', async () => {
    const w = await space();
    const start = (await getUsage(w)).apiRequests;
    assert.equal(start, 1);
    const other = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'conversations:read' });
    const made: Array<[string, string, CallOptions, number]> = [
      ['GET', '/api/v1/conversations', {}, 200],
      ['POST', '/api/v1/conversations', { body: { subject: 'x', customer: { email: 'a@example.com' } } }, 201],
      ['POST', '/api/v1/conversations', { body: { subject: '' } }, 400],
      ['GET', '/api/v1/conversations/00000000-0000-4000-8000-000000000000', {}, 404],
      ['GET', '/api/v1/conversations?limit=0', {}, 400],
      ['GET', '/api/v1/statuses', {}, 200],
      ['GET', '/api/v1/conversations', { key: other }, 200],
    ];
    for (const [m, p, o, status] of made) assert.equal((await w.call(m, p, o)).status, status, `${m} ${p}`);
    assert.deepEqual(await getUsage(w), usage(JUNE, start + made.length + 1));
    // Reading usage again and again counts each read.
    await getUsage(w);
    assert.deepEqual(await getUsage(w), usage(JUNE, start + made.length + 3));
  });

  test('401 answers (no key, malformed, unknown, revoked, expired) and unauthenticated routes do not count', async () => {
    const w = await space();
    const start = (await getUsage(w)).apiRequests;
    const revoked = await srv.newKey({ workspaceId: w.workspaceId });
    const revokedId = (await srv.admin.listKeys(w.workspaceId)).keys.find((k: any) => revoked.startsWith(k.prefix))!.id;
    await srv.admin.revokeKey(revokedId);
    const expired = await srv.newKey({ workspaceId: w.workspaceId, expiresAt: new Date(srv.clock.now() + 1000).toISOString() });
    srv.clock.advance(2000);
    for (const key of [null, 'svck_short', `svck_${'A'.repeat(43)}`, revoked, expired]) {
      const r = await w.call('GET', '/api/v1/conversations', { key });
      assert.equal(r.status, 401, r.text);
    }
    assert.equal((await w.call('GET', '/healthz', { key: null })).status, 200);
    assert.equal((await w.call('GET', '/api/v1/nowhere')).status, 404);
    assert.deepEqual(await getUsage(w), usage(JUNE, start + 1));
  });

  test('another workspace counts separately', async () => {
    const a = await space();
    const b = await space();
    for (let i = 0; i < 4; i++) await a.call('GET', '/api/v1/conversations');
    assert.deepEqual(await getUsage(b), usage(JUNE, 1));
    assert.deepEqual(await getUsage(a), usage(JUNE, 5));
    assert.deepEqual(await getUsage(b), usage(JUNE, 2));
  });

  test('GET /usage needs usage:read: another scope → 403; usage:read alone → 200', async () => {
    const w = await space();
    const wrong = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'analytics:read,clients:read' });
    const r = await w.call('GET', U, { key: wrong });
    assert.equal(r.status, 403, r.text);
    assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs usage:read.' });
    const right = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'usage:read' });
    assert.equal((await w.call('GET', U, { key: right })).status, 200);
  });

  test('requests are counted in memory: 20 requests write nothing to the log; one flush writes one record', async () => {
    const s = await startTestServer({ env: ENV });
    try {
      stopPeriodicFlush(s);
      const w = await space(s);
      const db = s.store.workspace(w.workspaceId)!.db;
      await s.usage.flush();
      const ops = db.stats().ops;
      for (let i = 0; i < 20; i++) assert.equal((await w.call('GET', '/api/v1/statuses')).status, 200);
      assert.equal(db.stats().ops, ops, 'no write per request');
      await s.usage.flush();
      assert.equal(db.stats().ops, ops + 1, 'one record per workspace and flush');
      assert.deepEqual(await getUsage(w), usage(JUNE, 21));
    } finally {
      await s.close();
    }
  });
});

describe('persistence', () => {
  test('counts survive a restart: flush, close, start on the same data dir → the same counts', async () => {
    const dataDir = tempDir();
    let on = await startTestServer({ dataDir, env: ENV });
    const w = bootSpace(on.key, on.workspaceId, () => on);
    try {
      for (let i = 0; i < 6; i++) await w.call('GET', '/api/v1/conversations');
      assert.deepEqual(await getUsage(w), usage(JUNE, 7));
      await on.usage.flush();
      await on.close();
      on = await startTestServer({ dataDir, env: ENV });
      assert.deepEqual(await getUsage(w), usage(JUNE, 8));
      // A graceful close without an explicit flush writes the pending counts too.
      for (let i = 0; i < 3; i++) await w.call('GET', '/api/v1/conversations');
      await on.close();
      on = await startTestServer({ dataDir, env: ENV });
      assert.deepEqual(await getUsage(w), usage(JUNE, 12));
    } finally {
      await on.close();
    }
  });

  test('a kill without a flush loses only what was not flushed: a copy of the data dir sees the flushed count', async () => {
    const s = await startTestServer({ env: ENV });
    let copy: TestServer | undefined;
    try {
      stopPeriodicFlush(s);
      const w = bootSpace(s.key, s.workspaceId, () => s);
      for (let i = 0; i < 5; i++) await w.call('GET', '/api/v1/conversations');
      await s.usage.flush(); // 5 on disk
      for (let i = 0; i < 7; i++) await w.call('GET', '/api/v1/conversations'); // 7 only in memory
      const dir = copyDataDir(s.dataDir);
      copy = await startTestServer({ dataDir: dir, env: ENV });
      const c = bootSpace(s.key, s.workspaceId, () => copy!);
      assert.deepEqual(await getUsage(c), usage(JUNE, 5 + 1));
      assert.deepEqual(await getUsage(w), usage(JUNE, 5 + 7 + 1));
    } finally {
      await copy?.close();
      await s.close();
    }
  });

  test('the periodic flush writes within 5 s: after the 5 s interval fires (mocked timer), a copy sees every count', async () => {
    // Only setInterval is mocked: the flush interval fires on tick(), without waiting 5 s.
    mock.timers.enable({ apis: ['setInterval'] });
    const s = await startTestServer({ env: ENV });
    let copy: TestServer | undefined;
    try {
      assert.equal(s.usage.flushMs, 5000);
      const w = bootSpace(s.key, s.workspaceId, () => s);
      for (let i = 0; i < 9; i++) await w.call('GET', '/api/v1/conversations');
      const before = copyDataDir(s.dataDir);
      mock.timers.tick(4999);
      mock.timers.tick(1);
      // The flush writes asynchronously: wait (bounded) for the usage line to reach the log.
      const log = join(s.dataDir, 'workspaces', `${s.workspaceId}.log`);
      for (let i = 0; i < 5000 && !readFileSync(log, 'utf8').includes('"usage"'); i++) await new Promise((r) => setImmediate(r));
      assert.ok(readFileSync(log, 'utf8').includes('"usage"'), 'the interval flush wrote the counts');
      copy = await startTestServer({ dataDir: copyDataDir(s.dataDir), env: ENV });
      assert.deepEqual(await getUsage(bootSpace(s.key, s.workspaceId, () => copy!)), usage(JUNE, 10));
      assert.ok(!readFileSync(join(before, 'workspaces', `${s.workspaceId}.log`), 'utf8').includes('"usage"'), 'nothing was written before the interval fired');
    } finally {
      mock.timers.reset();
      await copy?.close();
      await s.close();
    }
  });
});

describe('flush while a flush is writing', () => {
  test('flush() called while an earlier flush is still writing also writes the counts that arrived meanwhile (close() relies on it)', async () => {
    const s = await startTestServer({ env: ENV });
    try {
      stopPeriodicFlush(s);
      const ws = s.store.workspace(s.workspaceId)!;
      s.usage.countRequest(s.workspaceId);
      const first = s.usage.flush(); // takes the pending batch (1) and starts writing it
      s.usage.countRequest(s.workspaceId); // arrives while the first flush is writing
      await s.usage.flush();
      await first;
      assert.deepEqual(ws.get('usage', '2026-06'), { month: '2026-06', apiRequests: 2, liveApiChecks: 0 });
    } finally {
      await s.close();
    }
  });
});

describe('month rollover (injected clock)', () => {
  test('2026-06-30T23:59:59Z + 2 s → periodStart 2026-07-01, the count restarts; June\'s count is kept', async () => {
    const dataDir = tempDir();
    let on = await startTestServer({ dataDir, env: ENV });
    const w = bootSpace(on.key, on.workspaceId, () => on);
    try {
      stopPeriodicFlush(on);
      on.clock.set(Date.parse('2026-06-30T23:59:59Z'));
      for (let i = 0; i < 4; i++) await w.call('GET', '/api/v1/conversations');
      assert.deepEqual(await getUsage(w), usage(JUNE, 5));
      on.clock.advance(2000);
      assert.equal(new Date(on.clock.now()).toISOString(), '2026-07-01T00:00:01.000Z');
      assert.deepEqual(await getUsage(w), usage(JULY, 1));
      await w.call('GET', '/api/v1/conversations');
      assert.deepEqual(await getUsage(w), usage(JULY, 3));
      // June's pending counts are written to June, July's to July.
      await on.close();
      on = await startTestServer({ dataDir, env: ENV, clock: on.clock });
      assert.deepEqual(await getUsage(w), usage(JULY, 4));
      // (Read from the store: moving the clock back would also drain the rate limiter's buckets.)
      assert.deepEqual(on.store.workspace(w.workspaceId)!.get('usage', '2026-06'), { month: '2026-06', apiRequests: 5, liveApiChecks: 0 });
    } finally {
      await on.close();
    }
  });

  test('December → January: periodEnd 2027-01-01, then periodStart 2027-01-01 and periodEnd 2027-02-01', async () => {
    const s = await startTestServer({ env: ENV });
    try {
      const w = bootSpace(s.key, s.workspaceId, () => s);
      s.clock.set(Date.parse('2026-12-31T23:59:59.999Z'));
      assert.deepEqual(await getUsage(w), usage({ periodStart: '2026-12-01T00:00:00.000Z', periodEnd: '2027-01-01T00:00:00.000Z' }, 1));
      s.clock.advance(1);
      assert.deepEqual(await getUsage(w), usage({ periodStart: '2027-01-01T00:00:00.000Z', periodEnd: '2027-02-01T00:00:00.000Z' }, 1));
    } finally {
      await s.close();
    }
  });
});

test('every authenticated request counts, a refused one (403) included; a 401 does not', async () => {
  const s = await startTestServer({ env: ENV });
  try {
    const narrow = await s.newKey({ scopes: 'usage:read' });
    assert.equal((await s.call('GET', '/api/v1/conversations', { key: narrow })).status, 403);
    assert.equal((await s.call('GET', '/api/v1/conversations', { key: 'svck_' + 'x'.repeat(43) })).status, 401);
    const u = await s.call<Usage>('GET', '/api/v1/usage', { key: narrow });
    assert.equal(u.body.apiRequests, 2);
  } finally { await s.close(); }
});

test('a rate-limited request (429) counts as usage like a 403, since it was made with the workspace\'s key; a failed-authentication 429 does not', async () => {
  const s = await startTestServer({ env: { RATE_LIMIT_BURST: '3', RATE_LIMIT_PER_MINUTE: '60' } });
  try {
    const narrow = await s.newKey({ scopes: 'usage:read' });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await s.call('GET', '/api/v1/conversations', { key: narrow })).status);
    statuses.push((await s.call('GET', '/api/v1/usage', { key: narrow })).status);
    assert.deepEqual(statuses, [403, 403, 403, 429]);
    // Lock the address out of failed authentications: those 401s and 429s are nobody's usage.
    for (let i = 0; i < 31; i++) await s.call('GET', '/api/v1/conversations', { key: 'svck_' + 'x'.repeat(43) });
    assert.equal((await s.call('GET', '/api/v1/conversations', { key: null })).status, 429);
    s.clock.advance(1000);
    const u = await s.call<Usage>('GET', '/api/v1/usage', { key: narrow });
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.apiRequests, 5, 'three 403s, one 429 and this request');
  } finally { await s.close(); }
});
