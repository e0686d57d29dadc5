/**
 * Where delivery attempts are made (docs/api.md#webhook-deliveries): on a worker thread of their
 * own, so the HTTP client's work — connections, framing, keep-alive pools, timeouts — stays off
 * the thread that answers API requests. The dispatcher hands each attempt over as data (URL,
 * body, signature secrets) and gets its {@link AttemptOutcome} back; a worker that dies fails the
 * attempts it held (they are retried) and the next attempt starts a new one.
 *
 * Attempts and outcomes cross in shared memory, not in messages
 * (docs/decisions.md#shared-memory-between-the-api-thread-and-the-delivery-worker): each
 * direction is a {@link ByteRing}. The worker reads the attempts on a 20 ms timer while it has
 * work and sleeps when it has none — then the next hand-over wakes it with one message; this
 * thread reads the outcomes on a {@link OUTCOME_POLL_MS} timer while attempts are out. Under
 * load nobody is woken and nothing is serialized but the attempt's own bytes. An attempt too
 * large for its ring goes as a message instead; so do the endpoints to drop.
 *
 * The worker holds the concurrency bounds: it may be handed more attempts than it makes at once,
 * queues the rest per endpoint, and starts the next the moment a request ends. An endpoint that
 * answers 410 Gone, or is dropped, has its queued attempts given back unmade (`notSent`).
 */
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../core/workerThread.js';
import type { AttemptOutcome } from './send.js';
import { ByteRing, type RingMemory } from './ring.js';

/**
 * One attempt, as the worker takes it: the worker signs `body` with `secrets` (the endpoint's
 * opened signing secrets) under `eventId` and `timestamp` (unix seconds), so the HMACs are made
 * off the thread that answers API requests too.
 */
export interface SendTask {
  n: number;
  endpointId: string;
  url: string;
  /** The event's JSON: UTF-8 bytes (the worker always gets bytes from the ring; a message may give a plain Uint8Array), or a string. */
  body: string | Uint8Array;
  eventId: string;
  timestamp: number;
  secrets: string[];
}

/**
 * The settings every attempt is made with: at most `poolSize` connections in use at once per
 * endpoint and `concurrency` over all of them (`WEBHOOK_CONCURRENCY_PER_ENDPOINT`,
 * `WEBHOOK_CONCURRENCY`), each with up to `pipelineDepth` requests awaiting answers
 * (`WEBHOOK_PIPELINE_DEPTH`, docs/decisions.md#deliveries-pipelined-on-kept-alive-connections).
 */
export interface SenderSettings { timeoutMs: number; allowPrivate: boolean; poolSize: number; concurrency: number; pipelineDepth: number }
/** What the worker starts with: its settings and the two rings' memory. */
export interface SenderWorkerData { settings: SenderSettings; tasks: RingMemory; outcomes: RingMemory }
/** A message to the worker: `wake` (records wait in the ring and it was sleeping), or attempts too large for the ring (`sends`). */
export interface SenderMessage { wake?: true; sends?: SendTask[] }
/**
 * What goes to the worker through the ring, in order: an attempt, or an endpoint to drop — its
 * keep-alive pool closed and its queued attempts given back (deleted or disabled endpoints).
 */
export type SenderRecord = SendTask | { drop: string };

/** Bytes of the ring of attempts (a record may take at most half) and of the ring of outcomes. */
export const TASK_RING_BYTES = 4 * 1024 * 1024;
export const OUTCOME_RING_BYTES = 1024 * 1024;
/**
 * How often this thread reads the outcomes while attempts are out, wall ms: under load each read
 * takes a few dozen, written as one batch
 * (docs/decisions.md#deliveries-pipelined-on-kept-alive-connections).
 */
export const OUTCOME_POLL_MS = 20;
/** Past {@link QUIET_MS} without an outcome (only slow receivers are out), it reads them every {@link QUIET_POLL_MS}. */
const QUIET_MS = 100;
const QUIET_POLL_MS = 50;

/**
 * A record of the ring of attempts: a latin1 head of tab-separated fields, a newline, then the
 * body (UTF-8 bytes; decoded, the body is a view of the record's bytes, not a string); a drop is `D`, a tab, the endpoint id. Ids, URLs (as the URL parser writes them:
 * no tab or newline), numbers and base64 secrets never hold a tab or a newline.
 */
