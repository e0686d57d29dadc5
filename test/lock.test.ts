/**
 * The data dir's lock (src/store/log/lock.ts) against pid reuse: a LOCK naming a live process is
 * held only when that process started when the lock says, or — for a pid-only lock, or
 * without /proc — when something answers on the data dir's admin socket.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { acquireLock, lockHolder, LockedError, processStartTime } from '../src/store/log/lock.js';
import { tempDir } from './helpers/server.js';

/** A live process that is not a server of ours (the pid a reboot could hand to anything). */
async function unrelated(t: { after: (fn: () => void) => void }): Promise<ChildProcess> {
  const proc = spawn('sleep', ['600'], { stdio: 'ignore' });
  await new Promise((resolve, reject) => { proc.once('spawn', resolve); proc.once('error', reject); });
  t.after(() => { proc.kill('SIGKILL'); });
  return proc;
}

const field22 = (pid: number | 'self') => readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].split(' ')[19];

test('processStartTime is field 22 of /proc/<pid>/stat, for this process and another; null for a pid that does not run', { skip: !existsSync('/proc/self/stat') && 'no /proc' }, async (t) => {
  const proc = await unrelated(t);
  assert.match(processStartTime('self') ?? '', /^\d+$/);
  assert.equal(processStartTime('self'), field22('self'));
  assert.equal(processStartTime(proc.pid!), field22(proc.pid!));
  assert.equal(processStartTime(2 ** 22 + 1), null);
});

test('a lock records pid and start time, and a clean release removes it', { skip: !existsSync('/proc/self/stat') && 'no /proc' }, async () => {
  const dir = tempDir();
  const release = await acquireLock(dir);
  assert.equal(readFileSync(join(dir, 'LOCK'), 'utf8'), `${process.pid}\nstarttime ${field22('self')}\n`);
  release();
  assert.deepEqual(readdirSync(dir), []);
});

test('a LOCK naming a live unrelated process with another start time (the pid was reused) is stale: taken over', { skip: !existsSync('/proc/self/stat') && 'no /proc' }, async (t) => {
  const proc = await unrelated(t);
  const dir = tempDir();
  writeFileSync(join(dir, 'LOCK'), `${proc.pid}\nstarttime ${Number(field22(proc.pid!)) - 1}\n`);
  assert.equal(await lockHolder(dir), null);
  const release = await acquireLock(dir);
  assert.equal(readFileSync(join(dir, 'LOCK'), 'utf8').split('\n')[0], String(process.pid));
  release();
  assert.deepEqual(readdirSync(dir), [], 'the stale lock was not left aside');
});

test('a LOCK naming a live process with its own start time is held: LockedError naming the pid, the lock untouched', { skip: !existsSync('/proc/self/stat') && 'no /proc' }, async (t) => {
  const proc = await unrelated(t);
  const dir = tempDir();
  const content = `${proc.pid}\nstarttime ${field22(proc.pid!)}\n`;
  writeFileSync(join(dir, 'LOCK'), content);
  assert.equal(await lockHolder(dir), proc.pid);
  await assert.rejects(acquireLock(dir), (e: unknown) => e instanceof LockedError && e.pid === proc.pid && e.message === `data dir ${dir} is in use by process ${proc.pid}`);
  assert.equal(readFileSync(join(dir, 'LOCK'), 'utf8'), content);
  assert.deepEqual(readdirSync(dir), ['LOCK']);
});

test('a pid-only LOCK (the older format) of a live process: stale when nothing answers on the admin socket, held when something does', async (t) => {
  const proc = await unrelated(t);
  const dir = tempDir();
  writeFileSync(join(dir, 'LOCK'), `${proc.pid}\n`);
  writeFileSync(join(dir, 'admin.sock'), ''); // a leftover path that is not a listening socket
  assert.equal(await lockHolder(dir), null);
  const release = await acquireLock(dir);
  release();

  writeFileSync(join(dir, 'LOCK'), `${proc.pid}\n`);
  const listener = createServer((s) => s.destroy());
  await new Promise<void>((r) => listener.listen(join(dir, 'admin.sock.live'), r));
  t.after(() => listener.close());
  // Move the listening socket over the leftover file (bind() refuses an existing path).
  renameSync(join(dir, 'admin.sock.live'), join(dir, 'admin.sock'));
  assert.equal(await lockHolder(dir), proc.pid);
  await assert.rejects(acquireLock(dir), (e: unknown) => e instanceof LockedError && e.pid === proc.pid);
  assert.equal(readFileSync(join(dir, 'LOCK'), 'utf8'), `${proc.pid}\n`);
});

test('a LOCK naming a pid that no longer runs, or holding garbage, is stale', async () => {
  const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((r) => dead.once('close', r));
  for (const content of [`${dead.pid}\nstarttime 1\n`, `${dead.pid}\n`, '', 'not a pid\n']) {
    const dir = tempDir();
    writeFileSync(join(dir, 'LOCK'), content);
    assert.equal(await lockHolder(dir), null, JSON.stringify(content));
    (await acquireLock(dir))();
    assert.deepEqual(readdirSync(dir), []);
  }
});
