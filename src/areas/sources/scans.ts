/**
 * Source scans, the ingestion that create and rescan run (docs/sources.md#processing-and-failures,
 * docs/decisions.md#processing-is-visible-and-durable). A scan commits the source as `processing` first (visible and
 * durable while ingested; a restart fails it, ./state.ts), then ingests and puts the outcome in the request's
 * transaction (docs/decisions.md#one-write-path-per-request). At most one scan of a source runs at a time: a second is
 * a 409.
 */
import { ApiError } from '../../http/errors.js';
import type { Ctx } from '../../domain/route.js';
import { iso } from '../../core/clock.js';
import { nextTurn } from '../../core/turns.js';
import type { Workspace } from '../../domain/workspace.js';
import type { Config } from '../../core/config.js';
import type { Logger } from '../../core/logger.js';
import { ingest, type Ingested, type IngestRequest } from '../../ingest/ingest.js';
import type { Analyzer } from '../../ingest/analyze.js';
import { IngestError } from '../../ingest/types.js';
import { FetchError } from '../../ingest/fetch/fetch.js';
import type { SourceType } from '../../ingest/kinds.js';
import type { Source } from './model.js';
import { applyCredentialOrigins } from './credentials.js';
import type { SourceIndexRec } from '../../ingest/types.js';

/** The name of a source whose document gave none and which has no URL. */
export const UNTITLED = 'Untitled source';

/**
 * The name a source takes when none is given: the last one derived from its document, else (a record stored before
 * derived names were kept, or one that never ingested) its URL's host, else `Untitled source` (docs/sources.md#naming).
 */
export function defaultName(src: Source): string {
  if (src.derivedName !== undefined) return src.derivedName;
  if (!src.nameGiven) return src.name;
  return src.inputUrl ? new URL(src.inputUrl).host : UNTITLED;
}

/** Turns an ingestion failure into the source's `error` text; unexpected errors are logged, not shown. */
function failureMessage(err: unknown, logger: Logger, requestId: string): string {
  if (err instanceof IngestError || err instanceof FetchError) return err.message;
  logger.error('ingestion failed unexpectedly', { requestId, error: (err as Error)?.stack ?? String(err) });
  return 'the content could not be ingested because of an internal parser error';
}

export interface ScanDeps { config: Config; logger: Logger; analyzer: Analyzer }

/** What a scan leaves: the source as stored, and its ingestion output (the previous one when this scan failed). */
export interface ScanResult { src: Source; idx?: SourceIndexRec }

/** The scans of every workspace's sources: which ones run, and how one runs. */
export class SourceScans {
  /** `workspaceId/sourceId` of every scan running. */
  private readonly running = new Set<string>();

  constructor(private readonly deps: ScanDeps) {}

  /** Whether a scan of source `sourceId` of `ws` is running. */
  isRunning(ws: Workspace, sourceId: string): boolean {
    return this.running.has(`${ws.id}/${sourceId}`);
  }

  /**
   * Scans `src`, whose `processing` record the caller put in `ctx.tx()`: commits it (marked running first, so a rescan
   * arriving meanwhile gets its 409), ingests `req`, and puts the outcome in `ctx.tx()` for the request to commit.
   * @throws ApiError 409 `conflict` when the source was deleted while it was ingested (nothing of the ingestion is
   *   stored then); the errors of the first commit.
   */
  async scan(ctx: Ctx<unknown, unknown>, src: Source, req: IngestRequest): Promise<ScanResult> {
    const key = `${ctx.ws.id}/${src.id}`;
    this.running.add(key);
    let out: Ingested | undefined;
    let error: string | null = null;
    // A failure after detection keeps the detected type (docs/sources.md#failed-sources).
    let failedAs: SourceType | undefined;
    try {
      await ctx.commit();
      try { out = await ingest(req, { ...this.ingestOptions(), queue: ctx.ws.id }); } catch (e) {
        error = failureMessage(e, this.deps.logger, ctx.requestId);
        if (e instanceof IngestError) failedAs = e.sourceType;
      }
    } finally { this.running.delete(key); }
    // Storing the result (search postings, the log line) is a main-thread step of its own.
    await nextTurn();
    return this.store(ctx, src, out, error, failedAs);
  }

  private ingestOptions() {
    const { config, analyzer } = this.deps;
    return {
      fetch: { timeoutMs: config.sourceFetchTimeoutMs, maxBytes: config.sourceFetchMaxBytes,
        allowPrivate: config.sourceFetchAllowPrivate },
      crawlMaxPages: config.sourceCrawlMaxPages, githubApiUrl: config.githubApiUrl, analyzer,
    };
  }

  /** Puts a scan's outcome in `ctx.tx()`: status, error, type, name, and on success the output with its postings. */
  private store(ctx: Ctx<unknown, unknown>, src: Source, out: Ingested | undefined, error: string | null,
    failedAs: SourceType | undefined): ScanResult {
    const current = ctx.ws.get('source', src.id);
    // A DELETE that came in while this ran won: the answer is a conflict with that change, and nothing of this
    // ingestion is stored.
    if (!current) throw new ApiError('conflict', 'the source was deleted while it was being ingested');
    const host = src.inputUrl ? new URL(src.inputUrl).host : undefined;
    const derivedName = out?.title?.trim().slice(0, 200) || host || defaultName(current);
    let next: Source = {
      ...current, status: out ? 'ready' : 'failed', error, updatedAt: iso(ctx.now),
      type: out ? out.type : failedAs ?? current.type,
      derivedName,
      name: current.nameGiven ? current.name : derivedName,
    };
    // A credential goes only where it was bound: a new server origin clears it (credentials.ts).
    if (out) next = applyCredentialOrigins(next, out.record.serverUrl);
    const tx = ctx.tx();
    tx.put('source', src.id, next);
    if (!out) return { src: next, idx: ctx.ws.get('source_index', src.id) };
    tx.put('source_index', src.id, out.record, out.recordJson, out.prepared);
    return { src: next, idx: out.record };
  }
}
