/**
 * Where delivery attempts are made (docs/api.md#webhook-deliveries): on a worker thread of their
 * own, so the HTTP client's work — connections, framing, keep-alive pools, timeouts — stays off
 * the thread that answers API requests. The dispatcher hands each attempt over as data (URL,
 * body, signature headers) and gets its {@link AttemptOutcome} back; a worker that dies fails the
 * attempts it held (they are retried) and the next attempt starts a new one.
 */
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../core/workerThread.js';
import type { AttemptOutcome } from './send.js';

/** One attempt, as the worker takes it. */
export interface SendTask {
  n: number;
  endpointId: string;
  url: string;
  body: string;
  headers: Record<string, string>;
}

/** A message to the worker: an attempt, or "close the keep-alive pool of this endpoint". */
export type SenderMessage = { send: SendTask; timeoutMs: number; allowPrivate: boolean; poolSize: number } | { drop: string };
/** The worker's answer to attempt `n`. */
export interface SenderReply { n: number; outcome: AttemptOutcome }

/** Sends attempts on the sender worker (see the module's comment). */
export class WorkerSender {
  private worker: Worker | null = null;
  private next = 0;
  private readonly pending = new Map<number, (o: AttemptOutcome) => void>();
  private closed = false;

  constructor(private readonly opts: { timeoutMs: number; allowPrivate: boolean; poolSize: number }) {}

  /**
   * Makes one attempt of POSTing `body` to `url` with `headers`, through endpoint `endpointId`'s
   * keep-alive pool. Never rejects: every failure is an outcome (`the attempt was stopped` once
   * {@link close} ran, `the delivery worker stopped` when the worker died).
   */
  send(endpointId: string, url: string, body: string, headers: Record<string, string>): Promise<AttemptOutcome> {
    if (this.closed) return Promise.resolve(stopped('the attempt was stopped'));
    const n = ++this.next;
    return new Promise((resolve) => {
      this.pending.set(n, resolve);
      const { timeoutMs, allowPrivate, poolSize } = this.opts;
      this.spawned().postMessage({ send: { n, endpointId, url, body, headers }, timeoutMs, allowPrivate, poolSize } satisfies SenderMessage);
    });
  }

  /** Closes the keep-alive pool of endpoint `id` (deleted, disabled). */
  drop(id: string): void { this.worker?.postMessage({ drop: id } satisfies SenderMessage); }

  /** Stops the worker; attempts in flight end as stopped. */
  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = null;
    this.failAll('the attempt was stopped');
    if (w) await w.terminate();
  }

  private spawned(): Worker {
    if (this.worker) return this.worker;
    const w = startWorker(import.meta.url, 'senderWorker');
    w.on('message', (m: SenderReply) => {
      const done = this.pending.get(m.n);
      this.pending.delete(m.n);
      done?.(m.outcome);
    });
    const lost = (): void => { if (this.worker === w) { this.worker = null; this.failAll('the delivery worker stopped'); } };
    w.on('error', lost);
    w.on('exit', lost);
    this.worker = w;
    return w;
  }

  private failAll(error: string): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const done of all) done(stopped(error));
  }
}

const stopped = (error: string): AttemptOutcome => ({ ok: false, status: null, error, durationMs: 0 });
