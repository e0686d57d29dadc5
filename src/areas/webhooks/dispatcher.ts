/**
 * The webhook dispatcher (docs/api.md#webhook-deliveries): off the request path, it sends the due deliveries of every
 * workspace as the shares allow (./shares.ts), each on node:http's agents (./send.ts), and writes each outcome as a put
 * of the delivery record — or, for a first attempt that succeeded, a line in its endpoint's batch
 * (docs/decisions.md#first-attempt-successes-are-stored-in-batches). Deleting, disabling or re-pointing an endpoint
 * stops its unwritten attempts. Due-ness comes from the injected clock; tests drive it with {@link
 * WebhookDispatcher.runDue}.
 */
import { iso, type Clock } from '../../core/clock.js';
import type { Config } from '../../core/config.js';
import type { Logger } from '../../core/logger.js';
import { SecretError, type SecretBox } from '../../core/secrets.js';
import type { Store } from '../../store/store.js';
import type { Workspace } from '../../domain/workspace.js';
import { eventViewBytes } from '../events/events.js';
import { deliveredRecJson, deliveryRecJson, secretContext, type DeliveredRec, type DeliveryRec } from './model.js';
import { newId } from '../../core/ids.js';
import { retryAfterAt, startAttempt, type Attempt, type AttemptOutcome } from './send.js';
import { DeliveryAgents } from './connections.js';
import { SigningSecrets, signatureHeaders } from './signature.js';
import { Shares } from './shares.js';
import { owedRec, type Owed } from './state.js';
import { DISABLED_ERROR } from './endpoints.js';
import { nextAttemptTime, recordOutcome } from './retries.js';
import { STATELESS } from '../../store/db.js';

/** After an outcome could not be written (a full disk), the delivery waits this long, ms of the clock. */
const WRITE_RETRY_MS = 30_000;
/** How long an endpoint that answered 410 Gone gets nothing new while its disabling is written, wall ms. */
const GONE_HOLD_MS = 5_000;
/** The longest the dispatcher sleeps without looking, wall ms. */
const IDLE_PASS_MS = 1000;
/** The shortest time between two passes woken by a poke, wall ms: a burst's deliveries are looked at together. */
export const MIN_PASS_GAP_MS = 2;
/** The shortest time between two writes of one endpoint's cursor, wall ms (each costs a search of the events). */
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
  config: Pick<Config, 'webhookAllowPrivate' | 'webhookTimeoutMs' | 'webhookRetrySchedule' | 'webhookConcurrency'
    | 'webhookConcurrencyPerEndpoint'>;
  /** A number in [0, 1) for the jitter (default Math.random; tests make it fixed). */
  random?: () => number;
  /** Told of each attempt whose outcome was written: `pending` when it will be tried again (metrics). */
  onOutcome?: (status: DeliveryRec['status']) => void;
}

/** One turn's outcomes of one workspace: their transaction, what to do once it is written, the endpoints whose cursor
 * may move. */
