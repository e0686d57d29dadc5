/**
 * An ingestion worker thread's entry (docs/sources.md#where-ingestion-runs): runs the jobs pool.ts sends and posts each
 * result back for a sliced hand-over (transfer.ts), buffers transferred. `workerData.hook`, when set, is a test seam
 * module whose `beforeJob(job)` and `afterDetection(job, type)` exports run around each job.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pageLinks, analyzeJob, type AnalysisJob, type LinksJob, type PageLink } from '../analyze.js';
import { encodeResult, type WireResult } from './transfer.js';
import { IngestError } from '../types.js';
import type { ContentType, SourceType } from '../kinds.js';

/** A message to the worker. */
export type Task = { id: number; kind: 'analyze'; job: AnalysisJob } | { id: number; kind: 'links'; job: LinksJob };

/** A message from the worker: a job's outcome, or (before it) the type its content was detected as. */
export type Reply =
  | { id: number; ok: true; wire: WireResult }
  | { id: number; ok: true; links: PageLink[] }
  | { id: number; ok: false; ingestError: boolean; message: string; sourceType?: SourceType }
  | { id: number; detected: ContentType };

type Hook = { beforeJob?: (job: AnalysisJob | LinksJob) => void; afterDetection?: (job: AnalysisJob,
  type: ContentType) => void };
const hookUrl = (workerData as { hook?: string } | null)?.hook;
const hook: Promise<Hook> = hookUrl ? import(hookUrl) as Promise<Hook> : Promise.resolve({});
// Loaded: the pool starts counting a job's deadline from here (a worker's start-up is not the job's).
void hook.then(() => parentPort?.postMessage('ready'));

parentPort?.on('message', async (task: Task) => {
  const h = await hook;
  try {
    h.beforeJob?.(task.job);
    if (task.kind === 'links') {
      parentPort!.postMessage({ id: task.id, ok: true, links: pageLinks(task.job) } satisfies Reply);
      return;
    }
    const job = task.job;
    const detected = (type: ContentType): void => {
      parentPort!.postMessage({ id: task.id, detected: type } satisfies Reply);
      h.afterDetection?.(job, type);
    };
    const { wire, transfer } = encodeResult(analyzeJob(job, detected));
    parentPort!.postMessage({ id: task.id, ok: true, wire } satisfies Reply, transfer);
  } catch (e) {
    const err = e as Error;
    const reply: Reply = err instanceof IngestError
      ? { id: task.id, ok: false, ingestError: true, message: err.message,
        ...(err.sourceType ? { sourceType: err.sourceType } : {}) }
      : { id: task.id, ok: false, ingestError: false, message: err?.stack ?? String(e) };
    parentPort!.postMessage(reply);
  }
});
