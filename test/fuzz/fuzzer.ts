/**
 * A seeded HTTP fuzzer of our own (README "Reliability"; invariants: docs/api.md#check-order, docs/api.md#errors). It starts a real server (test harness,
 * temp data dir, manual clock) and a small local "customer API" for URL sources and live
 * checks, seeds both workspaces with VALID requests generated from the route table's schemas,
 * then sends MUTATED requests to every route: wrong types, missing and unknown fields, long and
 * huge strings, unicode edge cases, invalid UTF-8, deep nesting, duplicate and prototype keys,
 * out-of-range numbers, random bytes, wrong media types, hostile query strings, path
 * parameters and headers, other workspaces' ids and cursors, idempotency keys, other methods
 * and malformed HTTP.
 *
 * Every response is checked against invariants (see {@link FailureKind}): never a 5xx, never
 * a hung request, a `{code, error}` body for every 4xx, the server's own OpenAPI contract, the
 * status the pipeline order (docs/api.md#check-order) implies where it is decidable, nothing changed by a
 * 4xx or by a read, no other workspace's ids in a success, idempotent replays byte-identical,
 * no prototype pollution. Afterwards: `GET /healthz` is 200, a normal create works, and a
 * restart on the same data dir yields exactly the state that was in memory.
 *
 * Everything random comes from {@link Rng} (xoshiro128**, seeded through splitmix32), one
 * stream per iteration, so a seed and an iteration number name a request. Record ids are made
 * by the server (UUIDv7) and differ between runs; the shape of every request does not.
 */
import type { ChangeListener, Rec } from '../../src/store/db.js';
import { type Draft, type FailureKind, type FuzzOptions, type FuzzReport, IDEM_VALUE, type IdemEntry, type KeyInfo, newPools, type Plan, POOL_KINDS, type PoolKind, type Pools, type WsTag } from './types.js';
import { type HttpResponse, send, sendRaw, type Sent } from './transport.js';
import { ManualClock } from '../../src/core/clock.js';
import type { Route } from '../../src/http/route.js';
import { contractDocument, type OpenApiDocument } from '../helpers/contract.js';
import { deriveSeed, Rng } from './rng.js';
import type { TSchema } from '../../src/http/schema.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { startUpstream, type Upstream } from './upstream.js';
import type { Workspace } from '../../src/domain/workspace.js';
import { addCapped, fingerprint, listKey, lowerHeaders, mb, protoFingerprint, removeFrom, reproducer, safeJson } from './util.js';
import { buildPlan, checkAnswer, indexSizes, targetSnapshot } from './oracle.js';
import { genValue, idemKey, keyFor, mutatedDraft, protocolDraft, unmatchedDraft, validDraft, validQueryValue } from './generate.js';
import * as http from 'node:http';
import { postRun } from './afterRun.js';
import { executePage, pageDraft, setupPages, targetPages, type PageState } from './pages.js';
import type { PageRoute } from '../../src/web/app.js';
import { rmSync } from 'node:fs';

/** Runs the fuzzer; never throws for a server misbehaviour (those are failures in the report). */
export async function runFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const f = new Fuzzer(opts);
  return f.run();
}

/** One run: the server, the local upstream, the keys and id pools of both workspaces, the report. Its fields are shared with the other modules of test/fuzz (generate, oracle, transport, afterRun), which take the run as their first argument. */
export class Fuzzer {
  readonly seed: number;
  readonly timeoutMs: number;
  readonly maxFailures: number;
  readonly heavy: number;
  readonly log: (l: string) => void;
  srv!: TestServer;
  up!: Upstream;
  doc!: OpenApiDocument;
  agent!: http.Agent;
  readonly clock = new ManualClock();
  readonly env: Record<string, string>;
  readonly dataDir = tempDir('sw-fuzz-');
  keys: Record<string, KeyInfo> = {};
  limitedKeys: KeyInfo[] = [];
  wsId: Record<WsTag, string> = { A: '', B: '' };
  readonly pools: Record<WsTag, Pools> = { A: newPools(), B: newPools() };
  /** Every id harvested from a success, with the workspace it belongs to. */
  readonly owner = new Map<string, WsTag>();
  readonly idemPool: IdemEntry[] = [];
  /** Every (role, Idempotency-Key) that got a success: the server keeps them 24 h. */
  readonly usedIdem = new Set<string>();
  n = 0; // uniqueness counter for generated values
  phase = 'seed';
  iteration = -1;
  rng!: Rng;
  changes: Array<{ ws: WsTag; type: string; id: string; prev: Rec | undefined; next: Rec | undefined }> = [];
  /** Changes of the system log (keys, users, sessions) while recording: a refused page form must make none (test/fuzz/pages.ts). */
  systemChanges: Array<{ type: string; id: string; prev: Rec | undefined; next: Rec | undefined }> = [];
  /** The sessions, users and tokens the page requests use (test/fuzz/pages.ts); set after seeding the API. */
  pages?: PageState;
  recording = false;
  readonly report: FuzzReport;

