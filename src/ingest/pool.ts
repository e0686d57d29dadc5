/**
 * Runs ingestion analyses on a worker thread (issue #3 "a 2,000,000-character paste ingests
 * without stalling other requests", issue #6 "≤ 50 ms at a time"): the main thread only
 * sends text and installs results. One worker serves tasks in order; one that crashes, runs
 * out of its heap or runs past the deadline is terminated and replaced, failing only its task.
 */
import { Worker } from 'node:worker_threads';
import { IngestError } from './types.js';
import type { Analysis, Analyzer } from './analyze.js';
import type { Reply, Task } from './worker.js';

type TaskInput = Task extends infer T ? (T extends { id: number } ? Omit<T, 'id'> : never) : never;

interface Pending { task: Task; resolve: (a: Analysis) => void; reject: (e: Error) => void }

export interface WorkerAnalyzerOptions {
  /** A task running longer than this is killed and fails (pathological input). */
  timeoutMs?: number;
  /** The worker's old-generation heap cap, MiB. */
  maxHeapMb?: number;
}

// Compiled, the worker is ./worker.js. Under tsx (the test suite) it is ./worker.ts, and a
// worker thread does not inherit tsx's loader: a two-line bootstrap registers it first.
const TS = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(`./worker${TS ? '.ts' : '.js'}`, import.meta.url);
const TS_BOOT = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(WORKER_URL.href)}); });`;

export class WorkerAnalyzer implements Analyzer {
  private worker: Worker | null = null;
  private queue: Pending[] = [];
  private current: Pending | null = null;
  private timer: NodeJS.Timeout | null = null;
  private nextId = 1;
  private closed = false;

  constructor(private readonly opts: WorkerAnalyzerOptions = {}) {}

  analyzeText(type: Parameters<Analyzer['analyzeText']>[0], text: string, mediaType?: string): Promise<Analysis> {
    return this.submit({ op: 'text', type, text, mediaType });
  }

  analyzeParsed(type: Parameters<Analyzer['analyzeParsed']>[0], parsed: Parameters<Analyzer['analyzeParsed']>[1]): Promise<Analysis> {
    return this.submit({ op: 'parsed', type, parsed });
  }

  private submit(input: TaskInput): Promise<Analysis> {
    if (this.closed) return Promise.reject(new Error('the analyzer is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ task: { ...input, id: this.nextId++ } as Task, resolve, reject });
      this.pump();
    });
  }

  private spawn(): Worker {
    const resourceLimits = { maxOldGenerationSizeMb: this.opts.maxHeapMb ?? 2048 };
    const w = TS ? new Worker(TS_BOOT, { eval: true, resourceLimits }) : new Worker(WORKER_URL, { resourceLimits });
    w.unref();
    w.on('message', (reply: Reply) => this.onReply(reply));
    w.on('error', (err) => this.onCrash(err));
    w.on('exit', (code) => { if (this.worker === w) { this.worker = null; if (this.current) this.onCrash(new Error(`the ingestion worker exited with code ${code}`)); } });
    return w;
  }

  private pump(): void {
    if (this.current || this.queue.length === 0) return;
    this.current = this.queue.shift()!;
    this.worker ??= this.spawn();
    this.worker.postMessage(this.current.task);
    this.timer = setTimeout(() => {
      const w = this.worker;
      this.worker = null;
      this.finish((p) => p.reject(new IngestError(`parsing took longer than ${Math.round((this.opts.timeoutMs ?? 60_000) / 1000)} s and was stopped`)));
      void w?.terminate();
    }, this.opts.timeoutMs ?? 60_000);
    this.timer.unref();
  }

  private finish(settle: (p: Pending) => void): void {
    if (this.timer) { clearTimeout(this.timer); this.timer = null; }
    const p = this.current;
    this.current = null;
    if (p) settle(p);
    this.pump();
  }

  private onReply(reply: Reply): void {
    if (!this.current || this.current.task.id !== reply.id) return;
    this.finish((p) => {
      if (reply.ok) p.resolve(reply.analysis);
      else if (reply.ingestError) p.reject(new IngestError(reply.message));
      else p.reject(new Error(reply.message));
    });
  }

  private onCrash(err: Error): void {
    const w = this.worker;
    this.worker = null;
    void w?.terminate();
    const heap = /heap|memory/i.test(err.message);
    this.finish((p) => p.reject(heap ? new IngestError('the content needs more memory to parse than allowed') : err));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue) p.reject(new Error('the server is shutting down'));
    this.queue = [];
    await this.worker?.terminate();
    this.worker = null;
  }
}
