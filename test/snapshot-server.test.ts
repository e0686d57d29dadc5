/**
 * Snapshot blocks seen from the API (docs/storage.md#snapshots): a workspace written through
 * every area — conversations, messages, issues, tags, custom fields, events, a webhook endpoint
 * and its deliveries, a source with its search index — compacted with the admin CLI's
 * `compact`, then written to again, answers exactly the same after a restart that loads the
 * block (STARTUP_SNAPSHOT=use), one that replays the log in full (STARTUP_SNAPSHOT=ignore), and
 * one whose block has a flipped byte (a warning, then a full replay).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';
import { startReceiver } from './helpers/receiver.js';
import { walkList } from './helpers/lists.js';
import { ManualClock } from '../src/core/clock.js';

const NOW = Date.parse('2026-06-29T12:00:00.000Z');

/** Every answer a reader could get of the workspace, lists walked page by page (both orders where there are two). */
async function answers(srv: TestServer, key: string): Promise<Record<string, unknown>> {
  const get = (p: string) => srv.call('GET', p, { key });
  const list = async (p: string, key: string, limit = 7) => (await walkList(get, p, key, limit)).items;
  const one = async (p: string) => { const r = await get(p); assert.equal(r.status, 200, `${p}: ${r.text}`); return r.body; };
  const out: Record<string, unknown> = {};
  out.conversations = await list('/api/v1/conversations', 'conversations');
  out.open = await list('/api/v1/conversations?status=open', 'conversations');
  for (const c of out.conversations as Array<{ id: string }>) out[`messages ${c.id}`] = await list(`/api/v1/conversations/${c.id}/messages`, 'messages', 3);
  out.issues = await list('/api/v1/issues', 'issues');
  for (const i of out.issues as Array<{ id: string }>) out[`issue ${i.id}`] = await one(`/api/v1/issues/${i.id}`);
  out.events = await list('/api/v1/events', 'events', 11);
  out.issueEvents = await list('/api/v1/events?type=issue.*', 'events');
  out.tags = await one('/api/v1/tags');
  out.fields = await one('/api/v1/custom-fields');
  out.clients = await list('/api/v1/clients', 'clients');
  out.analytics = await one('/api/v1/analytics?from=2026-06-01&to=2026-06-30');
  out.sources = await list('/api/v1/sources', 'sources');
  out.search = await one('/api/v1/sources/search?q=invoice%20export');
  out.endpoints = await list('/api/v1/webhook-endpoints', 'webhookEndpoints');
  for (const e of out.endpoints as Array<{ id: string }>) out[`deliveries ${e.id}`] = await list(`/api/v1/webhook-endpoints/${e.id}/deliveries`, 'deliveries', 2);
  out.sizes = srv.store.workspace(workspaceOf(srv))!.indexSizes();
  return out;
}

const workspaceOf = (srv: TestServer) => [...srv.store.workspaces.keys()][0];
const logLines = (srv: TestServer) => srv.logs.map((l) => JSON.parse(l) as Record<string, any>);

