import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { WorkerAnalyzer } from '../src/ingest/workers/pool.js';
import { analyzeJob, type IngestResult } from '../src/ingest/analyze.js';
import { IngestError } from '../src/ingest/types.js';
import { startTestServer } from './helpers/server.js';
import { INGEST_HOOK } from './helpers/ingest-hook.js';
import type { Ingestion } from './helpers/answers.js';

const corpus = new URL('./fixtures/corpus/', import.meta.url);

/** A result with its random ids replaced by their positions, so two runs compare equal. */
function canonical(r: IngestResult): unknown {
  const docIndex = new Map(r.record.documents.map((d, i) => [d.id, i]));
  return {
    type: r.type, title: r.title, serverUrl: r.record.serverUrl,
    documents: r.record.documents.map((d) => ({ ...d, id: undefined })),
    endpoints: r.record.endpoints.map((e) => ({ ...e, id: undefined, documentId: e.documentId === undefined ? undefined : docIndex.get(e.documentId) })),
    chunks: r.record.chunks,
    documentIds: r.prepared.documentIds.map((id) => docIndex.get(id)),
    titles: r.prepared.titles, texts: r.prepared.texts, totalLength: r.prepared.totalLength,
    terms: [...r.prepared.termIds], lengths: [...r.prepared.lengths], offsets: [...r.prepared.offsets], postings: [...r.prepared.postings],
  };
}

test('the worker analyzer gives the same result as the inline one, ids made in the worker', async () => {
  const text = readFileSync(new URL('openapi/openai-openapi-2024-01.yaml', corpus), 'utf8');
  const a = new WorkerAnalyzer();
  try {
    const viaWorker = await a.analyze({ op: 'text', type: 'auto', text }, 'ws');
    const inline = analyzeJob({ op: 'text', type: 'auto', text });
    assert.equal(viaWorker.type, 'openapi');
    assert.deepEqual(canonical(viaWorker), canonical(inline));
    const ids = [...viaWorker.record.documents, ...viaWorker.record.endpoints].map((x) => x.id);
    assert.equal(new Set(ids).size, ids.length, 'every id is distinct');
    assert.ok(ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)), 'UUIDv7');
    // The chunk texts are the postings' own strings (one copy).
    assert.ok(viaWorker.record.chunks.every((c, i) => c.t === viaWorker.prepared.texts[i]));
  } finally { await a.close(); }
});

test('a parse error in the worker is an IngestError with its line and column', async () => {
  const a = new WorkerAnalyzer();
  try {
    await assert.rejects(a.analyze({ op: 'text', type: 'auto', text: '{"a": 1,}' }, 'ws'), (e: unknown) => e instanceof IngestError && /JSON: .* at line 1, column \d+/.test((e as Error).message));
    assert.equal((await a.analyze({ op: 'text', type: 'text', text: '# ok\n\nstill works' }, 'ws')).type, 'text', 'the worker keeps serving');
  } finally { await a.close(); }
});

test('a job past the deadline is stopped, its worker replaced, and it fails with that reason', async () => {
  const a = new WorkerAnalyzer({ timeoutMs: 200, workers: 1, hook: INGEST_HOOK });
  try {
    const t0 = performance.now();
    await assert.rejects(a.analyze({ op: 'text', type: 'auto', text: 'SPIN' }, 'ws'),
      (e: unknown) => e instanceof IngestError && e.message === 'ingestion took longer than 200 ms and was stopped');
    assert.ok(performance.now() - t0 < 5000, 'stopped near its deadline, not left running');
    assert.equal((await a.analyze({ op: 'text', type: 'auto', text: '# fine' }, 'ws')).type, 'text', 'a fresh worker serves the next job');
  } finally { await a.close(); }
});

test('workspaces are served round-robin: ten queued jobs of one delay another\'s single job by one job', async () => {
  const a = new WorkerAnalyzer({ workers: 1 });
  try {
    const order: string[] = [];
    const job = (q: string, n: number) => a.analyze({ op: 'text', type: 'text', text: `# ${q}${n}\n\ntext` }, q).then(() => { order.push(`${q}${n}`); });
    const all = [...Array.from({ length: 10 }, (_, i) => job('A', i + 1)), job('B', 1), job('C', 1), job('B', 2)];
    await Promise.all(all);
    // A1 was running when the others queued; then one job per workspace in turn.
    assert.deepEqual(order, ['A1', 'B1', 'C1', 'A2', 'B2', 'A3', 'A4', 'A5', 'A6', 'A7', 'A8', 'A9', 'A10']);
  } finally { await a.close(); }
});

test('a 2,000,000-character paste is parsed off the main thread: other requests are answered meanwhile', async () => {
  const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000' } });
  try {
    const para = 'The payments API lets you create charges, refunds and payouts. Every request is authenticated with a bearer token.\n\n';
    let md = '';
    for (let i = 0; md.length < 1_990_000; i++) md += `## Section ${i}\n\n${para.repeat(3)}`;
    let done = false;
    let answeredMeanwhile = 0;
    const create = srv.call<Ingestion>('POST', '/api/v1/sources', { body: { content: md } }).then((r) => { done = true; return r; });
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
