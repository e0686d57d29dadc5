/**
 * The data dir with the real processes (`node dist/server.js`, `node dist/cli.js`): a torn
 * log tail, a corrupt line in one workspace's log (that workspace offline, `repair`), a
 * corrupt system log, and the lock (one writer; a reused pid is not a holder).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, deadPid, runCli, runServerToExit, startServer, tempDir } from './helpers/child.js';
import { damageLine } from './helpers/damage.js';
import type { CliOutput, ConversationAnswer, ConversationList } from './helpers/answers.js';

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');
const customer = { email: 'seed@example.com' };
const STORAGE_FAILED = { code: 'storage_failed', error: "This workspace's data could not be read; see the server log." };
/** The pid a LOCK names (its first line). */
const lockPid = (dataDir: string) => readFileSync(join(dataDir, 'LOCK'), 'utf8').split('\n')[0];

/** A data dir with a bootstrap key and `n` conversations, stopped cleanly; returns its workspace log. */
async function seeded(n: number): Promise<{ dataDir: string; key: string; ids: string[]; log: string }> {
  const srv = await startServer({ env: { SYNC: 'always' } });
  const key = await srv.waitForKey();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: { subject: `Seed ${i}`, customer: { email: 'seed@example.com' } } });
    assert.equal(r.status, 201, r.text);
    ids.push(r.body.conversation.id);
  }
  assert.deepEqual(await srv.stop(), { code: 0, signal: null });
  const dir = join(srv.dataDir, 'workspaces');
  const logs = readdirSync(dir).filter((f) => f.endsWith('.log'));
  assert.equal(logs.length, 1);
  // The graceful stop flushed usage counts last: cut those whole lines so the seeded
  // conversations' lines are the log's last ones, as the tests below expect.
  const log = join(dir, logs[0]);
  const buf = readFileSync(log);
  let end = buf.length;
  while (end > 0) {
    const start = buf.lastIndexOf(0x0a, end - 2) + 1;
    const ops = JSON.parse(buf.subarray(start + 9, end - 1).toString('utf8')) as Array<[string, string]>;
    if (!ops.every((op) => op[1] === 'usage')) break;
    end = start;
  }
  truncateSync(log, end);
  return { dataDir: srv.dataDir, key, ids, log };
}

test('a log whose last line is cut mid-way starts cleanly: the tail is moved to a .corrupt-* file, earlier records are served', async () => {
  const { dataDir, key, ids, log } = await seeded(3);
  const before = readFileSync(log);
  const lastStart = before.lastIndexOf(0x0a, before.length - 2) + 1;
  const cutAt = lastStart + Math.floor((before.length - lastStart) / 2);
  truncateSync(log, cutAt);

  const srv = await startServer({ dataDir });
  try {
    for (const id of ids.slice(0, 2)) {
      const r = await call(srv.url, 'GET', `/api/v1/conversations/${id}`, { key });
      assert.equal(r.status, 200, r.text);
    }
    const lost = await call(srv.url, 'GET', `/api/v1/conversations/${ids[2]}`, { key });
    assert.equal(lost.status, 404);
    assert.equal(statSync(log).size, lastStart, 'the log is cut back to its last whole line');
    const aside = readdirSync(join(dataDir, 'workspaces')).filter((f) => f.includes('.corrupt-'));
    assert.equal(aside.length, 1, `one .corrupt-* file: ${aside}`);
    const warning = srv.logLines().find((l) => l.msg === 'torn log tail set aside');
    assert.deepEqual(warning && { level: warning.level, file: warning.file, keptBytes: warning.keptBytes, savedTo: warning.savedTo },
      { level: 'warn', file: log, keptBytes: lastStart, savedTo: join(dataDir, 'workspaces', aside[0]) }, 'the cut is reported in the log');
    assert.deepEqual(readFileSync(join(dataDir, 'workspaces', aside[0])), before.subarray(lastStart, cutAt), 'the torn bytes are kept aside');
    // The log goes on from the cut: a new write lands after it and survives another restart.
    const w = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: { subject: 'After the cut', customer: { email: 'seed@example.com' } } });
    assert.equal(w.status, 201, w.text);
    ids.push(w.body.conversation.id);
  } finally { assert.deepEqual(await srv.stop(), { code: 0, signal: null }); }

  const again = await startServer({ dataDir });
  try {
    const r = await call<ConversationAnswer>(again.url, 'GET', `/api/v1/conversations/${ids[3]}`, { key });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.conversation.subject, 'After the cut');
    assert.ok(!again.stderr.includes('corrupt'), again.stderr);
    assert.ok(!again.logLines().some((l) => l.msg === 'torn log tail set aside'), 'nothing more to cut on the next start');
  } finally { await again.stop(); }
});

