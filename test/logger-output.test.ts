/**
 * Where the log goes when it cannot be written (src/core/logger.ts `stdoutSink`,
 * docs/configuration.md#logs): a failed write loses its batch and says so in the next one, a
 * short write is finished, and a server whose standard output's reader went away (EPIPE) keeps
 * answering.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { batchedWriter, flushedAtExit, stdoutSink, LOG_EXIT_WAIT_MS, LOG_FLUSH_MS, LOG_QUEUE_BYTES } from '../src/core/logger.js';
import { call, spawnServer, startServer, type RunningChild } from './helpers/child.js';
import { startTestServer } from './helpers/server.js';

/** A `writeSync` stand-in: each call takes the next planned result (bytes written, or an error code to throw); writes are kept. */
function plannedWrite(plan: Array<number | string>): { write: (fd: number, buf: Buffer, offset: number, length: number) => number; out: string[] } {
  const out: string[] = [];
  return {
    out,
    write: (_fd, buf, offset, length) => {
      const step = plan.shift() ?? length;
      if (typeof step === 'string') throw Object.assign(new Error(`${step}: failed`), { code: step });
      const n = Math.min(step, length);
      out.push(buf.toString('utf8', offset, offset + n));
      return n;
    },
  };
}

test('stdoutSink: a failed write loses its batch, not the process; the next batch begins with a warn line giving the bytes lost and the error', () => {
  const { write, out } = plannedWrite(['EPIPE', 'ENOSPC']);
  const sink = stdoutSink(7, write, () => Date.UTC(2026, 10, 25, 6, 30));
  sink(Buffer.from('{"a":1}\n'));          // 8 bytes lost (EPIPE)
  sink(Buffer.from('{"b":22}\n'));         // the note fails (ENOSPC): the count goes on without the batch's own loss
  sink(Buffer.from('{"c":3}\n'));
  assert.deepEqual(out, [
    '{"b":22}\n',
    '{"time":"2026-11-25T06:30:00.000Z","level":"warn","msg":"log output lost","bytes":8,"error":"ENOSPC"}\n',
    '{"c":3}\n',
  ]);
  sink(Buffer.from('{"d":4}\n'));
  assert.equal(out.at(-1), '{"d":4}\n', 'said once');
});

test('stdoutSink: a short write is finished with the rest of the batch, in order', () => {
  const { write, out } = plannedWrite([3, 1, 100]);
  stdoutSink(7, write)(Buffer.from('0123456789\n'));
  assert.deepEqual(out, ['012', '3', '456789\n']);
});

test('a server whose standard output is closed by its reader (EPIPE on every log write) goes on answering and stops cleanly', async () => {
  const srv: RunningChild = await startServer({ env: { LOG_LEVEL: 'info', BOOTSTRAP: 'true', RATE_LIMIT_BURST: '100000' } });
  try {
    const key = await srv.waitForKey();
    // The reader goes away: each log batch written from now on fails with EPIPE.
    srv.proc.stdout!.destroy();
    // 600 access lines: more than one 64 KiB batch, so batches are written while requests come.
    for (let i = 0; i < 30; i++) {
      const got = await Promise.all(Array.from({ length: 20 }, () => call(srv.url, 'GET', '/api/v1/conversations?limit=1', { key })));
      assert.deepEqual(got.map((r) => r.status), Array(20).fill(200));
    }
    assert.equal(srv.exit, null, 'still running');
    assert.deepEqual(await srv.stop(), { code: 0, signal: null });
    assert.doesNotMatch(srv.stderr, /EPIPE|Unhandled/);
  } finally {
    await srv.stop('SIGKILL');
  }
});

test('a first start whose standard error is closed (EPIPE on the bootstrap announcement) goes on: a warn line without the key, then listening', async () => {
  const child = spawnServer({ env: { LOG_LEVEL: 'info', BOOTSTRAP: 'true' } });
  // Nobody reads standard error from the start: the announcement's write fails with EPIPE.
  child.proc.stderr!.destroy();
  try {
    const { port } = await child.waitForLine('listening');
    const warned = child.logLines().find((l) => l.level === 'warn' && String(l.msg).startsWith('the bootstrap key could not be printed'));
    assert.deepEqual(warned && { msg: warned.msg, code: warned.code }, { msg: 'the bootstrap key could not be printed on stderr; make one with the CLI (key create)', code: 'EPIPE' });
    assert.doesNotMatch(child.stdout, /svck_/, 'the key is in no log line');
    assert.equal((await fetch(`http://127.0.0.1:${String(port)}/healthz`)).status, 200);
    assert.deepEqual(await child.stop(), { code: 0, signal: null });
  } finally {
    await child.stop('SIGKILL');
  }
});

test('an error of a listening server (an accept that failed: the HTTP server, the admin socket) is logged, not thrown', async () => {
  const srv = await startTestServer({ captureLogs: true });
  try {
    srv.http.emit('error', Object.assign(new Error('accept ENFILE'), { code: 'ENFILE' }));
    srv.adminSocket.emit('error', Object.assign(new Error('accept EMFILE'), { code: 'EMFILE' }));
    const lines = srv.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => String(l.msg).endsWith('failed to accept a connection'));
    assert.deepEqual(lines.map((l) => ({ level: l.level, msg: l.msg, error: l.error, code: l.code })), [
      { level: 'error', msg: 'the HTTP server failed to accept a connection', error: 'accept ENFILE', code: 'ENFILE' },
      { level: 'error', msg: 'the admin socket failed to accept a connection', error: 'accept EMFILE', code: 'EMFILE' },
    ]);
    assert.equal((await fetch(`${srv.url}/healthz`)).status, 200);
  } finally {
    await srv.close();
  }
});

