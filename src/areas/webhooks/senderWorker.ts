/**
 * The delivery worker's thread (src/areas/webhooks/sender.ts): signs each attempt it is handed
 * ({@link signatureHeaders}) and makes it with {@link sendAttempt} through one keep-alive pool
 * per endpoint and URL — at most `poolSize` at once per endpoint and `concurrency` in all, the
 * rest queued per endpoint and started the moment a request ends — and posts the outcomes back in
 * batches: those that ended in one turn, or within {@link MIN_REPLY_GAP_MS} of the last reply.
 */
import { parentPort } from 'node:worker_threads';
import { ConnectionPool } from './http1.js';
import { sendAttempt, type AttemptOutcome } from './send.js';
import { signatureHeaders } from './signature.js';
import type { SendTask, SenderMessage, SenderReply, SenderSettings } from './sender.js';

const pools = new Map<string, { url: string; pool: ConnectionPool }>();

/**
 * The keep-alive pool of `endpointId` for `url` (a URL change starts a new pool). It holds at
 * most the endpoint's bound of connections: no more requests than that are made at once.
 */
function poolOf(endpointId: string, url: string): ConnectionPool {
  const have = pools.get(endpointId);
  if (have !== undefined && have.url === url) return have.pool;
  have?.pool.close();
  const pool = new ConnectionPool();
  pools.set(endpointId, { url, pool });
  return pool;
}

/**
 * The shortest time between two replies, ms: outcomes that end meanwhile go back together, so
 * a busy endpoint's answers wake the API thread once per batch, not once each.
 */
const MIN_REPLY_GAP_MS = 2;
/** The outcomes not yet posted (null: none), and when the last reply went. */
let replies: SenderReply | null = null;
let lastReply = -Infinity;
function flushReplies(): void {
  const batch = replies;
  replies = null;
  lastReply = performance.now();
  if (batch !== null) parentPort!.postMessage(batch);
}
function reply(n: number, outcome: AttemptOutcome): void {
  if (replies === null) {
    replies = [];
    const wait = lastReply + MIN_REPLY_GAP_MS - performance.now();
    if (wait > 0) setTimeout(flushReplies, wait); else setImmediate(flushReplies);
  }
  replies.push({ n, outcome });
}

/** Attempts waiting for a free slot, per endpoint, in the order they were handed over. */
const queued = new Map<string, SendTask[]>();
/** Requests being made per endpoint, and in all. */
const active = new Map<string, number>();
let activeAll = 0;
let settings: SenderSettings = { timeoutMs: 10_000, allowPrivate: false, poolSize: 1, concurrency: 1 };

/** Gives back endpoint `id`'s queued attempts unmade. */
function drop(id: string): void {
  for (const t of queued.get(id) ?? []) reply(t.n, { ok: false, status: null, error: 'not sent', durationMs: 0, notSent: true });
  queued.delete(id);
}

/** Starts queued attempts while the bounds allow, taking the endpoints in turn. */
function pump(): void {
  let started = true;
  while (started && activeAll < settings.concurrency) {
    started = false;
    for (const [id, q] of queued) {
      if (activeAll >= settings.concurrency) break;
      if ((active.get(id) ?? 0) >= settings.poolSize) continue;
      const t = q.shift()!;
      if (q.length === 0) queued.delete(id);
      start(t);
      started = true;
    }
  }
}

function start(t: SendTask): void {
  active.set(t.endpointId, (active.get(t.endpointId) ?? 0) + 1);
  activeAll++;
  const { timeoutMs, allowPrivate } = settings;
  void sendAttempt(t.url, t.body, signatureHeaders(t.secrets, t.eventId, t.timestamp, t.body), { timeoutMs, allowPrivate, pool: poolOf(t.endpointId, t.url) })
    .then((outcome) => {
      const n = (active.get(t.endpointId) ?? 1) - 1;
      if (n <= 0) active.delete(t.endpointId); else active.set(t.endpointId, n);
      activeAll--;
      reply(t.n, outcome);
      // 410 Gone disables the endpoint (docs/api.md#webhook-disabling): send it nothing more.
      if (outcome.status === 410) drop(t.endpointId);
      pump();
    });
}

parentPort!.on('message', (m: SenderMessage) => {
  settings = m.settings;
  for (const id of m.drops) {
    drop(id);
    pools.get(id)?.pool.close();
    pools.delete(id);
  }
  for (const t of m.sends) {
    const q = queued.get(t.endpointId);
    if (q === undefined) queued.set(t.endpointId, [t]); else q.push(t);
  }
  pump();
});
