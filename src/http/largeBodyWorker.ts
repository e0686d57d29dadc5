/**
 * The body worker's entry (src/http/largeBody.ts): parses each body with the main thread's rules (src/http/body.ts) and
 * answers the value, its long top-level string members' JSON text (transferred) and the fingerprint.
 */
import { parentPort } from 'node:worker_threads';
import { parseJsonBody } from './body.js';
import { ApiError } from './errors.js';
import { requestFingerprint } from './idempotency.js';
import { MEMBER_JSON_MIN, type BodyReply, type BodyTask } from './largeBody.js';

const encoder = new TextEncoder();

parentPort?.on('message', ({ id, chunks, requestLine }: BodyTask) => {
  try {
    const fingerprint = requestFingerprint(requestLine, chunks);
    const value = parseJsonBody(Buffer.concat(chunks));
    const json: Array<[string, Uint8Array]> = [];
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) if (typeof v === 'string' && v.length >= MEMBER_JSON_MIN) json.push(
        [k, encoder.encode(JSON.stringify(v))]);
    }
    parentPort!.postMessage({ id, ok: true, value, json, fingerprint } satisfies BodyReply,
      json.map(([, b]) => b.buffer as ArrayBuffer));
  } catch (e) {
    const reply: BodyReply = e instanceof ApiError
      ? { id, ok: false, code: e.code, detail: e.detail }
      : { id, ok: false, code: null, message: (e as Error)?.stack ?? String(e) };
    parentPort!.postMessage(reply);
  }
});
