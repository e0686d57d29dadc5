/**
 * Source type detection for `type: "auto"`: from the content itself and,
 * for fetched documents, the response's media type. Structured text (JSON or YAML) is
 * classified by its top-level keys; everything else by its first significant lines.
 */
import { parseJsonText } from './json.js';
import { parseYaml } from './yaml.js';

/** Types stored for sources (`type` in docs/api.md#source-object). */
export const SOURCE_TYPES = ['openapi', 'json', 'url', 'website', 'text', 'graphql', 'postman', 'asyncapi', 'grpc', 'soap', 'github', 'notion', 'confluence', 'hubspot'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

/** Types that parse text content (as opposed to `url`, `website`, `github`, which fetch). */
export type ContentType = 'openapi' | 'json' | 'text' | 'graphql' | 'postman' | 'asyncapi' | 'grpc' | 'soap';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The type of an already-parsed JSON/YAML value: an API description by its marker keys, else `json`. */
export function classifyValue(v: unknown): ContentType {
  if (!isObj(v)) return 'json';
  if ('openapi' in v || 'swagger' in v) return 'openapi';
  if ('asyncapi' in v) return 'asyncapi';
  const info = v.info;
  if (isObj(info) && (Array.isArray(v.item) || (typeof info.schema === 'string' && info.schema.includes('getpostman.com')))) return 'postman';
  if ('__schema' in v || (isObj(v.data) && '__schema' in v.data)) return 'graphql';
  return 'json';
}

/** Parses text that is JSON (leading `{`/`[`) or else YAML. @throws IngestError with line and column. */
export function parseStructured(text: string): unknown {
  const t = text.replace(/^\uFEFF/, '');
  const first = t.trimStart()[0];
  return first === '{' || first === '[' ? parseJsonText(t) : parseYaml(t);
}

const head = (text: string, n = 8192) => text.slice(0, n);

// Detection runs on untrusted text, so it uses no regular expression with nested or
// overlapping quantifiers (those backtrack catastrophically): the checks below scan by hand,
// each in time linear in what it reads.

/** `\s` of regular expressions (JavaScript's white space and line terminators). */
function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}
const isWordChar = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isNameStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;

/** A cursor over one string: each method advances past what it matched and says whether it did. */
class Cursor {
  constructor(readonly s: string, public i = 0) {}
  spaces(min = 0): boolean { const from = this.i; while (this.i < this.s.length && isSpace(this.s.charCodeAt(this.i))) this.i++; return this.i - from >= min; }
  blanks(): void { while (this.s.charCodeAt(this.i) === 32 || this.s.charCodeAt(this.i) === 9) this.i++; }
  word(min = 1): boolean { const from = this.i; while (this.i < this.s.length && isWordChar(this.s.charCodeAt(this.i))) this.i++; return this.i - from >= min; }
  name(): boolean { return isNameStart(this.s.charCodeAt(this.i)) && this.word(); }
  lit(t: string, ci = false): boolean {
    const got = this.s.slice(this.i, this.i + t.length);
    if ((ci ? got.toLowerCase() : got) !== t) return false;
    this.i += t.length;
    return true;
  }
  /** One of `chars` (a set of single characters). */
  one(chars: string): boolean { if (this.i < this.s.length && chars.includes(this.s[this.i])) { this.i++; return true; } return false; }
  /** A keyword: `t` not followed by a word character. */
  keyword(t: string): boolean { const at = this.i; if (this.lit(t) && !isWordChar(this.s.charCodeAt(this.i))) return true; this.i = at; return false; }
  /** The rest of the current line (without its line break). */
  restOfLine(): string { const nl = this.s.indexOf('\n', this.i); return this.s.slice(this.i, nl < 0 ? this.s.length : nl); }
}

/** Start offsets of the lines of `text`, each after its leading white space (blank lines included). */
function* lineStarts(text: string): Generator<number> {
  for (let i = 0; i <= text.length;) {
    let j = i;
    while (j < text.length && (text.charCodeAt(j) === 32 || text.charCodeAt(j) === 9 || text.charCodeAt(j) === 13)) j++;
    yield j;
    const nl = text.indexOf('\n', j);
    if (nl < 0) return;
    i = nl + 1;
  }
}

