/**
 * The ingestion worker thread's entry: runs {@link analyzeTextSync} / {@link analyzeParsedSync}
 * for the main thread (src/ingest/pool.ts) and posts the result back, its typed arrays
 * transferred rather than copied.
 */
import { parentPort } from 'node:worker_threads';
import { analyzeParsedSync, analyzeTextSync, type Analysis } from './analyze.js';
import { IngestError } from './types.js';
import type { ContentType } from './detect.js';
import type { ParsedSource } from './types.js';

export type Task =
  | { id: number; op: 'text'; type: ContentType | 'auto'; text: string; mediaType?: string }
  | { id: number; op: 'parsed'; type: ContentType; parsed: ParsedSource };

export type Reply =
  | { id: number; ok: true; analysis: Analysis }
  | { id: number; ok: false; ingestError: boolean; message: string; line?: number; column?: number };

parentPort?.on('message', (task: Task) => {
  let reply: Reply;
  try {
    const analysis = task.op === 'text' ? analyzeTextSync(task.type, task.text, task.mediaType) : analyzeParsedSync(task.type, task.parsed);
    reply = { id: task.id, ok: true, analysis };
    const p = analysis.prepared;
    parentPort!.postMessage(reply, [p.lengths.buffer, p.offsets.buffer, p.postings.buffer] as ArrayBuffer[]);
    return;
  } catch (e) {
    const err = e as Error;
    reply = err instanceof IngestError
      ? { id: task.id, ok: false, ingestError: true, message: err.message }
      : { id: task.id, ok: false, ingestError: false, message: err?.stack ?? String(e) };
  }
  parentPort!.postMessage(reply);
});
