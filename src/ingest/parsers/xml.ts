/**
 * A small, safe XML 1.0 parser with namespaces, enough for WSDL (docs/security.md#untrusted-input). The DOCTYPE is
 * skipped unread (no external entities, no entity expansion), only the predefined entities and character references are
 * decoded, and nesting is bounded.
 */
import { IngestError } from '../types.js';
import { PositionCursor } from './position.js';

/** One element of the parsed tree. */
export interface XmlElement {
  /** Qualified name as written, e.g. `wsdl:service`. */
  name: string;
  /** Namespace URI the prefix (or the default namespace) resolves to; `''` when none. */
  ns: string;
  /** Local part of the name, e.g. `service`. */
  local: string;
  /** Attributes keyed by their qualified name as written (`name`, `xmlns:tns`…), values decoded. */
  attrs: Record<string, string>;
  /** Child elements in document order. */
  children: XmlElement[];
  /** The element's own character data (text and CDATA, not descendants'), concatenated raw. */
  text: string;
  /** Mixed content in document order: text runs and child elements (for ordered deep text). */
  content: Array<string | XmlElement>;
  /** 1-based position of the start tag's `<`. */
  line: number;
  column: number;
}

const XML_NS = 'http://www.w3.org/XML/1998/namespace';
const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', apos: "'", quot: '"' };
const NAME_RE = /^[A-Za-z_:\u00C0-\uFFFF][A-Za-z0-9_:.\-\u00B7\u00C0-\uFFFF]*$/;

type Scope = Record<string, string>;

function isNameStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c === 58 || c >= 0xc0;
}

function isNameChar(c: number): boolean {
  return isNameStart(c) || (c >= 48 && c <= 57) || c === 45 || c === 46 || c === 0xb7;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 9 || c === 13;
}

/** Whether `cp` is a legal XML 1.0 `Char`. */
function isXmlChar(cp: number): boolean {
  return cp === 9 || cp === 10 || cp === 13 || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) ||
    (cp >= 0x10000 && cp <= 0x10ffff);
}

/** Appends character data to `el.content` (merging adjacent runs); returns `t`. */
function addText(el: XmlElement, t: string): string {
  const last = el.content.length - 1;
  if (last >= 0 && typeof el.content[last] === 'string') el.content[last] += t;
  else if (t) el.content.push(t);
  return t;
}

class XmlParser {
  private pos = 0;
  private hasDoctype = false;
  private readonly src: string;
  /** Positions of elements and errors, asked for in document order (one pass over the text in all). */
  private readonly positions: PositionCursor;

  constructor(input: string, private readonly maxDepth: number) {
    this.src = input.replace(/\r\n?/g, '\n');
    this.positions = new PositionCursor(this.src);
  }

  private fail(message: string, at = this.pos): never {
    const { line, column } = this.positions.at(at);
    throw new IngestError(`XML: ${message}`, line, column);
  }

  private startsWith(s: string): boolean {
    return this.src.startsWith(s, this.pos);
  }

  parseDocument(): XmlElement {
    const src = this.src;
    if (src.charCodeAt(0) === 0xfeff) this.pos = 1;
    let root: XmlElement | undefined;
    while (this.pos < src.length) {
      const c = src.charCodeAt(this.pos);
      if (isSpace(c)) {
        this.pos++;
      } else if (c !== 60 /* < */) {
        this.fail(root ? 'unexpected content after the root element' : 'text before the root element');
      } else if (this.startsWith('<?')) {
        this.skipTo('?>', 'unterminated processing instruction');
      } else if (this.startsWith('<!--')) {
        this.skipTo('-->', 'unterminated comment');
      } else if (this.startsWith('<!DOCTYPE')) {
        if (root || this.hasDoctype) this.fail('misplaced DOCTYPE declaration');
        this.skipDoctype();
      } else if (this.startsWith('</')) {
        this.fail('unexpected closing tag');
      } else if (this.startsWith('<!')) {
        this.fail("unexpected '<!' outside the root element");
      } else {
        if (root) this.fail('unexpected content after the root element');
        root = this.parseElement({ xml: XML_NS }, 1);
      }
    }
    if (!root) this.fail('no root element');
    return root;
  }

  /** Skips from the current `<` past the next `terminator`. */
  private skipTo(terminator: string, error: string): void {
    const end = this.src.indexOf(terminator, this.pos + 2);
    if (end === -1) this.fail(error);
    this.pos = end + terminator.length;
  }

