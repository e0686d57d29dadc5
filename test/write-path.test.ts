/**
 * One write path per request (docs/decisions.md#one-write-path-per-request): a handler writes
 * through `ctx.tx()` and the pipeline commits; a handler that must make state durable before a
 * long step calls `ctx.commit()`, which the pipeline runs. Checked over HTTP on a real server
 * with a wrapped route, and in the source: no API area module commits a transaction by itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiError } from '../src/http/errors.js';
import type { Route } from '../src/http/route.js';
import { nodeFs, type StoreFs } from '../src/store/log/fs.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const customer = { email: 'ada@example.com' };
const CONFLICT = { code: 'conflict', error: 'A record with this identifier already exists: planted after a durable step.' };
const STORAGE_FULL = { code: 'storage_full', error: 'The server is out of disk space and saved nothing; try again later.' };

/**
 * Wraps a route's handler (the router holds the same route objects, which are module-level:
 * shared by every server of this process); returns what puts it back.
 */
function wrap(srv: TestServer, method: string, path: string, fn: (inner: Route['handler']) => Route['handler']): () => void {
  const r = srv.routes.find((x) => x.method === method && x.path === path);
  assert.ok(r, `no route ${method} ${path}`);
  const inner = r.handler;
  r.handler = fn(inner);
  return () => { r.handler = inner; };
}

const logOf = (srv: TestServer) => readFileSync(join(srv.dataDir, 'workspaces', `${srv.workspaceId}.log`), 'utf8');
const tagNames = (srv: TestServer) => [...srv.store.workspace(srv.workspaceId)!.db.table('tag').values()].map((t) => t.name).sort();

test('ctx.commit(): what the handler wrote is on disk before it goes on; later writes are committed with the answer, or undone by a failure', async () => {
  const srv = await startTestServer();
  const onDiskMidRequest: boolean[] = [];
  let fail = false;
  const unwrap = wrap(srv, 'POST', '/api/v1/conversations', (inner) => async (ctx) => {
    const tag = `durable-${ctx.requestId}`;
    ctx.tx().put('tag', tag, { id: tag, name: tag, createdAt: new Date(ctx.now).toISOString() });
    await ctx.commit();
    onDiskMidRequest.push(logOf(srv).includes(tag));
    ctx.tx().put('tag', `later-${ctx.requestId}`, { id: `later-${ctx.requestId}`, name: `later-${ctx.requestId}`, createdAt: new Date(ctx.now).toISOString() });
    if (fail) throw new ApiError('conflict', 'planted after a durable step');
    return inner(ctx);
  });
  try {
    const ok = await srv.call('POST', '/api/v1/conversations', { body: { subject: 'Kept', customer }, headers: { 'X-Request-Id': 'one' } });
    assert.equal(ok.status, 201, ok.text);
    fail = true;
    const refused = await srv.call('POST', '/api/v1/conversations', { body: { subject: 'Refused', customer }, headers: { 'X-Request-Id': 'two' } });
    assert.deepEqual([refused.status, refused.body], [409, CONFLICT]);
    assert.deepEqual(onDiskMidRequest, [true, true]);
    assert.deepEqual(tagNames(srv), ['durable-one', 'durable-two', 'later-one']);
  } finally { unwrap(); await srv.close(); }
  const again = await startTestServer({ dataDir: srv.dataDir });
  try {
    const names = [...again.store.workspace(srv.workspaceId)!.db.table('tag').values()].map((t) => t.name).sort();
    assert.deepEqual(names, ['durable-one', 'durable-two', 'later-one']);
    const list = await again.call('GET', '/api/v1/conversations', { key: srv.key });
    assert.deepEqual((list.body as { conversations: Array<{ subject: string }> }).conversations.map((c) => c.subject), ['Kept']);
  } finally { await again.close(); }
});

test('a ctx.commit() that fails (disk full) answers 503 storage_full and leaves nothing of the request', async () => {
  let full = false;
  const fs: StoreFs = { ...nodeFs, write: async (fd, buf, pos) => { if (full) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }); return nodeFs.write(fd, buf, pos); } };
  const srv = await startTestServer({ fs });
  let reachedAfter = false;
  const unwrap = wrap(srv, 'POST', '/api/v1/conversations', (inner) => async (ctx) => {
    ctx.tx().put('tag', 'first-step', { id: 'first-step', name: 'first-step', createdAt: new Date(ctx.now).toISOString() });
    await ctx.commit();
    reachedAfter = true;
    return inner(ctx);
  });
  try {
    full = true;
    const r = await srv.call('POST', '/api/v1/conversations', { body: { subject: 'No room', customer } });
    assert.deepEqual([r.status, r.body, r.headers.get('retry-after')], [503, STORAGE_FULL, '30']);
    assert.equal(reachedAfter, false);
    assert.deepEqual(tagNames(srv), []);
    full = false;
    const again = await srv.call('POST', '/api/v1/conversations', { body: { subject: 'Room again', customer } });
    assert.equal(again.status, 201, again.text);
    assert.deepEqual(tagNames(srv), ['first-step']);
  } finally { unwrap(); await srv.close(); }
});

test('no API area module begins or commits a transaction by itself: handlers write through ctx.tx() and ctx.commit()', () => {
  const areas = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'src', 'areas');
  // The exceptions write outside any request: failing interrupted ingestions at start-up, the
  // usage counts flushed every 5 s, the webhook dispatcher recording its attempts, the agents'
  // answers to live-chat customers once a customer's message is on disk, and the CLI's new identity secret.
  const allowed = new Set(['sources/state.ts', 'usage/counter.ts', 'webhooks/dispatcher.ts', 'answers/autoReply.ts',
    'widget/identity.ts']);
  const files = (readdirSync(areas, { recursive: true }) as string[]).map((f) => f.split(sep).join('/')).filter((f) => f.endsWith('.ts'));
  assert.ok(files.includes('sources/sources.ts') && files.includes('issues.ts'), 'the walk reaches every area folder');
  const offenders: string[] = [];
  for (const f of files.filter((n) => !allowed.has(n))) {
    const text = readFileSync(join(areas, f), 'utf8');
    for (const m of text.matchAll(/\bdb\.(?:begin|commit)\([^)]*\)/g)) offenders.push(`${f}: ${m[0]}`);
  }
  assert.deepEqual(offenders, []);
  for (const f of allowed) assert.ok(files.includes(f), `${f} is still there (else drop it from the exceptions)`);
});
