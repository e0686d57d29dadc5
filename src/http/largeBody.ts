/**
 * Large JSON request bodies are parsed on a worker thread (docs/api.md#request-bodies), so a 2 MB paste does not stall
 * other requests. Chunks are transferred, not copied; the worker also returns the UTF-8 JSON text of each long
 * top-level string member, for `Tx.put`'s `json`.
 */
import type { Worker } from 'node:worker_threads';
import { ApiError, type ErrorCode } from './errors.js';
import { startWorker } from '../core/workerThread.js';

/** Bodies longer than this (bytes) go to the worker; shorter ones parse faster than a round trip. */
export const LARGE_BODY_BYTES = 256 * 1024;
/** Top-level string members at least this long (UTF-16 units) come back with their JSON text. */
export const MEMBER_JSON_MIN = 64 * 1024;

/** A parsed body: the value, its long top-level string members' JSON text by name, and the fingerprint. */
export interface ParsedBody { value: unknown; json: ReadonlyMap<string, Uint8Array>; fingerprint: string }

/** Parses request bodies off the main thread. */
export interface BodyParser {
  /**
   * Joins, decodes and parses `chunks` with `parseJsonBody`'s checks (src/http/body.ts); the chunks are moved to the
   * worker: the caller must not use them again. `requestLine` (`METHOD path`) goes into the fingerprint.
   * @throws ApiError 400 `invalid_request` as `parseJsonBody` does; Error when the worker dies.
   */
  parse(chunks: Buffer[], requestLine: string): Promise<ParsedBody>;
  close(): Promise<void>;
}

/** The messages of the body worker (src/http/largeBodyWorker.ts). */
export type BodyTask = { id: number; chunks: Uint8Array[]; requestLine: string };
export type BodyReply =
  | { id: number; ok: true; value: unknown; json: Array<[string, Uint8Array]>; fingerprint: string }
  | { id: number; ok: false; code: ErrorCode; detail: string | undefined }
  | { id: number; ok: false; code: null; message: string };

interface Job { id: number; resolve: (p: ParsedBody) => void; reject: (e: Error) => void }

/** One worker thread, started on the first large body; one that dies fails its jobs and is started again. */
export class WorkerBodyParser implements BodyParser {
  private worker: Worker | null = null;
  private readonly jobs = new Map<number, Job>();
  private nextId = 1;
  private closed = false;

  /** `maxHeapMb`: the worker's old-generation cap (a 16 MiB body needs well under 256). */
  constructor(private readonly maxHeapMb = 512) {}

  parse(chunks: Buffer[], requestLine: string): Promise<ParsedBody> {
    if (this.closed) return Promise.reject(new Error('the body parser is closed'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.jobs.set(id, { id, resolve, reject });
      // A chunk owning its whole ArrayBuffer is transferred; a view of a larger one is copied.
      const transfer: ArrayBuffer[] = [];
      const moved = chunks.map((c) => {
        const owns = c.byteOffset === 0 && c.byteLength === c.buffer.byteLength && c.buffer instanceof ArrayBuffer &&
          !transfer.includes(c.buffer);
        const b = owns ? c : new Uint8Array(c);
        transfer.push(b.buffer as ArrayBuffer);
        return b;
      });
      (this.worker ??= this.spawn()).postMessage({ id, chunks: moved, requestLine } satisfies BodyTask, transfer);
    });
  }

  private spawn(): Worker {
    const w = startWorker(import.meta.url, 'largeBodyWorker',
      { resourceLimits: { maxOldGenerationSizeMb: this.maxHeapMb } });
    w.on('message', (m: BodyReply) => {
      const job = this.jobs.get(m.id);
      if (!job) return;
      this.jobs.delete(m.id);
      if (m.ok) job.resolve({ value: m.value, json: new Map(m.json), fingerprint: m.fingerprint });
      else if (m.code !== null) job.reject(new ApiError(m.code, m.detail));
      else job.reject(new Error(m.message));
    });
    const died = (err: Error) => {
      if (this.worker !== w) return;
      this.worker = null;
      void w.terminate();
      for (const j of this.jobs.values()) j.reject(err);
      this.jobs.clear();
    };
    w.on('error', died);
    w.on('exit', (code) => died(new Error(`the body worker exited with code ${code}`)));
    return w;
  }

  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = null;
    for (const j of this.jobs.values()) j.reject(new Error('the server is shutting down'));
    this.jobs.clear();
    await w?.terminate();
  }
}
