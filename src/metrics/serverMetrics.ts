/**
 * The server's series (docs/deployment.md#monitoring): what the pipeline, the log's group commit, the webhook
 * dispatcher and the ingestion jobs report through callbacks, and what a scrape reads (queues, streams, event-loop
 * delay, memory).
 * Labels hold route templates, methods, statuses and outcomes only: never an id or a workspace name.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { DISK_BUCKETS, Histogram, REQUEST_BUCKETS, header, sample } from './exposition.js';

/** The methods counted by name; any other (a token the parser accepted) is counted as `other`. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const OTHER = 'other';
/** How a webhook delivery attempt ended: delivered, to be tried again, or given up. */
export type WebhookOutcome = 'succeeded' | 'retrying' | 'failed';
/** How an ingestion job ended: analyzed; refused (the content cannot be ingested, or took too long); an error. */
export type IngestOutcome = 'succeeded' | 'failed' | 'error';
/**
 * Why a request reached a cell that does not own its workspace (docs/deployment.md#several-machines): a credential
 * or settings session it does not know, a docs slug it does not publish, or a workspace that moved away.
 */
export type NotOwnedReason = 'unknown_credential' | 'unknown_slug' | 'moved';
/** Told of each request answered for a workspace this server does not serve. */
export type NotOwned = (reason: NotOwnedReason) => void;

/** What a scrape reads from the running server; each may be absent while it starts. */
export interface MetricSources {
  /** Webhook deliveries owed (no attempt recorded yet) and retries waiting, over every workspace. */
  webhookQueue?: () => { owed: number; retries: number };
  /** Webhook delivery attempts on the wire. */
  webhooksInFlight?: () => number;
  /** Ingestion jobs waiting or running. */
  ingestQueue?: () => number;
  /** Event streams open. */
  streams?: () => number;
}

/** The event-loop monitor's timer, ms: it records each interval between its ticks, this included (subtracted). */
const LOOP_RESOLUTION_MS = 10;

/** The series of one route template: its duration histogram and its counts by method and status. */
interface RouteSeries { duration: Histogram; counts: Map<number, number> }

/** Every series of one server; {@link render} writes them in the exposition format. */
export class ServerMetrics {
  private readonly routes = new Map<string, RouteSeries>();
  private readonly commit = new Histogram(DISK_BUCKETS);
  private readonly fsync = new Histogram(DISK_BUCKETS);
  private readonly webhooks = new Map<WebhookOutcome, number>([['succeeded', 0], ['retrying', 0], ['failed', 0]]);
  private readonly ingest = new Map<IngestOutcome, number>([['succeeded', 0], ['failed', 0], ['error', 0]]);
  private readonly notOwnedCounts = new Map<NotOwnedReason, number>([['unknown_credential', 0], ['unknown_slug', 0],
    ['moved', 0]]);
  private readonly loop: IntervalHistogram;
  sources: MetricSources = {};

  constructor() {
    this.loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
    this.loop.enable();
  }

  /**
   * Counts one answered request: `method` as received, `template` the matched route's path template (`null`: no route
   * matched: `other`), `status` the answer's, `ms` from arrival to the answer written (milliseconds).
   */
  readonly request = (method: string, template: string | null, status: number, ms: number): void => {
    const t = template ?? OTHER;
    let r = this.routes.get(t);
    if (r === undefined) this.routes.set(t, (r = { duration: new Histogram(REQUEST_BUCKETS), counts: new Map() }));
    r.duration.observe(ms / 1000);
    const m = (METHODS as readonly string[]).indexOf(method);
    const key = status * 8 + (m === -1 ? METHODS.length : m);
    r.counts.set(key, (r.counts.get(key) ?? 0) + 1);
  };

  /** One group-commit batch of a log: written and synced in `commitSeconds`, of which `fsyncSeconds` (null: none). */
  readonly batch = (commitSeconds: number, fsyncSeconds: number | null): void => {
    this.commit.observe(commitSeconds);
    if (fsyncSeconds !== null) this.fsync.observe(fsyncSeconds);
  };

  /** One webhook delivery attempt whose outcome was written. */
  readonly webhookOutcome = (outcome: WebhookOutcome): void => {
    this.webhooks.set(outcome, this.webhooks.get(outcome)! + 1);
  };

  /** One request answered for a workspace this server does not serve. */
  readonly notOwned: NotOwned = (reason) => {
    this.notOwnedCounts.set(reason, this.notOwnedCounts.get(reason)! + 1);
  };

  /** One ingestion job ended. */
  readonly ingestOutcome = (outcome: IngestOutcome): void => {
    this.ingest.set(outcome, this.ingest.get(outcome)! + 1);
  };