/** A line of a .proto file that only a .proto file starts with (`syntax = "proto3"`, `package a.b;`, `service X {`…). */
function protoLine(c: Cursor): boolean {
  const at = c.i;
  const quoted = (inner: () => boolean): boolean => { const q = c.s[c.i]; return c.one('"\'') && inner() && c.lit(q); };
  if (c.lit('syntax') && c.spaces() && c.lit('=') && c.spaces() && quoted(() => c.lit('proto') && c.one('23'))) return true;
  c.i = at;
  if (c.lit('edition') && c.spaces() && c.lit('=') && c.spaces() && quoted(() => { const f = c.i; while (c.one('0123456789')); return c.i > f; })) return true;
  c.i = at;
  if (c.lit('package') && c.spaces(1)) {
    const f = c.i;
    while (c.i < c.s.length && (isWordChar(c.s.charCodeAt(c.i)) || c.s[c.i] === '.')) c.i++;
    if (c.i > f && c.spaces() && c.lit(';')) return true;
  }
  for (const kw of ['service', 'message']) {
    c.i = at;
    if (c.lit(kw) && c.spaces(1) && c.word() && c.spaces() && c.lit('{')) return true;
  }
  return false;
}

/** A block keyword (`message`, `service`, `enum`) anywhere, then a name and `{`. */
function protoBlock(text: string): boolean {
  for (const kw of ['message', 'service', 'enum']) {
    for (let i = text.indexOf(kw); i >= 0; i = text.indexOf(kw, i + 1)) {
      if (i > 0 && isWordChar(text.charCodeAt(i - 1))) continue;
      const c = new Cursor(text, i + kw.length);
      if (c.spaces(1) && c.word() && c.spaces() && c.lit('{')) return true;
    }
  }
  return false;
}

/** A line of GraphQL SDL: a type-system definition's start (`type X … {`, `schema {`, `union U =`, `scalar S`, `directive @`). */
function graphqlLine(c: Cursor): boolean {
  const at = c.i;
  if (!(c.keyword('extend') && c.spaces(1))) c.i = at;
  const from = c.i;
  for (const kw of ['type', 'interface', 'input', 'enum']) {
    c.i = from;
    if (c.lit(kw) && c.spaces(1) && c.name() && c.restOfLine().includes('{')) return true;
  }
  c.i = from;
  if (c.lit('schema')) {
    c.spaces();
    if (c.lit('{')) return true;
    if (c.lit('@') && c.restOfLine().includes('{')) return true;
  }
  c.i = from;
  if (c.lit('union') && c.spaces(1) && c.word() && c.restOfLine().includes('=')) return true;
  c.i = from;
  if (c.lit('scalar') && c.spaces(1) && c.name()) { c.blanks(); if (c.i >= c.s.length || c.s[c.i] === '\r' || c.s[c.i] === '\n') return true; }
  c.i = from;
  return c.lit('directive') && c.spaces(1) && c.lit('@');
}

const anyLine = (text: string, test: (c: Cursor) => boolean): boolean => {
  for (const i of lineStarts(text)) if (test(new Cursor(text, i))) return true;
  return false;
};

/**
 * True when a YAML document names itself an API description: an `openapi`, `swagger` or
 * `asyncapi` key at the document's top level, wherever it stands in the text (the top level is
 * the indentation of the first content line, so an indented document after `---` counts).
 */
function yamlApiMarker(text: string): boolean {
  let indent = -1;
  for (let i = 0; i <= text.length;) {
    let j = i;
    while (text.charCodeAt(j) === 32) j++;
    const nl = text.indexOf('\n', j);
    const end = nl < 0 ? text.length : nl;
    const c = text.charCodeAt(j);
    const blank = j >= end || c === 13 || c === 35 /* # */ || (j === i && (text.startsWith('---', j) || text.startsWith('...', j) || c === 37 /* % */));
    if (!blank) {
      if (indent < 0) indent = j - i;
      if (j - i === indent) {
        const k = new Cursor(text, j);
        if ((k.lit('openapi') || k.lit('swagger') || k.lit('asyncapi')) && (k.blanks(), k.lit(':'))) return true;
      }
    }
    if (nl < 0) return false;
    i = nl + 1;
  }
  return false;
}

