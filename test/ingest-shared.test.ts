/**
 * What the source parsers share (src/ingest/parsers/): the value readers of values.ts and the
 * line/column of position.ts. Positions are checked against the computations the parsers made
 * on their own before (JSON, XML and YAML counting `\n`; GraphQL splitting at `\r\n`, `\n`,
 * `\r`) over every offset of generated texts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PositionCursor, positionAt } from '../src/ingest/parsers/position.js';
import { clip, cutLine, isObj, nonBlankString, oneLine, optionalString, stringOrEmpty } from '../src/ingest/parsers/values.js';

/** The `\n`-only count JSON, XML and YAML made (offset clamped to the text). */
function lfReference(text: string, pos: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(pos, text.length);
  for (let i = 0; i < end; i++) if (text.charCodeAt(i) === 10) { line++; lineStart = i + 1; }
  return { line, column: end - lineStart + 1 };
}

/** GraphQL's count: the text before the offset split at its line terminators. */
function anyReference(text: string, pos: number): { line: number; column: number } {
  const lines = text.slice(0, pos).split(/\r\n|\n|\r/);
  return { line: lines.length, column: lines[lines.length - 1].length + 1 };
}

/** Every string of length `n` over `alphabet` (small n only). */
function* strings(alphabet: string[], n: number): Generator<string> {
  if (n === 0) { yield ''; return; }
  for (const s of strings(alphabet, n - 1)) for (const c of alphabet) yield s + c;
}

describe('position.ts', () => {
  test('lf: lines end at \\n only; an offset at a line break is on the line it ends; past the end is the end', () => {
    assert.deepEqual(positionAt('ab\ncd', 0), { line: 1, column: 1 });
    assert.deepEqual(positionAt('ab\ncd', 2), { line: 1, column: 3 });
    assert.deepEqual(positionAt('ab\ncd', 3), { line: 2, column: 1 });
    assert.deepEqual(positionAt('ab\ncd', 99), { line: 2, column: 3 });
    assert.deepEqual(positionAt('a\r\nb', 3), { line: 2, column: 1 });
    assert.deepEqual(positionAt('a\rb', 2), { line: 1, column: 3 });
  });

  test('any: \\r\\n, \\n and a lone \\r each end one line', () => {
    assert.deepEqual(positionAt('a\r\nb', 3, 'any'), { line: 2, column: 1 });
    assert.deepEqual(positionAt('a\rb', 2, 'any'), { line: 2, column: 1 });
    assert.deepEqual(positionAt('a\r\r\nb', 4, 'any'), { line: 3, column: 1 });
    // At the `\n` of a `\r\n`: the `\r` before the offset already ended the line.
    assert.deepEqual(positionAt('a\r\nb', 2, 'any'), { line: 2, column: 1 });
  });

  test('both agree with the parsers\' former computations at every offset of every short text of a, \\r, \\n', () => {
    for (let n = 0; n <= 7; n++) {
      for (const s of strings(['a', '\r', '\n'], n)) {
        for (let i = 0; i <= n + 1; i++) {
          assert.deepEqual(positionAt(s, i), lfReference(s, i), JSON.stringify([s, i]));
          assert.deepEqual(positionAt(s, i, 'any'), anyReference(s, i), JSON.stringify([s, i, 'any']));
        }
      }
    }
  });

  test('PositionCursor: offsets in increasing order resume from the last one; an earlier one is counted afresh', () => {
    const text = 'one\ntwo\n\nfour\nfive';
    const cursor = new PositionCursor(text);
    for (let i = 0; i <= text.length; i += 2) assert.deepEqual(cursor.at(i), positionAt(text, i), String(i));
    assert.deepEqual(cursor.at(1), { line: 1, column: 2 });
    assert.deepEqual(cursor.at(text.length), positionAt(text, text.length));
  });
});

describe('values.ts', () => {
  test('isObj: a mapping, not null, not an array', () => {
    assert.equal(isObj({}), true);
    for (const v of [null, undefined, [], 'x', 1, true]) assert.equal(isObj(v), false, String(v));
  });

  test('the three string readers say what they give for a blank string and for a non-string', () => {
    assert.deepEqual([nonBlankString('a'), nonBlankString(' \n'), nonBlankString(''), nonBlankString(1)], ['a', undefined, undefined, undefined]);
    assert.deepEqual([optionalString('a'), optionalString(' \n'), optionalString(''), optionalString(1)], ['a', ' \n', '', undefined]);
    assert.deepEqual([stringOrEmpty('a'), stringOrEmpty(' \n'), stringOrEmpty(''), stringOrEmpty(null)], ['a', ' \n', '', '']);
  });

  test('oneLine collapses white space runs and trims; a non-string is empty', () => {
    assert.equal(oneLine('  a \n\t b\r\n c  '), 'a b c');
    assert.equal(oneLine(42), '');
  });

  test('cutLine keeps the first max characters and marks the cut; clip notes the length', () => {
    assert.equal(cutLine('abcde', 5), 'abcde');
    assert.equal(cutLine('abcdef', 5), 'abcde…');
    assert.equal(clip('abcde', 5), 'abcde');
    assert.equal(clip('abcdef', 5), 'abcde… (truncated, 6 chars)');
  });
});
