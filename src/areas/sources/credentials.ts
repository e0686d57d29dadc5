/**
 * Where a source's stored credential may be sent (docs/sources.md#credentials): bound, when set, to the origin of the
 * server URL a live check calls ({@link credentialOrigins}), and cleared by whatever could move that origin (a new
 * `url`, a rescan naming other server origins). Otherwise a key with `sources:write` alone could point the source at
 * its own host and receive the secret.
 */
import { DEFAULT_AUTH, type Credential, type Source } from './model.js';

/**
 * Header names a `header` credential cannot use, lower-case: they shape the request itself (framing, target,
 * connection, body encoding), so a secret in one would break or smuggle requests. Setting one is refused (PATCH, 400),
 * and a live check refuses a stored credential that names one (docs/sources.md#credentials).
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect',
  'proxy-connection', 'content-type', 'content-encoding', 'accept-encoding',
]);

/** `auth.lastError` after a `url` change cleared the credential. */
export const CLEARED_URL_CHANGED = "the credential was cleared because the source's url changed; set it again";
/** `auth.lastError` after a rescan moved the described server to other origins. */
export const CLEARED_SERVERS_CHANGED =
  "the credential was cleared because a rescan found the source's server URL at another origin; set it again";

/** The base URL a live check calls, or why there is none (a sentence for a 400). */
export type ServerBase = { url: URL; error?: undefined } | { url?: undefined; error: string };

/**
 * The base URL of the source's API: the document's server URL (`serverUrl` of its index), a relative one resolved
 * against the source's url (`inputUrl`); user info and fragment removed. Never throws: `error` says why there is none
 * (no server URL, unresolved `{variables}`, invalid, relative without a source url, not http/https).
 */
export function serverBase(inputUrl: string | null, serverUrl: string | undefined): ServerBase {
  const raw = serverUrl?.trim();
  if (!raw) return { error: 'the source names no server URL to call' };
  if (/\{[^}]*\}/.test(raw)) return { error: `the server URL ${raw.slice(0, 200)} has unresolved {variables}` };
  let u: URL;
  try {
    u = inputUrl ? new URL(raw, inputUrl) : new URL(raw);
  } catch {
    return {
      error: inputUrl || /^[a-z][a-z0-9+.-]*:/i.test(raw)
        ? `the server URL ${raw.slice(0, 200)} is not a valid URL`
        : `the server URL ${raw.slice(0, 200)} is relative and the source has no URL to resolve it against`,
    };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { error: 'the server URL must use http or https' };
  u.username = '';
  u.password = '';
  u.hash = '';
  return { url: u };
}

/**
 * The origins (`scheme://host[:port]`) a credential set now may be sent to: {@link serverBase}'s, or none without a
 * usable server URL.
 */
export function credentialOrigins(inputUrl: string | null, serverUrl: string | undefined): string[] {
  const base = serverBase(inputUrl, serverUrl);
  return base.url ? [base.url.origin] : [];
}

/** Whether `cred` may be sent to `origin`: only to an origin it was bound to when it was set. */
export function credentialAllows(cred: Credential, origin: string): boolean {
  return (cred.origins ?? []).includes(origin);
}

/** `src` without its credential: `auth` back to not configured, `lastError` = `reason`. */
export function clearCredential(src: Source, reason: string): Source {
  const next: Source = { ...src, auth: { ...DEFAULT_AUTH, lastError: reason } };
  delete next.credential;
  return next;
}

/**
 * After an ingestion that produced a new index: `src` unchanged when it has no credential or the new `serverUrl` gives
 * the same origins the credential is bound to, else with the credential cleared ({@link CLEARED_SERVERS_CHANGED}).
 */
export function applyCredentialOrigins(src: Source, serverUrl: string | undefined): Source {
  if (!src.credential) return src;
  const now = credentialOrigins(src.inputUrl, serverUrl);
  const bound = src.credential.origins ?? [];
  const same = now.length === bound.length && now.every((o) => bound.includes(o));
  return same ? src : clearCredential(src, CLEARED_SERVERS_CHANGED);
}
