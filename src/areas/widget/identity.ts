/**
 * A workspace's identity secret (docs/api.md#identity-verification): `svci_` + 32 random bytes in base62, made by
 * `cli workspace identity-secret`, shown once, stored sealed with the key file (src/core/secrets.ts) because the server
 * needs it back in clear to verify the HMAC of visitors' identity tokens.
 */
import { randomBase62 } from '../../auth/keys.js';
import { iso } from '../../core/clock.js';
import type { SecretBox } from '../../core/secrets.js';
import type { Db } from '../../store/db.js';
import type { WidgetRecords } from './model.js';

export const IDENTITY_SECRET_PREFIX = 'svci_';

const context = (workspaceId: string): string => `${workspaceId}/identity-secret`;

/** The clear identity secret of workspace `ws`, or undefined when none was made. */
export function identitySecret(ws: { id: string; get(type: 'widget_identity', id: string): WidgetRecords[
  'widget_identity'] | undefined }, secrets: SecretBox): string | undefined {
  const rec = ws.get('widget_identity', 'secret');
  return rec === undefined ? undefined : secrets.open(rec.sealed, context(ws.id));
}

/**
 * Makes a new identity secret for workspace `workspaceId` (replacing the one before: tokens signed with it stop
 * verifying), durable when the promise resolves; returns it in clear, to be shown once.
 */
export async function rotateIdentitySecret(db: Db<WidgetRecords>, workspaceId: string, secrets: SecretBox,
  now: number): Promise<{ secret: string; createdAt: string }> {
  const secret = IDENTITY_SECRET_PREFIX + randomBase62(32);
  const tx = db.begin();
  const createdAt = iso(now);
  tx.put('widget_identity', 'secret', { id: 'secret', sealed: secrets.seal(secret, context(workspaceId)), createdAt });
  await db.commit(tx);
  return { secret, createdAt };
}
