/**
 * Valid requests generated from the route table's schemas (the fuzzer's starting points), and
 * the drafts of each iteration: a valid request, a mutated one, a request no route serves, or
 * malformed HTTP.
 */
import { type Draft, type KeyInfo, NO_BODY, paramKind, type PoolKind, type WsTag } from './types.js';
import type { Fuzzer } from './fuzzer.js';
import { MUTATORS } from './mutators.js';
import type { Route } from '../../src/http/route.js';
import { codePointLength, type TSchema, type TString } from '../../src/http/schema.js';
import { UNICODE, WORDS } from './edges.js';
import { deref } from './json.js';
import { fitCodePoints, listKey, safeDecode } from './util.js';
import { openapiDoc } from './upstream.js';

/** A number not used before in this run (unique names, ids, keys). */
export function uniqueNumber(f: Fuzzer): number { return ++f.n; }

/** The full-access key of workspace `ws`. */
export function keyFor(f: Fuzzer, ws: WsTag): KeyInfo { return ws === 'A' ? f.keys.main : f.keys.other; }

/** A harvested id of `kind` in workspace `ws`, or undefined when none was harvested yet. */
export function pickId(f: Fuzzer, ws: WsTag, kind: PoolKind): string | undefined {
  const p = f.pools[ws][kind];
  return p.length ? f.rng.pick(p) : undefined;
}

/** A request to `route` in workspace `ws` that the server must accept: path ids, query and body generated from the route's schemas and the pools. */
export function validDraft(f: Fuzzer, route: Route, ws: WsTag): Draft {
  const g = f.rng;
  const d: Draft = {
    route, routeKey: `${route.method} ${route.path}`, method: route.method, params: {}, query: [], body: NO_BODY,
    headers: {}, key: route.scope === null ? { role: 'none' } : keyFor(f, ws), ws, chunked: false, muts: [], valid: true, targetIds: [], certain: [],
  };
  for (const m of route.path.matchAll(/\{(\w+)\}/g)) {
    const kind = paramKind(m[1]);
    const id = (kind && pickId(f, ws, kind)) ?? g.uuid();
    d.params[m[1]] = encodeURIComponent(id);
    d.targetIds.push(id);
  }
  if (route.query) {
    const q: Array<[string, string]> = [];
    for (const [k, s] of Object.entries(route.query.properties as Record<string, TSchema>)) {
      if (s.optional && !g.chance(0.3)) continue;
      const v = validQueryValue(f, route, ws, k, s, d.params);
      if (v !== undefined) q.push([k, v]);
    }
    d.query = q;
  }
  if (route.body) {
    if (route.bodyOptional && g.chance(0.5)) d.body = NO_BODY;
    else d.body = validBody(f, route, ws, d);
    if (d.body !== NO_BODY || !route.bodyOptional) d.headers['Content-Type'] = g.weighted([['application/json', 8], ['application/json; charset=utf-8', 2], ['Application/JSON', 1], ['application/json;charset=UTF-8', 1]] as const);
  }
  if (route.method === 'POST' && g.chance(0.3)) d.headers['Idempotency-Key'] = idemKey(f);
  if (g.chance(0.1)) d.headers['Api-Version'] = '2026-06-29';
  if (g.chance(0.15)) d.headers['X-Request-Id'] = `fuzz-${uniqueNumber(f)}`;
  return d;
}

/** A new valid Idempotency-Key. */
export function idemKey(f: Fuzzer): string {
  const g = f.rng;
  const n = g.weighted([[8, 2], [36, 5], [1, 1], [255, 1]] as const);
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(g.range(0x21, 0x7e));
  return n > 1 ? `${s.slice(0, n - 1)}${g.pick(['k', ' ', '~'])}`.replace(/^ /, 'k') : s;
}

