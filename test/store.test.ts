import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constants, mkdtempSync, readFileSync, writeFileSync, appendFileSync, readdirSync, statSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Db } from '../src/store/db.js';
import { nodeFs, type StoreFs } from '../src/store/log/fs.js';
import { viaFdatasync, buffersOf, bytesOf } from './helpers/storeFs.js';
import { CorruptLogError } from '../src/store/log/recovery.js';
import { repairLog, scanLog } from '../src/store/log/repair.js';
import { AppendLog, LAZY_WRITE_MS, MAX_BATCH_BYTES, StorageFailedError, encodeLine } from '../src/store/log/log.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'sw-store-'));
const open = (path: string, fs: StoreFs = nodeFs, extra = {}) => Db.open(path, { fs, sync: true, ...extra });

test('nodeFs.write: buffers written in order from the position as one vectored write; a short write carried on from where it stopped; an error rejects, after a short write too; no progress rejects', { timeout: 10_000 }, async (t) => {
  const file = join(tmp(), 'v.bin');
  writeFileSync(file, 'HEAD:');
  const parts = ['alpha-', 'b', '', 'gamma-gamma-', 'δ'].map((x) => Buffer.from(x));
  const fd = await nodeFs.open(file);
  // The module object node:fs's named exports are synced from (src/store/log/fs.ts reads `writev` there).
  const fsModule = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
  try {
    await nodeFs.write(fd, parts, 5);
    assert.equal(readFileSync(file, 'utf8'), 'HEAD:alpha-bgamma-gamma-δ');
    // libuv reports a slice that failed after others were written as a short count: at most 4
    // bytes a call here, each call given what is left, in order.
    const given: string[] = [];
    const real = fsModule.writev;
    const writev = t.mock.method(fsModule, 'writev', (f: number, bufs: Buffer[], pos: number, cb: (e: Error | null, n: number) => void) => {
      given.push(Buffer.concat(bufs).toString('utf8'));
      real(f, [Buffer.concat(bufs).subarray(0, 4)], pos, cb);
    });
    syncBuiltinESMExports();
    await nodeFs.write(fd, [Buffer.from('0123'), Buffer.from('45678'), Buffer.from('9')], 0);
    assert.equal(readFileSync(file, 'utf8'), '0123456789-bgamma-gamma-δ');
    assert.deepEqual(given, ['0123456789', '456789', '89']);
    writev.mock.mockImplementation((_f: number, _b: Buffer[], _p: number, cb: (e: Error | null, n: number) => void) => cb(Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' }), 0));
    await assert.rejects(nodeFs.write(fd, [Buffer.from('x'), Buffer.from('y')], 0), { code: 'EIO' });
    // A short write (what libuv reports when a later slice failed), then the rest fails: rejected, the part written stays.
    let calls = 0;
    writev.mock.mockImplementation((f: number, bufs: Buffer[], pos: number, cb: (e: Error | null, n: number) => void) => {
      if (calls++ === 0) real(f, [Buffer.concat(bufs).subarray(0, 4)], pos, cb);
      else cb(Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' }), 0);
    });
    await assert.rejects(nodeFs.write(fd, [Buffer.from('WXYZ'), Buffer.from('!!')], 0), { code: 'EIO' });
    assert.equal(readFileSync(file, 'utf8').slice(0, 6), 'WXYZ45', 'the 4 bytes written stay; the rest was not');
    // A call that writes nothing with bytes left: an I/O error, not a loop.
    writev.mock.mockImplementation((_f: number, _b: Buffer[], _p: number, cb: (e: Error | null, n: number) => void) => cb(null, 0));
    await assert.rejects(nodeFs.write(fd, [Buffer.alloc(0), Buffer.from('z')], 0), { code: 'EIO', message: 'EIO: a write made no progress' });
    assert.equal(writev.mock.callCount(), 3 + 1 + 2 + 1, 'empty buffers dropped: nothing is written for them alone');
    await nodeFs.write(fd, [Buffer.alloc(0), Buffer.alloc(0)], 0);
    assert.equal(writev.mock.callCount(), 7, 'a list of empty buffers makes no call');
  } finally {
    t.mock.restoreAll();
    syncBuiltinESMExports();
    await nodeFs.close(fd);
  }
});

test('committed records replay after reopen', async () => {
  const file = join(tmp(), 'a.log');
  const db = await open(file);
  const tx = db.begin();
  tx.put('conversation', 'c1', { subject: 'Hi' });
  tx.put('message', 'm1', { body: 'x' });
  await db.commit(tx);
  const tx2 = db.begin();
  tx2.del('message', 'm1');
  await db.commit(tx2);
  await db.close();
  const db2 = await open(file);
  assert.deepEqual(db2.get('conversation', 'c1'), { subject: 'Hi' });
  assert.equal(db2.get('message', 'm1'), undefined);
  assert.equal(db2.replay.lines, 2);
  await db2.close();
});

test('concurrent commits in one turn are group-committed: one write on the O_DSYNC descriptor and no fdatasync; without O_DSYNC, one write and one fdatasync', async () => {
  for (const synced of [true, false]) {
    const file = join(tmp(), 'a.log');
    const syncedFds = new Set<number>();
    let writes = 0, syncs = 0, openedSynced = 0;
    const counting: StoreFs = {
      ...nodeFs,
      openSynced: async (path) => { openedSynced++; const fd = await nodeFs.openSynced!(path); syncedFds.add(fd); return fd; },
      write: (fd, buf, pos) => { writes++; assert.equal(syncedFds.has(fd), synced); return nodeFs.write(fd, buf, pos); },
      fdatasync: (fd) => { syncs++; return nodeFs.fdatasync(fd); },
    };
    const db = await open(file, synced ? counting : viaFdatasync(counting));
    await Promise.all(Array.from({ length: 50 }, (_, i) => { const tx = db.begin(); tx.put('t', `k${i}`, { i }); return db.commit(tx); }));
    assert.deepEqual({ openedSynced, writes, syncs }, synced ? { openedSynced: 1, writes: 1, syncs: 0 } : { openedSynced: 0, writes: 1, syncs: 1 });
    assert.equal(readFileSync(file, 'utf8').trim().split('\n').length, 50);
    await db.close();
  }
});

test('nodeFs.openSynced opens the file with O_DSYNC (its flags in /proc), creating it with mode 0600; a store with SYNC=none writes through a plain descriptor', { skip: process.platform !== 'linux' && 'reads /proc/self/fdinfo' }, async () => {
  const O_DSYNC = 0o10000; // Linux's value (fs.constants.O_DSYNC), as /proc/self/fdinfo prints flags in octal
  assert.equal(constants.O_DSYNC, O_DSYNC);
  const flagsOf = (fd: number) => parseInt(/^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1], 8);
  const file = join(tmp(), 'new.log');
  const fd = await nodeFs.openSynced!(file);
  try {
    assert.equal(flagsOf(fd) & O_DSYNC, O_DSYNC);
    assert.equal(flagsOf(fd) & 3, constants.O_RDWR);
    assert.equal(statSync(file).mode & 0o777, 0o600);
  } finally { await nodeFs.close(fd); }
  const plain = await nodeFs.open(file);
  try { assert.equal(flagsOf(plain) & O_DSYNC, 0); } finally { await nodeFs.close(plain); }
  // The stores: SYNC=always writes through an O_DSYNC descriptor, SYNC=none through a plain one.
  for (const sync of [true, false]) {
    const fds: number[] = [];
    const db = await Db.open(join(tmp(), 'a.log'), { fs: { ...nodeFs, write: (d, buf, pos) => { fds.push(d); return nodeFs.write(d, buf, pos); } }, sync });
    const tx = db.begin(); tx.put('t', 'a', { v: 1 }); await db.commit(tx);
    assert.equal(flagsOf(fds[0]) & O_DSYNC, sync ? O_DSYNC : 0);
    await db.close();
  }
});

test('a lazy transaction starts no write: it goes out with the next batch of other lines, in order; alone, after LAZY_WRITE_MS; on close, at once', async () => {
  const file = join(tmp(), 'a.log');
  let writes = 0, syncs = 0;
  const fs: StoreFs = viaFdatasync({ ...nodeFs, write: (...a) => { writes++; return nodeFs.write(...a); }, fdatasync: (fd) => { syncs++; return nodeFs.fdatasync(fd); } });
  const db = await open(file, fs);
  const put = (id: string, lazy: boolean) => { const tx = db.begin(); tx.lazy = lazy; tx.put('t', id, { id }); return db.commit(tx); };
  // With another transaction a turn later: one write and one fdatasync for both, the lazy one first.
  let lazyDone = false;
  const lazy = put('lazy1', true).then(() => { lazyDone = true; });
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual([writes, lazyDone], [0, false], 'nothing written for the lazy transaction alone, two turns later');
  await Promise.all([put('eager1', false), lazy]);
  assert.deepEqual([writes, syncs], [1, 1]);
  assert.deepEqual(readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l.slice(9))[0][2]), ['lazy1', 'eager1']);
  // Alone: written by itself once LAZY_WRITE_MS passed, and its commit resolves only then, on disk.
  const t0 = performance.now();
  await put('lazy2', true);
  assert.ok(performance.now() - t0 >= LAZY_WRITE_MS - 1, `waited ${performance.now() - t0} ms`);
  assert.deepEqual([writes, syncs], [2, 2]);
  // Closing writes what is queued at once.
  const last = put('lazy3', true);
  await db.close();
  await last;
  assert.equal(writes, 3);
  const db2 = await open(file);
  assert.deepEqual(['lazy1', 'eager1', 'lazy2', 'lazy3'].map((id) => (db2.get('t', id) as { id: string } | undefined)?.id), ['lazy1', 'eager1', 'lazy2', 'lazy3']);
  await db2.close();
});

