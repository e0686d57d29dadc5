/**
 * The admin CLI (docs/configuration.md#admin-cli), as `node dist/cli.js`: on the files
 * when no server runs, and through the running server's admin socket when one does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, runCli, startServer, tempDir } from './helpers/child.js';
import { damageLine } from './helpers/damage.js';
import { SCOPES } from '../src/auth/keys.js';
import type { CliOutput, ConversationAnswer, ConversationList, CustomFieldList, ErrorAnswer, IssueList } from './helpers/answers.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const KEY = /^svck_[0-9A-Za-z]{43}$/;

function writeJson(value: unknown): string {
  const file = join(tempDir('sw-import-'), 'import.json');
  writeFileSync(file, JSON.stringify(value));
  return file;
}

/** Every byte under `dir` (file name → content), to prove a command changed nothing or hid a secret. */
function snapshot(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.set(p, readFileSync(p));
    }
  };
  walk(dir);
  return out;
}

const validImport = {
  customFields: [{ label: 'Plan', type: 'select', options: ['free', 'pro'], aiInstructions: 'Read the plan from the signature.' }],
  tags: [{ name: 'billing' }, { name: 'bug' }],
  agents: [{ name: 'Front desk', description: 'First line' }],
  conversations: [
    {
      externalId: 'imp-1', subject: 'Cannot log in', customer: { email: 'kim@example.com', name: 'Kim' }, status: 'solved', channel: 'email',
      createdAt: '2026-01-02T10:00:00Z',
      messages: [{ role: 'user', body: 'Help, I cannot log in', createdAt: '2026-01-02T10:00:00Z' }, { role: 'agent', body: 'Reset link sent', createdAt: '2026-01-02T10:05:00Z' }],
    },
    { externalId: 'imp-2', subject: 'Invoice question', customer: { email: 'lee@example.com' }, messages: [{ role: 'user', body: 'Where is my invoice?' }] },
  ],
  issues: [{ subject: 'Login outage', priority: 'high', tags: ['bug'], conversationExternalId: 'imp-1' }],
};
const validCounts = { customFields: 1, tags: 2, agents: 1, conversations: 2, messages: 3, issues: 1 };

