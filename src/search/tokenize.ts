/**
 * Search tokenizer (docs/sources.md#search): the terms the BM25 index stores and a query looks up. Documents and
 * queries go through the same function, so its rules need only be consistent. Scripts without spaces become one term
 * per run. A scanner over char codes: plain lower-case ASCII words are sliced directly.
 */

/** Longest token kept; longer ones are truncated to this many characters. */
export const MAX_TOKEN_LENGTH = 64;

/** Default bound on the number of tokens produced for one text. */
export const MAX_TOKENS_PER_TEXT = 50_000;

/** Words longer than this are indexed whole (truncated) instead of being split into parts. */
export const MAX_SPLIT_LENGTH = 256;

/** The stop words dropped by {@link tokenize} (matched after lower-casing, before stemming). */
export const STOP_WORDS: ReadonlySet<string> = new Set([
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'from', 'if', 'in', 'into', 'is',
  'it', 'its', 'of', 'on', 'or', 'so', 'such', 'than', 'that', 'the', 'their', 'then', 'there',
  'these', 'they', 'this', 'to', 'was', 'were', 'will', 'with',
]);

/** Longest stop word: longer words skip the set lookup. */
const STOP_WORD_MAX_LENGTH = Math.max(...[...STOP_WORDS].map((w) => w.length));

/** BMP classification cache: 0 unknown, 1 word character, 2 not. Filled lazily. */
const bmpClass = new Uint8Array(0x10000);
const WORD_CHAR = /^[\p{L}\p{M}\p{N}]$/u;
const CAMEL_BOUNDARY = /(?<=[\p{Ll}\p{N}])(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})/u;
const SEPARATORS = /[_\-]+/;
const POSSESSIVE = /['’]s$/i;
const APOSTROPHES = /['’]/g;

/** Width in UTF-16 units (1 or 2) of the word character at `i` (first unit `c`); 0 when not a word character. */
function wordCharWidth(text: string, i: number, c: number): number {
  if (c < 0x80) return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || (c >= 65 && c <= 90) ? 1 : 0;
  if (c >= 0xd800 && c <= 0xdbff) {
    const d = text.charCodeAt(i + 1);
    if (!(d >= 0xdc00 && d <= 0xdfff)) return 0;
    return WORD_CHAR.test(text.slice(i, i + 2)) ? 2 : 0;
  }
  let k = bmpClass[c];
  if (k === 0) bmpClass[c] = k = WORD_CHAR.test(String.fromCharCode(c)) ? 1 : 2;
  return k === 1 ? 1 : 0;
}

/** `_` `-` `'` `’`: characters that join two word characters into one identifier. */
function isJoiner(c: number): boolean {
  return c === 95 || c === 45 || c === 39 || c === 0x2019;
}

/** Applies stop-word removal, stemming and the length cap; pushes the result onto `out`. */
function emit(word: string, out: string[], joined: boolean): void {
  if (!joined && word.length <= STOP_WORD_MAX_LENGTH && STOP_WORDS.has(word)) return;
  let n = word.length;
  if (n > 3 && word.charCodeAt(n - 1) === 115 && word.charCodeAt(n - 2) !== 115) n--;
  if (n > MAX_TOKEN_LENGTH) n = MAX_TOKEN_LENGTH;
  out.push(n === word.length ? word : word.slice(0, n));
}

/** A word with capitals, joiners (`joined`) or non-ASCII characters (`nonAscii`). */
function emitComplex(raw: string, out: string[], maxTokens: number, joined: boolean, nonAscii: boolean): void {
  let word = nonAscii ? raw.normalize('NFKC') : raw;
  if (word.length > MAX_SPLIT_LENGTH) {
    emit(word.slice(0, MAX_TOKEN_LENGTH + 1).toLowerCase(), out, false);
    return;
  }
  if (!joined) {
    const lower = word.toLowerCase();
    if (lower === word) {
      emit(lower, out, false);
      return;
    }
  } else if (word.includes("'") || word.includes('’')) {
    word = word.replace(POSSESSIVE, '').replace(APOSTROPHES, '');
  }
  const parts: string[] = [];
  for (const seg of joined ? word.split(SEPARATORS) : [word]) {
    if (seg === '') continue;
    if (seg === seg.toLowerCase()) parts.push(seg);
    else for (const p of seg.split(CAMEL_BOUNDARY)) parts.push(p.toLowerCase());
  }
  if (parts.length === 0) return;
  if (parts.length === 1) {
    emit(parts[0], out, false);
    return;
  }
  emit(parts.join(''), out, true);
  for (const p of parts) {
    if (out.length >= maxTokens) return;
    emit(p, out, false);
  }
}

/**
 * Splits `text` into lower-cased search terms: words and identifiers split into their parts (plus the joined one), stop
 * words dropped, a plural `s` stripped, at most {@link MAX_TOKEN_LENGTH} characters each and `maxTokens` in all.
 * `tokenize('/v1/pets/{petId}')` → `['v1', 'pet', 'petid', 'pet', 'id']`.
 */
export function tokenize(text: string, maxTokens: number = MAX_TOKENS_PER_TEXT): string[] {
  const out: string[] = [];
  const n = text.length;
  let i = 0;
  while (i < n && out.length < maxTokens) {
    let c = text.charCodeAt(i);
    let w = wordCharWidth(text, i, c);
    if (w === 0) {
      i++;
      continue;
    }
    const start = i;
    // Only lower-case ASCII letters and digits (no flag set) are sliced directly.
    let upper = c >= 65 && c <= 90;
    let joined = false;
    let nonAscii = c >= 0x80;
    i += w;
    while (i < n) {
      c = text.charCodeAt(i);
      if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
        i++;
        continue;
      }
      if (c >= 65 && c <= 90) {
        upper = true;
        i++;
        continue;
      }
      if (isJoiner(c)) {
        let j = i + 1;
        while (j < n && isJoiner(text.charCodeAt(j))) j++;
        if (j < n && wordCharWidth(text, j, text.charCodeAt(j)) > 0) {
          joined = true;
          i = j;
          continue;
        }
        break;
      }
      if (c < 0x80) break;
      w = wordCharWidth(text, i, c);
      if (w === 0) break;
      nonAscii = true;
      i += w;
    }
    if (!(upper || joined || nonAscii)) emit(text.slice(start, i), out, false);
    else emitComplex(text.slice(start, i), out, maxTokens, joined, nonAscii);
  }
  return out;
}