  constructor(readonly opts: FuzzOptions) {
    this.seed = opts.seed >>> 0;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.maxFailures = opts.maxFailures ?? 100;
    this.heavy = opts.heavy ?? 1;
    this.log = opts.log ?? (() => {});
    this.env = {
      RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000', SOURCE_FETCH_ALLOW_PRIVATE: 'true',
      SOURCE_FETCH_TIMEOUT_MS: '3000', SOURCE_CRAWL_MAX_PAGES: '3', LOG_LEVEL: 'error',
      // Webhook endpoints point at the local upstream (a private address).
      WEBHOOK_ALLOW_PRIVATE: 'true',
    };
    this.report = {
      seed: this.seed, iterations: opts.iterations, routeFilter: opts.route, seedRequests: 0, requests: 0, durationMs: 0, phases: {},
      perRoute: new Map(), mutations: new Map(), statuses: new Map(), validRejected: new Map(), failures: [], failureCount: 0,
      failuresByKind: new Map(), expectationsChecked: 0, upstreamRequests: 0, retries: 0,
      memory: { rssStartMb: mb(process.memoryUsage().rss), rssEndMb: 0, heapEndMb: 0 },
    };
  }

  // ───────── lifecycle ─────────

  /** Runs everything: start, seed, fuzz, check after; returns the report (never throws for a server misbehaviour). */
  async run(): Promise<FuzzReport> {
    const t0 = performance.now();
    this.up = await startUpstream();
    this.env.GITHUB_API_URL = this.up.url;
    this.srv = await startTestServer({ env: this.env, clock: this.clock, dataDir: this.dataDir });
    // No webhook is sent: the dispatcher's writes (attempt outcomes) would change records while a
    // 4xx or a read is being checked for changing none. Deliveries are still made, in the
    // transaction of each event, and watched like every record.
    await this.srv.webhooks.close();
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    this.doc = contractDocument(this.srv.routes);
    this.opts.plant?.(this.srv);
    try {
      let t = performance.now();
      await this.setup();
      await this.seedState();
      this.report.phases.seed = Math.round(performance.now() - t);
      this.report.seedRequests = this.report.requests;
      t = performance.now();
      await this.mainLoop();
      this.report.phases.fuzz = Math.round(performance.now() - t);
      t = performance.now();
      await postRun(this);
      this.report.phases.post = Math.round(performance.now() - t);
    } finally {
      this.agent.destroy();
      await this.srv.close().catch(() => {});
      await this.up.close();
    }
    if (this.report.failureCount === 0) rmSync(this.dataDir, { recursive: true, force: true });
    else this.report.dataDir = this.dataDir;
    this.report.upstreamRequests = this.up.requests;
    this.report.durationMs = Math.round(performance.now() - t0);
    const m = process.memoryUsage();
    this.report.memory.rssEndMb = mb(m.rss);
    this.report.memory.heapEndMb = mb(m.heapUsed);
    return this.report;
  }