test('a batch takes at most MAX_BATCH_BYTES of lines (at least one): five 1.5 MiB transactions in one turn are three batches (three fdatasyncs), each one write of its large lines\' own buffers, in order', async () => {
  const file = join(tmp(), 'a.log');
  const sizes: number[] = [];
  const buffers: number[] = [];
  let syncs = 0;
  const fs: StoreFs = viaFdatasync({ ...nodeFs, write: (fd, data, pos) => { sizes.push(bytesOf(data).length); buffers.push(buffersOf(data).length); return nodeFs.write(fd, data, pos); }, fdatasync: (fd) => { syncs++; return nodeFs.fdatasync(fd); } });
  const db = await open(file, fs);
  const big = 'x'.repeat(1.5 * 1024 * 1024);
  await Promise.all(Array.from({ length: 5 }, (_, i) => { const tx = db.begin(); tx.put('t', `k${i}`, { i, big }); return db.commit(tx); }));
  assert.equal(MAX_BATCH_BYTES, 4 * 1024 * 1024);
  assert.equal(syncs, 3);
  assert.equal(sizes.length, 3, `write sizes ${sizes.join(', ')}`);
  assert.deepEqual(buffers, [2, 2, 1], 'each large line from its own buffer');
  assert.ok(sizes.every((n) => n <= MAX_BATCH_BYTES));
  await db.close();
  const db2 = await open(file);
  assert.deepEqual([0, 1, 2, 3, 4].map((i) => (db2.get('t', `k${i}`) as { i: number }).i), [0, 1, 2, 3, 4]);
  assert.equal(db2.replay.lines, 5);
  await db2.close();
});

