/**
 * Runs ingestion jobs on worker threads, so the main thread only fetches bytes and stores results
 * (docs/reliability.md#ingestion-and-search, docs/sources.md#where-ingestion-runs). One queue per workspace, served
 * least recently first; a job past `timeoutMs` has its worker terminated and fails with an {@link IngestError}; results
 * are assembled a few ms at a time (transfer.ts).
 */
import type { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { IngestError } from '../types.js';
import { detectedAs } from '../detect/structured.js';
import type { ContentType } from '../kinds.js';
import type { AnalysisJob, Analyzer, FetchedBody, IngestResult, LinksJob, PageLink } from '../analyze.js';
import { decodeResult } from './transfer.js';
import type { Reply, Task } from './worker.js';
import { startWorker } from '../../core/workerThread.js';

/**
 * `timeoutMs`: a job running longer fails (INGEST_TIMEOUT_MS, default 30,000); `workers`: default min(2, cores − 1), at
 * least 1; `maxHeapMb`: each worker's old-generation cap; `hook`: test seam module URL (see worker.ts).
 */
export interface WorkerAnalyzerOptions { timeoutMs?: number; workers?: number; maxHeapMb?: number; hook?: string }

interface Pending {
  task: Task; transfer: ArrayBuffer[]; resolve: (r: Reply) => void; reject: (e: Error) => void;
  /** The type the worker detected the job's content as: a job stopped later fails with it. */
  detected?: ContentType;
}
interface Slot {
  worker: Worker | null;
  /** The worker has loaded its code: the deadline of a job counts from here, not from its start-up. */
  ready: boolean;
  job: Pending | null;
  timer: NodeJS.Timeout | null;
}
interface Queue { jobs: Pending[]; served: number }

/** "200 ms" under a second, else whole seconds ("30 s"). */
function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}

/**
 * Fetched bytes go to the worker uncopied: a body owning its whole ArrayBuffer is transferred (the caller's Buffer is
 * detached: it is not used again), a slice of a shared pool is copied first (a small body: cheap).
 */
function movable(job: AnalysisJob, transfer: ArrayBuffer[]): AnalysisJob {
  const own = <T extends FetchedBody>(b: T): T => {
    let body = b.body;
    if (body.byteOffset !== 0 || body.byteLength !== body.buffer.byteLength ||
      !(body.buffer instanceof ArrayBuffer)) body = new Uint8Array(body);
    transfer.push(body.buffer as ArrayBuffer);
    return { ...b, body };
  };
  if (job.op === 'text' && typeof job.text !== 'string') return { ...job, text: own(job.text) };
  if (job.op === 'site') return { ...job, pages: job.pages.map(own) };
  return job;
}

/** The {@link Analyzer} of the server: a small pool of ingestion workers. */
export class WorkerAnalyzer implements Analyzer {
  private readonly slots: Slot[];
  private readonly queues = new Map<string, Queue>();
  /** Dispatch counter: a queue's `served` is the value when it was last served (0 = never). */
  private serveCount = 0;
  private nextId = 1;
  private closed = false;
  private readonly timeoutMs: number;

  constructor(private readonly opts: WorkerAnalyzerOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    const n = opts.workers ?? Math.max(1, Math.min(2, availableParallelism() - 1));
    this.slots = Array.from({ length: n }, () => ({ worker: null, ready: false, job: null, timer: null }));
  }

  async analyze(job: AnalysisJob, queue: string): Promise<IngestResult> {
    const reply = await this.submit({ id: 0, kind: 'analyze', job }, queue);
    if (!('wire' in reply)) throw new Error('the ingestion worker answered an analysis without a result');
    return decodeResult(reply.wire);
  }

  async links(job: LinksJob, queue: string): Promise<PageLink[]> {
    const reply = await this.submit({ id: 0, kind: 'links', job }, queue);
    if (!('links' in reply)) throw new Error('the ingestion worker answered a link extraction without links');
    return reply.links;
  }

