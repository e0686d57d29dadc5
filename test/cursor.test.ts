// The cursor codec (docs/api.md#lists): cached cursors are the same text as fresh ones, and a
// cache never lets a cursor through for another workspace or list, nor an edited one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { CursorCodec } from '../src/http/cursor.js';
import { ApiError } from '../src/http/errors.js';

const invalidCursor = (e: unknown) => e instanceof ApiError && e.status === 400 && JSON.stringify(e.body()) === JSON.stringify({ code: 'invalid_request', error: 'Query parameter cursor is invalid.' });

test('a cursor made again (from the cache) is the same text a fresh codec makes, and decodes to its key', () => {
  const secret = randomBytes(32);
  const a = new CursorCodec(secret);
  const first = a.encode('ws1', 'conversations', '2026-11-24T10:00:00.000Z\u0000id-1');
  assert.equal(a.encode('ws1', 'conversations', '2026-11-24T10:00:00.000Z\u0000id-1'), first);
  assert.equal(new CursorCodec(secret).encode('ws1', 'conversations', '2026-11-24T10:00:00.000Z\u0000id-1'), first);
  assert.equal(a.decode('ws1', 'conversations', first), '2026-11-24T10:00:00.000Z\u0000id-1');
  assert.equal(a.decode('ws1', 'conversations', first), '2026-11-24T10:00:00.000Z\u0000id-1', 'from the cache');
});

test('a cursor checked once is still refused for another workspace or list, and an edited one is refused', () => {
  const a = new CursorCodec(randomBytes(32));
  const c = a.encode('ws1', 'conversations', 'k');
  assert.equal(a.decode('ws1', 'conversations', c), 'k');
  assert.throws(() => a.decode('ws2', 'conversations', c), invalidCursor);
  assert.throws(() => a.decode('ws1', 'issues', c), invalidCursor);
  // The second-last character changed (the test picked it by the last one: 1 run in 64 "edited" nothing).
  const edited = `${c.slice(0, -2)}${c.at(-2) === 'A' ? 'B' : 'A'}${c.slice(-1)}`;
  assert.notEqual(edited, c);
  assert.throws(() => a.decode('ws1', 'conversations', edited), invalidCursor);
  assert.throws(() => a.decode('ws1', 'conversations', `${Buffer.from('other').toString('base64url')}.${c.split('.')[1]}`), invalidCursor);
});

test('the caches are bounded: past 4,096 cursors they start again, and every cursor still decodes', () => {
  const a = new CursorCodec(randomBytes(32));
  const made = Array.from({ length: 5000 }, (_, i) => [`k${i}`, a.encode('ws', 'l', `k${i}`)] as const);
  for (const [k, c] of made) assert.equal(a.decode('ws', 'l', c), k);
  for (const [k, c] of made) assert.equal(a.encode('ws', 'l', k), c);
});