  /** Keys of every role, a second workspace, definitions in both, and the change listeners that watch their records. */
  async setup(): Promise<void> {
    const s = this.srv;
    this.wsId.A = s.workspaceId;
    this.keys.main = { role: 'main', header: `Bearer ${s.key}`, ws: 'A', scopes: ['*'] };
    const other = await s.newWorkspace('Fuzz other');
    this.wsId.B = other.workspaceId;
    this.keys.other = { role: 'other', header: `Bearer ${other.key}`, ws: 'B', scopes: ['*'] };
    for (const scopes of ['conversations:read', 'issues:write,sources:read', 'usage:read,analytics:read', 'sources:write,definitions:read']) {
      const k = await s.admin.createKey({ workspace: s.workspaceId, scopes });
      this.limitedKeys.push({ role: 'limited', header: `Bearer ${k.key}`, ws: 'A', scopes: scopes.split(',') });
    }
    const exp = await s.admin.createKey({ workspace: s.workspaceId, scopes: '*', expiresAt: new Date(this.clock.now() + 1000).toISOString() });
    this.keys.expired = { role: 'expired', header: `Bearer ${exp.key}` };
    const rev = await s.admin.createKey({ workspace: s.workspaceId, scopes: '*' });
    await s.admin.revokeKey(rev.id);
    this.keys.revoked = { role: 'revoked', header: `Bearer ${rev.key}` };
    this.clock.advance(5000);
    for (const tag of ['A', 'B'] as const) {
      await s.admin.importData(this.wsId[tag], {
        agents: [{ name: `Bot ${tag}` }, { name: 'Helper', description: 'Answers billing questions', enabled: false }],
        tags: [{ name: 'billing' }, { name: 'bug' }, { name: `team-${tag.toLowerCase()}` }],
        customFields: [{ label: 'Plan', type: 'text' }],
      });
    }
    // Watch both workspaces' records: a 4xx or a read must leave them as they were.
    for (const tag of ['A', 'B'] as const) {
      const ws = this.workspace(tag);
      const listener: ChangeListener = (type, id, prev, next) => { if (this.recording && type !== 'usage') this.changes.push({ ws: tag, type, id, prev, next }); };
      (ws.db as unknown as { listeners: ChangeListener[] }).listeners.push(listener);
    }
    const system: ChangeListener = (type, id, prev, next) => { if (this.recording) this.systemChanges.push({ type, id, prev, next }); };
    (s.store.system as unknown as { listeners: ChangeListener[] }).listeners.push(system);
  }

  /** The server's workspace `tag`. */
  workspace(tag: WsTag): Workspace {
    const ws = this.srv.store.workspace(this.wsId[tag]);
    if (!ws) throw new Error(`workspace ${tag} is gone`);
    return ws;
  }

  /** The route of `method` and path template `path`. */
  routeBy(method: string, path: string): Route | undefined {
    return this.srv.routes.find((r) => r.method === method && r.path === path);
  }

  /** Fills both workspaces with valid requests (records, sources, checks), reads every list once, and sends two valid requests per target route. */
  async seedState(): Promise<void> {
    this.phase = 'seed';
    this.rng = new Rng(deriveSeed(this.seed, 0x5eed));
    const plan: Array<[string, string, number, number]> = [ // method, path, count in A, count in B
      ['POST', '/api/v1/conversations', 8, 4],
      ['POST', '/api/v1/conversations/{conversationId}/messages', 10, 4],
      ['POST', '/api/v1/issues', 8, 4],
      ['POST', '/api/v1/sources', 7, 4],
      ['PATCH', '/api/v1/sources/{sourceId}', 4, 2],
      ['POST', '/api/v1/sources/{sourceId}/checks', 3, 1],
      ['PATCH', '/api/v1/conversations/{conversationId}', 3, 1],
      ['PATCH', '/api/v1/issues/{issueId}', 3, 1],
      ['POST', '/api/v1/webhook-endpoints', 3, 2],
      ['PATCH', '/api/v1/webhook-endpoints/{webhookEndpointId}', 2, 1],
    ];
    for (const [method, path, a, b] of plan) {
      const r = this.routeBy(method, path);
      if (!r) continue;
      for (let i = 0; i < a + b; i++) {
        this.sourceKind = i; // cycles through the kinds of source bodies
        await this.execute(validDraft(this, r, i < a ? 'A' : 'B'));
      }
    }
    // Every list once per workspace with a small page: cursors and the ids lists show (agents, clients).
    for (const r of this.apiRoutes()) {
      if (r.method !== 'GET' || !r.query || !r.query.properties.cursor) continue;
      for (const ws of ['A', 'B'] as const) {
        const d = validDraft(this, r, ws);
        d.query = [['limit', '1']];
        await this.execute(d);
      }
    }
    // Then two valid requests of every route to fuzz, generated from its schemas.
    for (const r of this.targetRoutes()) for (let i = 0; i < 2; i++) await this.execute(validDraft(this, r, i === 0 ? 'A' : 'B'));
    // The pages (test/fuzz/pages.ts): their users and sessions, then two valid requests of every page route to fuzz.
    await setupPages(this);
    for (const r of targetPages(this)) for (let i = 0; i < 2; i++) await executePage(this, pageDraft(this, r, true, i === 0 ? 'A' : 'B'));
    this.log(`seeded: ${this.report.requests} requests; A has ${this.pools.A.conversation.length} conversations, ${this.pools.A.issue.length} issues, ${this.pools.A.source.length} sources`);
  }

