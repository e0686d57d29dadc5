/**
 * Markdown of a source's descriptions as HTML (docs/web.md#markdown): CommonMark blocks (paragraphs,
 * headings, fenced and indented code, lists, block quotes, thematic breaks), GFM tables, and inlines
 * (emphasis, strong, code spans, links, hard breaks). Safe by construction: it emits only its own
 * tags, every character of the input is escaped, raw HTML shows as text, and a link whose address is
 * not `http(s):` or `mailto:` shows as its text. Linear in the input: no regular expression with
 * nested quantifiers runs on it, and every scan is memoized or bounded (docs/security.md#public-docs).
 */
import { html, type Html } from './html.js';
import { renderInline } from './markdownInline.js';

/** Deepest nesting of block quotes and lists rendered as such; deeper lines render as paragraphs. */
const MAX_DEPTH = 12;

export interface MarkdownOptions {
  /** The level a `#` heading becomes (2 → `<h2>`); deeper ones follow, capped at 6. Default 3. */
  headingBase?: number;
}

/** `text` (Markdown) as HTML. O(length of `text` × nesting depth, which is at most {@link MAX_DEPTH}). */
export function markdown(text: string, opts: MarkdownOptions = {}): Html {
  // One line of plain text (most descriptions): a paragraph, without the block scan.
  if (!/[\n\r|#>\\`*_[!<~=+-]|^ *\d|^ {4}|^\t/.test(text)) return html`<p>${text.trim()}</p>`;
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const out: Html[] = [];
  blocks(lines, 0, lines.length, opts.headingBase ?? 3, 0, false, out);
  return html`${out}`;
}

/** A heading of `level` (clamped to 2–6). */
function heading(level: number, content: Html): Html {
  switch (Math.max(2, Math.min(6, level))) {
    case 2: return html`<h2 class="md-h">${content}</h2>`;
    case 3: return html`<h3 class="md-h">${content}</h3>`;
    case 4: return html`<h4 class="md-h">${content}</h4>`;
    case 5: return html`<h5 class="md-h">${content}</h5>`;
    default: return html`<h6 class="md-h">${content}</h6>`;
  }
}

/** A code block; `lang` (the fence's info word) becomes a `data-lang` attribute. */
const codeBlock = (body: string, lang = ''): Html =>
  html`<pre class="md-code"><code${lang ? html` data-lang="${lang}"` : ''}>${body}</code></pre>`;

/** Leading spaces of a line (a tab counts to the next multiple of 4). */
function indentOf(line: string): number {
  let n = 0;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === ' ') n++;
    else if (line[i] === '\t') n += 4 - (n % 4);
    else break;
  }
  return n;
}

/** `line` without its first `n` columns of indentation (less where it has less). */
function dedent(line: string, n: number): string {
  let cols = 0;
  let i = 0;
  while (i < line.length && cols < n && (line[i] === ' ' || line[i] === '\t')) {
    cols += line[i] === '\t' ? 4 - (cols % 4) : 1;
    i++;
  }
  return line.slice(i);
}

const blank = (line: string): boolean => line.trim() === '';

/** A fence opening `line` (```` ``` ```` or `~~~`, at most 3 spaces in), or null. */
function fenceOf(line: string): { ch: string; len: number; info: string } | null {
  if (indentOf(line) > 3) return null;
  const t = line.trimStart();
  const ch = t[0];
  if (ch !== '`' && ch !== '~') return null;
  let len = 0;
  while (t[len] === ch) len++;
  if (len < 3) return null;
  const info = t.slice(len).trim();
  if (ch === '`' && info.includes('`')) return null;
  return { ch, len, info };
}

/** Whether `line` is `***`, `---` or `___` (3 or more, spaces between allowed). */
function isBreak(line: string): boolean {
  if (indentOf(line) > 3) return false;
  const t = line.trim();
  const ch = t[0];
  if (ch !== '*' && ch !== '-' && ch !== '_') return false;
  let n = 0;
  for (const c of t) {
    if (c === ch) n++;
    else if (c !== ' ' && c !== '\t') return false;
  }
  return n >= 3;
}