export function encodeTask(t: SenderRecord): [head: string, body: string | Uint8Array] {
  if ('drop' in t) return [`D\t${t.drop}\n`, ''];
  return [`${t.n}\t${t.timestamp}\t${t.endpointId}\t${t.url}\t${t.eventId}\t${t.secrets.join(' ')}\n`, t.body];
}
/** The attempt or drop of a record made by {@link encodeTask}; its body is a view of `rec`, so `rec` must be a copy of the ring's bytes (`readAll()`), not a view (`readAll(decode)`). */
export function decodeTask(rec: Buffer): SenderRecord {
  const nl = rec.indexOf(10);
  const fields = rec.toString('latin1', 0, nl).split('\t');
  if (fields[0] === 'D') return { drop: fields[1] };
  const [n, timestamp, endpointId, url, eventId, secrets] = fields;
  return { n: Number(n), timestamp: Number(timestamp), endpointId, url, eventId, secrets: secrets === '' ? [] : secrets.split(' '), body: rec.subarray(nl + 1) };
}
/** An outcome's record: a latin1 head of tab-separated fields, a newline, then the error text (UTF-8). */
export function encodeOutcome(n: number, o: AttemptOutcome): [head: string, body: string] {
  // Header values may hold a tab; ids, numbers and flags never do.
  const retryAfter = o.retryAfter === undefined ? '' : o.retryAfter.replace(/[\t\n]/g, ' ').replace(/[^\x00-\xff]/g, '?');
  return [`${n}\t${o.ok ? 1 : 0}\t${o.status ?? ''}\t${o.durationMs}\t${o.notSent ? 1 : 0}\t${o.retryAfter === undefined ? 0 : 1}\t${retryAfter}\t${o.error === null ? 0 : 1}\n`, o.error ?? ''];
}
/** The outcome (and its attempt's number) of a record made by {@link encodeOutcome}. */
export function decodeOutcome(rec: Buffer): { n: number; outcome: AttemptOutcome } {
  // Read from the bytes, field by field: no string is made for the numbers and flags.
  fieldAt = 0;
  const n = numberField(rec);
  const ok = numberField(rec) === 1;
  const status = numberField(rec);
  const durationMs = numberField(rec);
  const notSent = numberField(rec) === 1;
  const hasRetryAfter = numberField(rec) === 1;
  const retryAfter = textField(rec);
  const hasError = numberField(rec) === 1;
  const outcome: AttemptOutcome = { ok, status: Number.isNaN(status) ? null : status, error: hasError ? rec.toString('utf8', fieldAt) : null, durationMs };
  if (hasRetryAfter) outcome.retryAfter = retryAfter;
  if (notSent) outcome.notSent = true;
  return { n, outcome };
}

/** Where the field being read by {@link numberField} or {@link textField} starts. */
let fieldAt = 0;

/** The bytes from {@link fieldAt} to the next tab or newline of `rec`, as latin1, moving past the separator. */
function textField(rec: Buffer): string {
  const start = fieldAt;
  while (fieldAt < rec.length && rec[fieldAt] !== 9 && rec[fieldAt] !== 10) fieldAt++;
  return rec.toString('latin1', start, fieldAt++);
}

/**
 * The number from {@link fieldAt} to the next tab or newline of `rec`, moving past the separator;
 * NaN for an empty field. Digits are read as they are; anything else (a point, a sign) takes
 * `Number` of the field's text.
 */
function numberField(rec: Buffer): number {
  const start = fieldAt;
  let v = 0;
  for (; fieldAt < rec.length; fieldAt++) {
    const c = rec[fieldAt];
    if (c === 9 || c === 10) break;
    if (c < 48 || c > 57) { fieldAt = start; const text = textField(rec); return text === '' ? NaN : Number(text); }
    v = v * 10 + (c - 48);
  }
  return fieldAt++ === start ? NaN : v;
}

/** Sends attempts on the sender worker (see the module's comment). */
export class WorkerSender {
  private worker: Worker | null = null;
  private rings: { tasks: ByteRing; outcomes: ByteRing } | null = null;
  private next = 0;
  private readonly pending = new Map<number, (o: AttemptOutcome) => void>();
  private closed = false;
  /** Attempts and drops handed over but not yet in the ring (this turn's, or the ring was full), in order. */
  private waiting: SenderRecord[] = [];
  private flushScheduled = false;
  private poller: NodeJS.Timeout | null = null;
  private lastOutcomeAt = performance.now();

  constructor(private readonly settings: SenderSettings) {}

