/**
 * Compaction's time slices (docs/storage.md#compaction): writing a compacted log yields to the
 * event loop once a slice of the clock is used up, not only between 4 MiB writes, and what it
 * writes does not depend on where it yielded. Unit tests of src/store/snapshot/compactedFile.ts with an
 * injected clock; the records are made here, no log is loaded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Slices, writeCompactedFile, type Capture } from '../src/store/snapshot/compactedFile.js';
import { Retention } from '../src/store/snapshot/retention.js';
import { nodeFs } from '../src/store/log/fs.js';
import { HELD_OBJECT } from '../src/store/memory/table.js';

/** A capture of one table of `n` records held as objects, and one persisted state. */
function captureOf(n: number): Capture {
  const ids = Array.from({ length: n }, (_, i) => `rec_${String(i).padStart(6, '0')}`);
  return {
    tables: [{
      type: 'note', ids, held: new Uint8Array(n).fill(HELD_OBJECT), refs: new Uint32Array(n), loaded: new Int32Array(n).fill(-1),
      objs: ids.map((id, i) => ({ id, body: `note ${i} ${'x'.repeat(i % 50)}`, n: i })),
    }],
    states: [{ name: 'note.firstTen/1', save: (ctx) => ({ refs: Uint32Array.from(ids.slice(0, 10), (id) => ctx.ref('note', id)) }) }],
  };
}

/** A clock that moves one ms each time it is read. */
function tickingClock(): () => number {
  let t = 0;
  return () => ++t;
}

async function write(dir: string, name: string, capture: Capture, slices: Slices): Promise<Buffer> {
  const w = await writeCompactedFile(join(dir, 'ws.log'), capture, null, new Retention(), nodeFs, name, undefined, slices);
  await nodeFs.close(w.fd);
  return fs.readFileSync(w.tmp);
}

test('Slices: due once the slice is used up (looked at every 32nd call); yield lets the event loop run and begins a new slice', async () => {
  let now = 0;
  const s = new Slices(() => now, 4);
  now = 3;
  for (let i = 0; i < 64; i++) assert.equal(s.due(), false, 'within the slice');
  now = 4;
  let calls = 0;
  while (!s.due()) calls++;
  assert.ok(calls < 32, `looked at within 32 calls (${calls})`);
  let ran = false;
  setImmediate(() => { ran = true; });
  await s.yield();
  assert.equal(ran, true, 'an immediate queued before the yield ran during it');
  assert.equal(s.yields, 1);
  for (let i = 0; i < 64; i++) assert.equal(s.due(), false, 'a new slice began at the yield');
  now = 100;
  s.begin();
  for (let i = 0; i < 64; i++) assert.equal(s.due(), false, 'begin() starts a new slice');
});

test('writeCompactedFile yields to the event loop every slice while it writes records, and the file is the same as one written in one go', async () => {
  const dir = fs.mkdtempSync(join(tmpdir(), 'sw-slices-'));
  try {
    const n = 3000;
    // The clock moves 1 ms per look, 4 ms slices: a yield about every 4 × 32 records.
    const sliced = new Slices(tickingClock(), 4);
    let turns = 0;
    let counting = true;
    const count = (): void => { turns++; if (counting) setImmediate(count); };
    setImmediate(count);
    const a = await write(dir, 'a.compact', captureOf(n), sliced);
    counting = false;
    // The records alone give n / 128 slices; the sort and the states yield once each too.
    assert.ok(sliced.yields >= Math.floor(n / 128), `yields: ${sliced.yields}`);
    assert.ok(turns >= sliced.yields, `event-loop turns during the write: ${turns}`);

    const whole = new Slices(() => 0, Infinity);
    const b = await write(dir, 'b.compact', captureOf(n), whole);
    // One after the type's sort of its ids, one after each saved state (its id order, note.firstTen/1).
    assert.equal(whole.yields, 3, 'without a slice limit: only the yields after the sort and the states');
    assert.ok(a.equals(b), 'the same bytes wherever it yielded');
    assert.match(b.toString('utf8'), /"rec_002999"/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