test('a large pre-serialized value made elsewhere is written from its own bytes, not copied; small lines of the same batch are joined into one write', async () => {
  const file = join(tmp(), 'a.log');
  const written: Buffer[] = [];
  let calls = 0;
  const fs: StoreFs = { ...nodeFs, write: (fd, data, pos) => { calls++; written.push(...buffersOf(data)); return nodeFs.write(fd, data, pos); } };
  const db = await open(file, fs);
  const content = 'ü'.repeat(100_000);
  const bytes = new TextEncoder().encode(JSON.stringify(content));
  const small = Array.from({ length: 3 }, (_, i) => { const tx = db.begin(); tx.put('t', `s${i}`, { i }); return db.commit(tx); });
  const tx = db.begin();
  tx.put('c', 'big', { content }, ['{"content":', bytes, '}']);
  await Promise.all([...small, db.commit(tx)]);
  assert.ok(written.some((b) => b.buffer === bytes.buffer && b.byteOffset === bytes.byteOffset), 'the worker-made bytes were written as they are');
  assert.equal(written.length, 3, 'the small lines and the big line\'s head in one buffer, the bytes, then the tail');
  assert.equal(calls, 1, 'the batch is one (vectored) write: on a synchronized file, one device flush');
  await db.close();
  const db2 = await open(file);
  assert.deepEqual(db2.get('c', 'big'), { content });
  assert.deepEqual(db2.get('t', 's2'), { i: 2 });
  await db2.close();
});

test('put with a pre-serialized value: the log line takes its text as it is, beside ordinary ops, and replays to the same records', async () => {
  const file = join(tmp(), 'a.log');
  const db = await open(file);
  const big = { documents: [{ id: 'd1', title: 'T "q"' }], chunks: [{ d: 0, t: 'a\nb' }] };
  const tx = db.begin();
  tx.put('t', 'a', { v: 1 });
  tx.put('idx', 's1', big, JSON.stringify(big));
  tx.del('t', 'missing');
  tx.put('t', 'b', { v: 2 });
  await db.commit(tx);
  await db.close();
  const line = readFileSync(file, 'utf8').trim();
  assert.equal(line.slice(9), JSON.stringify([['p', 't', 'a', { v: 1 }], ['p', 'idx', 's1', big], ['p', 't', 'b', { v: 2 }]]));
  const db2 = await open(file);
  assert.deepEqual(db2.get('idx', 's1'), big);
  assert.deepEqual(db2.get('t', 'b'), { v: 2 });
  await db2.close();
});

test('put with a value pre-serialized as UTF-8 bytes, or as pieces of text and bytes: the line is the same as JSON.stringify makes, and replays to the same records', async () => {
  const file = join(tmp(), 'a.log');
  const db = await open(file);
  const content = 'é "quoted" \\ \n 😀 '.repeat(1000);
  const utf8 = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));
  const tx = db.begin();
  tx.put('c', 'bytes', { content }, utf8({ content }));
  tx.put('c', 'pieces', { content }, ['{"content":', utf8(content), '}']);
  tx.put('t', 'plain', { v: 1 });
  await db.commit(tx);
  await db.close();
  const line = readFileSync(file, 'utf8').trim();
  assert.equal(line.slice(9), JSON.stringify([['p', 'c', 'bytes', { content }], ['p', 'c', 'pieces', { content }], ['p', 't', 'plain', { v: 1 }]]));
  const db2 = await open(file);
  assert.deepEqual(db2.get('c', 'bytes'), { content });
  assert.deepEqual(db2.get('c', 'pieces'), { content });
  await db2.close();
});

test('a torn last line is cut off and kept aside in a .corrupt file', async () => {
  const dir = tmp();
  const file = join(dir, 'a.log');
  const db = await open(file);
  const tx = db.begin(); tx.put('t', 'a', { v: 1 }); await db.commit(tx);
  await db.close();
  const good = statSync(file).size;
  appendFileSync(file, '1234abcd ["p","t","b",{"v"');
  const db2 = await open(file);
  assert.deepEqual(db2.get('t', 'a'), { v: 1 });
  assert.equal(db2.get('t', 'b'), undefined);
  assert.equal(statSync(file).size, good);
  const saved = readdirSync(dir).filter((f) => f.includes('.corrupt-'));
  assert.equal(saved.length, 1);
  assert.equal(readFileSync(join(dir, saved[0]), 'utf8'), '1234abcd ["p","t","b",{"v"');
  // still appendable after the cut
  const tx2 = db2.begin(); tx2.put('t', 'c', { v: 3 }); await db2.commit(tx2);
  await db2.close();
  const db3 = await open(file);
  assert.deepEqual(db3.get('t', 'c'), { v: 3 });
  await db3.close();
});

test('a corrupt line in the middle stops the start naming file, line and byte offset', async () => {
  const file = join(tmp(), 'a.log');
  const db = await open(file);
  for (let i = 0; i < 3; i++) { const tx = db.begin(); tx.put('t', `k${i}`, { i }); await db.commit(tx); }
  await db.close();
  const lines = readFileSync(file, 'utf8').split('\n');
  const offset = Buffer.byteLength(lines[0]) + 1;
  lines[1] = lines[1].replace('"i":1', '"i":7');
  writeFileSync(file, lines.join('\n'));
  await assert.rejects(open(file), (err: unknown) => {
    assert.ok(err instanceof CorruptLogError);
    assert.equal(err.line, 2);
    assert.equal(err.offset, offset);
    assert.match(err.message, new RegExp(`a\\.log: line 2 \\(byte offset ${offset}\\) is corrupt: checksum mismatch`));
    return true;
  });
});

