/**
 * Starting and stopping the real server process (docs/configuration.md#starting-and-stopping,
 * docs/configuration.md#invalid-settings):
 * invalid settings, an unusable data dir, the bootstrap key, graceful SIGTERM, access logs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { call, runCli, runServerToExit, startServer, tempDir } from './helpers/child.js';
import type { CliOutput, ConversationAnswer, ErrorAnswer } from './helpers/answers.js';

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');
const customer = { email: 'ada@example.com', name: 'Ada' };

const invalidSettings: Array<[string, string]> = [
  ['PORT', 'abc'],
  ['PORT', '70000'],
  ['SYNC', 'sometimes'],
  ['LOG_LEVEL', 'loud'],
  ['BOOTSTRAP', 'maybe'],
  ['RATE_LIMIT_BURST', '0'],
  ['HOST', ''],
  ['HOST', 'not a host'],
  ['HOST', 'http://127.0.0.1'],
  ['HOST', '[::1]'],
  ['HOST', 'bad_label.example'],
];

for (const [name, value] of invalidSettings) {
  test(`${name}=${value} → exit 2 with one stderr line naming ${name}, never listening, data dir untouched`, async () => {
    const dataDir = tempDir();
    const r = await runServerToExit({ dataDir, env: { [name]: value } });
    assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null });
    const err = lines(r.stderr);
    assert.equal(err.length, 1, r.stderr);
    assert.match(err[0], new RegExp(`\\b${name}\\b`));
    assert.ok(err[0].includes(JSON.stringify(value)), `the line quotes the bad value: ${err[0]}`);
    assert.equal(r.stdout, '', 'nothing on stdout, so no "listening" line');
    assert.deepEqual(readdirSync(dataDir), [], 'the data dir is not touched');
  });
}

test('DATA_DIR naming a regular file → exit 2 with one stderr line naming the data dir', async () => {
  const file = join(tempDir(), 'not-a-dir');
  writeFileSync(file, 'hello');
  for (const dataDir of [file, join(file, 'below')]) {
    const r = await runServerToExit({ dataDir });
    assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null });
    const err = lines(r.stderr);
    assert.equal(err.length, 1, r.stderr);
    assert.ok(err[0].includes(dataDir), err[0]);
    assert.match(err[0], /ENOTDIR|EEXIST|not usable/);
    assert.ok(!r.stdout.includes('"listening"'), r.stdout);
  }
});

test('PORT already in use → exit 2 with one stderr line, and the data dir is released (no LOCK left)', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  try {
    const dataDir = tempDir();
    const r = await runServerToExit({ dataDir, env: { PORT: String(port), BOOTSTRAP: 'false' } });
    assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null });
    const err = lines(r.stderr);
    assert.equal(err.length, 1, r.stderr);
    assert.match(err[0], /EADDRINUSE/);
    assert.ok(!r.stdout.includes('"listening"'));
    assert.ok(!existsSync(join(dataDir, 'LOCK')), 'the lock is released');
  } finally { await new Promise((r) => blocker.close(r)); }
});

for (const [host, why] of [['not-a-host', /^support-workspace: cannot start: HOST "not-a-host" does not resolve to an address \((ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL)\)$/], ['192.0.2.1', /^support-workspace: cannot start: HOST "192\.0\.2\.1" is not an address of this machine \(EADDRNOTAVAIL\)$/]] as const) {
  test(`HOST=${host} (${host === 'not-a-host' ? 'a name that does not resolve' : 'an address of no interface here'}) → exit 2 with one stderr line naming HOST, the empty data dir left empty`, async () => {
    const dataDir = tempDir();
    const r = await runServerToExit({ dataDir, env: { HOST: host } });
    assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null }, r.stderr);
    const err = lines(r.stderr);
    assert.equal(err.length, 1, r.stderr);
    assert.match(err[0], why);
    assert.equal(r.stdout, '', 'no log line: nothing was opened');
    assert.deepEqual(readdirSync(dataDir), [], 'no lock, no log, no secret, no bootstrap workspace');
  });
}

test('PORT already in use with BOOTSTRAP on → exit 2 before the data dir is touched: no bootstrap key printed, no workspace, no file', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  try {
    const dataDir = tempDir();
    const r = await runServerToExit({ dataDir, env: { PORT: String(port) } });
    assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null }, r.stderr);
    assert.deepEqual(lines(r.stderr), [`support-workspace: cannot start: PORT ${port} is already in use on "127.0.0.1" (EADDRINUSE)`]);
    assert.equal(r.stdout, '');
    assert.deepEqual(readdirSync(dataDir), [], 'no bootstrap workspace or key was written');
    // The next start on a free port bootstraps as usual: nothing was half-made.
    const srv = await startServer({ dataDir });
    try {
      const key = await srv.waitForKey();
      assert.equal((await call(srv.url, 'GET', '/api/v1/conversations', { key })).status, 200);
    } finally { await srv.stop(); }
  } finally { await new Promise((r) => blocker.close(r)); }
});

test('a DATA_DIR too long for a Unix socket path: served from a nearby working dir, else exit 2 with one line before anything is written', async () => {
  const parent = tempDir();
  const dataDir = join(parent, 'd'.repeat(50), 'e'.repeat(40));
  mkdirSync(dataDir, { recursive: true });
  assert.ok(Buffer.byteLength(join(dataDir, 'admin.sock')) > 108);

  const far = await runServerToExit({ dataDir, cwd: '/' });
  assert.deepEqual({ code: far.code, signal: far.signal }, { code: 2, signal: null }, far.stderr);
  const err = lines(far.stderr);
  assert.equal(err.length, 1, far.stderr);
  assert.match(err[0], /admin socket path .*admin\.sock is longer than/);
  assert.ok(!far.stdout.includes('"listening"'), far.stdout);
  assert.deepEqual(readdirSync(dataDir), [], 'no workspace was bootstrapped, no lock left');

  const near = await startServer({ dataDir, cwd: parent });
  try {
    await near.waitForKey();
    const ws = await runCli<CliOutput>(dataDir, ['workspace', 'list'], { cwd: parent });
    assert.equal(ws.code, 0, ws.stderr);
    assert.equal(ws.json.workspaces.length, 1);
    const elsewhere = await runCli<CliOutput>(dataDir, ['workspace', 'list'], { cwd: '/' });
    assert.equal(elsewhere.code, 1);
    assert.match(elsewhere.stderr, /admin socket path/);
  } finally { assert.deepEqual(await near.stop(), { code: 0, signal: null }); }
});

test('SIGTERM the moment the "listening" line appears → a graceful stop with exit 0, every time', async () => {
  const dataDir = tempDir();
  for (let i = 0; i < 5; i++) {
    const srv = await startServer({ dataDir });
    assert.deepEqual(await srv.stop('SIGTERM'), { code: 0, signal: null }, srv.stderr);
    assert.ok(srv.logLines().some((l) => l.msg === 'stopped'), srv.stdout);
  }
});

test('first start on an empty data dir prints the key once; a second start on the same dir prints none', async () => {
  const dataDir = tempDir();
  const first = await startServer({ dataDir });
  const key = await first.waitForKey();
  assert.match(key, /^svck_[0-9A-Za-z]{43,}$/);
  assert.equal(await first.stop(), first.exit);
  assert.deepEqual(first.exit, { code: 0, signal: null });
  assert.equal(first.stderr.split('svck_').length - 1, 1, 'the key appears exactly once on stderr');
  assert.ok(!first.stdout.includes('svck_'), 'the key never reaches the JSON logs');

  const second = await startServer({ dataDir });
  try {
    const r = await call(second.url, 'GET', '/api/v1/conversations', { key });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { object: 'list', hasMore: false, nextCursor: null, conversations: [] });
  } finally { await second.stop(); }
  assert.deepEqual(second.exit, { code: 0, signal: null });
  assert.ok(!second.stderr.includes('svck_'), second.stderr);
  assert.ok(!second.stderr.includes('API key'), second.stderr);
});

test('BOOTSTRAP=false on an empty data dir prints no key and creates no workspace', async () => {
  const dataDir = tempDir();
  const srv = await startServer({ dataDir, env: { BOOTSTRAP: 'false' } });
  const r = await call<ErrorAnswer>(srv.url, 'GET', '/api/v1/conversations');
  assert.equal(r.status, 401);
  assert.equal(r.body.code, 'unauthorized');
  assert.deepEqual(await srv.stop(), { code: 0, signal: null });
  assert.ok(!srv.stderr.includes('svck_'), srv.stderr);
  const list = await runCli<CliOutput>(dataDir, ['workspace', 'list']);
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual(list.json, { object: 'list', workspaces: [] });
});

test('SIGTERM → in-flight writes finish, exit 0, and a restart serves every acknowledged write', async () => {
  const dataDir = tempDir();
  const srv = await startServer({ dataDir, env: { SYNC: 'always', RATE_LIMIT_BURST: '100000' } });
  const key = await srv.waitForKey();
  const first = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: { subject: 'Before the signal', customer } });
  assert.equal(first.status, 201, first.text);

  // Writes racing the signal: each either completes (2xx) or is refused, never half-done.
  const acked: Array<{ id: string; subject: string }> = [];
  let signalled = false;
  const writes = Array.from({ length: 40 }, (_, i) => (async () => {
    const subject = `racing ${i}`;
    const r = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: { subject, customer, externalId: `race-${i}` } });
    if (r.status === 201) acked.push({ id: r.body.conversation.id, subject });
    else assert.equal(r.status, 503, r.text);
    if (!signalled) { signalled = true; srv.proc.kill('SIGTERM'); }
  })().catch((e: Error) => { if (!/fetch failed|ECONN|socket/i.test(e.message + String(e.cause))) throw e; }));
  await Promise.all(writes);
  assert.deepEqual(await srv.exited, { code: 0, signal: null }, srv.stderr);
  const logs = srv.logLines();
  assert.ok(logs.some((l) => l.msg === 'stopped'), srv.stdout);

  const again = await startServer({ dataDir });
  try {
    const r = await call(again.url, 'GET', `/api/v1/conversations/${first.body.conversation.id}`, { key });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, first.body);
    for (const a of acked) {
      const g = await call<ConversationAnswer>(again.url, 'GET', `/api/v1/conversations/${a.id}`, { key });
      assert.equal(g.status, 200, g.text);
      assert.equal(g.body.conversation.subject, a.subject);
    }
  } finally { await again.stop(); }
});

test('access log lines on stdout are JSON with requestId, method, route, status, durationMs — never the key or a body value', async () => {
  const srv = await startServer();
  const key = await srv.waitForKey();
  const marker = `MARKER${randomUUID().replaceAll('-', '')}`;
  const ok = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', {
    key, headers: { 'X-Request-Id': 'req-access-log-1' },
    body: { subject: `Subject ${marker}`, customer: { email: `${marker.toLowerCase()}@example.com`, name: marker }, externalId: marker },
  });
  assert.equal(ok.status, 201, ok.text);
  const bad = await call(srv.url, 'POST', '/api/v1/conversations', { key, body: { subject: 'x', customer, [marker]: marker } });
  assert.equal(bad.status, 400, bad.text);
  const unauth = await call(srv.url, 'GET', '/api/v1/conversations', { key: `svck_${marker}` });
  assert.equal(unauth.status, 401);
  const msg = await call(srv.url, 'POST', `/api/v1/conversations/${ok.body.conversation.id}/messages`, { key, body: { role: 'user', body: `body ${marker}` } });
  assert.equal(msg.status, 201, msg.text);
  // A client's id JSON must escape, on the batched stdout's byte path.
  const quoted = 'id "with" \\ quotes';
  const q = await call(srv.url, 'GET', '/api/v1/tags', { key, headers: { 'X-Request-Id': quoted } });
  assert.equal(q.headers.get('x-request-id'), quoted);
  assert.deepEqual(await srv.stop(), { code: 0, signal: null });

  for (const l of lines(srv.stdout)) assert.doesNotThrow(() => JSON.parse(l), `not JSON: ${l}`);
  const requests = srv.logLines().filter((l) => l.msg === 'request');
  assert.equal(requests.length, 5, srv.stdout);
  for (const r of requests) {
    assert.equal(typeof r.requestId, 'string');
    assert.equal(typeof r.method, 'string');
    assert.equal(typeof r.route, 'string');
    assert.equal(typeof r.status, 'number');
    assert.equal(typeof r.durationMs, 'number');
    assert.ok((r.durationMs as number) >= 0);
  }
  const created = requests.find((r) => r.requestId === 'req-access-log-1');
  assert.deepEqual(
    { method: created?.method, route: created?.route, status: created?.status },
    { method: 'POST', route: 'POST /api/v1/conversations', status: 201 });
  assert.deepEqual(requests.map((r) => r.status), [201, 400, 401, 201, 200]);
  assert.equal(requests[3].route, 'POST /api/v1/conversations/{conversationId}/messages');
  // The ids the server made are those its answers carried; the client's is logged as sent.
  assert.deepEqual([requests[1].requestId, requests[3].requestId], [bad.headers.get('x-request-id'), msg.headers.get('x-request-id')]);
  assert.match(String(requests[1].requestId), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(requests[4].requestId, quoted);
  assert.ok(!srv.stdout.includes(key), 'the API key is never logged');
  assert.ok(!srv.stdout.includes('svck_'), 'no key material is logged');
  assert.ok(!srv.stdout.toLowerCase().includes(marker.toLowerCase()), 'no request body value (nor the bad key) is logged');
  assert.ok(!existsSync(join(srv.dataDir, 'LOCK')), 'a clean stop releases the lock');
});