test('a corrupt line in one workspace\'s log: the server starts and serves the other workspaces; that one answers 503 storage_failed until `cli repair --workspace` (through the running server) brings it back without a restart', async () => {
  const first = await startServer({ env: { SYNC: 'always' } });
  const keyA = await first.waitForKey();
  let wsA = '', wsB = '', keyB = '';
  try {
    wsA = (await runCli<CliOutput>(first.dataDir, ['workspace', 'list'])).json.workspaces[0].id;
    wsB = (await runCli<CliOutput>(first.dataDir, ['workspace', 'create', '--name', 'B'])).json.id;
    keyB = (await runCli<CliOutput>(first.dataDir, ['key', 'create', '--workspace', wsB])).json.key;
    for (const [key, subject] of [[keyA, 'A-0'], [keyA, 'A-1'], [keyA, 'A-2'], [keyB, 'B-0']]) {
      assert.equal((await call(first.url, 'POST', '/api/v1/conversations', { key, body: { subject, customer } })).status, 201);
    }
  } finally { assert.deepEqual(await first.stop(), { code: 0, signal: null }); }
  const dataDir = first.dataDir;
  const log = join(dataDir, 'workspaces', `${wsA}.log`);
  const bad = damageLine(log, 'A-1');
  const damaged = readFileSync(log);

  const srv = await startServer({ dataDir });
  try {
    const offline = srv.logLines().find((l) => l.msg === 'workspace offline: its log is corrupt');
    assert.deepEqual(offline && { level: offline.level, workspaceId: offline.workspaceId, file: offline.file, line: offline.line, offset: offline.offset },
      { level: 'error', workspaceId: wsA, file: log, line: bad.line, offset: bad.offset }, srv.stdout);
    const a = await call(srv.url, 'GET', '/api/v1/conversations', { key: keyA });
    assert.deepEqual({ status: a.status, body: a.body }, { status: 503, body: STORAGE_FAILED });
    const b = await call<ConversationList>(srv.url, 'GET', '/api/v1/conversations', { key: keyB });
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(b.body.conversations.map((c: { subject: string }) => c.subject), ['B-0']);
    assert.deepEqual((await call(srv.url, 'GET', '/healthz')).body, { status: 'ok' });

    // The CLI goes on for everything else; on the damaged workspace it says what to do.
    assert.equal((await runCli<CliOutput>(dataDir, ['workspace', 'list'])).json.workspaces.length, 2);
    const tagB = await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', wsB, '--name', 'fine']);
    assert.equal(tagB.code, 0, tagB.stderr);
    const tagA = await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', wsA, '--name', 'nope']);
    assert.equal(tagA.code, 1);
    assert.equal(tagA.stderr, `error: workspace ${wsA} is offline: ${log}: line ${bad.line} (byte offset ${bad.offset}) is corrupt: checksum mismatch; run "cli repair --workspace ${wsA}" to keep a copy of the log and cut it at the last good line\n`);
    assert.deepEqual(readFileSync(log), damaged, 'nothing touched the damaged log');

    const repaired = await runCli<CliOutput>(dataDir, ['repair', '--workspace', wsA]);
    assert.equal(repaired.code, 0, repaired.stderr);
    assert.equal(lockPid(dataDir), String(srv.pid), 'the repair went through the server, which kept its lock');
    const r = repaired.json;
    assert.deepEqual({ object: r.object, workspaceId: r.workspaceId, file: r.file, corruptLine: r.corruptLine, keptBytes: r.keptBytes, droppedBytes: r.droppedBytes },
      { object: 'repair', workspaceId: wsA, file: log, corruptLine: { line: bad.line, offset: bad.offset, reason: 'checksum mismatch' }, keptBytes: bad.offset, droppedBytes: damaged.length - bad.offset });
    assert.ok(Number(r.droppedLines) >= 2, `the bad line and A-2 were dropped: ${repaired.stdout}`);
    assert.match(r.damagedCopy, new RegExp(`^${log.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\.damaged-\\d+$`));
    assert.deepEqual(readFileSync(r.damagedCopy), damaged);

    const back = await call<ConversationList>(srv.url, 'GET', '/api/v1/conversations', { key: keyA });
    assert.equal(back.status, 200, back.text);
    assert.deepEqual(back.body.conversations.map((c: { subject: string }) => c.subject), ['A-0']);
    assert.equal((await call(srv.url, 'POST', '/api/v1/conversations', { key: keyA, body: { subject: 'A-after', customer } })).status, 201);
  } finally { assert.deepEqual(await srv.stop(), { code: 0, signal: null }); }

  const again = await startServer({ dataDir });
  try {
    assert.ok(!again.logLines().some((l) => l.level === 'error'), again.stdout);
    const a = await call<ConversationList>(again.url, 'GET', '/api/v1/conversations', { key: keyA });
    assert.deepEqual(a.body.conversations.map((c: { subject: string }) => c.subject).sort(), ['A-0', 'A-after']);
  } finally { await again.stop(); }
});

