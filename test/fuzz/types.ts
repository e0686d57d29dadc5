/**
 * The fuzzer's shapes: its options and report, failures, keys and id pools, drafts (requests
 * being built) and plans (requests ready to send).
 */
import type { Route } from '../../src/http/route.js';
import type { TestServer } from '../helpers/server.js';

export type FailureKind =
  | 'server_error' // a 5xx (503 included)
  | 'hung' // no answer within the per-request timeout
  | 'no_response' // the connection closed without an answer
  | 'framing' // a response head arrived, then the client's HTTP parser failed (e.g. content in a HEAD answer)
  | 'error_body' // a 4xx whose body is not exactly {code, error} with a known code and matching status
  | 'contract' // the answer departs from the server's OpenAPI document
  | 'unexpected_status' // the pipeline order (docs/api.md#check-order) decides the status, and another came
  | 'validator_gap' // a body certainly invalid (by construction) passed the schema validator
  | 'state_changed' // a 4xx, or a read, changed the workspace's records or indexes
  | 'tenant_leak' // a success holds another workspace's id
  | 'idempotency' // a replay differs from the stored answer, or an in-progress mark leaked
  | 'request_id' // X-Request-Id not echoed / echoed wrongly
  | 'prototype_pollution'
  | 'security_headers' // a page answer without the settings area's security headers (docs/security.md#headers)
  | 'secret_leak' // a page answer holds a secret the harness watches, or one shown outside its one answer
  | 'post_run' // health, a normal create, or the state after restart
  | 'fuzzer_error'; // the fuzzer itself threw (a bug here, reported rather than crashing the run)

/** The request of a failure, enough to send it again by hand. */
export interface Reproducer { method: string; target: string; headers: Record<string, string>; bodyBytes: number; bodyPreview: string; raw?: string }
/** One broken invariant, with the seed and iteration that name the request. */
export interface Failure {
  kind: FailureKind; seed: number; iteration: number; phase: string; route: string; mutations: string[];
  message: string; request?: Reproducer; response?: { status: number; body: string };
}

/** Requests sent to one route, valid ones, and the statuses they got. */
export interface RouteStats { requests: number; valid: number; statuses: Map<number, number> }

/** What a run did and found. */
export interface FuzzReport {
  seed: number; iterations: number; routeFilter?: string;
  seedRequests: number; requests: number; durationMs: number; phases: Record<string, number>;
  perRoute: Map<string, RouteStats>;
  mutations: Map<string, number>;
  statuses: Map<number, number>;
  validRejected: Map<string, number>;
  failures: Failure[]; failureCount: number; failuresByKind: Map<string, number>;
  expectationsChecked: number; upstreamRequests: number; retries: number;
  memory: { rssStartMb: number; rssEndMb: number; heapEndMb: number };
  /** The server's data dir, kept when something failed. */
  dataDir?: string;
}

/** How to run the fuzzer. */
export interface FuzzOptions {
  seed: number;
  iterations: number;
  /** Only routes whose `METHOD /path` contains this text are fuzzed (seeding still uses every route). */
  route?: string;
  /** Per-request timeout (default 10 s). */
  timeoutMs?: number;
  /** Stop collecting failure details after this many (they are still counted). */
  maxFailures?: number;
  /** Progress lines (e.g. `console.error`). */
  log?: (line: string) => void;
  /** Weight of the heavy mutations (multi-MiB bodies); 0 turns them off. Default 1. */
  heavy?: number;
  /** For the fuzzer's own test: changes the server (plants bugs) before seeding. */
  plant?: (srv: TestServer) => void;
}

/** The two workspaces of a run: A (the main key's) and B (another tenant). */
export type WsTag = 'A' | 'B';
/** What a request authenticates with. */
export type KeyRole = 'main' | 'other' | 'limited' | 'expired' | 'revoked' | 'none' | 'garbage';

/** A key of a role: the Authorization header it sends, its workspace and scopes. */
export interface KeyInfo { role: KeyRole; header?: string | string[]; ws?: WsTag; scopes?: string[] }