/** An ATX heading (`## Title`): its level and text, or null. */
function headingOf(line: string): { level: number; text: string } | null {
  if (indentOf(line) > 3) return null;
  const t = line.trim();
  let level = 0;
  while (t[level] === '#') level++;
  if (level === 0 || level > 6 || (t.length > level && t[level] !== ' ' && t[level] !== '\t')) return null;
  let end = t.length;
  let k = end;
  while (k > level && t[k - 1] === '#') k--;
  if (k < end && (k === level || t[k - 1] === ' ' || t[k - 1] === '\t')) end = k;
  return { level, text: t.slice(level, end).trim() };
}

/** A list item marker opening `line`: bullet or ordered, the column its content starts at. */
function itemOf(line: string):
  { ordered: boolean; start: number; marker: string; content: number; rest: string } | null {
  const ind = indentOf(line);
  if (ind > 3) return null;
  const t = line.trimStart();
  let i = 0;
  let ordered = false;
  let start = 1;
  let marker: string;
  if (t[0] === '-' || t[0] === '*' || t[0] === '+') {
    marker = t[0];
    i = 1;
  } else {
    while (i < 9 && t[i] >= '0' && t[i] <= '9') i++;
    if (i === 0 || (t[i] !== '.' && t[i] !== ')')) return null;
    ordered = true;
    start = Number(t.slice(0, i));
    marker = t[i];
    i++;
  }
  if (i < t.length && t[i] !== ' ' && t[i] !== '\t') return null;
  let pad = 0;
  while (pad < 4 && (t[i + pad] === ' ')) pad++;
  if (pad === 0 || pad === 4 || i + pad >= t.length) pad = 1;
  return { ordered, start, marker, content: ind + i + pad, rest: t.slice(i + pad) };
}

/** The cells of a table row `| a | b |` (`\|` stays in its cell). */
function cells(line: string): string[] {
  let t = line.trim();
  if (t.startsWith('|')) t = t.slice(1);
  if (t.endsWith('|') && !t.endsWith('\\|')) t = t.slice(0, -1);
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < t.length; i++) {
    if (t[i] === '\\' && t[i + 1] === '|') { cur += '|'; i++; }
    else if (t[i] === '|') { out.push(cur.trim()); cur = ''; }
    else cur += t[i];
  }
  out.push(cur.trim());
  return out;
}

/** The alignments of a GFM delimiter row (`| :-- | --: |`), or null when `line` is not one. */
function delimiterRow(line: string): Array<'left' | 'right' | 'center' | null> | null {
  if (!line.includes('-')) return null;
  const out: Array<'left' | 'right' | 'center' | null> = [];
  for (const c of cells(line)) {
    if (!/^:?-+:?$/.test(c)) return null;
    const l = c.startsWith(':');
    const r = c.endsWith(':');
    out.push(l && r ? 'center' : r ? 'right' : l ? 'left' : null);
  }
  return out;
}

/** Whether `line` starts a block that ends a paragraph. */
function interrupts(line: string): boolean {
  const item = itemOf(line);
  return fenceOf(line) !== null || headingOf(line) !== null || isBreak(line) || line.trimStart().startsWith('>') ||
    (item !== null && (!item.ordered || item.start === 1) && line.trim().length > 1);
}

