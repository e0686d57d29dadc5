/**
 * The delivery worker's thread (src/areas/webhooks/sender.ts): reads the attempts from its ring
 * (docs/decisions.md#shared-memory-between-the-api-thread-and-the-delivery-worker) every
 * {@link POLL_MS} while it has work, signs each ({@link signatureHeaders}) and makes it with
 * {@link sendAttempt} through one keep-alive pool per endpoint and URL — at most `poolSize`
 * connections in use per endpoint and `concurrency` in all (kept by the pools,
 * src/areas/webhooks/pool.ts; past them only pipelined behind others), the rest queued per
 * endpoint ({@link mayStart}) and started the moment a request ends — and writes each outcome to the ring of outcomes as it comes. With
 * nothing to do it sleeps until the API thread wakes it with a message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ConnectionPool, setConnectionLimit } from './pool.js';
import { sendAttempt, type AttemptOutcome } from './send.js';
import { signatureHeaders } from './signature.js';
import { ByteRing } from './ring.js';
import { decodeTask, encodeOutcome, type SendTask, type SenderMessage, type SenderWorkerData } from './sender.js';

/**
 * How often the attempts' ring is read while there is work, wall ms: under load each read takes
 * a few dozen attempts, written to their connections pipelined, a system call per connection
 * (docs/decisions.md#deliveries-pipelined-on-kept-alive-connections).
 */
const POLL_MS = 20;
/** How long it keeps looking after the last attempt came, with nothing else to do, before it sleeps, wall ms. */
const LINGER_MS = 50;
/** How often the ring is read when only requests are in flight (nothing came for {@link LINGER_MS}), wall ms. */
const IDLE_POLL_MS = 50;

const data = workerData as SenderWorkerData;
const settings = data.settings;
setConnectionLimit(settings.concurrency);
const tasks = new ByteRing(data.tasks);
const outcomes = new ByteRing(data.outcomes);

const pools = new Map<string, { url: string; pool: ConnectionPool; parsed: URL | string }>();

/**
 * The keep-alive pool of `endpointId` for `url` (a URL change starts a new pool), and the URL
 * parsed once for its attempts (its text when it does not parse: each attempt then fails saying
 * so). The pool holds at most the endpoint's bound of connections: no more requests than that
 * are made at once.
 */
function poolOf(endpointId: string, url: string): { pool: ConnectionPool; parsed: URL | string } {
  const have = pools.get(endpointId);
  if (have !== undefined && have.url === url) return have;
  have?.pool.close();
  let parsed: URL | string = url;
  try { parsed = new URL(url); } catch { /* sendAttempt says so */ }
  const made = { url, pool: new ConnectionPool(settings.pipelineDepth, settings.poolSize), parsed };
  pools.set(endpointId, made);
  return made;
}

/** Outcomes that did not fit the ring yet (the API thread is behind), in order. */
let unsent: Array<[string, string]> = [];
function reply(n: number, outcome: AttemptOutcome): void {
  const rec = encodeOutcome(n, outcome);
  if (unsent.length > 0 || !outcomes.write(rec[0], rec[1])) { unsent.push(rec); ensureTicking(); }
}
function writeUnsent(): void {
  let i = 0;
  while (i < unsent.length && outcomes.write(unsent[i][0], unsent[i][1])) i++;
  unsent = i === unsent.length ? [] : unsent.slice(i);
}

/** Attempts waiting for a free slot, per endpoint, in the order they were handed over. */
const queued = new Map<string, SendTask[]>();
/** Requests being made per endpoint, and in all. */
const active = new Map<string, number>();
let activeAll = 0;

/** Gives back endpoint `id`'s queued attempts unmade. */
function drop(id: string): void {
  for (const t of queued.get(id) ?? []) reply(t.n, { ok: false, status: null, error: 'not sent', durationMs: 0, notSent: true });
  queued.delete(id);
}

/**
 * Whether one more attempt of endpoint `id` may start now: while fewer than the bounds × the
 * pipeline depth are out (per endpoint and in all). The bounds of connections in use are kept
 * by the pools (src/areas/webhooks/pool.ts): past them a request goes behind others on a
 * connection with room, or waits there for one
 * (docs/decisions.md#deliveries-pipelined-on-kept-alive-connections).
 */
function mayStart(id: string): boolean {
  const depth = settings.pipelineDepth;
  if ((active.get(id) ?? 0) >= settings.poolSize * depth || activeAll >= settings.concurrency * depth) return false;
  // An attempt that would wait for a connection stays queued here (droppable: 410, drop).
  return pools.get(id)?.pool.full !== true;
}

/** Starts queued attempts while the bounds allow, taking the endpoints in turn. */
function pump(): void {
  let started = true;
  while (started && activeAll < settings.concurrency * settings.pipelineDepth) {
    started = false;
    for (const [id, q] of queued) {
      if (!mayStart(id)) continue;
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
  const { pool, parsed } = poolOf(t.endpointId, t.url);
  void sendAttempt(parsed, t.body, signatureHeaders(t.secrets, t.eventId, t.timestamp, t.body), { timeoutMs, allowPrivate, pool })
    .then((outcome) => {
      const n = (active.get(t.endpointId) ?? 1) - 1;
      if (n <= 0) active.delete(t.endpointId); else active.set(t.endpointId, n);
      activeAll--;
      reply(t.n, outcome);
      // 410 Gone disables the endpoint (docs/api.md#webhook-disabling): send it nothing more.
      if (outcome.status === 410) { drop(t.endpointId); pool.cancelWaiting(); }
      pump();
    });
}

function enqueue(t: SendTask): void {
  const q = queued.get(t.endpointId);
  if (q === undefined) queued.set(t.endpointId, [t]); else q.push(t);
}

let lastTaskAt = performance.now();
/** Reads the ring: attempts are queued, drops applied, in the order they were handed over. */
function drain(): void {
  let any = false;
  for (const rec of tasks.readAll()) {
    const r = decodeTask(rec);
    any = true;
    if ('drop' in r) {
      drop(r.drop);
      pools.get(r.drop)?.pool.close();
      pools.delete(r.drop);
    } else enqueue(r);
  }
  if (any) { lastTaskAt = performance.now(); pump(); }
}

let ticker: NodeJS.Timeout | null = null;
function tick(): void {
  ticker = null;
  drain();
  if (unsent.length > 0) writeUnsent();
  const busy = activeAll > 0 || queued.size > 0 || unsent.length > 0 || performance.now() - lastTaskAt < LINGER_MS;
  // Nothing to do: sleep, unless an attempt came in meanwhile (then the API thread saw no sleeper).
  if (!busy && tasks.trySleep()) return;
  // Only requests in flight (a slow receiver): look less often; a hand-over then waits ≤ IDLE_POLL_MS.
  ticker = setTimeout(tick, performance.now() - lastTaskAt < LINGER_MS ? POLL_MS : IDLE_POLL_MS);
}
function ensureTicking(): void { if (ticker === null) ticker = setTimeout(tick, POLL_MS); }

parentPort!.on('message', (m: SenderMessage) => {
  if (m.sends) { for (const t of m.sends) enqueue(t); lastTaskAt = performance.now(); pump(); }
  tasks.awake();
  if (ticker !== null) clearTimeout(ticker);
  tick();
});
tick();
