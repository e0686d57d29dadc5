/**
 * Settings-area users and their activation links (docs/web.md#users). A user belongs to one
 * workspace; an email is unique on the whole server (sign-in is by email alone, so one email
 * must name one user), compared without letter case. A user is made without a password and
 * gets a link, valid 24 h and usable once, that sets it; the link's token is 32 random bytes
 * (43 base62 characters), and only its SHA-256 is stored.
 */
import { newId } from '../core/ids.js';
import { iso } from '../core/clock.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../core/errors.js';
import { hashKey, randomBase62 } from '../auth/keys.js';
import type { ActivationRec, Store, SystemRecords, UserRec, UserRole } from '../store/store.js';
import type { Tx } from '../store/db.js';
import { PASSWORD_MAX, PASSWORD_MIN, type Passwords } from './passwords.js';

/** How long an activation link is valid (docs/web.md#users). */
export const ACTIVATION_TTL_MS = 24 * 3600_000;
/** The email of the user the first start makes (docs/web.md#users). */
export const OWNER_EMAIL = 'owner@localhost';
/** The path of the activation page; the link is `PUBLIC_URL` + this + `?token=…`. */
export const ACTIVATE_PATH = '/settings/activate';

const TOKEN = /^[0-9A-Za-z]{43}$/;
/** An email as the settings area accepts it: something@something, no spaces or controls, ≤ 320 characters. */
export const EMAIL = /^[^\s@\x00-\x1f\x7f]{1,64}@[^\s@\x00-\x1f\x7f]{1,255}$/;

/** The role of `u`: a record without one, made before roles (the bootstrap user, CLI users), is an owner. */
export const roleOf = (u: UserRec): UserRole => u.role ?? 'owner';

/** The CLI's view of a user (never its password hash). */
export const userView = (u: UserRec, activationUrl?: string) => ({
  object: 'user', id: u.id, workspaceId: u.workspaceId, email: u.email, createdAt: u.createdAt,
    activatedAt: u.activatedAt,
  ...(activationUrl === undefined ? {} : { activationUrl }),
});

/** The activation link of `token` under `base` (`PUBLIC_URL`). */
export const activationUrl = (base: string, token: string): string => `${base}${ACTIVATE_PATH}?token=${token}`;

/**
 * Adds a new activation link for `userId` to `tx`; returns its token (shown once, never stored).
 * `now` in ms.
 */
export function issueActivation(tx: Tx<SystemRecords>, userId: string, now: number): string {
  const token = randomBase62(32);
  const rec: ActivationRec = { id: hashKey(token), userId, createdAt: iso(now), expiresAt: iso(
    now + ACTIVATION_TTL_MS), usedAt: null };
  tx.put('activation', rec.id, rec);
  return token;
}

/**
 * Makes user `email` in workspace `workspace` into `tx` (not yet committed), with an activation link; `role`
 * given is written (an invite from the users page), left out the record has none and reads as an owner.
 * @throws NotFoundError for an unknown workspace; InvalidInputError about `email`;
 *   ConflictError when a user has this email (in any workspace).
 */
export function addUser(store: Store, tx: Tx<SystemRecords>, now: number, workspace: string | undefined,
  email: string | undefined, role?: UserRole): { user: UserRec; token: string } {
  if (!workspace || !store.workspaceRec(workspace)) throw new NotFoundError(
    { entity: 'workspace', id: workspace ?? '' });
  const e = (email ?? '').trim();
  if (!EMAIL.test(e)) throw new InvalidInputError(['email'], 'must be an email address such as ada@example.com');
  if (store.userByEmail(e)) throw new ConflictError(`a user with the email ${JSON.stringify(e)} already exists`);
  const user: UserRec = { id: newId(now), workspaceId: workspace, email: e, passwordHash: null, createdAt: iso(now),
    activatedAt: null, ...(role === undefined ? {} : { role }) };
  tx.put('user', user.id, user);
  return { user, token: issueActivation(tx, user.id, now) };
}

/**
 * A new activation link for the user with `email` (a lost or expired link, or a forgotten
 * password: using it sets a new password). Earlier unused links stay valid until they expire.
 * @throws NotFoundError when no user has this email.
 */
export async function newActivationLink(store: Store, now: number, email: string): Promise<{
  user: UserRec; token: string }> {
  const user = store.userByEmail(email.trim());
  if (!user) throw new NotFoundError({ entity: 'user', id: email });
  const tx = store.system.begin();
  const token = issueActivation(tx, user.id, now);
  await store.system.commit(tx);
  return { user, token };
}

/** Why an activation token cannot be used, or the user it activates. */
export type ActivationCheck = { ok: true; activation: ActivationRec; user: UserRec } | {
  ok: false; reason: 'unknown' | 'used' | 'expired' };

/** Looks up an activation token (any string: a malformed one is `unknown`). `now` in ms. */
export function checkActivation(store: Store, token: string, now: number): ActivationCheck {
  const rec = TOKEN.test(token) ? store.system.get('activation', hashKey(token)) : undefined;
  const user = rec && store.system.get('user', rec.userId);
  if (!rec || !user) return { ok: false, reason: 'unknown' };
  if (rec.usedAt !== null) return { ok: false, reason: 'used' };
  if (Date.parse(rec.expiresAt) <= now) return { ok: false, reason: 'expired' };
  return { ok: true, activation: rec, user };
}

/** Why a password is refused, as a sentence for the form; null when it is acceptable. */
export function passwordProblem(password: string): string | null {
  const n = [...password].length;
  if (n < PASSWORD_MIN) return `The password must be at least ${PASSWORD_MIN} characters long.`;
  if (n > PASSWORD_MAX) return `The password must be at most ${PASSWORD_MAX} characters long.`;
  return null;
}

/**
 * Uses activation `token`: sets the user's password and marks the link used, in one durable
 * transaction, ending the user's sessions. The caller checked the token ({@link checkActivation}) and the password
 * ({@link passwordProblem}); both are checked again after hashing (another request may have
 * used the link meanwhile). `now` in ms. @throws HashBusy when the hasher's queue is full.
 * @returns the activated user, or the reason the link cannot be used.
 */
export async function activate(store: Store, passwords: Passwords, token: string, password: string, now: () =>
  number): Promise<ActivationCheck> {
  const hash = await passwords.hash(password);
  const check = checkActivation(store, token, now());
  if (!check.ok) return check;
  const at = iso(now());
  const user: UserRec = { ...check.user, passwordHash: hash, activatedAt: check.user.activatedAt ?? at };
  const tx = store.system.begin();
  tx.put('activation', check.activation.id, { ...check.activation, usedAt: at });
  tx.put('user', user.id, user);
  // A new password ends every session the user had (a reset link used after a lost password).
  for (const [id, session] of store.system.table('session')) if (session.userId === user.id) tx.del('session', id);
  await store.system.commit(tx);
  return { ok: true, activation: check.activation, user };
}
