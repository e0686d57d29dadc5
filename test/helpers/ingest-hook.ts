/**
 * Test seam loaded into ingestion workers (WorkerAnalyzer `hook`, startServer `ingestHook`):
 * pasted content starting with `SPIN` never finishes (a job the timeout must stop);
 * `SLOW <ms>` keeps the worker busy that long before the job runs as usual; content holding
 * `x-spin-after-detection` never finishes once its type is detected.
 */
import type { AnalysisJob, LinksJob } from '../../src/ingest/analyze.js';

export function beforeJob(job: AnalysisJob | LinksJob): void {
  if (!('op' in job) || job.op !== 'text' || typeof job.text !== 'string') return;
  if (job.text.startsWith('SPIN')) for (;;) { /* until the worker is terminated */ }
  const slow = /^SLOW (\d+)/.exec(job.text);
  if (slow) { const until = performance.now() + Number(slow[1]); while (performance.now() < until) { /* busy */ } }
}

export function afterDetection(job: AnalysisJob): void {
  if (job.op === 'text' && typeof job.text === 'string' && job.text.includes('x-spin-after-detection')) for (;;) { /* until the worker is terminated */ }
}

/** The hook's URL, as WorkerAnalyzer and startServer take it. */
export const INGEST_HOOK = import.meta.url;
