// Record ids (src/core/ids.ts): UUID version 7 (RFC 9562 §5.7) — the time, a counter, random bits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../src/core/ids.js';

const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The 48-bit time of a UUIDv7, ms. */
const timeOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
/** The 12-bit counter of a UUIDv7. */
const seqOf = (id: string) => parseInt(id.replace(/-/g, '').slice(13, 16), 16);

test('an id is a UUIDv7 whose time is the one given, whatever its bytes', () => {
  // Times increase through the file: the generator never goes back.
  for (const at of [Date.UTC(2026, 10, 24, 9, 0, 0, 123), Date.UTC(2030, 0, 1), Date.UTC(2030, 0, 1) + 0xffffff, Date.UTC(2031, 5, 6, 7, 8, 9, 10)]) {
    const id = newId(at);
    assert.match(id, UUID7);
    assert.equal(timeOf(id), at);
    assert.equal(Buffer.from(id.replace(/-/g, ''), 'hex').length, 16);
  }
});

test('ids made in the same millisecond count up and stay in creation order as strings; past 4,096 the time moves on by one', () => {
  const at = Date.UTC(2040, 0, 1); // later than the previous test's
  const ids = Array.from({ length: 5000 }, () => newId(at));
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1] < ids[i], `${ids[i - 1]} < ${ids[i]}`);
  assert.equal(timeOf(ids[0]), at);
  assert.equal(seqOf(ids[0]), 0);
  assert.equal(seqOf(ids[4095]), 4095);
  assert.equal(timeOf(ids[4096]), at + 1);
  assert.equal(seqOf(ids[4096]), 0);
  for (const id of ids) assert.match(id, UUID7);
  assert.equal(new Set(ids).size, ids.length);
  // An earlier clock reading never makes an earlier id.
  const later = newId(at - 1000);
  assert.ok(later > ids[ids.length - 1]);
});

test('the latest time the ISO dates of records hold (9999-12-31T23:59:59.999Z) is written whole', () => {
  const at = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
  const id = newId(at);
  assert.match(id, UUID7);
  assert.equal(timeOf(id), at);
});
