/**
 * Online backup and restore (docs/storage.md#backup) over real processes: a backup taken through the admin socket
 * in the middle of a write flood, restored and started as a server, holds every write answered before the backup
 * began and no torn line; a damaged backup, or a data dir that is not empty, is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, runCli, startServer, tempDir } from './helpers/child.js';
import type { ConversationAnswer, ConversationList } from './helpers/answers.js';

/** Every conversation id of the server at `url`, page by page. */
async function allConversationIds(url: string, key: string): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor: string | null = null;
  do {
    const q: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
    const page = await call<ConversationList>(url, 'GET', `/api/v1/conversations?limit=100${q}`, { key });
    assert.equal(page.status, 200, page.text);
    for (const c of page.body.conversations) ids.add(c.id);
    cursor = page.body.hasMore ? page.body.nextCursor : null;
  } while (cursor !== null);
  return ids;
}

/** Asserts every line of the log file `path` is complete (ends in a newline) and no line is empty. */
function assertWholeLines(path: string): void {
  const text = readFileSync(path, 'utf8');
  assert.ok(text === '' || text.endsWith('\n'), `${path} ends in a torn line`);
}

test('backup mid-flood: the restored copy holds every write answered before it, and no torn line', async () => {
  const dataDir = tempDir();
  const srv = await startServer({ dataDir, env: { SYNC: 'always', RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000',
    MAX_CONNECTIONS_PER_ADDRESS: '1000000' } });
  let key = '';
  const acked = new Set<string>();
  let flooding = true;
  const backupDir = join(tempDir('sw-backup-'), 'copy');
  try {
    key = await srv.waitForKey();
    const post = async (i: number) => {
      const r = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: {
        subject: `flood ${i}`, customer: { email: 'f@example.com' } } });
      assert.equal(r.status, 201, r.text);
      acked.add(r.body.conversation.id);
      if (acked.size === 200) reached();
    };
    let n = 0;
    let failed: unknown = null;
    let reached = () => {};
    const started = new Promise<void>((r) => { reached = r; });
    const writers = Array.from({ length: 8 }, async () => {
      try { while (flooding) await post(n++); } catch (e) { failed ??= e; flooding = false; reached(); } });
    await started;
    if (failed !== null) throw failed;
    const before = new Set(acked);
    const backup = await runCli<{ object: string; files: number }>(dataDir, ['backup', '--to', backupDir]);
    const during = acked.size;
    console.error(`backup: ${before.size} writes answered before it, ${during} by its end`);
    flooding = false;
    await Promise.all(writers);
    if (failed !== null) throw failed;
    assert.equal(backup.code, 0, backup.stderr);
    assert.equal(backup.json.object, 'backup');
    assert.ok(acked.size > during || during > before.size, 'the flood went on while the backup ran');

    const manifest = JSON.parse(readFileSync(join(backupDir, 'manifest.json'), 'utf8')) as {
      files: { path: string; bytes: number }[] };
    assert.deepEqual(manifest.files.map((f) => f.path).filter((p) => !p.endsWith('.log')).sort(),
      ['master.keys', 'secret']);
    for (const f of manifest.files.filter((x) => x.path.endsWith('.log'))) assertWholeLines(join(backupDir, f.path));

    const restored = join(tempDir('sw-restored-'), 'data');
    const r = await runCli<{ object: string }>(restored, ['restore', '--from', backupDir]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.object, 'restore');
    const copy = await startServer({ dataDir: restored });
    try {
      const ids = await allConversationIds(copy.url, key);
      for (const id of before) assert.ok(ids.has(id), `conversation ${id}, answered before the backup, is missing`);
      assert.ok(ids.size <= acked.size);
      assert.doesNotMatch(copy.stdout, /torn|corrupt/);
    } finally { await copy.stop(); }
  } finally { flooding = false; await srv.stop(); }

  // The server stopped: a backup works on the files too (taking the lock).
  const offline = join(tempDir('sw-backup-'), 'offline');
  const off = await runCli<{ object: string }>(dataDir, ['backup', '--to', offline]);
  assert.equal(off.code, 0, off.stderr);
  assert.ok(readdirSync(offline).includes('manifest.json'));
});

test('restore refuses a damaged backup, a missing manifest and a data dir that is not empty', async () => {
  const dataDir = tempDir();
  const srv = await startServer({ dataDir });
  const backupDir = join(tempDir('sw-backup-'), 'copy');
  try {
    await srv.waitForKey();
    assert.equal((await runCli(dataDir, ['backup', '--to', backupDir])).code, 0);
  } finally { await srv.stop(); }

  const notEmpty = (await runCli(dataDir, ['backup', '--to', backupDir]));
  assert.equal(notEmpty.code, 1);
  assert.equal(notEmpty.stderr, `error: the backup folder ${backupDir} is not empty\n`);

  const full = tempDir('sw-full-');
  writeFileSync(join(full, 'x'), '');
  const busy = await runCli(full, ['restore', '--from', backupDir]);
  assert.equal(busy.code, 1);
  assert.equal(busy.stderr, `error: the data dir ${full} is not empty: restore into a new folder\n`);

  const usage = await runCli(null, ['restore', '--from', backupDir]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /^--data-dir NEW is required\n/);

  const system = join(backupDir, 'system.log');
  const bytes = readFileSync(system);
  const flipped = Buffer.from(bytes);
  flipped[10] ^= 1;
  writeFileSync(system, flipped);
  const target = join(tempDir('sw-restored-'), 'data');
  const bad = await runCli(target, ['restore', '--from', backupDir]);
  assert.equal(bad.code, 1);
  assert.equal(bad.stderr, 'error: the backup is damaged: the SHA-256 of system.log does not match the manifest\n');
  assert.throws(() => readdirSync(target), /ENOENT/, 'nothing was written');

  writeFileSync(system, bytes.subarray(0, bytes.length - 1));
  const short = await runCli(target, ['restore', '--from', backupDir]);
  assert.equal(short.stderr, `error: the backup is damaged: system.log has ${bytes.length - 1} bytes, the manifest ` +
    `says ${bytes.length}\n`);

  const empty = tempDir('sw-nobackup-');
  mkdirSync(join(empty, 'x'));
  const none = await runCli(target, ['restore', '--from', empty]);
  assert.match(none.stderr, /^error: .* is not a backup: manifest.json cannot be read \(ENOENT/);
});
