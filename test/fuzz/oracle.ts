/**
 * The fuzzer's oracle: a draft built into the request to send, the status the pipeline must
 * give where it is decidable (docs/api.md#check-order), and the checks of every answer (see
 * `FailureKind` in types.ts).
 */
import { type Draft, IDEM_VALUE, NO_BODY, paramKind, type Plan, printable, type WsTag } from './types.js';
import type { Fuzzer } from './fuzzer.js';
import { type HttpResponse, toHeaders } from './transport.js';
import type { IncomingMessage } from 'node:http';
import { MiB } from '../../src/http/route.js';
import type { Rec, TypeOf } from '../../src/store/db.js';
import type { Records } from '../../src/domain/workspace.js';
import { assertValid } from '../../src/http/schema.js';
import { validateBodyHeaders, parseJsonBody } from '../../src/http/body.js';
import { contractViolations } from '../helpers/contract.js';
import { diffSizes, encodeComponent, errorBodyProblem, fingerprint, lowerHeaders, protoFingerprint, safeJson, show } from './util.js';
import { hasScope } from '../../src/auth/keys.js';
import * as net from 'node:net';
import { parseQuery } from '../../src/http/pipeline.js';
import { serialize } from './json.js';

/**
 * The text a replay of the stored answer `text` must have: the same, except that a webhook
 * endpoint's secret, shown once, is null in the replay (it is never stored in clear, docs/api.md#idempotency).
 */
const replayOf = (text: string): string => text.replace(/"secret":"whsec_[^"]*"/, '"secret":null');

/** The request as it will be sent (path, query string, headers, body bytes), with the status it must get where the pipeline decides it. */
export function buildPlan(f: Fuzzer, d: Draft): Plan {
  const path = d.rawPath ?? (d.route ? d.route.path.replace(/\{(\w+)\}/g, (_m, p: string) => d.params[p] ?? '') : '/');
  const qs = typeof d.query === 'string' ? d.query : d.query.map(([k, v]) => `${encodeComponent(k)}=${encodeComponent(v)}`).join('&');
  const headers: Record<string, string | string[]> = {};
  if (d.key.header !== undefined) headers.Authorization = d.key.header;
  Object.assign(headers, d.headers);
  let body: Buffer | undefined;
  if (d.body !== NO_BODY) body = serialize(d.body);
  if (body !== undefined && !d.chunked) headers['Content-Length'] = String(body.length);
  if (d.chunked) headers['Transfer-Encoding'] = 'chunked';
  if (body === undefined && !d.chunked && (d.method === 'POST' || d.method === 'PATCH' || d.method === 'PUT')) headers['Content-Length'] = '0';
  if (d.rawPath && !d.raw) d.route = f.routeOf(d.method, path); // an "unmatched" probe that names a real operation
  idExpectations(f, d);
  if (d.cursorClaim) {
    const given = new URLSearchParams(qs).getAll('cursor');
    if (given.length === 1 && given[0] === d.cursorClaim.value) {
      d.handlerExpect = { statuses: [...new Set([...(d.handlerExpect?.statuses ?? []), 400])], why: `${d.handlerExpect ? `${d.handlerExpect.why}, or ` : ''}cursor ${d.cursorClaim.kind}` };
      if (d.cursorClaim.kind === 'foreign') d.notOk = 'the cursor belongs to another workspace';
    }
  }
  const method = d.raw ? d.raw.subarray(0, Math.max(0, d.raw.indexOf(' '))).toString('latin1') : d.method;
  const plan: Plan = { draft: d, method, path, qs, headers, body, raw: d.raw, mayReset: false };
  if (!d.raw) plan.expect = expectedStatus(f, plan);
  const limit = d.route?.bodyLimit ?? MiB;
  plan.mayReset = (body?.length ?? 0) > limit;
  return plan;
}

/**
 * Path ids decide the handler's answer: an id of the key's own workspace exists (no
 * expectation), any other — another workspace's, random, mangled — must be a 404, and another
 * workspace's must never succeed.
 */
