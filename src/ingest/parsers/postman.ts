/**
 * Postman collection v2.0/v2.1 parser (docs/sources.md#what-ingestion-extracts): one endpoint per request; an
 * `overview` and one `request` document each. Folders (items with `item`) are recursed.
 */
import { IngestError, parsedSource, type ParsedDocument, type ParsedEndpoint, type ParsedSource } from '../types.js';
import { parseJsonText } from './json.js';
import { clip, isObj, optionalString, type Obj } from './values.js';

/** Longest request body text copied into a `request` document. */
const MAX_BODY_CHARS = 2000;
/** Longest description copied into a document. */
const MAX_DESCRIPTION_CHARS = 8000;
/** Deepest folder nesting accepted (guards the recursion). */
const MAX_DEPTH = 200;

/** Postman descriptions are a string or `{content, type?, version?}`. */
function descriptionText(d: unknown): string {
  if (typeof d === 'string') return d.trim();
  if (isObj(d) && typeof d.content === 'string') return d.content.trim();
  return '';
}

/** First index of one of `chars` in `s` outside `{{…}}` variables (an unterminated `{{` is plain text); -1 if none. */
function findOutsideVars(s: string, chars: string): number {
  for (let i = 0; i < s.length; i++) {
    const end = s.startsWith('{{', i) ? s.indexOf('}}', i + 2) : -1;
    if (end >= 0) i = end + 1;
    else if (chars.includes(s[i])) return i;
  }
  return -1;
}

/**
 * The path part of a raw Postman URL, `{{variables}}` kept as written. `{{baseUrl}}/users/:id?x=1` → `/users/:id`;
 * `https://api.x.com/v1/a` → `/v1/a`; no path → `/`.
 */
export function postmanRawPath(raw: string): string {
  let s = raw.trim();
  const cut = findOutsideVars(s, '?#');
  if (cut >= 0) s = s.slice(0, cut);
  if (s.startsWith('/') && !s.startsWith('//')) return s;
  // Strip `scheme://` (the scheme may itself be a variable) or a protocol-relative `//`.
  const colon = findOutsideVars(s, ':');
  if (colon >= 0 && s.startsWith('//', colon + 1) && findOutsideVars(s.slice(0, colon), '/') < 0) {
    s = s.slice(colon + 3);
  } else if (s.startsWith('//')) {
    s = s.slice(2);
  }
  // What is left is `authority[/path]`, the authority possibly being `{{baseUrl}}`.
  const slash = findOutsideVars(s, '/');
  return slash >= 0 ? s.slice(slash) : '/';
}

/** The path of a URL object's structured `path` (array of strings / `{value}` or a string). */
function structuredPath(path: unknown): string | undefined {
  if (typeof path === 'string') return path.startsWith('/') ? path : `/${path}`;
  if (!Array.isArray(path)) return undefined;
  const segs = path.map((p) => (typeof p === 'string' ? p : isObj(p) && typeof p.value === 'string' ? p.value : ''));
  return `/${segs.join('/')}`;
}

/** `display`: the URL as shown to a reader. */
interface UrlInfo { display: string; path: string; query: string[] }

/** Normalises a request `url` (string or object) to its display form, path and query params. */
function urlInfo(url: unknown): UrlInfo {
  if (typeof url === 'string') return { display: url.trim(), path: postmanRawPath(url), query: rawQuery(url) };
  if (!isObj(url)) return { display: '', path: '/', query: [] };
  const raw = optionalString(url.raw)?.trim() ?? '';
  const fromParts = structuredPath(url.path);
  let display = raw;
  if (!display) {
    const host = Array.isArray(url.host) ? url.host.filter((h) => typeof h === 'string').join('.') : (
      optionalString(url.host) ?? '');
    const proto = optionalString(url.protocol);
    display = `${proto ? `${
      proto}://` : ''}${host}${url.port !== undefined ? `:${String(url.port)}` : ''}${fromParts ?? ''}`;
  }
  const path = fromParts ?? (raw ? postmanRawPath(raw) : '/');
  let query: string[] = [];
  if (Array.isArray(url.query)) {
    for (const q of url.query) {
      if (!isObj(q) || q.disabled === true) continue;
      const key = q.key === null || q.key === undefined ? '' : String(q.key);
      if (!key && (q.value === null || q.value === undefined)) continue;
      query.push(q.value === null || q.value === undefined ? key : `${key}=${String(q.value)}`);
    }
  } else if (raw) {
    query = rawQuery(raw);
  }
  return { display, path, query };
}

