/**
 * The password hasher's own bounded queue (docs/security.md#sign-in-cost): scrypt runs on at
 * most 2 worker threads (`scryptSync` there), never on libuv's thread pool, where the logs'
 * writes and fdatasync wait behind whatever is queued. At most 32 hashes wait; past that a
 * hash is refused at once ({@link HashBusy}), so a flood of sign-ins costs a bounded amount.
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../core/workerThread.js';

/** scrypt's parameters for one hash, as `crypto.scryptSync` takes them. */
export interface ScryptParams { N: number; r: number; p: number; maxmem: number }

/** The messages of the hash worker (src/web/hashWorker.ts). */
export type HashTask = { password: string; salt: Uint8Array; keyLength: number; params: ScryptParams };
export type HashReply = { ok: true; key: Uint8Array } | { ok: false; message: string };

/** A hash refused because the queue is full; `retryAfterSeconds` estimates when it has room. */
export class HashBusy extends Error {
  constructor(readonly retryAfterSeconds: number) { super('the password hasher is busy'); }
}

interface Job { task: HashTask; resolve: (key: Buffer) => void; reject: (e: Error) => void }
interface Lane { worker: Worker | null; job: Job | null; started: number }

/** At most 2 lanes, and one core always left to the event loop (1 lane on a 2-core machine). */
export const DEFAULT_LANES = Math.max(1, Math.min(2, availableParallelism() - 1));
/** Hashes that may wait for a lane (docs/security.md#sign-in-cost). */
export const MAX_WAITING = 32;

export class HashLanes {
  private readonly lanes: Lane[];
  private readonly waiting: Job[] = [];
  /** A moving average of one hash's time (ms), for Retry-After. */
  private meanMs = 100;

  constructor(readonly concurrency = DEFAULT_LANES, readonly maxWaiting = MAX_WAITING) {
    this.lanes = Array.from({ length: concurrency }, () => ({ worker: null, job: null, started: 0 }));
  }

  /**
   * The `keyLength`-byte scrypt key of `password` (NFC-normalised) and `salt`.
   * @throws HashBusy at once when {@link maxWaiting} hashes already wait; Error when scrypt refuses the parameters.
   */
  scrypt(password: string, salt: Buffer, keyLength: number, params: ScryptParams): Promise<Buffer> {
    const free = this.lanes.find((l) => l.job === null);
    if (!free && this.waiting.length >= this.maxWaiting) return Promise.reject(new HashBusy(this.retryAfter()));
    return new Promise((resolve, reject) => {
      const job: Job = { task: { password, salt: new Uint8Array(salt), keyLength, params }, resolve, reject };
      if (free) this.start(free, job); else this.waiting.push(job);
    });
  }

  /** Hashes running and waiting. */
  get load(): { running: number; waiting: number } {
    return { running: this.lanes.filter((l) => l.job !== null).length, waiting: this.waiting.length };
  }

  /** Seconds until the work queued now is done, at least 1. */
  private retryAfter(): number {
    return Math.max(1, Math.ceil(((this.waiting.length + this.concurrency) * this.meanMs) / this.concurrency / 1000));
  }

  private start(lane: Lane, job: Job): void {
    lane.job = job;
    lane.started = performance.now();
    const w = (lane.worker ??= this.spawn(lane));
    w.ref(); // a hash under way keeps the process alive; an idle lane does not
    w.postMessage(job.task);
  }

  private finish(lane: Lane, reply: HashReply | Error): void {
    const job = lane.job;
    lane.job = null;
    if (job) {
      this.meanMs = 0.8 * this.meanMs + 0.2 * (performance.now() - lane.started);
      if (reply instanceof Error) job.reject(reply);
      else if (reply.ok) job.resolve(Buffer.from(reply.key));
      else job.reject(new Error(reply.message));
    }
    const next = this.waiting.shift();
    if (next) this.start(lane, next);
    else lane.worker?.unref();
  }

  private spawn(lane: Lane): Worker {
    const w = startWorker(import.meta.url, 'hashWorker');
    w.on('message', (m: HashReply) => this.finish(lane, m));
    const died = (err: Error) => {
      if (lane.worker !== w) return;
      lane.worker = null;
      void w.terminate();
      this.finish(lane, err);
    };
    w.on('error', died);
    w.on('exit', (code) => died(new Error(`the hash worker exited with code ${code}`)));
    return w;
  }
}

let shared: HashLanes | undefined;
/**
 * The process's hash lanes, started on first use: one queue for every server of the process,
 * since the cores it bounds are the process's. Its workers are unref'd and never keep it alive.
 */
export const sharedHashLanes = (): HashLanes => (shared ??= new HashLanes());