test('CLI without a server: workspace create, list, key create/list/revoke, import — JSON on stdout', async () => {
  const dataDir = tempDir();
  const ws = await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'Acme support']);
  assert.equal(ws.code, 0, ws.stderr);
  assert.equal(ws.stderr, '');
  assert.deepEqual(Object.keys(ws.json), ['object', 'id', 'name', 'createdAt']);
  assert.equal(ws.json.object, 'workspace');
  assert.equal(ws.json.name, 'Acme support');
  assert.match(ws.json.id, UUID);
  assert.match(ws.json.createdAt, ISO_MS);

  const list = await runCli<CliOutput>(dataDir, ['workspace', 'list']);
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual(list.json, { object: 'list', workspaces: [ws.json] });

  const created = await runCli<CliOutput>(dataDir, ['key', 'create', '--workspace', ws.json.id, '--scopes', 'conversations:read', '--expires-at', '2030-01-01T00:00:00Z']);
  assert.equal(created.code, 0, created.stderr);
  const k = created.json;
  assert.equal(k.object, 'api_key');
  assert.match(k.key, KEY);
  assert.equal(k.prefix, k.key.slice(0, 12));
  assert.deepEqual(k.scopes, ['conversations:read']);
  assert.equal(k.expiresAt, '2030-01-01T00:00:00.000Z');
  assert.match(k.id, /\S/);
  // Shown only this once: only its SHA-256 reaches the disk.
  for (const [file, bytes] of snapshot(dataDir)) assert.ok(!bytes.includes(k.key), `${file} holds the key`);

  const keys = await runCli<CliOutput>(dataDir, ['key', 'list', '--workspace', ws.json.id]);
  assert.equal(keys.code, 0, keys.stderr);
  assert.equal(keys.json.object, 'list');
  assert.equal(keys.json.keys.length, 1);
  const listed = keys.json.keys[0];
  assert.equal(listed.id, k.id);
  assert.equal(listed.prefix, k.prefix);
  assert.equal(listed.revokedAt, null);
  assert.equal(listed.lastUsedAt, null);
  assert.ok(!Object.hasOwn(listed, 'key') && !Object.hasOwn(listed, 'hash'), JSON.stringify(listed));
  assert.ok(!keys.stdout.includes(k.key));

  const revoked = await runCli<CliOutput>(dataDir, ['key', 'revoke', k.id]);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal(revoked.json.id, k.id);
  assert.match(String(revoked.json.revokedAt), ISO_MS);
  assert.ok(!Object.hasOwn(revoked.json, 'key') && !Object.hasOwn(revoked.json, 'hash'));
  const after = await runCli<CliOutput>(dataDir, ['key', 'list', '--workspace', ws.json.id]);
  assert.equal(after.json.keys[0].revokedAt, revoked.json.revokedAt);

  const imported = await runCli<CliOutput>(dataDir, ['import', '--workspace', ws.json.id, writeJson(validImport)]);
  assert.equal(imported.code, 0, imported.stderr);
  assert.deepEqual(imported.json, { object: 'import', workspaceId: ws.json.id, imported: validCounts });
  assert.ok(!readdirSync(dataDir).includes('LOCK'), 'the CLI releases the lock when done');

  // What the CLI wrote is what a server started later serves.
  const reader = await runCli<CliOutput>(dataDir, ['key', 'create', '--workspace', ws.json.id, '--scopes', '*']);
  const srv = await startServer({ dataDir, env: { BOOTSTRAP: 'true' } });
  try {
    const convs = await call<ConversationList>(srv.url, 'GET', '/api/v1/conversations', { key: reader.json.key });
    assert.equal(convs.status, 200, convs.text);
    assert.deepEqual(convs.body.conversations.map((c: any) => c.externalId).sort(), ['imp-1', 'imp-2']);
    const solved = convs.body.conversations.find((c) => c.externalId === 'imp-1');
    assert.ok(solved);
    assert.deepEqual({ status: solved.status, channel: solved.channel, createdAt: solved.createdAt }, { status: 'solved', channel: 'email', createdAt: '2026-01-02T10:00:00.000Z' });
    const issues = await call<IssueList>(srv.url, 'GET', '/api/v1/issues', { key: reader.json.key });
    assert.equal(issues.body.issues.length, 1);
    assert.deepEqual(issues.body.issues[0].source, { channel: 'email', conversationId: solved.id });
    assert.deepEqual(issues.body.issues[0].tags, ['bug']);
    const fields = await call<CustomFieldList>(srv.url, 'GET', '/api/v1/custom-fields', { key: reader.json.key });
    assert.deepEqual(fields.body.customFields.map((f: any) => f.label), ['Plan']);
    const gone = await call(srv.url, 'GET', '/api/v1/conversations', { key: k.key });
    assert.equal(gone.status, 401, 'the revoked key is refused');
  } finally { await srv.stop(); }
  assert.ok(!srv.stderr.includes('svck_'), 'no bootstrap key: the data dir already has a workspace');
});

test('CLI import with an unknown property deep inside → exit 1 naming its JSON path, nothing imported', async () => {
  const dataDir = tempDir();
  const ws = (await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'W'])).json;
  const cases: Array<[unknown, RegExp]> = [
    [{ ...validImport, conversations: [validImport.conversations[0], { ...validImport.conversations[1], messages: [{ role: 'user', body: 'x', mood: 'angry' }] }] },
      /conversations\[1\]\.messages\[0\]\.mood/],
    [{ ...validImport, conversations: [{ ...validImport.conversations[1], customer: { email: 'a@b.co', extra: { deep: 1 } } }] }, /conversations\[0\]\.customer\.extra/],
    [{ ...validImport, surprise: [] }, /surprise/],
    // Valid shape, refused on meaning after conversations were built: still all or nothing.
    [{ ...validImport, issues: [{ subject: 'x', conversationExternalId: 'no-such-conversation' }] }, /issues\[0\]\.conversationExternalId/],
  ];
  const before = snapshot(dataDir);
  for (const [data, path] of cases) {
    const r = await runCli<CliOutput>(dataDir, ['import', '--workspace', ws.id, writeJson(data)]);
    assert.equal(r.code, 1, r.stdout);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, path);
  }
  assert.deepEqual(snapshot(dataDir), before, 'no byte of the data dir changed');
});