/** Query parameters (`k=v` strings) written in a raw URL. */
function rawQuery(raw: string): string[] {
  const q = findOutsideVars(raw, '?');
  if (q < 0) return [];
  let rest = raw.slice(q + 1);
  const hash = findOutsideVars(rest, '#');
  if (hash >= 0) rest = rest.slice(0, hash);
  return rest.split('&').filter((p) => p !== '');
}

/** Header names from a v2.x header list or a v2.0 `"Key: value\n…"` header string. */
function headerNames(header: unknown): string[] {
  if (typeof header === 'string') return header.split(/\r?\n/).map((l) => l.split(':')[0].trim()).filter(Boolean);
  if (!Array.isArray(header)) return [];
  const out: string[] = [];
  for (const h of header) {
    if (isObj(h) && typeof h.key === 'string' && h.key.trim() && h.disabled !== true) out.push(h.key.trim());
  }
  return out;
}

/** A readable summary of a non-empty request body: mode plus raw text or field names, truncated; else ''. */
function bodyText(body: unknown): string {
  if (!isObj(body)) return '';
  const mode = optionalString(body.mode);
  if (!mode) return '';
  let detail = '';
  if (mode === 'raw') detail = optionalString(body.raw) ?? '';
  else if (mode === 'urlencoded' || mode === 'formdata') {
    const list = body[mode];
    if (Array.isArray(list)) detail = list.filter((p): p is Obj => isObj(p) && typeof p.key === 'string' &&
      p.disabled !== true).map((p) => String(p.key)).join(', ');
  } else if (mode === 'graphql' && isObj(body.graphql)) {
    detail = [optionalString(body.graphql.query), optionalString(body.graphql.variables)].filter(Boolean).join('\n');
  } else if (mode === 'file' && isObj(body.file)) {
    detail = optionalString(body.file.src) ?? '';
  }
  detail = detail.trim();
  return detail ? `Body (${mode}):\n${clip(detail, MAX_BODY_CHARS)}` : ''; // an empty body says nothing
}

/** Which v2 schema the collection declares, or an error for anything else. */
function schemaVersion(info: Obj): '2.0' | '2.1' {
  const schema = info.schema;
  if (schema === undefined) return '2.1';
  if (typeof schema !== 'string') throw new IngestError('Postman: info.schema must be a URL string');
  const m = /\/v?(\d+)\.(\d+)(?:\.\d+)?\//.exec(schema);
  if (m && m[1] === '2' && (m[2] === '0' || m[2] === '1')) return m[2] === '0' ? '2.0' : '2.1';
  throw new IngestError(
    `Postman: unsupported collection schema ${JSON.stringify(schema)} (only v2.0 and v2.1 are supported)`);
}

/** The server URL named by a conventional collection variable (`baseUrl`, `url`…), if it is http(s). */
function serverUrlFrom(variables: unknown): string | undefined {
  if (!Array.isArray(variables)) return undefined;
  for (const v of variables) {
    if (!isObj(v) || typeof v.key !== 'string' || typeof v.value !== 'string') continue;
    if (/^(base_?url|url|api_?url|host)$/i.test(v.key) && /^https?:\/\/\S+$/i.test(
      v.value.trim())) return v.value.trim();
  }
  return undefined;
}