/** A log of `n` committed one-record transactions (`t`/`k<i>` = {i}); returns its lines' start offsets. */
async function logOf(file: string, n: number): Promise<number[]> {
  const db = await open(file);
  for (let i = 0; i < n; i++) { const tx = db.begin(); tx.put('t', `k${i}`, { i }); await db.commit(tx); }
  await db.close();
  const buf = readFileSync(file);
  const starts = [0];
  for (let at = buf.indexOf(0x0a); at !== -1 && at < buf.length - 1; at = buf.indexOf(0x0a, at + 1)) starts.push(at + 1);
  return starts;
}
/** Changes one byte of line `line` (1-based) so that its checksum no longer matches. */
function damage(file: string, starts: number[], line: number): Buffer {
  const buf = readFileSync(file);
  const at = buf.indexOf('"i":', starts[line - 1]) + 4;
  buf[at] = buf[at] === 0x39 ? 0x38 : buf[at] + 1;
  writeFileSync(file, buf);
  return buf;
}

test('a complete last line with a bad checksum is corruption, not a torn write: the open fails naming it and the file is left as it was', async () => {
  const dir = tmp();
  const file = join(dir, 'a.log');
  const starts = await logOf(file, 3);
  const damaged = damage(file, starts, 3);
  await assert.rejects(open(file), (err: unknown) => {
    assert.ok(err instanceof CorruptLogError);
    assert.deepEqual([err.line, err.offset, err.reason], [3, starts[2], 'checksum mismatch']);
    assert.equal(err.message, `${file}: line 3 (byte offset ${starts[2]}) is corrupt: checksum mismatch`);
    return true;
  });
  assert.deepEqual(readFileSync(file), damaged, 'nothing was cut');
  assert.deepEqual(readdirSync(dir), ['a.log'], 'nothing was set aside');
});

test('a line whose checksum matches but which is not a transaction (not a JSON array) is corruption', async () => {
  const file = join(tmp(), 'a.log');
  await logOf(file, 1);
  appendFileSync(file, encodeLine('{"p":1}'));
  await assert.rejects(open(file), (err: unknown) => err instanceof CorruptLogError && err.line === 2 && err.reason === 'checksum matches but the line is not a transaction');
});

test('repairLog on a corrupt line: a byte-for-byte copy is kept, the log is cut at its last good line (later good lines and a torn tail dropped with it), and it replays', async () => {
  const dir = tmp();
  const file = join(dir, 'a.log');
  const starts = await logOf(file, 5);
  damage(file, starts, 3);
  appendFileSync(file, '0123abcd [["p","t"');
  const damaged = readFileSync(file);
  assert.deepEqual(scanLog(file), { size: damaged.length, goodLines: 2, goodBytes: starts[2], firstBad: { line: 3, offset: starts[2], reason: 'checksum mismatch' }, droppedLines: 4, droppedValidLines: 2 });
  const r = repairLog(file, 1_700_000_000_000);
  assert.deepEqual(r, {
    file, size: damaged.length, goodLines: 2, goodBytes: starts[2], firstBad: { line: 3, offset: starts[2], reason: 'checksum mismatch' },
    droppedLines: 4, droppedValidLines: 2, droppedBytes: damaged.length - starts[2], damagedCopy: `${file}.damaged-1700000000000`,
  });
  assert.deepEqual(readFileSync(r.damagedCopy!), damaged);
  assert.equal(statSync(r.damagedCopy!).mode & 0o777, 0o600);
  assert.deepEqual(readFileSync(file), damaged.subarray(0, starts[2]));
  const db = await open(file);
  assert.deepEqual([db.get('t', 'k0'), db.get('t', 'k1'), db.get('t', 'k2')], [{ i: 0 }, { i: 1 }, undefined]);
  assert.equal(db.replay.tornTailSavedTo, undefined);
  await db.close();
});

test('repairLog on a healthy log changes nothing and keeps no copy; on a torn tail alone it cuts the tail (no corrupt line named)', async () => {
  const dir = tmp();
  const file = join(dir, 'a.log');
  await logOf(file, 2);
  const healthy = readFileSync(file);
  const r = repairLog(file, 1);
  assert.deepEqual({ dropped: r.droppedLines, bytes: r.droppedBytes, copy: r.damagedCopy, kept: r.goodLines }, { dropped: 0, bytes: 0, copy: null, kept: 2 });
  assert.deepEqual(readFileSync(file), healthy);
  assert.deepEqual(readdirSync(dir), ['a.log']);
  appendFileSync(file, '12');
  const torn = repairLog(file, 2);
  assert.equal(torn.firstBad, undefined);
  assert.deepEqual({ dropped: torn.droppedLines, valid: torn.droppedValidLines, bytes: torn.droppedBytes, kept: torn.goodBytes }, { dropped: 1, valid: 0, bytes: 2, kept: healthy.length });
  assert.deepEqual(readFileSync(file), healthy);
  assert.equal(readFileSync(`${file}.damaged-2`, 'latin1'), healthy.toString('latin1') + '12');
});

