/**
 * What the metrics port needs from the server (docs/deployment.md#monitoring): ingestion jobs counted by outcome around
 * whichever {@link Analyzer} serves.
 */
import type { Analyzer } from '../ingest/analyze.js';
import { IngestError } from '../ingest/types.js';
import type { ServerMetrics } from '../metrics/serverMetrics.js';

/** `analyzer`, its jobs counted in `metrics` (outcome and queue); `close` closes `analyzer`. */
export function countingAnalyzer(analyzer: Analyzer, metrics: ServerMetrics): Analyzer {
  let queued = 0;
  metrics.sources.ingestQueue = () => queued;
  const counted = <T>(job: Promise<T>): Promise<T> => {
    queued++;
    return job.then((r) => { queued--; metrics.ingestOutcome('succeeded'); return r; }, (e: unknown) => {
      queued--;
      metrics.ingestOutcome(e instanceof IngestError ? 'failed' : 'error');
      throw e;
    });
  };
  return {
    analyze: (job, queue) => counted(analyzer.analyze(job, queue)),
    links: (job, queue) => counted(analyzer.links(job, queue)),
    close: () => analyzer.close(),
  };
}
