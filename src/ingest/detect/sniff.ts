/**
 * The text tests of type detection (docs/sources.md#type-detection): whether a text starts an HTML document, has a WSDL
 * root element, or reads as `.proto` or GraphQL SDL. The text is untrusted, so the checks scan by hand in linear time
 * (no backtracking regular expressions).
 */
/** How much of a text's start the line tests read (8 KiB). */
export const HEAD_CHARS = 8192;

/** `\s` of regular expressions (JavaScript's white space and line terminators). */
export function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/** `\w`: an ASCII letter, digit or `_`. */
const isWordChar = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) ||
  c === 95;
const isNameStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;

/** A cursor over one string: each method advances past what it matched and says whether it did. */
class Cursor {
  constructor(readonly s: string, public i = 0) {}
  /** White space (`\s`), at least `min` characters of it. */
  spaces(min = 0): boolean { const from = this.i; while (this.i < this.s.length && isSpace(this.s.charCodeAt(
    this.i))) this.i++; return this.i - from >= min; }
  /** Spaces and tabs. */
  blanks(): void { while (this.s.charCodeAt(this.i) === 32 || this.s.charCodeAt(this.i) === 9) this.i++; }
  /** Word characters (`\w`), at least `min` of them. */
  word(min = 1): boolean { const from = this.i; while (this.i < this.s.length && isWordChar(this.s.charCodeAt(
    this.i))) this.i++; return this.i - from >= min; }
  /** A name: a letter or `_`, then word characters. */
  name(): boolean { return isNameStart(this.s.charCodeAt(this.i)) && this.word(); }
  /** The literal `t` (ASCII-case-insensitively with `ci`). */
  lit(t: string, ci = false): boolean {
    const got = this.s.slice(this.i, this.i + t.length);
    if ((ci ? got.toLowerCase() : got) !== t) return false;
    this.i += t.length;
    return true;
  }
  /** One of `chars` (a set of single characters). */
  one(chars: string): boolean { if (this.i < this.s.length && chars.includes(this.s[this.i])) {
    this.i++; return true; } return false; }
  /** A keyword: `t` not followed by a word character. */
  keyword(t: string): boolean { const at = this.i; if (this.lit(t) && !isWordChar(this.s.charCodeAt(
    this.i))) return true; this.i = at; return false; }
  /** The rest of the current line (without its line break). */
  restOfLine(): string { const nl = this.s.indexOf('\n', this.i); return this.s.slice(this.i,
    nl < 0 ? this.s.length : nl); }
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

/** True when `test` matches at the start (after leading blanks) of some line of `text`. */
function anyLine(text: string, test: (c: Cursor) => boolean): boolean {
  for (const i of lineStarts(text)) if (test(new Cursor(text, i))) return true;
  return false;
}

/** A line only a .proto file starts with (`syntax = "proto3"`, `package a.b;`, `service X {`…). */
function protoLine(c: Cursor): boolean {
  const at = c.i;
  const quoted = (inner: () => boolean): boolean => { const q = c.s[c.i]; return c.one('"\'') && inner() && c.lit(q); };
  if (c.lit('syntax') && c.spaces() && c.lit('=') && c.spaces() &&
    quoted(() => c.lit('proto') && c.one('23'))) return true;
  c.i = at;
  if (c.lit('edition') && c.spaces() && c.lit('=') && c.spaces() &&
    quoted(() => { const f = c.i; while (c.one('0123456789')); return c.i > f; })) return true;
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

/** A `.proto` file: a line of `head` (the first 8 KiB) starts as only .proto does, and `text` has a block. */
export function looksLikeProto(text: string, head: string): boolean {
  return anyLine(head, protoLine) && protoBlock(text);
}

/** A line starting a GraphQL type-system definition (`type X … {`, `schema {`, `union U =`, `directive @`…). */
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
  if (c.lit('scalar') && c.spaces(1) && c.name()) { c.blanks(); if (c.i >= c.s.length || c.s[c.i] === '\r' || c.s[
    c.i] === '\n') return true; }
  c.i = from;
  return c.lit('directive') && c.spaces(1) && c.lit('@');
}

/** GraphQL SDL: a line of `head` (the first 8 KiB) starts a type-system definition, optionally after `extend`. */
export function looksLikeGraphqlSdl(_text: string, head: string): boolean {
  return anyLine(head, graphqlLine);
}

/** After white space and comments, the text starts an HTML document (`<!doctype html`, `<html`, `<head`, `<body`). */
export function htmlStart(text: string): boolean {
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

/** True for an HTML media type (`text/html`, `application/xhtml+xml`). */
export const isHtmlType = (m: string | undefined): boolean => m === 'text/html' || m === 'application/xhtml+xml';

/** Whether `text` content is HTML: by its start, its media type, or HTML tags in a text that starts with `<`. */
export function isHtml(text: string, mediaType?: string): boolean {
  const start = text.replace(/^\uFEFF/, '').trimStart();
  const h = start.slice(0, HEAD_CHARS);
  return htmlStart(h) || isHtmlType(mediaType) || (start[0] === '<' && htmlTag(h));
}

/** A tag that only HTML uses among the first ones: `<p`, `<div`, `<h1`…`<h6`, `<a` (or their end tags). */
export function htmlTag(text: string): boolean {
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
 * True when an XML text's root is a WSDL 1.1 `definitions` (any prefix) whose start tag declares the WSDL 1.1
 * namespace; the prolog (declaration, processing instructions, comments, DOCTYPE) is skipped however long it is.
 */
export function isWsdlRoot(text: string): boolean {
  const c = new Cursor(text);
  for (;;) {
    c.spaces();
    let close: string | undefined;
    if (c.lit('<?')) close = '?>';
    else if (c.lit('<!--')) close = '-->';
    else if (c.lit('<!doctype', true)) {
      close = '>';
      const subset = text.indexOf('[', c.i);
      const gt = text.indexOf('>', c.i);
      if (subset >= 0 && (gt < 0 || subset < gt)) c.i = text.indexOf(']', subset);
      if (c.i < 0) return false;
    }
    if (close === undefined) break;
    const at = text.indexOf(close, c.i);
    if (at < 0) return false;
    c.i = at + close.length;
  }
  if (!c.lit('<')) return false;
  const from = c.i;
  while (c.i < text.length && !isSpace(text.charCodeAt(c.i)) && text[c.i] !== '>' && text[c.i] !== '/') c.i++;
  const name = text.slice(from, c.i);
  if (name !== 'definitions' && !name.endsWith(':definitions')) return false;
  let quote = '';
  let end = c.i;
  for (; end < text.length; end++) {
    const ch = text[end];
    if (quote) { if (ch === quote) quote = ''; } else if (ch === '"' || ch === "'") quote =
      ch; else if (ch === '>') break;
  }
  const tag = text.slice(c.i, end);
  return tag.includes('"http://schemas.xmlsoap.org/wsdl/"') || tag.includes("'http://schemas.xmlsoap.org/wsdl/'");
}
