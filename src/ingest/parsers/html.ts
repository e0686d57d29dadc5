/**
 * HTML parser (docs/sources.md#what-ingestion-extracts): `page` documents and the links for a same-origin crawl. A
 * single-pass tokenizer loosely after WHATWG tokenization, without tree construction; malformed input is never an error
 * and no input causes super-linear work.
 */
import { enforceCap, parsedSource, type ParsedDocument, type ParsedSource } from '../types.js';
import { decodeEntities } from './html/entities.js';
import { cutLine, oneLine } from './values.js';

export { decodeEntities } from './html/entities.js';

/** Pages whose text is longer than this are split into sections at h1–h3. */
const LONG_PAGE_CHARS = 4000;
/** Longest heading / page title kept. */
const MAX_TITLE_CHARS = 200;

type Token =
  | { type: 'start'; name: string; attrs: Map<string, string>; selfClosing: boolean }
  | { type: 'end'; name: string }
  | { type: 'text'; text: string }
  /** Content of a raw-text element (`script`, `style`, `title`…), not decoded. */
  | { type: 'raw'; name: string; text: string };

/** Elements whose content is not markup (HTML raw text / RCDATA / plaintext). */
const RAW_TEXT = new Set(['script', 'style', 'noscript', 'template', 'textarea', 'title', 'xmp', 'iframe', 'noembed',
  'noframes', 'plaintext']);

/** ASCII-only lower-casing: keeps string length (unlike `toLowerCase` on some non-ASCII letters). */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

function isAsciiAlpha(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 12 || c === 13;
}

/** Runs `onToken` for every token of `html`, in order. Linear in the input size. */
function tokenize(html: string, onToken: (t: Token) => void): void {
  const n = html.length;
  const lower = asciiLower(html);
  let i = 0;
  let textStart = 0;
  let svgDepth = 0;
  const flush = (end: number): void => {
    if (end > textStart) onToken({ type: 'text', text: html.slice(textStart, end) });
  };
  /** Index after the next `>` from `from`, or `n`. */
  const afterGt = (from: number): number => {
    const gt = html.indexOf('>', from);
    return gt < 0 ? n : gt + 1;
  };
  while (i < n) {
    const lt = html.indexOf('<', i);
    if (lt < 0) break;
    const c = html.charCodeAt(lt + 1);
    if (isAsciiAlpha(c)) {
      flush(lt);
      // Tag name, then attributes.
      let j = lt + 1;
      while (j < n && !isSpace(html.charCodeAt(j)) && html[j] !== '/' && html[j] !== '>') j++;
      const name = lower.slice(lt + 1, j);
      const attrs = new Map<string, string>();
      let selfClosing = false;
      let closed = false;
      while (j < n) {
        const ch = html.charCodeAt(j);
        if (isSpace(ch)) { j++; continue; }
        if (ch === 47 /* / */) { selfClosing = html[j + 1] === '>'; j++; continue; }
        if (ch === 62 /* > */) { j++; closed = true; break; }
        selfClosing = false;
        const a = j;
        j++; // the first character may be anything, even '='
        while (j < n && !isSpace(html.charCodeAt(j)) && html[j] !== '/' && html[j] !== '>' && html[j] !== '=') j++;
        const attr = lower.slice(a, j);
        while (j < n && isSpace(html.charCodeAt(j))) j++;
        let value = '';
        if (html[j] === '=') {
          j++;
          while (j < n && isSpace(html.charCodeAt(j))) j++;
          const q = html[j];
          if (q === '"' || q === "'") {
            const end = html.indexOf(q, j + 1);
            if (end < 0) { j = n; break; }
            value = html.slice(j + 1, end);
            j = end + 1;
          } else {
            const v = j;
            while (j < n && !isSpace(html.charCodeAt(j)) && html[j] !== '>') j++;
            value = html.slice(v, j);
          }
        }
        if (!attrs.has(attr)) attrs.set(attr, decodeEntities(value));
      }
      if (!closed) { i = textStart = n; break; } // EOF inside a tag: the tag is dropped
      i = textStart = j;
      onToken({ type: 'start', name, attrs, selfClosing });
      if (name === 'svg' && !selfClosing) svgDepth++;
      if (RAW_TEXT.has(name) && !(name === 'title' && svgDepth > 0)) {
        let k = name === 'plaintext' ? -1 : lower.indexOf(`</${name}`, i);
        while (k >= 0) {
          const after = html.charCodeAt(k + 2 + name.length);
          if (Number.isNaN(after) || isSpace(after) || after === 47 || after === 62) break;
          k = lower.indexOf(`</${name}`, k + 2);
        }
        onToken({ type: 'raw', name, text: html.slice(i, k < 0 ? n : k) });
        if (k < 0) { i = textStart = n; break; }
        i = textStart = afterGt(k);
        onToken({ type: 'end', name });
      }
    } else if (c === 47 /* / */) {
      flush(lt);
      if (isAsciiAlpha(html.charCodeAt(lt + 2))) {
        let j = lt + 2;
        while (j < n && !isSpace(html.charCodeAt(j)) && html[j] !== '/' && html[j] !== '>') j++;
        const name = lower.slice(lt + 2, j);
        i = textStart = afterGt(j);
        if (name === 'svg' && svgDepth > 0) svgDepth--;
        onToken({ type: 'end', name });
      } else {
        i = textStart = afterGt(lt + 2); // `</>` or a bogus comment
      }
    } else if (c === 33 /* ! */) {
      flush(lt);
      if (html.startsWith('<!--', lt)) {
        if (html.startsWith('>', lt + 4)) i = lt + 5;
        else if (html.startsWith('->', lt + 4)) i = lt + 6;
        else {
          const end = html.indexOf('-->', lt + 4);
          i = end < 0 ? n : end + 3;
        }
      } else {
        i = afterGt(lt + 2); // doctype, CDATA and other bogus comments
      }
      textStart = i;
    } else if (c === 63 /* ? */) {
      flush(lt);
      i = textStart = afterGt(lt + 2);
    } else {
      i = lt + 1; // a literal '<'
    }
  }
  flush(n);
}