test('a failed write is undone in memory, truncated on disk, and later writes succeed', async () => {
  const file = join(tmp(), 'a.log');
  let fail: NodeJS.ErrnoException | null = null;
  const fs: StoreFs = {
    ...nodeFs,
    write: async (fd, data, pos) => {
      if (fail) { await nodeFs.write(fd, bytesOf(data).subarray(0, 5), pos); throw fail; } // a partial write, then ENOSPC
      return nodeFs.write(fd, data, pos);
    },
  };
  const db = await open(file, fs);
  const tx0 = db.begin(); tx0.put('t', 'a', { v: 1 }); await db.commit(tx0);
  fail = Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
  const tx1 = db.begin(); tx1.put('t', 'a', { v: 2 }); tx1.put('t', 'b', { v: 2 });
  assert.deepEqual(db.get('t', 'a'), { v: 2 }, 'visible before commit');
  await assert.rejects(db.commit(tx1), /ENOSPC/);
  assert.deepEqual(db.get('t', 'a'), { v: 1 });
  assert.equal(db.get('t', 'b'), undefined);
  fail = null;
  const tx2 = db.begin(); tx2.put('t', 'c', { v: 3 }); await db.commit(tx2);
  await db.close();
  const db2 = await open(file);
  assert.deepEqual([db2.get('t', 'a'), db2.get('t', 'b'), db2.get('t', 'c')], [{ v: 1 }, undefined, { v: 3 }]);
  assert.equal(db2.replay.tornTailSavedTo, undefined);
  await db2.close();
});

test('an fdatasync failure stops all later writes (never retried)', async () => {
  const file = join(tmp(), 'a.log');
  let failSync = false;
  const fs: StoreFs = viaFdatasync({ ...nodeFs, fdatasync: async (fd) => { if (failSync) throw Object.assign(new Error('EIO'), { code: 'EIO' }); return nodeFs.fdatasync(fd); } });
  const db = await open(file, fs);
  failSync = true;
  const tx = db.begin(); tx.put('t', 'a', { v: 1 });
  await assert.rejects(db.commit(tx), StorageFailedError);
  assert.equal(db.get('t', 'a'), undefined);
  failSync = false;
  const tx2 = db.begin(); tx2.put('t', 'b', { v: 1 });
  await assert.rejects(db.commit(tx2), /writes are refused until restart/);
  assert.ok(db.failed);
});

test('on the O_DSYNC descriptor a write that fails with EIO (maybe its sync) is final, as a failed fdatasync: cut from the file, never retried; one refused for lack of space is not', async () => {
  for (const code of ['EIO', 'ENOSPC', 'EDQUOT']) {
    const file = join(tmp(), 'a.log');
    let fail: string | null = null;
    let writesAfter = 0;
    let syncs = 0;
    const fs: StoreFs = {
      ...nodeFs,
      write: async (fd, data, pos) => {
        if (fail === 'done') writesAfter++;
        if (fail !== null && fail !== 'done') {
          const buf = bytesOf(data);
          await nodeFs.write(fd, buf.subarray(0, buf.length >> 1), pos); // half of it reached the file
          fail = 'done';
          throw Object.assign(new Error(`${code}: failed, write`), { code });
        }
        return nodeFs.write(fd, data, pos);
      },
      // The only fdatasync: of the cut, after the failed write (batches are synced by their writes).
      fdatasync: async (fd) => { syncs++; return nodeFs.fdatasync(fd); },
    };
    const db = await open(file, fs);
    const tx0 = db.begin(); tx0.put('t', 'before', { v: 0 }); await db.commit(tx0);
    const size = statSync(file).size;
    fail = 'armed';
    const tx = db.begin(); tx.put('t', 'a', { v: 1 });
    if (code === 'EIO') {
      await assert.rejects(db.commit(tx), (e: Error) => e instanceof StorageFailedError
        && e.message === `synchronized write failed on ${file}: EIO: failed, write; writes are refused until restart`);
    } else {
      await assert.rejects(db.commit(tx), (e: Error) => !(e instanceof StorageFailedError) && (e as NodeJS.ErrnoException).code === code);
    }
    assert.equal(db.get('t', 'a'), undefined);
    assert.equal(statSync(file).size, size, 'the half-written batch is cut');
    assert.equal(syncs, 1, 'the cut is synced');
    const tx2 = db.begin(); tx2.put('t', 'b', { v: 2 });
    if (code === 'EIO') {
      await assert.rejects(db.commit(tx2), (e: Error) => e instanceof StorageFailedError
        && e.message === `synchronized write failed on ${file}: EIO: failed, write; writes are refused until restart`);
      assert.equal(writesAfter, 0, 'nothing written after the failure');
      assert.ok(db.failed);
    } else {
      await db.commit(tx2);
      assert.deepEqual(db.get('t', 'b'), { v: 2 });
      assert.equal(db.failed, null);
    }
    await db.close();
    const again = await open(file);
    assert.deepEqual([again.get('t', 'before'), again.get('t', 'a'), again.get('t', 'b')], [{ v: 0 }, undefined, code === 'EIO' ? undefined : { v: 2 }]);
    await again.close();
  }
});

test('compaction keeps exactly the live records and writes queued meanwhile', async () => {
  const dir = tmp();
  const file = join(dir, 'a.log');
  const db = Db.create(file, { fs: nodeFs, sync: true, compactionSlack: 1_000_000 });
  db.retain('idem', () => false);
  await db.load();
  for (let round = 0; round < 20; round++) {
    const tx = db.begin();
    for (let i = 0; i < 50; i++) tx.put('t', `k${i}`, { round, i });
    tx.put('idem', `r${round}`, { x: 1 });
    await db.commit(tx);
  }
  const before = statSync(file).size;
  const compaction = db.compact();
  const tx = db.begin(); tx.put('t', 'k0', { round: 99, i: 0 }); tx.del('t', 'k1');
  const late = db.commit(tx);
  await Promise.all([compaction, late]);
  assert.ok(statSync(file).size < before / 5, 'log shrank');
  assert.deepEqual(readdirSync(dir).filter((f) => f !== 'a.log'), [], 'no temp files left');
  await db.close();
  const db2 = await open(file);
  assert.deepEqual(db2.get('t', 'k0'), { round: 99, i: 0 });
  assert.equal(db2.get('t', 'k1'), undefined);
  assert.deepEqual(db2.get('t', 'k49'), { round: 19, i: 49 });
  assert.equal(db2.table('idem').size, 0);
  assert.equal(db2.table('t').size, 49);
  await db2.close();
});