test('a corrupt system log still stops the start (exit 2, one line naming file, line, offset and `cli repair --system`); the repair keeps a copy and the next start serves what came before the bad line', async () => {
  const first = await startServer({ env: { SYNC: 'always' } });
  const key = await first.waitForKey();
  const dataDir = first.dataDir;
  const ws = await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'Doomed workspace']);
  assert.equal(ws.code, 0, ws.stderr);
  assert.deepEqual(await first.stop(), { code: 0, signal: null });
  const sys = join(dataDir, 'system.log');
  const bad = damageLine(sys, 'Doomed workspace');
  const damaged = readFileSync(sys);

  const r = await runServerToExit({ dataDir });
  assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null });
  assert.deepEqual(lines(r.stderr), [`support-workspace: cannot start: ${sys}: line ${bad.line} (byte offset ${bad.offset}) is corrupt: checksum mismatch; ` +
    'the system log holds every workspace and key, so nothing can be served: restore it from a backup, or run "cli repair --system" to keep a copy and cut it at the last good line (losing every later line)']);
  assert.ok(!r.stdout.includes('"listening"'));
  assert.deepEqual(readFileSync(sys), damaged);
  assert.ok(!readdirSync(dataDir).includes('LOCK'), 'the refused start leaves no lock behind');

  const repaired = await runCli<CliOutput>(dataDir, ['repair', '--system']);
  assert.equal(repaired.code, 0, repaired.stderr);
  assert.equal(repaired.json.log, 'system');
  assert.deepEqual(repaired.json.corruptLine, { line: bad.line, offset: bad.offset, reason: 'checksum mismatch' });
  assert.deepEqual(readFileSync(repaired.json.damagedCopy), damaged);
  assert.ok(!readdirSync(dataDir).includes('LOCK'), 'the CLI released the lock');

  const srv = await startServer({ dataDir });
  try {
    const g = await call(srv.url, 'GET', '/api/v1/conversations', { key });
    assert.equal(g.status, 200, 'the workspace and key from before the bad line are there');
    const again = await runCli<CliOutput>(dataDir, ['repair', '--system']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, new RegExp(`in use by process ${srv.pid}: a running server has read its system log, so there is nothing to repair`));
  } finally { await srv.stop(); }
});