test('a workspace compacted with the admin CLI answers exactly the same when started from its snapshot block, with a full replay, and with a damaged block', { timeout: 120_000 }, async () => {
  const dataDir = tempDir('sw-snapsrv-');
  const receiver = await startReceiver(() => ({ status: 204 }));
  const env = { WEBHOOK_ALLOW_PRIVATE: 'true' };
  const start = (extra: Record<string, string> = {}) => startTestServer({ dataDir, env: { ...env, ...extra }, clock: new ManualClock(NOW) });
  let srv = await start();
  const { workspaceId, key } = srv;
  try {
    const hook = await srv.call<any>('POST', '/api/v1/webhook-endpoints', { body: { url: `${receiver.url}/hook`, events: ['issue.created'] } });
    assert.equal(hook.status, 201, hook.text);
    await srv.call('POST', '/api/v1/custom-fields', { body: { label: 'Plan', type: 'select', options: ['free', 'pro'] } });
    for (const name of ['billing', 'export']) await srv.call('POST', '/api/v1/tags', { body: { name } });
    const convs: string[] = [];
    for (let i = 0; i < 12; i++) {
      const c = await srv.call<any>('POST', '/api/v1/conversations', { body: { subject: `Invoice export ${i}`, externalId: `ext-${i}`, customer: { email: `c${i % 4}@acme${i % 3}.test`, company: i % 2 ? 'Acme' : undefined } } });
      assert.equal(c.status, 201, c.text);
      convs.push(c.body.conversation.id);
      srv.clock.advance(60_000);
      for (let m = 0; m < (i % 4) + 1; m++) await srv.call('POST', `/api/v1/conversations/${c.body.conversation.id}/messages`, { body: { role: m % 2 ? 'agent' : 'user', body: `message ${m} of ${i}` } });
    }
    for (let i = 0; i < 3; i++) await srv.call('PATCH', `/api/v1/conversations/${convs[i]}`, { body: { status: 'solved' } });
    for (let i = 0; i < 5; i++) await srv.call('POST', '/api/v1/issues', { body: { subject: `Export fails ${i}`, tags: ['billing'], ...(i % 2 ? { conversationId: convs[i] } : {}) } });
    const src = await srv.call<any>('POST', '/api/v1/sources', { body: { type: 'auto', content: '# Billing\n\nThe invoice export runs nightly.\n\n## Export\n\nExport invoices as CSV.' } });
    assert.equal(src.status, 201, src.text);
    await receiver.waitFor(5);
    // Settle: every delivery answered before the log is compacted.
    for (let i = 0; i < 100 && (await srv.call<any>('GET', `/api/v1/webhook-endpoints/${hook.body.webhookEndpoint.id}/deliveries`)).body.deliveries.some((d: any) => d.status === 'pending'); i++) await new Promise((r) => setTimeout(r, 20));
    const compacted = await srv.admin.execute('log.compact', { workspace: workspaceId }) as { object: string; records: number; bytesAfter: number };
    assert.equal(compacted.object, 'compaction');
    assert.ok(compacted.records > 50);
    // Written after the block: replayed from lines at the next start.
    await srv.call('PATCH', `/api/v1/conversations/${convs[5]}`, { body: { subject: 'Renamed after the compaction' } });
    await srv.call('POST', `/api/v1/conversations/${convs[6]}/messages`, { body: { role: 'user', body: 'after the compaction' } });
    await srv.close();

    srv = await start({ STARTUP_SNAPSHOT: 'use' });
    const loaded = logLines(srv).find((l) => l.msg === 'log loaded' && String(l.file).includes(workspaceId))!;
    assert.equal(loaded.snapshot, true);
    assert.equal(loaded.records, compacted.records);
    assert.deepEqual(loaded.replayedTypes.sort(), ['source_index', 'webhook_delivered'],
      'the search index is rebuilt from its records, and the batches of first-attempt successes put their deliveries in the indexes: the two types on a full replay');
    assert.ok(loaded.lazyRecords > 40 && loaded.replayedOps > 0, JSON.stringify(loaded));
    assert.ok(!logLines(srv).some((l) => l.level === 'warn'), 'no warning');
    const fromBlock = await answers(srv, key);
    await srv.close();

    srv = await start({ STARTUP_SNAPSHOT: 'ignore' });
    assert.equal(logLines(srv).find((l) => l.msg === 'log loaded' && String(l.file).includes(workspaceId))!.snapshot, false);
    const replayed = await answers(srv, key);
    await srv.close();
    assert.deepEqual(fromBlock, replayed);
    assert.equal((fromBlock.conversations as unknown[]).length, 12);

    // A flipped byte in a state line of the block: a warning, a full replay, the same answers.
    const file = join(dataDir, 'workspaces', `${workspaceId}.log`);
    const buf = readFileSync(file);
    const at = buf.indexOf('{"snapshot":"state"');
    assert.ok(at > 0);
    buf[at + 40] ^= 0x04;
    writeFileSync(file, buf);
    srv = await start();
    const warned = logLines(srv).find((l) => l.msg === 'snapshot block not used: the log was replayed in full');
    assert.ok(warned && /damaged/.test(warned.reason) && warned.file === file, JSON.stringify(warned));
    assert.ok(logLines(srv).some((l) => l.msg === 'damaged snapshot lines skipped'));
    assert.deepEqual(await answers(srv, key), replayed);
    // The next compaction writes a sound block again.
    await srv.admin.execute('log.compact', { workspace: workspaceId });
    await srv.close();
    srv = await start();
    assert.equal(logLines(srv).find((l) => l.msg === 'log loaded' && String(l.file).includes(workspaceId))!.snapshot, true);
    assert.deepEqual(await answers(srv, key), replayed);
  } finally {
    await srv.close().catch(() => {});
    await receiver.close();
  }
});
