/**
 * Character-level scanning for the YAML parser: line structure, comments and the flow scalar styles with line folding
 * (block scalars are in `block-scalar.ts`). It walks one string with `charCodeAt`; positions past the end read as
 * `NaN`, which every class test treats as the end.
 */
import { IngestError } from '../../types.js';
import { positionAt, type Position } from '../position.js';

export const TAB = 9;
export const LF = 10;
export const SPACE = 32;
export const BANG = 33;
export const DQUOTE = 34;
export const HASH = 35;
export const PERCENT = 37;
export const AMP = 38;
export const SQUOTE = 39;
export const STAR = 42;
export const COMMA = 44;
export const DASH = 45;
export const DOT = 46;
export const COLON = 58;
export const GT = 62;
export const QMARK = 63;
export const LBRACKET = 91;
export const BACKSLASH = 92;
export const RBRACKET = 93;
export const LBRACE = 123;
export const PIPE = 124;
export const RBRACE = 125;

/** Space or tab (YAML s-white). */
export function isBlank(c: number): boolean {
  return c === SPACE || c === TAB;
}

/** Space, tab, line feed or end of input (`NaN`). */
export function isWsOrEnd(c: number): boolean {
  return c === SPACE || c === TAB || c === LF || c !== c;
}

/** `,` `[` `]` `{` `}` (YAML c-flow-indicator). */
export function isFlowIndicator(c: number): boolean {
  return c === COMMA || c === LBRACKET || c === RBRACKET || c === LBRACE || c === RBRACE;
}

/** Single-character escapes of double-quoted scalars (§5.7). */
const ESCAPES: Record<string, string> = {
  '0': '\0', a: '\x07', b: '\b', t: '\t', '\t': '\t', n: '\n', v: '\v', f: '\f', r: '\r',
  e: '\x1b', ' ': ' ', '"': '"', '/': '/', '\\': '\\', N: '\x85', _: '\xa0', L: '\u2028', P: '\u2029',
};
/** Number of hex digits after `\x`, `\u`, `\U`. */
const HEX_ESCAPES: Record<string, number> = { x: 2, u: 4, U: 8 };

/**
 * Low-level cursor over a YAML text. Line breaks are normalised to `\n` and a leading BOM is dropped on construction;
 * errors are {@link IngestError}s prefixed `YAML: ` with the 1-based line and column of the offending character.
 */
export class Scanner {
  readonly src: string;
  readonly len: number;
  pos = 0;
  /** The last line break a scalar scan or flow white space passed: a flow pair spanning it is refused (§7.4.1). */
  lastBreak = 0;
  /** A tab before the content {@link nextContent} last stopped at, or -1: indentation is spaces only (§6.1). */
  indentTab = -1;

  constructor(text: string) {
    let s = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    if (s.indexOf('\r') >= 0) s = s.replace(/\r\n?/g, '\n');
    // The end of input ends the last line as a break would (as the yaml-test-suite reads it, for block scalars).
    if (s.length > 0 && s.charCodeAt(s.length - 1) !== LF) s += '\n';
    this.src = s;
    this.len = s.length;
  }

  /** Throws `YAML: <message> at line L, column C` for position `at`. */
  fail(message: string, at: number = this.pos): never {
    const { line, column } = this.lineCol(at);
    throw new IngestError(`YAML: ${message}`, line, column);
  }

  /** 1-based line and column of a position (only used for errors, so a plain count is fine). */
  lineCol(at: number): Position {
    return positionAt(this.src, at);
  }

  /** UTF-16 code unit at `p`; `NaN` past the end. */
  code(p: number): number {
    return this.src.charCodeAt(p);
  }

  /** 0-based column of position `p`. */
  colOf(p: number): number {
    return p === 0 ? 0 : p - (this.src.lastIndexOf('\n', p - 1) + 1);
  }

  /** `---` or `...` at the start of a line, followed by white space or the end (§9.1.2). */
  isDocMarker(p: number): boolean {
    const c = this.code(p);
    if ((c !== DASH && c !== DOT) || (p > 0 && this.code(p - 1) !== LF)) return false;
    return this.code(p + 1) === c && this.code(p + 2) === c && isWsOrEnd(this.code(p + 3));
  }

  /** `-` followed by white space: a block sequence entry indicator. */
  isSeqEntry(p: number): boolean {
    return this.code(p) === DASH && isWsOrEnd(this.code(p + 1));
  }