/** Renders lines [from, to) as blocks into `out`. */
function blocks(lines: string[], from: number, to: number, hBase: number, depth: number, tight: boolean,
  out: Html[]): void {
  let i = from;
  while (i < to) {
    const line = lines[i];
    if (blank(line)) { i++; continue; }
    const fence = fenceOf(line);
    if (fence) {
      const ind = indentOf(line);
      const body: string[] = [];
      i++;
      while (i < to) {
        const f = fenceOf(lines[i]);
        if (f && f.ch === fence.ch && f.len >= fence.len && f.info === '') { i++; break; }
        body.push(dedent(lines[i], ind));
        i++;
      }
      const lang = fence.info.split(/\s/)[0];
      out.push(codeBlock(body.join('\n'), lang));
      continue;
    }
    if (indentOf(line) >= 4) {
      const body: string[] = [];
      let end = i;
      while (i < to && (blank(lines[i]) || indentOf(lines[i]) >= 4)) {
        body.push(dedent(lines[i], 4));
        if (!blank(lines[i])) end = body.length;
        i++;
      }
      out.push(codeBlock(body.slice(0, end).join('\n')));
      continue;
    }
    const h = headingOf(line);
    if (h) {
      out.push(heading(hBase + h.level - 1, renderInline(h.text)));
      i++;
      continue;
    }
    if (isBreak(line)) { out.push(html`<hr>`); i++; continue; }
    if (line.trimStart().startsWith('>') && depth < MAX_DEPTH) {
      const inner: string[] = [];
      while (i < to && !blank(lines[i])) {
        const t = lines[i].trimStart();
        if (t.startsWith('>')) inner.push(t.slice(t[1] === ' ' ? 2 : 1));
        else if (inner.length && !interrupts(lines[i])) inner.push(lines[i]);
        else break;
        i++;
      }
      const sub: Html[] = [];
      blocks(inner, 0, inner.length, hBase, depth + 1, false, sub);
      out.push(html`<blockquote>${sub}</blockquote>`);
      continue;
    }
    const item = itemOf(line);
    if (item && depth < MAX_DEPTH) { i = list(lines, i, to, hBase, depth, out); continue; }
    if (i + 1 < to && line.includes('|')) {
      const align = delimiterRow(lines[i + 1]);
      const head = cells(line);
      if (align && align.length === head.length) { i = table(lines, i, to, head, align, out); continue; }
    }
    // A paragraph: until a blank line or a block that interrupts it; a setext underline makes it a heading.
    const para: string[] = [line.trimStart()];
    i++;
    let setext = 0;
    while (i < to && !blank(lines[i])) {
      const t = lines[i].trim();
      if (/^=+$/.test(t)) { setext = 1; i++; break; }
      if (/^-+$/.test(t)) { setext = 2; i++; break; }
      if (interrupts(lines[i])) break;
      para.push(lines[i].replace(/^[ \t]+/, ''));
      i++;
    }
    const inline = renderInline(para.join('\n').trimEnd());
    out.push(setext ? heading(hBase + setext - 1, inline) : tight ? inline : html`<p>${inline}</p>`);
  }
}

/** A list from `lines[i]`: its items, each rendered as blocks; returns the index after it. */
function list(lines: string[], i: number, to: number, hBase: number, depth: number, out: Html[]): number {
  const first = itemOf(lines[i])!;
  const bodies: string[][] = [];
  let loose = false;
  while (i < to) {
    const m = itemOf(lines[i]);
    if (!m || m.ordered !== first.ordered || m.marker !== first.marker) break;
    const body: string[] = [m.rest];
    i++;
    let gap = false;
    while (i < to) {
      const l = lines[i];
      if (blank(l)) { gap = true; body.push(''); i++; continue; }
      if (indentOf(l) >= m.content) {
        if (gap) loose = true;
        gap = false;
        body.push(dedent(l, m.content));
        i++;
        continue;
      }
      if (!gap && !interrupts(l) && !itemOf(l)) { body.push(l.trim()); i++; continue; }
      break;
    }
    while (body.length && body[body.length - 1] === '') body.pop();
    const next = i < to ? itemOf(lines[i]) : null;
    if (gap && next && next.ordered === first.ordered && next.marker === first.marker) loose = true;
    bodies.push(body);
    if (gap && !(i < to && itemOf(lines[i]))) break;
  }
  const items = bodies.map((body) => {
    const sub: Html[] = [];
    blocks(body, 0, body.length, hBase, depth + 1, !loose, sub);
    return html`<li>${sub}</li>`;
  });
  out.push(first.ordered
    ? html`<ol${first.start !== 1 ? html` start="${first.start}"` : ''}>${items}</ol>`
    : html`<ul>${items}</ul>`);
  return i;
}

/** A GFM table from its header row at `lines[i]`; returns the index after it. */
function table(lines: string[], i: number, to: number, head: string[],
  align: Array<'left' | 'right' | 'center' | null>, out: Html[]): number {
  const cls = (k: number) => (align[k] ? `md-${align[k]}` : '');
  const rows: Html[] = [];
  i += 2;
  while (i < to && !blank(lines[i]) && lines[i].includes('|') && !interrupts(lines[i])) {
    const c = cells(lines[i]);
    rows.push(html`<tr>${head.map((h, k) =>
      html`<td class="${cls(k)}" data-label="${h}">${renderInline(c[k] ?? '')}</td>`)}</tr>`);
    i++;
  }
  out.push(html`<div class="table-wrap"><table class="md-table"><thead><tr>${
    head.map((h, k) => html`<th class="${cls(k)}">${renderInline(h)}</th>`)}</tr></thead>\
<tbody>${rows}</tbody></table></div>`);
  return i;
}