test('a second server on the same data dir exits 2 naming the lock holder pid — also when the LOCK is in the older pid-only format; the first keeps its lock and keeps serving', async () => {
  const first = await startServer();
  const key = await first.waitForKey();
  try {
    assert.match(readFileSync(join(first.dataDir, 'LOCK'), 'utf8'), new RegExp(`^${first.pid}\\nstarttime \\d+\\n$`));
    for (const format of ['current', 'pid only']) {
      if (format === 'pid only') writeFileSync(join(first.dataDir, 'LOCK'), `${first.pid}\n`);
      const second = await runServerToExit({ dataDir: first.dataDir });
      assert.deepEqual({ code: second.code, signal: second.signal }, { code: 2, signal: null }, format);
      const err = lines(second.stderr);
      assert.equal(err.length, 1, second.stderr);
      assert.match(err[0], new RegExp(`\\b${first.pid}\\b`));
      assert.ok(!second.stdout.includes('"listening"'));
      assert.equal(lockPid(first.dataDir), String(first.pid));
    }
    const r = await call(first.url, 'GET', '/api/v1/conversations', { key });
    assert.equal(r.status, 200);
    const ws = await runCli<CliOutput>(first.dataDir, ['workspace', 'list']);
    assert.equal(ws.code, 0, `the first server's admin socket still answers: ${ws.stderr}`);
  } finally { await first.stop(); }
});

/** A live process that is not a server of ours: the pid a reboot may hand to anything. */
async function unrelated(): Promise<ChildProcess> {
  const proc = spawn('sleep', ['600'], { stdio: 'ignore' });
  await new Promise((resolve, reject) => { proc.once('spawn', resolve); proc.once('error', reject); });
  return proc;
}

test('a stale LOCK is taken over: a dead pid, an empty file, or a live unrelated process that reused the pid (another start time, or pid-only and no admin socket answering)', async () => {
  const sleeper = await unrelated();
  try {
    const startOfSleeper = readFileSync(`/proc/${sleeper.pid}/stat`, 'latin1').split(') ')[1].split(' ')[19];
    for (const content of [`${await deadPid()}\n`, '', `${sleeper.pid}\nstarttime ${Number(startOfSleeper) + 1}\n`, `${sleeper.pid}\n`]) {
      const dataDir = tempDir();
      writeFileSync(join(dataDir, 'LOCK'), content);
      const srv = await startServer({ dataDir });
      try {
        await srv.waitForKey();
        assert.equal(lockPid(dataDir), String(srv.pid), JSON.stringify(content));
      } finally { assert.deepEqual(await srv.stop(), { code: 0, signal: null }); }
      assert.deepEqual(readdirSync(dataDir).filter((f) => f.startsWith('LOCK')), [], 'released on a clean stop, nothing left aside');
    }
  } finally { sleeper.kill('SIGKILL'); }
});

test('the CLI works on the files when the LOCK names a reused pid (it neither waits for nor calls a server that is not there)', async () => {
  const sleeper = await unrelated();
  try {
    const dataDir = tempDir();
    writeFileSync(join(dataDir, 'LOCK'), `${sleeper.pid}\n`);
    const ws = await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'After a reboot']);
    assert.equal(ws.code, 0, ws.stderr);
    assert.ok(!readdirSync(dataDir).includes('LOCK'), 'the CLI took the stale lock and released it');
    assert.deepEqual((await runCli<CliOutput>(dataDir, ['workspace', 'list'])).json.workspaces.map((w: { name: string }) => w.name), ['After a reboot']);
  } finally { sleeper.kill('SIGKILL'); }
});
