import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { chunkDocuments, type DocumentChunk } from '../src/ingest/chunk.js';
import { parseMarkdown } from '../src/ingest/parsers/markdown.js';
import { parseHtml } from '../src/ingest/parsers/html.js';
import { parsePostman } from '../src/ingest/parsers/postman.js';
import { parseJsonDocuments } from '../src/ingest/parsers/json.js';
import type { ParsedDocument } from '../src/ingest/types.js';
import { mulberry32 as rng } from './helpers/prng.js';
import { CORPUS, readCorpus } from './helpers/corpus.js';

const read = readCorpus;


function doc(text: string, title = 'T'): ParsedDocument {
  return { kind: 'section', title, text };
}

/**
 * Checks every promise of chunkDocuments: sizes, order, ordinals, no document crossing, and
 * coverage — each chunk is found in its document's text after the previous one, with only
 * whitespace in between and around.
 */
function checkChunks(docs: ParsedDocument[], chunks: DocumentChunk[], max: number): void {
  let k = 0;
  docs.forEach((d, di) => {
    const mine: DocumentChunk[] = [];
    while (k < chunks.length && chunks[k].documentIndex === di) mine.push(chunks[k++]);
    assert.ok(mine.length >= 1, `document ${di} has chunks`);
    mine.forEach((c, i) => assert.equal(c.ordinal, i));
    for (const c of mine) assert.ok(c.text.length <= max, `chunk ${c.text.length} > ${max}`);
    if (d.text.trim() === '') {
      assert.equal(mine.length, 1);
      assert.equal(mine[0].text, d.title.slice(0, max));
      return;
    }
    let pos = 0;
    for (const c of mine) {
      assert.ok(c.text.length > 0 && c.text === c.text.trim(), 'chunks are trimmed and non-empty');
      const at = d.text.indexOf(c.text, pos);
      assert.ok(at >= 0, 'chunk is a slice of the text, in order');
      assert.match(d.text.slice(pos, at), /^\s*$/, 'only whitespace between chunks');
      pos = at + c.text.length;
    }
    assert.match(d.text.slice(pos), /^\s*$/, 'the end of the text is covered');
  });
  assert.equal(k, chunks.length, 'chunks are grouped by document in order');
}

test('random documents: max size and coverage', () => {
  const rand = rng(42);
  const alphabet = ['a', 'b', 'word', 'Sentence.', ' ', ' ', ' ', '\n', '\n\n', '\n \n', '\t', '!', '? ', 'é', '😀', '\u00a0', 'x'.repeat(50)];
  for (let round = 0; round < 300; round++) {
    const docs: ParsedDocument[] = [];
    const nDocs = 1 + Math.floor(rand() * 4);
    for (let d = 0; d < nDocs; d++) {
      const parts: string[] = [];
      const len = Math.floor(rand() * 3000);
      for (let i = 0; i < len; i++) parts.push(alphabet[Math.floor(rand() * alphabet.length)]);
      docs.push(doc(parts.join(''), `title ${d}`));
    }
    const max = [1, 2, 3, 10, 50, 200, 2000][Math.floor(rand() * 7)];
    checkChunks(docs, chunkDocuments(docs, max), max);
  }
});

test('corpus documents: max size and coverage', () => {
  const docs: ParsedDocument[] = [];
  for (const f of readdirSync(new URL('text/', CORPUS))) docs.push(...parseMarkdown(read(`text/${f}`)).documents);
  for (const f of readdirSync(new URL('html/', CORPUS))) docs.push(...parseHtml(read(`html/${f}`)).documents);
  for (const f of readdirSync(new URL('postman/', CORPUS))) docs.push(...parsePostman(read(`postman/${f}`)).documents);
  docs.push(...parseJsonDocuments(JSON.parse(read('json/github-webhook-pull_request-opened.json'))).documents);
  assert.ok(docs.length > 500);
  for (const max of [2000, 500]) {
    const chunks = chunkDocuments(docs, max);
    checkChunks(docs, chunks, max);
    assert.ok(chunks.length >= docs.length);
  }
  // Default is 2000.
  assert.ok(chunkDocuments(docs).every((c) => c.text.length <= 2000));
});