test('a refusal reads the same whether the CLI works on the files or through a running server: flags, paths in the file, ids', async () => {
  const dataDir = tempDir();
  const ws = (await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'W'])).json.id;
  const cases: Array<[string[], string]> = [
    // An error met by the import's own rules (not its shape) names its place in the file.
    [['import', '--workspace', ws, writeJson({ customFields: [{ label: 'ok', type: 'text' }, { label: 'P', type: 'select' }] })],
      'import file is invalid: customFields[1].options must list at least one option for a select field.'],
    [['import', '--workspace', ws, writeJson({ conversations: [{ externalId: 'd', subject: 'a', customer: { email: 'a@b.co' } }, { externalId: 'd', subject: 'b', customer: { email: 'c@d.co' } }] })],
      'import refused: externalId "d" is already used by another conversation.'],
    [['key', 'create', '--workspace', ws, '--expires-at', 'tomorrow'], '--expires-at must be an ISO 8601 date-time such as 2027-01-01T00:00:00Z'],
    [['key', 'create', '--workspace', ws, '--scopes', 'everything:write'], `--scopes is invalid: unknown scope "everything:write"; known: *, ${SCOPES.join(', ')}`],
    [['tag', 'disable', '--workspace', ws, 'nope'], 'no tag "nope" in this workspace'],
    [['key', 'list', '--workspace', 'nope'], 'no workspace "nope"'],
  ];
  const run = async (how: string) => {
    for (const [args, message] of cases) {
      const r = await runCli<CliOutput>(dataDir, args);
      assert.deepEqual({ code: r.code, stdout: r.stdout, stderr: r.stderr }, { code: 1, stdout: '', stderr: `error: ${message}\n` }, `${how}: ${args.join(' ')}`);
    }
  };
  await run('on the files');
  const srv = await startServer({ dataDir });
  try { await run('through the server'); } finally { await srv.stop(); }
});

test('CLI usage errors → exit 2 with the usage on stderr; an unknown workspace or key → exit 1', async () => {
  const dataDir = tempDir();
  const usage: string[][] = [
    [],
    ['workspace'],
    ['workspace', 'create'],
    ['workspace', 'delete'],
    ['key', 'create'],
    ['key', 'list'],
    ['key', 'revoke'],
    ['import', '--workspace', 'x'],
    ['workspace', 'list', '--bogus'],
    ['frobnicate'],
  ];
  for (const args of usage) {
    const r = await runCli<CliOutput>(dataDir, args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /usage: cli\.js/);
  }
  const ws = (await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'W'])).json;
  const file = writeJson({ tags: [{ name: 't' }] });
  const failures: Array<[string[], RegExp]> = [
    [['key', 'create', '--workspace', 'nope'], /no workspace "nope"/],
    [['key', 'list', '--workspace', 'nope'], /no workspace "nope"/],
    [['import', '--workspace', 'nope', file], /no workspace "nope"/],
    [['key', 'revoke', 'nope'], /no key "nope"/],
    [['key', 'create', '--workspace', ws.id, '--scopes', 'everything:write'], /--scopes/],
    [['key', 'create', '--workspace', ws.id, '--expires-at', 'tomorrow'], /--expires-at/],
    [['import', '--workspace', ws.id, join(dataDir, 'missing.json')], /cannot read/],
  ];
  for (const [args, message] of failures) {
    const r = await runCli<CliOutput & ConversationAnswer>(dataDir, args);
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, message);
  }
  const keys = await runCli<CliOutput>(dataDir, ['key', 'list', '--workspace', ws.id]);
  assert.deepEqual(keys.json, { object: 'list', keys: [] }, 'failed commands created nothing');
});

test('concurrent CLI commands on a data dir without a server all succeed, one after another', async () => {
  const dataDir = tempDir();
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', `P${i}`])));
  for (const r of results) assert.equal(r.code, 0, r.stderr);
  const list = await runCli<CliOutput>(dataDir, ['workspace', 'list']);
  assert.deepEqual(list.json.workspaces.map((w: any) => w.name).sort(), ['P0', 'P1', 'P2', 'P3', 'P4', 'P5', 'P6', 'P7']);
  assert.deepEqual(new Set(results.map((r) => r.json.id)).size, 8);
});

