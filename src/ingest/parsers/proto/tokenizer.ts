/** Tokenizer of the Protocol Buffers language (lexical elements and comment attachment). */
import { IngestError } from '../../types.js';

export type Kind = 'ident' | 'number' | 'string' | 'sym' | 'eof';

/** A token; `leading`: the comment block directly above it, `trailing`: a comment after it on its line. */
export interface Token {
  kind: Kind; value: string; start: number; end: number; line: number; column: number; leading: string;
  trailing: string;
}

interface Comment { text: string; startLine: number; endLine: number }

const SYMBOLS = ';,.={}[]()<>:-+/';
const ESCAPES: Record<string, string> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\',
  "'": "'", '"': '"', '?': '?' };
const STRING_RE = /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/y;
const ESCAPE_RE = /\\(?:[xX]([0-9a-fA-F]{1,2})|([0-7]{1,3})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))/g;

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isIdentStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isHex = (c: number): boolean => isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
const isIdentPart = (c: number): boolean => isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isIdentOrDot = (c: number): boolean => isIdentPart(c) || c === 46;

/**
 * The number literal at `i` (`0x1F`, `12`, `.5`, `1e-3`…) not followed by a letter, digit, `_` or `.`, else undefined.
 * Scanned by hand: a regular expression with adjacent digit quantifiers backtracks quadratically on long digit runs.
 */
function numberAt(src: string, i: number): string | undefined {
  let j = i;
  const digits = (): number => { const from = j; while (isDigit(src.charCodeAt(j))) j++; return j - from; };
  if (src[i] === '0' && (src[i + 1] === 'x' || src[i + 1] === 'X') && isHex(src.charCodeAt(i + 2))) {
    j = i + 2;
    while (isHex(src.charCodeAt(j))) j++;
  } else {
    const whole = digits();
    if (src[j] === '.') { j++; if (digits() === 0 && whole === 0) return undefined; }
    if (src[j] === 'e' || src[j] === 'E') {
      const at = j;
      j++;
      if (src[j] === '+' || src[j] === '-') j++;
      if (digits() === 0) j = at; // not an exponent: the letter then ends the literal (and fails below)
    }
  }
  return isIdentOrDot(src.charCodeAt(j)) ? undefined : src.slice(i, j);
}

/** Matches sticky regex `re` at `i`; the matched text or undefined. */
function matchAt(re: RegExp, src: string, i: number): string | undefined {
  re.lastIndex = i;
  return re.exec(src)?.[0];
}

/** Decodes the escapes of a string literal's body; undefined when one is invalid. */
function unescape(body: string): string | undefined {
  let ok = true;
  const out = body.replace(ESCAPE_RE, (_m, x?: string, o?: string, u?: string, U?: string, c?: string) => {
    if (c !== undefined) return c in ESCAPES ? ESCAPES[c] : ((ok = false), '');
    const cp = parseInt(x ?? o ?? u ?? U ?? '', o ? 8 : 16);
    return cp <= 0x10ffff ? String.fromCodePoint(cp) : ((ok = false), '');
  });
  return ok ? out : undefined;
}

export function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let pending: Comment[] = [];
  let i = src.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  let lineStart = 0;
  const fail = (msg: string, at: number): never => {
    throw new IngestError(`Proto: ${msg}`, line, at - lineStart + 1);
  };
  const comment = (text: string, startLine: number): void => {
    const prev = tokens[tokens.length - 1];
    if (prev && prev.line === startLine && !pending.length) prev.trailing = `${prev.trailing} ${text}`.trim();
    else pending.push({ text, startLine, endLine: line });
  };
  while (i < src.length) {
    const c = src[i];
    const start = i;
    let kind: Kind = 'sym';
    let value = c;
    let length = 1;
    if (c === '\n') {
      line++;
      lineStart = ++i;
      continue;
    } else if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v') {
      i++;
      continue;
    } else if (src.startsWith('//', i)) {
      i = src.indexOf('\n', i);
      if (i === -1) i = src.length;
      comment(src.slice(start + 2, i).replace(/^ /, '').trimEnd(), line);
      continue;
    } else if (src.startsWith('/*', i)) {
      const end = src.indexOf('*/', i + 2);
      if (end === -1) fail('unterminated /* comment', i);
      const startLine = line;
      for (let j = src.indexOf('\n', i); j !== -1 && j < end; j = src.indexOf('\n', j + 1)) {
        line++;
        lineStart = j + 1;
      }
      i = end + 2;
      comment(src.slice(start + 2, end).split('\n').map((l) => l.replace(/^\s*\*? ?/, '').trimEnd()).join('\n').trim(),
        startLine);
      continue;
    } else if (isIdentStart(src.charCodeAt(i))) {
      kind = 'ident';
      let j = i + 1;
      while (isIdentPart(src.charCodeAt(j))) j++;
      value = src.slice(i, j);
      length = j - i;
    } else if (isDigit(src.charCodeAt(i)) || (c === '.' && isDigit(src.charCodeAt(i + 1)))) {
      kind = 'number';
      value = numberAt(src, i) ?? fail('invalid number', i);
      length = value.length;
    } else if (c === '"' || c === "'") {
      kind = 'string';
      const raw = matchAt(STRING_RE, src, i) ?? fail('unterminated string', i);
      length = raw.length;
      value = unescape(raw.slice(1, -1)) ?? fail('invalid escape sequence in string', start);
    } else if (!SYMBOLS.includes(c)) {
      fail(`unexpected character '${c}'`, i);
    }
    i += length;
    let leading = '';
    if (pending.length && pending[pending.length - 1].endLine >= line - 1) {
      let k = pending.length - 1;
      while (k > 0 && pending[k - 1].endLine >= pending[k].startLine - 1) k--;
      leading = pending.slice(k).map((x) => x.text).join('\n');
    }
    if (pending.length) pending = [];
    tokens.push({ kind, value, start, end: i, line, column: start - lineStart + 1, leading, trailing: '' });
  }
  tokens.push({ kind: 'eof', value: '', start: i, end: i, line, column: i - lineStart + 1, leading: '', trailing: '' });
  return tokens;
}
