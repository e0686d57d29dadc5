/**
 * Which operations a transaction's log line holds and their JSON texts (src/store/txText.ts,
 * docs/storage.md#transactions): each record once, at the place of its first operation, with its
 * last value or as deleted; a record created and deleted in the transaction not at all; a
 * pre-serialized value spliced in as it was given; a put's value text the very characters of its
 * operation's text. Pure functions: no log, no file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { opJson, putValueText, writtenOps, writtenTexts } from '../src/store/txText.js';
import type { Op } from '../src/store/db.js';
import type { JsonText } from '../src/store/log/log.js';

type Undo = readonly [string, string, object | undefined];

/** The undo entries of `ops`, the records of `existed` (as `type/id`) having a previous value. */
const undoOf = (ops: readonly Op[], existed: string[] = []): Undo[] =>
  ops.map((op) => [op[1], op[2], existed.includes(`${op[1]}/${op[2]}`) ? {} : undefined] as const);

/** The text of a piece list (pieces may be strings or bytes). */
const joined = (t: JsonText): string =>
  typeof t === 'string' ? t : t instanceof Uint8Array ? Buffer.from(t).toString() : t.map((p) => (typeof p === 'string' ? p : Buffer.from(p).toString())).join('');

test('writtenOps: null (every operation, in order) when no record repeats, short or long', () => {
  assert.equal(writtenOps([], []), null);
  const one: Op[] = [['p', 't', 'a', { n: 1 }]];
  assert.equal(writtenOps(one, undoOf(one)), null);
  const few: Op[] = [['p', 't', 'a', {}], ['p', 'u', 'a', {}], ['d', 't', 'b']];
  assert.equal(writtenOps(few, undoOf(few, ['t/b'])), null);
  const many: Op[] = Array.from({ length: 40 }, (_, i) => ['p', 't', `id${i}`, { i }] as const);
  assert.equal(writtenOps(many, undoOf(many)), null);
});

test('writtenOps: each record once, with its last operation, at the place of its first', () => {
  const ops: Op[] = [
    ['p', 'conversation', 'c', { v: 1 }], // 0
    ['p', 'message', 'm1', {}], // 1
    ['p', 'conversation', 'c', { v: 2 }], // 2
    ['p', 'message', 'm2', {}], // 3
    ['p', 'conversation', 'c', { v: 3 }], // 4
  ];
  assert.deepEqual(writtenOps(ops, undoOf(ops)), [4, 1, 3]);
  // Past the pairwise check's bound, the same answer.
  const long: Op[] = [...ops, ...Array.from({ length: 20 }, (_, i) => ['p', 'message', `x${i}`, {}] as const)];
  assert.deepEqual(writtenOps(long, undoOf(long)), [4, 1, 3, ...Array.from({ length: 20 }, (_, i) => 5 + i)]);
});

test('writtenOps: a record created and deleted here is left out; one that existed before is written as deleted', () => {
  const ops: Op[] = [['p', 't', 'new', {}], ['p', 't', 'old', { v: 2 }], ['d', 't', 'new'], ['d', 't', 'old']];
  assert.deepEqual(writtenOps(ops, undoOf(ops, ['t/old'])), [3]);
  assert.deepEqual(writtenOps(ops, undoOf(ops)), []);
});

test('opJson: the operation serialized, or its head with the pre-serialized value spliced in as given', () => {
  const op: Op = ['p', 't', 'a"b', { x: 1 }];
  assert.equal(opJson(op, undefined), JSON.stringify(op));
  assert.equal(opJson(['d', 't', 'a'], undefined), '["d","t","a"]');
  assert.equal(opJson(op, '{"x":1}'), JSON.stringify(op));
  const bytes = Buffer.from('{"x":1}');
  const fromBytes = opJson(op, bytes);
  assert.ok(Array.isArray(fromBytes) && fromBytes[1] === bytes, 'bytes are a piece, not copied');
  assert.equal(joined(fromBytes), JSON.stringify(op));
  const pieces = opJson(op, ['{"x":', Buffer.from('1'), '}']);
  assert.ok(Array.isArray(pieces) && pieces.length === 5);
  assert.equal(joined(pieces), JSON.stringify(op));
});

test('putValueText: the value\'s characters of the operation\'s text, or the pre-serialized value itself', () => {
  const value = { s: 'é ☃ "q" \\ \u0001', n: [1, 2.5, null], o: { deep: true } };
  for (const id of ['a', 'with "quotes"', 'ünï']) {
    const op: Op = ['p', 'ty\\pe', id, value];
    const text = opJson(op, undefined);
    assert.equal(putValueText(op, undefined, text), JSON.stringify(value));
  }
  const raw = ['{"s":', '"x"}'];
  const op: Op = ['p', 't', 'a', { s: 'x' }];
  assert.equal(putValueText(op, raw, opJson(op, raw)), raw);
});

test('writtenTexts: the written operations\' texts, and each written put\'s value text by op index', () => {
  const ops: Op[] = [['p', 't', 'a', { v: 1 }], ['p', 't', 'b', { v: 1 }], ['p', 't', 'a', { v: 2 }], ['d', 't', 'c']];
  const raw: Array<JsonText | undefined> = [undefined, '{"v":1}', '{"v":2}'];
  const puts: Array<[number, string]> = [];
  const texts = writtenTexts({ ops, raw, undo: undoOf(ops, ['t/c']) }, (i, value) => puts.push([i, joined(value())]));
  assert.deepEqual(texts.map(joined), [JSON.stringify(ops[2]), JSON.stringify(ops[1]), JSON.stringify(ops[3])]);
  assert.deepEqual(puts, [[2, '{"v":2}'], [1, '{"v":1}']]);
  // A pre-serialized value replaced by a later plain put is not written.
  const replaced: Op[] = [['p', 't', 'a', { v: 1 }], ['p', 't', 'a', { v: 2 }]];
  assert.deepEqual(writtenTexts({ ops: replaced, raw: ['{"v":1}'], undo: undoOf(replaced) }), [JSON.stringify(replaced[1])]);
});