  /** The routes to fuzz (all, or those matching the `route` option). */
  targetRoutes(): Route[] {
    const f = this.opts.route;
    return this.apiRoutes().filter((r) => !f || `${r.method} ${r.path}`.includes(f));
  }

  /**
   * The routes that take API keys: the widget API's (`Route.auth`, sessions instead of keys) is not fuzzed here;
   * test/widget-*.test.ts checks its refusals.
   */
  apiRoutes(): Route[] { return this.srv.routes.filter((r) => !r.auth); }

  /** The iterations: each picks a slot (a route, a page route, unmatched or protocol) in a seeded shuffled order and sends one draft. */
  async mainLoop(): Promise<void> {
    this.phase = 'fuzz';
    const routes = this.targetRoutes();
    const slots: Array<Route | { page: PageRoute } | 'unmatched' | 'protocol'> = [...routes, ...targetPages(this).map((page) => ({ page }))];
    if (!this.opts.route) slots.push('unmatched', 'protocol');
    if (slots.length === 0) throw new Error(`no route matches ${JSON.stringify(this.opts.route)}`);
    let order: typeof slots = [];
    const started = performance.now();
    for (let i = 0; i < this.opts.iterations; i++) {
      const round = Math.floor(i / slots.length);
      if (i % slots.length === 0) order = new Rng(deriveSeed(this.seed, 0x40000000 + round)).shuffle([...slots]);
      this.iteration = i;
      this.rng = new Rng(deriveSeed(this.seed, i));
      this.clock.advance(this.rng.int(1500));
      const slot = order[i % slots.length];
      try {
        let d: Draft;
        if (typeof slot === 'object' && 'page' in slot) await executePage(this, pageDraft(this, slot.page, this.rng.chance(0.12)));
        else {
          if (slot === 'unmatched') d = unmatchedDraft(this);
          else if (slot === 'protocol') d = protocolDraft(this);
          else if (this.rng.chance(0.12)) d = validDraft(this, slot, this.rng.chance(0.75) ? 'A' : 'B');
          else d = mutatedDraft(this, slot);
          await this.execute(d);
        }
      } catch (e) {
        this.recording = false;
        this.fail('fuzzer_error', undefined, undefined, `${typeof slot === 'string' ? slot : 'page' in slot ? `page ${slot.page.name}` : `${slot.method} ${slot.path}`}: ${(e as Error).stack ?? String(e)}`);
      }
      if ((i + 1) % 2000 === 0) {
        this.log(`${i + 1}/${this.opts.iterations} iterations, ${this.report.requests} requests, ${this.report.failureCount} failures, ${Math.round((performance.now() - started) / 1000)} s, rss ${mb(process.memoryUsage().rss)} MB`);
      }
    }
    this.iteration = -1;
  }

  /** Which kind of source body the next valid `POST /sources` makes (seeding cycles through them). */
  sourceKind = 0;

  // ───────── one request ─────────

  /** Builds, sends and checks one draft, then harvests ids from a success. */
  async execute(d: Draft): Promise<void> {
    const p = buildPlan(this, d);
    const protoBefore = protoFingerprint();
    const targets = targetSnapshot(this, d.targetIds);
    const sizesBefore = indexSizes(this);
    this.changes = [];
    this.recording = true;
    let sent: Sent;
    try {
      sent = p.raw ? await sendRaw(this, p.raw) : await send(this, p);
    } finally {
      this.recording = false;
    }
    this.count(p, sent);
    const authFailed = d.key.role === 'none' || d.key.role === 'garbage' || d.key.role === 'expired' || d.key.role === 'revoked' || (d.raw !== undefined);
    if (authFailed && d.route?.scope !== null) this.clock.advance(2100); // refill the failed-auth bucket (30 a minute)
    if (!sent.ok) {
      if (sent.timedOut) this.fail('hung', p, undefined, `no answer within ${this.timeoutMs} ms`);
      else if (sent.head) this.fail('framing', p, sent.head, `the client's HTTP parser failed after a ${sent.head.status} head (${sent.error})${p.method === 'HEAD' ? '; a response to HEAD must not carry content (RFC 9110 §9.3.2)' : ''}`);
      else if (!(p.mayReset)) this.fail('no_response', p, undefined, `the connection failed without an answer: ${sent.error}`);
      return;
    }
    const res = sent.res;
    checkAnswer(this, p, res, { protoBefore, targets, sizesBefore });
    if (res.status >= 200 && res.status < 300) this.harvest(p, res);
    else if (d.valid) {
      const err = safeJson(res.text);
      const k = `${d.routeKey} → ${res.status} ${err?.code ?? ''}: ${String(err?.error ?? '').replace(/[0-9a-f-]{36}/g, '…').slice(0, 110)}`;
      this.report.validRejected.set(k, (this.report.validRejected.get(k) ?? 0) + 1);
    }
  }