test('CLI with a running server: keys and imports take effect at once, through the server (the only writer)', async () => {
  const srv = await startServer({ env: { SYNC: 'always' } });
  const dataDir = srv.dataDir;
  const lockPid = () => readFileSync(join(dataDir, 'LOCK'), 'utf8').split('\n')[0];
  try {
    const bootstrapKey = await srv.waitForKey();
    assert.equal(lockPid(), String(srv.pid));
    const wsList = await runCli<CliOutput>(dataDir, ['workspace', 'list']);
    assert.equal(wsList.code, 0, wsList.stderr);
    assert.equal(wsList.json.workspaces.length, 1);
    const wsId = wsList.json.workspaces[0].id;

    const created = await runCli<CliOutput>(dataDir, ['key', 'create', '--workspace', wsId, '--scopes', 'conversations:read', '--name', 'reader']);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.json.key, KEY);
    assert.equal(lockPid(), String(srv.pid), 'the CLI did not take the lock');
    const read = await call(srv.url, 'GET', '/api/v1/conversations', { key: created.json.key });
    assert.equal(read.status, 200, read.text);
    const write = await call<ErrorAnswer>(srv.url, 'POST', '/api/v1/conversations', { key: created.json.key, body: { subject: 's', customer: { email: 'a@b.co' } } });
    assert.equal(write.status, 403, 'the new key has exactly its scopes');
    assert.equal(write.body.code, 'insufficient_scope');

    // HTTP writes and CLI writes interleaved: one writer means none of them is lost.
    const httpIds: string[] = [];
    const both = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key: bootstrapKey, body: { subject: `http ${i}`, customer: { email: 'h@example.com' }, externalId: `http-${i}` } })
        .then((r) => { assert.equal(r.status, 201, r.text); httpIds.push(r.body.conversation.id); })),
      runCli<CliOutput>(dataDir, ['import', '--workspace', wsId, writeJson(validImport)]).then((r) => {
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(r.json.imported, validCounts);
      }),
      runCli(dataDir, ['key', 'create', '--workspace', wsId]).then((r) => assert.equal(r.code, 0, r.stderr)),
    ]);
    assert.equal(both.length, 22);
    const convs = await call<ConversationList>(srv.url, 'GET', '/api/v1/conversations?limit=100', { key: created.json.key });
    const ext = convs.body.conversations.map((c: any) => c.externalId);
    assert.ok(ext.includes('imp-1') && ext.includes('imp-2'), 'the import is visible over HTTP at once');
    assert.equal(convs.body.conversations.length, 22);

    // A refused import while the server runs leaves nothing behind in its memory either.
    const refused = await runCli<CliOutput>(dataDir, ['import', '--workspace', wsId, writeJson({
      conversations: [{ externalId: 'half-1', subject: 'half', customer: { email: 'half@example.com' } }],
      issues: [{ subject: 'x', conversationExternalId: 'nowhere' }],
    })]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /issues\[0\]\.conversationExternalId/);
    const afterRefused = await call<ConversationList>(srv.url, 'GET', '/api/v1/conversations?limit=100', { key: created.json.key });
    assert.equal(afterRefused.body.conversations.length, 22);
    const dup = await call(srv.url, 'POST', '/api/v1/conversations', { key: bootstrapKey, body: { subject: 's', customer: { email: 'a@b.co' }, externalId: 'half-1' } });
    assert.equal(dup.status, 201, `the refused import's externalId is free: ${dup.text}`);

    const revoked = await runCli<CliOutput>(dataDir, ['key', 'revoke', created.json.id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(String(revoked.json.revokedAt), ISO_MS);
    const refusedKey = await call<ErrorAnswer>(srv.url, 'GET', '/api/v1/conversations', { key: created.json.key });
    assert.equal(refusedKey.status, 401);
    assert.deepEqual(refusedKey.body, { code: 'unauthorized', error: refusedKey.body.error });

    const other = await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'Second']);
    assert.equal(other.code, 0, other.stderr);
    const otherKey = await runCli<CliOutput>(dataDir, ['key', 'create', '--workspace', other.json.id]);
    const otherWrite = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key: otherKey.json.key, body: { subject: 'in the second workspace', customer: { email: 'z@example.com' } } });
    assert.equal(otherWrite.status, 201, otherWrite.text);

    const keys = await runCli<CliOutput>(dataDir, ['key', 'list', '--workspace', wsId]);
    assert.equal(keys.json.keys.length, 3);
    for (const k of keys.json.keys) assert.ok(!Object.hasOwn(k, 'key') && !Object.hasOwn(k, 'hash'));
    assert.ok(keys.json.keys.some((k: any) => k.id === created.json.id && k.revokedAt === revoked.json.revokedAt));
    assert.equal(lockPid(), String(srv.pid), 'the server still holds the lock');
    const sizes = new Map([...snapshot(dataDir)].map(([f, b]) => [f, b.length]));

    // Restart: everything replays cleanly from the files the server alone wrote.
    assert.deepEqual(await srv.stop(), { code: 0, signal: null });
    // Only the server's own usage flush (at shutdown) may add to a log after the last answer.
    for (const [f, size] of sizes) {
      if (!f.endsWith('.log')) continue;
      const added = readFileSync(f).subarray(size).toString('utf8').split('\n').filter(Boolean);
      for (const line of added) {
        const ops = JSON.parse(line.slice(9)) as Array<[string, string]>;
        assert.ok(ops.every((op) => op[1] === 'usage'), `${f} changed after the last answer: ${line.slice(0, 120)}`);
      }
    }
    const again = await startServer({ dataDir });
    try {
      const all = await call<ConversationList>(again.url, 'GET', '/api/v1/conversations?limit=100', { key: bootstrapKey });
      assert.equal(all.body.conversations.length, 23);
      for (const id of httpIds) assert.ok(all.body.conversations.some((c: any) => c.id === id));
      const still = await call(again.url, 'GET', '/api/v1/conversations', { key: created.json.key });
      assert.equal(still.status, 401, 'the revocation survived the restart');
      const second = await call(again.url, 'GET', `/api/v1/conversations/${otherWrite.body.conversation.id}`, { key: otherKey.json.key });
      assert.equal(second.status, 200, second.text);
      assert.ok(!again.stderr.includes('corrupt'), again.stderr);
    } finally { await again.stop(); }
  } finally { await srv.stop(); }
});

