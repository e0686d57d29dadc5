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
import * as http from 'node:http';
import * as net from 'node:net';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { contractDocument, contractViolations, type OpenApiDocument } from '../helpers/contract.js';
import { ManualClock } from '../../src/clock.js';
import { ERRORS } from '../../src/http/errors.js';
import { checkBodyHeaders, parseJsonBody, MAX_DEPTH } from '../../src/http/body.js';
import { assertValid, codePointLength, type TSchema, type TObject, type TString } from '../../src/http/schema.js';
import { parseQuery } from '../../src/app.js';
import { hasScope } from '../../src/auth/keys.js';
import { MiB, type Route } from '../../src/http/route.js';
import type { Records, Workspace } from '../../src/workspace.js';
import type { ChangeListener, Rec } from '../../src/store/db.js';
import type { IncomingMessage } from 'node:http';

// ───────────────────────────── PRNG ─────────────────────────────

const rotl = (x: number, k: number): number => ((x << k) | (x >>> (32 - k))) >>> 0;

/** splitmix32 step: a well-mixed 32-bit value from `x`. */
function mix32(x: number): number {
  let z = (x + 0x9e3779b9) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  return (z ^ (z >>> 16)) >>> 0;
}

/** A seed for stream `n` of `seed` (iterations, rounds). */
export const deriveSeed = (seed: number, n: number): number => mix32(mix32(seed >>> 0) ^ mix32((n * 0x632be5ab) >>> 0));

/** xoshiro128** (Blackman & Vigna), seeded through splitmix32. Deterministic, not cryptographic. */
export class Rng {
  private a: number; private b: number; private c: number; private d: number;
  constructor(seed: number) {
    let s = seed >>> 0;
    const next = () => { s = (s + 0x9e3779b9) >>> 0; return mix32(s); };
    this.a = next(); this.b = next(); this.c = next(); this.d = next();
    if ((this.a | this.b | this.c | this.d) === 0) this.a = 1;
  }
  u32(): number {
    const r = Math.imul(rotl(Math.imul(this.b, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.b << 9) >>> 0;
    this.c = (this.c ^ this.a) >>> 0; this.d = (this.d ^ this.b) >>> 0;
    this.b = (this.b ^ this.c) >>> 0; this.a = (this.a ^ this.d) >>> 0;
    this.c = (this.c ^ t) >>> 0; this.d = rotl(this.d, 11);
    return r;
  }
  float(): number { return this.u32() / 4294967296; }
  /** 0 … n-1 */
  int(n: number): number { return Math.floor(this.float() * n); }
  /** lo … hi inclusive */
  range(lo: number, hi: number): number { return lo + this.int(hi - lo + 1); }
  chance(p: number): boolean { return this.float() < p; }
  pick<T>(a: readonly T[]): T { return a[this.int(a.length)]; }
  weighted<T>(items: ReadonlyArray<readonly [T, number]>): T {
    let total = 0;
    for (const [, w] of items) total += w;
    let x = this.float() * total;
    for (const [v, w] of items) { x -= w; if (x < 0) return v; }
    return items[items.length - 1][0];
  }
  bytes(n: number): Buffer {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i += 4) {
      const v = this.u32();
      for (let j = 0; j < 4 && i + j < n; j++) b[i + j] = (v >>> (8 * j)) & 0xff;
    }
    return b;
  }
  shuffle<T>(a: T[]): T[] {
    for (let i = a.length - 1; i > 0; i--) { const j = this.int(i + 1); [a[i], a[j]] = [a[j], a[i]]; }
    return a;
  }
  /** A random (v4-shaped) UUID. */
  uuid(): string {
    const h = this.bytes(16);
    h[6] = (h[6] & 0x0f) | 0x40; h[8] = (h[8] & 0x3f) | 0x80;
    const x = h.toString('hex');
    return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
  }
}

// ─────────────────── JSON value model with raw pieces ───────────────────

/** JSON text emitted verbatim (numbers out of range, deep nesting, broken syntax). */
class Raw { constructor(readonly text: string) {} }
/** Bytes emitted verbatim (invalid UTF-8, random bytes). */
class RawBytes { constructor(readonly bytes: Buffer) {} }
/** A JSON object as an ordered list of entries: duplicate keys, `__proto__` as a plain key. */
class Entries { constructor(readonly entries: Array<[string, unknown]>) {} }
/** A JSON string whose content holds raw (invalid UTF-8) bytes between two valid parts. */
class BadStr { constructor(readonly before: string, readonly bytes: Buffer, readonly after: string) {} }

const isSpecial = (v: unknown): boolean => v instanceof Raw || v instanceof RawBytes || v instanceof Entries || v instanceof BadStr;
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !isSpecial(v);

function serialize(v: unknown): Buffer {
  const out: Array<string | Buffer> = [];
  const emit = (x: unknown): void => {
    if (x instanceof Raw) out.push(x.text);
    else if (x instanceof RawBytes) out.push(x.bytes);
    else if (x instanceof BadStr) { out.push(JSON.stringify(x.before).slice(0, -1)); out.push(x.bytes); out.push(JSON.stringify(x.after).slice(1)); }
    else if (x instanceof Entries) {
      out.push('{');
      x.entries.forEach(([k, val], i) => { if (i) out.push(','); out.push(JSON.stringify(k) + ':'); emit(val); });
      out.push('}');
    } else if (Array.isArray(x)) {
      out.push('[');
      x.forEach((val, i) => { if (i) out.push(','); emit(val === undefined ? null : val); });
      out.push(']');
    } else if (isPlainObject(x)) {
      out.push('{');
      let first = true;
      for (const k of Object.keys(x)) {
        if (x[k] === undefined) continue;
        if (!first) out.push(',');
        first = false;
        out.push(JSON.stringify(k) + ':');
        emit(x[k]);
      }
      out.push('}');
    } else out.push(JSON.stringify(x) ?? 'null');
  };
  emit(v);
  return Buffer.concat(out.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
}

/** Deep copy of plain JSON data; special pieces are shared (they are never changed). */
function clone<T>(v: T): T {
  if (Array.isArray(v)) return v.map(clone) as T;
  if (isPlainObject(v)) { const o: Record<string, unknown> = {}; for (const k of Object.keys(v)) o[k] = clone(v[k]); return o as T; }
  return v;
}

type Seg = string | number;

function getAt(root: unknown, path: Seg[]): unknown {
  let v = root;
  for (const s of path) {
    if (Array.isArray(v) && typeof s === 'number') v = v[s];
    else if (isPlainObject(v) && typeof s === 'string') v = v[s];
    else return undefined;
  }
  return v;
}

/** Sets (or, with `del`, deletes) the value at `path`; returns the new root. */
function setAt(root: unknown, path: Seg[], value: unknown, del = false): unknown {
  if (path.length === 0) return value;
  const parent = getAt(root, path.slice(0, -1));
  const last = path[path.length - 1];
  if (Array.isArray(parent) && typeof last === 'number') { if (del) parent.splice(last, 1); else parent[last] = value; }
  else if (isPlainObject(parent) && typeof last === 'string') { if (del) delete parent[last]; else parent[last] = value; }
  return root;
}

// ───────────────────────────── schemas ─────────────────────────────

function deref(s: TSchema): TSchema {
  let x = s;
  for (let i = 0; i < 10 && x.kind === 'ref'; i++) x = x.target();
  return x;
}

/** The JSON type check of a schema kind (not lengths or formats): certain mismatches only. */
function typeOk(schema: TSchema | undefined, v: unknown): boolean {
  if (!schema) return true;
  const s = deref(schema);
  switch (s.kind) {
    case 'any': return true;
    case 'nullable': return v === null || typeOk(s.inner, v);
    case 'string': return typeof v === 'string';
    case 'integer': return typeof v === 'number' && Number.isSafeInteger(v);
    case 'boolean': return typeof v === 'boolean';
    case 'array': return Array.isArray(v);
    case 'object': return isPlainObject(v);
    default: return true;
  }
}

/** A place in a body: a present value (with its schema when known) or an absent optional property. */
interface Slot { path: Seg[]; schema?: TSchema }

function slotsOf(schema: TSchema | undefined, v: unknown, path: Seg[] = [], out: Slot[] = []): Slot[] {
  out.push({ path, schema });
  if (path.length > 8) return out;
  const s = schema && deref(schema);
  const inner = s?.kind === 'nullable' ? deref(s.inner) : s;
  if (Array.isArray(v)) v.forEach((x, i) => slotsOf(inner?.kind === 'array' ? inner.items : undefined, x, [...path, i], out));
  else if (isPlainObject(v)) {
    for (const k of Object.keys(v)) {
      const props = inner?.kind === 'object' ? (inner.properties as Record<string, TSchema>) : undefined;
      slotsOf(props && Object.hasOwn(props, k) ? props[k] : undefined, v[k], [...path, k], out);
    }
  }
  return out;
}

const objectSchema = (sl: Slot): TObject | undefined => {
  if (!sl.schema) return undefined;
  let s = deref(sl.schema);
  if (s.kind === 'nullable') s = deref(s.inner);
  return s.kind === 'object' ? s : undefined;
};
const stringSchema = (sl: Slot): TString | undefined => {
  if (!sl.schema) return undefined;
  let s = deref(sl.schema);
  if (s.kind === 'nullable') s = deref(s.inner);
  return s.kind === 'string' ? s : undefined;
};

// ───────────────────────────── text ─────────────────────────────

const WORDS = ['printer', 'on', 'fire', 'login', 'refund', 'invoice', 'api', 'token', 'error', 'help', 'billing', 'webhook',
  'timeout', 'slow', 'export', 'csv', 'password', 'reset', 'order', 'shipping', 'account', 'locked', 'widget', 'search'];
const UNICODE = ['é', 'ß', '日本語', 'עברית', 'العربية', '😀', '👩‍💻', 'e\u0301', 'Ω', 'ﬁ', 'Ⅻ', '١٢٣', 'ＦＵＬＬ', '🇫🇷', '\u00a0'];
/** Lone surrogates (JSON.stringify writes them as `\ud800` escapes), controls, bidi, BOM, noncharacters, combining stacks. */
const UNICODE_EDGES = [
  '\ud800', '\udc00', '\udbff\udbff', '\udc00\ud800', 'a\ud800b', '\u0000', 'a\u0000b', '\u0001\u0002\u001f\u007f',
  '\u200e', '\u200f', '\u202e', '\u202egnp.exe', '\u2066\u2069', '\ufeff', '\ufeffsubject', '\uffff', '\ufffe', '\ufffd',
  'a' + '\u0301'.repeat(200), 'Z̷̧̛̖̰͓̈́͌a̶̜̐l̷g̸o̵', '👨‍👩‍👧‍👦', '🏳️‍🌈', '\u{10FFFF}', '\u{E0001}\u{E0041}', '\u2028\u2029', '\r\n', '\t',
  '\u0085', '\u3000', 'İ', 'ǅ', '\u1160', '\u{1F600}'.repeat(50), ' ', '', '"\\/', '</script><script>alert(1)</script>',
  "' OR 1=1 --", '${7*7}', '{{7*7}}', '%s%n', '../../../../etc/passwd', 'null', 'undefined', 'NaN', '-0', '1e309', '__proto__',
];
/** Invalid UTF-8: overlong encodings, surrogates, out-of-range, stray continuation, truncated, 0xFE/0xFF. */
const BAD_UTF8: Buffer[] = [
  [0xc0, 0xaf], [0xc0, 0x80], [0xe0, 0x80, 0xaf], [0xf0, 0x80, 0x80, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xfc, 0x84, 0x80, 0x80, 0x80, 0x80],
  [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80], [0xbf], [0xe2, 0x82], [0xf0, 0x9f, 0x98],
  [0xfe], [0xff], [0xff, 0xfe], [0xc3], [0xe2, 0x28, 0xa1], [0xc1, 0xbf],
].map((b) => Buffer.from(b));
/** Out-of-range and awkward JSON numbers (some are not JSON at all). */
const NUMBER_EDGES: Array<[string, boolean]> = [ // [text, is valid JSON]
  ['1e309', true], ['-1e309', true], ['-0', true], ['1.5', true], ['9007199254740993', true], ['-9007199254740993', true],
  ['9007199254740992', true], ['1e-400', true], ['0.0000001', true], ['1E2', true], ['100000000000000000000000000000000000000', true],
  ['-1', true], ['0', true], ['2147483648', true], ['4294967296', true], ['1.0', true], ['5e-324', true], ['1.7976931348623157e308', true],
  ['0x10', false], ['NaN', false], ['Infinity', false], ['-Infinity', false], ['01', false], ['-', false], ['1.', false], ['.5', false], ['+1', false], ['1e', false],
];
const QUERY_NUMBERS = ['abc', '0', '101', '-1', '1.5', '1e3', '1e309', '-0', '9007199254740993', '999999999999999999999', '', ' 1', '1 ', '%201', '0x10', '١', '１', '+5', '5%00', 'null', 'true', '[]', '1,2'];
const DATE_EDGES = ['2026-02-30T00:00:00Z', '2026-06-29T24:00:00Z', '2026-06-29T23:59:60Z', '9999-12-31T23:59:59.999999999Z', '0000-01-01T00:00:00Z',
  '+275760-09-13T00:00:00Z', '2026-06-29T12:00:00+25:00', '2026-06-29', 'yesterday', '2026-06-29T12:00:00', '1970-01-01T00:00:00Z', '2026-06-29T12:00:00.1234567890Z',
  '2026-13-01T00:00:00Z', '-001-01-01T00:00:00Z', '2026-06-29t12:00:00z', '2026-06-29T12:00:00−01:00'];
const DAY_EDGES = ['2026-13-01', '0000-00-00', 'abcdefghij', '2026-6-1', '2026-02-30', '1970-01-01', '9999-12-31', '2026-06-29', '2025-06-29', '2026-06-30', '', '2026-06-29T00'];

// ───────────────────────────── HTTP plumbing ─────────────────────────────

export interface HttpResponse { status: number; headers: http.IncomingHttpHeaders; text: string; bytes: number }

type Sent = { ok: true; res: HttpResponse; ms: number } | { ok: false; error: string; timedOut: boolean; ms: number; head?: HttpResponse };

const RESPONSE_KEEP = 4 * MiB;

function readBody(res: http.IncomingMessage): Promise<{ text: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let kept = 0; let bytes = 0;
    res.on('data', (c: Buffer) => { bytes += c.length; if (kept < RESPONSE_KEEP) { chunks.push(c); kept += c.length; } });
    res.on('end', () => resolve({ text: Buffer.concat(chunks).toString('utf8'), bytes }));
    res.on('error', reject);
    res.on('aborted', () => reject(new Error('response aborted')));
  });
}

