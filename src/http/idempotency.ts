/**
 * `Idempotency-Key` on POST (docs/api.md#idempotency): scoped to the API key and kept 24 h. The same key with the same
 * request replays the stored answer with `Idempotent-Replayed: true`; a different request is a 422, one while the first
 * runs a 409. Only 2xx answers are stored, in the same transaction as the records they describe.
 */
import type { IncomingMessage } from 'node:http';
import { createHash } from 'node:crypto';
import { ApiError, invalid } from './errors.js';
import { iso } from '../core/clock.js';
import type { KeyRec } from '../store/store.js';
import type { Db, Tx } from '../store/db.js';
import type { Result } from './route.js';

/** A stored answer (record type `idem`, id = SHA-256 of the API key id and the header). */
export interface IdemRec { keyId: string; fingerprint: string; status: number; body: unknown; createdAt: string }
/** The record types of idempotency. */
export interface IdempotencyRecords { idem: IdemRec }

export interface IdempotencyTicket {
  /** A stored answer to send again, when this is a retry. */
  replay?: Result;
  /** Adds the answer to `tx` (call before committing). */
  store(tx: Tx<IdempotencyRecords>, result: Result, now: number): void;
  /** Releases the in-progress mark. */
  end(): void;
}

const HEADER_VALUE = /^[\x20-\x7e]{1,255}$/;

/** Idempotency records are kept 24 h (docs/api.md#idempotency); compaction drops older ones. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/** SHA-256 (hex) of `METHOD path`, a line feed and the raw body `chunks`: what identifies a request. */
export function requestFingerprint(requestLine: string, chunks: readonly Uint8Array[] = []): string {
  const h = createHash('sha256').update(`${requestLine}\n`);
  for (const c of chunks) h.update(c);
  return h.digest('hex');
}

/** Registers on `db` that compaction drops idempotency records older than 24 h (`now`: the clock, ms). */
export function expireIdempotency(db: Db<IdempotencyRecords>, now: () => number): void {
  db.retain('idem', (rec) => now() - Date.parse(rec.createdAt) < IDEMPOTENCY_TTL_MS);
}

export class Idempotency {
  private readonly running = new Set<string>();

  /**
   * Looks up the request's `Idempotency-Key`; null when it has none. `fingerprintOf` is called only when it has.
   * @throws ApiError 400 (malformed key), 409 `idempotency_in_progress`, 422 `idempotency_key_reused`.
   */
  begin(req: IncomingMessage, ws: { readonly db: Db<IdempotencyRecords> }, key: KeyRec, fingerprintOf: () => string,
    now: number): IdempotencyTicket | null {
    const header = req.headers['idempotency-key'];
    if (header === undefined) return null;
    if (typeof header !== 'string' || !HEADER_VALUE.test(header)) throw invalid(
      'Idempotency-Key must be 1 to 255 printable ASCII characters', 'header');
    const id = createHash('sha256').update(`${key.id}\n${header}`).digest('hex');
    const fingerprint = fingerprintOf();
    if (this.running.has(id)) throw new ApiError('idempotency_in_progress');
    const prior = ws.db.get('idem', id);
    if (prior && now - Date.parse(prior.createdAt) < IDEMPOTENCY_TTL_MS) {
      if (prior.fingerprint !== fingerprint) throw new ApiError('idempotency_key_reused');
      return { replay: { status: prior.status, body: prior.body, headers: { 'Idempotent-Replayed': 'true' } },
        store() {}, end() {} };
    }
    this.running.add(id);
    return {
      store(tx, result, at) {
        const body = result.replayBody === undefined ? result.body : result.replayBody;
        tx.put('idem', id, { keyId: key.id, fingerprint, status: result.status, body,
          createdAt: iso(at) } satisfies IdemRec);
      },
      end: () => { this.running.delete(id); },
    };
  }
}