/** Elements separated from their surroundings by a blank line. */
const PARAGRAPH = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'pre', 'table', 'ul', 'ol', 'dl', 'blockquote',
  'section', 'article', 'header', 'footer', 'main', 'nav', 'aside', 'figure', 'form', 'fieldset', 'hr', 'address',
  'details', 'body', 'html', 'listing', 'xmp', 'menu']);
/** Elements that start and end on a line of their own. */
const LINE = new Set(['div', 'li', 'tr', 'dt', 'dd', 'caption', 'figcaption', 'summary', 'option', 'legend', 'thead',
  'tbody', 'tfoot', 'textarea', 'center', 'dialog', 'search', 'hgroup', 'optgroup']);
/** Raw-text elements whose content is not page text. */
const DROPPED = new Set(['script', 'style', 'noscript', 'template', 'iframe', 'noembed', 'noframes']);

/** An h1–h3 heading: `part` is the index into the builder's parts where its section starts. */
type Mark = { part: number; level: number; title: string };

/** Accumulates page text with collapsed whitespace and block-level line breaks. */
class TextBuilder {
  readonly parts: string[] = [];
  /** Trailing newlines of the output (2 at the start so nothing leading is emitted). */
  private newlines = 2;
  private lineHasContent = false;
  private pendingSpace = false;

  /** Appends inline text (not yet whitespace-collapsed nor decoded). */
  text(raw: string, pre: boolean): void {
    if (pre) {
      const s = decodeEntities(raw.replace(/\r\n?/g, '\n'));
      if (!s) return;
      if (this.pendingSpace) this.parts.push(' ');
      this.pendingSpace = false;
      this.parts.push(s);
      let k = 0;
      while (k < s.length && s[s.length - 1 - k] === '\n') k++;
      this.newlines = k === s.length ? Math.min(2, this.newlines + k) : k;
      this.lineHasContent = k === 0;
      return;
    }
    const c = raw.replace(/[ \t\n\r\f]+/g, ' ');
    const lead = c.startsWith(' ');
    const trail = c.length > 1 && c.endsWith(' ');
    const core = decodeEntities(c.slice(lead ? 1 : 0, trail ? -1 : undefined)).replace(/\u00a0/g, ' ');
    if (core === '') {
      if (lead && this.lineHasContent) this.pendingSpace = true;
      return;
    }
    const prev = this.parts[this.parts.length - 1];
    if ((lead || this.pendingSpace) && this.lineHasContent && !prev?.endsWith(' ')) this.parts.push(' ');
    this.parts.push(core);
    this.lineHasContent = true;
    this.newlines = 0;
    this.pendingSpace = trail;
  }

  /** Ends the output with at least `k` newlines (2: a blank line); `br` adds one even on an empty line, up to two. */
  lineBreak(k: 1 | 2, br = false): void {
    this.pendingSpace = false;
    this.lineHasContent = false;
    const want = br ? Math.min(2, this.newlines + 1) : k;
    if (this.newlines < want) {
      this.parts.push('\n'.repeat(want - this.newlines));
      this.newlines = want;
    }
  }

  /** Literal text that is not subject to collapsing (list bullets, cell separators). */
  literal(s: string): void {
    this.pendingSpace = false;
    this.parts.push(s);
    this.lineHasContent = true;
    this.newlines = 0;
  }

  get hasContent(): boolean { return this.lineHasContent; }
}

/** Joins builder parts into final text: trailing spaces per line removed, ends trimmed. */
function finish(parts: string[]): string {
  const text = parts.join('');
  // Most texts have no line with trailing white space: skip splitting them into lines.
  if (!/[^\S\n]\n/.test(text)) return text.trim();
  return text.split('\n').map((l) => l.trimEnd()).join('\n').trim();
}

/** A title on one line of at most {@link MAX_TITLE_CHARS} characters, the last one `…` when it was cut. */
function titleLine(s: string): string {
  const t = oneLine(s);
  return t.length > MAX_TITLE_CHARS ? cutLine(t, MAX_TITLE_CHARS - 1) : t;
}