function parseRawResponse(data: Buffer): HttpResponse | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = data.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0]);
  if (!m) return undefined;
  const headers: http.IncomingHttpHeaders = {};
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = data.subarray(end + 4);
  const len = Number(headers['content-length']);
  if (Number.isFinite(len)) body = body.subarray(0, len);
  return { status: Number(m[1]), headers, text: body.toString('utf8'), bytes: body.length };
}

function toHeaders(h: http.IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    try { if (Array.isArray(v)) for (const x of v) out.append(k, x); else out.set(k, String(v)); } catch { /* a value Headers refuses: left out */ }
  }
  return out;
}

// ───────────────────────────── the local customer API ─────────────────────────────

function openapiDoc(base: string, n: number): Record<string, unknown> {
  return {
    openapi: '3.0.3', info: { title: `Fuzz Shop API ${n}`, version: '1.0.0', description: 'Orders, items and refunds.' },
    servers: [{ url: `${base}/api` }],
    paths: {
      '/items': {
        get: { operationId: 'listItems', summary: 'List items', parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer' } }], responses: { 200: { description: 'ok' } } },
        post: { operationId: 'createItem', summary: 'Create an item', requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { name: { type: 'string' } } } } } }, responses: { 201: { description: 'created' } } },
      },
      '/items/{id}': {
        get: { operationId: 'getItem', summary: 'Retrieve an item', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], responses: { 200: { description: 'ok' } } },
        delete: { operationId: 'deleteItem', summary: 'Delete an item', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], responses: { 204: { description: 'gone' } } },
      },
      '/refunds/{refundId}': { get: { summary: 'Refund status', responses: { 200: { description: 'ok' } } } },
    },
  };
}

interface Upstream { url: string; requests: number; close(): Promise<void> }

/** A local HTTP server standing in for customers' APIs and docs sites (URL sources, crawls, live checks). */
async function startUpstream(): Promise<Upstream> {
  let base = '';
  const up: Upstream = { url: '', requests: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    up.requests++;
    const u = new URL(req.url ?? '/', 'http://x');
    const json = (status: number, body: unknown) => { const t = JSON.stringify(body); res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(t) }); res.end(t); };
    req.resume();
    if (u.pathname === '/openapi.json') return json(200, openapiDoc(base, Number(u.searchParams.get('v') ?? 0)));
    if (u.pathname.startsWith('/docs')) {
      const html = `<!doctype html><html><head><title>Docs ${u.pathname}</title></head><body><h1>Help center</h1><p>How to reset a password and export invoices as CSV.</p>`
        + `<a href="/docs/a">A</a> <a href="/docs/b">B</a> <a href="/docs/c?x=1">C</a> <a href="http://example.invalid/">out</a></body></html>`;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }); return res.end(html);
    }
    if (u.pathname === '/text') { res.writeHead(200, { 'content-type': 'text/plain' }); return res.end('Plain text help: refunds take 5 days.'); }
    if (u.pathname.startsWith('/api/')) {
      if (u.pathname.endsWith('/401')) return json(401, { error: 'unauthorized' });
      return json(200, { ok: true, method: req.method, path: u.pathname, query: u.search, auth: req.headers.authorization ? 'present' : 'absent' });
    }
    if (u.pathname.startsWith('/repos/')) return json(404, { message: 'Not Found' });
    json(404, { error: 'not found' });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address() as net.AddressInfo;
  base = `http://127.0.0.1:${addr.port}`;
  up.url = base;
  up.close = () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
  return up;
}

// ───────────────────────────── the fuzzer ─────────────────────────────

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
  | 'post_run' // health, a normal create, or the state after restart
  | 'fuzzer_error'; // the fuzzer itself threw (a bug here, reported rather than crashing the run)

export interface Reproducer { method: string; target: string; headers: Record<string, string>; bodyBytes: number; bodyPreview: string; raw?: string }
export interface Failure {
  kind: FailureKind; seed: number; iteration: number; phase: string; route: string; mutations: string[];
  message: string; request?: Reproducer; response?: { status: number; body: string };
}

export interface RouteStats { requests: number; valid: number; statuses: Map<number, number> }

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

type WsTag = 'A' | 'B';
type KeyRole = 'main' | 'other' | 'limited' | 'expired' | 'revoked' | 'none' | 'garbage';

interface KeyInfo { role: KeyRole; header?: string | string[]; ws?: WsTag; scopes?: string[] }

interface Pools {
  conversation: string[]; issue: string[]; source: string[]; agent: string[]; client: string[]; tag: string[];
  endpoints: Map<string, string[]>; sourceHasUrl: Map<string, boolean>; cursors: Map<string, string[]>; widgetKeys: string[];
}
const newPools = (): Pools => ({ conversation: [], issue: [], source: [], agent: [], client: [], tag: [], endpoints: new Map(), sourceHasUrl: new Map(), cursors: new Map(), widgetKeys: [] });
const POOL_KINDS = ['conversation', 'issue', 'source', 'agent', 'client'] as const;
type PoolKind = (typeof POOL_KINDS)[number];
const POOL_CAP = 150;
const PARAM_KIND: Record<string, PoolKind> = { conversationId: 'conversation', issueId: 'issue', sourceId: 'source', agentId: 'agent', clientId: 'client' };
const paramKind = (name: string): PoolKind | undefined => PARAM_KIND[name] ?? (POOL_KINDS as readonly string[]).find((k) => `${k}Id` === name) as PoolKind | undefined;

const NO_BODY = Symbol('no body');

/** A request being built: from a valid one, then mutated. */
interface Draft {
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

interface IdemEntry { role: 'main' | 'other'; key: string; fingerprint: string; status: number; text: string; method: string; path: string; query: string; body: Buffer | undefined; headers: Record<string, string | string[]> }

interface Plan {
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

const printable = /^[\x20-\x7e]{1,128}$/;
const IDEM_VALUE = /^[\x20-\x7e]{1,255}$/;

/** Runs the fuzzer; never throws for a server misbehaviour (those are failures in the report). */
export async function runFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const f = new Fuzzer(opts);
  return f.run();
}

class Fuzzer {
  private readonly seed: number;
  private readonly timeoutMs: number;
  private readonly maxFailures: number;
  private readonly heavy: number;
  private readonly log: (l: string) => void;
  private srv!: TestServer;
  private up!: Upstream;
  private doc!: OpenApiDocument;
  private agent!: http.Agent;
  private readonly clock = new ManualClock();
  private readonly env: Record<string, string>;
  private readonly dataDir = tempDir('sw-fuzz-');
  private keys: Record<string, KeyInfo> = {};
  private limitedKeys: KeyInfo[] = [];
  private wsId: Record<WsTag, string> = { A: '', B: '' };
  private readonly pools: Record<WsTag, Pools> = { A: newPools(), B: newPools() };
  /** Every id harvested from a success, with the workspace it belongs to. */
  private readonly owner = new Map<string, WsTag>();
  private readonly idemPool: IdemEntry[] = [];
  /** Every (role, Idempotency-Key) that got a success: the server keeps them 24 h. */
  private readonly usedIdem = new Set<string>();
  private n = 0; // uniqueness counter for generated values
  private phase = 'seed';
  private iteration = -1;
  private rng!: Rng;
  private changes: Array<{ ws: WsTag; type: string; id: string; prev: Rec | undefined; next: Rec | undefined }> = [];
  private recording = false;
  private readonly report: FuzzReport;

  constructor(private readonly opts: FuzzOptions) {
    this.seed = opts.seed >>> 0;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.maxFailures = opts.maxFailures ?? 100;
    this.heavy = opts.heavy ?? 1;
    this.log = opts.log ?? (() => {});
    this.env = {
      RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000', SOURCE_FETCH_ALLOW_PRIVATE: 'true',
      SOURCE_FETCH_TIMEOUT_MS: '3000', SOURCE_CRAWL_MAX_PAGES: '3', LOG_LEVEL: 'error',
    };
    this.report = {
      seed: this.seed, iterations: opts.iterations, routeFilter: opts.route, seedRequests: 0, requests: 0, durationMs: 0, phases: {},
      perRoute: new Map(), mutations: new Map(), statuses: new Map(), validRejected: new Map(), failures: [], failureCount: 0,
      failuresByKind: new Map(), expectationsChecked: 0, upstreamRequests: 0, retries: 0,
      memory: { rssStartMb: mb(process.memoryUsage().rss), rssEndMb: 0, heapEndMb: 0 },
    };
  }

  // ───────── lifecycle ─────────

  async run(): Promise<FuzzReport> {
    const t0 = performance.now();
    this.up = await startUpstream();
    this.env.GITHUB_API_URL = this.up.url;
    this.srv = await startTestServer({ env: this.env, clock: this.clock, dataDir: this.dataDir });
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
      await this.postRun();
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

  private async setup(): Promise<void> {
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
  }

  private workspace(tag: WsTag): Workspace {
    const ws = this.srv.store.workspace(this.wsId[tag]);
    if (!ws) throw new Error(`workspace ${tag} is gone`);
    return ws;
  }

  private routeBy(method: string, path: string): Route | undefined {
    return this.srv.routes.find((r) => r.method === method && r.path === path);
  }

  private async seedState(): Promise<void> {
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
    ];
    for (const [method, path, a, b] of plan) {
      const r = this.routeBy(method, path);
      if (!r) continue;
      for (let i = 0; i < a + b; i++) {
        this.sourceKind = i; // cycles through the kinds of source bodies
        await this.execute(this.validDraft(r, i < a ? 'A' : 'B'));
      }
    }
    // Every list once per workspace with a small page: cursors and the ids lists show (agents, clients).
    for (const r of this.srv.routes) {
      if (r.method !== 'GET' || !r.query || !r.query.properties.cursor) continue;
      for (const ws of ['A', 'B'] as const) {
        const d = this.validDraft(r, ws);
        d.query = [['limit', '1']];
        await this.execute(d);
      }
    }
    // Then two valid requests of every route to fuzz, generated from its schemas.
    for (const r of this.targetRoutes()) for (let i = 0; i < 2; i++) await this.execute(this.validDraft(r, i === 0 ? 'A' : 'B'));
    this.log(`seeded: ${this.report.requests} requests; A has ${this.pools.A.conversation.length} conversations, ${this.pools.A.issue.length} issues, ${this.pools.A.source.length} sources`);
  }

  private targetRoutes(): Route[] {
    const f = this.opts.route;
    return this.srv.routes.filter((r) => !f || `${r.method} ${r.path}`.includes(f));
  }

