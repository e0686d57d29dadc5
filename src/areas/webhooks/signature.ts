/** Webhook signatures (docs/api.md#webhook-signatures), the Standard Webhooks scheme, with node:crypto alone. */
import { createHmac } from 'node:crypto';
import { SecretError, type SecretBox } from '../../core/secrets.js';
import type { WebhookEndpointRec } from './model.js';

/** What every endpoint secret starts with. */
export const SECRET_PREFIX = 'whsec_';

/**
 * The `webhook-signature` value of one secret (docs/api.md#webhook-signatures): `v1,` + base64 HMAC-SHA256, keyed by
 * the base64-decoded part of `secret` after `whsec_`, of `{id}.{timestamp}.{body}` (timestamp in unix seconds).
 */
export function sign(secret: string, id: string, timestamp: number, body: string | Uint8Array): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}

/** The three Standard Webhooks headers of one delivery: its id, time (unix seconds) and the signature of every secret
 * in `secrets`, space-separated. */
export function signatureHeaders(secrets: readonly string[], id: string, timestamp: number,
  body: string | Uint8Array): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((x) => sign(x, id, timestamp, body)).join(' '),
  };
}

/**
 * The secrets that sign now for an endpoint record: its own, and the previous one within its 24 hours
 * (docs/api.md#webhook-signatures). Opened once per record: a rotation or any change puts a new record, so a cached
 * pair never outlives the secrets it was opened from; the overlap is checked on each call.
 */
export class SigningSecrets {
  private readonly opened = new WeakMap<WebhookEndpointRec, {
    current: string[]; both: string[]; previousUntil: number }>();

  constructor(private readonly secrets: SecretBox) {}

  /** The secrets of endpoint `e`, sealed for `context`, at `now` (ms). @throws SecretError when the current one cannot
   * be opened. */
  of(e: WebhookEndpointRec, context: string, now: number): string[] {
    let o = this.opened.get(e);
    if (o === undefined) {
      const current = [this.secrets.open(e.secret, context)];
      o = { current, both: current, previousUntil: -Infinity };
      if (e.previousSecret !== undefined) {
        try {
          o.both = [...current, this.secrets.open(e.previousSecret.sealed, context)];
          o.previousUntil = Date.parse(e.previousSecret.expiresAt);
        } catch (err) { if (!(err instanceof SecretError)) throw err; }
      }
      this.opened.set(e, o);
    }
    return now < o.previousUntil ? o.both : o.current;
  }
}
