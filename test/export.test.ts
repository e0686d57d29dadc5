/**
 * `cli export` (docs/configuration.md#export) through the real CLI: a workspace exported and imported into an empty
 * one gives the same list answers, ids aside, for every section; an issue linked to a conversation without an
 * externalId keeps its link through the file-local `ref`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, runCli, startServer, tempDir } from './helpers/child.js';
import type { ConversationAnswer } from './helpers/answers.js';

const source = {
  customFields: [{ label: 'Plan', type: 'select', options: ['free', 'pro'], aiInstructions: 'Read the plan.' },
    { label: 'Seats', type: 'number', fillMode: 'manual', description: 'How many', enabled: false }],
  tags: [{ name: 'billing' }, { name: 'bug' }],
  agents: [{ name: 'Front desk', description: 'First line' }, { name: 'Night', enabled: false }],
  conversations: [
    { externalId: 'e-1', subject: 'Cannot log in', customer: { email: 'kim@example.com', name: 'Kim', company: 'K&Co' },
      status: 'solved', channel: 'email', priority: 'high', createdAt: '2026-01-02T10:00:00.000Z',
      messages: [{ role: 'user', body: 'Help', createdAt: '2026-01-02T10:00:00.000Z' },
        { role: 'agent', body: 'Reset link sent', createdAt: '2026-01-02T10:05:00.000Z' }] },
    { subject: 'Invoice <question>', customer: { email: 'lee@example.com', id: 'cust-9' }, status: 'waiting',
      createdAt: '2026-01-03T09:00:00.000Z', messages: [{ role: 'user', body: 'Where is it?' }] },
  ],
  issues: [{ subject: 'Login outage', priority: 'urgent', tags: ['bug', 'Sev1'], state: 'on_you',
    conversationExternalId: 'e-1', createdAt: '2026-01-02T11:00:00.000Z' },
    { subject: 'Invoices', description: 'Missing', customer: { email: 'lee@example.com' }, conversationRef: 'inv',
      createdAt: '2026-01-03T10:00:00.000Z' }],
};
(source.conversations[1] as Record<string, unknown>).ref = 'inv';

type Rows = Record<string, unknown>[];
/** Every item of `path`'s list (one page of 100 is enough here), ids and links replaced by their order. */
async function list(url: string, key: string, path: string, field: string): Promise<Rows> {
  const r = await call<Record<string, Rows>>(url, 'GET', `${path}?limit=100`, { key });
  assert.equal(r.status, 200, r.text);
  return r.body[field];
}

/** The workspace's answers, ids aside: every list, and the messages of each conversation. */
async function answers(url: string, key: string) {
  const strip = (rows: Rows, ids: Map<string, number>) => rows.map((x) => JSON.parse(JSON.stringify(x, (k, v) =>
    k === 'id' || k === 'widgetKey' || k === 'number' ? undefined : k === 'conversationId' ? ids.get(v) : v)));
  const convs = await list(url, key, '/api/v1/conversations', 'conversations');
  const order = new Map(convs.map((c, i) => [c.id as string, i]));
  const messages = [];
  for (const c of convs) messages.push(strip(await list(url, key, `/api/v1/conversations/${c.id}/messages`,
    'messages'), order));
  return {
    customFields: strip(await list(url, key, '/api/v1/custom-fields', 'customFields'), order),
    tags: strip(await list(url, key, '/api/v1/tags', 'tags'), order),
    agents: strip(await list(url, key, '/api/v1/agents', 'agents'), order),
    conversations: strip(convs, order), messages,
    issues: strip(await list(url, key, '/api/v1/issues', 'issues'), order),
  };
}

test('export then import into an empty workspace: the same list answers, ids aside, for every section', async () => {
  const dataDir = tempDir();
  const srv = await startServer({ dataDir });
  try {
    const key = await srv.waitForKey();
    const ws = (await runCli<{ workspaces: { id: string }[] }>(dataDir, ['workspace', 'list'])).json.workspaces[0].id;
    const file = join(tempDir('sw-export-'), 'in.json');
    writeFileSync(file, JSON.stringify(source));
    const imp = await runCli(dataDir, ['import', '--workspace', ws, file]);
    assert.equal(imp.code, 0, imp.stderr);
    // One more made through the API, after the import: live records export the same.
    const live = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: {
      subject: 'Live one', customer: { email: 'z@example.com' }, priority: 'low' } });
    assert.equal(live.status, 201, live.text);

    const exp = await runCli<Record<string, unknown[]>>(dataDir, ['export', '--workspace', ws]);
    assert.equal(exp.code, 0, exp.stderr);
    assert.deepEqual(Object.keys(exp.json), ['customFields', 'tags', 'agents', 'conversations', 'issues']);
    const out = join(tempDir('sw-export-'), 'ws.json');
    writeFileSync(out, exp.stdout);

    const made = await runCli<{ id: string }>(dataDir, ['workspace', 'create', '--name', 'Copy']);
    const copyKey = (await runCli<{ key: string }>(dataDir, ['key', 'create', '--workspace', made.json.id])).json.key;
    const again = await runCli<{ imported: Record<string, number> }>(dataDir, ['import', '--workspace', made.json.id,
      out]);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(again.json.imported, { customFields: 2, tags: 3, agents: 2, conversations: 3, messages: 3,
      issues: 2 });

    const a = await answers(srv.url, key);
    const b = await answers(srv.url, copyKey);
    assert.equal(a.conversations.length, 3);
    assert.equal(a.issues.length, 2);
    for (const section of Object.keys(a) as (keyof typeof a)[]) assert.deepEqual(b[section], a[section], section);
    const linked = a.issues.map((x) => (x.source as { conversationId?: number }).conversationId).sort();
    assert.deepEqual(linked, [1, 2], 'both issues keep their conversation (the list is newest first)');

    const unknown = await runCli(dataDir, ['export', '--workspace', 'nope']);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr, 'error: no workspace "nope"\n');
  } finally { await srv.stop(); }
});

test('import refuses a ref used twice and a conversationRef that matches nothing, with their place in the file',
  async () => {
    const dataDir = tempDir();
    const ws = (await runCli<{ id: string }>(dataDir, ['workspace', 'create', '--name', 'W'])).json.id;
    const write = (v: unknown) => { const f = join(tempDir('sw-import-'), 'f.json'); writeFileSync(f, JSON.stringify(v));
      return f; };
    const c = { subject: 's', customer: { email: 'a@b.co' }, ref: 'x' };
    const twice = await runCli(dataDir, ['import', '--workspace', ws, write({ conversations: [c, c] })]);
    assert.equal(twice.stderr, 'error: import file is invalid: conversations[1].ref is used by an earlier ' +
      'conversation of the file.\n');
    const none = await runCli(dataDir, ['import', '--workspace', ws, write({ conversations: [c],
      issues: [{ subject: 'i', conversationRef: 'y' }] })]);
    assert.equal(none.stderr, 'error: import file is invalid: issues[0].conversationRef matches no conversation of ' +
      'the file.\n');
    const both = await runCli(dataDir, ['import', '--workspace', ws, write({ conversations: [c],
      issues: [{ subject: 'i', conversationRef: 'x', conversationExternalId: 'e' }] })]);
    assert.equal(both.stderr, 'error: import file is invalid: issues[0].conversationRef cannot be given with ' +
      'conversationExternalId.\n');
  });