/** A valid value for query parameter `name` of `route` (a real cursor of the list, a harvested id, a value of its schema), or undefined to leave it out. */
export function validQueryValue(f: Fuzzer, route: Route, ws: WsTag, name: string, schema: TSchema, params: Record<string, string> = {}): string | undefined {
  const g = f.rng;
  const p = f.pools[ws];
  if (name === 'cursor') { const c = p.cursors.get(listKey(route, params)); return c?.length ? g.pick(c) : undefined; }
  if (name === 'tag') return p.tag.length ? g.pick(p.tag) : 'billing';
  if (name === 'conversationId') return pickId(f, ws, 'conversation');
  if (name === 'q') return g.pick([...WORDS, 'reset password', 'items', 'refund status', 'Fuzz Shop']);
  if (name === 'from' || name === 'to') {
    const day = new Date(f.clock.now() - (name === 'from' ? g.range(5, 40) : g.range(0, 3)) * 86_400_000).toISOString().slice(0, 10);
    return day;
  }
  const v = genValue(f, schema, name, ws);
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

/** A valid body for `route`: generated from its schema, with the ids, URLs and sources the handler needs to accept it. */
export function validBody(f: Fuzzer, route: Route, ws: WsTag, d: Draft): unknown {
  const g = f.rng;
  const key = `${route.method} ${route.path}`;
  const base = f.up.url;
  switch (key) {
    case 'POST /api/v1/sources': {
      const n = uniqueNumber(f);
      const kinds: Array<() => Record<string, unknown>> = [
        () => ({ content: `# Help\n\nHow to ${g.pick(WORDS)} your ${g.pick(WORDS)}.\n\n## Refunds\n\nRefunds take ${n} days. ${g.pick(UNICODE)}\n` }),
        () => ({ type: 'openapi', content: JSON.stringify(openapiDoc(base, n)) }),
        () => ({ content: JSON.stringify(openapiDoc(base, n)), name: `Spec ${n}` }),
        () => ({ type: 'text', content: `${g.pick(WORDS)} ${g.pick(WORDS)} ${n}` }),
        () => ({ type: 'url', url: `${base}/openapi.json?v=${n}` }),
        () => ({ type: 'graphql', content: `type Query { item(id: ID!): Item items: [Item] }\ntype Item { id: ID! name: String }\n# ${n}` }),
        () => ({ type: 'website', url: `${base}/docs?v=${n}` }),
        () => ({ url: `${base}/text?v=${n}` }),
        () => ({ type: 'json', content: JSON.stringify({ faq: [{ q: 'reset', a: `answer ${n}` }] }) }),
        () => ({ type: 'github', url: `https://github.com/fuzz/repo${n}` }),
      ];
      const body = (f.phase === 'seed' ? kinds[f.sourceKind % kinds.length] : g.pick(kinds))();
      if (g.chance(0.3)) body.name = genText(f, 1, 40);
      return body;
    }
    case 'PATCH /api/v1/sources/{sourceId}': {
      const id = safeDecode(d.params.sourceId ?? '');
      const choices: Array<() => Record<string, unknown>> = [
        () => ({ name: genText(f, 1, 60) }),
        () => ({ auth: { type: 'bearer', secret: `sk_${uniqueNumber(f)}_secret` } }),
        () => ({ auth: { type: 'header', headerName: 'X-Api-Key', secret: `hk_${uniqueNumber(f)}` } }),
        () => ({ auth: { type: 'basic', username: 'fuzz', secret: `pw_${uniqueNumber(f)}` } }),
        () => ({ auth: null }),
        () => ({ publicDocs: { enabled: g.chance(0.5), published: g.chance(0.5), slug: `docs-${uniqueNumber(f)}` } }),
        () => ({ publicDocs: { enabled: g.chance(0.5), slug: null } }),
      ];
      if (f.pools[ws].sourceHasUrl.get(id)) choices.push(() => ({ url: `${base}/openapi.json?v=${uniqueNumber(f)}` }));
      return g.pick(choices)();
    }
    case 'POST /api/v1/sources/{sourceId}/checks': {
      const withEndpoints = [...f.pools[ws].endpoints.entries()].filter(([, e]) => e.length);
      if (withEndpoints.length) {
        const [sid, eps] = g.pick(withEndpoints);
        d.params.sourceId = encodeURIComponent(sid);
        d.targetIds = [sid];
        const body: Record<string, unknown> = { endpointId: g.pick(eps), parameters: { id: g.chance(0.5) ? uniqueNumber(f) : `item-${uniqueNumber(f)}`, limit: 5 } };
        if (g.chance(0.2)) body.body = { name: genText(f, 1, 20) };
        return body;
      }
      return { endpointId: g.uuid() };
    }
    case 'POST /api/v1/issues': {
      const b = genValue(f, route.body!, '', ws) as Record<string, unknown>;
      const conv = pickId(f, ws, 'conversation');
      if (conv && g.chance(0.5)) b.conversationId = conv; else delete b.conversationId;
      if (g.chance(0.5)) b.tags = [g.pick(f.pools[ws].tag.length ? f.pools[ws].tag : ['billing']), `t${f.rng.int(20)}`];
      return b;
    }
    case 'POST /api/v1/conversations': {
      const b = genValue(f, route.body!, '', ws) as Record<string, unknown>;
      if (b.externalId !== undefined) b.externalId = `ext-${f.seed}-${uniqueNumber(f)}`;
      return b;
    }
    default:
      return genValue(f, route.body!, '', ws);
  }
}

/** A value valid for `schema` (formats, enums, lengths, patterns). */
export function genValue(f: Fuzzer, schema: TSchema, name: string, ws: WsTag, depth = 0): unknown {
  const g = f.rng;
  const s = deref(schema);
  switch (s.kind) {
    case 'any': return g.pick<unknown>([null, 1, 'x', true, { a: 1 }, [1, 'two'], genText(f, 0, 20)]);
    case 'nullable': return g.chance(0.15) ? null : genValue(f, s.inner, name, ws, depth);
    case 'boolean': return g.chance(0.5);
    case 'integer': {
      const lo = s.minimum ?? 0;
      const hi = Math.min(s.maximum ?? lo + 1000, lo + 1000);
      return g.range(lo, hi);
    }
    case 'string': return genString(f, s, name);
    case 'array': {
      const n = g.range(s.minItems ?? 0, Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 3, 3)));
      return Array.from({ length: n }, () => genValue(f, s.items, name, ws, depth + 1));
    }
    case 'object': {
      const o: Record<string, unknown> = {};
      for (const [k, p] of Object.entries(s.properties as Record<string, TSchema>)) {
        if (p.optional && !g.chance(0.5)) continue;
        o[k] = genValue(f, p, k, ws, depth + 1);
      }
      if (s.additionalProperties === true && Object.keys(s.properties).length === 0 && depth < 3) {
        for (let i = g.int(3); i > 0; i--) o[`p${i}`] = g.pick<unknown>([genText(f, 1, 10), g.int(100), g.chance(0.5)]);
      }
      return o;
    }
    default: return null;
  }
}

