/**
 * Webhook signatures (docs/api.md#webhook-signatures), the Standard Webhooks scheme: kept apart
 * from the rest of the area, with node:crypto alone, so the delivery worker thread signs
 * without loading the API's modules.
 */
import { createHmac } from 'node:crypto';

/** What every endpoint secret starts with. */
export const SECRET_PREFIX = 'whsec_';

/**
 * The `webhook-signature` value of one secret (docs/api.md#webhook-signatures): `v1,` + base64
 * HMAC-SHA256, keyed by the base64-decoded part of `secret` after `whsec_`, of
 * `{id}.{timestamp}.{body}` (timestamp in unix seconds).
 */
export function sign(secret: string, id: string, timestamp: number, body: string | Uint8Array): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}

/** The three Standard Webhooks headers of one delivery: its id, time (unix seconds) and the signature of every secret in `secrets`, space-separated. */
export function signatureHeaders(secrets: readonly string[], id: string, timestamp: number, body: string | Uint8Array): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((x) => sign(x, id, timestamp, body)).join(' '),
  };
}