test('stdoutSink: EAGAIN (a non-blocking descriptor) keeps a copy of the rest of the batch; later batches wait behind it; a retry every LOG_FLUSH_MS writes them in order', () => {
  const { write, out } = plannedWrite([4, 'EAGAIN', 'EAGAIN']);
  const timers: Array<() => void> = [];
  const sink = stdoutSink(7, write, Date.now, (fn, ms) => { assert.equal(ms, LOG_FLUSH_MS); timers.push(fn); });
  const batch = Buffer.from('{"a":1}\n');
  sink(batch);
  // The batch buffer is filled again once the sink returns: what waits must not change with it.
  batch.fill('x');
  assert.deepEqual([out, timers.length], [['{"a"'], 1], 'the rest waits; one retry armed');
  const next = Buffer.from('{"b":2}\n');
  sink(next);
  next.fill('y');
  assert.deepEqual([out, timers.length], [['{"a"'], 1], 'nothing written past the waiting bytes (the descriptor still not ready)');
  timers.shift()!();
  assert.equal(out.join(''), '{"a":1}\n{"b":2}\n', 'the lines whole and in order');
  assert.equal(timers.length, 0, 'no retry once nothing waits');
  // The descriptor ready again before the retry: the next batch writes what waits first.
  const again = plannedWrite([2, 'EAGAIN']);
  const sink2 = stdoutSink(7, again.write, Date.now, () => {});
  sink2(Buffer.from('{"c":3}\n'));
  sink2(Buffer.from('{"d":4}\n'));
  assert.equal(again.out.join(''), '{"c":3}\n{"d":4}\n', 'in order');
});

test('stdoutSink: past LOG_QUEUE_BYTES waiting, a batch is lost and counted; the note comes once the descriptor takes writes again', () => {
  let ready = false;
  const out: string[] = [];
  const write = (_fd: number, buf: Buffer, offset: number, length: number): number => {
    if (!ready) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
    out.push(buf.toString('utf8', offset, offset + length));
    return length;
  };
  const timers: Array<() => void> = [];
  const sink = stdoutSink(7, write, () => Date.UTC(2026, 10, 29, 3, 0), (fn) => timers.push(fn));
  const big = Buffer.alloc(LOG_QUEUE_BYTES / 2, 'a');
  sink(big);
  sink(big);
  sink(Buffer.from('{"dropped":1}\n'));
  ready = true;
  timers.shift()!();
  assert.equal(out.join('').length, LOG_QUEUE_BYTES, 'what was kept, written');
  sink(Buffer.from('{"after":1}\n'));
  assert.deepEqual(out.slice(-2), ['{"time":"2026-11-29T03:00:00.000Z","level":"warn","msg":"log output lost","bytes":14,"error":"EAGAIN"}\n', '{"after":1}\n']);
});

test('at exit the pending lines go through the sink and what waits is written before the process ends, retrying while the descriptor is not ready', () => {
  const { write, out } = plannedWrite([4, 'EAGAIN', 'EAGAIN', 'EAGAIN', 3, 'EAGAIN']);
  const sleeps: number[] = [];
  const sink = stdoutSink(7, write, Date.now, () => {}, (ms) => sleeps.push(ms));
  let atExit: (() => void) | undefined;
  const writer = flushedAtExit(batchedWriter(sink, () => {}), (fn) => { atExit = fn; }, sink.drainSync);
  writer.write('{"a":1}\n');
  writer.flush();
  writer.write('{"last":2}\n');
  atExit!();
  assert.equal(out.join(''), '{"a":1}\n{"last":2}\n', 'everything, in order');
  assert.ok(sleeps.length >= 2 && sleeps.every((ms) => ms === 1), `paused between retries: ${JSON.stringify(sleeps)}`);
});

test('at exit a descriptor that never becomes ready is given up on after LOG_EXIT_WAIT_MS', () => {
  let t = 0;
  const write = (): number => { throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' }); };
  const sink = stdoutSink(7, write, () => t, () => {}, (ms) => { t += ms; });
  sink(Buffer.from('{"a":1}\n'));
  sink.drainSync();
  assert.ok(t >= LOG_EXIT_WAIT_MS && t <= LOG_EXIT_WAIT_MS + 2, `waited ${t} ms`);
});

test('a process that logs and exits at once: every line reaches its standard output, in order', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sw-exit-log-'));
  const script = join(dir, 'exit.ts');
  const repo = fileURLToPath(new URL('..', import.meta.url));
  const logger = pathToFileURL(join(repo, 'src', 'core', 'logger.ts')).href;
  writeFileSync(script, `import { createLogger } from ${JSON.stringify(logger)};
const log = createLogger('info');
for (let i = 0; i < 3000; i++) log.request('id-' + i, 'GET', 'GET /x', 200, 0.5, true);
log.warn('last', { n: 3000 });
process.exit(0);
`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', cwd: repo });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { requestId?: string; msg: string });
  assert.equal(lines.length, 3001);
  assert.deepEqual(lines.slice(0, 3000).map((l) => l.requestId), Array.from({ length: 3000 }, (_, i) => `id-${i}`));
  assert.equal(lines[3000].msg, 'last');
});
