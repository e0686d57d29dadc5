// Serialized views (src/http/viewCache.ts): the bytes a read keeps per record, and the text a
// write answers with (README "Performance").
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { ViewCache } from '../src/http/viewCache.js';
import { startTestServer } from './helpers/server.js';

test('answerText is the answer\'s bytes as text and keeps no bytes: answer() made after it is made then, and kept', () => {
  let views = 0;
  const cache = new ViewCache((r: { id: string; subject: string }) => { views++; return { object: 'thing', id: r.id, subject: r.subject }; }, 'thing');
  const r = { id: 't1', subject: 'Grüße — “quoted” \u2028 😀' };
  const text = cache.answerText(r);
  assert.equal(text, JSON.stringify({ thing: { object: 'thing', id: 't1', subject: r.subject } }));
  assert.equal(views, 1);
  const bytes = cache.answer(r);
  assert.equal(bytes.toString('utf8'), text);
  assert.equal(cache.answer(r), bytes, 'the bytes are made once and kept');
  assert.equal(cache.answerText(r), text);
  assert.equal(views, 1, 'the view is serialized once for both');
});

const srv = await startTestServer();
after(() => srv.close());

test('a PATCH that changes a conversation answers, as text, exactly the bytes a GET of it answers after, with the Content-Length of its UTF-8 bytes', async () => {
  const created = await srv.call<{ conversation: { id: string } }>('POST', '/api/v1/conversations', { body: { subject: 'first', customer: { email: 'ada@example.com' } } });
  assert.equal(created.status, 201, created.text);
  const url = `${srv.url}/api/v1/conversations/${created.body.conversation.id}`;
  const headers = { authorization: `Bearer ${srv.key}`, 'content-type': 'application/json' };
  const subject = 'Grüße — “quoted” 😀 '.repeat(5).trim();
  const patched = await fetch(url, { method: 'PATCH', headers, body: JSON.stringify({ subject }) });
  const patchedBytes = Buffer.from(await patched.arrayBuffer());
  assert.equal(patched.status, 200);
  assert.equal(Number(patched.headers.get('content-length')), patchedBytes.length);
  assert.equal(JSON.parse(patchedBytes.toString('utf8')).conversation.subject, subject);
  const read = await fetch(url, { headers: { authorization: `Bearer ${srv.key}` } });
  const readBytes = Buffer.from(await read.arrayBuffer());
  assert.equal(read.status, 200);
  assert.deepEqual(patchedBytes, readBytes);
  // The same PATCH again changes nothing: answered from the record's kept bytes, the same ones.
  const again = await fetch(url, { method: 'PATCH', headers, body: JSON.stringify({ subject }) });
  assert.deepEqual(Buffer.from(await again.arrayBuffer()), readBytes);
});