  /** Skips spaces and tabs on the current line. */
  skipInline(): void {
    while (isBlank(this.code(this.pos))) this.pos++;
  }

  /** Consumes the rest of the line (white space and a comment only) and its break; throws for anything else. */
  endOfLine(): void {
    this.skipInline();
    const c = this.code(this.pos);
    if (c === LF) {
      this.pos++;
    } else if (c === HASH) {
      if (this.pos > 0 && !isWsOrEnd(this.code(this.pos - 1))) {
        this.fail('a comment must be separated from the content before it by white space');
      }
      const e = this.src.indexOf('\n', this.pos);
      this.pos = e < 0 ? this.len : e + 1;
    } else if (c === c) {
      if (c === COLON) this.fail('mapping values are not allowed here');
      this.fail(`unexpected '${this.src[this.pos]}' after a complete node`);
    }
  }

  /**
   * Skips blank and comment lines to the next content character; returns its line's indentation, or -1 at the end or at
   * a document marker (`pos` left on it). Calling it again without moving is a no-op.
   */
  nextContent(): number {
    const s = this.src;
    for (;;) {
      let p = this.pos;
      while (isBlank(s.charCodeAt(p))) p++;
      const c = s.charCodeAt(p);
      if (c === LF) {
        this.pos = p + 1;
        continue;
      }
      if (c === HASH && (p === 0 || isWsOrEnd(s.charCodeAt(p - 1)))) {
        const e = s.indexOf('\n', p);
        this.pos = e < 0 ? this.len : e + 1;
        continue;
      }
      this.pos = p;
      if (p >= this.len) return -1;
      const ls = p === 0 ? 0 : s.lastIndexOf('\n', p - 1) + 1;
      if (ls === p && this.isDocMarker(p)) return -1;
      let q = ls;
      while (s.charCodeAt(q) === SPACE) q++;
      // Blanks run from `ls` to `p`: if the spaces stop before `p`, a tab follows them.
      this.indentTab = q < p && s.charCodeAt(q) === TAB ? q : -1;
      return q - ls;
    }
  }

  /**
   * Plain scalar (§7.3.3) at `pos`, folded over continuation lines indented at least `minIndent` (§6.5). Stops before
   * `: `, ` #`, a comment line, a document marker and, in flow, flow indicators; `pos` ends after the last content.
   */
  scanPlain(minIndent: number, flow: boolean): string {
    const s = this.src;
    const len = this.len;
    let out = '';
    let sep = '';
    let segStart = this.pos;
    for (;;) {
      let p = segStart;
      let end = segStart;
      while (p < len) {
        const c = s.charCodeAt(p);
        if (c === LF) break;
        if (c === SPACE || c === TAB) {
          p++;
          continue;
        }
        if (c === COLON) {
          const n = s.charCodeAt(p + 1);
          if (isWsOrEnd(n) || (flow && isFlowIndicator(n))) break;
        } else if (c === HASH) {
          if (isBlank(s.charCodeAt(p - 1))) break;
        } else if (flow && isFlowIndicator(c)) {
          break;
        }
        p++;
        end = p;
      }
      out += sep + s.slice(segStart, end);
      this.pos = end;
      if (s.charCodeAt(p) !== LF) return out;
      // Look ahead for a continuation line.
      let q = p;
      let breaks = 0;
      let c: number;
      for (;;) {
        const ls = ++q;
        while (s.charCodeAt(q) === SPACE) q++;
        const indent = q - ls;
        while (isBlank(s.charCodeAt(q))) q++;
        c = s.charCodeAt(q);
        if (c === LF) {
          breaks++;
          continue;
        }
        if (q >= len || indent < minIndent || c === HASH || (indent === 0 && this.isDocMarker(ls))) return out;
        break;
      }
      const n = s.charCodeAt(q + 1);
      if (c === COLON && (isWsOrEnd(n) || (flow && isFlowIndicator(n)))) return out;
      if (flow && isFlowIndicator(c)) return out;
      sep = breaks === 0 ? ' ' : '\n'.repeat(breaks);
      segStart = q;
      this.lastBreak = p;
    }
  }

