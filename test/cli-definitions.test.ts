/**
 * The admin CLI's definition commands (docs/configuration.md#admin-cli), as
 * `node dist/cli.js` (built by `npm test`): `custom-field|tag|agent create` and `… disable`,
 * on the files of a data dir with no server, and through the admin socket of a running one.
 * JSON on stdout, `error: …` on stderr with exit 1 for a refused command, 2 for a usage error.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli, tempDir, type CliResult } from './helpers/child.js';
import { startTestServer } from './helpers/server.js';
import type { AgentList, CliOutput, CustomFieldList, TagList } from './helpers/answers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const WIDGET_KEY = /^svcw_[0-9A-Za-z]{33}$/;
const MISSING = '00000000-0000-4000-8000-000000000000';

/** Exit 0, nothing on stderr, and stdout exactly the pretty-printed JSON of `expected`. */
function printed(r: CliResult, expected: unknown): void {
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  assert.equal(r.stdout, JSON.stringify(expected, null, 2) + '\n');
}
/** Exit `code`, nothing on stdout, stderr exactly `message` (plus the usage text for a usage error). */
function refused(r: CliResult, code: number, message: string): void {
  assert.equal(r.code, code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.equal(r.stdout, '');
  if (code === 1) assert.equal(r.stderr, `error: ${message}\n`);
  else assert.ok(r.stderr.startsWith(`${message}\nusage: cli.js`), r.stderr);
}

async function workspace(dataDir: string): Promise<string> {
  const r = await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'Support']);
  assert.equal(r.code, 0, r.stderr);
  return r.json.id;
}

test('custom-field create --label L --type select --options a,b → exit 0 and exactly the API\'s custom_field JSON', async () => {
  const dataDir = tempDir();
  const ws = await workspace(dataDir);
  const r = await runCli<CliOutput>(dataDir, ['custom-field', 'create', '--workspace', ws, '--label', 'Plan', '--type', 'select', '--options', 'a,b']);
  assert.match(r.json?.id, UUID);
  printed(r, { object: 'custom_field', id: r.json.id, label: 'Plan', type: 'select', enabled: true, fillMode: 'manual', description: '', options: ['a', 'b'] });

  const full = await runCli<CliOutput>(dataDir, ['custom-field', 'create', '--workspace', ws, '--label', 'Region', '--type', 'multiselect', '--fill-mode', 'ai', '--description', 'Where they are', '--options', ' eu , us ,apac']);
  printed(full, { object: 'custom_field', id: full.json.id, label: 'Region', type: 'multiselect', enabled: true, fillMode: 'ai', description: 'Where they are', options: ['eu', 'us', 'apac'] });

  const plain = await runCli<CliOutput>(dataDir, ['custom-field', 'create', '--workspace', ws, '--label', 'Seats', '--type', 'number']);
  printed(plain, { object: 'custom_field', id: plain.json.id, label: 'Seats', type: 'number', enabled: true, fillMode: 'manual', description: '', options: [] });
  assert.equal(new Set([r.json.id, full.json.id, plain.json.id]).size, 3);
});