interface Batch {
  tx: ReturnType<Workspace['db']['begin']>; after: Array<(err: Error | null) => void>; cursors: Set<string>;
  /** Per endpoint, its first-attempt successes, stored as one record
   * (docs/decisions.md#first-attempt-successes-are-stored-in-batches). */
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
  private readonly shares: Shares;
  /** The attempts under way per endpoint, each with the URL it goes to. */
  private readonly flights = new Map<string, Set<{ url: string; attempt: Attempt }>>();
  /** Endpoints that answered 410 Gone, not yet disabled on disk: wall ms of the answer ({@link GONE_HOLD_MS}). */
  private readonly gone = new Map<string, number>();
  /** The workspaces whose endpoint changes are listened to. */
  private readonly watched = new WeakSet<Workspace>();
  /** Each endpoint URL, parsed once. */
  private readonly urls = new Map<string, URL>();
  private readonly signing: SigningSecrets;
  private readonly agents: DeliveryAgents;
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
    this.shares = new Shares(c.webhookConcurrency, c.webhookConcurrencyPerEndpoint);
    this.agents = new DeliveryAgents(c.webhookConcurrencyPerEndpoint, c.webhookConcurrency);
    this.signing = new SigningSecrets(opts.secrets);
  }

  /** Starts sending: what is due now (deliveries left pending by a restart included), then as they fall due. */
  start(): void { this.pass(); }

  /** Wakes the dispatcher soon (new durable deliveries, a freed slot). */
  readonly poke = (): void => { if (!this.stopped) this.arm(0); };

  /** Sends every delivery due now and waits for them and their writes, while more are due (tests: advance a
   * ManualClock, then await this). */
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
    for (const set of this.flights.values()) for (const f of set) f.attempt.cut();
    await this.idle();
    this.agents.destroy();
  }

  /**
   * Brings every enabled endpoint's cursor up to {@link WebhookState.cursorNow} where it is behind
   * (docs/decisions.md#deliveries-owed-by-the-event-log): an endpoint matching few events has few outcomes to move it,
   * and a start-up would walk every event since. Called every {@link CURSOR_REFRESH_MS}; tests call it directly.
   */
  refreshCursors(): void {
    this.lastRefresh = performance.now();
    for (const ws of this.opts.store.workspaces.values()) {
      if (ws.db.failed || this.opts.store.moving.has(ws.id)) continue;
      for (const e of ws.db.table('webhook_endpoint').values()) {
        if (!e.enabled) continue;
        const from = ws.webhooks.cursorNow(e.id);
        if (ws.get('webhook_cursor', e.id)?.from === from) continue;
        this.batchOf(ws).tx.put('webhook_cursor', e.id, { id: e.id, from });
        this.cursorWritten.set(e.id, this.lastRefresh);
      }
    }
  }

  /** Attempts in flight (tests, metrics). */
  get inFlight(): number { return this.running.size; }

  /** Deliveries owed (no attempt recorded yet) and retries scheduled, over every workspace (metrics). */
  queued(): { owed: number; retries: number } {
    const q = { owed: 0, retries: 0 };
    for (const ws of this.opts.store.workspaces.values()) ws.webhooks.countQueued(q);
    return q;
  }

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
      if (this.lastPass - this.lastRefresh >= CURSOR_REFRESH_MS) this.refreshCursors();
    } catch (e) {
      // A bug here must not take the server down: say so, and look again later.
      this.opts.logger.error('webhook dispatcher pass failed', { error: (e as Error).message });
      this.arm(IDLE_PASS_MS);
    }
  }

  /** Starts what is due fairly (./shares.ts): each workspace up to its quarter, then a lone waiting one beyond it. */
  private startDue(): void {
    const now = this.opts.clock.now();
    const due = { nowIso: iso(now), now, next: Infinity };
    const waiting: Workspace[] = [];
    for (const ws of this.opts.store.workspaces.values()) {
      ws.webhooks.onReady = this.poke;
      this.watch(ws);
      // A workspace moving to another cell is delivered from there (docs/deployment.md#moving-a-workspace).
      if (ws.db.failed || this.opts.store.moving.has(ws.id)) continue;
      if (this.startFor(ws, due, false)) waiting.push(ws);
    }
    if (waiting.length === 1) this.startFor(waiting[0], due, true);
    this.arm(due.next === Infinity ? IDLE_PASS_MS : due.next - now);
  }

  /**
   * Starts the due deliveries of `ws` its room allows ({@link Shares.room}): due retries soonest first, then owed ones
   * in disk order; `due.next` gets the next due time. @returns whether deliveries wait for room.
   */
  private startFor(ws: Workspace, due: { nowIso: string; now: number; next: number }, alone: boolean): boolean {
    let room = this.shares.room(ws.id, alone);
    const endpoints = ws.webhooks.endpoints;
    for (const e of endpoints.asc()) {
      const endpointId = endpoints.idAt(e);
      if (this.isGone(endpointId)) continue;
      let free = Math.min(room, this.opts.config.webhookConcurrencyPerEndpoint - this.shares.ofEndpoint(endpointId));
      const retries = ws.webhooks.retriesOf(endpointId);
      if (retries !== undefined) {
        for (const at of retries.asc()) {
          const dueAt = retries.sortKeyAt(at);
          if (dueAt > due.nowIso) { due.next = Math.min(due.next, Date.parse(dueAt)); break; }
          const id = retries.idAt(at);
          if (this.running.has(id)) continue;
          const hold = this.holdUntil.get(id);
          if (hold !== undefined && hold > due.now) { due.next = Math.min(due.next, hold); continue; }
          if (free <= 0) { if (room <= 0) return true; break; }
          const d = ws.get('webhook_delivery', id);
          if (d !== undefined) { this.launch(ws, d, undefined); free--; room--; }
        }
      }
      if (free <= 0) {
        if (room <= 0 && ws.webhooks.owedCount(endpointId) > this.shares.ofEndpoint(endpointId)) return true;
        continue;
      }
      for (const o of ws.webhooks.takeWaiting(endpointId, free)) {
        if (this.holdUntil.size > 0) {
          const hold = this.holdUntil.get(o.id);
          // Its outcome could not be written: waits, and is looked at again when its time comes.
          if (hold !== undefined && hold > due.now) {
            due.next = Math.min(due.next, hold);
            ws.webhooks.requeue(o);
            continue;
          }
        }
        o.running = true;
        this.launch(ws, owedRec(o), o);
        room--;
      }
      if (room > 0) continue;
      return ws.webhooks.owedCount(endpointId) > this.shares.ofEndpoint(endpointId) || this.laterHaveWork(ws, e);
    }
    return false;
  }

  /** Whether an endpoint of `ws` after the one at `after` (in creation order) is owed deliveries not under way. */
  private laterHaveWork(ws: Workspace, after: number): boolean {
    const endpoints = ws.webhooks.endpoints;
    for (const e of endpoints.asc()) {
      if (e <= after) continue;
      const id = endpoints.idAt(e);
      if (!this.isGone(id) && ws.webhooks.owedCount(id) > this.shares.ofEndpoint(id)) return true;
    }
    return false;
  }

  /**
   * Follows `ws`'s endpoint changes: a deleted or disabled endpoint has its unwritten attempts stopped, a re-pointed
   * one those to the old url cut; its idle connections close either way.
   */
  private watch(ws: Workspace): void {
    if (this.watched.has(ws)) return;
    this.watched.add(ws);
    ws.db.on('webhook_endpoint', (id, prev, next) => {
      if (next !== undefined && next.enabled && next.url === prev?.url) return;
      this.gone.delete(id); // its 410 is on record now (or it was deleted, or re-pointed)
      if (next !== undefined && next.enabled) this.cutOthers(id, next.url);
      else this.stopUnwritten(id);
      this.agents.forget(id);
      this.urls.delete(id);
    }, STATELESS);
  }

  /** Whether endpoint `id` answered 410 Gone and its disabling is being written. */
  private isGone(id: string): boolean {
    if (this.gone.size === 0) return false;
    const at = this.gone.get(id);
    if (at === undefined) return false;
    if (performance.now() - at < GONE_HOLD_MS) return true;
    this.gone.delete(id);
    return false;
  }

  /** Cuts the attempts of endpoint `id` to another URL than `url`, written or not. */
  private cutOthers(id: string, url: string): void {
    for (const f of this.flights.get(id) ?? []) if (f.url !== url) f.attempt.cut();
  }

  /** Stops the attempts of endpoint `id` not yet written. */
  private stopUnwritten(id: string): void {
    for (const f of this.flights.get(id) ?? []) f.attempt.stop();
  }

  /** Sends `d`: a pending record, or `o`, an owed delivery never tried, as its record would be. */
  private launch(ws: Workspace, d: DeliveryRec, o: Owed | undefined): void {
    this.shares.take(ws.id, d.endpointId);
    this.running.add(d.id);
    let held = true;
    // The slot is freed when the answer came: the next delivery need not wait for the outcome's write.
    const release = (): void => {
      if (!held) return;
      held = false;
      this.shares.give(ws.id, d.endpointId);
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
      this.opts.logger.error('webhook delivery attempt failed unexpectedly',
        { workspaceId: ws.id, deliveryId: d.id, error: (e as Error).message });
      end();
    };
    try { this.attempt(ws, d, o, release, end, failed); } catch (e) { failed(e); }
  }

  /** One attempt of `d`; then `release` its slot, {@link settle} it, `end` once written, `failed` on a bug. */
  private attempt(ws: Workspace, d: DeliveryRec, o: Owed | undefined, release: () => void, end: () => void,
    failed: (e: unknown) => void): void {
    const endpoint = ws.get('webhook_endpoint', d.endpointId);
    if (endpoint === undefined) return end(); // deleted: its deliveries went with it
    const unmade = (error: string): AttemptOutcome => ({ ok: false, status: null, error, durationMs: 0 });
    if (!endpoint.enabled) return this.settle(ws, d, o, unmade(DISABLED_ERROR), endpoint.url, end, true);
    // The event's view as its text: an event on disk is held as bytes, sent without a parse (docs/storage.md#memory).
    const body = eventViewBytes(ws.db, d.eventId);
    if (body === undefined) return this.settle(ws, d, o, unmade(EVENT_GONE_ERROR), endpoint.url, end, true);
    let secrets: string[];
    const context = secretContext(ws.id, endpoint.id);
    try { secrets = this.signing.of(endpoint, context, this.opts.clock.now()); } catch (e) {
      if (!(e instanceof SecretError)) throw e;
      const error = "the endpoint's secret cannot be decrypted (its master key is missing); rotate the secret";
      return this.settle(ws, d, o, unmade(error), endpoint.url, end);
    }
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const url = endpoint.url;
    let parsed = this.urls.get(endpoint.id);
    if (parsed === undefined || parsed.href !== url) {
      try { parsed = new URL(url); } catch { return this.settle(ws, d, o, unmade(
        'the endpoint URL is not a valid URL'), url, end); }
      this.urls.set(endpoint.id, parsed);
    }
    const headers = signatureHeaders(secrets, d.eventId, Math.floor(this.opts.clock.now() / 1000), bytes);
    const c = this.opts.config;
    const settings = { timeoutMs: c.webhookTimeoutMs, allowPrivate: c.webhookAllowPrivate, agents: this.agents };
    const attempt = startAttempt(endpoint.id, parsed, bytes, headers, settings);
    const flight = { url, attempt };
    let set = this.flights.get(endpoint.id);
    if (set === undefined) this.flights.set(endpoint.id, (set = new Set()));
    set.add(flight);
    void attempt.outcome.then((outcome) => {
      set.delete(flight);
      if (set.size === 0 && this.flights.get(endpoint.id) === set) this.flights.delete(endpoint.id);
      // 410 Gone disables the endpoint (docs/api.md#webhook-disabling): what is not written yet stops now.
      if (outcome.status === 410 && ws.get('webhook_endpoint', endpoint.id)?.url === url) {
        this.gone.set(endpoint.id, performance.now());
        this.stopUnwritten(endpoint.id);
      }
      release();
      // Stopped unwritten: the delivery stays as it is, for the next pass to see the endpoint's new state.
      if (outcome.notSent) return end();
      try { this.settle(ws, d, o, outcome, url, end); } catch (e) { failed(e); }
    });
  }

  /**
   * Puts the outcome of `sent`'s attempt to `url` in this turn's batch ({@link batchOf}; docs/api.md#webhook-retries)
   * with the endpoint's failure record (docs/api.md#webhook-disabling); `o`, if owed, is then recorded. Nothing is
   * written when the url or the delivery changed meanwhile or the dispatcher stops. `end`: once written, or at once.
   */
  private settle(
    ws: Workspace, sent: DeliveryRec, o: Owed | undefined, outcome: AttemptOutcome, url: string, end: () => void,
      final = false,
  ): void {
    if (this.stopped) return end();
    // An outcome counts only for the URL it was sent to: after a change of url the delivery is sent to the new one
    // (docs/api.md#webhook-deliveries).
    if (ws.get('webhook_endpoint', sent.endpointId)?.url !== url) return end();
    // A delivery still owed has no record — unless a disabling being written put one (that one wins; if its write
    // failed, there is none and the delivery is owed as before).
    let cur: DeliveryRec | undefined;
    if (o !== undefined && ws.webhooks.isOwed(o)) {
      cur = o.closing ? ws.get('webhook_delivery', sent.id) : undefined;
      if (cur === undefined) { o.closing = false; cur = sent; }
    } else cur = ws.get('webhook_delivery', sent.id);
    // Disabled while this attempt was on the wire: the disabling failed the delivery unattempted; the attempt was made,
    // so its outcome is what the record says.
    const cutShort = cur !== undefined && cur.status === 'failed' && cur.error === DISABLED_ERROR
      && outcome.error !== DISABLED_ERROR;
    if (cur === undefined || (cur.status !== 'pending' && !cutShort) || cur.attempt !== sent.attempt) return end();
    if (cutShort) final = true;
    const now = this.opts.clock.now();
    // Found disabled before it was sent: not an attempt (as the disabling's own records say).
    const attempt = outcome.error === DISABLED_ERROR ? cur.attempt : cur.attempt + 1;
    const gone = outcome.status === 410;
    const at = outcome.ok || gone || final ? null
      : nextAttemptTime(attempt, this.opts.config.webhookRetrySchedule, now, this.random(),
        retryAfterAt(outcome.retryAfter, now));
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
      if (b === undefined) batch.delivered.set(cur.endpointId,
        (b = { rec: { id: '', endpointId: cur.endpointId, createdAt: cur.createdAt, deliveries: [] }, ids: [] }));
      b.rec.deliveries.push([cur.eventId, cur.eventType, cur.createdAt, outcome.status!, outcome.durationMs]);
      b.ids.push(cur.id);
      if (cur.createdAt > b.rec.createdAt) b.rec.createdAt = cur.createdAt;
    } else batch.tx.put('webhook_delivery', next.id, next, deliveryRecJson(next));
    if (o !== undefined && cur === sent) {
      ws.webhooks.recorded(o);
      batch.cursors.add(o.endpointId);
    }
    const endpoint = ws.get('webhook_endpoint', cur.endpointId);
    if (endpoint !== undefined && outcome.error !== DISABLED_ERROR) {
      recordOutcome(ws, batch.tx, endpoint, next, gone, now, this.opts.logger);
    }
    const fields = () => ({ workspaceId: ws.id, endpointId: cur.endpointId, deliveryId: cur.id, eventId: cur.eventId,
      attempt, status: next.status, responseStatus: outcome.status, error: outcome.error });
    // Once the batch is written (or failed): one callback per outcome, no promise of its own.
    batch.after.push((err) => {
      if (err === null) {
        this.opts.onOutcome?.(next.status);
        if (this.holdUntil.size > 0) this.holdUntil.delete(cur.id);
        if (!outcome.ok) this.opts.logger.info('webhook delivery attempt failed', fields());
        else if (this.opts.logger.enabled('debug')) this.opts.logger.debug('webhook delivered', fields());
      } else {
        this.holdUntil.set(cur.id, now + WRITE_RETRY_MS);
        if (o !== undefined && cur === sent) ws.webhooks.reowe(o);
        this.opts.logger.warn('could not write a webhook delivery outcome; the attempt will be made again',
          { ...fields(), writeError: err.message });
      }
      end();
    });
  }

  /**
   * The transaction this callback's outcomes go into for `ws`, committed in a microtask as the callback ends: before
   * any request can change the same records, so the log keeps memory's order. `after`s run once it is written or not.
   */
  private batchOf(ws: Workspace): Batch {
    const open = this.batches.get(ws);
    if (open !== undefined) return open;
    const tx = ws.db.begin();
    // Outcomes ride with the next batch of request writes (docs/storage.md#group-commit): lost in a crash, an attempt
    // is made again (at least once, docs/api.md#webhook-deliveries).
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
      // Cursors move with their owed deliveries' records, at most every CURSOR_EVERY_MS (a lagging one only makes a
      // restart look at more events).
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
          try { f(err); } catch (e) { this.opts.logger.error('webhook outcome bookkeeping failed', {
            workspaceId: ws.id, error: (e as Error).message }); }
        }
        this.unsettled--;
        this.notifyIdle();
      };
      ws.db.commit(tx).then(() => done(null), (e: unknown) => done(e as Error));
    });
    return batch;
  }
}
