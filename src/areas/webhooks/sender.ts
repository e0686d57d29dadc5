/**
 * Where delivery attempts are made (docs/api.md#webhook-deliveries): on a worker thread of their
 * own, so the HTTP client's work — connections, framing, keep-alive pools, timeouts — stays off
 * the thread that answers API requests. The dispatcher hands each attempt over as data (URL,
 * body, signature headers) and gets its {@link AttemptOutcome} back; a worker that dies fails the
 * attempts it held (they are retried) and the next attempt starts a new one.
 *
 * Messages are batched per event-loop turn in both directions: the attempts handed over in one
 * turn go in one `postMessage`, and the worker posts the outcomes that ended in one of its turns
 * together. A `postMessage` wakes the other thread, which on a small machine costs more than the
 * attempt's own data; a batch pays it once (docs/api.md#webhook-deliveries).
 *
 * The worker holds the concurrency bounds: it may be handed more attempts than it makes at once,
 * queues the rest per endpoint, and starts the next the moment a request ends. An endpoint that
 * answers 410 Gone, or is dropped, has its queued attempts given back unmade (`notSent`).
 */
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../core/workerThread.js';
import type { AttemptOutcome } from './send.js';

/**
 * One attempt, as the worker takes it: the worker signs `body` with `secrets` (the endpoint's
 * opened signing secrets) under `eventId` and `timestamp` (unix seconds), so the HMACs are made
 * off the thread that answers API requests too.
 */
export interface SendTask {
  n: number;
  endpointId: string;
  url: string;
  body: string;
  eventId: string;
  timestamp: number;
  secrets: string[];
}

/**
 * The settings every attempt is made with: at most `poolSize` requests at once per endpoint
 * and `concurrency` over all of them (`WEBHOOK_CONCURRENCY_PER_ENDPOINT`, `WEBHOOK_CONCURRENCY`).
 */
export interface SenderSettings { timeoutMs: number; allowPrivate: boolean; poolSize: number; concurrency: number }
/**
 * A message to the worker: the attempts of one turn (`sends`), the endpoints whose keep-alive
 * pools to close first (`drops`: deleted or disabled endpoints), and the settings.
 */
export interface SenderMessage { sends: SendTask[]; drops: string[]; settings: SenderSettings }
/** The worker's answers: the outcome of each attempt `n` that ended in one of its turns. */
export type SenderReply = Array<{ n: number; outcome: AttemptOutcome }>;

/** Sends attempts on the sender worker (see the module's comment). */
export class WorkerSender {
  private worker: Worker | null = null;
  private next = 0;
  private readonly pending = new Map<number, (o: AttemptOutcome) => void>();
  private closed = false;
  /** What this turn hands over, posted at its end (null: nothing yet). */
  private batch: SenderMessage | null = null;

  constructor(private readonly settings: SenderSettings) {}

  /**
   * Makes one attempt of POSTing `task.body`, signed (src/areas/webhooks/signature.ts), to
   * `task.url` through endpoint `task.endpointId`'s keep-alive pool. Never rejects: every
   * failure is an outcome (`the attempt was stopped` once {@link close} ran, `the delivery
   * worker stopped` when the worker died).
   */
  send(task: Omit<SendTask, 'n'>): Promise<AttemptOutcome> {
    if (this.closed) return Promise.resolve(stopped('the attempt was stopped'));
    const n = ++this.next;
    return new Promise((resolve) => {
      this.pending.set(n, resolve);
      this.batched().sends.push({ ...task, n });
    });
  }

  /**
   * Closes the keep-alive pool of endpoint `id` (deleted, disabled) and gives back its queued
   * attempts unmade, before this turn's attempts are handed over.
   */
  drop(id: string): void { if (this.worker !== null || this.batch !== null) this.batched().drops.push(id); }

  /** Posts what was handed over so far (the dispatcher calls it at the end of a pass; else it goes on the next `setImmediate`). */
  flush(): void {
    const batch = this.batch;
    if (batch === null) return;
    this.batch = null;
    if (!this.closed) this.spawned().postMessage(batch);
  }

  /** This turn's message, posted by {@link flush}. */
  private batched(): SenderMessage {
    if (this.batch !== null) return this.batch;
    const batch: SenderMessage = { sends: [], drops: [], settings: this.settings };
    this.batch = batch;
    setImmediate(() => { if (this.batch === batch) this.flush(); });
    return batch;
  }

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
    w.on('message', (replies: SenderReply) => {
      for (const { n, outcome } of replies) {
        const done = this.pending.get(n);
        this.pending.delete(n);
        done?.(outcome);
      }
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
