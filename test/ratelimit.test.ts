/**
 * Rate limiting (docs/security.md#rate-limit, docs/api.md#rate-limit-headers): a token bucket per API key with RateLimit-* headers on every
 * authenticated response and Retry-After on a 429, black-box with RATE_LIMIT_BURST=5 and
 * RATE_LIMIT_PER_MINUTE=60 (one token a second) on the injected clock; and the
 * TokenBucketLimiter itself: refill math and the bounded map (CLOCK eviction).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { TokenBucketLimiter } from '../src/http/ratelimit.js';
import { ManualClock } from '../src/core/clock.js';

const ENV = { RATE_LIMIT_BURST: '5', RATE_LIMIT_PER_MINUTE: '60' };
const LIMITED = { code: 'rate_limited', error: 'Too many API requests. Slow down and try again shortly.' };
const EMPTY_LIST = { object: 'list', hasMore: false, nextCursor: null, issues: [] };

async function withServer(fn: (srv: TestServer) => Promise<void>): Promise<void> {
  const srv = await startTestServer({ env: ENV });
  try { await fn(srv); } finally { await srv.close(); }
}

const rate = (r: { headers: Headers }) => ({
  limit: r.headers.get('ratelimit-limit'), remaining: r.headers.get('ratelimit-remaining'),
  reset: r.headers.get('ratelimit-reset'), retryAfter: r.headers.get('retry-after'),
});

// ---------------------------------------------------------------- black-box

test('every authenticated response carries RateLimit-Limit/Remaining/Reset, counting down per request', () => withServer(async (srv) => {
  const seen = [];
  seen.push(rate(await srv.call('GET', '/api/v1/issues')));
  seen.push(rate(await srv.call('POST', '/api/v1/issues', { body: { subject: 'x' } })));
  seen.push(rate(await srv.call('GET', '/api/v1/issues/missing')));
  seen.push(rate(await srv.call('POST', '/api/v1/issues', { body: {} })));
  seen.push(rate(await srv.call('GET', '/api/v1/issues', { headers: { 'Api-Version': '1999-01-01' } })));
  assert.deepEqual(seen, [
    { limit: '5', remaining: '4', reset: '1', retryAfter: null },
    { limit: '5', remaining: '3', reset: '2', retryAfter: null },
    { limit: '5', remaining: '2', reset: '3', retryAfter: null },
    { limit: '5', remaining: '1', reset: '4', retryAfter: null },
    { limit: '5', remaining: '0', reset: '5', retryAfter: null },
  ]);
}));

test('the 6th request within the burst → 429 rate_limited with Retry-After: 1', () => withServer(async (srv) => {
  for (let i = 0; i < 5; i++) assert.equal((await srv.call('GET', '/api/v1/issues')).status, 200);
  const r = await srv.call('GET', '/api/v1/issues');
  assert.equal(r.status, 429);
  assert.deepEqual(r.body, LIMITED);
  assert.deepEqual(rate(r), { limit: '5', remaining: '0', reset: '5', retryAfter: '1' });
  assert.equal(r.headers.get('api-version'), '2026-06-29');
  assert.ok(r.headers.get('x-request-id'));
}));

test('a rate-limited request with an invalid body is 429, not 400 (429 comes before validation)', () => withServer(async (srv) => {
  for (let i = 0; i < 5; i++) await srv.call('GET', '/api/v1/issues');
  const r = await srv.call('POST', '/api/v1/issues', { raw: '{', headers: { 'Content-Type': 'application/json' } });
  assert.equal(r.status, 429);
  assert.deepEqual(r.body, LIMITED);
}));

test('another key, in the same or another workspace, has its own bucket', () => withServer(async (srv) => {
  for (let i = 0; i < 6; i++) await srv.call('GET', '/api/v1/issues');
  assert.equal((await srv.call('GET', '/api/v1/issues')).status, 429);
  const same = await srv.newKey();
  const r = await srv.call('GET', '/api/v1/issues', { key: same });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, EMPTY_LIST);
  assert.deepEqual(rate(r), { limit: '5', remaining: '4', reset: '1', retryAfter: null });
  const other = await srv.newWorkspace();
  assert.deepEqual(rate(await srv.call('GET', '/api/v1/issues', { key: other.key })), { limit: '5', remaining: '4', reset: '1', retryAfter: null });
}));

test('advancing the injected clock refills one token a second, up to the burst', () => withServer(async (srv) => {
  for (let i = 0; i < 5; i++) await srv.call('GET', '/api/v1/issues');
  assert.equal((await srv.call('GET', '/api/v1/issues')).status, 429);
  srv.clock.advance(999);
  const early = await srv.call('GET', '/api/v1/issues');
  assert.equal(early.status, 429);
  assert.equal(early.headers.get('retry-after'), '1');
  srv.clock.advance(1);
  const one = await srv.call('GET', '/api/v1/issues');
  assert.equal(one.status, 200);
  assert.deepEqual(rate(one), { limit: '5', remaining: '0', reset: '5', retryAfter: null });
  assert.equal((await srv.call('GET', '/api/v1/issues')).status, 429);
  srv.clock.advance(3_600_000);
  const full = await srv.call('GET', '/api/v1/issues');
  assert.deepEqual(rate(full), { limit: '5', remaining: '4', reset: '1', retryAfter: null }, 'never more than the burst');
}));

test('a wrong-scope 403 spends a token like any other authenticated answer; once the bucket is empty, forbidden requests get 429 with Retry-After', () => withServer(async (srv) => {
  const FORBIDDEN = { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs issues:write.' };
  const readOnly = await srv.newKey({ scopes: 'issues:read' });
  for (let i = 4; i >= 0; i--) {
    const denied = await srv.call('POST', '/api/v1/issues', { key: readOnly, body: { subject: 'x' } });
    assert.deepEqual([denied.status, denied.body, rate(denied)], [403, FORBIDDEN, { limit: '5', remaining: String(i), reset: String(5 - i), retryAfter: null }]);
  }
  const limited = await srv.call('POST', '/api/v1/issues', { key: readOnly, body: { subject: 'x' } });
  assert.deepEqual([limited.status, limited.body, rate(limited)], [429, LIMITED, { limit: '5', remaining: '0', reset: '5', retryAfter: '1' }]);
  // The key's allowed requests share the same, now empty, bucket.
  assert.equal((await srv.call('GET', '/api/v1/issues', { key: readOnly })).status, 429);
  srv.clock.advance(1000);
  const refilled = await srv.call('POST', '/api/v1/issues', { key: readOnly, body: { subject: 'x' } });
  assert.deepEqual([refilled.status, rate(refilled).remaining], [403, '0']);
  // Another key is not affected.
  assert.equal((await srv.call('GET', '/api/v1/issues')).status, 200);
}));

test('unauthenticated and unknown-route answers neither carry nor consume tokens', () => withServer(async (srv) => {
  const readOnly = await srv.newKey({ scopes: 'issues:read' });
  const health = await srv.call('GET', '/healthz', { key: null });
  assert.deepEqual(rate(health), { limit: null, remaining: null, reset: null, retryAfter: null });
  const nope = await srv.call('GET', '/api/v1/nope', { key: readOnly });
  assert.deepEqual(rate(nope), { limit: null, remaining: null, reset: null, retryAfter: null });
  const unauth = await srv.call('GET', '/api/v1/issues', { key: null });
  assert.deepEqual(rate(unauth), { limit: null, remaining: null, reset: null, retryAfter: null });
  assert.deepEqual(rate(await srv.call('GET', '/api/v1/issues', { key: readOnly })), { limit: '5', remaining: '4', reset: '1', retryAfter: null });
}));

test('an idempotent replay still takes a token', () => withServer(async (srv) => {
  const headers = { 'Idempotency-Key': 'rl-replay' };
  const first = await srv.call('POST', '/api/v1/issues', { body: { subject: 'x' }, headers });
  const again = await srv.call('POST', '/api/v1/issues', { body: { subject: 'x' }, headers });
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual([first.headers.get('ratelimit-remaining'), again.headers.get('ratelimit-remaining')], ['4', '3']);
}));

// ---------------------------------------------------------------- TokenBucketLimiter

test('TokenBucketLimiter: a new bucket is full; each take removes one token and reports the seconds to full', () => {
  const clock = new ManualClock();
  const l = new TokenBucketLimiter(5, 60, clock);
  const results = Array.from({ length: 6 }, () => l.take('k'));
  assert.deepEqual(results, [
    { allowed: true, remaining: 4, resetSeconds: 1, retryAfterSeconds: 0 },
    { allowed: true, remaining: 3, resetSeconds: 2, retryAfterSeconds: 0 },
    { allowed: true, remaining: 2, resetSeconds: 3, retryAfterSeconds: 0 },
    { allowed: true, remaining: 1, resetSeconds: 4, retryAfterSeconds: 0 },
    { allowed: true, remaining: 0, resetSeconds: 5, retryAfterSeconds: 0 },
    { allowed: false, remaining: 0, resetSeconds: 5, retryAfterSeconds: 1 },
  ]);
});

test('TokenBucketLimiter: refill is continuous (perMinute/60 000 per ms), fractions are not spendable, rounding is up', () => {
  const clock = new ManualClock();
  const l = new TokenBucketLimiter(5, 60, clock);
  for (let i = 0; i < 5; i++) l.take('k');
  clock.advance(500);
  assert.deepEqual(l.take('k'), { allowed: false, remaining: 0, resetSeconds: 5, retryAfterSeconds: 1 });
  clock.advance(500);
  assert.deepEqual(l.take('k'), { allowed: true, remaining: 0, resetSeconds: 5, retryAfterSeconds: 0 });
  clock.advance(2500);
  assert.deepEqual(l.peek('k'), { allowed: true, remaining: 2, resetSeconds: 3, retryAfterSeconds: 0 });
  clock.advance(60_000);
  assert.deepEqual(l.take('k'), { allowed: true, remaining: 4, resetSeconds: 1, retryAfterSeconds: 0 }, 'capped at capacity');
});

test('TokenBucketLimiter: a slow refill gives a long Retry-After (1 per minute → 60 s)', () => {
  const clock = new ManualClock();
  const l = new TokenBucketLimiter(2, 1, clock);
  l.take('k'); l.take('k');
  assert.deepEqual(l.take('k'), { allowed: false, remaining: 0, resetSeconds: 120, retryAfterSeconds: 60 });
  clock.advance(59_000);
  assert.deepEqual(l.take('k'), { allowed: false, remaining: 0, resetSeconds: 61, retryAfterSeconds: 1 });
  clock.advance(1_000);
  assert.equal(l.take('k').allowed, true);
});

test('TokenBucketLimiter: a denied take does not consume anything (no debt)', () => {
  const clock = new ManualClock();
  const l = new TokenBucketLimiter(1, 60, clock);
  l.take('k');
  for (let i = 0; i < 100; i++) assert.equal(l.take('k').allowed, false);
  clock.advance(1000);
  assert.equal(l.take('k').allowed, true);
});

test('TokenBucketLimiter: peek neither takes a token nor adds an unknown key', () => {
  const clock = new ManualClock();
  const l = new TokenBucketLimiter(3, 60, clock);
  assert.deepEqual(l.peek('new'), { allowed: true, remaining: 3, resetSeconds: 0, retryAfterSeconds: 0 });
  assert.equal(l.size, 0);
  l.take('k');
  assert.deepEqual(l.peek('k'), { allowed: true, remaining: 2, resetSeconds: 1, retryAfterSeconds: 0 });
  assert.deepEqual(l.peek('k'), { allowed: true, remaining: 2, resetSeconds: 1, retryAfterSeconds: 0 });
  l.take('k'); l.take('k');
  assert.deepEqual(l.peek('k'), { allowed: false, remaining: 0, resetSeconds: 3, retryAfterSeconds: 1 });
});

test('TokenBucketLimiter: keys are independent', () => {
  const clock = new ManualClock();
  const l = new TokenBucketLimiter(1, 60, clock);
  assert.equal(l.take('a').allowed, true);
  assert.equal(l.take('a').allowed, false);
  assert.equal(l.take('b').allowed, true);
});

test('TokenBucketLimiter: the map is bounded at maxEntries, dropping a bucket not used since the sweep passed it (CLOCK)', () => {
  const clock = new ManualClock();
  const l = new TokenBucketLimiter(5, 60, clock, 3);
  l.take('a'); l.take('a');
  l.take('b');
  l.take('c');
  assert.equal(l.size, 3);
  l.take('a'); // a is used again: its second chance; b and c were not used since they were made
  l.take('d'); // the sweep passes a (unmarked, moved to the end) and drops b
  assert.equal(l.size, 3);
  assert.deepEqual(l.take('b'), { allowed: true, remaining: 4, resetSeconds: 1, retryAfterSeconds: 0 }, 'b was dropped: it starts full again');
  assert.equal(l.size, 3); // adding b dropped c, the oldest not used since
  assert.deepEqual(l.take('a'), { allowed: true, remaining: 1, resetSeconds: 4, retryAfterSeconds: 0 }, 'a kept its state');
  assert.deepEqual(l.take('d'), { allowed: true, remaining: 3, resetSeconds: 2, retryAfterSeconds: 0 }, 'd kept its state');
  assert.deepEqual(l.take('c'), { allowed: true, remaining: 4, resetSeconds: 1, retryAfterSeconds: 0 }, 'c was dropped');
});

test('TokenBucketLimiter: with every bucket used, a sweep clears the marks and drops the oldest', () => {
  const l = new TokenBucketLimiter(5, 60, new ManualClock(), 2);
  l.take('a'); l.take('a'); l.take('b'); l.take('b');
  l.take('c');
  assert.equal(l.size, 2);
  assert.equal(l.take('b').remaining, 2, 'b kept its state');
  assert.equal(l.take('a').remaining, 4, 'a, the oldest, was dropped');
});

test('TokenBucketLimiter: 10 000 distinct keys never hold more than maxEntries buckets', () => {
  const clock = new ManualClock();
  const l = new TokenBucketLimiter(5, 60, clock, 100);
  for (let i = 0; i < 10_000; i++) { l.take(`k${i}`); assert.ok(l.size <= 100); }
  assert.equal(l.size, 100);
});

test('TokenBucketLimiter: a clock stepping back refills nothing and never puts a bucket into debt', () => {
  const clock = new ManualClock(1_000_000);
  const l = new TokenBucketLimiter(5, 60, clock);
  for (let i = 0; i < 5; i++) assert.equal(l.take('k').allowed, true);
  clock.set(1_000_000 - 3_600_000); // an hour back
  const r = l.peek('k');
  assert.equal(r.remaining, 0);
  clock.set(1_000_000 - 3_600_000 + 1000);
  assert.equal(l.take('k').allowed, true, 'one second after the jump, one token is back');
});