  /** Skips `<!DOCTYPE … [internal subset] >` without interpreting it. */
  private skipDoctype(): void {
    const src = this.src;
    const start = this.pos;
    this.hasDoctype = true;
    this.pos += 9;
    let inSubset = false;
    while (this.pos < src.length) {
      const ch = src[this.pos];
      if (ch === '"' || ch === "'") {
        const end = src.indexOf(ch, this.pos + 1);
        if (end === -1) this.fail('unterminated literal in DOCTYPE', this.pos);
        this.pos = end + 1;
      } else if (inSubset && this.startsWith('<!--')) {
        this.skipTo('-->', 'unterminated comment');
      } else if (inSubset && this.startsWith('<?')) {
        this.skipTo('?>', 'unterminated processing instruction');
      } else if (ch === '[' && !inSubset) {
        inSubset = true;
        this.pos++;
      } else if (ch === ']' && inSubset) {
        inSubset = false;
        this.pos++;
      } else if (ch === '>' && !inSubset) {
        this.pos++;
        return;
      } else {
        this.pos++;
      }
    }
    this.fail('unterminated DOCTYPE declaration', start);
  }

  private readName(): string {
    const src = this.src;
    const start = this.pos;
    if (start >= src.length || !isNameStart(src.charCodeAt(start))) return '';
    let i = start + 1;
    while (i < src.length && isNameChar(src.charCodeAt(i))) i++;
    this.pos = i;
    return src.slice(start, i);
  }

  private skipSpaces(): boolean {
    const start = this.pos;
    while (this.pos < this.src.length && isSpace(this.src.charCodeAt(this.pos))) this.pos++;
    return this.pos > start;
  }

  /** Parses an element starting at its `<`; `depth` is its nesting level (root = 1). */
  private parseElement(parentScope: Scope, depth: number): XmlElement {
    const src = this.src;
    const start = this.pos;
    if (depth > this.maxDepth) this.fail(`elements nested deeper than ${this.maxDepth}`);
    this.pos++;
    const name = this.readName();
    if (!name) this.fail('expected an element name after <', this.pos);
    const attrs: Record<string, string> = Object.create(null) as Record<string, string>;
    const attrPos: Record<string, number> = Object.create(null) as Record<string, number>;
    let selfClosing = false;
    for (;;) {
      const hadSpace = this.skipSpaces();
      if (this.pos >= src.length) this.fail(`unterminated start tag <${name}>`, start);
      const c = src[this.pos];
      if (c === '>') {
        this.pos++;
        break;
      }
      if (c === '/' && src[this.pos + 1] === '>') {
        this.pos += 2;
        selfClosing = true;
        break;
      }
      const aStart = this.pos;
      const aName = this.readName();
      if (!aName) this.fail(`unexpected '${c}' in start tag <${name}>`);
      if (!hadSpace) this.fail(`missing whitespace before attribute '${aName}'`, aStart);
      this.skipSpaces();
      if (src[this.pos] !== '=') this.fail(`attribute '${aName}' has no value`, aStart);
      this.pos++;
      this.skipSpaces();
      const q = src[this.pos];
      if (q !== '"' && q !== "'") this.fail(`value of attribute '${aName}' must be quoted`);
      const end = src.indexOf(q, this.pos + 1);
      if (end === -1) this.fail(`unterminated value of attribute '${aName}'`);
      const lt = src.indexOf('<', this.pos + 1);
      if (lt !== -1 && lt < end) this.fail(`'<' not allowed in value of attribute '${aName}'`, lt);
      if (aName in attrs) this.fail(`duplicate attribute '${aName}'`, aStart);
      attrs[aName] = this.decode(src.slice(this.pos + 1, end), this.pos + 1, true);
      attrPos[aName] = aStart;
      this.pos = end + 1;
    }

    let scope = parentScope;
    for (const a in attrs) {
      if (a !== 'xmlns' && !a.startsWith('xmlns:')) continue;
      if (scope === parentScope) scope = Object.assign(Object.create(null) as Scope, parentScope);
      const prefix = a === 'xmlns' ? '' : a.slice(6);
      if (prefix && !attrs[a]) this.fail(`namespace prefix '${prefix}' cannot be bound to an empty URI`, attrPos[a]);
      scope[prefix] = attrs[a];
    }
    const colon = name.indexOf(':');
    const prefix = colon === -1 ? '' : name.slice(0, colon);
    const ns = scope[prefix];
    if (prefix && ns === undefined) this.fail(`undeclared namespace prefix '${prefix}'`, start + 1);
    for (const a in attrs) {
      const ac = a.indexOf(':');
      if (ac === -1 || a.startsWith('xmlns:')) continue;
      const ap = a.slice(0, ac);
      if (scope[ap] === undefined) this.fail(`undeclared namespace prefix '${ap}'`, attrPos[a]);
    }

    const at = this.positions.at(start);
    const el: XmlElement = {
      name, ns: ns ?? '', local: colon === -1 ? name : name.slice(colon + 1),
      attrs, children: [], text: '', content: [], line: at.line, column: at.column,
    };
    if (selfClosing) return el;
    this.parseContent(el, scope, depth, start);
    return el;
  }

