/**
 * A damaged compacted log never loses data or is served partial (docs/storage.md#recovery,
 * docs/storage.md#damaged-compacted-logs): a workspace log cut inside its put lines is quarantined and `cli repair`
 * keeps every record it can read; a cut system log stops the start (no new bootstrap key); a bad put
 * line costs a repair only that line. Real server processes and the CLI (dist/), temp data dirs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, truncateSync, writeFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { call, runCli, runServerToExit, startServer, tempDir } from './helpers/child.js';

const STORAGE_FAILED = {
  code: 'storage_failed', error: "This workspace's data could not be read; see the server log.",
};
/** Messages of this many characters: enough of them make a compacted log of several put lines (1 MiB each). */
const BODY = 19_000;
const MESSAGES = 130;

interface Space { id: string; key: string }
interface Fixture { dir: string; a: Space; b: Space; conversations: string[] }

/** Workspaces A (MESSAGES large messages over 10 conversations) and B (one conversation), the server stopped. */
async function build(): Promise<Fixture> {
  const dir = tempDir('sw-compacted-');
  const ws = async (name: string) => {
    const w = await runCli<{ id: string }>(dir, ['workspace', 'create', '--name', name]);
    assert.equal(w.code, 0, w.stderr);
    const k = await runCli<{ key: string }>(dir, ['key', 'create', '--workspace', w.json.id]);
    assert.equal(k.code, 0, k.stderr);
    return { id: w.json.id, key: k.json.key };
  };
  const a = await ws('A');
  const b = await ws('B');
  const srv = await startServer({ dataDir: dir, env: { RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_BURST: '100000' } });
  const conversations: string[] = [];
  try {
    for (let i = 0; i < 10; i++) {
      const body = { subject: `A-${i}`, customer: { email: 'ada@example.com' } };
      const r = await call<{ conversation: { id: string } }>(srv.url, 'POST', '/api/v1/conversations', { key: a.key, body });
      assert.equal(r.status, 201, r.text);
      conversations.push(r.body.conversation.id);
    }
    for (let m = 0; m < MESSAGES; m++) {
      const body = { role: 'user', body: `${m}:`.padEnd(BODY, 'x') };
      const r = await call(srv.url, 'POST', `/api/v1/conversations/${conversations[m % 10]}/messages`, { key: a.key, body });
      assert.equal(r.status, 201, r.text);
    }
    const body = { subject: 'B-0', customer: { email: 'bo@example.com' } };
    const r = await call(srv.url, 'POST', '/api/v1/conversations', { key: b.key, body });
    assert.equal(r.status, 201, r.text);
  } finally { await srv.stop(); }
  return { dir, a, b, conversations };
}

let built: Promise<Fixture> | undefined;
/** A copy of the fixture (built once) in a data dir of its own. */
async function fixture(): Promise<Fixture> {
  const f = await (built ??= build());
  const dir = tempDir('sw-compacted-');
  cpSync(f.dir, dir, { recursive: true });
  return { ...f, dir };
}

/** Byte offsets where each line of `file` begins. */
function lineStarts(file: string): number[] {
  const buf = readFileSync(file);
  const out = [0];
  for (let i = buf.indexOf(0x0a); i !== -1 && i < buf.length - 1; i = buf.indexOf(0x0a, i + 1)) out.push(i + 1);
  return out;
}

test('a compacted workspace log cut inside its put lines is quarantined, and cli repair keeps every readable record', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const c = await runCli<{ object: string; records: number }>(f.dir, ['compact', '--workspace', f.a.id]);
  assert.equal(c.code, 0, c.stderr);
  const log = join(f.dir, 'workspaces', `${f.a.id}.log`);
  const starts = lineStarts(log);
  assert.ok(starts.length > 4, 'several put lines');
  // Cut in the middle of the second put line (line 3).
  const cutAt = Math.floor((starts[2] + starts[3]) / 2);
  truncateSync(log, cutAt);

  const srv = await startServer({ dataDir: f.dir });
  try {
    const r = await call(srv.url, 'GET', '/api/v1/conversations', { key: f.a.key });
    assert.deepEqual({ status: r.status, body: r.body }, { status: 503, body: STORAGE_FAILED });
    const body = { subject: 'on top', customer: { email: 'x@example.com' } };
    const w = await call(srv.url, 'POST', '/api/v1/conversations', { key: f.a.key, body });
    assert.equal(w.status, 503, 'no write is accepted on top of a partial workspace');
    const other = await call<{ data: unknown[] }>(srv.url, 'GET', '/api/v1/conversations', { key: f.b.key });
    assert.equal(other.status, 200, other.text);
    const offline = srv.logLines().find((l) => l.msg === 'workspace offline: its log is corrupt');
    assert.ok(offline, srv.stderr);
    assert.equal(offline.file, log);
    assert.equal(offline.line, 3);
    assert.equal(offline.offset, starts[2]);
    assert.equal(readFileSync(log).length, cutAt, 'the log is left as it was');
  } finally { await srv.stop(); }

  const cut = readFileSync(log);
  const rep = await runCli<Record<string, unknown>>(f.dir, ['repair', '--workspace', f.a.id]);
  assert.equal(rep.code, 0, rep.stderr);
  assert.ok((rep.json.salvagedOps as number) > 0, rep.stdout);
  // The first put line as it was, then the whole records of the cut one, each as it was written.
  const repaired = readFileSync(log);
  assert.deepEqual(repaired.subarray(0, starts[2] - starts[1]), cut.subarray(starts[1], starts[2]));
  const salvaged = repaired.subarray(starts[2] - starts[1]).toString('utf8');
  const ops = JSON.parse(salvaged.slice(9)) as unknown[];
  assert.equal(ops.length, rep.json.salvagedOps);
  assert.ok(cut.toString('utf8', starts[2] + 9).startsWith(salvaged.slice(9, -2)), 'the records as they were written');
  const again = await startServer({ dataDir: f.dir });
  try {
    const r = await call<{ conversations: unknown[] }>(again.url, 'GET', '/api/v1/conversations?limit=100', { key: f.a.key });
    assert.equal(r.status, 200, r.text);
    // Conversations come first in the log: all of them are in the first put line.
    assert.equal(r.body.conversations.length, 10);
  } finally { await again.stop(); }
});

