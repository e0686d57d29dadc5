/**
 * Small helpers of the fuzzer: escaping and previews for reproducers, pools, fingerprints, the
 * error-body check.
 */
import { ERRORS } from '../../src/http/errors.js';
import { MiB, type Route } from '../../src/http/route.js';
import { type Plan, POOL_CAP, type Reproducer } from './types.js';
import { Rng } from './rng.js';
import { codePointLength } from '../../src/http/schema.js';
import { createHash } from 'node:crypto';

/** Bytes in MiB, rounded. */
export const mb = (n: number): number => Math.round(n / MiB);

/** JSON.stringify with everything outside printable ASCII escaped (NBSP, bidi marks, lone surrogates stay visible). */
export function show(v: string): string { return asciiJson(v); }
/** JSON text with every character outside printable ASCII escaped. */
export function asciiJson(v: unknown): string {
  return JSON.stringify(v).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** encodeURIComponent, with lone surrogates written as their (invalid) 3-byte UTF-8 forms (%ED%A0%80). */
export function encodeComponent(s: string): string {
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
export function listKey(route: Route, params: Record<string, string>): string {
  return `${route.path}|${Object.values(params).join('|')}`;
}

/** `decodeURIComponent`, or the text as is when it does not decode. */
export function safeDecode(s: string): string {
  try { return decodeURIComponent(s); } catch { return s; }
}

/** `s` cut to at most `max` code points. */
export function fitCodePoints(s: string, max: number): string {
  return codePointLength(s) <= max ? s : Array.from(s).slice(0, max).join('');
}

/** Adds `v` to a pool, dropping a random older entry when the pool is full. */
export function addCapped<T>(arr: T[], v: T, rng: Rng, cap = POOL_CAP): void {
  if (arr.includes(v)) return;
  if (arr.length >= cap) arr.splice(rng.int(arr.length), 1);
  arr.push(v);
}
/** Removes `v` from `arr` when present. */
export function removeFrom<T>(arr: T[], v: T): void { const i = arr.indexOf(v); if (i >= 0) arr.splice(i, 1); }

// eslint-disable-next-line @typescript-eslint/no-explicit-any
/** The parsed JSON of `text`, or undefined. */
export function safeJson(text: string): any {
  try { return JSON.parse(text); } catch { return undefined; }
}

/** Header names lower-cased, as the server sees them (duplicates of single-value headers: first; others joined). */
export function lowerHeaders(h: Record<string, string | string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    const key = k.toLowerCase();
    const vals = (Array.isArray(v) ? v : [v]).map((x) => x.replace(/^[ \t]+|[ \t]+$/g, ''));
    out[key] = ['content-type', 'authorization', 'content-length', 'host'].includes(key) ? vals[0] : vals.join(', ');
  }
  return out;
}

/** The idempotency fingerprint of a request, as the server computes it (method, path, body bytes). */
export function fingerprint(method: string, path: string, body: Buffer | undefined): string {
  return createHash('sha256').update(`${method} ${path}`).update('\n').update(body ?? Buffer.alloc(0)).digest('hex');
}

/** What is wrong with a 4xx body (not exactly `{code, error}`, an unknown code, a code of another status); null when nothing. */
export function errorBodyProblem(status: number, text: string): string | null {
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

/** The own properties of the built-in prototypes, to notice prototype pollution. */
export function protoFingerprint(): string {
  const o = Object.getOwnPropertyNames(Object.prototype).length;
  const a = Object.getOwnPropertyNames(Array.prototype).length;
  const probe = ({} as Record<string, unknown>).fuzzPolluted;
  return `${o}/${a}/${String(probe)}`;
}

/** Long repeats written as `unit{*N}` (reproducers of huge values stay readable). */
export function squeeze(s: string): string {
  return s.replace(/([\s\S]{1,12}?)\1{15,}/g, (m, unit: string) => `${unit}{*${m.length / unit.length}}`);
}

/** A readable preview of a body: text squeezed, bytes as hex. */
export function preview(b: Buffer, max = 300): string {
  const head = b.subarray(0, 64 * 1024);
  const text = head.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(head) && b.length <= head.length) return `hex:${head.subarray(0, 160).toString('hex')}${b.length > 160 ? `… (${b.length} bytes)` : ''}`;
  const sq = squeeze(text);
  const shown = show(sq.slice(0, max)) + (sq.length > max || b.length > head.length ? '…' : '');
  return `${shown}${b.length > max ? ` (${b.length} bytes)` : ''}`;
}

/** The entries that differ between two `indexSizes` texts. */
export function diffSizes(a: string, b: string): string {
  const m = new Map(a.split(' ').map((x) => x.split('=') as [string, string]));
  return b.split(' ').map((x) => x.split('=') as [string, string]).filter(([k, v]) => m.get(k) !== v).map(([k, v]) => `${k} ${m.get(k) ?? '-'}→${v}`).slice(0, 6).join(', ');
}

/** The reproducer of a planned request. */
export function reproducer(p: Plan): Reproducer {
  if (p.raw) return { method: '(raw)', target: '', headers: {}, bodyBytes: p.raw.length, bodyPreview: '', raw: preview(p.raw, 400) };
  const target = squeeze(p.path + (p.qs ? `?${p.qs}` : ''));
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.headers)) {
    const s = Array.isArray(v) ? v.join(' | ') : v;
    const sq = squeeze(s);
    // Keys and session tokens are shortened: a report is printed, and they are secrets.
    headers[k] = k === 'Authorization' ? sq.replace(/svck_[0-9A-Za-z]{39}/g, (m) => `${m.slice(0, 9)}…`)
      : k === 'Cookie' ? sq.replace(/=([0-9A-Za-z]{4})[0-9A-Za-z]{39}/g, '=$1…')
        : sq.length > 160 ? `${sq.slice(0, 160)}… (${s.length} chars)` : sq;
  }
  if (p.draft.chunked) headers['Transfer-Encoding'] = 'chunked';
  return {
    method: p.method, target: target.length > 300 ? `${target.slice(0, 300)}… (${target.length} chars)` : target, headers,
    bodyBytes: p.body?.length ?? 0, bodyPreview: p.body ? preview(p.body) : '(none)',
  };
}
