/**
 * Reading a JSON request body (docs/api.md#request-bodies): `application/json` only, no `Content-Encoding`, a byte
 * limit counted while streaming, strict UTF-8, nesting at most 64 deep, and no `__proto__`/`constructor` keys.
 */
import type { IncomingMessage } from 'node:http';
import { ApiError, invalid } from './errors.js';
import { requestFingerprint } from './idempotency.js';
import { LARGE_BODY_BYTES, type BodyParser } from './largeBody.js';
import { nextTurn } from '../core/turns.js';

export const MAX_DEPTH = 64;
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor']);
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Thrown for a body over the limit; the connection is closed after the answer. */
export class BodyTooLargeError extends ApiError {
  constructor(limit: number) { super('payload_too_large', `the limit for this request is ${limit} bytes`, {
    Connection: 'close' }); }
}

/** The client closed the connection before its body arrived. */
export class ClientAbortError extends Error {}

/** The 400 for a request without the body its route requires (nothing sent, or zero bytes). */
export function bodyRequired(): ApiError {
  return invalid('a JSON body is required');
}

/** Checks the headers that decide whether a body may be read at all. @throws ApiError 413/415 */
export function validateBodyHeaders(req: IncomingMessage, limit: number): void {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  const [media, ...params] = type.split(';').map((x) => x.trim());
  if (media !== 'application/json') throw new ApiError('unsupported_media_type');
  for (const p of params) {
    if (p.startsWith('charset=') && p.slice(8).replace(/"/g, '') !== 'utf-8') throw new ApiError(
      'unsupported_media_type', 'the only charset accepted is utf-8');
  }
  const enc = req.headers['content-encoding'];
  if (enc !== undefined && enc.toLowerCase() !== 'identity') throw new ApiError('unsupported_media_type',
    'Content-Encoding is not supported; send the body uncompressed');
  const len = req.headers['content-length'];
  if (len !== undefined && Number(len) > limit) throw new BodyTooLargeError(limit);
}

/** A request's JSON body, read and parsed. */
export interface ReadBody {
  value: unknown;
  /** The JSON text of long top-level string members, when the body worker parsed it (else empty). */
  json: ReadonlyMap<string, Uint8Array>;
  /** The request's idempotency fingerprint (src/http/idempotency.ts), computed when asked. */
  fingerprint: () => string;
}

const NO_MEMBERS: ReadonlyMap<string, Uint8Array> = new Map();

/**
 * Reads and parses a JSON body of at most `limit` bytes; one over {@link LARGE_BODY_BYTES} goes to `parser` (a worker
 * thread), or without one is parsed in main-thread turns of its own. `requestLine` (`METHOD path`) goes into the
 * fingerprint. @throws ApiError 400/413, ClientAbortError
 */
export async function readJsonBody(req: IncomingMessage, limit: number, requestLine: string,
  parser?: BodyParser): Promise<ReadBody> {
  const { chunks, total } = await readBodyChunks(req, limit);
  if (total > LARGE_BODY_BYTES && parser) {
    const parsed = await parser.parse(chunks, requestLine);
    return { value: parsed.value, json: parsed.json, fingerprint: () => parsed.fingerprint };
  }
  const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total);
  const fingerprint = () => requestFingerprint(requestLine, [raw]);
  if (total <= LARGE_BODY_BYTES) return { value: parseJsonBody(raw), json: NO_MEMBERS, fingerprint };
  await nextTurn();
  const text = decodeBody(raw);
  await nextTurn();
  return { value: parseBodyText(text), json: NO_MEMBERS, fingerprint };
}

/**
 * Reads the raw body as the chunks it arrived in (a worker takes them unjoined), failing as soon as more than `limit`
 * bytes arrived. @throws BodyTooLargeError, ClientAbortError
 */
export function readBodyChunks(req: IncomingMessage, limit: number): Promise<{ chunks: Buffer[]; total: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let done = false;
    const finish = (err: Error | null) => {
      if (done) return;
      done = true;
      req.off('data', onData); req.off('end', onEnd); req.off('error', onError); req.off('aborted', onAborted);
      if (err) { req.pause(); reject(err); } else resolve({ chunks, total });
    };
    const onData = (c: Buffer) => {
      total += c.length;
      if (total > limit) { chunks.length = 0; finish(new BodyTooLargeError(limit)); return; }
      chunks.push(c);
    };
    const onEnd = () => finish(null);
    const onError = (e: Error) => finish(new ClientAbortError(e.message));
    const onAborted = () => finish(new ClientAbortError('request aborted'));
    req.on('data', onData); req.on('end', onEnd); req.on('error', onError); req.on('aborted', onAborted);
  });
}

/** Decodes and parses a JSON body and checks its structure. @throws ApiError 400 `invalid_request`. */
export function parseJsonBody(raw: Buffer): unknown {
  return parseBodyText(decodeBody(raw));
}

/** Strict UTF-8 decoding, {@link parseJsonBody}'s first half. @throws ApiError 400 (empty, invalid UTF-8). */
export function decodeBody(raw: Buffer): string {
  if (raw.length === 0) throw bodyRequired();
  try { return utf8.decode(raw); } catch (e) { throw invalid('the body is not valid UTF-8', 'body', e); }
}

/** JSON parsing and the structure check, {@link parseJsonBody}'s second half. @throws ApiError 400. */
export function parseBodyText(text: string): unknown {
  let value: unknown;
  try { value = JSON.parse(text); } catch (e) { throw invalid('the body is not valid JSON', 'body', e); }
  assertStructureWithinLimits(value);
  return value;
}

/** Iterative walk: depth ≤ {@link MAX_DEPTH}, no prototype-polluting keys. */
export function assertStructureWithinLimits(value: unknown): void {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > MAX_DEPTH) throw invalid(`the body is nested deeper than ${MAX_DEPTH} levels`);
    if (Array.isArray(v)) { for (const x of v) if (typeof x === 'object' && x !== null) stack.push([x,
      depth + 1]); continue; }
    for (const k of Object.keys(v)) {
      if (FORBIDDEN_KEYS.has(k)) throw invalid(`the key ${k} is not allowed`);
      const x = (v as Record<string, unknown>)[k];
      if (typeof x === 'object' && x !== null) stack.push([x, depth + 1]);
    }
  }
}