/** A string valid for `s` (enum, format, pattern, length), shaped by the property `name`. */
export function genString(f: Fuzzer, s: TString, name: string): string {
  const g = f.rng;
  if (s.enum) return g.pick(s.enum);
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? 80;
  if (s.format === 'email') return fitCodePoints(`${g.pick(['ada', 'grace', 'linus', 'zoë', 'o.brien'])}.${uniqueNumber(f)}@${g.pick(['example.com', 'acme.io', 'b.co', 'exämple.org'])}`, max);
  if (s.format === 'date-time') return new Date(f.clock.now() - g.int(30 * 86_400_000)).toISOString();
  if (s.format === 'uuid') return g.uuid();
  if (s.format === 'uri' || name === 'url') return `${f.up.url}/page/${uniqueNumber(f)}`;
  if (s.pattern) {
    const re = new RegExp(s.pattern);
    const cands = [`docs-${uniqueNumber(f)}`, 'X-Api-Key', `k${uniqueNumber(f)}`, 'a', 'abc-def'];
    return cands.find((c) => re.test(c) && c.length >= min && c.length <= max) ?? 'a';
  }
  return genText(f, Math.max(min, 1), Math.min(max, 60));
}

/** Human-ish text of min…max code points, sometimes with non-ASCII. */
export function genText(f: Fuzzer, min: number, max: number): string {
  const g = f.rng;
  const target = g.range(min, Math.max(min, max));
  let s = '';
  while (codePointLength(s) < target) s += (s ? ' ' : '') + (g.chance(0.15) ? g.pick(UNICODE) : g.pick(WORDS));
  s = fitCodePoints(s, target).trim();
  while (codePointLength(s) < min) s += 'x';
  return s;
}