test('custom-field create with an invalid --type → exit 1 naming every allowed type; an invalid --fill-mode → exit 1 naming the modes', async () => {
  const dataDir = tempDir();
  const ws = await workspace(dataDir);
  refused(await runCli<CliOutput>(dataDir, ['custom-field', 'create', '--workspace', ws, '--label', 'L', '--type', 'color']), 1,
    'type must be one of text, number, decimal, boolean, date, datetime, url, select, multiselect');
  refused(await runCli<CliOutput>(dataDir, ['custom-field', 'create', '--workspace', ws, '--label', 'L', '--type', 'text', '--fill-mode', 'robot']), 1,
    'fillMode must be one of manual, ai, api, customer');
  refused(await runCli<CliOutput>(dataDir, ['custom-field', 'create', '--workspace', ws, '--label', 'x'.repeat(201), '--type', 'text']), 1,
    'label must be 1 to 200 characters');
  // Missing flags are usage errors (exit 2).
  refused(await runCli<CliOutput>(dataDir, ['custom-field', 'create', '--workspace', ws, '--type', 'text']), 2, '--label is required');
  refused(await runCli<CliOutput>(dataDir, ['custom-field', 'create', '--workspace', ws, '--label', 'L']), 2, '--type is required');
  refused(await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', ws]), 2, '--name is required');
  refused(await runCli<CliOutput>(dataDir, ['agent', 'create', '--name', 'A']), 2, '--workspace is required');
  // Nothing was created by the refused commands: the next start lists no definitions.
  const srv = await startTestServer({ dataDir });
  try {
    const key = (await srv.admin.createKey({ workspace: ws })).key;
    assert.deepEqual((await srv.call<CustomFieldList>('GET', '/api/v1/custom-fields', { key })).body.customFields, []);
    assert.deepEqual((await srv.call<TagList>('GET', '/api/v1/tags', { key })).body.tags, []);
    assert.deepEqual((await srv.call<AgentList>('GET', '/api/v1/agents', { key })).body.agents, []);
  } finally {
    await srv.close();
  }
});

test('tag create → {object:"tag", id, name}; the same name in any case again → exit 1 "already exists"', async () => {
  const dataDir = tempDir();
  const ws = await workspace(dataDir);
  const r = await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', ws, '--name', 'Billing']);
  assert.match(r.json?.id, UUID);
  printed(r, { object: 'tag', id: r.json.id, name: 'Billing' });
  for (const name of ['Billing', 'BILLING', 'billing']) {
    refused(await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', ws, '--name', name]), 1, `a tag named ${JSON.stringify(name)} already exists`);
  }
  refused(await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', ws, '--name', 't'.repeat(65)]), 1, 'name must be 1 to 64 characters');
  // Another workspace may use the name.
  const other = await workspace(dataDir);
  const o = await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', other, '--name', 'billing']);
  printed(o, { object: 'tag', id: o.json.id, name: 'billing' });
});

test('agent create → the agent with its new widgetKey (svcw_…), description defaulting to ""', async () => {
  const dataDir = tempDir();
  const ws = await workspace(dataDir);
  const r = await runCli<CliOutput>(dataDir, ['agent', 'create', '--workspace', ws, '--name', 'Front desk', '--description', 'First line']);
  assert.match(r.json?.widgetKey, WIDGET_KEY);
  assert.match(r.json.createdAt, ISO_MS);
  printed(r, { object: 'agent', id: r.json.id, name: 'Front desk', description: 'First line', enabled: true, widgetKey: r.json.widgetKey, sources: [], mode: 'off', instructions: '', handoffAfterUncertain: 2, allowedOrigins: [], createdAt: r.json.createdAt, updatedAt: r.json.createdAt });
  const bare = await runCli<CliOutput>(dataDir, ['agent', 'create', '--workspace', ws, '--name', 'Second']);
  printed(bare, { object: 'agent', id: bare.json.id, name: 'Second', description: '', enabled: true, widgetKey: bare.json.widgetKey, sources: [], mode: 'off', instructions: '', handoffAfterUncertain: 2, allowedOrigins: [], createdAt: bare.json.createdAt, updatedAt: bare.json.createdAt });
  assert.notEqual(bare.json.widgetKey, r.json.widgetKey);
});

test('custom-field disable, tag disable, agent disable → the disabled definition; the API then shows enabled:false / leaves the tag out', async () => {
  const dataDir = tempDir();
  const ws = await workspace(dataDir);
  const field = (await runCli<CliOutput>(dataDir, ['custom-field', 'create', '--workspace', ws, '--label', 'Plan', '--type', 'text'])).json;
  const keep = (await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', ws, '--name', 'keep'])).json;
  const tag = (await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', ws, '--name', 'legacy'])).json;
  const agent = (await runCli<CliOutput>(dataDir, ['agent', 'create', '--workspace', ws, '--name', 'Bot'])).json;

  printed(await runCli<CliOutput>(dataDir, ['custom-field', 'disable', '--workspace', ws, field.id]), { ...field, enabled: false });
  printed(await runCli<CliOutput>(dataDir, ['tag', 'disable', '--workspace', ws, tag.id]), { object: 'tag', id: tag.id, name: 'legacy', enabled: false });
  const a = await runCli<CliOutput>(dataDir, ['agent', 'disable', '--workspace', ws, agent.id]);
  assert.match(a.json?.updatedAt, ISO_MS);
  assert.ok(a.json.updatedAt >= agent.updatedAt);
  printed(a, { ...agent, enabled: false, updatedAt: a.json.updatedAt });

  const srv = await startTestServer({ dataDir });
  try {
    const key = (await srv.admin.createKey({ workspace: ws })).key;
    assert.deepEqual((await srv.call<CustomFieldList>('GET', '/api/v1/custom-fields', { key })).body.customFields, [{ ...field, enabled: false }]);
    assert.deepEqual((await srv.call<TagList>('GET', '/api/v1/tags', { key })).body.tags, [keep]);
    assert.deepEqual((await srv.call('GET', `/api/v1/agents/${agent.id}`, { key })).body, { agent: { ...agent, enabled: false, updatedAt: a.json.updatedAt } });
  } finally {
    await srv.close();
  }
});

test('disable with an unknown id, another workspace\'s id, or an unknown workspace → exit 1 naming what is missing', async () => {
  const dataDir = tempDir();
  const ws = await workspace(dataDir);
  const other = await workspace(dataDir);
  const tag = (await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', other, '--name', 'theirs'])).json;
  refused(await runCli<CliOutput>(dataDir, ['custom-field', 'disable', '--workspace', ws, MISSING]), 1, `no custom field "${MISSING}" in this workspace`);
  refused(await runCli<CliOutput>(dataDir, ['tag', 'disable', '--workspace', ws, tag.id]), 1, `no tag "${tag.id}" in this workspace`);
  refused(await runCli<CliOutput>(dataDir, ['agent', 'disable', '--workspace', ws, 'nope']), 1, 'no agent "nope" in this workspace');
  refused(await runCli<CliOutput>(dataDir, ['agent', 'create', '--workspace', MISSING, '--name', 'A']), 1, `no workspace "${MISSING}"`);
  refused(await runCli<CliOutput>(dataDir, ['tag', 'disable', '--workspace', MISSING, tag.id]), 1, `no workspace "${MISSING}"`);
  refused(await runCli<CliOutput>(dataDir, ['tag', 'disable', '--workspace', ws]), 2, 'ITEM_ID is required');
});

test('with a server running on the data dir, the commands go through it: a created tag and agent are listed by the API at once', async () => {
  const dataDir = tempDir();
  const srv = await startTestServer({ dataDir });
  try {
    const tag = await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', srv.workspaceId, '--name', 'live']);
    printed(tag, { object: 'tag', id: tag.json.id, name: 'live' });
    const agent = await runCli<CliOutput>(dataDir, ['agent', 'create', '--workspace', srv.workspaceId, '--name', 'Live bot']);
    assert.match(agent.json?.widgetKey, WIDGET_KEY);
    assert.deepEqual((await srv.call<TagList>('GET', '/api/v1/tags')).body.tags, [{ object: 'tag', id: tag.json.id, name: 'live' }]);
    assert.deepEqual((await srv.call<AgentList>('GET', '/api/v1/agents')).body.agents, [agent.json]);
    refused(await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', srv.workspaceId, '--name', 'LIVE']), 1, 'a tag named "LIVE" already exists');
    printed(await runCli<CliOutput>(dataDir, ['tag', 'disable', '--workspace', srv.workspaceId, tag.json.id]), { object: 'tag', id: tag.json.id, name: 'live', enabled: false });
    assert.deepEqual((await srv.call<TagList>('GET', '/api/v1/tags')).body.tags, []);
  } finally {
    await srv.close();
  }
});

test('tag create on a disabled tag enables it again (same id); options only for select fields', async () => {
  const srv = await startTestServer();
  try {
    const t = (await srv.admin.createDefinition('tag', srv.workspaceId, { name: 'Billing' })) as { id: string };
    await srv.admin.disableDefinition('tag', srv.workspaceId, t.id);
    assert.deepEqual((await srv.call<TagList>('GET', '/api/v1/tags')).body.tags, []);
    assert.deepEqual(await srv.admin.createDefinition('tag', srv.workspaceId, { name: 'billing' }), { object: 'tag', id: t.id, name: 'Billing' });
    assert.deepEqual((await srv.call<TagList>('GET', '/api/v1/tags')).body.tags, [{ object: 'tag', id: t.id, name: 'Billing' }]);
    await assert.rejects(srv.admin.createDefinition('customField', srv.workspaceId, { label: 'Plan', type: 'select' }), /options must list at least one option for a select field/);
    await assert.rejects(srv.admin.createDefinition('customField', srv.workspaceId, { label: 'Age', type: 'number', options: ['1'] }), /options are only allowed for select and multiselect fields/);
    await assert.rejects(srv.admin.importData(srv.workspaceId, { customFields: [{ label: 'P', type: 'multiselect', options: ['a', 'a'] }] }), /options must not repeat an option/);
  } finally { await srv.close(); }
});
