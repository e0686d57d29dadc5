/**
 * The shared-memory rings between the API thread and the delivery worker
 * (src/areas/webhooks/ring.ts, docs/decisions.md#shared-memory-between-the-api-thread-and-the-delivery-worker):
 * records come out whole and in order through every wrap of a small ring, a full ring refuses
 * and takes again once read, a record over half the ring is refused; the sleep/wake handshake;
 * and the records of attempts, drops and outcomes round-trip.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ByteRing } from '../src/areas/webhooks/ring.js';
import { decodeOutcome, decodeTask, encodeOutcome, encodeTask } from '../src/areas/webhooks/sender.js';
import { mulberry32 } from './helpers/prng.js';
import { deliveryRecJson, type DeliveryRec } from '../src/areas/webhooks/model.js';

test('records come out whole and in order through thousands of wraps of a 256-byte ring, a full ring refusing until read', () => {
  const mem = ByteRing.memory(256);
  const writer = new ByteRing(mem);
  const reader = new ByteRing(mem);
  const rnd = mulberry32(11);
  let next = 0;
  let expected = 0;
  let refusals = 0;
  const sent: string[] = [];
  for (let round = 0; round < 5000; round++) {
    // Write until the ring refuses (or a few), then read all.
    const k = 1 + Math.floor(rnd() * 6);
    for (let i = 0; i < k; i++) {
      const size = Math.floor(rnd() * 80);
      const body = `${next}:` + 'é'.repeat(Math.floor(size / 2)) + 'x'.repeat(size % 2);
      if (!writer.write(`h${next}\n`, body)) { refusals++; break; }
      sent.push(`h${next}\n${body}`);
      next++;
    }
    const got = reader.readAll().map((b) => b.toString('utf8'));
    for (const g of got) assert.equal(g, sent[expected++]);
    assert.equal(reader.pending, false);
  }
  assert.equal(expected, next);
  assert.ok(next > 10_000 && refusals > 100, `${next} records, ${refusals} refusals`);
});

test('a record over half the ring is refused with a RangeError; an empty one goes through', () => {
  const ring = new ByteRing(ByteRing.memory(128));
  assert.throws(() => ring.write('', 'x'.repeat(61)), { name: 'RangeError', message: 'a record of 65 bytes does not fit a ring of 128' });
  assert.equal(ring.write('', ''), true);
  assert.deepEqual(ring.readAll().map((b) => b.length), [0]);
  assert.throws(() => ByteRing.memory(32), { name: 'RangeError' });
});

test('sleep and wake: a reader that finds nothing sleeps and is woken once; one that finds a record stays awake', () => {
  const mem = ByteRing.memory(256);
  const writer = new ByteRing(mem);
  const reader = new ByteRing(mem);
  assert.equal(writer.takeSleeper(), false, 'awake at first');
  assert.equal(reader.trySleep(), true);
  assert.equal(writer.write('a', ''), true);
  assert.equal(writer.takeSleeper(), true, 'the writer wakes the sleeper');
  assert.equal(writer.takeSleeper(), false, 'once');
  reader.awake();
  assert.equal(reader.readAll().length, 1);
  // A record written between the reader's last read and its sleep: it does not sleep.
  writer.write('b', '');
  assert.equal(reader.trySleep(), false);
  assert.equal(writer.takeSleeper(), false);
  assert.equal(reader.readAll().length, 1);
});

test('attempts, drops and outcomes round-trip through their records', () => {
  const roundTrip = (rec: [string, string | Uint8Array]) => { const r = new ByteRing(ByteRing.memory(4096)); assert.ok(r.write(rec[0], rec[1])); return r.readAll()[0]; };
  const task = { n: 7, endpointId: '0192f0e6-7b6a-7c3e-9a1b-2f3c4d5e6f70', url: 'https://hooks.example.com/a%20b?x=1', body: '{"subject":"Ünïcode \\t tab\\nnewline 🎉"}', eventId: '0192f0e6-7b6a-7c3e-9a1b-000000000001', timestamp: 1764000000, secrets: ['c2VjcmV0', 'b2xk'] };
  // The body comes back as the record's bytes (the worker signs and sends them as they are).
  const decoded = (rec: Buffer) => { const t = decodeTask(rec); return 'drop' in t ? t : { ...t, body: Buffer.from(t.body as Uint8Array).toString('utf8') }; };
  assert.ok(Buffer.isBuffer((decodeTask(roundTrip(encodeTask(task))) as { body: unknown }).body));
  assert.deepEqual(decoded(roundTrip(encodeTask(task))), task);
  assert.deepEqual(decoded(roundTrip(encodeTask({ ...task, secrets: [] }))), { ...task, secrets: [] });
  // A body handed over as bytes (an event held as bytes) goes through unchanged.
  assert.deepEqual(decoded(roundTrip(encodeTask({ ...task, body: Buffer.from(task.body) }))), task);
  assert.deepEqual(decodeTask(roundTrip(encodeTask({ drop: 'we_1' }))), { drop: 'we_1' });
  const outcomes = [
    { ok: true, status: 204, error: null, durationMs: 3 },
    { ok: false, status: 503, error: 'the endpoint answered HTTP 503 Service Unavailable', durationMs: 12, retryAfter: 'Wed, 21 Oct 2026 07:28:00 GMT' },
    { ok: false, status: 429, error: 'the endpoint answered HTTP 429', durationMs: 1, retryAfter: '' },
    { ok: false, status: null, error: 'could not connect to the endpoint: ECONNREFUSED\nsecond line é', durationMs: 0 },
    { ok: false, status: null, error: '', durationMs: 0 },
    { ok: false, status: null, error: 'not sent', durationMs: 0, notSent: true },
  ];
  for (const o of outcomes) assert.deepEqual(decodeOutcome(roundTrip(encodeOutcome(9, o))), { n: 9, outcome: o });
  // Read in place (the view handed to decodeOutcome inside readAll), several at once, in order.
  const ring = new ByteRing(ByteRing.memory(4096));
  outcomes.forEach((o, i) => assert.ok(ring.write(...encodeOutcome(1000 + i, o))));
  assert.deepEqual(ring.readAll(decodeOutcome), outcomes.map((o, i) => ({ n: 1000 + i, outcome: o })));
  assert.equal(ring.pending, false, 'the records are released once read');
  // In a small ring the records go round its end; what was decoded stays as it was when the
  // writer then writes over the same bytes.
  const small = new ByteRing(ByteRing.memory(256));
  const got: Array<{ n: number; outcome: unknown }> = [];
  for (let i = 0; i < 40; i++) {
    assert.ok(small.write(...encodeOutcome(i, outcomes[i % outcomes.length])));
    if (i % 2 === 1) got.push(...small.readAll(decodeOutcome));
  }
  const copy = structuredClone(got);
  for (let i = 0; i < 6; i++) { assert.ok(small.write(...encodeOutcome(99, { ok: false, status: 500, error: 'x'.repeat(60), durationMs: 9 }))); small.readAll(); }
  assert.deepEqual(got, copy);
  assert.deepEqual(got, Array.from({ length: 40 }, (_, i) => ({ n: i, outcome: outcomes[i % outcomes.length] })));
  // Numbers the digits-only reading does not take (none the worker writes) still come back.
  assert.deepEqual(decodeOutcome(roundTrip(encodeOutcome(3, { ok: true, status: 200, error: null, durationMs: 1.5 }))), { n: 3, outcome: { ok: true, status: 200, error: null, durationMs: 1.5 } });
  // A tab in a Retry-After value (allowed in a header value) is a space in the record.
  assert.equal(decodeOutcome(roundTrip(encodeOutcome(1, { ok: false, status: 503, error: 'x', durationMs: 0, retryAfter: '1\t2' }))).outcome.retryAfter, '1 2');
});

test('a delivery record\'s text (deliveryRecJson) is JSON.stringify of the record, for every status and for errors with quotes, controls, U+2028 and astral characters', () => {
  const base: DeliveryRec = {
    id: '0197b5e5-3a01-7b22-9d10-4e5f6a7b8c91', endpointId: '0197b5e5-3a01-7b22-9d10-4e5f6a7b8c92', eventId: '0197b5e2-6a10-7f02-8b44-51d9e0a7c3b4',
    eventType: 'conversation.updated', attempt: 0, status: 'pending', responseStatus: null, error: null, durationMs: null,
    createdAt: '2026-11-24T09:00:00.000Z', nextAttemptAt: '2026-11-24T09:00:00.000Z',
  };
  const cases: DeliveryRec[] = [
    base,
    { ...base, attempt: 1, status: 'succeeded', responseStatus: 204, durationMs: 3, nextAttemptAt: null },
    { ...base, attempt: 3, status: 'pending', responseStatus: 503, error: 'the endpoint answered HTTP 503 "busy"\n\u2028\u0001 😀 \\', durationMs: 0, nextAttemptAt: '2026-11-24T09:05:00.312Z' },
    { ...base, attempt: 10, status: 'failed', responseStatus: null, error: 'could not connect to the endpoint: ECONNREFUSED', durationMs: 1234, nextAttemptAt: null },
    // A field that is not an id-like string (never made by the area) is still quoted right.
    { ...base, id: 'a"b\\c', eventType: 'issue.created' },
  ];
  for (const d of cases) assert.equal(deliveryRecJson(d), JSON.stringify(d));
});
