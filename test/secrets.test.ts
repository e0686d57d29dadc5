/**
 * Secrets (issue #5 point 7). The harness (test/helpers/server.ts) watches every API key and
 * every credential secret a test makes or sends: any answer holding one fails the call, and
 * close() fails when a data-dir file or a log line holds one — so the whole suite is a scan.
 * These tests show that the scan would catch a leak, and that credentials are sealed per source.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer } from './helpers/server.js';

const SECRET = 'sk_live_9f8e7d6c5b4a39281706';

test('the harness\'s scan fails close() when a data-dir file holds a credential', async () => {
  const srv = await startTestServer();
  const src = await srv.call('POST', '/api/v1/sources', { body: { content: '# Docs\n\nHello.' } });
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
    const a = await srv.call('POST', '/api/v1/sources', { body: { content: '# A\n\nOne.' } });
    const b = await srv.call('POST', '/api/v1/sources', { body: { content: '# B\n\nTwo.' } });
    const r = await srv.call('PATCH', `/api/v1/sources/${a.body.source.id}`, { body: { auth: { type: 'bearer', secret: SECRET } } });
    assert.deepEqual(r.body.source.auth, { configured: true, hasSecret: true, lastError: null, lastVerifiedAt: null, status: 'unverified', type: 'bearer' });
    const ws = srv.store.workspace(srv.workspaceId)!;
    const sealed = (ws.get<{ credential: { sealed: { kid: string; iv: string; ct: string; tag: string } } }>('source', a.body.source.id))!.credential.sealed;
    assert.match(sealed.kid, /^k\d+$/);
    const log = readdirSync(join(srv.dataDir, 'workspaces')).map((f) => readFileSync(join(srv.dataDir, 'workspaces', f), 'utf8')).join('');
    assert.ok(log.includes(sealed.ct) && !log.includes(SECRET));
  } finally { await srv.close(); }
});