/** Leading white space and comments skipped, the text starts an HTML document (`<!doctype html`, `<html`, `<head`, `<body`). */
function htmlStart(text: string): boolean {
  const c = new Cursor(text);
  for (;;) {
    c.spaces();
    if (!c.lit('<!--')) break;
    const close = text.indexOf('-->', c.i);
    if (close < 0) return false;
    c.i = close + 3;
  }
  if (!c.lit('<')) return false;
  const at = c.i;
  if (c.lit('!doctype', true) && c.spaces(1) && c.lit('html', true)) return true;
  for (const tag of ['html', 'head', 'body']) {
    c.i = at;
    if (c.lit(tag, true) && (c.lit('>') || c.spaces(1))) return true;
  }
  return false;
}

/** A `<definitions` element (any prefix) followed, anywhere after it, by the WSDL 1.1 namespace. */
function wsdlStart(text: string): boolean {
  for (let i = text.indexOf('definitions'); i >= 0; i = text.indexOf('definitions', i + 1)) {
    let p = i - 1;
    if (text[p] === ':') { p--; while (p >= 0 && (isWordChar(text.charCodeAt(p)) || text[p] === '-')) p--; if (p === i - 2) continue; }
    if (text[p] !== '<') continue;
    const after = text.charCodeAt(i + 'definitions'.length);
    if (!(after === 62 /* > */ || isSpace(after))) continue;
    return text.includes('schemas.xmlsoap.org/wsdl', i);
  }
  return false;
}

/** A tag that only HTML uses among the first ones: `<p`, `<div`, `<h1`…`<h6`, `<a` (or their end tags). */
function htmlTag(text: string): boolean {
  for (let i = text.indexOf('<'); i >= 0; i = text.indexOf('<', i + 1)) {
    const c = new Cursor(text, i + 1);
    c.lit('/');
    const at = c.i;
    for (const t of ['p', 'div', 'a', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6']) {
      c.i = at;
      if (c.lit(t, true) && !isWordChar(text.charCodeAt(c.i))) return true;
    }
  }
  return false;
}

/**
 * Detects the type of `text`; `mediaType` is a fetched document's lower-cased media type.
 * Returns the type and, for structured content, the parsed value (so it is parsed once).
 * @throws IngestError when the content claims to be JSON (or YAML by its media type) but does not parse.
 */
export function detectContent(text: string, mediaType?: string): { type: ContentType; html?: boolean; value?: unknown } {
  const t = text.replace(/^\uFEFF/, '');
  const start = t.trimStart();
  const h = head(start);
  if (mediaType === 'application/json' || mediaType?.endsWith('+json') || start[0] === '{' || start[0] === '[') {
    const value = parseJsonText(t);
    return { type: classifyValue(value), value };
  }
  if (start[0] === '"') {
    // A lone JSON string (RFC 8259 allows any value at the top): JSON when it parses whole.
    try { const value: unknown = JSON.parse(t); return { type: 'json', value }; } catch { /* prose that starts with a quote */ }
  }
  if (mediaType === 'text/html' || mediaType === 'application/xhtml+xml' || htmlStart(h)) return { type: 'text', html: true };
  if (start[0] === '<') return wsdlStart(h) ? { type: 'soap' } : { type: 'text', html: htmlTag(h) };
  if (mediaType === 'application/yaml' || mediaType === 'text/yaml' || mediaType === 'application/x-yaml' || yamlApiMarker(t)) {
    const value = parseYaml(t);
    return { type: classifyValue(value), value };
  }
  if (anyLine(h, protoLine) && protoBlock(start)) return { type: 'grpc' };
  if (anyLine(h, graphqlLine)) return { type: 'graphql' };
  return { type: 'text' };
}