export function idExpectations(f: Fuzzer, d: Draft): void {
  if (!d.route || !d.key.ws || d.raw || d.rawPath) return;
  for (const [name, enc] of Object.entries(d.params)) {
    if (!paramKind(name)) continue;
    let id: string;
    try { id = decodeURIComponent(enc); } catch { continue; } // the router answers 404 itself
    const o = f.owner.get(id);
    if (o === d.key.ws) continue;
    const why = o ? `${name} belongs to the other workspace` : `${name} ${show(id.slice(0, 40))} names no record`;
    d.handlerExpect = { statuses: [...new Set([...(d.handlerExpect?.statuses ?? []), 404])], why: d.handlerExpect ? `${d.handlerExpect.why}, or ${why}` : why };
    if (o) d.notOk = `${name} belongs to another workspace`;
  }
}

/**
 * The status the pipeline must give (docs/api.md#check-order: route → 401 → 403 → 429 → 400 → 404 → 409),
 * decided with the server's own building blocks as oracles (router, query parser, body header
 * check, JSON reader, schema validator); undefined when the handler decides.
 */
export function expectedStatus(f: Fuzzer, p: Plan): { statuses: number[]; why: string } | undefined {
  const d = p.draft;
  if (d.noOracle) return undefined;
  const hdr = lowerHeaders(p.headers);
  const headBytes = p.path.length + p.qs.length + Object.entries(p.headers).reduce((n, [k, v]) => n + k.length + String(v).length + 4, 0);
  if (headBytes > 16 * 1024 + 512) return { statuses: [431], why: `${headBytes} bytes of request line and headers` };
  if (headBytes > 12 * 1024) return undefined; // near the parser's limit: either answer is right
  const match = f.srv.app.router.find(p.method, p.path);
  if (match.kind === 'not_found') return { statuses: [404], why: 'no route matches the path' };
  if (match.kind === 'method_not_allowed') return { statuses: [405], why: `the path allows ${match.allow.join(', ')}` };
  const route = match.value;
  const apiVersion = hdr['api-version'];
  const versionOk = apiVersion === undefined || apiVersion === '2026-06-29'; // OWS (space, tab) only was trimmed
  if (route.scope === null) return versionOk ? { statuses: [200], why: 'public route' } : { statuses: [400], why: 'wrong Api-Version' };
  if (d.key.role === 'none' || d.key.role === 'garbage' || d.key.role === 'expired' || d.key.role === 'revoked') return { statuses: [401], why: `key ${d.key.role}` };
  if (!hasScope(d.key.scopes ?? [], route.scope)) return { statuses: [403], why: `scopes ${d.key.scopes?.join(',')} lack ${route.scope}` };
  if (!versionOk) return { statuses: [400], why: 'wrong Api-Version' };
  try { parseQuery(route.query, p.qs); } catch (e) { return { statuses: [400], why: `query: ${(e as Error).message}` }; }
  const sent = (hdr['content-length'] ?? '0') !== '0' || d.chunked;
  // A missing body is judged before its headers: 400 where one is required, `{}` where optional.
  if (route.body && !sent && !route.bodyOptional) return { statuses: [400], why: 'no body where the route requires one' };
  if (route.body && sent) {
    const limit = route.bodyLimit ?? MiB;
    try { validateBodyHeaders({ headers: hdr } as unknown as IncomingMessage, limit); } catch (e) {
      const code = (e as { status?: number }).status ?? 0;
      return { statuses: [code], why: `body headers: ${(e as Error).message}` };
    }
    const raw = p.body ?? Buffer.alloc(0);
    if (raw.length > limit) return { statuses: [413], why: `body of ${raw.length} bytes over ${limit}` };
    let value: unknown;
    try { value = parseJsonBody(raw); } catch (e) { return { statuses: [400], why: `body: ${(e as Error).message}` }; }
    try { assertValid(route.body, value); } catch (e) { return { statuses: [400], why: `body: ${(e as Error).message}` }; }
    const claim = d.certain.map((c) => c(d.body)).find((x) => x !== undefined);
    if (claim) {
      f.fail('validator_gap', p, undefined, `the body is invalid by construction (${claim}) but the route's schema validator accepts it`);
      return { statuses: [400], why: `body: ${claim}` };
    }
  }
  if (route.method === 'POST' && hdr['idempotency-key'] !== undefined) {
    const k = hdr['idempotency-key'];
    if (typeof k !== 'string' || !IDEM_VALUE.test(k)) return { statuses: [400], why: 'malformed Idempotency-Key' };
    const role = d.key.role === 'main' || d.key.role === 'other' ? d.key.role : undefined;
    const prior = f.idemPool.find((e) => e.key === k && e.role === role);
    if (!prior && f.usedIdem.has(`${role}\n${k}`)) return undefined; // stored by the server, no longer remembered here
    if (prior) {
      // A route that takes no body ignores one that was sent: the server's fingerprint is then method and path only.
      const fp = fingerprint(route.method, p.path, sent && route.body ? p.body : undefined);
      return fp === prior.fingerprint ? { statuses: [prior.status], why: 'idempotent replay' } : { statuses: [422], why: 'Idempotency-Key reused with another request' };
    }
  }
  return d.handlerExpect;
}