  /** Stops the event-loop monitor. */
  close(): void { this.loop.disable(); }

  /**
   * The exposition text of every series. The event-loop delay gauges cover the time since the previous scrape (the
   * monitor is reset by each).
   */
  render(): string {
    const out: string[] = [];
    this.renderRequests(out);
    header(out, 'store_commit_duration_seconds', 'histogram',
      'Group-commit batches of the logs: from the write to durable (or written, with SYNC=none).');
    this.commit.write(out, 'store_commit_duration_seconds', []);
    header(out, 'store_fsync_duration_seconds', 'histogram',
      'The fdatasync of each batch (with O_DSYNC, its write); none with SYNC=none.');
    this.fsync.write(out, 'store_fsync_duration_seconds', []);
    header(out, 'webhook_deliveries_total', 'counter', 'Webhook delivery attempts by outcome, once written.');
    for (const [o, n] of this.webhooks) sample(out, 'webhook_deliveries_total', [['outcome', o]], n);
    const s = this.sources;
    const q = s.webhookQueue?.() ?? { owed: 0, retries: 0 };
    header(out, 'webhook_deliveries_queued', 'gauge',
      'Webhook deliveries waiting: owed (no attempt recorded yet) and retry (a retry scheduled).');
    sample(out, 'webhook_deliveries_queued', [['state', 'owed']], q.owed);
    sample(out, 'webhook_deliveries_queued', [['state', 'retry']], q.retries);
    header(out, 'webhook_deliveries_in_flight', 'gauge', 'Webhook delivery attempts on the wire.');
    sample(out, 'webhook_deliveries_in_flight', [], s.webhooksInFlight?.() ?? 0);
    header(out, 'ingest_jobs_total', 'counter', 'Ingestion jobs by outcome.');
    for (const [o, n] of this.ingest) sample(out, 'ingest_jobs_total', [['outcome', o]], n);
    header(out, 'ingest_jobs_queued', 'gauge', 'Ingestion jobs waiting for a worker or running.');
    sample(out, 'ingest_jobs_queued', [], s.ingestQueue?.() ?? 0);
    header(out, 'requests_not_owned_total', 'counter', 'Requests for a workspace this server does not serve: an '
      + 'unknown credential or session, an unknown docs slug, or a workspace moved to another cell.');
    for (const [r, n] of this.notOwnedCounts) sample(out, 'requests_not_owned_total', [['reason', r]], n);
    header(out, 'event_streams_open', 'gauge', 'Event streams (text/event-stream answers) open.');
    sample(out, 'event_streams_open', [], s.streams?.() ?? 0);
    this.renderProcess(out);
    return out.join('\n') + '\n';
  }

  private renderRequests(out: string[]): void {
    header(out, 'http_requests_total', 'counter', 'Requests answered, by route template, method and status.');
    for (const [route, r] of this.routes) {
      for (const [key, n] of r.counts) {
        const m = key % 8;
        const method = m < METHODS.length ? METHODS[m] : OTHER;
        const status = String((key - m) / 8);
        sample(out, 'http_requests_total', [['route', route], ['method', method], ['status', status]], n);
      }
    }
    header(out, 'http_request_duration_seconds', 'histogram',
      'From the request\'s arrival to its answer written, by route template.');
    for (const [route, r] of this.routes) r.duration.write(out, 'http_request_duration_seconds', [['route', route]]);
  }

  private renderProcess(out: string[]): void {
    const l = this.loop;
    const s = (ns: number) => (Number.isFinite(ns) && l.count > 0 ? Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS) / 1000
      : 0);
    for (const [name, help, v] of [
      ['nodejs_eventloop_delay_p50_seconds', 'Event-loop delay, median since the previous scrape.',
        s(l.percentile(50))],
      ['nodejs_eventloop_delay_p99_seconds', 'Event-loop delay, 99th percentile since the previous scrape.',
        s(l.percentile(99))],
      ['nodejs_eventloop_delay_max_seconds', 'Event-loop delay, maximum since the previous scrape.', s(l.max)],
    ] as const) { header(out, name, 'gauge', help); sample(out, name, [], v); }
    l.reset();
    const mem = process.memoryUsage();
    for (const [name, help, v] of [
      ['process_resident_memory_bytes', 'Resident set size.', mem.rss],
      ['nodejs_heap_size_total_bytes', 'V8 heap allocated.', mem.heapTotal],
      ['nodejs_heap_size_used_bytes', 'V8 heap in use.', mem.heapUsed],
      ['nodejs_external_memory_bytes', 'Memory of C++ objects bound to JavaScript (Buffers among them).', mem.external],
    ] as const) { header(out, name, 'gauge', help); sample(out, name, [], v); }
  }
}
