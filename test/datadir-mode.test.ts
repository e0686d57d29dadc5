/**
 * A data dir its group or other users may write is refused at start (docs/security.md#data-dir):
 * the real server process exits 2 with one stderr line naming the mode, before it listens or
 * writes anything; 0755 and 0700 start. The CLI refuses it the same way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, readdirSync } from 'node:fs';
import { runCli, runServerToExit, startServer, tempDir } from './helpers/child.js';

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');

const REFUSED = [[0o777, 'group- and world-writable'], [0o775, 'group-writable'], [0o1777, 'group- and world-writable'],
  [0o757, 'world-writable']] as const;
for (const [mode, what] of REFUSED) {
  const octal = mode.toString(8).padStart(4, '0');
  test(`DATA_DIR with mode ${octal} → exit 2, one stderr line naming the mode, nothing written`, async () => {
    const dataDir = tempDir();
    chmodSync(dataDir, mode);
    const r = await runServerToExit({ dataDir });
    assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null }, r.stderr);
    const line = `support-workspace: cannot start: data dir ${dataDir} is ${what} (mode ${octal}); `
      + 'run chmod go-w on it';
    assert.deepEqual(lines(r.stderr), [line]);
    assert.equal(r.stdout, '', 'no "listening" line');
    assert.deepEqual(readdirSync(dataDir), [], 'the data dir is not touched');
  });
}

for (const mode of [0o755, 0o700]) {
  const octal = mode.toString(8).padStart(4, '0');
  test(`DATA_DIR with mode ${octal} → the server starts and serves`, async () => {
    const dataDir = tempDir();
    chmodSync(dataDir, mode);
    const srv = await startServer({ dataDir });
    try {
      const res = await fetch(`${srv.url}/healthz`);
      assert.equal(res.status, 200);
    } finally {
      assert.deepEqual(await srv.stop(), { code: 0, signal: null }, srv.stderr);
    }
  });
}

test('the CLI refuses a data dir its group or others may write, with the same line, and touches nothing', async () => {
  const dataDir = tempDir();
  chmodSync(dataDir, 0o777);
  const r = await runCli(dataDir, ['workspace', 'list']);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stderr, `error: data dir ${dataDir} is group- and world-writable (mode 0777); run chmod go-w on it\n`);
  assert.equal(r.stdout, '');
  assert.deepEqual(readdirSync(dataDir), [], 'the data dir is not touched');
  chmodSync(dataDir, 0o700);
  const ok = await runCli(dataDir, ['workspace', 'list']);
  assert.equal(ok.code, 0, ok.stderr);
});