test('after a compaction a synced log writes through an O_DSYNC descriptor of the new file (no fdatasync); the descriptors of the old file and of the one the new file was written through are closed', async () => {
  const dir = tmp();
  const file = join(dir, 'a.log');
  const open_ = new Map<number, { path: string; synced: boolean }>();
  const track = (fd: number, path: string, synced: boolean) => { open_.set(fd, { path, synced }); return fd; };
  const logWrites: Array<{ path: string; synced: boolean }> = [];
  let logSyncs = 0;
  const fs: StoreFs = {
    ...nodeFs,
    open: async (p) => track(await nodeFs.open(p), p, false),
    openSynced: async (p) => track(await nodeFs.openSynced!(p), p, true),
    write: (fd, buf, pos) => { const o = open_.get(fd)!; if (!o.path.includes('.compact-')) logWrites.push({ ...o }); return nodeFs.write(fd, buf, pos); },
    fdatasync: (fd) => { if (!open_.get(fd)!.path.includes('.compact-')) logSyncs++; return nodeFs.fdatasync(fd); },
    close: async (fd) => { open_.delete(fd); return nodeFs.close(fd); },
    rename: async (a, b) => { await nodeFs.rename(a, b); for (const o of open_.values()) if (o.path === a) o.path = b; },
  };
  const db = Db.create(file, { fs, sync: true, compactionSlack: 1_000_000 });
  await db.load();
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 20; i++) { const tx = db.begin(); tx.put('t', `k${i % 5}`, { round, i }); await db.commit(tx); }
    await db.compact();
    assert.deepEqual([...open_.values()], [{ path: file, synced: true }], `after compaction ${round + 1}: one descriptor open, the log's, synced`);
  }
  const tx = db.begin(); tx.put('t', 'after', { v: 1 }); await db.commit(tx);
  assert.ok(logWrites.length >= 61);
  assert.deepEqual(logWrites.filter((w) => !(w.synced && w.path === file)), [], 'every write of the log went through a synced descriptor of it');
  assert.equal(logSyncs, 0, 'the log itself is never fdatasync\'d');
  await db.close();
  assert.equal(open_.size, 0);
  const again = await open(file);
  assert.deepEqual(again.get('t', 'after'), { v: 1 });
  assert.deepEqual(again.get('t', 'k4'), { round: 2, i: 19 });
  await again.close();
});

test('on the O_DSYNC descriptor, when a batch\'s vectored write fails part way (at its large part), the cut back over what it wrote, already durable, is fdatasync\'d before the batch is answered', async () => {
  const file = join(tmp(), 'a.log');
  const calls: string[] = [];
  let failLarge = false;
  const fs: StoreFs = {
    ...nodeFs,
    write: async (fd, data, pos) => {
      const bufs = buffersOf(data);
      const at = failLarge ? bufs.findIndex((b) => b.length >= 64 * 1024) : -1;
      if (at === -1) { calls.push(`write ${bufs.length}`); return nodeFs.write(fd, data, pos); }
      // Cut short at the large part: the buffers before it reached the file (and, O_DSYNC, the disk).
      if (at > 0) await nodeFs.write(fd, bufs.slice(0, at), pos);
      calls.push(`write: ${at} of ${bufs.length} buffers, then ENOSPC`);
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    },
    ftruncate: async (fd, len) => { calls.push(`ftruncate ${len}`); return nodeFs.ftruncate(fd, len); },
    fdatasync: async (fd) => { calls.push('fdatasync'); return nodeFs.fdatasync(fd); },
  };
  const db = await open(file, fs);
  const t0 = db.begin(); t0.put('t', 'before', { v: 0 }); await db.commit(t0);
  const size = statSync(file).size;
  calls.length = 0;
  failLarge = true;
  const small = db.begin(); small.put('t', 'small', { v: 1 });
  const large = db.begin(); large.put('t', 'large', { v: 2, pad: 'x'.repeat(100_000) });
  const both = [db.commit(small), db.commit(large)];
  await Promise.all(both.map((p) => assert.rejects(p, /ENOSPC/)));
  assert.deepEqual(calls, ['write: 1 of 2 buffers, then ENOSPC', `ftruncate ${size}`, 'fdatasync'],
    'one write of the batch: the small line written (durable), the large part failed; the cut, then its sync');
  assert.equal(statSync(file).size, size);
  failLarge = false;
  const t1 = db.begin(); t1.put('t', 'after', { v: 3 }); await db.commit(t1);
  assert.equal(db.failed, null, 'lack of space is not final');
  await db.close();
  const again = await open(file);
  assert.deepEqual(['before', 'small', 'large', 'after'].map((k) => again.get('t', k) !== undefined), [true, false, false, true]);
  await again.close();
});

