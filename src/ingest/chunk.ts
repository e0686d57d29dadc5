/** Retrieval chunking (docs/sources.md#chunks: retrieval-sized pieces, ≤ 2,000 chars, covering every document). */
import type { ParsedDocument } from './types.js';

/** One piece of the document at `documentIndex`, `ordinal` 0-based within it; `text`: a trimmed slice of its text. */
export interface DocumentChunk { documentIndex: number; ordinal: number; text: string }

/** A split point is preferred only if it leaves the chunk at least this fraction of `maxChars`. */
const MIN_FILL = 0.5;

const WS = /\s/;

/** Whitespace as `String.prototype.trim` and `\s` define it. */
function isWs(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  return c >= 0x80 && WS.test(String.fromCharCode(c));
}

/**
 * Split finders: each returns an end offset `e` in `[lo, hi]` (chunk = `text.slice(start, e)`) at its kind of boundary,
 * the last such one, or -1. Scans backwards from `hi`.
 */
type Finder = (text: string, lo: number, hi: number) => number;

/** Before a blank line (`\n`, optional spaces/tabs, `\n`). */
const paragraphEnd: Finder = (text, lo, hi) => {
  for (let e = Math.min(hi, text.length - 1); e >= lo; e--) {
    if (text.charCodeAt(e) !== 10) continue;
    let k = e + 1;
    while (k < text.length && (text.charCodeAt(k) === 32 || text.charCodeAt(k) === 9 || text.charCodeAt(k) === 13)) k++;
    if (text.charCodeAt(k) === 10) return e;
  }
  return -1;
};

/** Before a line break. */
const lineEnd: Finder = (text, lo, hi) => {
  for (let e = Math.min(hi, text.length - 1); e >= lo; e--) if (text.charCodeAt(e) === 10) return e;
  return -1;
};

/** After `.`, `!`, `?` (optionally followed by a closing quote/bracket) that is followed by whitespace. */
const sentenceEnd: Finder = (text, lo, hi) => {
  for (let e = Math.min(hi, text.length - 1); e >= lo; e--) {
    if (!isWs(text.charCodeAt(e))) continue;
    let p = e - 1;
    while (p >= 0 && ')]"\'’”'.includes(text[p])) p--;
    if (p >= 0 && '.!?。！？'.includes(text[p])) return e;
  }
  return -1;
};

/** Before any whitespace character. */
const spaceEnd: Finder = (text, lo, hi) => {
  for (let e = Math.min(hi, text.length - 1); e >= lo; e--) if (isWs(text.charCodeAt(e))) return e;
  return -1;
};

const FINDERS: Finder[] = [paragraphEnd, lineEnd, sentenceEnd, spaceEnd];

/** End offset of the chunk starting at `start` (non-whitespace) in a text longer than that chunk. */
function chunkEnd(text: string, start: number, maxChars: number): number {
  const hi = start + maxChars;
  if (hi >= text.length) return text.length;
  // A whitespace character right at `hi` is a free split point for every preference level.
  const preferredLo = start + Math.max(1, Math.floor(maxChars * MIN_FILL));
  for (const lo of [preferredLo, start + 1]) {
    for (const find of FINDERS) {
      const e = find(text, lo, hi);
      if (e > start) return e;
    }
  }
  // Hard cut, not inside a surrogate pair when avoidable.
  let e = hi;
  const c = text.charCodeAt(e - 1);
  if (c >= 0xd800 && c <= 0xdbff && e - 1 > start) e--;
  return e;
}

/**
 * Cuts documents into chunks of at most `maxChars` UTF-16 code units (default 2000), in document order, `ordinal`
 * 0-based per document, by the rules of docs/sources.md#chunks: trimmed slices, whitespace only between them, each cut
 * at the most preferred boundary that leaves the chunk at least half of `maxChars`; a blank document gives its title.
 * @throws RangeError when `maxChars` is not an integer ≥ 1 (a programming error, not bad content).
 */
export function chunkDocuments(docs: ParsedDocument[], maxChars = 2000): DocumentChunk[] {
  if (!Number.isInteger(maxChars) || maxChars < 1) throw new RangeError(
    `maxChars must be an integer ≥ 1, got ${maxChars}`);
  const chunks: DocumentChunk[] = [];
  docs.forEach((doc, documentIndex) => {
    const text = doc.text ?? '';
    let pos = 0;
    let ordinal = 0;
    for (;;) {
      while (pos < text.length && isWs(text.charCodeAt(pos))) pos++;
      if (pos >= text.length) break;
      const end = chunkEnd(text, pos, maxChars);
      const piece = text.slice(pos, end).trimEnd();
      chunks.push({ documentIndex, ordinal: ordinal++, text: piece });
      pos = end;
    }
    if (ordinal === 0) chunks.push({ documentIndex, ordinal: 0, text: (doc.title ?? '').slice(0, maxChars) });
  });
  return chunks;
}