test('a compacted system log cut short stops the start (exit 2, one line naming it), never a new bootstrap', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const c = await runCli(f.dir, ['compact', '--system']);
  assert.equal(c.code, 0, c.stderr);
  const system = join(f.dir, 'system.log');
  truncateSync(system, 600);
  const r = await runServerToExit({ dataDir: f.dir });
  assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null }, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, r.stderr);
  assert.ok(lines[0].includes(system), lines[0]);
  assert.doesNotMatch(r.stderr, /API key/);
  assert.equal(readFileSync(system).length, 600);
});

test('an emptied system log beside workspace logs is never bootstrapped', { timeout: 180_000 }, async () => {
  const f = await fixture();
  writeFileSync(join(f.dir, 'system.log'), '');
  const r = await runServerToExit({ dataDir: f.dir });
  assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null }, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0], /not bootstrapping/);
  assert.doesNotMatch(r.stderr, /API key/);
  assert.equal(readFileSync(join(f.dir, 'system.log'), 'utf8'), '');
});

test('one flipped bit in the first put line of a compacted log: cli repair skips that line only', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const c = await runCli(f.dir, ['compact', '--workspace', f.a.id], { timeoutMs: 60_000 });
  assert.equal(c.code, 0, c.stderr);
  const log = join(f.dir, 'workspaces', `${f.a.id}.log`);
  const starts = lineStarts(log);
  const buf = readFileSync(log);
  const at = buf.indexOf('xxxxxxxx', starts[1]); // inside a message body of the first put line
  assert.ok(at > starts[1] && at < starts[2]);
  buf[at + 1] ^= 0x01;
  writeFileSync(log, buf);

  const srv = await startServer({ dataDir: f.dir });
  try {
    const r = await call(srv.url, 'GET', '/api/v1/conversations', { key: f.a.key });
    assert.deepEqual({ status: r.status, body: r.body }, { status: 503, body: STORAGE_FAILED });
  } finally { await srv.stop(); }
  const rep = await runCli<Record<string, unknown>>(f.dir, ['repair', '--workspace', f.a.id]);
  assert.equal(rep.code, 0, rep.stderr);
  assert.deepEqual(rep.json.skippedLines, [{ line: 2, offset: starts[1], reason: 'checksum mismatch' }], rep.stdout);
  assert.equal(rep.json.droppedValidLines, 0, rep.stdout);
  assert.ok(readdirSync(join(f.dir, 'workspaces')).some((n) => n.startsWith(`${f.a.id}.log.damaged-`)));
  // Every put line but the bad one, byte for byte; the head line and the block left out.
  const blockAt = starts.findIndex((s) => buf.subarray(s + 9, s + 21).toString() === '{"snapshot":');
  const isBlock = (s: number) => buf.subarray(s + 9, s + 21).toString() === '{"snapshot":';
  const firstBlockLine = starts.slice(1).findIndex(isBlock) + 1;
  assert.ok(blockAt === 0 && firstBlockLine > 2, 'put lines between the head and the block');
  assert.deepEqual(readFileSync(log), buf.subarray(starts[2], starts[firstBlockLine]));
  assert.equal(rep.json.keptLines, firstBlockLine - 2);
  const again = await startServer({ dataDir: f.dir });
  try {
    const r = await call(again.url, 'GET', '/api/v1/conversations', { key: f.a.key });
    assert.equal(r.status, 200, r.text);
  } finally { await again.stop(); }
});