  /** Counts a sent request in the report (per route, status, mutation). */
  count(p: Plan, sent: Sent): void {
    const d = p.draft;
    this.report.requests++;
    let st = this.report.perRoute.get(d.routeKey);
    if (!st) { st = { requests: 0, valid: 0, statuses: new Map() }; this.report.perRoute.set(d.routeKey, st); }
    st.requests++;
    if (d.valid) st.valid++;
    const status = sent.ok ? sent.res.status : sent.head?.status ?? 0;
    st.statuses.set(status, (st.statuses.get(status) ?? 0) + 1);
    this.report.statuses.set(status, (this.report.statuses.get(status) ?? 0) + 1);
    for (const m of d.muts) this.report.mutations.set(m, (this.report.mutations.get(m) ?? 0) + 1);
    if (d.valid) this.report.mutations.set('(valid)', (this.report.mutations.get('(valid)') ?? 0) + 1);
  }

  // ───────── harvesting ─────────

  /** Takes ids, endpoints, cursors and idempotent answers from a success into the pools. */
  harvest(p: Plan, res: HttpResponse): void {
    const d = p.draft;
    const ws = d.key.ws;
    // A replay is an old answer: its ids and endpoints may be stale (deleted, rescanned).
    if (!ws || !d.route || p.method === 'HEAD' || d.raw || res.headers['idempotent-replayed'] !== undefined) return;
    const body = safeJson(res.text);
    if (!body || typeof body !== 'object') return;
    const pools = this.pools[ws];
    const walk = (v: unknown, depth: number): void => {
      if (depth > 4 || v === null || typeof v !== 'object') return;
      if (Array.isArray(v)) { for (const x of v.slice(0, 200)) walk(x, depth + 1); return; }
      const o = v as Record<string, unknown>;
      if (typeof o.id === 'string' && typeof o.object === 'string') {
        this.owner.set(o.id, ws);
        const kind = o.object as PoolKind;
        if ((POOL_KINDS as readonly string[]).includes(kind)) addCapped(pools[kind], o.id, this.rng);
        if (kind === 'source') pools.sourceHasUrl.set(o.id, typeof o.inputUrl === 'string');
        if (kind === 'agent' && typeof o.widgetKey === 'string') addCapped(pools.widgetKeys, o.widgetKey, this.rng);
      }
      if (Array.isArray(o.tags)) for (const t of o.tags) if (typeof t === 'string' && t.length <= 64) addCapped(pools.tag, t, this.rng);
      for (const k of Object.keys(o)) if (k !== 'tags') walk(o[k], depth + 1);
    };
    walk(body, 0);
    const b = body as Record<string, unknown>;
    if (typeof b.nextCursor === 'string' && !d.rawPath) {
      const lk = listKey(d.route, d.params);
      let c = pools.cursors.get(lk);
      if (!c) { c = []; pools.cursors.set(lk, c); }
      addCapped(c, b.nextCursor, this.rng, 20);
    }
    const src = b.source as Record<string, unknown> | undefined;
    if (src && typeof src.id === 'string' && Array.isArray(b.endpoints)) {
      const eps = (b.endpoints as Array<Record<string, unknown>>).map((e) => e.id).filter((x): x is string => typeof x === 'string').slice(0, 20);
      for (const e of eps) this.owner.set(e, ws);
      if (eps.length) pools.endpoints.set(src.id, eps); else pools.endpoints.delete(src.id);
      if (pools.cursors.size > 200) pools.cursors.delete(pools.cursors.keys().next().value as string);
      if (pools.endpoints.size > 40) pools.endpoints.delete(pools.endpoints.keys().next().value as string);
    }
    if (p.method === 'DELETE' && d.route.path === '/api/v1/sources/{sourceId}' && typeof b.id === 'string') {
      removeFrom(pools.source, b.id); pools.endpoints.delete(b.id); pools.sourceHasUrl.delete(b.id); this.owner.delete(b.id);
    }
    // A deleted webhook endpoint's answer names it (`{object, id, deleted}`): the walk above took it back into the pool.
    if (p.method === 'DELETE' && b.object === 'webhook_endpoint' && b.deleted === true && typeof b.id === 'string') {
      removeFrom(pools.webhook_endpoint, b.id); this.owner.delete(b.id);
    }
    // Idempotent answers that can be replayed later.
    const idem = lowerHeaders(p.headers)['idempotency-key'];
    if (p.method === 'POST' && typeof idem === 'string' && IDEM_VALUE.test(idem) && (d.key.role === 'main' || d.key.role === 'other')) this.usedIdem.add(`${d.key.role}\n${idem}`);
    if (p.method === 'POST' && typeof idem === 'string' && IDEM_VALUE.test(idem) && res.headers['idempotent-replayed'] === undefined
      && (d.key.role === 'main' || d.key.role === 'other') && (p.body?.length ?? 0) <= 64 * 1024 && !this.idemPool.some((e) => e.key === idem && e.role === d.key.role)) {
      // A route that takes no body ignores one that was sent: the server's fingerprint is then method and path only.
      const sent = ((lowerHeaders(p.headers)['content-length'] ?? '0') !== '0' || d.chunked) && !!d.route?.body;
      this.idemPool.push({ role: d.key.role, key: idem, fingerprint: fingerprint(p.method, p.path, sent ? p.body : undefined), status: res.status, text: res.text,
        method: p.method, path: p.path, query: p.qs, body: p.body, headers: { ...p.headers } });
      if (this.idemPool.length > 32) this.idemPool.shift();
    }
  }