/** Ids, endpoints and cursors harvested from successes in one workspace. */
export interface Pools {
  conversation: string[]; issue: string[]; source: string[]; agent: string[]; client: string[]; webhook_endpoint: string[]; tag: string[];
  endpoints: Map<string, string[]>; sourceHasUrl: Map<string, boolean>; cursors: Map<string, string[]>; widgetKeys: string[];
}
/** Empty pools. */
export const newPools = (): Pools => ({ conversation: [], issue: [], source: [], agent: [], client: [], webhook_endpoint: [], tag: [], endpoints: new Map(), sourceHasUrl: new Map(), cursors: new Map(), widgetKeys: [] });
/** The kinds of ids kept in pools. */
export const POOL_KINDS = ['conversation', 'issue', 'source', 'agent', 'client', 'webhook_endpoint'] as const;
/** One kind of pooled id. */
export type PoolKind = (typeof POOL_KINDS)[number];
/** Ids kept per pool (older ones are dropped at random). */
export const POOL_CAP = 150;
/** The pool a path parameter draws from. */
export const PARAM_KIND: Record<string, PoolKind> = { conversationId: 'conversation', issueId: 'issue', sourceId: 'source', agentId: 'agent', clientId: 'client', webhookEndpointId: 'webhook_endpoint' };
/** The pool of path parameter `name`, if it names a record. */
export const paramKind = (name: string): PoolKind | undefined => PARAM_KIND[name] ?? (POOL_KINDS as readonly string[]).find((k) => `${k}Id` === name) as PoolKind | undefined;

/** A draft without a body. */
export const NO_BODY = Symbol('no body');

/** A request being built: from a valid one, then mutated. */
export interface Draft {
  route?: Route;
  routeKey: string;
  method: string;
  params: Record<string, string>; // encoded segments
  rawPath?: string; // replaces the template path
  query: Array<[string, string]> | string; // pairs (encoded on build) or a raw query string
  body: unknown; // NO_BODY or a value of the model
  headers: Record<string, string | string[]>;
  key: KeyInfo;
  ws: WsTag; // the workspace whose ids the request was built from
  chunked: boolean;
  muts: string[];
  /**
   * Claims that the body is invalid, each re-checked against the final body (a later mutation
   * may have replaced the value a claim is about); a claim returns its reason while it holds.
   */
  certain: Array<(body: unknown) => string | undefined>;
  /** Handler outcome when the pipeline lets the request through (e.g. 404 for an id that cannot exist). */
  handlerExpect?: { statuses: number[]; why: string };
  /** A bad cursor the query was given (checked against the final query string at build time). */
  cursorClaim?: { value: string; kind: string };
  /** When set: the answer must not be a success (another workspace's data would be reached). */
  notOk?: string;
  /** Expectation computation is off (duplicate headers and the like). */
  noOracle?: boolean;
  idem?: { kind: 'replay' | 'reuse'; entry: IdemEntry };
  raw?: Buffer; // a whole HTTP request sent as is on a fresh connection
  valid: boolean;
  targetIds: string[];
}

/** A success sent with an Idempotency-Key: what a replay must give back. */
export interface IdemEntry { role: 'main' | 'other'; key: string; fingerprint: string; status: number; text: string; method: string; path: string; query: string; body: Buffer | undefined; headers: Record<string, string | string[]> }

/** A draft built into the request to send, with its expected status when decidable. */
export interface Plan {
  draft: Draft;
  method: string;
  path: string;
  qs: string;
  headers: Record<string, string | string[]>;
  body?: Buffer;
  raw?: Buffer;
  expect?: { statuses: number[]; why: string };
  mayReset: boolean;
}

/** An X-Request-Id the server echoes. */
export const printable = /^[\x20-\x7e]{1,128}$/;
/** A well-formed Idempotency-Key. */
export const IDEM_VALUE = /^[\x20-\x7e]{1,255}$/;