  /**
   * Makes one attempt of POSTing `task.body`, signed (src/areas/webhooks/signature.ts), to
   * `task.url` through endpoint `task.endpointId`'s keep-alive pool, and calls `done` with its
   * outcome once (a callback, not a promise: under load the outcomes of a poll are handed on
   * in one synchronous pass). Every failure is an outcome (`the attempt was stopped` once
   * {@link close} ran — then `done` is called at once —, `the delivery worker stopped` when the
   * worker died). `task` is kept as it is (it gets its number `n`).
   */
  send(task: Omit<SendTask, 'n'>, done: (outcome: AttemptOutcome) => void): void {
    if (this.closed) { done(stopped('the attempt was stopped')); return; }
    const n = ++this.next;
    this.pending.set(n, done);
    (task as SendTask).n = n;
    this.waiting.push(task as SendTask);
    this.scheduleFlush();
  }

  /**
   * Closes the keep-alive pool of endpoint `id` (deleted, disabled) and gives back its queued
   * attempts unmade, before the attempts handed over after this call.
   */
  drop(id: string): void {
    if (this.worker === null && this.waiting.length === 0) return;
    this.waiting.push({ drop: id });
    this.scheduleFlush();
  }

  /** Hands over what waits (the dispatcher calls it at the end of a pass; else it goes on the next `setImmediate`). */
  flush(): void {
    if (this.closed || this.waiting.length === 0) return;
    const w = this.spawned();
    const rings = this.rings!;
    let i = 0;
    const large: SendTask[] = [];
    for (; i < this.waiting.length; i++) {
      const t = this.waiting[i];
      const [head, body] = encodeTask(t);
      let written: boolean;
      try { written = rings.tasks.write(head, body); } catch { large.push(t as SendTask); continue; } // too large for the ring
      if (!written) break; // full: the rest waits for the next poll
    }
    this.waiting = i === this.waiting.length ? [] : this.waiting.slice(i);
    if (large.length > 0) w.postMessage({ sends: large } satisfies SenderMessage);
    else if (rings.tasks.takeSleeper()) w.postMessage({ wake: true } satisfies SenderMessage);
    this.startPolling();
  }

  /** Stops the worker; attempts in flight end as stopped. */
  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = null;
    this.rings = null;
    this.stopPolling();
    this.failAll('the attempt was stopped');
    if (w) await w.terminate();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => { this.flushScheduled = false; this.flush(); });
  }

  private startPolling(): void {
    if (this.poller !== null || this.pending.size === 0) return;
    this.poller = setTimeout(() => { this.poller = null; this.poll(); }, this.quietFor() < QUIET_MS ? OUTCOME_POLL_MS : QUIET_POLL_MS).unref();
  }

  /** How long no outcome came, wall ms. */
  private quietFor(): number { return performance.now() - this.lastOutcomeAt; }

  private stopPolling(): void {
    if (this.poller !== null) { clearTimeout(this.poller); this.poller = null; }
  }

  /** Takes the outcomes the worker wrote; hands over what waited for room; stops when nothing is out. */
  private poll(): void {
    const rings = this.rings;
    if (rings !== null) {
      const recs = rings.outcomes.readAll(decodeOutcome);
      if (recs.length > 0) this.lastOutcomeAt = performance.now();
      for (const { n, outcome } of recs) {
        const done = this.pending.get(n);
        this.pending.delete(n);
        done?.(outcome);
      }
    }
    if (this.waiting.length > 0) this.flush();
    this.startPolling();
  }

  private spawned(): Worker {
    if (this.worker) return this.worker;
    const tasks = ByteRing.memory(TASK_RING_BYTES);
    const outcomes = ByteRing.memory(OUTCOME_RING_BYTES);
    const w = startWorker(import.meta.url, 'senderWorker', { workerData: { settings: this.settings, tasks, outcomes } satisfies SenderWorkerData });
    const lost = (): void => {
      if (this.worker !== w) return;
      this.worker = null;
      this.rings = null;
      this.stopPolling();
      // Attempts still waiting were never handed to the dead worker: the next worker takes them.
      const waiting = new Set(this.waiting.map((t) => ('drop' in t ? -1 : t.n)));
      for (const [n, done] of [...this.pending]) {
        if (waiting.has(n)) continue;
        this.pending.delete(n);
        done(stopped('the delivery worker stopped'));
      }
      if (this.waiting.length > 0) this.scheduleFlush();
    };
    w.on('error', lost);
    w.on('exit', lost);
    this.worker = w;
    this.rings = { tasks: new ByteRing(tasks), outcomes: new ByteRing(outcomes) };
    return w;
  }

  private failAll(error: string): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    this.waiting = [];
    for (const done of all) done(stopped(error));
  }
}

const stopped = (error: string): AttemptOutcome => ({ ok: false, status: null, error, durationMs: 0 });