  // ───────── failures ─────────

  /** Records a broken invariant (details for the first `maxFailures`, counted always). */
  fail(kind: FailureKind, p: Plan | undefined, res: HttpResponse | undefined, message: string): void {
    this.report.failureCount++;
    this.report.failuresByKind.set(kind, (this.report.failuresByKind.get(kind) ?? 0) + 1);
    const d = p?.draft;
    const dedupe = `${kind}|${d?.routeKey}|${d?.muts[0]}|${res?.status}|${message.slice(0, 60)}`;
    const same = this.report.failures.filter((x) => `${x.kind}|${x.route}|${x.mutations[0]}|${x.response?.status}|${x.message.slice(0, 60)}` === dedupe).length;
    if (this.report.failures.length >= this.maxFailures || same >= 2) return;
    this.report.failures.push({
      kind, seed: this.seed, iteration: this.iteration, phase: this.phase, route: d?.routeKey ?? '-', mutations: d?.muts ?? [], message,
      request: p ? reproducer(p) : undefined,
      response: res ? { status: res.status, body: res.text.slice(0, 300) } : undefined,
    });
  }


  // ───────── accessors for the mutators ─────────

  get g(): Rng { return this.rng; }
  poolsOf(ws: WsTag): Pools { return this.pools[ws]; }
  keyRole(role: 'garbage' | 'expired' | 'revoked' | 'none'): KeyInfo { return role === 'none' ? { role: 'none' } : this.keys[role] ?? { role }; }
  limited(): KeyInfo { return this.rng.pick(this.limitedKeys); }
  otherKey(ws: WsTag): KeyInfo { return keyFor(this, ws); }
  idemEntries(): IdemEntry[] { return this.idemPool; }
  freshIdemKey(): string { return idemKey(this); }
  validValue(schema: TSchema, name: string, ws: WsTag): unknown { return genValue(this, schema, name, ws); }
  validQuery(d: Draft, name: string): string | undefined {
    const s = d.route?.query?.properties[name] as TSchema | undefined;
    return s && d.route ? validQueryValue(this, d.route, d.ws, name, s, d.params) : undefined;
  }
  routeOf(method: string, path: string): Route | undefined {
    const m = this.srv.app.router.find(method, path);
    return m.kind === 'found' ? m.value : undefined;
  }
}
