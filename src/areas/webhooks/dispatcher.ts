/**
 * The webhook dispatcher (docs/api.md#webhook-deliveries): off the request path, it sends the
 * pending deliveries of every workspace of the store when they are due, with bounded
 * concurrency per endpoint and overall, and writes each attempt's outcome as a put of the
 * delivery record — or, for a first attempt that succeeded, a line in its endpoint's batch
 * (docs/decisions.md#first-attempt-successes-are-stored-in-batches). A slow or dead receiver holds at most its endpoint's share of the slots;
 * API requests never wait for a delivery.
 *
 * Due-ness comes from the injected clock. The dispatcher wakes when new deliveries become
 * durable, when an attempt ends, and at the earliest due time (at least once a second, which
 * also picks up workspaces created since). Tests drive it with {@link WebhookDispatcher.runDue}
 * after advancing a ManualClock. Retries follow `WEBHOOK_RETRY_SCHEDULE` with up to 10 %
 * jitter (docs/api.md#webhook-retries); endpoints are disabled by the rules of
 * docs/api.md#webhook-disabling.
 */
import { iso, type Clock } from '../../core/clock.js';
import type { Config } from '../../core/config.js';
import type { Logger } from '../../core/logger.js';
import { SecretError, type SecretBox } from '../../core/secrets.js';
import type { Store } from '../../store/store.js';
import type { Workspace } from '../../domain/workspace.js';
import { eventViewBytes } from '../events/events.js';
import { DISABLE_AFTER_FAILED_DELIVERIES, DISABLE_AFTER_MS, deliveredRecJson, deliveryRecJson, secretContext, type DeliveredRec, type DeliveryRec, type WebhookEndpointRec } from './model.js';
import { newId } from '../../core/ids.js';
import { retryAfterAt, type AttemptOutcome } from './send.js';
import { WorkerSender } from './sender.js';
import { owedRec, type Owed } from './state.js';
import { DISABLED_ERROR, putDisabled } from './endpoints.js';

/** The longest wait a `Retry-After` may ask for: 24 h (docs/api.md#webhook-retries). */
export const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;
/** After an outcome could not be written (a full disk), the delivery waits this long, ms of the clock. */
const WRITE_RETRY_MS = 30_000;
/**
 * How many attempts per endpoint (and overall) may be handed to the delivery worker, as a
 * multiple of the concurrency bounds: the worker keeps the bounds on the requests it makes and
 * starts the next one the moment one ends, without waiting for this thread to hand it over
 * (docs/api.md#webhook-deliveries).
 */
export const HANDOFF_FACTOR = 4;
/** The longest the dispatcher sleeps without looking, wall ms. */
const IDLE_PASS_MS = 1000;
/**
 * The shortest time between two passes woken by a poke, wall ms: under load, the deliveries that
 * became durable and the slots that were freed meanwhile are handed over together — the worker
 * then writes them to their connections in few system calls, pipelined
 * (docs/decisions.md#deliveries-pipelined-on-kept-alive-connections) — while it still holds up
 * to {@link HANDOFF_FACTOR} × its bounds to go on with (docs/api.md#webhook-deliveries).
 */
export const MIN_PASS_GAP_MS = 20;
/**
 * The shortest time between two writes of one endpoint's cursor, wall ms: under load a batch of
 * outcomes is written every few ms, and each cursor costs a search of the events' order.
 */
export const CURSOR_EVERY_MS = 250;
/** How often the cursors of quiet endpoints are brought up to date, wall ms. */
export const CURSOR_REFRESH_MS = 10_000;
/** The error of a delivery whose event is gone (older than the 30 days events are kept). */
export const EVENT_GONE_ERROR = 'the event is no longer kept (events are kept 30 days)';