test('a synced log whose compaction cannot open the new file with O_DSYNC: the compaction is abandoned (temp file removed, no descriptor left), the log goes on as it was', { skip: process.platform !== 'linux' && 'counts /proc/self/fd' }, async () => {
  const dir = tmp();
  const file = join(dir, 'a.log');
  const fs: StoreFs = {
    ...nodeFs,
    openSynced: async (p) => {
      if (p.includes('.compact-')) throw Object.assign(new Error(`EMFILE: too many open files, open '${p}'`), { code: 'EMFILE' });
      return nodeFs.openSynced!(p);
    },
  };
  const db = Db.create(file, { fs, sync: true, compactionSlack: 1_000_000 });
  await db.load();
  for (let i = 0; i < 30; i++) { const tx = db.begin(); tx.put('t', `k${i % 3}`, { i }); await db.commit(tx); }
  const size = statSync(file).size;
  const fds = readdirSync('/proc/self/fd').length;
  await assert.rejects(db.compact(), /EMFILE/);
  assert.equal(readdirSync('/proc/self/fd').length, fds, 'the temp file\'s descriptor is closed');
  assert.deepEqual(readdirSync(dir), ['a.log'], 'the temp file is removed');
  assert.equal(statSync(file).size, size, 'the log is untouched');
  const tx = db.begin(); tx.put('t', 'after', { v: 1 }); await db.commit(tx);
  assert.equal(db.failed, null);
  await db.close();
  const again = await open(file);
  assert.deepEqual([again.get('t', 'k2'), again.get('t', 'after')], [{ i: 29 }, { v: 1 }]);
  await again.close();
});

test('compaction runs by itself when dead records outweigh live ones', async () => {
  const file = join(tmp(), 'a.log');
  const db = await open(file, nodeFs, { compactionSlack: 10 });
  for (let i = 0; i < 40; i++) { const tx = db.begin(); tx.put('t', 'same', { i }); await db.commit(tx); }
  await db.compact();
  assert.ok(db.stats().ops < 20, `ops ${db.stats().ops}`);
  await db.close();
});

test('compaction copies records held as bytes (holdAsBytes) from their bytes, whatever text they were put with, without serializing them again; other types are serialized', async () => {
  const file = join(tmp(), 'a.log');
  const db = await open(file, nodeFs, { compactionSlack: 1_000_000 });
  db.holdAsBytes('event');
  let serialized = 0;
  // A record whose serialization is counted: compaction must not call it for a record held as bytes.
  const counted = (v: Record<string, unknown>) => Object.defineProperty({ ...v }, 'toJSON', { value: () => { serialized++; return v; }, enumerable: false });
  const tx = db.begin();
  tx.put('event', 'e1', counted({ id: 'e1', data: { object: { n: 1 } } }), ['{"id":"e1","data":{"object":', '{"n":1}', '}}']);
  tx.put('event', 'e2', counted({ id: 'e2', n: 2 }), '{"id":"e2","n":2}');
  tx.put('event', 'e3', counted({ id: 'e3', n: 3 })); // no text given: the log line serializes it, once
  tx.put('other', 'o1', counted({ id: 'o1' }), '{"id":"o1"}'); // a type not held as bytes: serialized
  await db.commit(tx);
  serialized = 0;
  await db.compact();
  assert.equal(serialized, 1);
  await db.close();
  const db2 = await open(file);
  assert.deepEqual(db2.get('event', 'e1'), { id: 'e1', data: { object: { n: 1 } } });
  assert.deepEqual(db2.get('event', 'e2'), { id: 'e2', n: 2 });
  assert.deepEqual(db2.get('event', 'e3'), { id: 'e3', n: 3 });
  assert.deepEqual(db2.get('other', 'o1'), { id: 'o1' });
  assert.equal(db2.loadInfo.snapshot, true);
  await db2.close();
});

test('compaction waits for a transaction that is open (not yet committed): its capture point comes once it is aborted, and leaves its changes out', async () => {
  const file = join(tmp(), 'a.log');
  const db = await open(file, nodeFs, { compactionSlack: 1_000_000 });
  const t0 = db.begin(); t0.put('t', 'k', { v: 0 }); t0.put('t', 'gone', { v: 0 }); await db.commit(t0);
  const openTx = db.begin();
  openTx.put('t', 'k', { v: 1 });
  openTx.del('t', 'gone');
  openTx.put('t', 'new', { v: 1 });
  const compaction = db.compact();
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  assert.equal(db.stats().covered, 0, 'no capture while a transaction is open');
  openTx.abort();
  await compaction;
  assert.equal(db.stats().covered, 2, 'compacted once the transaction was aborted');
  await db.close();
  const db2 = await open(file);
  assert.ok(db2.loadInfo.snapshot);
  assert.deepEqual(db2.get('t', 'k'), { v: 0 });
  assert.deepEqual(db2.get('t', 'gone'), { v: 0 });
  assert.equal(db2.get('t', 'new'), undefined);
  await db2.close();
});

test('a failed folder fsync after the compaction rename: the new file is the log, and later writes are refused (never acknowledged on an unsynced rename)', async () => {
  const dir = tmp();
  const file = join(dir, 'a.log');
  let failDirSync = false;
  const fs: StoreFs = { ...nodeFs, fsyncDir: async (d) => { if (failDirSync) throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }); return nodeFs.fsyncDir(d); } };
  const db = await open(file, fs, { compactionSlack: 1_000_000 });
  for (let i = 0; i < 20; i++) { const tx = db.begin(); tx.put('t', 'k', { i }); await db.commit(tx); }
  failDirSync = true;
  await db.compact();
  const tx = db.begin(); tx.put('t', 'after', { v: 1 });
  await assert.rejects(db.commit(tx), /fsync of .* after compacting .* failed: EIO.*writes are refused until restart/);
  assert.equal(db.get('t', 'after'), undefined);
  await db.close();
  const db2 = await open(file);
  assert.deepEqual(db2.get('t', 'k'), { i: 19 });
  assert.equal(db2.stats().ops, 1, 'the compacted file is the log');
  await db2.close();
});

// ── Pipelined group commit (src/store/log/log.ts): a batch's fdatasync overlaps the next write ──