test('split points prefer paragraphs, then lines, then sentences, then spaces', () => {
  const p1 = 'a'.repeat(60) + ' ' + 'b'.repeat(30);
  const p2 = 'c'.repeat(40);
  // Paragraph boundary at 91 beats the line break at 140 and spaces up to 150.
  const text = `${p1}\n\n${p2}\nline two ${'d'.repeat(30)}`;
  const chunks = chunkDocuments([doc(text)], 150).map((c) => c.text);
  assert.deepEqual(chunks, [p1, `${p2}\nline two ${'d'.repeat(30)}`]);

  const lines = `${'x'.repeat(60)}. ${'y'.repeat(20)}\n${'z'.repeat(50)}`;
  assert.deepEqual(
    chunkDocuments([doc(lines)], 100).map((c) => c.text),
    [`${'x'.repeat(60)}. ${'y'.repeat(20)}`, 'z'.repeat(50)],
  );

  const sentences = `${'s '.repeat(30)}end. ${'t '.repeat(20)}more`;
  assert.deepEqual(chunkDocuments([doc(sentences)], 90).map((c) => c.text)[0], `${'s '.repeat(30)}end.`);

  const spaces = `${'w '.repeat(40)}tail`;
  // The whitespace right after a full-length chunk is a valid split point.
  assert.equal(chunkDocuments([doc(spaces)], 51).map((c) => c.text)[0], 'w '.repeat(26).trim());
  assert.equal(chunkDocuments([doc(spaces)], 50).map((c) => c.text)[0], 'w '.repeat(25).trim());

  // A boundary that would leave a tiny chunk is passed over for a later, lesser one.
  const early = `short\n\n${'q '.repeat(60)}`;
  assert.ok(chunkDocuments([doc(early)], 100)[0].text.length > 50);

  // No boundary at all: hard cut at maxChars.
  const solid = 'k'.repeat(250);
  assert.deepEqual(chunkDocuments([doc(solid)], 100).map((c) => c.text.length), [100, 100, 50]);
});

test('hard cuts do not split surrogate pairs when maxChars allows', () => {
  const emoji = '😀'.repeat(100);
  const chunks = chunkDocuments([doc(emoji)], 7);
  for (const c of chunks) {
    assert.ok(c.text.length <= 7);
    assert.ok(!/[\ud800-\udbff]$/.test(c.text) && !/^[\udc00-\udfff]/.test(c.text));
  }
  assert.equal(chunks.map((c) => c.text).join(''), emoji);
});

test('empty documents give one title chunk; chunks never cross documents', () => {
  const docs = [doc('', 'Empty one'), doc('  \n\n ', 'Blank'), doc('short text', 'S'), doc('', 'x'.repeat(50))];
  const chunks = chunkDocuments(docs, 20);
  assert.deepEqual(chunks, [
    { documentIndex: 0, ordinal: 0, text: 'Empty one' },
    { documentIndex: 1, ordinal: 0, text: 'Blank' },
    { documentIndex: 2, ordinal: 0, text: 'short text' },
    { documentIndex: 3, ordinal: 0, text: 'x'.repeat(20) },
  ]);
  assert.deepEqual(chunkDocuments([]), []);
});

test('invalid maxChars is a RangeError', () => {
  for (const bad of [0, -1, 1.5, NaN, Infinity]) assert.throws(() => chunkDocuments([doc('x')], bad), RangeError);
});

test('large documents are chunked quickly', () => {
  const big = ('lorem ipsum dolor sit amet. '.repeat(50) + '\n\n').repeat(2000);
  const t0 = Date.now();
  const chunks = chunkDocuments([doc(big)]);
  assert.ok(Date.now() - t0 < 2000);
  checkChunks([doc(big)], chunks, 2000);
  const solid = 'z'.repeat(3_000_000);
  const t1 = Date.now();
  assert.equal(chunkDocuments([doc(solid)]).length, 1500);
  assert.ok(Date.now() - t1 < 3000);
});
