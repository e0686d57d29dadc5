/**
 * What every peer of the reads comparison (bench/baseline.ts, bench/fastify-server.ts) shares
 * with our server: the same records, the same answers and the same key check per request.
 *
 * The data file (`PEER_DATA`, written by bench/reads.ts from our server's own answers):
 *   { key, workspaceId, scopes, issues: { id: issueView }, conversationsPage }
 * The key is hashed once at start into a Map of key records, as our server keeps them (only
 * the hash). Per request, {@link checkKey} does what src/auth/authenticate.ts does for a valid
 * key: read `Authorization: Bearer …` and check the key's shape with the same pattern, SHA-256 it
 * with node:crypto's one-shot `hash` and look the hash up; then the route's scope is checked.
 * A missing, malformed or unknown key is a 401 with our server's exact body.
 *
 * {@link Bookkeeping} is the rest of our server's per-request work that shows in its answer or its data: an
 * `X-Request-Id` (a new UUID), `Api-Version`, the key's token bucket taken with our own limiter and its three
 * `RateLimit-*` headers, and one usage count for the workspace. The peers answer with the same header set.
 */
import { hash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
// Our server's own pattern: the scheme and the key's shape in one run (node:crypto only behind it).
import { BEARER_API_KEY } from '../src/auth/keys.js';
import { TokenBucketLimiter } from '../src/http/ratelimit.js';
import { API_VERSION } from '../src/http/pipeline.js';

export interface PeerData {
  key: string;
  workspaceId: string;
  scopes: string[];
  issues: Record<string, unknown>;
  conversationsPage: unknown;
}

export interface PeerKey { id: string; workspaceId: string; scopes: readonly string[] }

export const JSON_TYPE = 'application/json; charset=utf-8';
/** Our server's error bodies, byte for byte (src/http/errors.ts). */
export const UNAUTHORIZED = '{"code":"unauthorized","error":"A valid workspace API key is required."}';
export const forbidden = (scope: string) => `{"code":"insufficient_scope","error":"This API key is missing the required scope: this operation needs ${scope}."}`;
export const NOT_FOUND = '{"code":"not_found","error":"Record not found."}';

export function loadPeerData(): { data: PeerData; keys: Map<string, PeerKey> } {
  const file = process.env.PEER_DATA;
  if (!file) throw new Error('PEER_DATA (the data file) is not set');
  const data = JSON.parse(readFileSync(file, 'utf8')) as PeerData;
  const keys = new Map<string, PeerKey>([[hash('sha256', data.key, 'hex'), { id: 'bench-key', workspaceId: data.workspaceId, scopes: data.scopes }]]);
  return { data, keys };
}


/** The key record of the request's bearer key, or undefined (a 401). */
export function checkKey(keys: Map<string, PeerKey>, header: string | undefined): PeerKey | undefined {
  if (header === undefined) return undefined;
  const presented = BEARER_API_KEY.exec(header)?.[1];
  if (presented === undefined) return undefined;
  return keys.get(hash('sha256', presented, 'hex'));
}

/** `X:write` implies `X:read`; `*` grants everything (src/auth/keys.ts). */
export function hasScope(key: PeerKey, scope: string): boolean {
  if (key.scopes.includes('*') || key.scopes.includes(scope)) return true;
  return scope.endsWith(':read') && key.scopes.includes(scope.slice(0, -5) + ':write');
}

/** The bench's rate limit for every server it runs (bench/run.ts startServer): RATE_LIMIT_BURST and _PER_MINUTE. */
const BENCH_RATE = 10_000_000;

/** Our server's per-request bookkeeping for an authenticated request, done the same way (see the module header). */
export class Bookkeeping {
  private readonly limiter = new TokenBucketLimiter(BENCH_RATE, BENCH_RATE, { now: () => Date.now() });
  private readonly capacityText = String(BENCH_RATE);
  /** Requests per workspace, as our usage counter keeps them until it writes them. */
  readonly usage = new Map<string, number>();

  /** The headers of an answer to a request without a valid key: the request id and the API version. */
  anonymous(): string[] { return ['X-Request-Id', randomUUID(), 'Api-Version', API_VERSION]; }

  /** Counts the request, takes a token and returns the response headers our server sends (flat name, value list). */
  headers(key: PeerKey): string[] {
    this.usage.set(key.workspaceId, (this.usage.get(key.workspaceId) ?? 0) + 1);
    const rl = this.limiter.take(key.id);
    return ['X-Request-Id', randomUUID(), 'Api-Version', API_VERSION, 'RateLimit-Limit', this.capacityText,
      'RateLimit-Remaining', String(rl.remaining), 'RateLimit-Reset', String(rl.resetSeconds)];
  }
}
