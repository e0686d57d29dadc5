/**
 * Arbitrary-JSON parser (docs/sources.md#what-ingestion-extracts): `JSON.parse`, then one document per top-level entry,
 * values flattened to readable `path.to.key: value` lines for search.
 */
import { IngestError, parsedSource, type ParsedDocument, type ParsedSource } from '../types.js';
import { isObj } from './values.js';
import { positionAt } from './position.js';

/** Most characters of flattened text kept per document. */
const MAX_DOC_CHARS = 16000;
/** Nesting depth below which values are summarised as `{…}` / `[…]`. */
const MAX_DEPTH = 64;
/** Longest title derived from a value. */
const MAX_TITLE_CHARS = 80;

/**
 * Parses JSON text (`JSON.parse`; a leading BOM is ignored) to its value.
 * @throws IngestError `JSON: <reason>` with the 1-based line and column when the engine reports a position.
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

/** `path: value` lines of a value, at most `MAX_DOC_CHARS` in all (then `… (truncated)`, and the walk stops). */
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
  for (const k of ['name', 'title', 'id']) {
    const v = isObj(el) ? el[k] : undefined;
    if ((typeof v === 'string' && v.trim()) || typeof v === 'number') return titleOf(v);
  }
  return `[${i}]`;
}

/**
 * A parsed JSON value as `entry` documents (docs/sources.md#what-ingestion-extracts): one per key or element, a scalar
 * as one; texts of at most ~16,000 characters, nesting past 64 levels summarised; `title` from `title`, else `name`.
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
    value.forEach((el, i) => documents.push({ kind: 'entry', title: elementTitle(el, i), text: flatten(el,
      `[${i}]`) }));
  } else if (typeof value === 'object' && value !== null) {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj);
    if (keys.length === 0) documents.push({ kind: 'entry', title: '(empty object)', text: '{}' });
    for (const k of keys) documents.push({ kind: 'entry', title: k, text: flatten(obj[k], joinKey('', k)) });
    const named = [obj.title, obj.name].find((v) => typeof v === 'string' && v.trim());
    if (named !== undefined) title = titleOf(named);
  } else {
    documents.push({ kind: 'entry', title: titleOf(value) || '(empty string)', text: flatten(value, '') });
  }
  return parsedSource(documents, [], title);
}
