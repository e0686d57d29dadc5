/**
 * Line and column of an offset, for the `at line L, column C` of parse errors (docs/sources.md#failed-sources):
 * 1-based, columns in UTF-16 code units. What ends a line is the caller's grammar: `lf` (only `\n`: JSON and
 * normalised texts) or `any` (`\r\n`, `\n` or a lone `\r`: GraphQL).
 */

/** A 1-based position in a text. */
export interface Position { line: number; column: number }

/** The characters that end a line: `\n` only, or also `\r\n` and a lone `\r`. */
export type LineBreaks = 'lf' | 'any';

/**
 * The position of `offset` in `text` (past the end: the end); an offset at a line break is on the line it ends. One
 * pass over `text` up to `offset`: meant for errors, not for every token.
 */
export function positionAt(text: string, offset: number, breaks: LineBreaks = 'lf'): Position {
  if (breaks === 'lf' && offset >= 0) return new PositionCursor(text).at(offset);
  const end = Math.min(offset, text.length);
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    // `\r\n` is one break, counted at its `\n` (when that is before `end`).
    if (c === 10 || (c === 13 && !(i + 1 < end && text.charCodeAt(i + 1) === 10))) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

/**
 * Positions in one `\n`-broken text asked for in increasing order: each call resumes from the previous one, so a parser
 * reporting every element's position costs one pass. An offset before the previous one is counted from the start.
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
