/**
 * Arbitrary-JSON parser (docs/sources.md#what-ingestion-extracts: json → no endpoints, one document per top-level entry).
 *
 * Follows RFC 8259 JSON as implemented by `JSON.parse`; values are flattened to readable
 * `path.to.key: value` lines for search.
 */

import { IngestError, type ParsedDocument, type ParsedSource } from '../types.js';
import { positionAt } from './position.js';

/** Most characters of flattened text kept per document. */
const MAX_DOC_CHARS = 16000;
/** Nesting depth below which values are summarised as `{…}` / `[…]`. */
const MAX_DEPTH = 64;
/** Longest title derived from a value. */
const MAX_TITLE_CHARS = 80;

/**
 * Parses JSON text (RFC 8259, via `JSON.parse`); a leading UTF-8 BOM is ignored.
 *
 * @returns the parsed value (object, array or scalar).
 * @throws IngestError `JSON: <reason>` with the 1-based line/column of the error when the
 *   engine reports a position (e.g. `{"a":1,}` → `… at line 1, column 9`).
 */
export function parseJsonText(text: string): unknown {
  const src = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  try {
    return JSON.parse(src) as unknown;
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    const reason = msg.replace(/\s*(?:in JSON )?at position \d+.*$/s, '').replace(/\s*\(line \d+ column \d+\)$/, '');
    const m = /at position (\d+)/.exec(msg);
    if (m) {
      const { line, column } = positionAt(src, Number(m[1]));
      throw new IngestError(`JSON: ${reason || 'invalid JSON'}`, line, column);
    }
    if (src.trim() === '') throw new IngestError('JSON: empty input');
    throw new IngestError(`JSON: ${reason || 'invalid JSON'}`);
  }
}

/** A scalar as it should read in flattened text; multi-line strings are indented. */
function scalarText(v: unknown): string {
  if (typeof v === 'string') return v.includes('\n') ? v.replace(/\r?\n/g, '\n  ') : v;
  if (v === null) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return JSON.stringify(v) ?? String(v);
}

/** `a.b` for identifier-like keys, `a["odd key"]` otherwise. */
function joinKey(prefix: string, key: string): string {
  if (/^[A-Za-z_$][\w$-]*$/.test(key)) return prefix ? `${prefix}.${key}` : key;
  return `${prefix}[${JSON.stringify(key)}]`;
}

/**
 * Flattens a JSON value to `path: value` lines, at most `MAX_DOC_CHARS` characters in total
 * (then a `… (truncated)` line); traversal stops as soon as the budget is spent.
 */
function flatten(value: unknown, root: string): string {
  const lines: string[] = [];
  let size = 0;
  let truncated = false;
  const emit = (line: string): boolean => {
    if (size + line.length + 1 > MAX_DOC_CHARS) {
      const room = MAX_DOC_CHARS - size - 1;
      if (room > 40) lines.push(line.slice(0, room));
      truncated = true;
      return false;
    }
    lines.push(line);
    size += line.length + 1;
    return true;
  };
  const walk = (v: unknown, path: string, depth: number): boolean => {
    const label = path || '(value)';
    if (Array.isArray(v)) {
      if (v.length === 0) return emit(`${label}: []`);
      if (depth >= MAX_DEPTH) return emit(`${label}: […]`);
      for (let i = 0; i < v.length; i++) if (!walk(v[i], `${path}[${i}]`, depth + 1)) return false;
      return true;
    }
    if (typeof v === 'object' && v !== null) {
      const keys = Object.keys(v);
      if (keys.length === 0) return emit(`${label}: {}`);
      if (depth >= MAX_DEPTH) return emit(`${label}: {…}`);
      for (const k of keys) if (!walk((v as Record<string, unknown>)[k], joinKey(path, k), depth + 1)) return false;
      return true;
    }
    return emit(path ? `${path}: ${scalarText(v)}` : scalarText(v));
  };
  walk(value, root, 0);
  if (truncated) lines.push('… (truncated)');
  return lines.join('\n');
}

/** A short one-line title from a scalar. */
function titleOf(v: unknown): string {
  const s = (typeof v === 'string' ? v : scalarText(v)).replace(/\s+/g, ' ').trim();
  return s.length > MAX_TITLE_CHARS ? `${s.slice(0, MAX_TITLE_CHARS - 1)}…` : s;
}

/** Title of an array element: its `name`, `title` or `id` when that is a non-empty string or a number. */
function elementTitle(el: unknown, i: number): string {
  if (typeof el === 'object' && el !== null && !Array.isArray(el)) {
    const o = el as Record<string, unknown>;
    for (const k of ['name', 'title', 'id']) {
      const v = o[k];
      if ((typeof v === 'string' && v.trim()) || typeof v === 'number') return titleOf(v);
    }
  }
  return `[${i}]`;
}

/**
 * Turns an already-parsed JSON value into `entry` documents (no endpoints).
 *
 * - object: one document per key, title = the key, text = the value flattened with lines rooted at
 *   the key (`key.sub[0].x: value`);
 * - array: one document per element, title = the element's `name` / `title` / `id` or `[i]`, lines
 *   rooted at `[i]`;
 * - scalar: one document whose title is the value (shortened) and whose text is the value;
 * - an empty object / array gives one document with text `{}` / `[]`.
 *
 * Each document's text is at most ~16,000 characters (the rest is cut, marked `… (truncated)`);
 * nesting beyond 64 levels is summarised as `{…}` / `[…]`. `title` of the result is the top-level
 * object's `title` (else `name`) when that is a string.
 *
 * @throws IngestError when the value is `undefined` or not JSON-representable (function, symbol).
 */
export function parseJsonDocuments(value: unknown): ParsedSource {
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') {
    throw new IngestError('JSON: no JSON value to ingest');
  }
  const documents: ParsedDocument[] = [];
  let title: string | undefined;
  if (Array.isArray(value)) {
    if (value.length === 0) documents.push({ kind: 'entry', title: '(empty array)', text: '[]' });
    value.forEach((el, i) => documents.push({ kind: 'entry', title: elementTitle(el, i), text: flatten(el, `[${i}]`) }));
  } else if (typeof value === 'object' && value !== null) {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj);
    if (keys.length === 0) documents.push({ kind: 'entry', title: '(empty object)', text: '{}' });
    for (const k of keys) documents.push({ kind: 'entry', title: k, text: flatten(obj[k], joinKey('', k)) });
    for (const k of ['title', 'name']) {
      const v = obj[k];
      if (typeof v === 'string' && v.trim()) {
        title = titleOf(v);
        break;
      }
    }
  } else {
    documents.push({ kind: 'entry', title: titleOf(value) || '(empty string)', text: flatten(value, '') });
  }
  const result: ParsedSource = { documents, endpoints: [] };
  if (title) result.title = title;
  return result;
}
