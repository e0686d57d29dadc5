/**
 * GraphQL lexer (GraphQL October 2021 §2 Language): punctuators, names, numbers, strings and `"""` block strings with
 * the spec's BlockStringValue() dedent, `#` comments, insignificant commas.
 */
import { IngestError } from '../../types.js';
import { positionAt } from '../position.js';

const STRING_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r',
  t: '\t' };

/** The spec's BlockStringValue(): common indentation and blank leading/trailing lines removed. */
function blockStringValue(raw: string): string {
  const lines = raw.split(/\r\n|\n|\r/);
  let common = Infinity;
  for (let i = 1; i < lines.length; i++) {
    const l = lines[i];
    let n = 0;
    while (n < l.length && (l[n] === ' ' || l[n] === '\t')) n++;
    if (n < l.length && n < common) common = n;
  }
  if (common !== Infinity) for (let i = 1; i < lines.length; i++) lines[i] = lines[i].slice(common);
  let a = 0;
  let b = lines.length;
  while (a < b && blank(lines[a])) a++;
  while (b > a && blank(lines[b - 1])) b--;
  return lines.slice(a, b).join('\n');
}

function blank(line: string): boolean { return /^[ \t]*$/.test(line); }
function isNameStart(c: number): boolean { return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95; }
function isDigit(c: number): boolean { return c >= 48 && c <= 57; }

/** Lexer: `kind`/`value`/`start` describe the current token; the parser extends it. */
export class SdlLexer {
  private pos = 0;
  protected kind = '';
  protected value = '';
  protected start = 0;
  private end = 0;
  protected prevEnd = 0;

  constructor(protected readonly src: string) {
    this.advance();
  }

  protected fail(message: string, at = this.start): never {
    // GraphQL ends a line at `\r\n`, `\n` or a lone `\r` (LineTerminator, §2.1.3).
    const { line, column } = positionAt(this.src, at, 'any');
    throw new IngestError(`GraphQL: ${message}`, line, column);
  }

  protected describe(): string {
    if (this.kind === 'EOF') return 'end of input';
    if (this.kind === 'P') return `'${this.value}'`;
    if (this.kind === 'Name') return `name '${this.value}'`;
    return this.kind === 'String' || this.kind === 'BlockString' ? 'a string' : `number ${this.value}`;
  }

  private set(kind: string, value: string): void { this.kind = kind; this.value = value; }

  /** Moves to the next significant token. */
  protected advance(): void {
    const src = this.src;
    const len = src.length;
    let i = this.pos;
    this.prevEnd = this.end;
    for (;;) {
      const c = src.charCodeAt(i);
      if (c === 32 || c === 10 || c === 44 || c === 9 || c === 13 || c === 0xfeff) i++;
      else if (c === 35) {
        while (i < len && src.charCodeAt(i) !== 10 && src.charCodeAt(i) !== 13) i++;
      } else break;
    }
    this.start = i;
    const c = src.charCodeAt(i);
    let j = i + 1;
    if (i >= len) {
      this.set('EOF', '');
      j = len;
    } else if (isNameStart(c)) {
      while (j < len && (isNameStart(src.charCodeAt(j)) || isDigit(src.charCodeAt(j)))) j++;
      this.set('Name', src.slice(i, j));
    } else if ('!$&():=@[]{|}'.includes(src[i])) {
      this.set('P', src[i]);
    } else if (c === 46 && src.startsWith('...', i)) {
      this.set('P', '...');
      j = i + 3;
    } else if (c === 34) {
      j = src.startsWith('"""', i) ? this.blockString(i) : this.string(i);
    } else if (c === 45 || isDigit(c)) {
      j = this.number(i);
    } else {
      this.fail(`unexpected character ${JSON.stringify(String.fromCodePoint(src.codePointAt(i)!))}`, i);
    }
    this.pos = this.end = j;
  }

  private number(i: number): number {
    const src = this.src;
    let j = src.charCodeAt(i) === 45 ? i + 1 : i;
    const digits = (): void => {
      if (!isDigit(src.charCodeAt(j))) this.fail('invalid number, expected a digit', j);
      while (isDigit(src.charCodeAt(j))) j++;
    };
    if (src.charCodeAt(j) !== 48) digits();
    else if (isDigit(src.charCodeAt(++j))) this.fail('invalid number, unexpected digit after 0', j);
    const intEnd = j;
    if (src.charCodeAt(j) === 46) {
      j++;
      digits();
    }
    if (src.charCodeAt(j) === 69 || src.charCodeAt(j) === 101) {
      if (src.charCodeAt(++j) === 43 || src.charCodeAt(j) === 45) j++;
      digits();
    }
    if (src.charCodeAt(j) === 46 || isNameStart(src.charCodeAt(j))) this.fail(
      `invalid number, unexpected ${JSON.stringify(src[j])}`, j);
    this.set(j === intEnd ? 'Int' : 'Float', src.slice(i, j));
    return j;
  }

  private string(i: number): number {
    const src = this.src;
    let j = i + 1;
    let chunk = j;
    let value = '';
    for (;;) {
      const c = src.charCodeAt(j);
      if (j >= src.length || c === 10 || c === 13) this.fail('unterminated string', i);
      if (c === 34) break;
      if (c !== 92) { j++; continue; }
      value += src.slice(chunk, j);
      const e = src[j + 1];
      if (e in STRING_ESCAPES) {
        value += STRING_ESCAPES[e];
        j += 2;
      } else if (e === 'u') {
        const braced = src[j + 2] === '{';
        const close = braced ? src.indexOf('}', j + 3) : j + 6;
        const hex = src.slice(braced ? j + 3 : j + 2, close);
        const cp = /^[0-9a-fA-F]+$/.test(hex) && (braced || hex.length === 4) ? parseInt(hex, 16) : -1;
        if (cp < 0 || cp > 0x10ffff || close < 0) this.fail('invalid Unicode escape sequence', j);
        value += String.fromCodePoint(cp);
        j = braced ? close + 1 : close;
      } else {
        this.fail(`invalid escape sequence \\${e ?? ''}`, j);
      }
      chunk = j;
    }
    this.set('String', value + src.slice(chunk, j));
    return j + 1;
  }

  private blockString(i: number): number {
    let raw = '';
    let j = i + 3;
    for (;;) {
      const k = this.src.indexOf('"""', j);
      if (k === -1) this.fail('unterminated block string', i);
      const escaped = this.src.charCodeAt(k - 1) === 92;
      raw += escaped ? `${this.src.slice(j, k - 1)}"""` : this.src.slice(j, k);
      j = k + 3;
      if (!escaped) break;
    }
    this.set('BlockString', blockStringValue(raw));
    return j;
  }
}
