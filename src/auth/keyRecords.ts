/**
 * Making and revoking API key records (docs/security.md#api-keys) for the admin CLI and the settings area's keys page
 * alike: only the SHA-256 of the key is stored, with its first 12 characters as `prefix`.
 */
import { newId } from '../core/ids.js';
import { iso } from '../core/clock.js';
import { InvalidInputError, NotFoundError } from '../core/errors.js';
import { isDateTime } from '../http/schema.js';
import { generateApiKey, hashKey, parseScopes } from './keys.js';
import type { KeyRec, Store } from '../store/store.js';

/** What a new key is made from; `scopes` is `*` or a comma-separated list (default `*`). */
export interface NewKeyInput { workspace?: string; name?: string; scopes?: string; expiresAt?: string }

/**
 * Validates `a` and makes the record and the secret, not yet stored (the caller puts `rec` in a system-log
 * transaction). `now`: the clock's time, ms.
 * @throws NotFoundError for an unknown workspace; InvalidInputError about `scopes`, `expiresAt` or `name`.
 */
export function makeKey(store: Store, now: number, a: NewKeyInput): { rec: KeyRec; key: string } {
  if (!a.workspace || !store.workspaceRec(a.workspace)) throw new NotFoundError(
    { entity: 'workspace', id: a.workspace ?? '' });
  let scopes: string[];
  try { scopes = parseScopes(a.scopes ?? '*'); } catch (e) { throw new InvalidInputError(['scopes'],
    `is invalid: ${(e as Error).message}`, undefined, { cause: e }); }
  let expiresAt: string | null = null;
  if (a.expiresAt !== undefined) {
    if (!isDateTime(a.expiresAt)) throw new InvalidInputError(['expiresAt'],
      'must be an ISO 8601 date-time such as 2027-01-01T00:00:00Z');
    expiresAt = iso(Date.parse(a.expiresAt));
  }
  if (a.name !== undefined && a.name.length > 200) throw new InvalidInputError(['name'],
    'must be at most 200 characters');
  const key = generateApiKey();
  const rec: KeyRec = {
    id: newId(), workspaceId: a.workspace, name: a.name ?? null, prefix: key.slice(0, 12), hash: hashKey(key), scopes,
    createdAt: iso(now), expiresAt, revokedAt: null, lastUsedAt: null,
  };
  return { rec, key };
}

/**
 * Revokes key `id` (one already revoked is returned as it is); durable when the promise resolves, and its next request
 * answers 401.
 * @throws NotFoundError for an unknown key.
 */
export async function revokeKey(store: Store, now: number, id: string): Promise<KeyRec> {
  const k = store.key(id);
  if (!k) throw new NotFoundError({ entity: 'key', id });
  if (k.revokedAt) return k;
  const next: KeyRec = { ...k, revokedAt: iso(now) };
  const tx = store.system.begin();
  tx.put('key', id, next);
  await store.system.commit(tx);
  return next;
}