export interface DispatcherOptions {
  store: Store<Workspace>;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  config: Pick<Config, 'webhookAllowPrivate' | 'webhookTimeoutMs' | 'webhookRetrySchedule' | 'webhookConcurrency' | 'webhookConcurrencyPerEndpoint' | 'webhookPipelineDepth'>;
  /** A number in [0, 1) for the jitter (default Math.random; tests make it fixed). */
  random?: () => number;
}

/**
 * When the next attempt is due after attempt number `attempt` failed at `now` (ms): the
 * schedule's step `attempt` (ms) stretched by `random` × 10 %, or `retryAfter` (an instant, ms)
 * when that is later, capped at 24 h from now; null when the schedule has no more steps (the
 * delivery has failed for good). docs/api.md#webhook-retries.
 */
export function nextAttemptTime(attempt: number, schedule: readonly number[], now: number, random: number, retryAfter?: number): number | null {
  if (attempt > schedule.length) return null;
  let at = now + Math.round(schedule[attempt - 1] * (1 + 0.1 * random));
  if (retryAfter !== undefined && retryAfter > at) at = Math.min(retryAfter, now + MAX_RETRY_AFTER_MS);
  return at;
}

/** One turn's outcomes of one workspace: their transaction, what to do once it is written, the endpoints whose cursor may move. */
interface Batch {
  tx: ReturnType<Workspace['db']['begin']>; after: Array<(err: Error | null) => void>; cursors: Set<string>;
  /** Per endpoint, its first-attempt successes, stored as one record (docs/decisions.md#first-attempt-successes-are-stored-in-batches). */
  delivered: Map<string, { rec: DeliveredRec; ids: string[] }>;
}

/** Sends the due deliveries of every workspace of the store (see the module's comment). */
export class WebhookDispatcher {
  /** Deliveries with an attempt in flight or its outcome being written (a delivery is never sent twice at once). */
  private readonly running = new Set<string>();
  /** Outcome transactions opened and not yet committed (or failed). */
  private unsettled = 0;
  /** Called once nothing is running and every outcome transaction ended ({@link runDue}, {@link close}). */
  private idleWaiters: Array<() => void> = [];
  /**
   * Attempts handed to the delivery worker per endpoint id, at most {@link HANDOFF_FACTOR} × the
   * per-endpoint bound (a hand-over ends once the answer came, before its outcome is written).
   */
  private readonly perEndpoint = new Map<string, number>();
  /** Attempts handed over for every endpoint, at most {@link HANDOFF_FACTOR} × the overall bound. */
  private sending = 0;
  /** Each endpoint record's opened signing secrets (held only as long as the record is). */
  private readonly opened = new WeakMap<WebhookEndpointRec, { current: string[]; both: string[]; previousUntil: number }>();
  /** Makes the attempts, on a worker thread (src/areas/webhooks/sender.ts). */
  private readonly sender: WorkerSender;
  /** The transaction collecting this turn's outcomes, per workspace, and what to do once it is written. */
  private readonly batches = new Map<Workspace, Batch>();
  /** When the cursors of quiet endpoints were last brought up to date (`performance.now()` ms). */
  private lastRefresh = performance.now();
  /** When each endpoint's cursor was last written (`performance.now()` ms). */
  private readonly cursorWritten = new Map<string, number>();
  /** Deliveries whose outcome could not be written: not retried before this clock time. */
  private readonly holdUntil = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;
  private timerAt = Infinity;
  /** When the last pass ran (`performance.now()` ms). */
  private lastPass = -Infinity;
  private stopped = false;
  private readonly random: () => number;

  constructor(private readonly opts: DispatcherOptions) {
    this.random = opts.random ?? Math.random;
    const c = opts.config;
    this.sender = new WorkerSender({ timeoutMs: c.webhookTimeoutMs, allowPrivate: c.webhookAllowPrivate, poolSize: c.webhookConcurrencyPerEndpoint, concurrency: c.webhookConcurrency, pipelineDepth: c.webhookPipelineDepth });
  }