/**
 * A Postman collection (v2.0/v2.1, parsed or as text) as `overview` and `request` documents and one endpoint per
 * request, `{{variables}}` and `:params` kept in paths, header values never (docs/sources.md#what-ingestion-extracts).
 * @throws IngestError when the value is not a collection (no `info` object / `item` array), declares a schema other
 *   than v2.0 / v2.1 (a missing `info.schema` is read as v2.1), nests folders deeper than 200, or the text is not JSON.
 */
export function parsePostman(doc: unknown): ParsedSource {
  if (typeof doc === 'string') doc = parseJsonText(doc);
  if (!isObj(doc)) throw new IngestError('Postman: a collection must be a JSON object');
  const info = doc.info;
  if (!isObj(info) || !Array.isArray(doc.item)) {
    throw new IngestError('Postman: not a collection (expected an "info" object and an "item" array)');
  }
  schemaVersion(info);
  const title = optionalString(info.name)?.trim() || undefined;

  const documents: ParsedDocument[] = [];
  const endpoints: ParsedEndpoint[] = [];
  const folderNotes: string[] = [];
  documents.push({ kind: 'overview', title: title ?? 'Postman collection', text: '' });

  const visit = (items: unknown[], folders: string[]): void => {
    if (folders.length > MAX_DEPTH) throw new IngestError(`Postman: folders nested deeper than ${MAX_DEPTH} levels`);
    for (const it of items) {
      if (!isObj(it)) continue;
      const name = optionalString(it.name)?.trim() ?? '';
      if (it.request !== undefined && it.request !== null) {
        const req = it.request;
        const r: Obj = typeof req === 'string' ? { url: req, method: 'GET' } : isObj(req) ? req : {};
        const method = (optionalString(r.method)?.trim() || 'GET').toUpperCase();
        const url = urlInfo(r.url);
        const lines: string[] = [];
        if (folders.length) lines.push(`Folder: ${folders.join(' / ')}`);
        lines.push(`${method} ${url.display || url.path}`);
        const desc = descriptionText(r.description) || descriptionText(it.description);
        if (desc) lines.push('', clip(desc, MAX_DESCRIPTION_CHARS), '');
        if (url.query.length) lines.push(`Query parameters: ${url.query.join(', ')}`);
        const headers = headerNames(r.header);
        if (headers.length) lines.push(`Headers: ${headers.join(', ')}`);
        const body = bodyText(r.body);
        if (body) lines.push(body);
        const documentIndex = documents.length;
        documents.push({ kind: 'request', title: name || `${method} ${url.path}`, text: lines.join('\n').trim() });
        endpoints.push({ method, path: url.path, documentIndex });
      }
      if (Array.isArray(it.item)) {
        const desc = descriptionText(it.description);
        const path = [...folders, name || '(unnamed folder)'];
        if (desc) folderNotes.push(`${path.join(' / ')}: ${clip(desc, MAX_DESCRIPTION_CHARS)}`);
        visit(it.item, path);
      }
    }
  };
  visit(doc.item, []);

  const overview: string[] = [title ?? 'Postman collection'];
  const desc = descriptionText(info.description);
  if (desc) overview.push('', clip(desc, MAX_DESCRIPTION_CHARS));
  if (folderNotes.length) overview.push('', 'Folders:', ...folderNotes);
  overview.push('', `${endpoints.length} request${endpoints.length === 1 ? '' : 's'}.`);
  documents[0].text = overview.join('\n');

  return parsedSource(documents, endpoints, title, serverUrlFrom(doc.variable ?? doc.variables));
}

/**
 * Detection of a collection (docs/sources.md#type-detection): an `info` object with an `item` array, or whose
 * `info.schema` names `getpostman.com`.
 */
export function isPostmanCollection(v: Obj): boolean {
  const info = v.info;
  return isObj(info) && (Array.isArray(v.item) || (typeof info.schema === 'string' && info.schema.includes(
    'getpostman.com')));
}
