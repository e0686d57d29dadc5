/**
 * Endpoint URLs (docs/api.md#webhook-endpoint-urls): the rules of source fetching (docs/sources.md#fetching) —
 * `http`/`https` only, no credentials in the URL, and a host whose every address is public unless
 * `WEBHOOK_ALLOW_PRIVATE=true` — checked when an endpoint is created or its url changed, and again before each delivery
 * (DNS can change meanwhile).
 */
import { invalid } from '../../http/errors.js';
import { reachableKnown, resolveReachable, unreachableMessage,
  type ResolvedAddress } from '../../ingest/fetch/addresses.js';
import type { HostResolver } from '../../ingest/fetch/hosts.js';

/**
 * Parses an endpoint URL: absolute http(s), no user name or password, fragment dropped.
 * @returns the URL as stored (WHATWG-normalized). @throws ApiError 400 naming `url` and the rule broken.
 */
export function parseEndpointUrl(raw: string): URL {
  let u: URL;
  try { u = new URL(raw); } catch { throw invalid('url must be an absolute http or https URL'); }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalid(
    `url must use http or https, not ${u.protocol.replace(/:$/, '')}`);
  if (u.username || u.password) throw invalid('url must not contain a user name or password');
  u.hash = '';
  return u;
}

/** The host of `u` as `resolveReachable` takes it (IPv6 without brackets). */
export const hostOf = (u: URL): string => (u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname);

/**
 * {@link parseEndpointUrl}, then resolves the host and checks every address (docs/sources.md#refused-addresses) unless
 * `allowPrivate`. @returns the URL to store (`href`).
 * @throws ApiError 400: the rules of {@link parseEndpointUrl}, or {@link unreachableMessage}'s one text for a host that
 *   does not resolve and one that resolves to a refused address.
 */
export async function checkEndpointUrl(raw: string, allowPrivate: boolean): Promise<string> {
  const u = parseEndpointUrl(raw);
  if (!await resolveReachable(hostOf(u), allowPrivate)) throw invalid(unreachableMessage(u.href));
  return u.href;
}

/**
 * The addresses a delivery to `url` may connect to, checked now (docs/api.md#webhook-endpoint-urls); undefined when the
 * host is unreachable. `resolver`: this thread's unless a test passes its own. Never throws.
 */
export async function deliveryAddresses(url: URL, allowPrivate: boolean,
  resolver?: HostResolver): Promise<ResolvedAddress[] | undefined> {
  return resolveReachable(hostOf(url), allowPrivate, resolver);
}

/**
 * {@link deliveryAddresses} when it needs no DNS question (an IP address, or a name whose answer is kept,
 * docs/sources.md#name-resolution): the same answer, or null when a question is needed.
 */
export function knownAddresses(url: URL, allowPrivate: boolean,
  resolver?: HostResolver): ResolvedAddress[] | undefined | null {
  return reachableKnown(hostOf(url), allowPrivate, resolver);
}
