import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectContent } from '../src/ingest/detect.js';
import { SecretBox } from '../src/secrets.js';
import { PENDING_AUTO } from './helpers/corpus.js';

const corpus = new URL('./fixtures/corpus/', import.meta.url);
const EXPECTED: Record<string, string> = {
  openapi: 'openapi', asyncapi: 'asyncapi', postman: 'postman', graphql: 'graphql', grpc: 'grpc', soap: 'soap', text: 'text', html: 'text', json: 'json',
};

test('auto detection names every corpus file\'s type from its content alone', () => {
  const wrong: string[] = [];
  for (const dir of Object.keys(EXPECTED)) {
    for (const f of readdirSync(new URL(`${dir}/`, corpus))) {
      if (f === 'jsontestsuite-n_object_trailing_comma.json') continue; // invalid JSON: a parse error, tested below
      if (`${dir}/${f}` in PENDING_AUTO) continue; // listed with its reason in test/helpers/corpus.ts
      const text = readFileSync(new URL(`${dir}/${f}`, corpus), 'utf8');
      const got = detectContent(text);
      let want = EXPECTED[dir];
      if (dir === 'graphql' && f.endsWith('.json')) want = 'graphql';
      if (got.type !== want) wrong.push(`${dir}/${f}: ${got.type}`);
      if (dir === 'html') assert.equal(got.html, true, `${f} is HTML`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('auto detection: invalid JSON is an error with line and column, not plain text', () => {
  const text = readFileSync(new URL('json/jsontestsuite-n_object_trailing_comma.json', corpus), 'utf8');
  assert.throws(() => detectContent(text), /JSON: .* at line 1, column \d+/);
});

test('auto detection uses the media type of a fetched document', () => {
  assert.equal(detectContent('openapi: 3.0.0\ninfo: {title: x, version: "1"}\npaths: {}\n', 'application/yaml').type, 'openapi');
  assert.equal(detectContent('<p>Hello</p>', 'text/html').html, true);
  assert.equal(detectContent('# Title\n\nSome text: with a colon\n').type, 'text');
  assert.equal(detectContent('type Query { a: Int }').type, 'graphql');
  assert.equal(detectContent('# a comment\nschema { query: Root }\ntype Root { a: Int }').type, 'graphql');
  assert.equal(detectContent('type the command below\n').type, 'text');
  assert.equal(detectContent('syntax = "proto3";\nmessage A { int32 x = 1; }').type, 'grpc');
});

test('secret box: round trip, bound to its context, tamper-evident, rotatable', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sw-secrets-'));
  const box = SecretBox.load(dir);
  const sealed = box.seal('s3cret-token', 'ws1/src1');
  assert.equal(box.open(sealed, 'ws1/src1'), 's3cret-token');
  assert.ok(!JSON.stringify(sealed).includes('s3cret'));
  assert.throws(() => box.open(sealed, 'ws1/src2'), /altered or belongs to another source/);
  assert.throws(() => box.open(sealed, 'ws2/src1'), /altered or belongs to another source/);
  const flipped = { ...sealed, ct: Buffer.from(Buffer.from(sealed.ct, 'base64').map((b, i) => (i === 0 ? b ^ 1 : b))).toString('base64') };
  assert.throws(() => box.open(flipped, 'ws1/src1'), /altered/);
  const kid = SecretBox.addKey(dir);
  const box2 = SecretBox.load(dir);
  assert.equal(box2.activeKid, kid);
  assert.equal(box2.open(sealed, 'ws1/src1'), 's3cret-token', 'old key ids still open');
  assert.equal(box2.seal('x', 'c').kid, kid);
});
