// Timestamps (src/core/clock.ts): `iso` keeps the last instant's text; every call still gives its own instant's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { iso } from '../src/core/clock.js';

test('iso gives each instant its own ISO text, however calls repeat or alternate, and refuses an invalid time', () => {
  const instants = [0, 1, 1, 0, 1_782_734_400_000, 1_782_734_400_000, 1_782_734_400_999, -1, 253_402_300_800_000, 0];
  for (const ms of instants) assert.equal(iso(ms), new Date(ms).toISOString(), String(ms));
  assert.throws(() => iso(Number.NaN), RangeError);
  // A refused time leaves nothing behind: the next call is right.
  assert.equal(iso(5), '1970-01-01T00:00:00.005Z');
  assert.throws(() => iso(Number.NaN), RangeError);
});
