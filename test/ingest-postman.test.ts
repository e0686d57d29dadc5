import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { parsePostman, postmanRawPath } from '../src/ingest/parsers/postman.js';
import { IngestError } from '../src/ingest/types.js';
import { CORPUS } from './helpers/corpus.js';

const expected = JSON.parse(readFileSync(new URL('expected.json', CORPUS), 'utf8')) as Record<string, { endpoints: number | null; collection_version?: string }>;

function loadCorpus(name: string): unknown {
  let text = readFileSync(new URL(`postman/${name}`, CORPUS), 'utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  return JSON.parse(text);
}

function collection(item: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    info: { name: 'Test', schema: 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json', ...extra },
    item,
  };
}

test('every corpus collection gives the expected number of endpoints and documents', () => {
  const files = readdirSync(new URL('postman/', CORPUS)).filter((f) => f.endsWith('.json'));
  assert.ok(files.length >= 8);
  for (const f of files) {
    const exp = expected[`postman/${f}`];
    assert.ok(exp, `expected.json has ${f}`);
    const r = parsePostman(loadCorpus(f));
    assert.equal(r.endpoints.length, exp.endpoints, f);
    assert.equal(r.documents.length, 1 + r.endpoints.length, f);
    assert.equal(r.documents[0].kind, 'overview', f);
    for (const e of r.endpoints) {
      assert.match(e.method, /^[A-Z]+$/, f);
      assert.ok(e.path.startsWith('/'), `${f}: ${e.path}`);
      assert.ok(!e.path.includes('?'), `${f}: ${e.path}`);
      assert.equal(r.documents[e.documentIndex!].kind, 'request', f);
    }
  }
});

test('corpus: titles and exact paths', () => {
  const gh = parsePostman(loadCorpus('github-api-v2.1.json'));
  assert.equal(gh.title, 'Github');
  assert.deepEqual(gh.endpoints[0], { method: 'GET', path: '/repos/{{username}}/{{repository}}/contributors', documentIndex: 1 });
  assert.ok(gh.endpoints.some((e) => e.path === '/repos/{{username}}/{{repository}}/branches/{{branch}}'));
  assert.ok(gh.endpoints.some((e) => e.path === '/user/emails'));

  const tw = parsePostman(loadCorpus('twitter-api-v2.0.json'));
  assert.ok(tw.endpoints.some((e) => e.method === 'POST' && e.path === '/1.1/statuses/destroy/:id.json'));
  assert.ok(tw.endpoints.some((e) => e.method === 'GET' && e.path === '/1.1/statuses/retweets/{{tweet_id}}.json'));
  assert.ok(tw.endpoints.some((e) => e.path === '/1.1/search/tweets.json'));

  const box = parsePostman(loadCorpus('box-api-v2.1.json'));
  assert.equal(box.title, 'Box Content API');
  assert.ok(box.endpoints.some((e) => e.method === 'GET' && e.path === '/2.0/collaborations'));
  assert.ok(box.endpoints.some((e) => e.method === 'DELETE' && e.path === '/2.0/folders/441526399'));
  assert.ok(box.endpoints.some((e) => e.method === 'POST' && e.path === '/api/2.0/files/content'));

  const ml = parsePostman(loadCorpus('multi-level-folders-v2.0.json'));
  assert.ok(ml.endpoints.every((e) => e.method === 'GET' && e.path === '/get'));
  assert.ok(ml.documents.some((d) => d.text.includes('Folder: F2 / F2.F3')), 'folder path in request text');

  const ww = parsePostman(loadCorpus('whatwg-url-v2.1.json'));
  assert.ok(ww.endpoints.some((e) => e.path === '/{{f/o/o}}'));
});

test('BOM-prefixed JSON text is accepted as input', () => {
  const text = readFileSync(new URL('postman/bom-in-collection-file-v2.0.json', CORPUS), 'utf8');
  assert.equal(text.charCodeAt(0), 0xfeff);
  const r = parsePostman(text);
  assert.equal(r.title, 'Sample Postman Collection');
  assert.deepEqual(
    r.endpoints.map((e) => `${e.method} ${e.path}`),
    ['GET /get', 'POST /post', 'POST /post'],
  );
});

test('raw URL path extraction keeps variables and drops scheme, host, query and fragment', () => {
  assert.equal(postmanRawPath('{{baseUrl}}/users/:id?x=1'), '/users/:id');
  assert.equal(postmanRawPath('https://api.x.com/v1/a'), '/v1/a');
  assert.equal(postmanRawPath('https://api.x.com'), '/');
  assert.equal(postmanRawPath('https://api.x.com?x=1'), '/');
  assert.equal(postmanRawPath('{{baseUrl}}'), '/');
  assert.equal(postmanRawPath('/relative/path#frag'), '/relative/path');
  assert.equal(postmanRawPath('api.x.com:8080/a/b'), '/a/b');
  assert.equal(postmanRawPath('{{scheme}}://{{host}}:{{port}}/v{{version}}/items'), '/v{{version}}/items');
  assert.equal(postmanRawPath('https://h/{{a?b}}/c?d'), '/{{a?b}}/c');
  assert.equal(postmanRawPath('  https://h/x  '), '/x');
  assert.equal(postmanRawPath(''), '/');
});

test('string and object URLs', () => {
  const r = parsePostman(
    collection([
      { name: 'a', request: { method: 'get', url: '{{baseUrl}}/users/:id?x=1' } },
      { name: 'b', request: { method: 'POST', url: { raw: 'https://api.x.com/v1/a?q=1', host: ['api', 'x', 'com'], path: ['v1', 'a'], query: [{ key: 'q', value: '1' }] } } },
      { name: 'c', request: { url: { raw: 'https://api.x.com/only/raw' } } },
      { name: 'd', request: { method: 'PUT', url: { host: ['{{host}}'], path: '/str/path' } } },
      { name: 'e', request: { method: 'DELETE', url: { raw: '{{u}}', host: ['{{u}}'] } } },
      { name: 'f', request: { url: { raw: 'https://x/{{id}}', path: [{ type: 'string', value: '{{id}}' }] } } },
    ]),
  );
  assert.deepEqual(
    r.endpoints.map((e) => `${e.method} ${e.path}`),
    ['GET /users/:id', 'POST /v1/a', 'GET /only/raw', 'PUT /str/path', 'DELETE /', 'GET /{{id}}'],
  );
  assert.match(r.documents[2].text, /Query parameters: q=1/);
  assert.match(r.documents[1].text, /GET \{\{baseUrl\}\}\/users\/:id\?x=1/);
  assert.match(r.documents[1].text, /Query parameters: x=1/);
});

test('nested folders are recursed in order and a v2.0 string request is a GET', () => {
  const r = parsePostman({
    info: { name: 'N', schema: 'https://schema.getpostman.com/json/collection/v2.0.0/collection.json', description: { content: 'Deep collection', type: 'text/markdown' } },
    item: [
      { name: 'top', request: 'https://h/top' },
      {
        name: 'A',
        description: 'Folder A docs',
        item: [{ name: 'B', item: [{ name: 'C', item: [{ name: 'deep', request: { method: 'patch', url: 'https://h/deep/:x' } }] }] }, { name: 'a1', request: { url: 'https://h/a1' } }],
      },
      { name: 'empty folder', item: [] },
    ],
  });
  assert.deepEqual(
    r.endpoints.map((e) => `${e.method} ${e.path}`),
    ['GET /top', 'PATCH /deep/:x', 'GET /a1'],
  );
  const deep = r.documents[r.endpoints[1].documentIndex!];
  assert.equal(deep.title, 'deep');
  assert.match(deep.text, /^Folder: A \/ B \/ C$/m);
  assert.match(r.documents[0].text, /Deep collection/);
  assert.match(r.documents[0].text, /A: Folder A docs/);
  assert.equal(r.documents[0].title, 'N');
});

test('request document: description, header names only, body truncated', () => {
  const big = 'x'.repeat(10_000);
  const r = parsePostman(
    collection([
      {
        name: 'Create user',
        request: {
          method: 'POST',
          url: 'https://h/users',
          description: 'Creates a user.',
          header: [{ key: 'Authorization', value: 'Bearer SECRET-TOKEN' }, { key: 'X-Off', value: 'v', disabled: true }],
          body: { mode: 'raw', raw: big },
        },
      },
      { name: 'Form', request: { method: 'POST', url: 'https://h/f', header: 'Content-Type: a/b\nX-Key: secret', body: { mode: 'urlencoded', urlencoded: [{ key: 'grant_type', value: 'pw' }] } } },
    ]),
  );
  const d = r.documents[1];
  assert.equal(d.kind, 'request');
  assert.match(d.text, /Creates a user\./);
  assert.match(d.text, /Headers: Authorization$/m);
  assert.ok(!d.text.includes('SECRET-TOKEN'));
  assert.match(d.text, /Body \(raw\):/);
  assert.ok(d.text.length < 3000, `body truncated (${d.text.length})`);
  assert.match(r.documents[2].text, /Headers: Content-Type, X-Key/);
  assert.ok(!r.documents[2].text.includes('secret'));
  assert.match(r.documents[2].text, /Body \(urlencoded\):\ngrant_type/);
});

test('serverUrl from a baseUrl collection variable', () => {
  const c = { ...collection([]), variable: [{ key: 'baseUrl', value: 'https://api.example.com/v2' }] };
  assert.equal(parsePostman(c).serverUrl, 'https://api.example.com/v2');
  assert.equal(parsePostman(collection([])).serverUrl, undefined);
});

test('what is not a collection is rejected with IngestError', () => {
  const bad: unknown[] = [null, 42, 'not json', [], {}, { info: {} }, { item: [] }, { info: { name: 'x' }, item: {} }];
  for (const b of bad) assert.throws(() => parsePostman(b), IngestError, JSON.stringify(b));
  assert.throws(
    () => parsePostman({ info: { name: 'v1', schema: 'https://schema.getpostman.com/json/collection/v1.0.0/collection.json' }, item: [] }),
    (e: unknown) => e instanceof IngestError && /unsupported collection schema/.test(e.message),
  );
  assert.throws(
    () => parsePostman('{\n  "info": {,\n}'),
    (e: unknown) => e instanceof IngestError && e.line === 2 && typeof e.column === 'number',
  );
  let deep: Record<string, unknown> = { name: 'r', request: 'https://h/x' };
  for (let i = 0; i < 500; i++) deep = { name: `f${i}`, item: [deep] };
  assert.throws(() => parsePostman(collection([deep])), /nested deeper/);
});

test('missing method defaults to GET and an empty item list is fine', () => {
  const r = parsePostman(collection([{ name: 'n', request: { url: 'https://h/x' } }, 'junk', null]));
  assert.deepEqual(r.endpoints, [{ method: 'GET', path: '/x', documentIndex: 1 }]);
  const e = parsePostman(collection([]));
  assert.equal(e.endpoints.length, 0);
  assert.equal(e.documents.length, 1);
});