/**
 * The readable text of an HTML page (or fragment) as `page` documents (docs/sources.md#what-ingestion-extracts):
 * scripts, styles and comments dropped, entities decoded, blocks as lines; split at h1–h3 past 4,000 characters.
 * Linear. Throws only the per-source cap's IngestError, for more than `maxDocuments` (counted before any is built).
 */
export function parseHtml(text: string, maxDocuments = Infinity): ParsedSource {
  const out = new TextBuilder();
  const marks: Mark[] = [];
  let titleTag = '';
  let firstH1 = '';
  let firstHeading = '';
  let preDepth = 0;
  let skipNewline = false;
  let heading: { level: number; part: number; mark?: Mark } | null = null;

  const closeHeading = (): void => {
    if (!heading) return;
    const t = titleLine(out.parts.slice(heading.part).join(''));
    if (heading.mark) heading.mark.title = t;
    if (heading.level === 1 && !firstH1) firstH1 = t;
    if (!firstHeading) firstHeading = t;
    heading = null;
    out.lineBreak(2);
  };

  tokenize(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text, (t) => {
    if (t.type === 'text') {
      let s = t.text;
      if (skipNewline) {
        s = s.replace(/^\r?\n/, '');
        skipNewline = false;
      }
      out.text(s, preDepth > 0);
    } else if (t.type === 'raw') {
      if (t.name === 'title') {
        if (!titleTag) titleTag = titleLine(decodeEntities(t.text));
      } else if (!DROPPED.has(t.name)) {
        out.text(t.text, t.name === 'xmp' || t.name === 'plaintext' || t.name === 'textarea');
      }
    } else if (t.type === 'start') {
      const name = t.name;
      skipNewline = false;
      if (/^h[1-6]$/.test(name)) {
        closeHeading();
        const level = Number(name[1]);
        out.lineBreak(2);
        const mark = level <= 3 ? { part: out.parts.length, level, title: '' } : undefined;
        if (mark) marks.push(mark);
        out.literal(`${'#'.repeat(level)} `);
        heading = { level, part: out.parts.length, mark };
      } else if (name === 'br') out.lineBreak(1, true);
      else if (PARAGRAPH.has(name)) out.lineBreak(2);
      else if (LINE.has(name)) out.lineBreak(1);
      else if ((name === 'td' || name === 'th') && out.hasContent) out.literal(' | ');
      if (name === 'li') out.literal('- ');
      if (name === 'pre' || name === 'listing') {
        preDepth++;
        skipNewline = true;
      }
    } else {
      const name = t.name;
      if (/^h[1-6]$/.test(name)) closeHeading();
      else if (PARAGRAPH.has(name)) out.lineBreak(2);
      else if (LINE.has(name)) out.lineBreak(1);
      if ((name === 'pre' || name === 'listing') && preDepth > 0) preDepth--;
    }
  });
  closeHeading();

  const full = finish(out.parts);
  const title = titleTag || firstH1 || undefined;
  const documents: ParsedDocument[] = [];
  if (full.length > LONG_PAGE_CHARS && marks.length > 0) {
    const intro = finish(out.parts.slice(0, marks[0].part));
    enforceCap(marks.length + (intro ? 1 : 0), maxDocuments, 'documents'); // counted before the sections are built
    if (intro) documents.push({ kind: 'page', title: title ?? 'Introduction', text: intro });
    marks.forEach((m, k) => {
      const end = k + 1 < marks.length ? marks[k + 1].part : out.parts.length;
      const body = finish(out.parts.slice(m.part, end));
      if (body) documents.push({ kind: 'page', title: m.title || title || 'Untitled section', text: body });
    });
  } else if (full || title) {
    documents.push({ kind: 'page', title: title ?? (firstHeading || 'Untitled page'), text: full });
  }
  return parsedSource(documents, [], title);
}

/**
 * The absolute http(s) URLs of a page's `<a href>` links, in order, de-duplicated, without fragments, resolved against
 * its `<base href>` (else `baseUrl`); links in raw-text elements are ignored. Never throws; linear.
 */
export function extractLinks(html: string, baseUrl: string): string[] {
  const hrefs: string[] = [];
  let baseHref: string | undefined;
  tokenize(html, (t) => {
    if (t.type !== 'start') return;
    const href = t.attrs.get('href');
    if (href === undefined) return;
    if (t.name === 'a') hrefs.push(href);
    else if (t.name === 'base' && baseHref === undefined) baseHref = href;
  });
  const resolve = (href: string, base?: URL): URL | undefined => {
    try {
      return new URL(href.trim(), base);
    } catch {
      return undefined;
    }
  };
  let base = resolve(baseUrl);
  if (baseHref !== undefined) base = resolve(baseHref, base) ?? base;
  const links = new Set<string>();
  for (const href of hrefs) {
    const url = resolve(href, base);
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) continue;
    url.hash = '';
    links.add(url.href);
  }
  return [...links];
}
