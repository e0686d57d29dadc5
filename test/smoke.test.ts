import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from './helpers/server.js';

test('GET /healthz → 200 {status:"ok"} without a key', async () => {
  const srv = await startTestServer();
  try {
    const r = await srv.call('GET', '/healthz', { key: null });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { status: 'ok' });
    assert.equal(r.headers.get('api-version'), '2026-06-29');
    assert.match(r.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  } finally { await srv.close(); }
});
