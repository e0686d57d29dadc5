/**
 * Markdown / plain-text parser (docs/sources.md#what-ingestion-extracts): one `section` per heading, no endpoints.
 * Headings follow CommonMark 0.31 (ATX and setext); lines inside fenced code blocks are never headings. Lines are
 * untrusted: the line rules are scanned by hand, not by regular expressions that could backtrack badly.
 */
import { enforceCap, parsedSource, type ParsedDocument, type ParsedSource } from '../types.js';

/** Longest title taken from the first line of heading-less text. */
const MAX_INTRO_TITLE = 100;

/** `start`: the heading's first line (a setext heading's paragraph start). */
interface Heading { start: number; level: number; title: string }
interface Fence { char: string; length: number }

const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const FENCE_OPEN = /^[ \t]*(`{3,}|~{3,})([^]*)$/;
const LIST_OR_QUOTE = /^ {0,3}(?:[-*+][ \t]|\d{1,9}[.)][ \t]|>)/;

/** Offset after at most three leading spaces, or -1 when there are four or more. */
function indent3(line: string): number {
  let i = 0;
  while (i < 4 && line.charCodeAt(i) === 32) i++;
  return i === 4 ? -1 : i;
}

/** An ATX heading line: `#`…`######` after at most three spaces, then a space/tab or the end. */
function atxHeading(line: string): { level: number; content: string | undefined } | null {
  const i = indent3(line);
  if (i < 0) return null;
  let j = i;
  while (j < line.length && line[j] === '#') j++;
  const level = j - i;
  if (level < 1 || level > 6) return null;
  if (j === line.length) return { level, content: undefined };
  if (line[j] !== ' ' && line[j] !== '\t') return null;
  while (line[j] === ' ' || line[j] === '\t') j++;
  return { level, content: line.slice(j) };
}

/** A thematic break: three or more of one of `*`, `_`, `-`, only blanks between, after at most three spaces. */
function isThematicBreak(line: string): boolean {
  const i = indent3(line);
  if (i < 0) return false;
  const mark = line[i];
  if (mark !== '*' && mark !== '_' && mark !== '-') return false;
  let n = 0;
  for (let j = i; j < line.length; j++) {
    if (line[j] === mark) n++;
    else if (line[j] !== ' ' && line[j] !== '\t') return false;
  }
  return n >= 3;
}

/**
 * `s` with every `open…](…)` (image `![alt](url)` or link `[text](url)`) replaced by `keep ? text : ''`, as a global
 * replace of `open[^\]]*\]\([^)]*\)` would, in one linear pass: once no `]` (or `)`) is left, no match can follow.
 */
function replaceLinks(s: string, open: string, keep: boolean): string {
  let out = '';
  let from = 0;
  for (let i = s.indexOf(open); i >= 0;) {
    const close = s.indexOf(']', i + open.length);
    if (close < 0) break;
    // Every start before `close` meets this same `]`: the next candidate starts after it.
    if (s[close + 1] !== '(') { i = s.indexOf(open, close + 1); continue; }
    const end = s.indexOf(')', close + 2);
    if (end < 0) break;
    out += s.slice(from, i) + (keep ? s.slice(i + open.length, close) : '');
    from = end + 1;
    i = s.indexOf(open, from);
  }
  return out + s.slice(from);
}

/** The heading text of an ATX line: content without the optional closing `#` sequence. */
function atxTitle(content: string | undefined): string {
  if (!content) return '';
  let t = content.trimEnd().replace(/[ \t]#+$/, '');
  if (/^#+$/.test(t)) t = '';
  return t.trim();
}

/** Plain-ish one-line title: images dropped, links, emphasis and code marks reduced to their text. */
function cleanInline(s: string): string {
  return replaceLinks(replaceLinks(s.slice(0, 1000), '![', false), '[', true)
    .replace(/<[^>]{0,200}>/g, '')
    .replace(/[`*_]{1,3}/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** True when `line` closes the open `fence`. */
function closesFence(line: string, fence: Fence): boolean {
  const t = line.trim();
  if (t.length < fence.length || t[0] !== fence.char) return false;
  for (let i = 0; i < t.length; i++) if (t[i] !== fence.char) return false;
  return true;
}

/** Index of the first line after a leading YAML front-matter block (`---` … `---`/`...`), else 0. */
function frontMatterEnd(lines: string[]): number {
  if (lines[0]?.trimEnd() !== '---') return 0;
  for (let i = 1; i < lines.length; i++) {
    const t = lines[i].trimEnd();
    if (t === '---' || t === '...') return i + 1;
  }
  return 0;
}

/**
 * The headings of `lines`, skipping fenced code (an unclosed fence runs to the end) and a leading YAML front matter.
 * Fence openers count at any indentation, so fences inside list items do.
 */
function findHeadings(lines: string[]): Heading[] {
  const headings: Heading[] = [];
  let fence: Fence | null = null;
  /** First line of the paragraph being read, or -1 when not in a paragraph. */
  let paraStart = -1;
  let i = frontMatterEnd(lines);
  for (; i < lines.length; i++) {
    const line = lines[i];
    if (fence) {
      if (closesFence(line, fence)) fence = null;
      continue;
    }
    const f = FENCE_OPEN.exec(line);
    if (f && !(f[1][0] === '`' && f[2].includes('`'))) {
      fence = { char: f[1][0], length: f[1].length };
      paraStart = -1;
      continue;
    }
    if (line.trim() === '') {
      paraStart = -1;
      continue;
    }
    const atx = atxHeading(line);
    if (atx) {
      headings.push({ start: i, level: atx.level, title: atxTitle(atx.content) });
      paraStart = -1;
      continue;
    }
    if (paraStart >= 0 && SETEXT.test(line)) {
      const title = lines.slice(paraStart, i).map((l) => l.trim()).join(' ');
      headings.push({ start: paraStart, level: line.trim()[0] === '=' ? 1 : 2, title });
      paraStart = -1;
      continue;
    }
    if (LIST_OR_QUOTE.test(line) || isThematicBreak(line) || (/^(?: {4}|\t)/.test(line) && paraStart < 0)) {
      // Lists, block quotes, thematic breaks and indented code cannot be underlined into a heading.
      paraStart = -1;
      continue;
    }
    if (paraStart < 0) paraStart = i;
  }
  return headings;
}

/** Text of lines [from, to) with leading and trailing blank lines removed. */
function sliceText(lines: string[], from: number, to: number): string {
  let a = from;
  let b = to;
  while (a < b && lines[a].trim() === '') a++;
  while (b > a && lines[b - 1].trim() === '') b--;
  return lines.slice(a, b).join('\n');
}

/**
 * Splits Markdown (or plain text; BOM and `\r\n` accepted) into `section` documents, one per heading, text before the
 * first one a section of its own (docs/sources.md#what-ingestion-extracts); `title` is the first level-1 heading's.
 * Never throws, except that with `maxDocuments` more sections than that are refused (the per-source cap's IngestError).
 */
export function parseMarkdown(text: string, maxDocuments = Infinity): ParsedSource {
  const src = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const lines = src.split(/\r\n?|\n/);
  const headings = findHeadings(lines);
  const documents: ParsedDocument[] = [];

  const firstStart = headings.length ? headings[0].start : lines.length;
  const intro = sliceText(lines, 0, firstStart);
  // Counted before the sections are built.
  enforceCap(headings.length + (intro.trim() !== '' ? 1 : 0), maxDocuments, 'documents');
  if (intro.trim() !== '') {
    const first = intro.split('\n').map(cleanInline).find((l) => /[\p{L}\p{N}]/u.test(l)) ?? '';
    const title = first && first.length <= MAX_INTRO_TITLE ? first : 'Introduction';
    documents.push({ kind: 'section', title, text: intro });
  }
  headings.forEach((h, n) => {
    const end = n + 1 < headings.length ? headings[n + 1].start : lines.length;
    const title = cleanInline(h.title) || h.title || '(untitled section)';
    documents.push({ kind: 'section', title, text: sliceText(lines, h.start, end) });
  });

  const h1 = headings.find((h) => h.level === 1);
  return parsedSource(documents, [], h1 ? cleanInline(h1.title) : '');
}