  /** Parses the content of `el` up to and including its end tag. */
  private parseContent(el: XmlElement, scope: Scope, depth: number, start: number): void {
    const src = this.src;
    let text = '';
    for (;;) {
      const lt = src.indexOf('<', this.pos);
      if (lt === -1) this.fail(`unclosed element <${el.name}>`, start);
      if (lt > this.pos) text += addText(el, this.decode(src.slice(this.pos, lt), this.pos, false));
      this.pos = lt;
      if (this.startsWith('</')) {
        this.pos += 2;
        const close = this.readName();
        this.skipSpaces();
        if (src[this.pos] !== '>' || close !== el.name) {
          this.fail(`mismatched closing tag </${close}>, expected </${el.name}>`, lt);
        }
        this.pos++;
        el.text = text;
        return;
      }
      if (this.startsWith('<!--')) {
        this.skipTo('-->', 'unterminated comment');
      } else if (this.startsWith('<![CDATA[')) {
        const end = src.indexOf(']]>', lt + 9);
        if (end === -1) this.fail('unterminated CDATA section');
        text += addText(el, src.slice(lt + 9, end));
        this.pos = end + 3;
      } else if (this.startsWith('<?')) {
        this.skipTo('?>', 'unterminated processing instruction');
      } else if (this.startsWith('<!')) {
        this.fail("unexpected '<!' in element content");
      } else {
        const child = this.parseElement(scope, depth + 1);
        el.children.push(child);
        el.content.push(child);
      }
    }
  }

  /**
   * Decodes entity and character references in `raw` (found at `offset`); in attribute values literal tabs and newlines
   * become spaces (attribute-value normalisation, XML §3.3.3).
   */
  private decode(raw: string, offset: number, attr: boolean): string {
    const ws = attr ? /[\t\n]/g : undefined;
    const norm = ws ? (s: string): string => s.replace(ws, ' ') : (s: string): string => s;
    let amp = raw.indexOf('&');
    if (amp === -1) return norm(raw);
    let out = '';
    let last = 0;
    while (amp !== -1) {
      out += norm(raw.slice(last, amp));
      const semi = raw.indexOf(';', amp + 1);
      const ref = semi === -1 ? '' : raw.slice(amp + 1, semi);
      if (ref.startsWith('#')) {
        const hex = ref[1] === 'x';
        const digits = ref.slice(hex ? 2 : 1);
        const ok = digits.length > 0 && digits.length <= 8 && (hex ? /^[0-9a-fA-F]+$/ : /^[0-9]+$/).test(digits);
        const cp = ok ? parseInt(digits, hex ? 16 : 10) : -1;
        if (!isXmlChar(cp)) this.fail(`invalid character reference '&${ref};'`, offset + amp);
        out += String.fromCodePoint(cp);
      } else if (!NAME_RE.test(ref)) {
        this.fail("'&' must start an entity or character reference (write '&amp;')", offset + amp);
      } else if (ref in PREDEFINED) {
        out += PREDEFINED[ref];
      } else if (this.hasDoctype) {
        out += `&${ref};`; // possibly declared in the (ignored) DTD: kept verbatim, never expanded
      } else {
        this.fail(`undefined entity '&${ref};'`, offset + amp);
      }
      last = semi + 1;
      amp = raw.indexOf('&', last);
    }
    return out + norm(raw.slice(last));
  }
}

/**
 * Parses an XML 1.0 document into its root {@link XmlElement} tree. Skips the XML declaration, processing
 * instructions, comments and the DOCTYPE (expanding nothing it declares); decodes the predefined entities and character
 * references; keeps CDATA verbatim; resolves prefixes through scoped `xmlns` declarations; line ends become `\n`.
 * @throws {IngestError} `XML: …` with 1-based line and column for malformed input: mismatched (`mismatched closing tag
 *   </b>, expected </a>`) or unclosed (`unclosed element <a>`) tags, undeclared prefixes, bad attributes or references,
 *   nesting deeper than `options.maxDepth` (default 256), no root.
 */
export function parseXml(input: string, options: { maxDepth?: number } = {}): XmlElement {
  return new XmlParser(input, options.maxDepth ?? 256).parseDocument();
}

/** Child elements of `el` with local name `local` (and namespace `ns` when given). */
export function childElements(el: XmlElement, local: string, ns?: string): XmlElement[] {
  return el.children.filter((c) => c.local === local && (ns === undefined || c.ns === ns));
}

/** First child element of `el` with local name `local` (and namespace `ns` when given). */
export function firstChild(el: XmlElement, local: string, ns?: string): XmlElement | undefined {
  return el.children.find((c) => c.local === local && (ns === undefined || c.ns === ns));
}

/** All character data of `el` and its descendants, in document order (like DOM `textContent`). */
export function textContent(el: XmlElement): string {
  let out = '';
  for (const part of el.content) out += typeof part === 'string' ? part : textContent(part);
  return out;
}
