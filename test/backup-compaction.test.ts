/**
 * Online backup against a compaction caught between its rename and its switch to the new file
 * (docs/storage.md#backup): the log's path then names the new file while the log still writes the
 * old descriptor, so no cut can be taken. The backup waits for that compaction to settle and cuts
 * then, instead of giving up. The window is held open by an injected file system.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeFs, type StoreFs } from '../src/store/log/fs.js';
import { ManualClock } from '../src/core/clock.js';
import { openStore } from '../src/domain/workspace.js';
import { backupTo } from '../src/admin/backup.js';

test('a backup asked for while a compaction has renamed but not switched waits for it, and copies the whole log', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sw-bkc-'));
  let hold: Promise<void> | null = null;
  let release = () => {};
  let held = () => {};
  const reached = new Promise<void>((r) => { held = r; });
  const fs: StoreFs = { ...nodeFs, fsyncDir: async (dir) => {
    if (hold !== null) { held(); await hold; }
    return nodeFs.fsyncDir(dir);
  } };
  const store = await openStore({ dataDir, sync: true, clock: new ManualClock(), fs, compactionSlack: 1_000_000 });
  try {
    for (let i = 0; i < 20; i++) {
      const tx = store.system.begin();
      tx.put('user', `u${i}`, { id: `u${i}`, email: `u${i}@example.com` } as never);
      await store.system.commit(tx);
    }
    hold = new Promise<void>((r) => { release = r; });
    const compaction = store.system.compact();
    await reached; // renamed, old descriptor closed, writes paused
    let done = false;
    const backup = backupTo(store, join(mkdtempSync(join(tmpdir(), 'sw-bkc-to-')), 'copy')).then((b) => { done = true; return b; });
    for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
    assert.equal(done, false, 'the backup waits for the compaction rather than cutting a file the log no longer writes');
    hold = null;
    release();
    await compaction;
    const b = await backup;
    const manifest = JSON.parse(readFileSync(join(b.to, 'manifest.json'), 'utf8')) as { files: { path: string; bytes: number }[] };
    const system = manifest.files.find((f) => f.path === 'system.log');
    assert.ok(system, 'system.log is in the backup');
    const copy = readFileSync(join(b.to, 'system.log'), 'utf8');
    assert.equal(system.bytes, copy.length);
    for (let i = 0; i < 20; i++) assert.ok(copy.includes(`u${i}@example.com`), `user u${i} is in the copy`);
  } finally { await store.close(); }
});