  /** Starts sending: what is due now (deliveries left pending by a restart included), then as they fall due. */
  start(): void { this.pass(); }

  /** Wakes the dispatcher soon (new durable deliveries, a freed slot). */
  readonly poke = (): void => { if (!this.stopped) this.arm(0); };

  /**
   * Sends every delivery due by the clock now, as the concurrency bounds allow, and waits until
   * they and their outcome writes are done; repeats while more are due. The tests' seam: advance
   * a ManualClock, then await this. Attempts that are in flight already are waited for too.
   */
  async runDue(): Promise<void> {
    for (;;) {
      this.pass();
      if (this.running.size === 0 && this.unsettled === 0) return;
      await this.idle();
    }
  }

  /** Resolves once no attempt is in flight and every outcome transaction ended. */
  private idle(): Promise<void> {
    if (this.running.size === 0 && this.unsettled === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private notifyIdle(): void {
    if (this.running.size > 0 || this.unsettled > 0 || this.idleWaiters.length === 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Stops: no new attempt; attempts in flight are cut off and their outcome not written (they stay pending). */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    await this.sender.close();
    await this.idle();
  }

  /**
   * Brings every enabled endpoint's cursor up to {@link WebhookState.cursorNow} where it is
   * behind, in each workspace's batch of outcomes (docs/decisions.md#deliveries-owed-by-the-event-log):
   * an endpoint that matches few events has few outcomes to move its cursor, and a start-up would
   * walk every event since (30 days of them at worst). Called every {@link CURSOR_REFRESH_MS} by
   * the passes; tests call it directly.
   */
  refreshCursors(): void {
    this.lastRefresh = performance.now();
    for (const ws of this.opts.store.workspaces.values()) {
      if (ws.db.failed) continue;
      for (const e of ws.db.table('webhook_endpoint').values()) {
        if (!e.enabled) continue;
        const from = ws.webhooks.cursorNow(e.id);
        if (ws.get('webhook_cursor', e.id)?.from === from) continue;
        this.batchOf(ws).tx.put('webhook_cursor', e.id, { id: e.id, from });
        this.cursorWritten.set(e.id, this.lastRefresh);
      }
    }
  }

  /** Number of attempts in flight (tests). */
  get inFlight(): number { return this.running.size; }

  private arm(delayMs: number): void {
    if (delayMs <= 0) delayMs = this.lastPass + MIN_PASS_GAP_MS - performance.now();
    if (delayMs <= 0) {
      // Now: in this event-loop turn's check phase, not a timer a turn later.
      if (!this.immediate) this.immediate = setImmediate(() => { this.immediate = null; this.pass(); });
      return;
    }
    const delay = Math.min(delayMs, IDLE_PASS_MS);
    const at = performance.now() + delay;
    if (this.timer !== null && this.timerAt <= at) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => { this.timer = null; this.timerAt = Infinity; this.pass(); }, delay);
    this.timer.unref();
  }

  /** Starts every due delivery that a free slot allows, then sleeps until the next one is due. */
  private pass(): void {
    if (this.stopped) return;
    this.lastPass = performance.now();
    try {
      this.startDue();
      this.sender.flush();
      if (this.lastPass - this.lastRefresh >= CURSOR_REFRESH_MS) this.refreshCursors();
    } catch (e) {
      // A bug here must not take the server down: say so, and look again later.
      this.opts.logger.error('webhook dispatcher pass failed', { error: (e as Error).message });
      this.arm(IDLE_PASS_MS);
    }
  }

  private startDue(): void {
    const now = this.opts.clock.now();
    // Due times are canonical ISO strings, which order as the instants do: compared as text, no
    // Date.parse per delivery walked (attempts in flight stay in the index until settled).
    const nowIso = iso(now);
    const { webhookConcurrency, webhookConcurrencyPerEndpoint, webhookPipelineDepth } = this.opts.config;
    const overall = HANDOFF_FACTOR * webhookConcurrency * webhookPipelineDepth;
    const perEndpoint = HANDOFF_FACTOR * webhookConcurrencyPerEndpoint * webhookPipelineDepth;
    let next = Infinity;
    for (const ws of this.opts.store.workspaces.values()) {
      ws.webhooks.onReady = this.poke;
      if (ws.db.failed) continue;
      const endpoints = ws.webhooks.endpoints;
      for (const e of endpoints.asc()) {
        const endpointId = endpoints.idAt(e);
        let free = perEndpoint - (this.perEndpoint.get(endpointId) ?? 0);
        // Retries whose time came, soonest due first; then the deliveries owed and never tried,
        // in the order their events reached the disk (due since their event).
        const ready: DeliveryRec[] = [];
        const due = ws.webhooks.retriesOf(endpointId);
        if (due !== undefined) {
          for (const at of due.asc()) {
            const dueAt = due.sortKeyAt(at);
            if (dueAt > nowIso) { next = Math.min(next, Date.parse(dueAt)); break; }
            if (free <= 0) break;
            const id = due.idAt(at);
            if (this.running.has(id)) continue;
            const hold = this.holdUntil.get(id);
            if (hold !== undefined && hold > now) { next = Math.min(next, hold); continue; }
            const d = ws.get('webhook_delivery', id);
            if (d !== undefined) { ready.push(d); free--; }
          }
        }
        for (const d of ready) {
          if (this.sending >= overall) break;
          this.launch(ws, d, undefined);
        }
        // Taken out of the waiting queue only as many as will be launched now.
        const take = Math.min(free, overall - this.sending);
        if (take <= 0) continue;
        for (const o of ws.webhooks.takeWaiting(endpointId, take)) {
          if (this.holdUntil.size > 0) {
            const hold = this.holdUntil.get(o.id);
            // Its outcome could not be written: waits, and is looked at again when its time comes.
            if (hold !== undefined && hold > now) { next = Math.min(next, hold); ws.webhooks.requeue(o); continue; }
          }
          o.running = true;
          this.launch(ws, owedRec(o), o);
        }
      }
    }
    this.arm(next === Infinity ? IDLE_PASS_MS : next - now);
  }

  /** Sends `d`: a pending record, or `o`, an owed delivery never tried, as its record would be. */
  private launch(ws: Workspace, d: DeliveryRec, o: Owed | undefined): void {
    this.perEndpoint.set(d.endpointId, (this.perEndpoint.get(d.endpointId) ?? 0) + 1);
    this.sending++;
    this.running.add(d.id);
    let held = true;
    // The slot is freed when the answer came (or the attempt ended otherwise): writing the
    // outcome waits for the disk, and the next delivery need not wait for that.
    const release = (): void => {
      if (!held) return;
      held = false;
      this.sending--;
      const n = (this.perEndpoint.get(d.endpointId) ?? 1) - 1;
      if (n <= 0) this.perEndpoint.delete(d.endpointId); else this.perEndpoint.set(d.endpointId, n);
      this.poke();
    };
    // The delivery leaves `running` once its outcome is written (or nothing is to be written).
    const end = (): void => {
      release();
      // Ended without a record (not made, or its outcome not written): it waits again.
      if (o !== undefined) ws.webhooks.requeue(o);
      this.running.delete(d.id);
      this.notifyIdle();
    };
    const failed = (e: unknown): void => {
      this.opts.logger.error('webhook delivery attempt failed unexpectedly', { workspaceId: ws.id, deliveryId: d.id, error: (e as Error).message });
      end();
    };
    try { this.attempt(ws, d, o, release, end, failed); } catch (e) { failed(e); }
  }

  /**
   * One attempt of `d`: build the request, hand it to the delivery worker, and when its outcome
   * comes `release` its slot and write the outcome ({@link settle}); `end` once that is written
   * or nothing is to be; `failed` on an unexpected error.
   */
  private attempt(ws: Workspace, d: DeliveryRec, o: Owed | undefined, release: () => void, end: () => void, failed: (e: unknown) => void): void {
    const endpoint = ws.get('webhook_endpoint', d.endpointId);
    if (endpoint === undefined || !endpoint.enabled) this.sender.drop(d.endpointId);
    if (endpoint === undefined) return end(); // deleted: its deliveries went with it
    if (!endpoint.enabled) return this.settle(ws, d, o, { ok: false, status: null, error: DISABLED_ERROR, durationMs: 0 }, end, true);
    // The event's view as its text: an event on disk is held as bytes, sent without a parse (docs/storage.md#memory).
    const body = eventViewBytes(ws.db, d.eventId);
    if (body === undefined) return this.settle(ws, d, o, { ok: false, status: null, error: EVENT_GONE_ERROR, durationMs: 0 }, end, true);
    let secrets: string[];
    try { secrets = this.signingSecrets(ws.id, endpoint); } catch (e) {
      if (!(e instanceof SecretError)) throw e;
      return this.settle(ws, d, o, { ok: false, status: null, error: "the endpoint's secret cannot be decrypted (its master key is missing); rotate the secret", durationMs: 0 }, end);
    }
    this.sender.send({ endpointId: endpoint.id, url: endpoint.url, body, eventId: d.eventId, timestamp: Math.floor(this.opts.clock.now() / 1000), secrets }, (outcome) => {
      release();
      // Not made: the worker dropped it (the endpoint answered 410 Gone, or was dropped): the
      // delivery stays as it is, for the next pass to see the endpoint's new state.
      if (outcome.notSent) return end();
      try { this.settle(ws, d, o, outcome, end); } catch (e) { failed(e); }
    });
  }

  /**
   * The secrets that sign now: the endpoint's, and the one before its last rotation while that
   * one is within its 24 hours (docs/api.md#webhook-signatures).
   * @throws SecretError when the current secret cannot be opened.
   */
  private signingSecrets(workspaceId: string, e: WebhookEndpointRec): string[] {
    // Opened once per endpoint record: a rotation or any change puts a new record, so a cached
    // pair can never outlive the secrets it was opened from; the 24 h overlap is checked each time.
    const cached = this.opened.get(e);
    if (cached !== undefined) return this.opts.clock.now() < cached.previousUntil ? cached.both : cached.current;
    const context = secretContext(workspaceId, e.id);
    const current = [this.opts.secrets.open(e.secret, context)];
    let both = current;
    let previousUntil = -Infinity;
    if (e.previousSecret !== undefined) {
      try {
        both = [...current, this.opts.secrets.open(e.previousSecret.sealed, context)];
        previousUntil = Date.parse(e.previousSecret.expiresAt);
      } catch (err) { if (!(err instanceof SecretError)) throw err; }
    }
    this.opened.set(e, { current, both, previousUntil });
    return this.opts.clock.now() < previousUntil ? both : current;
  }

  /**
   * Writes the outcome of the attempt of `sent` (docs/api.md#webhook-retries): succeeded, pending
   * with the next attempt's time, or failed (the last step passed, `final`, or a 410) — and the
   * endpoint's failure record, disabling it by the rules of docs/api.md#webhook-disabling.
   * `o`, for a delivery owed and never tried, is then recorded (owed no more). Nothing is
   * written when the delivery changed meanwhile (its endpoint was deleted or disabled) or the
   * dispatcher is stopping. Synchronous: the outcome goes into this turn's batch
   * ({@link batchOf}); `end` is called once it is written (or failed to be), or at once when
   * nothing is written.
   */
  private settle(ws: Workspace, sent: DeliveryRec, o: Owed | undefined, outcome: AttemptOutcome, end: () => void, final = false): void {
    if (this.stopped) return end();
    // A delivery still owed has no record — unless a disabling being written put one (that one
    // wins; if its write failed, there is none and the delivery is owed as before).
    let cur: DeliveryRec | undefined;
    if (o !== undefined && ws.webhooks.isOwed(o)) {
      cur = o.closing ? ws.get('webhook_delivery', sent.id) : undefined;
      if (cur === undefined) { o.closing = false; cur = sent; }
    } else cur = ws.get('webhook_delivery', sent.id);
    if (cur === undefined || cur.status !== 'pending' || cur.attempt !== sent.attempt) return end();
    const now = this.opts.clock.now();
    const attempt = cur.attempt + 1;
    const gone = outcome.status === 410;
    const at = outcome.ok || gone || final ? null
      : nextAttemptTime(attempt, this.opts.config.webhookRetrySchedule, now, this.random(), retryAfterAt(outcome.retryAfter, now));
    // Field by field, in the record's order (a spread copy runs V8's generic property copy).
    const next: DeliveryRec = {
      id: cur.id, endpointId: cur.endpointId, eventId: cur.eventId, eventType: cur.eventType, attempt,
      status: outcome.ok ? 'succeeded' : at === null ? 'failed' : 'pending',
      responseStatus: outcome.status, error: outcome.error, durationMs: outcome.durationMs, createdAt: cur.createdAt,
      nextAttemptAt: at === null ? null : iso(at),
    };
    const batch = this.batchOf(ws);
    if (outcome.ok && o !== undefined && cur === sent) {
      // A first attempt that succeeded: a line in the endpoint's batch, not a record of its own.
      let b = batch.delivered.get(cur.endpointId);
      if (b === undefined) batch.delivered.set(cur.endpointId, (b = { rec: { id: '', endpointId: cur.endpointId, createdAt: cur.createdAt, deliveries: [] }, ids: [] }));
      b.rec.deliveries.push([cur.eventId, cur.eventType, cur.createdAt, outcome.status!, outcome.durationMs]);
      b.ids.push(cur.id);
      if (cur.createdAt > b.rec.createdAt) b.rec.createdAt = cur.createdAt;
    } else batch.tx.put('webhook_delivery', next.id, next, deliveryRecJson(next));
    if (o !== undefined && cur === sent) {
      ws.webhooks.recorded(o);
      batch.cursors.add(o.endpointId);
    }
    const endpoint = ws.get('webhook_endpoint', cur.endpointId);
    if (endpoint !== undefined && outcome.error !== DISABLED_ERROR) this.recordOutcome(ws, batch.tx, endpoint, next, gone, now);
    const fields = () => ({ workspaceId: ws.id, endpointId: cur.endpointId, deliveryId: cur.id, eventId: cur.eventId, attempt, status: next.status, responseStatus: outcome.status, error: outcome.error });
    // Once the batch is written (or failed): one callback per outcome, no promise of its own.
    batch.after.push((err) => {
      if (err === null) {
        if (this.holdUntil.size > 0) this.holdUntil.delete(cur.id);
        if (!outcome.ok) this.opts.logger.info('webhook delivery attempt failed', fields());
        else if (this.opts.logger.enabled('debug')) this.opts.logger.debug('webhook delivered', fields());
      } else {
        this.holdUntil.set(cur.id, now + WRITE_RETRY_MS);
        if (o !== undefined && cur === sent) ws.webhooks.reowe(o);
        this.opts.logger.warn('could not write a webhook delivery outcome; the attempt will be made again', { ...fields(), writeError: err.message });
      }
      end();
    });
  }

  /**
   * The transaction the outcomes of this callback go into for `ws`: one log line for all the
   * attempts whose outcomes were read together (a poll of the ring, a pass), committed in a
   * microtask as the callback ends — before any request can change the same records, so the
   * log holds the changes in the order memory saw them (a commit deferred to the turn's check
   * phase let a request's PATCH or DELETE be written first, and a restart replayed the
   * outcome's older endpoint over it). Each outcome's `after` is called once it is written, or
   * failed to be.
   */
  private batchOf(ws: Workspace): Batch {
    const open = this.batches.get(ws);
    if (open !== undefined) return open;
    const tx = ws.db.begin();
    // Outcomes ride with the next batch of request writes (docs/storage.md#group-commit): lost
    // in a crash, an attempt is made again (at least once, docs/api.md#webhook-deliveries).
    tx.lazy = true;
    const batch: Batch = { tx, after: [], cursors: new Set(), delivered: new Map() };
    this.batches.set(ws, batch);
    this.unsettled++;
    queueMicrotask(() => {
      this.batches.delete(ws);
      for (const { rec, ids } of batch.delivered.values()) {
        rec.id = newId(this.opts.clock.now());
        ws.webhooks.putBatch(tx, rec, deliveredRecJson(rec), ids);
      }
      // The cursors of the endpoints whose owed deliveries got their records here move with them
      // (docs/decisions.md#deliveries-owed-by-the-event-log), at most every CURSOR_EVERY_MS: a
      // cursor left behind only makes a restart look at more events.
      const wall = performance.now();
      for (const id of batch.cursors) {
        if (wall - (this.cursorWritten.get(id) ?? -Infinity) < CURSOR_EVERY_MS) continue;
        this.cursorWritten.set(id, wall);
        if (ws.get('webhook_endpoint', id) === undefined) { this.cursorWritten.delete(id); continue; }
        const from = ws.webhooks.cursorNow(id);
        if (ws.get('webhook_cursor', id)?.from === from) continue;
        tx.put('webhook_cursor', id, { id, from });
      }
      const done = (err: Error | null): void => {
        for (const f of batch.after) {
          try { f(err); } catch (e) { this.opts.logger.error('webhook outcome bookkeeping failed', { workspaceId: ws.id, error: (e as Error).message }); }
        }
        this.unsettled--;
        this.notifyIdle();
      };
      ws.db.commit(tx).then(() => done(null), (e: unknown) => done(e as Error));
    });
    return batch;
  }

  /** Adds to `tx` the endpoint's failure record after `d`'s attempt, and disables it when a rule says so. */
  private recordOutcome(ws: Workspace, tx: ReturnType<Workspace['db']['begin']>, e: WebhookEndpointRec, d: DeliveryRec, gone: boolean, now: number): void {
    if (d.status === 'succeeded') {
      if (e.failingSince === undefined && !e.failedInARow) return;
      const { failingSince: _a, failedInARow: _b, ...rest } = e;
      tx.put('webhook_endpoint', e.id, rest);
      return;
    }
    const failingSince = e.failingSince ?? iso(now);
    const failedInARow = (e.failedInARow ?? 0) + (d.status === 'failed' ? 1 : 0);
    let reason: string | null = null;
    if (gone) reason = `the endpoint answered HTTP 410 Gone on ${iso(now)}`;
    else if (failedInARow >= DISABLE_AFTER_FAILED_DELIVERIES) reason = `${failedInARow} deliveries in a row failed (the last on ${iso(now)})`;
    else if (now - Date.parse(failingSince) >= DISABLE_AFTER_MS) reason = `every delivery attempt failed for 5 days (since ${failingSince})`;
    const next: WebhookEndpointRec = { ...e, failingSince, failedInARow };
    if (reason === null || !e.enabled) { tx.put('webhook_endpoint', e.id, next); return; }
    // This delivery keeps its own outcome; the endpoint's other pending deliveries fail with it.
    if (d.status === 'pending') tx.put('webhook_delivery', d.id, { ...d, status: 'failed', nextAttemptAt: null });
    putDisabled(ws, tx, { ...next, enabled: false, disabledReason: reason, updatedAt: iso(now) });
    this.opts.logger.warn('webhook endpoint disabled', { workspaceId: ws.id, endpointId: e.id, reason });
  }
}