/** Checks an answer against every invariant (see FailureKind), recording failures. */
export function checkAnswer(f: Fuzzer, p: Plan, res: HttpResponse, before: { protoBefore: string; targets: Map<string, string>; sizesBefore: string }): void {
  const d = p.draft;
  const head = p.method === 'HEAD';
  if (res.status >= 500) f.fail('server_error', p, res, `status ${res.status}`);
  if (res.status >= 400 && res.status < 500 && !head) {
    const problem = errorBodyProblem(res.status, res.text);
    if (problem) f.fail('error_body', p, res, problem);
  }
  if (d.raw && !res.headers['api-version']) f.fail('contract', p, res, 'an answer without Api-Version');
  if (!d.raw) {
    const v = contractViolations(f.doc, p.method, p.path + (p.qs ? `?${p.qs}` : ''), { status: res.status, headers: toHeaders(res.headers), text: res.text });
    if (v.length) f.fail('contract', p, res, v.slice(0, 4).join('; '));
  }
  if (p.expect) {
    f.report.expectationsChecked++;
    if (!p.expect.statuses.includes(res.status)) f.fail('unexpected_status', p, res, `expected ${p.expect.statuses.join(' or ')} (${p.expect.why}), got ${res.status}`);
    else if (p.expect.why === 'idempotent replay') {
      const prior = d.idem?.entry ?? f.idemPool.find((e) => e.key === lowerHeaders(p.headers)['idempotency-key']);
      if (prior && (replayOf(prior.text) !== res.text || res.headers['idempotent-replayed'] !== 'true')) {
        f.fail('idempotency', p, res, `the replay differs from the stored answer (replayed header ${String(res.headers['idempotent-replayed'])}; stored ${prior.text.slice(0, 120)})`);
      }
    }
  }
  if (d.notOk && res.status >= 200 && res.status < 300) f.fail('unexpected_status', p, res, `a success, but ${d.notOk}`);
  if (res.status === 409 && safeJson(res.text)?.code === 'idempotency_in_progress') f.fail('idempotency', p, res, 'idempotency_in_progress answered to a client that sends one request at a time');
  if (res.status === 409 && /a scan of this source is already running/.test(res.text)) f.fail('unexpected_status', p, res, 'a rescan was refused as running, but no scan runs (requests are sequential)');
  const running = (f.srv.app.idempotency as unknown as { running?: Set<string> }).running;
  if (running && running.size) { f.fail('idempotency', p, res, `${running.size} Idempotency-Key in-progress mark(s) left after the answer`); running.clear(); }
  // Request id: echoed when ≤ 128 printable ASCII, generated otherwise.
  const rid = lowerHeaders(p.headers)['x-request-id'];
  if (!d.raw && !d.noOracle && typeof rid === 'string') {
    const echoed = res.headers['x-request-id'];
    // 431 is answered by the HTTP parser before any header is read: an id is generated then.
    if (res.status === 431) { if (!echoed) f.fail('request_id', p, res, 'a 431 without X-Request-Id'); }
    else if (printable.test(rid) ? echoed !== rid.trim() : echoed === rid || !echoed) f.fail('request_id', p, res, `X-Request-Id ${show(rid.slice(0, 40))} answered with ${show(String(echoed))}`);
  }
  // State: a 4xx changes nothing, and neither does any read.
  if ((res.status >= 400 && res.status < 500) || p.method === 'GET' || p.method === 'HEAD') {
    const net = netChanges(f);
    if (net.length) f.fail('state_changed', p, res, `${net.length} record(s) changed: ${net.slice(0, 5).join(', ')}`);
    const after = indexSizes(f);
    if (after !== before.sizesBefore) f.fail('state_changed', p, res, `workspace indexes changed: ${diffSizes(before.sizesBefore, after)}`);
    for (const [k, json] of before.targets) {
      const [tag, type, id] = k.split('\u0000');
      const now = f.workspace(tag as WsTag).db.get(type as TypeOf<Records>, id);
      if (JSON.stringify(now) !== json) f.fail('state_changed', p, res, `record ${type}/${id} in ${tag} changed in place`);
    }
  }
  // Tenant isolation: a success never shows the other workspace's ids.
  if (res.status < 300 && d.key.ws && res.text) {
    const reqText = p.path + p.qs + (p.body && p.body.length < 1_000_000 ? p.body.toString('latin1') : '');
    for (const m of res.text.matchAll(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g)) {
      const o = f.owner.get(m[0]);
      if (o && o !== d.key.ws && !reqText.includes(m[0])) { f.fail('tenant_leak', p, res, `the answer to a key of ${d.key.ws} holds ${m[0]} of ${o}`); break; }
    }
  }
  if (protoFingerprint() !== before.protoBefore) f.fail('prototype_pollution', p, res, `Object/Array prototypes changed: ${protoFingerprint()}`);
}

