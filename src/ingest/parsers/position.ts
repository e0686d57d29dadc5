/**
 * Line and column of an offset in a text, for the `at line L, column C` of parse errors
 * (docs/sources.md#failed-sources). Lines and columns are 1-based; a column counts UTF-16 code
 * units from the start of its line. Which characters end a line is the caller's grammar:
 * `lf` (only `\n`: JSON, and texts whose line breaks were normalised to `\n`) or `any` (`\r\n`,
 * `\n` or a lone `\r`: GraphQL).
 */

/** A 1-based position in a text. */
export interface Position { line: number; column: number }

/** The characters that end a line: `\n` only, or also `\r\n` and a lone `\r`. */
export type LineBreaks = 'lf' | 'any';

/**
 * The position of `offset` in `text` (an offset past the end counts as the end). Only line
 * breaks strictly before `offset` count: an offset at a line break is on the line it ends.
 * Cost: one pass over `text` up to `offset` (meant for errors, not for every token).
 */
export function positionAt(text: string, offset: number, breaks: LineBreaks = 'lf'): Position {
  const end = Math.min(offset, text.length);
  let line = 1;
  let lineStart = 0;
  if (breaks === 'lf') {
    for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) {
      line++;
      lineStart = i + 1;
    }
  } else {
    for (let i = 0; i < end; i++) {
      const c = text.charCodeAt(i);
      // `\r\n` is one break, counted at its `\n` (when that is before `end`).
      if (c === 10 || (c === 13 && !(i + 1 < end && text.charCodeAt(i + 1) === 10))) {
        line++;
        lineStart = i + 1;
      }
    }
  }
  return { line, column: end - lineStart + 1 };
}

/**
 * Positions in one `\n`-broken text asked for in increasing order (a parser that reports the
 * position of every element): each call resumes from the previous one, so a whole parse costs
 * one pass. An offset before the previous one is computed from the start.
 */
export class PositionCursor {
  private offset = 0;
  private line = 1;
  private lineStart = 0;

  constructor(private readonly text: string) {}

  /** The position of `offset` (see {@link positionAt} with `lf` breaks). */
  at(offset: number): Position {
    if (offset < this.offset) return positionAt(this.text, offset);
    const end = Math.min(offset, this.text.length);
    for (let i = this.text.indexOf('\n', this.offset); i !== -1 && i < end; i = this.text.indexOf('\n', i + 1)) {
      this.line++;
      this.lineStart = i + 1;
    }
    this.offset = end;
    return { line: this.line, column: end - this.lineStart + 1 };
  }
}