  private async mainLoop(): Promise<void> {
    this.phase = 'fuzz';
    const routes = this.targetRoutes();
    const slots: Array<Route | 'unmatched' | 'protocol'> = [...routes];
    if (!this.opts.route) slots.push('unmatched', 'protocol');
    if (slots.length === 0) throw new Error(`no route matches ${JSON.stringify(this.opts.route)}`);
    let order: Array<Route | 'unmatched' | 'protocol'> = [];
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
        if (slot === 'unmatched') d = this.unmatchedDraft();
        else if (slot === 'protocol') d = this.protocolDraft();
        else if (this.rng.chance(0.12)) d = this.validDraft(slot, this.rng.chance(0.75) ? 'A' : 'B');
        else d = this.mutatedDraft(slot);
        await this.execute(d);
      } catch (e) {
        this.recording = false;
        this.fail('fuzzer_error', undefined, undefined, `${typeof slot === 'string' ? slot : `${slot.method} ${slot.path}`}: ${(e as Error).stack ?? String(e)}`);
      }
      if ((i + 1) % 2000 === 0) {
        this.log(`${i + 1}/${this.opts.iterations} iterations, ${this.report.requests} requests, ${this.report.failureCount} failures, ${Math.round((performance.now() - started) / 1000)} s, rss ${mb(process.memoryUsage().rss)} MB`);
      }
    }
    this.iteration = -1;
  }

  // ───────── valid requests ─────────

  private sourceKind = 0;
  private next(): number { return ++this.n; }

  private keyFor(ws: WsTag): KeyInfo { return ws === 'A' ? this.keys.main : this.keys.other; }

  private pickId(ws: WsTag, kind: PoolKind): string | undefined {
    const p = this.pools[ws][kind];
    return p.length ? this.rng.pick(p) : undefined;
  }

  private validDraft(route: Route, ws: WsTag): Draft {
    const g = this.rng;
    const d: Draft = {
      route, routeKey: `${route.method} ${route.path}`, method: route.method, params: {}, query: [], body: NO_BODY,
      headers: {}, key: route.scope === null ? { role: 'none' } : this.keyFor(ws), ws, chunked: false, muts: [], valid: true, targetIds: [], certain: [],
    };
    for (const m of route.path.matchAll(/\{(\w+)\}/g)) {
      const kind = paramKind(m[1]);
      const id = (kind && this.pickId(ws, kind)) ?? g.uuid();
      d.params[m[1]] = encodeURIComponent(id);
      d.targetIds.push(id);
    }
    if (route.query) {
      const q: Array<[string, string]> = [];
      for (const [k, s] of Object.entries(route.query.properties as Record<string, TSchema>)) {
        if (s.optional && !g.chance(0.3)) continue;
        const v = this.validQueryValue(route, ws, k, s, d.params);
        if (v !== undefined) q.push([k, v]);
      }
      d.query = q;
    }
    if (route.body) {
      if (route.bodyOptional && g.chance(0.5)) d.body = NO_BODY;
      else d.body = this.validBody(route, ws, d);
      if (d.body !== NO_BODY || !route.bodyOptional) d.headers['Content-Type'] = g.weighted([['application/json', 8], ['application/json; charset=utf-8', 2], ['Application/JSON', 1], ['application/json;charset=UTF-8', 1]] as const);
    }
    if (route.method === 'POST' && g.chance(0.3)) d.headers['Idempotency-Key'] = this.idemKey();
    if (g.chance(0.1)) d.headers['Api-Version'] = '2026-06-29';
    if (g.chance(0.15)) d.headers['X-Request-Id'] = `fuzz-${this.next()}`;
    return d;
  }

  private idemKey(): string {
    const g = this.rng;
    const n = g.weighted([[8, 2], [36, 5], [1, 1], [255, 1]] as const);
    let s = '';
    for (let i = 0; i < n; i++) s += String.fromCharCode(g.range(0x21, 0x7e));
    return n > 1 ? `${s.slice(0, n - 1)}${g.pick(['k', ' ', '~'])}`.replace(/^ /, 'k') : s;
  }

  private validQueryValue(route: Route, ws: WsTag, name: string, schema: TSchema, params: Record<string, string> = {}): string | undefined {
    const g = this.rng;
    const p = this.pools[ws];
    if (name === 'cursor') { const c = p.cursors.get(listKey(route, params)); return c?.length ? g.pick(c) : undefined; }
    if (name === 'tag') return p.tag.length ? g.pick(p.tag) : 'billing';
    if (name === 'conversationId') return this.pickId(ws, 'conversation');
    if (name === 'q') return g.pick([...WORDS, 'reset password', 'items', 'refund status', 'Fuzz Shop']);
    if (name === 'from' || name === 'to') {
      const day = new Date(this.clock.now() - (name === 'from' ? g.range(5, 40) : g.range(0, 3)) * 86_400_000).toISOString().slice(0, 10);
      return day;
    }
    const v = this.genValue(schema, name, ws);
    if (typeof v === 'string') return v;
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    return undefined;
  }

  private validBody(route: Route, ws: WsTag, d: Draft): unknown {
    const g = this.rng;
    const key = `${route.method} ${route.path}`;
    const base = this.up.url;
    switch (key) {
      case 'POST /api/v1/sources': {
        const n = this.next();
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
        const body = (this.phase === 'seed' ? kinds[this.sourceKind % kinds.length] : g.pick(kinds))();
        if (g.chance(0.3)) body.name = this.text(1, 40);
        return body;
      }
      case 'PATCH /api/v1/sources/{sourceId}': {
        const id = safeDecode(d.params.sourceId ?? '');
        const choices: Array<() => Record<string, unknown>> = [
          () => ({ name: this.text(1, 60) }),
          () => ({ auth: { type: 'bearer', secret: `sk_${this.next()}_secret` } }),
          () => ({ auth: { type: 'header', headerName: 'X-Api-Key', secret: `hk_${this.next()}` } }),
          () => ({ auth: { type: 'basic', username: 'fuzz', secret: `pw_${this.next()}` } }),
          () => ({ auth: null }),
          () => ({ publicDocs: { enabled: g.chance(0.5), published: g.chance(0.5), slug: `docs-${this.next()}` } }),
          () => ({ publicDocs: { url: `${base}/docs/public`, slug: null } }),
        ];
        if (this.pools[ws].sourceHasUrl.get(id)) choices.push(() => ({ url: `${base}/openapi.json?v=${this.next()}` }));
        return g.pick(choices)();
      }
      case 'POST /api/v1/sources/{sourceId}/checks': {
        const withEndpoints = [...this.pools[ws].endpoints.entries()].filter(([, e]) => e.length);
        if (withEndpoints.length) {
          const [sid, eps] = g.pick(withEndpoints);
          d.params.sourceId = encodeURIComponent(sid);
          d.targetIds = [sid];
          const body: Record<string, unknown> = { endpointId: g.pick(eps), parameters: { id: g.chance(0.5) ? this.next() : `item-${this.next()}`, limit: 5 } };
          if (g.chance(0.2)) body.body = { name: this.text(1, 20) };
          return body;
        }
        return { endpointId: g.uuid() };
      }
      case 'POST /api/v1/issues': {
        const b = this.genValue(route.body!, '', ws) as Record<string, unknown>;
        const conv = this.pickId(ws, 'conversation');
        if (conv && g.chance(0.5)) b.conversationId = conv; else delete b.conversationId;
        if (g.chance(0.5)) b.tags = [g.pick(this.pools[ws].tag.length ? this.pools[ws].tag : ['billing']), `t${this.rng.int(20)}`];
        return b;
      }
      case 'POST /api/v1/conversations': {
        const b = this.genValue(route.body!, '', ws) as Record<string, unknown>;
        if (b.externalId !== undefined) b.externalId = `ext-${this.seed}-${this.next()}`;
        return b;
      }
      default:
        return this.genValue(route.body!, '', ws);
    }
  }

  /** A value valid for `schema` (formats, enums, lengths, patterns). */
  private genValue(schema: TSchema, name: string, ws: WsTag, depth = 0): unknown {
    const g = this.rng;
    const s = deref(schema);
    switch (s.kind) {
      case 'any': return g.pick<unknown>([null, 1, 'x', true, { a: 1 }, [1, 'two'], this.text(0, 20)]);
      case 'nullable': return g.chance(0.15) ? null : this.genValue(s.inner, name, ws, depth);
      case 'boolean': return g.chance(0.5);
      case 'integer': {
        const lo = s.minimum ?? 0;
        const hi = Math.min(s.maximum ?? lo + 1000, lo + 1000);
        return g.range(lo, hi);
      }
      case 'string': return this.genString(s, name);
      case 'array': {
        const n = g.range(s.minItems ?? 0, Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 3, 3)));
        return Array.from({ length: n }, () => this.genValue(s.items, name, ws, depth + 1));
      }
      case 'object': {
        const o: Record<string, unknown> = {};
        for (const [k, p] of Object.entries(s.properties as Record<string, TSchema>)) {
          if (p.optional && !g.chance(0.5)) continue;
          o[k] = this.genValue(p, k, ws, depth + 1);
        }
        if (s.additionalProperties === true && Object.keys(s.properties).length === 0 && depth < 3) {
          for (let i = g.int(3); i > 0; i--) o[`p${i}`] = g.pick<unknown>([this.text(1, 10), g.int(100), g.chance(0.5)]);
        }
        return o;
      }
      default: return null;
    }
  }

  private genString(s: TString, name: string): string {
    const g = this.rng;
    if (s.enum) return g.pick(s.enum);
    const min = s.minLength ?? 0;
    const max = s.maxLength ?? 80;
    if (s.format === 'email') return fitCodePoints(`${g.pick(['ada', 'grace', 'linus', 'zoë', 'o.brien'])}.${this.next()}@${g.pick(['example.com', 'acme.io', 'b.co', 'exämple.org'])}`, max);
    if (s.format === 'date-time') return new Date(this.clock.now() - g.int(30 * 86_400_000)).toISOString();
    if (s.format === 'uuid') return g.uuid();
    if (s.format === 'uri' || name === 'url') return `${this.up.url}/page/${this.next()}`;
    if (s.pattern) {
      const re = new RegExp(s.pattern);
      const cands = [`docs-${this.next()}`, 'X-Api-Key', `k${this.next()}`, 'a', 'abc-def'];
      return cands.find((c) => re.test(c) && c.length >= min && c.length <= max) ?? 'a';
    }
    return this.text(Math.max(min, 1), Math.min(max, 60));
  }

  /** Human-ish text of min…max code points, sometimes with non-ASCII. */
  private text(min: number, max: number): string {
    const g = this.rng;
    const target = g.range(min, Math.max(min, max));
    let s = '';
    while (codePointLength(s) < target) s += (s ? ' ' : '') + (g.chance(0.15) ? g.pick(UNICODE) : g.pick(WORDS));
    s = fitCodePoints(s, target).trim();
    while (codePointLength(s) < min) s += 'x';
    return s;
  }

  // ───────── mutations ─────────

  private mutatedDraft(route: Route): Draft {
    const g = this.rng;
    const d = this.validDraft(route, g.chance(0.8) ? 'A' : 'B');
    d.valid = false;
    const n = g.weighted([[1, 80], [2, 15], [3, 5]] as const);
    for (let i = 0; i < n; i++) {
      const applicable = MUTATORS.filter((m) => m.applies(d, this));
      if (!applicable.length) break;
      for (let tries = 0; tries < 4; tries++) {
        const m = g.weighted(applicable.map((x) => [x, x.weight * (x.heavy ? this.heavy : 1)] as const));
        const name = m.apply(d, this);
        if (name) { d.muts.push(name); break; }
      }
    }
    if (d.muts.length === 0) d.muts.push('none');
    return d;
  }

  /** Requests no route serves: unknown paths, other methods, odd request targets. */
  private unmatchedDraft(): Draft {
    const g = this.rng;
    const r = g.pick(this.srv.routes);
    const d = this.validDraft(r, 'A');
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
      d.rawPath = g.pick(['/', '/api', '/api/v1', '/api/v1/', '/api/v2/conversations', '/api/v1/unknown', '/API/V1/CONVERSATIONS', '//api/v1/conversations',
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
  private protocolDraft(): Draft {
    const g = this.rng;
    const r = g.pick(this.srv.routes.filter((x) => x.scope !== null));
    const d = this.validDraft(r, 'A');
    d.valid = false;
    d.routeKey = 'protocol';
    const path = r.path.replace(/\{(\w+)\}/g, (_m, p: string) => d.params[p] ?? 'x');
    const auth = `Authorization: ${this.keys.main.header}\r\n`;
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

  // ───────── building, sending, checking ─────────

  private build(d: Draft): Plan {
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
    if (d.rawPath && !d.raw) d.route = this.routeOf(d.method, path); // an "unmatched" probe that names a real operation
    this.idExpectations(d);
    if (d.cursorClaim) {
      const given = new URLSearchParams(qs).getAll('cursor');
      if (given.length === 1 && given[0] === d.cursorClaim.value) {
        d.handlerExpect = { statuses: [...new Set([...(d.handlerExpect?.statuses ?? []), 400])], why: `${d.handlerExpect ? `${d.handlerExpect.why}, or ` : ''}cursor ${d.cursorClaim.kind}` };
        if (d.cursorClaim.kind === 'foreign') d.notOk = 'the cursor belongs to another workspace';
      }
    }
    const method = d.raw ? d.raw.subarray(0, Math.max(0, d.raw.indexOf(' '))).toString('latin1') : d.method;
    const plan: Plan = { draft: d, method, path, qs, headers, body, raw: d.raw, mayReset: false };
    if (!d.raw) plan.expect = this.expectation(plan);
    const limit = d.route?.bodyLimit ?? MiB;
    plan.mayReset = (body?.length ?? 0) > limit;
    return plan;
  }

  /**
   * Path ids decide the handler's answer: an id of the key's own workspace exists (no
   * expectation), any other — another workspace's, random, mangled — must be a 404, and another
   * workspace's must never succeed.
   */
  private idExpectations(d: Draft): void {
    if (!d.route || !d.key.ws || d.raw || d.rawPath) return;
    for (const [name, enc] of Object.entries(d.params)) {
      if (!paramKind(name)) continue;
      let id: string;
      try { id = decodeURIComponent(enc); } catch { continue; } // the router answers 404 itself
      const o = this.owner.get(id);
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
  private expectation(p: Plan): { statuses: number[]; why: string } | undefined {
    const d = p.draft;
    if (d.noOracle) return undefined;
    const hdr = lowerHeaders(p.headers);
    const headBytes = p.path.length + p.qs.length + Object.entries(p.headers).reduce((n, [k, v]) => n + k.length + String(v).length + 4, 0);
    if (headBytes > 16 * 1024 + 512) return { statuses: [431], why: `${headBytes} bytes of request line and headers` };
    if (headBytes > 12 * 1024) return undefined; // near the parser's limit: either answer is right
    const match = this.srv.app.router.find(p.method, p.path);
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
      try { checkBodyHeaders({ headers: hdr } as unknown as IncomingMessage, limit); } catch (e) {
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
        this.fail('validator_gap', p, undefined, `the body is invalid by construction (${claim}) but the route's schema validator accepts it`);
        return { statuses: [400], why: `body: ${claim}` };
      }
    }
    if (route.method === 'POST' && hdr['idempotency-key'] !== undefined) {
      const k = hdr['idempotency-key'];
      if (typeof k !== 'string' || !IDEM_VALUE.test(k)) return { statuses: [400], why: 'malformed Idempotency-Key' };
      const role = d.key.role === 'main' || d.key.role === 'other' ? d.key.role : undefined;
      const prior = this.idemPool.find((e) => e.key === k && e.role === role);
      if (!prior && this.usedIdem.has(`${role}\n${k}`)) return undefined; // stored by the server, no longer remembered here
      if (prior) {
        const fp = fingerprint(route.method, p.path, sent ? p.body : undefined);
        return fp === prior.fingerprint ? { statuses: [prior.status], why: 'idempotent replay' } : { statuses: [422], why: 'Idempotency-Key reused with another request' };
      }
    }
    return d.handlerExpect;
  }

  private async execute(d: Draft): Promise<void> {
    const p = this.build(d);
    const protoBefore = protoFingerprint();
    const targets = this.targetSnapshot(d.targetIds);
    const sizesBefore = this.indexSizes();
    this.changes = [];
    this.recording = true;
    let sent: Sent;
    try {
      sent = p.raw ? await this.sendRaw(p.raw) : await this.send(p);
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
    this.check(p, res, { protoBefore, targets, sizesBefore });
    if (res.status >= 200 && res.status < 300) this.harvest(p, res);
    else if (d.valid) {
      const err = safeJson(res.text);
      const k = `${d.routeKey} → ${res.status} ${err?.code ?? ''}: ${String(err?.error ?? '').replace(/[0-9a-f-]{36}/g, '…').slice(0, 110)}`;
      this.report.validRejected.set(k, (this.report.validRejected.get(k) ?? 0) + 1);
    }
  }

  private send(p: Plan, retry = true): Promise<Sent> {
    const t0 = performance.now();
    const target = p.path + (p.qs ? `?${p.qs}` : '');
    return new Promise<Sent>((resolve) => {
      let done = false;
      const finish = (s: Sent) => { if (!done) { done = true; clearTimeout(timer); resolve(s); } };
      let req: http.ClientRequest;
      try {
        const u = new URL(this.srv.url);
        req = http.request({ host: u.hostname, port: u.port, method: p.method, path: target, headers: p.headers, agent: this.agent });
      } catch (e) {
        finish({ ok: false, error: `client refused the request: ${(e as Error).message}`, timedOut: false, ms: 0 });
        return;
      }
      const timer = setTimeout(() => { req.destroy(new Error('timeout')); finish({ ok: false, error: 'timeout', timedOut: true, ms: performance.now() - t0 }); }, this.timeoutMs);
      let head: HttpResponse | undefined;
      req.on('response', (res) => {
        head = { status: res.statusCode ?? 0, headers: res.headers, text: '', bytes: 0 };
        readBody(res).then(({ text, bytes }) => finish({ ok: true, res: { status: res.statusCode ?? 0, headers: res.headers, text, bytes }, ms: performance.now() - t0 }),
          (e) => finish({ ok: false, error: `response failed: ${(e as Error).message}`, timedOut: false, ms: performance.now() - t0, head }));
      });
      req.on('error', (e: NodeJS.ErrnoException) => {
        if (done) return;
        // A kept-alive socket the server closed meanwhile: the request never reached it.
        if (retry && req.reusedSocket && (e.code === 'ECONNRESET' || e.code === 'EPIPE')) {
          clearTimeout(timer); done = true; this.report.retries++;
          this.send(p, false).then(resolve);
          return;
        }
        finish({ ok: false, error: `${e.code ?? ''} ${e.message}`.trim(), timedOut: false, ms: performance.now() - t0, head });
      });
      if (p.body !== undefined) {
        if (p.draft.chunked) {
          const step = Math.max(1, Math.ceil(p.body.length / 3));
          for (let i = 0; i < p.body.length; i += step) req.write(p.body.subarray(i, i + step));
        } else req.write(p.body);
      }
      req.end();
    });
  }

  private sendRaw(raw: Buffer): Promise<Sent> {
    const t0 = performance.now();
    return new Promise<Sent>((resolve) => {
      const u = new URL(this.srv.url);
      const sock = net.connect(Number(u.port), u.hostname);
      const got: Buffer[] = [];
      let done = false;
      const finish = (s: Sent) => { if (!done) { done = true; clearTimeout(timer); sock.destroy(); resolve(s); } };
      const timer = setTimeout(() => {
        const res = parseRawResponse(Buffer.concat(got));
        // An answer arrived but the connection stayed open: that is an answer, not a hang.
        finish(res ? { ok: true, res, ms: performance.now() - t0 } : { ok: false, error: 'timeout', timedOut: true, ms: performance.now() - t0 });
      }, this.timeoutMs);
      sock.on('data', (c: Buffer) => {
        got.push(c);
        const res = parseRawResponse(Buffer.concat(got));
        if (res && res.headers['content-length'] !== undefined && res.bytes >= Number(res.headers['content-length'])) finish({ ok: true, res, ms: performance.now() - t0 });
      });
      sock.on('error', () => { /* the server may reset a connection it refused */ });
      sock.on('close', () => {
        const res = parseRawResponse(Buffer.concat(got));
        finish(res ? { ok: true, res, ms: performance.now() - t0 } : { ok: false, error: 'connection closed without an answer', timedOut: false, ms: performance.now() - t0 });
      });
      sock.write(raw);
    });
  }

  private check(p: Plan, res: HttpResponse, before: { protoBefore: string; targets: Map<string, string>; sizesBefore: string }): void {
    const d = p.draft;
    const head = p.method === 'HEAD';
    if (res.status >= 500) this.fail('server_error', p, res, `status ${res.status}`);
    if (res.status >= 400 && res.status < 500 && !head) {
      const problem = errorBodyProblem(res.status, res.text);
      if (problem) this.fail('error_body', p, res, problem);
    }
    if (d.raw && !res.headers['api-version']) this.fail('contract', p, res, 'an answer without Api-Version');
    if (!d.raw) {
      const v = contractViolations(this.doc, p.method, p.path + (p.qs ? `?${p.qs}` : ''), { status: res.status, headers: toHeaders(res.headers), text: res.text });
      if (v.length) this.fail('contract', p, res, v.slice(0, 4).join('; '));
    }
    if (p.expect) {
      this.report.expectationsChecked++;
      if (!p.expect.statuses.includes(res.status)) this.fail('unexpected_status', p, res, `expected ${p.expect.statuses.join(' or ')} (${p.expect.why}), got ${res.status}`);
      else if (p.expect.why === 'idempotent replay') {
        const prior = d.idem?.entry ?? this.idemPool.find((e) => e.key === lowerHeaders(p.headers)['idempotency-key']);
        if (prior && (prior.text !== res.text || res.headers['idempotent-replayed'] !== 'true')) {
          this.fail('idempotency', p, res, `the replay differs from the stored answer (replayed header ${String(res.headers['idempotent-replayed'])}; stored ${prior.text.slice(0, 120)})`);
        }
      }
    }
    if (d.notOk && res.status >= 200 && res.status < 300) this.fail('unexpected_status', p, res, `a success, but ${d.notOk}`);
    if (res.status === 409 && safeJson(res.text)?.code === 'idempotency_in_progress') this.fail('idempotency', p, res, 'idempotency_in_progress answered to a client that sends one request at a time');
    if (res.status === 409 && /a scan of this source is already running/.test(res.text)) this.fail('unexpected_status', p, res, 'a rescan was refused as running, but no scan runs (requests are sequential)');
    const running = (this.srv.app.idempotency as unknown as { running?: Set<string> }).running;
    if (running && running.size) { this.fail('idempotency', p, res, `${running.size} Idempotency-Key in-progress mark(s) left after the answer`); running.clear(); }
    // Request id: echoed when ≤ 128 printable ASCII, generated otherwise.
    const rid = lowerHeaders(p.headers)['x-request-id'];
    if (!d.raw && !d.noOracle && typeof rid === 'string') {
      const echoed = res.headers['x-request-id'];
      // 431 is answered by the HTTP parser before any header is read: an id is generated then.
      if (res.status === 431) { if (!echoed) this.fail('request_id', p, res, 'a 431 without X-Request-Id'); }
      else if (printable.test(rid) ? echoed !== rid.trim() : echoed === rid || !echoed) this.fail('request_id', p, res, `X-Request-Id ${show(rid.slice(0, 40))} answered with ${show(String(echoed))}`);
    }
    // State: a 4xx changes nothing, and neither does any read.
    if ((res.status >= 400 && res.status < 500) || p.method === 'GET' || p.method === 'HEAD') {
      const net = this.netChanges();
      if (net.length) this.fail('state_changed', p, res, `${net.length} record(s) changed: ${net.slice(0, 5).join(', ')}`);
      const after = this.indexSizes();
      if (after !== before.sizesBefore) this.fail('state_changed', p, res, `workspace indexes changed: ${diffSizes(before.sizesBefore, after)}`);
      for (const [k, json] of before.targets) {
        const [tag, type, id] = k.split('\u0000');
        const now = this.workspace(tag as WsTag).db.get(type as keyof Records, id);
        if (JSON.stringify(now) !== json) this.fail('state_changed', p, res, `record ${type}/${id} in ${tag} changed in place`);
      }
    }
    // Tenant isolation: a success never shows the other workspace's ids.
    if (res.status < 300 && d.key.ws && res.text) {
      const reqText = p.path + p.qs + (p.body && p.body.length < 1_000_000 ? p.body.toString('latin1') : '');
      for (const m of res.text.matchAll(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g)) {
        const o = this.owner.get(m[0]);
        if (o && o !== d.key.ws && !reqText.includes(m[0])) { this.fail('tenant_leak', p, res, `the answer to a key of ${d.key.ws} holds ${m[0]} of ${o}`); break; }
      }
    }
    if (protoFingerprint() !== before.protoBefore) this.fail('prototype_pollution', p, res, `Object/Array prototypes changed: ${protoFingerprint()}`);
  }

  /** (type/id) of every record whose value differs from before the request. */
  private netChanges(): string[] {
    const first = new Map<string, Rec | undefined>();
    const last = new Map<string, Rec | undefined>();
    for (const c of this.changes) {
      const k = `${c.ws}:${c.type}/${c.id}`;
      if (!first.has(k)) first.set(k, c.prev);
      last.set(k, c.next);
    }
    return [...first.keys()].filter((k) => first.get(k) !== last.get(k));
  }

  private targetSnapshot(ids: string[]): Map<string, string> {
    const out = new Map<string, string>();
    for (const id of ids.slice(0, 4)) {
      for (const tag of ['A', 'B'] as const) {
        const tables = (this.workspace(tag).db as unknown as { tables: Map<string, Map<string, Rec>> }).tables;
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
  private indexSizes(): string {
    const parts: string[] = [];
    for (const tag of ['A', 'B'] as const) {
      const ws = this.workspace(tag);
      const tables = (ws.db as unknown as { tables: Map<string, Map<string, Rec>> }).tables;
      for (const [type, t] of tables) if (type !== 'usage') parts.push(`${tag}.${type}=${t.size}`);
      for (const [k, v] of Object.entries(ws.indexSizes())) parts.push(`${tag}.${k}=${v}`);
    }
    return parts.join(' ');
  }

  private count(p: Plan, sent: Sent): void {
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

  private harvest(p: Plan, res: HttpResponse): void {
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
    // Idempotent answers that can be replayed later.
    const idem = lowerHeaders(p.headers)['idempotency-key'];
    if (p.method === 'POST' && typeof idem === 'string' && IDEM_VALUE.test(idem) && (d.key.role === 'main' || d.key.role === 'other')) this.usedIdem.add(`${d.key.role}\n${idem}`);
    if (p.method === 'POST' && typeof idem === 'string' && IDEM_VALUE.test(idem) && res.headers['idempotent-replayed'] === undefined
      && (d.key.role === 'main' || d.key.role === 'other') && (p.body?.length ?? 0) <= 64 * 1024 && !this.idemPool.some((e) => e.key === idem && e.role === d.key.role)) {
      const sent = (lowerHeaders(p.headers)['content-length'] ?? '0') !== '0' || d.chunked;
      this.idemPool.push({ role: d.key.role, key: idem, fingerprint: fingerprint(p.method, p.path, sent ? p.body : undefined), status: res.status, text: res.text,
        method: p.method, path: p.path, query: p.qs, body: p.body, headers: { ...p.headers } });
      if (this.idemPool.length > 32) this.idemPool.shift();
    }
  }

  // ───────── failures ─────────

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

  // ───────── after the run ─────────

  private async postRun(): Promise<void> {
    this.phase = 'post';
    const health = await this.plainCall(this.srv.url, 'GET', '/healthz');
    if (health.status !== 200 || safeJson(health.text)?.status !== 'ok') this.fail('post_run', undefined, health, `GET /healthz answered ${health.status} ${health.text.slice(0, 200)}`);
    await this.normalCreate(this.srv.url, this.srv.key, 'before restart');
    // What is in memory must be exactly what a restart reads back from the logs.
    const before = this.dumpState();
    await this.srv.close();
    this.agent.destroy();
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const key = this.srv.key;
    this.srv = await startTestServer({ env: this.env, clock: this.clock, dataDir: this.dataDir });
    const after = this.dumpState();
    const diffs: string[] = [];
    for (const [k, v] of before) if (after.get(k) !== v) diffs.push(`${k} ${after.has(k) ? 'differs' : 'missing'} after restart`);
    for (const k of after.keys()) if (!before.has(k)) diffs.push(`${k} appeared after restart`);
    if (diffs.length) this.fail('post_run', undefined, undefined, `state after restart differs from memory before it (${diffs.length}): ${diffs.slice(0, 8).join('; ')}`);
    const h2 = await this.plainCall(this.srv.url, 'GET', '/healthz');
    if (h2.status !== 200) this.fail('post_run', undefined, h2, `GET /healthz after restart answered ${h2.status}`);
    await this.normalCreate(this.srv.url, key, 'after restart');
  }

  /** Every record (usage counters aside) and every index size of both workspaces. */
  private dumpState(): Map<string, string> {
    const out = new Map<string, string>();
    for (const tag of ['A', 'B'] as const) {
      const tables = (this.workspace(tag).db as unknown as { tables: Map<string, Map<string, Rec>> }).tables;
      for (const [type, t] of tables) {
        if (type === 'usage') continue;
        for (const [id, r] of t) out.set(`${tag}:${type}/${id}`, createHash('sha256').update(JSON.stringify(r)).digest('hex'));
      }
    }
    for (const part of this.indexSizes().split(' ')) { const i = part.indexOf('='); out.set(`index ${part.slice(0, i)}`, part.slice(i + 1)); }
    return out;
  }

  private async normalCreate(url: string, key: string, when: string): Promise<void> {
    const body = JSON.stringify({ subject: `Health check ${when}`, customer: { email: 'after.fuzz@example.com', name: 'After Fuzz' } });
    const c = await this.plainCall(url, 'POST', '/api/v1/conversations', { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body);
    const id = safeJson(c.text)?.conversation?.id;
    if (c.status !== 201 || typeof id !== 'string') { this.fail('post_run', undefined, c, `a normal create ${when} answered ${c.status}`); return; }
    const g = await this.plainCall(url, 'GET', `/api/v1/conversations/${id}`, { Authorization: `Bearer ${key}` });
    if (g.status !== 200 || safeJson(g.text)?.conversation?.subject !== `Health check ${when}`) this.fail('post_run', undefined, g, `reading the conversation created ${when} answered ${g.status}`);
  }

  private plainCall(url: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<HttpResponse> {
    return new Promise((resolve) => {
      const u = new URL(url);
      const req = http.request({ host: u.hostname, port: u.port, method, path, headers: body ? { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } : headers, agent: false }, (res) => {
        readBody(res).then(({ text, bytes }) => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, bytes }), () => resolve({ status: 0, headers: {}, text: '', bytes: 0 }));
      });
      req.setTimeout(this.timeoutMs, () => req.destroy(new Error('timeout')));
      req.on('error', (e) => resolve({ status: 0, headers: {}, text: `request failed: ${e.message}`, bytes: 0 }));
      req.end(body);
    });
  }

  // ───────── accessors for the mutators ─────────

  get g(): Rng { return this.rng; }
  poolsOf(ws: WsTag): Pools { return this.pools[ws]; }
  keyRole(role: 'garbage' | 'expired' | 'revoked' | 'none'): KeyInfo { return role === 'none' ? { role: 'none' } : this.keys[role] ?? { role }; }
  limited(): KeyInfo { return this.rng.pick(this.limitedKeys); }
  otherKey(ws: WsTag): KeyInfo { return this.keyFor(ws); }
  idemEntries(): IdemEntry[] { return this.idemPool; }
  freshIdemKey(): string { return this.idemKey(); }
  validValue(schema: TSchema, name: string, ws: WsTag): unknown { return this.genValue(schema, name, ws); }
  validQuery(d: Draft, name: string): string | undefined {
    const s = d.route?.query?.properties[name] as TSchema | undefined;
    return s && d.route ? this.validQueryValue(d.route, d.ws, name, s, d.params) : undefined;
  }
  routeOf(method: string, path: string): Route | undefined {
    const m = this.srv.app.router.find(method, path);
    return m.kind === 'found' ? m.value : undefined;
  }
}

// ───────────────────────────── mutators ─────────────────────────────

interface Mutator {
  name: string;
  weight: number;
  heavy?: boolean;
  applies(d: Draft, f: Fuzzer): boolean;
  /** Changes `d`; returns the mutation's name (with detail), or null when it could not apply. */
  apply(d: Draft, f: Fuzzer): string | null;
}

const hasBody = (d: Draft): boolean => !!d.route?.body && d.body !== NO_BODY && !(d.body instanceof RawBytes) && !d.raw;
const bodyRoute = (d: Draft): boolean => !!d.route?.body && !d.raw;
const bodySlots = (d: Draft): Slot[] => slotsOf(d.route?.body, d.body);
const limitOf = (d: Draft): number => d.route?.bodyLimit ?? MiB;

/** The body is invalid while the value at `path` is still `value`. */
function claimAt(d: Draft, path: Seg[], value: unknown, reason: string): void {
  d.certain.push((body) => (getAt(body, path) === value ? reason : undefined));
}

function ensureBody(d: Draft, f: Fuzzer): void {
  if (d.body === NO_BODY && d.route?.body) d.body = f.validValue(d.route.body, '', d.ws);
  d.headers['Content-Type'] ??= 'application/json';
}

const WRONG_VALUES: unknown[] = [0, 1, -1, 1.5, true, false, null, [], {}, 'str', '', [1, 2], { a: 1 }, [null], ['x'], 1e21];

const MUTATORS: Mutator[] = [
  {
    name: 'body.wrongType', weight: 10, applies: (d) => hasBody(d) && bodySlots(d).length > 1,
    apply(d, f) {
      const slots = bodySlots(d).filter((s) => s.path.length > 0 && !(s.schema && deref(s.schema).kind === 'any'));
      if (!slots.length) return null;
      const s = f.g.pick(slots);
      const cands = WRONG_VALUES.filter((v) => !typeOk(s.schema, v));
      if (!cands.length) return null;
      const v = clone(f.g.pick(cands));
      d.body = setAt(d.body, s.path, v);
      if (s.schema) claimAt(d, s.path, v, `${s.path.join('.')} is ${asciiJson(v)}`);
      return `body.wrongType(${s.path.join('.')})`;
    },
  },
  {
    name: 'body.dropRequired', weight: 5, applies: hasBody,
    apply(d, f) {
      const cands: Array<[Slot, string]> = [];
      for (const s of bodySlots(d)) {
        const o = objectSchema(s);
        const v = getAt(d.body, s.path);
        if (!o || !isPlainObject(v)) continue;
        for (const [k, p] of Object.entries(o.properties as Record<string, TSchema>)) if (!p.optional && Object.hasOwn(v, k)) cands.push([s, k]);
      }
      if (!cands.length) return null;
      const [s, k] = f.g.pick(cands);
      const parent = getAt(d.body, s.path);
      d.body = setAt(d.body, [...s.path, k], undefined, true);
      d.certain.push((body) => (getAt(body, s.path) === parent && isPlainObject(parent) && !Object.hasOwn(parent, k) ? `${[...s.path, k].join('.')} is missing` : undefined));
      return `body.dropRequired(${[...s.path, k].join('.')})`;
    },
  },
  {
    name: 'body.unknownProp', weight: 5, applies: hasBody,
    apply(d, f) {
      const objs = bodySlots(d).filter((s) => isPlainObject(getAt(d.body, s.path)));
      if (!objs.length) return null;
      const s = f.g.pick(objs);
      const o = objectSchema(s);
      const v = getAt(d.body, s.path) as Record<string, unknown>;
      const props = o ? Object.keys(o.properties) : [];
      const key = f.g.pick(['extra', 'Subject', 'subject ', ' subject', '', '\u0000', 'x'.repeat(1000), 'hasOwnProperty', 'toString', 'valueOf',
        '__defineGetter__', 'prototype', '🙂', 'id', 'workspaceId', 'createdAt', 'number', 'object', `${props[0] ?? 'a'}\u200b`]);
      if (Object.hasOwn(v, key)) return null;
      v[key] = f.g.pick<unknown>([1, 'x', null, { a: 1 }, true]);
      if (o && o.additionalProperties === false && !props.includes(key)) {
        d.certain.push((body) => (getAt(body, s.path) === v && Object.hasOwn(v, key) ? `unknown property ${show(key.slice(0, 20))}` : undefined));
      }
      return `body.unknownProp(${show(key.slice(0, 16))})`;
    },
  },
  {
    name: 'body.longString', weight: 6, applies: hasBody,
    apply(d, f) {
      const slots = bodySlots(d).filter((s) => s.path.length > 0 && stringSchema(s));
      if (!slots.length) return null;
      const s = f.g.pick(slots);
      const sch = stringSchema(s)!;
      const L = sch.maxLength ?? 5000;
      const ch = f.g.pick(['a', 'é', '日', '😀', 'e\u0301', '\u0000']);
      const perChar = codePointLength(ch);
      const which = f.g.weighted([['max', 3], ['max+1', 4], ['2max', 2], ['min-1', 1]] as const);
      let cps = which === 'max' ? L : which === 'max+1' ? L + 1 : which === '2max' ? 2 * L : Math.max(0, (sch.minLength ?? 0) - 1);
      if (which === 'min-1' && (sch.minLength ?? 0) === 0) return null;
      const reps = Math.max(0, Math.floor(cps / perChar));
      cps = reps * perChar;
      const value = ch.repeat(reps);
      if (Buffer.byteLength(value) > limitOf(d) - 4096) return null;
      d.body = setAt(d.body, s.path, value);
      if (cps > L || cps < (sch.minLength ?? 0)) claimAt(d, s.path, value, `${s.path.join('.')} has ${cps} code points (${sch.minLength ?? 0}…${L})`);
      return `body.longString(${s.path.join('.')},${which},${JSON.stringify(ch)})`;
    },
  },
  {
    name: 'body.hugeString', weight: 1, heavy: true, applies: hasBody,
    apply(d, f) {
      const slots = bodySlots(d).filter((s) => s.path.length > 0);
      if (!slots.length) return null;
      const s = f.g.pick(slots);
      const limit = limitOf(d);
      const size = Math.min(limit - 8192, f.g.pick([64 * 1024, 512 * 1024, limit - 8192]));
      const value = f.g.chance(0.5) ? 'a'.repeat(size) : '日'.repeat(Math.floor(size / 3));
      d.body = setAt(d.body, s.path, value);
      const sch = stringSchema(s);
      if (!s.schema || (sch && sch.maxLength !== undefined && codePointLength(value) > sch.maxLength) || !typeOk(s.schema, value)) {
        if (s.schema) claimAt(d, s.path, value, `${s.path.join('.')} is a ${value.length}-character string`);
      }
      return `body.hugeString(${s.path.join('.')},${size})`;
    },
  },
  {
    name: 'body.unicode', weight: 8, applies: hasBody,
    apply(d, f) {
      const slots = bodySlots(d).filter((s) => s.path.length > 0 && (typeof getAt(d.body, s.path) === 'string' || !s.schema));
      if (!slots.length) return null;
      const s = f.g.pick(slots);
      const cur = getAt(d.body, s.path);
      const edge = f.g.pick(UNICODE_EDGES);
      const value = typeof cur === 'string' && f.g.chance(0.5) ? f.g.pick([`${edge}${cur}`, `${cur}${edge}`, cur.slice(0, 1) + edge + cur.slice(1)]) : edge;
      d.body = setAt(d.body, s.path, value);
      return `body.unicode(${s.path.join('.')},${show(edge.slice(0, 12))})`;
    },
  },
  {
    name: 'body.badUtf8', weight: 5, applies: hasBody,
    apply(d, f) {
      const bad = f.g.pick(BAD_UTF8);
      const slots = bodySlots(d).filter((s) => s.path.length > 0 && typeof getAt(d.body, s.path) === 'string');
      if (slots.length && f.g.chance(0.8)) {
        const s = f.g.pick(slots);
        const cur = getAt(d.body, s.path) as string;
        const v = new BadStr(cur.slice(0, 3), bad, cur.slice(3));
        d.body = setAt(d.body, s.path, v);
        claimAt(d, s.path, v, `invalid UTF-8 ${bad.toString('hex')} in ${s.path.join('.')}`);
        return `body.badUtf8(${s.path.join('.')},${bad.toString('hex')})`;
      }
      // bytes outside any string
      const text = serialize(d.body);
      d.body = new RawBytes(Buffer.concat([text.subarray(0, 1), bad, text.subarray(1)]));
      claimAt(d, [], d.body, `invalid UTF-8 ${bad.toString('hex')} between tokens`);
      return `body.badUtf8(between,${bad.toString('hex')})`;
    },
  },
  {
    name: 'body.deepNesting', weight: 4, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const levels = f.g.pick([62, 63, 64, 65, 1000, 100_000]);
      const obj = f.g.chance(0.5);
      const nest = obj ? '{"a":'.repeat(levels) + '1' + '}'.repeat(levels) : '['.repeat(levels) + ']'.repeat(levels);
      const slots = isPlainObject(d.body) ? bodySlots(d).filter((s) => s.path.length > 0 && s.path.length < 4) : [];
      if (slots.length && f.g.chance(0.7)) {
        const s = f.g.pick(slots);
        const v = new Raw(nest);
        d.body = setAt(d.body, s.path, v);
        const depth = s.path.length + levels; // the body's own object is level 1
        if (depth > MAX_DEPTH) claimAt(d, s.path, v, `nested ${depth} levels`);
        return `body.deepNesting(${s.path.join('.')},${levels},${obj ? 'object' : 'array'})`;
      }
      d.body = new Raw(nest);
      if (levels > MAX_DEPTH) claimAt(d, [], d.body, `nested ${levels} levels`);
      return `body.deepNesting(root,${levels},${obj ? 'object' : 'array'})`;
    },
  },
  {
    name: 'body.duplicateKeys', weight: 4, applies: hasBody,
    apply(d, f) {
      const objs = bodySlots(d).filter((s) => { const v = getAt(d.body, s.path); return isPlainObject(v) && Object.keys(v).length > 0; });
      if (!objs.length) return null;
      const s = f.g.pick(objs);
      const v = getAt(d.body, s.path) as Record<string, unknown>;
      const entries: Array<[string, unknown]> = Object.entries(v);
      const i = f.g.int(entries.length);
      const [k, val] = entries[i];
      const other = f.g.pick<unknown>([val, 'dup', 12, null, { a: 1 }, typeof val === 'string' ? `${val}2` : val]);
      const mode = f.g.int(3);
      if (mode === 0) entries.push([k, other]); else if (mode === 1) entries.splice(i, 0, [k, other]); else entries.push([k, val], [k, other], [k, val]);
      d.body = setAt(d.body, s.path, new Entries(entries));
      return `body.duplicateKeys(${[...s.path, k].join('.')})`;
    },
  },
  {
    name: 'body.numberEdge', weight: 5, applies: hasBody,
    apply(d, f) {
      const slots = bodySlots(d).filter((s) => s.path.length > 0);
      const [text, validJson] = f.g.pick(NUMBER_EDGES);
      if (slots.length && f.g.chance(0.7)) {
        const s = f.g.pick(slots);
        const v = new Raw(text);
        d.body = setAt(d.body, s.path, v);
        if (!validJson) claimAt(d, s.path, v, `${text} is not JSON`);
        else if (s.schema && !typeOk(s.schema, JSON.parse(text))) claimAt(d, s.path, v, `${s.path.join('.')} is ${text}`);
        return `body.numberEdge(${s.path.join('.')},${text})`;
      }
      if (!isPlainObject(d.body)) return null;
      const k = f.g.pick(['limit', 'n', 'priority']);
      const v = new Raw(text);
      (d.body as Record<string, unknown>)[k] = v;
      if (!validJson) claimAt(d, [k], v, `${text} is not JSON`);
      return `body.numberEdge(newKey,${text})`;
    },
  },
  {
    name: 'body.protoKeys', weight: 4, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const key = f.g.pick(['__proto__', 'constructor']);
      const payload = f.g.pick<unknown>([{ fuzzPolluted: true }, { prototype: { fuzzPolluted: true } }, 1, null, [{ fuzzPolluted: 1 }]]);
      const objs = isPlainObject(d.body) ? bodySlots(d).filter((s) => isPlainObject(getAt(d.body, s.path))) : [];
      if (!objs.length) { d.body = new Entries([[key, payload]]); claimAt(d, [], d.body, `${key} key`); return `body.protoKeys(root,${key})`; }
      const s = f.g.pick(objs);
      const v = getAt(d.body, s.path) as Record<string, unknown>;
      const entries: Array<[string, unknown]> = Object.entries(v);
      entries.splice(f.g.int(entries.length + 1), 0, [key, payload]);
      const e = new Entries(entries);
      d.body = setAt(d.body, s.path, e);
      claimAt(d, s.path, e, `${key} key`);
      return `body.protoKeys(${s.path.join('.') || 'root'},${key})`;
    },
  },
  {
    name: 'body.notObject', weight: 3, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const t = f.g.pick(['[]', '[{}]', '"str"', '42', 'null', 'true', '[{"subject":"x"}]', '"{\\"subject\\":\\"x\\"}"']);
      d.body = new Raw(t);
      claimAt(d, [], d.body, `the body is ${t}`);
      return `body.notObject(${t})`;
    },
  },
  {
    name: 'body.randomBytes', weight: 3, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const n = f.g.pick([1, 7, 64, 512, 4096]);
      let b = f.g.bytes(n);
      if (f.g.chance(0.4)) b = Buffer.concat([Buffer.from('{"'), b]);
      d.body = new RawBytes(b);
      return `body.randomBytes(${b.length})`;
    },
  },
  {
    name: 'body.syntax', weight: 4, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const text = serialize(d.body).toString('utf8');
      const variants: Array<[string, Buffer, boolean]> = [ // name, bytes, certainly invalid
        ['truncated', Buffer.from(text.slice(0, Math.max(1, text.length - 1 - f.g.int(Math.max(1, text.length - 1))))), true],
        ['trailingGarbage', Buffer.from(`${text}x`), true],
        ['twoValues', Buffer.from(`${text}${text}`), true],
        ['trailingComma', Buffer.from(text.replace(/}$/, ',}')), true],
        ['singleQuotes', Buffer.from(text.replace(/"/g, "'")), true],
        ['comment', Buffer.from(`/* c */${text}`), true],
        ['bom', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), false],
        ['utf16le', Buffer.from(text, 'utf16le'), true],
        ['whitespace', Buffer.from(` \n\t${text}\r\n `), false],
        ['empty', Buffer.alloc(0), false],
        ['spaces', Buffer.from('   '), true],
        ['nul', Buffer.from(`${text}\u0000`), true],
        ['undefined', Buffer.from('{"a":undefined}'), true],
      ];
      const [name, bytes, invalid] = f.g.pick(variants);
      d.body = new RawBytes(bytes);
      if (invalid && !bytes.equals(Buffer.from(text))) claimAt(d, [], d.body, `syntax: ${name}`);
      return `body.syntax(${name})`;
    },
  },
  {
    name: 'body.overLimit', weight: 0.6, heavy: true, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const limit = limitOf(d);
      if (limit > 2 * MiB && !f.g.chance(0.25)) return null; // 16 MiB uploads: rarely
      const text = serialize(d.body);
      const pad = limit + 1 - text.length;
      if (pad <= 0) return null;
      d.body = new RawBytes(Buffer.concat([Buffer.alloc(pad, 0x20), text]));
      if (f.g.chance(0.4)) d.chunked = true;
      return `body.overLimit(${limit + 1}${d.chunked ? ',chunked' : ''})`;
    },
  },
  {
    name: 'body.contentType', weight: 4, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const ct = f.g.pick([undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1',
        'application/json; charset=UTF-8', 'application/json;charset="utf-8"', 'APPLICATION/JSON', 'application/jsonp', 'application/vnd.api+json',
        'application/json; foo=bar', '*/*', '', 'application/json, text/plain', 'application/json; charset=utf-16', 'json', 'application/json;;',
        'text/json', 'application/json\t', 'application/problem+json']);
      if (ct === undefined) delete d.headers['Content-Type']; else d.headers['Content-Type'] = ct;
      return `body.contentType(${show(ct ?? '(none)')})`;
    },
  },
  {
    name: 'body.contentEncoding', weight: 1.5, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const enc = f.g.pick(['gzip', 'deflate', 'br', 'identity', 'GZIP', 'gzip, identity', 'x-unknown', '']);
      d.headers['Content-Encoding'] = enc;
      return `body.contentEncoding(${enc})`;
    },
  },
  {
    name: 'body.chunked', weight: 1.5, applies: bodyRoute,
    apply(d, f) { ensureBody(d, f); d.chunked = true; return 'body.chunked'; },
  },
  {
    name: 'body.onRead', weight: 1, applies: (d) => !!d.route && !d.route.body,
    apply(d, f) {
      d.body = f.g.pick<unknown>([{ a: 1 }, new RawBytes(f.g.bytes(100)), new Raw('['.repeat(1000))]);
      d.headers['Content-Type'] = 'application/json';
      return 'body.onRead';
    },
  },
  // ── query ──
  {
    name: 'query.repeat', weight: 3, applies: (d) => !!d.route?.query,
    apply(d, f) {
      const props = Object.keys(d.route!.query!.properties);
      const k = f.g.pick(props);
      const pairs = typeof d.query === 'string' ? [] : d.query;
      const v = f.validQuery(d, k) ?? '1';
      d.query = [...pairs.filter(([x]) => x !== k), [k, v], [k, f.validQuery(d, k) ?? v]];
      return `query.repeat(${k})`;
    },
  },
  {
    name: 'query.unknown', weight: 3, applies: (d) => !!d.route,
    apply(d, f) {
      const pairs = typeof d.query === 'string' ? [] : d.query;
      const k = f.g.pick(['foo', '__proto__', 'constructor', 'limit[]', 'hasOwnProperty', 'Limit', 'cursor ', '', 'a'.repeat(300), 'ü', 'q[0]', 'toString']);
      d.query = [...pairs, [k, f.g.pick(['1', 'x', ''])]];
      return `query.unknown(${JSON.stringify(k.slice(0, 12))})`;
    },
  },
  {
    name: 'query.huge', weight: 1, applies: (d) => !!d.route,
    apply(d, f) {
      const props = d.route!.query ? Object.keys(d.route!.query.properties) : ['x'];
      const k = f.g.pick(props);
      const n = f.g.pick([2049, 8000, 15_000, 17_000, 100_000]);
      const pairs = typeof d.query === 'string' ? [] : d.query.filter(([x]) => x !== k);
      d.query = [...pairs, [k, f.g.pick(['a', '日', '%'])!.repeat(n)]];
      return `query.huge(${k},${n})`;
    },
  },
  {
    name: 'query.typeEdge', weight: 4, applies: (d) => !!d.route?.query,
    apply(d, f) {
      const props = Object.entries(d.route!.query!.properties as Record<string, TSchema>);
      const [k, s] = f.g.pick(props);
      const kind = deref(s).kind;
      let v: string;
      if (kind === 'integer') v = f.g.pick(QUERY_NUMBERS);
      else if (kind === 'boolean') v = f.g.pick(['TRUE', '1', 'yes', '', 'false ', 'null']);
      else if ((s as TString).format === 'date-time') v = f.g.pick(DATE_EDGES);
      else if (k === 'from' || k === 'to') v = f.g.pick(DAY_EDGES);
      else if ((s as TString).enum) v = f.g.pick([((s as TString).enum![0] ?? '').toUpperCase(), ` ${(s as TString).enum![0]}`, 'unknown', '', 'open,solved']);
      else v = f.g.pick([...UNICODE_EDGES.slice(0, 12), '', ' ', '*', '%', "'", '"', '\\', 'a'.repeat(501), 'x'.repeat(65)]);
      const pairs = typeof d.query === 'string' ? [] : d.query.filter(([x]) => x !== k);
      d.query = [...pairs, [k, v]];
      return `query.typeEdge(${k},${show(v.slice(0, 20))})`;
    },
  },
  {
    name: 'query.percent', weight: 2, applies: (d) => !!d.route,
    apply(d, f) {
      const base = typeof d.query === 'string' ? d.query : d.query.map(([k, v]) => `${encodeComponent(k)}=${encodeComponent(v)}`).join('&');
      const k = d.route!.query ? f.g.pick(Object.keys(d.route!.query.properties)) : 'x';
      const raw = f.g.pick([`${k}=%ZZ`, `${k}=%`, `${k}=%ud800`, `${k}=%ED%A0%80`, `${k}=%C0%AF`, `${k}=%00`, `${k}=a+b`, `${k}=%FF%FE`, '&&&', '=x', k, `${k}=`, `${k}==`,
        `${k}=1&`, `&${k}=1`, `${k}=%F0%9F%98%80`, `${k}%00=1`, `${k}=%25`, `${k}=1;${k}=2`, '#frag', `${k}=\u00e9`.replace('\u00e9', '%E9')]);
      d.query = base && f.g.chance(0.5) ? `${base}&${raw}` : raw;
      return `query.percent(${show(raw.slice(0, 20))})`;
    },
  },
  {
    name: 'query.cursor', weight: 4, applies: (d) => !!d.route?.query?.properties.cursor,
    apply(d, f) {
      const route = d.route!;
      const mine = f.poolsOf(d.key.ws ?? 'A');
      const theirs = f.poolsOf(d.key.ws === 'B' ? 'A' : 'B');
      const lk = listKey(route, d.params);
      const own = mine.cursors.get(lk) ?? [];
      const otherList = [...mine.cursors.entries()].filter(([p]) => p !== lk).flatMap(([, c]) => c);
      const foreign = [...theirs.cursors.entries()].filter(([p]) => p.startsWith(route.path)).flatMap(([, c]) => c);
      const options: Array<[string, string]> = [['random', f.g.bytes(12).toString('base64url') + '.' + f.g.bytes(16).toString('base64url')], ['dot', '.'], ['noMac', 'YWJj.'],
        ['noPayload', '.YWJj'], ['long', 'a'.repeat(2049)], ['unicode', '日本.語'], ['emptyish', ' '], ['json', '{"id":1}']];
      if (own.length) {
        const c = f.g.pick(own);
        const i = f.g.int(c.length);
        const flipped = c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1);
        if (flipped !== c) options.push(['tampered', flipped]);
        options.push(['truncated', c.slice(0, -2)], ['payloadSwap', `${Buffer.from('\uffff').toString('base64url')}${c.slice(c.indexOf('.'))}`]);
      }
      if (otherList.length) options.push(['otherList', f.g.pick(otherList)]);
      if (foreign.length) options.push(['foreign', f.g.pick(foreign)], ['foreign', f.g.pick(foreign)]);
      const [kind, c] = f.g.pick(options);
      const pairs = typeof d.query === 'string' ? [] : d.query.filter(([x]) => x !== 'cursor');
      d.query = [...pairs, ['cursor', c]];
      d.cursorClaim = { value: c, kind };
      return `query.cursor(${kind})`;
    },
  },
  // ── path ──
  {
    name: 'path.weird', weight: 5, applies: (d) => !!d.route && Object.keys(d.params).length > 0,
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params));
      const real = safeDecode(d.params[p]);
      const v = f.g.pick(['%00', `${d.params[p]}%00`, '..%2F..%2F', '..%2f', '%2e%2e', '%2e', '..%5C', '%2F', 'null', 'undefined', '__proto__', 'constructor', 'hasOwnProperty',
        'toString', '0', '-1', '%20', `${d.params[p]}%20`, '%F0%9F%98%80', '%E2%80%AE', `${d.params[p]}.json`, "'", '%27%20OR%201%3D1', '*', '%2A', `${d.params[p]}%0A`,
        '%C0%AF', '%u002F', '$', '~', `${d.params[p]};x`, '%252F']);
      d.params[p] = v;
      d.targetIds = [real];
      return `path.weird(${p},${show(v.slice(0, 20))})`;
    },
  },
  {
    name: 'path.long', weight: 2, applies: (d) => !!d.route && Object.keys(d.params).length > 0,
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params));
      const n = f.g.pick([201, 1024, 2048, 8000, 20_000]);
      d.params[p] = f.g.pick(['a', '0', '%41', '%F0%9F%98%80'])!.repeat(n);
      return `path.long(${p},${n})`;
    },
  },
  {
    name: 'path.badEscape', weight: 2, applies: (d) => !!d.route && Object.keys(d.params).length > 0,
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params));
      d.params[p] = f.g.pick(['%', '%Z', '%ZZ', 'abc%', '%E0%A4%A', '%ED%A0%80', '%FF', '%C3']);
      return `path.badEscape(${p},${d.params[p]})`;
    },
  },
  {
    name: 'path.foreign', weight: 6, applies: (d) => !!d.route && Object.keys(d.params).some((p) => paramKind(p)),
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params).filter((x) => paramKind(x)));
      const kind = paramKind(p)!;
      const theirs = f.poolsOf(d.ws === 'A' ? 'B' : 'A')[kind];
      const random = !theirs.length || f.g.chance(0.2);
      const id = random ? f.g.uuid() : f.g.pick(theirs);
      d.params[p] = encodeURIComponent(id);
      d.targetIds = [id];
      return `path.foreign(${p},${random ? 'random' : 'otherWorkspace'})`;
    },
  },
  {
    name: 'body.foreignId', weight: 4, applies: (d) => hasBody(d) && isPlainObject(d.body) && (d.routeKey === 'POST /api/v1/issues' || d.routeKey === 'POST /api/v1/sources/{sourceId}/checks'),
    apply(d, f) {
      const other = f.poolsOf(d.ws === 'A' ? 'B' : 'A');
      const b = d.body as Record<string, unknown>;
      if (d.routeKey === 'POST /api/v1/issues') {
        if (!other.conversation.length) return null;
        b.conversationId = f.g.pick(other.conversation);
        d.notOk = 'conversationId belongs to another workspace';
        return 'body.foreignId(conversationId)';
      }
      const eps = [...other.endpoints.values()].flat();
      if (!eps.length) return null;
      b.endpointId = f.g.pick(eps);
      d.notOk = 'endpointId belongs to another workspace';
      return 'body.foreignId(endpointId)';
    },
  },
  // ── headers ──
  {
    name: 'auth', weight: 5, applies: (d) => !!d.route && d.route.scope !== null,
    apply(d, f) {
      const own = f.otherKey(d.ws); // the draft's workspace's full key
      const token = String(own.header).replace(/^Bearer /, '');
      const widget = f.poolsOf('A').widgetKeys;
      const variants: Array<[string, KeyInfo]> = [
        ['none', { role: 'none' }],
        ['expired', f.keyRole('expired')],
        ['revoked', f.keyRole('revoked')],
        ['wellFormedUnknown', { role: 'garbage', header: `Bearer svck_${'A'.repeat(43)}` }],
        ['garbage', { role: 'garbage', header: `Bearer ${f.g.bytes(20).toString('base64')}` }],
        ['basic', { role: 'garbage', header: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` }],
        ['bare', { role: 'garbage', header: token }],
        ['extraToken', { role: 'garbage', header: `Bearer ${token} extra` }],
        ['truncated', { role: 'garbage', header: `Bearer ${token.slice(0, -1)}` }],
        ['empty', { role: 'garbage', header: '' }],
        ['bearerOnly', { role: 'garbage', header: 'Bearer ' }],
        ['huge', { role: 'garbage', header: `Bearer ${'x'.repeat(8000)}` }],
        ['latin1', { role: 'garbage', header: `Bearer ${token.slice(0, 10)}\u00e9${token.slice(11)}` }],
        ['lowercaseScheme', { ...own, header: `bearer ${token}` }],
        ['twoSpaces', { ...own, header: `Bearer  ${token}` }],
        ['trailingSpace', { ...own, header: `Bearer ${token} ` }],
      ];
      if (widget.length) variants.push(['widgetKey', { role: 'garbage', header: `Bearer ${f.g.pick(widget)}` }]);
      const [name, key] = f.g.pick(variants);
      d.key = key;
      return `auth.${name}`;
    },
  },
  {
    name: 'scope.limited', weight: 3, applies: (d) => !!d.route && d.route.scope !== null && d.ws === 'A',
    apply(d, f) { d.key = f.limited(); return `scope.limited(${d.key.scopes?.join(',')})`; },
  },
  {
    name: 'auth.otherWorkspaceKey', weight: 3, applies: (d) => !!d.route && d.route.scope !== null && Object.keys(d.params).some((p) => paramKind(p)) && d.targetIds.length > 0,
    apply(d, f) {
      // The ids stay those of the draft's workspace; the key becomes the other workspace's.
      d.key = f.otherKey(d.ws === 'A' ? 'B' : 'A');
      return 'auth.otherWorkspaceKey';
    },
  },
  {
    name: 'idem.fresh', weight: 1.5, applies: (d) => d.method === 'POST' && !!d.route,
    apply(d, f) { d.headers['Idempotency-Key'] = f.freshIdemKey(); return 'idem.fresh'; },
  },
  {
    name: 'idem.invalid', weight: 3, applies: (d) => d.method === 'POST' && !!d.route,
    apply(d, f) {
      const v = f.g.pick(['k'.repeat(256), '', ' ', '\u00e9t\u00e9', 'a\tb', 'x'.repeat(1000), 'ok\u00ff']);
      d.headers['Idempotency-Key'] = v;
      return `idem.invalid(${show(v.slice(0, 10))},${v.length})`;
    },
  },
  {
    name: 'idem.replay', weight: 3,
    applies: (d, f) => d.method === 'POST' && f.idemEntries().some((e) => e.role === (d.ws === 'A' ? 'main' : 'other') && f.routeOf(e.method, e.path) === d.route),
    apply(d, f) {
      const role = d.ws === 'A' ? 'main' : 'other';
      const e = f.g.pick(f.idemEntries().filter((x) => x.role === role && f.routeOf(x.method, x.path) === d.route));
      const route = f.routeOf(e.method, e.path);
      if (!route) return null;
      Object.assign(d, {
        route, routeKey: `${route.method} ${route.path}`, method: e.method, rawPath: e.path, query: e.query, headers: { ...e.headers },
        body: e.body === undefined ? NO_BODY : new RawBytes(e.body), key: f.otherKey(d.ws), certain: [], handlerExpect: undefined, notOk: undefined,
      });
      delete d.headers.Authorization; delete d.headers['Content-Length'];
      if (d.headers['Transfer-Encoding']) { delete d.headers['Transfer-Encoding']; d.chunked = true; }
      d.idem = { kind: 'replay', entry: e };
      return 'idem.replay';
    },
  },
  {
    name: 'idem.reuse', weight: 3, applies: (d, f) => d.method === 'POST' && !!d.route && f.idemEntries().some((e) => e.role === (d.ws === 'A' ? 'main' : 'other')),
    apply(d, f) {
      const role = d.ws === 'A' ? 'main' : 'other';
      const e = f.g.pick(f.idemEntries().filter((x) => x.role === role));
      d.headers['Idempotency-Key'] = e.key;
      d.idem = { kind: 'reuse', entry: e };
      return 'idem.reuse';
    },
  },
  {
    name: 'header.apiVersion', weight: 2, applies: (d) => !!d.route,
    apply(d, f) {
      const v = f.g.pick(['2026-06-28', '', 'latest', '2026-06-29 ', ' 2026-06-29', '2026-06-29, 2026-06-29', '2025-01-01', '1', '2026-06-29\u00a0']);
      d.headers['Api-Version'] = v;
      return `header.apiVersion(${show(v)})`;
    },
  },
  {
    name: 'header.requestId', weight: 2, applies: (d) => !!d.route,
    apply(d, f) {
      const v = f.g.pick(['r'.repeat(128), 'r'.repeat(129), '', 'a b', 'caf\u00e9', 'x'.repeat(4000), '"quoted"', '<script>', '%00']);
      d.headers['X-Request-Id'] = v;
      return `header.requestId(${v.length})`;
    },
  },
  {
    name: 'header.duplicates', weight: 1, applies: (d) => !!d.route,
    apply(d, f) {
      const h = f.g.pick(['Content-Type', 'Api-Version', 'Idempotency-Key', 'X-Request-Id', 'Authorization']);
      const cur = h === 'Authorization' ? d.key.header : d.headers[h];
      const first = typeof cur === 'string' ? cur : 'application/json';
      const vals = [first, f.g.pick(['text/plain', first, 'x', '2026-06-29', 'Bearer nope'])];
      if (h === 'Authorization') d.key = { ...d.key, header: vals }; else d.headers[h] = vals;
      d.noOracle = true;
      return `header.duplicates(${h})`;
    },
  },
  {
    name: 'header.misc', weight: 1.5, applies: (d) => !!d.route,
    apply(d, f) {
      const [k, v] = f.g.pick<[string, string]>([['Accept', 'text/html'], ['Accept', ''], ['Accept-Encoding', 'gzip, br'], ['Expect', '100-continue'], ['Connection', 'close'],
        ['Cookie', 'a=b; __proto__=x'], ['X-Forwarded-For', '10.0.0.1, 127.0.0.1'], ['Origin', 'http://evil.example'], ['Range', 'bytes=0-10'],
        ['If-None-Match', '*'], ['X-HTTP-Method-Override', 'DELETE'], ['Host', 'evil.example'], ['Content-Language', '\u00e9'], ['Upgrade', 'websocket']]);
      d.headers[k] = v;
      if (k === 'Expect') d.noOracle = true;
      return `header.misc(${k})`;
    },
  },
  {
    name: 'method.other', weight: 2, applies: (d) => !!d.route,
    apply(d, f) {
      const m = f.g.pick(['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS', 'HEAD', 'TRACE']);
      if (m === d.method) return null;
      d.method = m;
      d.handlerExpect = undefined;
      return `method.other(${m})`;
    },
  },
];

// ───────────────────────────── helpers ─────────────────────────────

const mb = (n: number): number => Math.round(n / MiB);

/** JSON.stringify with everything outside printable ASCII escaped (NBSP, bidi marks, lone surrogates stay visible). */
function show(v: string): string { return asciiJson(v); }
function asciiJson(v: unknown): string {
  return JSON.stringify(v).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** encodeURIComponent, with lone surrogates written as their (invalid) 3-byte UTF-8 forms (%ED%A0%80). */
function encodeComponent(s: string): string {
  try { return encodeURIComponent(s); } catch {
    let out = '';
    for (const ch of s) {
      const c = ch.codePointAt(0)!;
      if (c >= 0xd800 && c <= 0xdfff) out += `%${(0xe0 | (c >> 12)).toString(16).toUpperCase()}%${(0x80 | ((c >> 6) & 0x3f)).toString(16).toUpperCase()}%${(0x80 | (c & 0x3f)).toString(16).toUpperCase()}`;
      else out += encodeURIComponent(ch);
    }
    return out;
  }
}

/** Cursors belong to a list: the route and its path parameters (messages of one conversation). */
function listKey(route: Route, params: Record<string, string>): string {
  return `${route.path}|${Object.values(params).join('|')}`;
}

function safeDecode(s: string): string {
  try { return decodeURIComponent(s); } catch { return s; }
}

function fitCodePoints(s: string, max: number): string {
  return codePointLength(s) <= max ? s : Array.from(s).slice(0, max).join('');
}

function addCapped<T>(arr: T[], v: T, rng: Rng, cap = POOL_CAP): void {
  if (arr.includes(v)) return;
  if (arr.length >= cap) arr.splice(rng.int(arr.length), 1);
  arr.push(v);
}
function removeFrom<T>(arr: T[], v: T): void { const i = arr.indexOf(v); if (i >= 0) arr.splice(i, 1); }

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function safeJson(text: string): any {
  try { return JSON.parse(text); } catch { return undefined; }
}

/** Header names lower-cased, as the server sees them (duplicates of single-value headers: first; others joined). */
function lowerHeaders(h: Record<string, string | string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    const key = k.toLowerCase();
    const vals = (Array.isArray(v) ? v : [v]).map((x) => x.replace(/^[ \t]+|[ \t]+$/g, ''));
    out[key] = ['content-type', 'authorization', 'content-length', 'host'].includes(key) ? vals[0] : vals.join(', ');
  }
  return out;
}

function fingerprint(method: string, path: string, body: Buffer | undefined): string {
  return createHash('sha256').update(`${method} ${path}`).update('\n').update(body ?? Buffer.alloc(0)).digest('hex');
}

function errorBodyProblem(status: number, text: string): string | null {
  const b = safeJson(text);
  if (b === undefined) return `the body is not JSON: ${JSON.stringify(text.slice(0, 100))}`;
  if (!b || typeof b !== 'object' || Array.isArray(b)) return 'the body is not a JSON object';
  const keys = Object.keys(b).sort().join(',');
  if (keys !== 'code,error') return `the body's keys are ${keys}, not code,error`;
  const def = (ERRORS as Record<string, { status: number; message: string }>)[b.code];
  if (!def) return `code ${JSON.stringify(b.code)} is not in ERRORS`;
  if (def.status !== status) return `code ${b.code} belongs to status ${def.status}, answered with ${status}`;
  // An invalid query parameter or header names itself instead of the body (docs/api.md#errors).
  const leads = b.code === 'invalid_request' ? [def.message.slice(0, -1), 'Query parameter ', 'Header '] : [def.message.slice(0, -1)];
  if (typeof b.error !== 'string' || !leads.some((l) => b.error.startsWith(l))) return `error ${JSON.stringify(b.error)} does not start with the code's message`;
  if (/\bat .*\.(ts|js):\d+|\/work\/|node:internal|\/tmp\//.test(b.error)) return 'the message leaks a stack or a path';
  return null;
}

function protoFingerprint(): string {
  const o = Object.getOwnPropertyNames(Object.prototype).length;
  const a = Object.getOwnPropertyNames(Array.prototype).length;
  const probe = ({} as Record<string, unknown>).fuzzPolluted;
  return `${o}/${a}/${String(probe)}`;
}

/** Long repeats written as `unit{*N}` (reproducers of huge values stay readable). */
function squeeze(s: string): string {
  return s.replace(/([\s\S]{1,12}?)\1{15,}/g, (m, unit: string) => `${unit}{*${m.length / unit.length}}`);
}

function preview(b: Buffer, max = 300): string {
  const head = b.subarray(0, 64 * 1024);
  const text = head.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(head) && b.length <= head.length) return `hex:${head.subarray(0, 160).toString('hex')}${b.length > 160 ? `… (${b.length} bytes)` : ''}`;
  const sq = squeeze(text);
  const shown = show(sq.slice(0, max)) + (sq.length > max || b.length > head.length ? '…' : '');
  return `${shown}${b.length > max ? ` (${b.length} bytes)` : ''}`;
}

function diffSizes(a: string, b: string): string {
  const m = new Map(a.split(' ').map((x) => x.split('=') as [string, string]));
  return b.split(' ').map((x) => x.split('=') as [string, string]).filter(([k, v]) => m.get(k) !== v).map(([k, v]) => `${k} ${m.get(k) ?? '-'}→${v}`).slice(0, 6).join(', ');
}

function reproducer(p: Plan): Reproducer {
  if (p.raw) return { method: '(raw)', target: '', headers: {}, bodyBytes: p.raw.length, bodyPreview: '', raw: preview(p.raw, 400) };
  const target = squeeze(p.path + (p.qs ? `?${p.qs}` : ''));
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.headers)) {
    const s = Array.isArray(v) ? v.join(' | ') : v;
    const sq = squeeze(s);
    headers[k] = k === 'Authorization' ? sq.replace(/svck_[0-9A-Za-z]{39}/g, (m) => `${m.slice(0, 9)}…`) : sq.length > 160 ? `${sq.slice(0, 160)}… (${s.length} chars)` : sq;
  }
  if (p.draft.chunked) headers['Transfer-Encoding'] = 'chunked';
  return {
    method: p.method, target: target.length > 300 ? `${target.slice(0, 300)}… (${target.length} chars)` : target, headers,
    bodyBytes: p.body?.length ?? 0, bodyPreview: p.body ? preview(p.body) : '(none)',
  };
}

// ───────────────────────────── report ─────────────────────────────

/** A readable summary: per route, statuses, mutations, failures with reproducers. */
export function formatReport(r: FuzzReport, opts: { mutations?: boolean } = {}): string {
  const lines: string[] = [];
  const st = (m: Map<number, number>) => [...m.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s === 0 ? 'none' : s}×${n}`).join(' ');
  lines.push(`fuzz seed ${r.seed}, ${r.iterations} iterations${r.routeFilter ? `, routes matching ${JSON.stringify(r.routeFilter)}` : ''}: `
    + `${r.requests} requests (${r.seedRequests} seeding), ${(r.durationMs / 1000).toFixed(1)} s `
    + `(seed ${((r.phases.seed ?? 0) / 1000).toFixed(1)} s, fuzz ${((r.phases.fuzz ?? 0) / 1000).toFixed(1)} s, after ${((r.phases.post ?? 0) / 1000).toFixed(1)} s)`);
  lines.push(`statuses: ${st(r.statuses)}`);
  lines.push(`expectations checked: ${r.expectationsChecked}; upstream requests: ${r.upstreamRequests}; keep-alive retries: ${r.retries}; rss ${r.memory.rssStartMb}→${r.memory.rssEndMb} MB, heap ${r.memory.heapEndMb} MB`);
  lines.push('requests per route (valid) statuses:');
  const w = Math.max(...[...r.perRoute.keys()].map((k) => k.length));
  for (const [k, s] of [...r.perRoute.entries()].sort((a, b) => a[0].localeCompare(b[0]))) lines.push(`  ${k.padEnd(w)} ${String(s.requests).padStart(6)} (${s.valid}) ${st(s.statuses)}`);
  if (opts.mutations) {
    lines.push('mutations:');
    for (const [k, n] of [...r.mutations.entries()].map(([k, n]) => [k.startsWith('(') ? k : k.replace(/\(.*$/, ''), n] as const).reduce((m, [k, n]) => m.set(k, (m.get(k) ?? 0) + n), new Map<string, number>()).entries()) lines.push(`  ${k} ${n}`);
  }
  if (r.validRejected.size) {
    lines.push('valid requests answered 4xx (semantics, not failures):');
    for (const [k, n] of [...r.validRejected.entries()].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`  ${k} ×${n}`);
  }
  lines.push(`FAILURES: ${r.failureCount}${r.failureCount ? ` (${[...r.failuresByKind.entries()].map(([k, n]) => `${k}×${n}`).join(', ')}; ${r.failures.length} shown)` : ''}`);
  for (const f of r.failures) {
    lines.push(`- [${f.kind}] seed ${f.seed} iteration ${f.iteration} (${f.phase}) ${f.route} [${f.mutations.join(' + ')}]: ${f.message}`);
    if (f.request) {
      if (f.request.raw) lines.push(`    raw request: ${f.request.raw}`);
      else {
        lines.push(`    ${f.request.method} ${asciiJson(f.request.target).slice(1, -1)}`);
        lines.push(`    headers: ${asciiJson(f.request.headers)}`);
        lines.push(`    body (${f.request.bodyBytes} bytes): ${f.request.bodyPreview}`);
      }
    }
    if (f.response) lines.push(`    → ${f.response.status} ${asciiJson(f.response.body).slice(1, -1)}`);
  }
  if (r.dataDir) lines.push(`data dir kept: ${r.dataDir}`);
  if (r.failures.length) lines.push(`reproduce: npm run fuzz -- --seed ${r.seed} --iterations ${r.iterations}${r.routeFilter ? ` --route ${JSON.stringify(r.routeFilter)}` : ''}`);
  return lines.join('\n');
}
