/**
 * `cli workspace identity-secret --workspace ID` (docs/api.md#identity-verification): a `svci_` secret printed once,
 * stored only sealed (no data-dir file holds it), replaced by the next one; an unknown workspace → exit 1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempDir } from './helpers/child.js';
import type { CliOutput } from './helpers/answers.js';

const files = (dir: string): string[] => readdirSync(dir).flatMap((n) => {
  const p = join(dir, n);
  return statSync(p).isDirectory() ? files(p) : [p];
});

test('workspace identity-secret → svci_ shown once, sealed on disk, a second one differs; unknown workspace → exit 1', async () => {
  const dataDir = tempDir();
  const ws = (await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'Shop'])).json;
  const a = await runCli<CliOutput>(dataDir, ['workspace', 'identity-secret', '--workspace', ws.id]);
  assert.equal(a.code, 0, a.stderr);
  assert.deepEqual(Object.keys(a.json), ['object', 'workspaceId', 'secret', 'createdAt']);
  assert.equal(a.json.object, 'identity_secret');
  const secretA = String(a.json.secret);
  assert.match(secretA, /^svci_[0-9A-Za-z]{43}$/);
  const b = await runCli<CliOutput>(dataDir, ['workspace', 'identity-secret', '--workspace', ws.id]);
  const secretB = String(b.json.secret);
  assert.notEqual(secretB, secretA);
  for (const f of files(dataDir)) {
    const text = readFileSync(f, 'latin1');
    assert.ok(!text.includes(secretA) && !text.includes(secretB), `${f} holds an identity secret`);
  }
  const none = await runCli<CliOutput>(dataDir, ['workspace', 'identity-secret', '--workspace', '00000000-0000-4000-8000-000000000000']);
  assert.equal(none.code, 1);
  const missing = await runCli<CliOutput>(dataDir, ['workspace', 'identity-secret']);
  assert.equal(missing.code, 2);
});