/** A StoreFs over the real one whose fdatasync calls (and, when asked, writes) wait for the test. */
function gatedFs(holdWrites = false) {
  const events: string[] = [];
  const syncs: Array<{ release: () => void; fail: (e: Error) => void }> = [];
  const writes: Array<() => void> = [];
  let n = 0;
  const fs: StoreFs = {
    ...nodeFs,
    write: async (fd, buf, pos) => {
      const k = ++n;
      events.push(`write ${k}`);
      if (holdWrites && k > 1) await new Promise<void>((r) => writes.push(r));
      await nodeFs.write(fd, buf, pos);
      events.push(`written ${k}`);
    },
    fdatasync: (fd) => new Promise<void>((resolve, reject) => {
      events.push(`sync ${syncs.length + 1}`);
      syncs.push({ release: () => nodeFs.fdatasync(fd).then(resolve, reject), fail: reject });
    }),
    ftruncate: async (fd, len) => { events.push(`truncate ${len}`); return nodeFs.ftruncate(fd, len); },
  };
  return { fs, events, syncs, writes };
}
const until = async (cond: () => boolean) => { while (!cond()) await new Promise((r) => setImmediate(r)); };
const line = (s: string) => encodeLine(JSON.stringify([['p', 't', s, {}]]));

test('pipelined group commit: the next batch is written while the previous one syncs, and answers keep their order', { timeout: 10_000 }, async () => {
  const file = join(tmp(), 'a.log');
  const g = gatedFs();
  const log = new AppendLog(file, await nodeFs.open(file), 0, g.fs, true);
  const settled: string[] = [];
  const a = log.append(line('a')).then(() => settled.push('a'));
  await until(() => g.syncs.length === 1);
  const b = log.append(line('b')).then(() => settled.push('b'));
  await until(() => g.syncs.length === 2);
  assert.deepEqual(g.events, ['write 1', 'written 1', 'sync 1', 'write 2', 'written 2', 'sync 2']);
  g.syncs[1].release();
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  assert.deepEqual(settled, [], 'the second batch waits for the first one');
  g.syncs[0].release();
  await Promise.all([a, b]);
  assert.deepEqual(settled, ['a', 'b']);
  await log.close();
  assert.equal(readFileSync(file).length, line('a').length + line('b').length);
});

test('pipelined group commit: a failed sync fails the later batch too (though it synced) and cuts both from the file', { timeout: 10_000 }, async () => {
  const file = join(tmp(), 'a.log');
  const g = gatedFs();
  const log = new AppendLog(file, await nodeFs.open(file), 0, g.fs, true);
  const a = log.append(line('a'));
  await until(() => g.syncs.length === 1);
  const b = log.append(line('b'));
  await until(() => g.syncs.length === 2);
  g.syncs[1].release();
  g.syncs[0].fail(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
  await assert.rejects(a, StorageFailedError);
  await assert.rejects(b, StorageFailedError);
  assert.equal(readFileSync(file).length, 0, 'both batches are cut from the file');
  assert.equal(log.size, 0);
  await assert.rejects(log.append(line('c')), /writes are refused until restart/);
});

test('pipelined group commit: a failed sync waits for the next batch\'s write in flight before cutting the file', { timeout: 10_000 }, async () => {
  const file = join(tmp(), 'a.log');
  const g = gatedFs(true);
  const log = new AppendLog(file, await nodeFs.open(file), 0, g.fs, true);
  const a = log.append(line('a'));
  await until(() => g.syncs.length === 1);
  const b = log.append(line('b'));
  await until(() => g.writes.length === 1);
  g.syncs[0].fail(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  assert.ok(!g.events.some((e) => e.startsWith('truncate')), 'no cut while a write is in flight');
  g.writes[0]();
  await assert.rejects(a, StorageFailedError);
  await until(() => g.syncs.length === 2 || g.events.includes('truncate 0'));
  if (g.syncs.length === 2) g.syncs[1].release();
  await assert.rejects(b, StorageFailedError);
  assert.deepEqual(g.events.filter((e) => e.startsWith('written') || e.startsWith('truncate')), ['written 1', 'written 2', 'truncate 0']);
  assert.equal(readFileSync(file).length, 0);
});

test('pipelined group commit: a failed write while the previous batch syncs fails it (and lines queued behind it) after that batch is answered', { timeout: 10_000 }, async () => {
  const file = join(tmp(), 'a.log');
  const g = gatedFs();
  let failWrite = false;
  const fs: StoreFs = { ...g.fs, write: async (fd, buf, pos) => { if (failWrite) { await nodeFs.write(fd, bytesOf(buf).subarray(0, 3), pos); throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }); } return g.fs.write(fd, buf, pos); } };
  const log = new AppendLog(file, await nodeFs.open(file), 0, fs, true);
  const settled: string[] = [];
  const a = log.append(line('a')).then(() => settled.push('a ok'));
  await until(() => g.syncs.length === 1);
  failWrite = true;
  const b = log.append(line('b')).catch((e) => { settled.push(`b ${(e as NodeJS.ErrnoException).code}`); });
  await until(() => g.events.includes(`truncate ${line('a').length}`));
  const c = log.append(line('c')).catch((e) => { settled.push(`c ${(e as NodeJS.ErrnoException).code}`); });
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  assert.deepEqual(settled, [], 'nothing is answered before the syncing batch');
  failWrite = false;
  g.syncs[0].release();
  await Promise.all([a, b, c]);
  assert.deepEqual(settled, ['a ok', 'b ENOSPC', 'c ENOSPC']);
  const d = log.append(line('d'));
  await until(() => g.syncs.length === 2);
  g.syncs[1].release();
  await d;
  await log.close();
  assert.equal(readFileSync(file, 'latin1'), line('a').toString('latin1') + line('d').toString('latin1'));
});
