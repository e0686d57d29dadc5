import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { WorkerAnalyzer } from '../src/ingest/pool.js';
import { analyzeTextSync } from '../src/ingest/analyze.js';
import { IngestError } from '../src/ingest/types.js';
import { startTestServer } from './helpers/server.js';

const corpus = new URL('./fixtures/corpus/', import.meta.url);

test('the worker analyzer gives the same analysis as the inline one', async () => {
  const text = readFileSync(new URL('openapi/openai-openapi-2024-01.yaml', corpus), 'utf8');
  const a = new WorkerAnalyzer();
  try {
    const viaWorker = await a.analyzeText('auto', text);
    const inline = analyzeTextSync('auto', text);
    assert.equal(viaWorker.type, 'openapi');
    assert.deepEqual(viaWorker.parsed, inline.parsed);
    assert.deepEqual(viaWorker.chunks, inline.chunks);
    assert.deepEqual([...viaWorker.prepared.postings], [...inline.prepared.postings]);
  } finally { await a.close(); }
});

test('a parse error in the worker is an IngestError with its line and column', async () => {
  const a = new WorkerAnalyzer();
  try {
    await assert.rejects(a.analyzeText('auto', '{"a": 1,}'), (e: unknown) => e instanceof IngestError && /JSON: .* at line 1, column \d+/.test((e as Error).message));
    assert.equal((await a.analyzeText('text', '# ok\n\nstill works')).type, 'text', 'the worker keeps serving');
  } finally { await a.close(); }
});

test('a task past its deadline is stopped and fails; the next task gets a fresh worker', async () => {
  const a = new WorkerAnalyzer({ timeoutMs: 1 });
  try {
    const big = readFileSync(new URL('graphql/github-public-schema.graphql', corpus), 'utf8');
    await assert.rejects(a.analyzeText('auto', big), /parsing took longer than 0 s and was stopped/);
  } finally { await a.close(); }
  const b = new WorkerAnalyzer();
  try { assert.equal((await b.analyzeText('auto', '# fine')).type, 'text'); } finally { await b.close(); }
});

test('a 2,000,000-character paste is parsed off the main thread: other requests are answered meanwhile', async () => {
  const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000' } });
  try {
    const para = 'The payments API lets you create charges, refunds and payouts. Every request is authenticated with a bearer token.\n\n';
    let md = '';
    for (let i = 0; md.length < 1_990_000; i++) md += `## Section ${i}\n\n${para.repeat(3)}`;
    let done = false;
    let answeredMeanwhile = 0;
    const create = srv.call('POST', '/api/v1/sources', { body: { content: md } }).then((r) => { done = true; return r; });
    while (!done) {
      const h = await srv.call('GET', '/healthz', { key: null });
      assert.equal(h.status, 200);
      if (!done) answeredMeanwhile++;
    }
    const r = await create;
    assert.equal(r.status, 201);
    assert.equal(r.body.source.status, 'ready');
    assert.ok(r.body.counts.documents > 5000);
    assert.ok(answeredMeanwhile >= 2, `health checks answered during ingestion: ${answeredMeanwhile}`);
  } finally { await srv.close(); }
});