test('CLI without a server on a data dir with one damaged workspace log: every other command works; `repair --workspace` keeps a copy, cuts the log and prints what it dropped; the workspace then works', async () => {
  const dataDir = tempDir();
  const a = (await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'A'])).json.id;
  const b = (await runCli<CliOutput>(dataDir, ['workspace', 'create', '--name', 'B'])).json.id;
  for (const name of ['first', 'second', 'third']) assert.equal((await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', a, '--name', name])).code, 0);
  const log = join(dataDir, 'workspaces', `${a}.log`);
  const bad = damageLine(log, '"second"');
  const damaged = readFileSync(log);

  const list = await runCli<CliOutput>(dataDir, ['workspace', 'list']);
  assert.equal(list.code, 0, list.stderr);
  assert.equal(list.json.workspaces.length, 2);
  const tagB = await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', b, '--name', 'elsewhere']);
  assert.equal(tagB.code, 0, tagB.stderr);
  const key = await runCli<CliOutput>(dataDir, ['key', 'create', '--workspace', a]);
  assert.equal(key.code, 0, 'keys live in the system log, which is fine');
  const tagA = await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', a, '--name', 'fourth']);
  assert.equal(tagA.code, 1);
  assert.match(tagA.stderr, new RegExp(`^error: workspace ${a} is offline: .*line ${bad.line} \\(byte offset ${bad.offset}\\) is corrupt: checksum mismatch; run "cli repair --workspace ${a}"`));
  assert.deepEqual(readFileSync(log), damaged);

  const r = await runCli<CliOutput>(dataDir, ['repair', '--workspace', a]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(Object.keys(r.json), ['object', 'workspaceId', 'file', 'corruptLine', 'keptLines', 'keptBytes', 'droppedLines', 'droppedValidLines', 'droppedBytes', 'damagedCopy']);
  assert.deepEqual({ ...r.json, damagedCopy: undefined }, {
    object: 'repair', workspaceId: a, file: log, corruptLine: { line: bad.line, offset: bad.offset, reason: 'checksum mismatch' },
    keptLines: bad.line - 1, keptBytes: bad.offset, droppedLines: 2, droppedValidLines: 1, droppedBytes: damaged.length - bad.offset, damagedCopy: undefined,
  });
  assert.deepEqual(readFileSync(r.json.damagedCopy), damaged);
  assert.deepEqual(readFileSync(log), damaged.subarray(0, bad.offset));
  assert.ok(!readdirSync(dataDir).includes('LOCK'), 'the CLI releases the lock when done');

  const again = await runCli<CliOutput>(dataDir, ['tag', 'create', '--workspace', a, '--name', 'second']);
  assert.equal(again.code, 0, `the dropped tag's name is free again: ${again.stderr}`);
  const twice = await runCli<CliOutput>(dataDir, ['repair', '--workspace', a]);
  assert.deepEqual({ code: twice.code, stderr: twice.stderr }, { code: 1, stderr: `error: workspace ${a} is not damaged: its log was read without error, so there is nothing to repair\n` });
  for (const args of [['repair'], ['repair', '--workspace', a, '--system']]) {
    const u = await runCli<CliOutput>(dataDir, args);
    assert.equal(u.code, 2, u.stderr);
  }
});