// ───────── mutations ─────────

/** A valid request to `route` with one to three mutations applied (weighted pick among those that apply). */
export function mutatedDraft(f: Fuzzer, route: Route): Draft {
  const g = f.rng;
  const d = validDraft(f, route, g.chance(0.8) ? 'A' : 'B');
  d.valid = false;
  const n = g.weighted([[1, 80], [2, 15], [3, 5]] as const);
  for (let i = 0; i < n; i++) {
    const applicable = MUTATORS.filter((m) => m.applies(d, f));
    if (!applicable.length) break;
    for (let tries = 0; tries < 4; tries++) {
      const m = g.weighted(applicable.map((x) => [x, x.weight * (x.heavy ? f.heavy : 1)] as const));
      const name = m.apply(d, f);
      if (name) { d.muts.push(name); break; }
    }
  }
  if (d.muts.length === 0) d.muts.push('none');
  return d;
}

/** Requests no route serves: unknown paths, other methods, odd request targets. */
export function unmatchedDraft(f: Fuzzer): Draft {
  const g = f.rng;
  const r = g.pick(f.apiRoutes());
  const d = validDraft(f, r, 'A');
  d.valid = false;
  d.route = undefined;
  d.routeKey = 'unmatched';
  d.body = g.chance(0.3) ? { a: 1 } : NO_BODY;
  if (d.body !== NO_BODY) d.headers['Content-Type'] = 'application/json';
  const choice = g.int(3);
  if (choice === 0) {
    // another method on a real path → 405 with Allow
    const template = r.path.replace(/\{(\w+)\}/g, (_m, p: string) => d.params[p] ?? 'x');
    d.rawPath = template;
    d.method = g.pick(['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS', 'HEAD', 'TRACE']);
    d.muts.push(`method.${d.method}`);
  } else {
    // Not `/`: with WEB_UI it is the landing page (src/web/homePage.ts), whose other methods answer 405.
    d.rawPath = g.pick(['/api', '/api/v1', '/api/v1/', '/api/v2/conversations', '/api/v1/unknown', '/API/V1/CONVERSATIONS', '//api/v1/conversations',
      '/api/v1/conversations/', '/api/v1/conversations/x/y/z', '/api/v1/sources/search/x', '/api/v1/issues/%2F', '/api/v1//issues', '/healthz/',
      '/%00', '/api/v1/conversations%00', '/api/v1/%2e%2e/healthz', '/api/v1/./conversations', '/api/v1/../v1/conversations', '/api/v1/openapi.json/x',
      `/api/v1/${'a'.repeat(g.pick([300, 5000]))}`, '/api/v1/conversations;a=b', '/robots.txt', '/.env', '/favicon.ico', '/api/v1/conversations/%',
      '/api/v1/issues/%E0%A4%A', '/api/v1/\u00e9'.replace('\u00e9', '%C3%A9')]);
    d.method = g.pick(['GET', 'POST', 'DELETE', 'PATCH', 'HEAD']);
    d.muts.push('path.unknown');
  }
  return d;
}