/** (type/id) of every record whose value differs from before the request. */
export function netChanges(f: Fuzzer): string[] {
  const first = new Map<string, Rec | undefined>();
  const last = new Map<string, Rec | undefined>();
  for (const c of f.changes) {
    const k = `${c.ws}:${c.type}/${c.id}`;
    if (!first.has(k)) first.set(k, c.prev);
    last.set(k, c.next);
  }
  return [...first.keys()].filter((k) => first.get(k) !== last.get(k));
}

/** The stored records the request names in its path, as JSON: compared after a 4xx or a read. */
export function targetSnapshot(f: Fuzzer, ids: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const id of ids.slice(0, 4)) {
    for (const tag of ['A', 'B'] as const) {
      const tables = (f.workspace(tag).db as unknown as { tables: Map<string, { get(id: string): Rec | undefined }> }).tables;
      for (const [type, t] of tables) {
        if (type === 'usage') continue;
        const r = t.get(id);
        if (r !== undefined) out.set(`${tag}\u0000${type}\u0000${id}`, JSON.stringify(r));
      }
    }
  }
  return out;
}

/** Sizes of every table and index of both workspaces (cheap; compared around reads and 4xx). */
export function indexSizes(f: Fuzzer): string {
  const parts: string[] = [];
  for (const tag of ['A', 'B'] as const) {
    const ws = f.workspace(tag);
    const tables = (ws.db as unknown as { tables: Map<string, { size: number }> }).tables;
    for (const [type, t] of tables) if (type !== 'usage') parts.push(`${tag}.${type}=${t.size}`);
    for (const [k, v] of Object.entries(ws)) {
      if (k === 'db') continue;
      if (typeof v === 'number') parts.push(`${tag}.${k}=${v}`);
      else if (v instanceof Map || v instanceof Set) parts.push(`${tag}.${k}=${v.size}`);
      else if (v && typeof v === 'object' && typeof (v as { size?: unknown }).size === 'number') parts.push(`${tag}.${k}=${(v as { size: number }).size}`);
    }
  }
  return parts.join(' ');
}