  /**
   * At a line feed in a quoted scalar: skips it, empty lines and the next line's leading blanks; returns the number of
   * empty lines (§6.5). Throws at the end, at a document marker, or for a line indented less than `minIndent`.
   */
  private foldQuoted(minIndent: number, start: number, style: string): number {
    const s = this.src;
    let q = this.pos;
    let breaks = 0;
    this.lastBreak = q;
    for (;;) {
      const ls = ++q;
      while (s.charCodeAt(q) === SPACE) q++;
      const indent = q - ls;
      while (isBlank(s.charCodeAt(q))) q++;
      if (q >= this.len) this.fail(`unterminated ${style} scalar`, start);
      if (s.charCodeAt(q) === LF) {
        breaks++;
        continue;
      }
      if (indent === 0 && this.isDocMarker(ls)) this.fail(`document marker inside a ${style} scalar`, ls);
      if (indent < minIndent) this.fail(`bad indentation of a multi-line ${style} scalar`, q);
      this.pos = q;
      return breaks;
    }
  }

  /** A break in a quoted scalar at `p` (§7.3.1–2): the line from `chunk` without trailing blanks, then the fold. */
  private foldLine(chunk: number, p: number, minIndent: number, start: number, style: string): string {
    let e = p;
    while (e > chunk && isBlank(this.src.charCodeAt(e - 1))) e--;
    const text = this.src.slice(chunk, e);
    this.pos = p;
    const breaks = this.foldQuoted(minIndent, start, style);
    return text + (breaks === 0 ? ' ' : '\n'.repeat(breaks));
  }

  /** Double-quoted scalar (§7.3.1) at `pos`, with all §5.7 escapes; leaves `pos` after the closing quote. */
  scanDouble(minIndent: number): string {
    const s = this.src;
    const len = this.len;
    const start = this.pos;
    let out = '';
    let chunk = start + 1;
    let p = chunk;
    for (;;) {
      let c = NaN;
      while (p < len) {
        c = s.charCodeAt(p);
        if (c === DQUOTE || c === BACKSLASH || c === LF) break;
        p++;
      }
      if (p >= len) this.fail('unterminated double-quoted scalar', start);
      if (c === DQUOTE) {
        this.pos = p + 1;
        return out + s.slice(chunk, p);
      }
      if (c === BACKSLASH) {
        out += s.slice(chunk, p);
        const e = s[p + 1] ?? '';
        if (e === '\n') {
          // Escaped line break (§7.3.1 s-double-escaped): no space, only the empty lines count.
          this.pos = p + 1;
          out += '\n'.repeat(this.foldQuoted(minIndent, start, 'double-quoted'));
          p = chunk = this.pos;
          continue;
        }
        const single = ESCAPES[e];
        if (single !== undefined) {
          out += single;
          p = chunk = p + 2;
          continue;
        }
        const digits = HEX_ESCAPES[e];
        const hex = digits === undefined ? '' : s.slice(p + 2, p + 2 + digits);
        const cp = /^[0-9a-fA-F]+$/.test(hex) && hex.length === digits ? parseInt(hex, 16) : -1;
        if (cp < 0 || cp > 0x10ffff) this.fail(`invalid escape sequence '\\${e}${hex}'`, p);
        out += String.fromCodePoint(cp);
        p = chunk = p + 2 + hex.length;
        continue;
      }
      out += this.foldLine(chunk, p, minIndent, start, 'double-quoted');
      p = chunk = this.pos;
    }
  }

  /** Single-quoted scalar (§7.3.2) at `pos` (`''` is a quote); leaves `pos` after the closing quote. */
  scanSingle(minIndent: number): string {
    const s = this.src;
    const len = this.len;
    const start = this.pos;
    let out = '';
    let chunk = start + 1;
    let p = chunk;
    for (;;) {
      let c = NaN;
      while (p < len) {
        c = s.charCodeAt(p);
        if (c === SQUOTE || c === LF) break;
        p++;
      }
      if (p >= len) this.fail('unterminated single-quoted scalar', start);
      if (c === SQUOTE) {
        if (s.charCodeAt(p + 1) === SQUOTE) {
          out += s.slice(chunk, p + 1);
          p = chunk = p + 2;
          continue;
        }
        this.pos = p + 1;
        return out + s.slice(chunk, p);
      }
      out += this.foldLine(chunk, p, minIndent, start, 'single-quoted');
      p = chunk = this.pos;
    }
  }
}