/** Malformed HTTP on a fresh connection: the parser must answer 400/431 (or close) and never hang. */
export function protocolDraft(f: Fuzzer): Draft {
  const g = f.rng;
  const r = g.pick(f.apiRoutes().filter((x) => x.scope !== null));
  const d = validDraft(f, r, 'A');
  d.valid = false;
  d.routeKey = 'protocol';
  const path = r.path.replace(/\{(\w+)\}/g, (_m, p: string) => d.params[p] ?? 'x');
  const auth = `Authorization: ${f.keys.main.header}\r\n`;
  const host = `Host: 127.0.0.1\r\n`;
  const body = '{"subject":"x"}';
  const variants: Array<[string, Buffer]> = [
    ['raw.highBytesPath', Buffer.concat([Buffer.from(`GET ${path}/`), Buffer.from([0xff, 0xfe, 0x80]), Buffer.from(` HTTP/1.1\r\n${host}${auth}Connection: close\r\n\r\n`)])],
    ['raw.nulInPath', Buffer.from(`GET ${path}\u0000x HTTP/1.1\r\n${host}${auth}Connection: close\r\n\r\n`, 'latin1')],
    ['raw.spaceInPath', Buffer.from(`GET ${path} x HTTP/1.1\r\n${host}${auth}Connection: close\r\n\r\n`)],
    ['raw.clAndTe', Buffer.from(`POST ${path} HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)],
    ['raw.twoContentLengths', Buffer.from(`POST ${path} HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nContent-Length: 3\r\nConnection: close\r\n\r\n${body}`)],
    ['raw.badChunkSize', Buffer.from(`POST ${path} HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n${body}\r\n0\r\n\r\n`)],
    ['raw.negativeLength', Buffer.from(`POST ${path} HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nContent-Length: -1\r\nConnection: close\r\n\r\n${body}`)],
    ['raw.headerNoColon', Buffer.from(`GET ${path} HTTP/1.1\r\n${host}${auth}Bogus header line\r\nConnection: close\r\n\r\n`)],
    ['raw.headerNul', Buffer.from(`GET ${path} HTTP/1.1\r\n${host}${auth}X-Bad: a\u0000b\r\nConnection: close\r\n\r\n`, 'latin1')],
    ['raw.obsFold', Buffer.from(`GET ${path} HTTP/1.1\r\n${host}${auth}X-Folded: a\r\n  b\r\nConnection: close\r\n\r\n`)],
    ['raw.http10', Buffer.from(`GET ${path} HTTP/1.0\r\n${auth}\r\n`)],
    ['raw.http2Line', Buffer.from(`GET ${path} HTTP/2.0\r\n${host}${auth}Connection: close\r\n\r\n`)],
    ['raw.lowercaseMethod', Buffer.from(`get ${path} HTTP/1.1\r\n${host}${auth}Connection: close\r\n\r\n`)],
    ['raw.unknownMethod', Buffer.from(`FROB ${path} HTTP/1.1\r\n${host}${auth}Connection: close\r\n\r\n`)],
    ['raw.absoluteForm', Buffer.from(`GET http://127.0.0.1${path} HTTP/1.1\r\n${host}${auth}Connection: close\r\n\r\n`)],
    ['raw.asterisk', Buffer.from(`OPTIONS * HTTP/1.1\r\n${host}Connection: close\r\n\r\n`)],
    ['raw.bareLf', Buffer.from(`GET ${path} HTTP/1.1\n${host.replace('\r', '')}${auth.replace('\r', '')}Connection: close\n\n`)],
    ['raw.teGzip', Buffer.from(`POST ${path} HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`)],
    ['raw.hugeHeader', Buffer.from(`GET ${path} HTTP/1.1\r\n${host}${auth}X-Big: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`)],
    ['raw.manyHeaders', Buffer.from(`GET ${path} HTTP/1.1\r\n${host}${auth}${Array.from({ length: 3000 }, (_, i) => `X-H${i}: v\r\n`).join('')}Connection: close\r\n\r\n`)],
    ['raw.chunkedEmpty', Buffer.from(`POST ${path} HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`)],
    ['raw.chunkExtension', Buffer.from(`POST ${path} HTTP/1.1\r\n${host}${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)};${'x'.repeat(5000)}\r\n${body}\r\n0\r\n\r\n`)],
    ['raw.pipelined', Buffer.from(`GET /healthz HTTP/1.1\r\n${host}\r\nGET ${path} HTTP/1.1\r\n${host}${auth}Connection: close\r\n\r\n`)],
  ];
  const [name, raw] = g.pick(variants);
  d.raw = raw;
  d.muts.push(name);
  return d;
}