  private submit(task: Task, queue: string): Promise<Reply> {
    if (this.closed) return Promise.reject(new Error('the analyzer is closed'));
    return new Promise((resolve, reject) => {
      let q = this.queues.get(queue);
      if (!q) { q = { jobs: [], served: 0 }; this.queues.set(queue, q); }
      const transfer: ArrayBuffer[] = [];
      const job = task.kind === 'analyze' ? movable(task.job, transfer) : task.job;
      q.jobs.push({ task: { ...task, job, id: this.nextId++ } as Task, transfer, resolve, reject });
      this.pump();
    });
  }

  /** The next job: from the queue served least recently (Map order breaks ties by arrival). */
  private take(): Pending | undefined {
    let best: [string, Queue] | undefined;
    for (const e of this.queues) if (e[1].jobs.length > 0 && (!best || e[1].served < best[1].served)) best = e;
    if (!best) return undefined;
    const q = best[1];
    const p = q.jobs.shift()!;
    q.served = ++this.serveCount;
    return p;
  }

  private pump(): void {
    for (const slot of this.slots) {
      if (slot.job) continue;
      const p = this.take();
      if (!p) break;
      slot.job = p;
      slot.worker ??= this.spawn(slot);
      slot.worker.postMessage(p.task, p.transfer);
      if (slot.ready) this.startDeadline(slot);
    }
    this.forgetIdleQueues();
  }

  private startDeadline(slot: Slot): void {
    slot.timer = setTimeout(() => {
      const w = slot.worker;
      slot.worker = null;
      void w?.terminate();
      this.finish(slot, (j) => j.reject(detectedAs(new IngestError(
        `ingestion took longer than ${formatDuration(this.timeoutMs)} and was stopped`), j.detected)));
    }, this.timeoutMs);
    slot.timer.unref();
  }

  /**
   * Drops the queues once nothing runs or waits, so the map does not grow with every workspace seen. Not sooner: an
   * emptied queue keeps when it was served, else a workspace submitting while its last job runs would jump the line.
   */
  private forgetIdleQueues(): void {
    if (this.slots.some((s) => s.job !== null)) return;
    for (const [k, q] of this.queues) if (q.jobs.length === 0) this.queues.delete(k);
  }

  private spawn(slot: Slot): Worker {
    const resourceLimits = { maxOldGenerationSizeMb: this.opts.maxHeapMb ?? 2048 };
    const workerData = { hook: this.opts.hook };
    const w = startWorker(import.meta.url, 'worker', { resourceLimits, workerData });
    slot.ready = false;
    w.on('message', (reply: Reply | 'ready') => {
      if (reply === 'ready') {
        if (slot.worker !== w) return;
        slot.ready = true;
        if (slot.job && !slot.timer) this.startDeadline(slot);
        return;
      }
      if (slot.worker !== w || !slot.job || slot.job.task.id !== reply.id) return;
      if ('detected' in reply) { slot.job.detected = reply.detected; return; }
      this.finish(slot, (p) => {
        if (reply.ok) p.resolve(reply);
        else if (reply.ingestError) p.reject(detectedAs(new IngestError(reply.message), reply.sourceType ??
          p.detected));
        else p.reject(new Error(reply.message));
      });
    });
    w.on('error', (err) => this.onCrash(slot, w, err));
    w.on('exit', (code) => this.onCrash(slot, w, new Error(`the ingestion worker exited with code ${code}`)));
    return w;
  }

  private finish(slot: Slot, settle: (p: Pending) => void): void {
    if (slot.timer) { clearTimeout(slot.timer); slot.timer = null; }
    const p = slot.job;
    slot.job = null;
    if (p) settle(p);
    this.pump();
  }

  private onCrash(slot: Slot, w: Worker, err: Error): void {
    if (slot.worker !== w) return; // already replaced (timeout, or the error before the exit)
    slot.worker = null;
    void w.terminate();
    const heap = /heap|memory/i.test(err.message);
    this.finish(slot, (p) => p.reject(heap ? detectedAs(new IngestError(
      'the content needs more memory to parse than allowed'), p.detected) : err));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const q of this.queues.values()) for (const p of q.jobs) p.reject(new Error('the server is shutting down'));
    this.queues.clear();
    await Promise.all(this.slots.map(async (s) => { const w = s.worker; s.worker = null; await w?.terminate(); }));
  }
}
