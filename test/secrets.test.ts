/**
 * Secrets (docs/security.md#secrets-in-answers-and-logs). The harness (test/helpers/server.ts) watches every API key and
 * every credential secret a test makes or sends: any answer holding one fails the call, and
 * close() fails when a data-dir file or a log line holds one — so the whole suite is a scan.
 * These tests show that the scan would catch a leak, and that credentials are sealed per source.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer } from './helpers/server.js';
import type { Ingestion } from './helpers/answers.js';

const SECRET = 'sk_live_9f8e7d6c5b4a39281706';

test('the harness\'s scan fails close() when a data-dir file holds a credential', async () => {
  const srv = await startTestServer();
  const src = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { content: '# Docs\n\nHello.' } });
  await srv.call('PATCH', `/api/v1/sources/${src.body.source.id}`, { body: { auth: { type: 'bearer', secret: SECRET } } });
  appendFileSync(join(srv.dataDir, 'planted.txt'), `oops ${SECRET}\n`);
  await assert.rejects(srv.close(), /SECRET LEAK: .*planted\.txt contains a key or credential/);
});

test('the harness\'s scan fails close() when a log line holds an API key', async () => {
  const srv = await startTestServer();
  srv.logs.push(JSON.stringify({ msg: 'debugging', header: `Bearer ${srv.key}` }));
  await assert.rejects(srv.close(), /SECRET LEAK: a log line contains a key or credential/);
});

test('a credential is stored only sealed (AES-256-GCM with a key id), bound to its workspace and source', async () => {
  const srv = await startTestServer();
  try {
    const a = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { content: '# A\n\nOne.' } });
    const b = await srv.call('POST', '/api/v1/sources', { body: { content: '# B\n\nTwo.' } });
    const r = await srv.call<Ingestion>('PATCH', `/api/v1/sources/${a.body.source.id}`, { body: { auth: { type: 'bearer', secret: SECRET } } });
    assert.deepEqual(r.body.source.auth, { configured: true, hasSecret: true, lastError: null, lastVerifiedAt: null, status: 'unverified', type: 'bearer' });
    const ws = srv.store.workspace(srv.workspaceId)!;
    const sealed = (ws.get('source', a.body.source.id))!.credential!.sealed;
    assert.match(sealed.kid, /^k\d+$/);
    const log = readdirSync(join(srv.dataDir, 'workspaces')).map((f) => readFileSync(join(srv.dataDir, 'workspaces', f), 'utf8')).join('');
    assert.ok(log.includes(sealed.ct) && !log.includes(SECRET));
  } finally { await srv.close(); }
});

test('secrets rotate: a new active key id, every credential sealed again and still opening; a ciphertext moved to another source does not open', async () => {
  const srv = await startTestServer();
  try {
    const ids: string[] = [];
    for (const name of ['A', 'B']) {
      const r = await srv.call<Ingestion>('POST', '/api/v1/sources', { body: { content: `# ${name}\n\nText.` } });
      ids.push(r.body.source.id);
      await srv.call('PATCH', `/api/v1/sources/${r.body.source.id}`, { body: { auth: { type: 'bearer', secret: `${SECRET}-${name}` } } });
    }
    const ws = srv.store.workspace(srv.workspaceId)!;
    const sealedOf = (id: string) => ws.get('source', id)!.credential!.sealed;
    const before = sealedOf(ids[0]);
    const rotated = await srv.admin.rotateSecrets();
    assert.deepEqual(rotated, { object: 'secrets_rotation', activeKeyId: 'k2', credentialsResealed: 2 });
    const after = sealedOf(ids[0]);
    assert.equal(after.kid, 'k2');
    assert.notEqual(after.ct, before.ct);
    const { SecretBox } = await import('../src/core/secrets.js');
    const box = SecretBox.load(srv.dataDir);
    assert.equal(box.open(after, `${srv.workspaceId}/${ids[0]}`), `${SECRET}-A`);
    assert.equal(box.open(sealedOf(ids[1]), `${srv.workspaceId}/${ids[1]}`), `${SECRET}-B`);
    assert.equal(box.open(before, `${srv.workspaceId}/${ids[0]}`), `${SECRET}-A`, 'the retired key still opens old backups');
    assert.throws(() => box.open(sealedOf(ids[0]), `${srv.workspaceId}/${ids[1]}`), /altered or belongs to another source/);
    const tampered = { ...after, tag: Buffer.alloc(16).toString('base64') };
    assert.throws(() => box.open(tampered, `${srv.workspaceId}/${ids[0]}`), /altered/);
    // The rotation is durable: after a restart the credential is the resealed one.
    await srv.close();
    const again = await startTestServer({ dataDir: srv.dataDir });
    try {
      const w2 = again.store.workspace(srv.workspaceId)!;
      assert.equal(w2.get('source', ids[0])!.credential!.sealed.kid, 'k2');
    } finally { await again.close(); }
  } catch (e) { await srv.close().catch(() => {}); throw e; }
});
