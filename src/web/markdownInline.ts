/**
 * Markdown inlines (docs/web.md#markdown): code spans, emphasis and strong (`*`, `_`), links
 * `[text](url)` and `<url>` (only `http(s):` and `mailto:`; others show as their text), hard breaks,
 * backslash escapes. Code spans and brackets are matched in one pass each before the scan, and
 * every forward search is memoized, so 100,000 `[`, `*` or backticks cost O(n), not O(n²).
 */
import { html, type Html } from './html.js';

/** An emphasis delimiter run: `count` characters still unmatched, the tags its matches put beside it. */
interface Delim { ch: string; count: number; pos: number; open: Html[]; close: Html[] }
type Node = string | Html | Delim;

const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
const isSpace = (c: string | undefined): boolean => c === undefined || c === ' ' || c === '\t' || c === '\n';
const isPunct = (c: string | undefined): boolean => c !== undefined && PUNCT.includes(c);
const SPECIAL = new Set(['\\', '`', '*', '_', '[', '!', '<', '\n']);

/** Whether `href` may be a link: `http:`, `https:` or `mailto:` with something after it. */
export function safeHref(href: string): boolean {
  const h = href.trim().toLowerCase();
  return (h.startsWith('http://') && h.length > 7) || (h.startsWith('https://') && h.length > 8) ||
    (h.startsWith('mailto:') && h.length > 7);
}

const OPEN = { '*1': html`<em>`, '*2': html`<strong>`, '_1': html`<em>`, '_2': html`<strong>` } as Record<string, Html>;
const CLOSE = { 1: html`</em>`, 2: html`</strong>` } as Record<number, Html>;

/** Inline Markdown of one block's text as HTML. O(length of `src`). */
export function renderInline(src: string): Html {
  if (!/[\\`*_[!<\n]/.test(src)) return html`${src}`;
  return new Inline(src).run(0, src.length, true);
}

class Inline {
  /** Code span start → [content start, content end, index after the closing run]. */
  private readonly code = new Map<number, [number, number, number]>();
  /** `[` position → its matching `]`. */
  private readonly bracket = new Map<number, number>();
  /** Memo of the last forward search for each stop set: from `from`, nothing before `at`. */
  private readonly memo = new Map<string, { from: number; at: number }>();

  constructor(private readonly s: string) {
    this.findCode();
    this.matchBrackets();
  }

  /** Backtick runs, each opener matched with the next run of the same length (cursors only move forward). */
  private findCode(): void {
    const s = this.s;
    const runs: Array<[number, number]> = [];
    for (let i = 0; i < s.length; i++) {
      if (s[i] === '\\' && s[i + 1] === '`') { i++; continue; }
      if (s[i] !== '`') continue;
      let j = i;
      while (s[j] === '`') j++;
      runs.push([i, j - i]);
      i = j - 1;
    }
    const byLen = new Map<number, number[]>();
    runs.forEach(([, len], k) => { let l = byLen.get(len); if (!l) byLen.set(len, (l = [])); l.push(k); });
    const cursor = new Map<number, number>();
    let until = -1;
    for (let k = 0; k < runs.length; k++) {
      const [pos, len] = runs[k];
      if (pos < until) continue;
      const list = byLen.get(len)!;
      let c = cursor.get(len) ?? 0;
      while (c < list.length && list[c] <= k) c++;
      cursor.set(len, c);
      if (c >= list.length) continue;
      const close = runs[list[c]][0];
      this.code.set(pos, [pos + len, close, close + len]);
      until = close + len;
    }
  }

  /** `[`…`]` pairs, outside code spans and escapes, by a stack. */
  private matchBrackets(): void {
    const s = this.s;
    const stack: number[] = [];
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (c === '\\') { i++; continue; }
      const span = this.code.get(i);
      if (span) { i = span[2] - 1; continue; }
      if (c === '[') stack.push(i);
      else if (c === ']' && stack.length) this.bracket.set(stack.pop()!, i);
    }
  }

  /** The first index ≥ `from` of a character in `stops` (or the end), memoized for rising `from`. */
  private next(stops: string, from: number): number {
    const m = this.memo.get(stops);
    if (m && from >= m.from && from <= m.at) return m.at;
    let i = from;
    while (i < this.s.length && !stops.includes(this.s[i])) i++;
    this.memo.set(stops, { from, at: i });
    return i;
  }

  /** `(dest "title")` at `at` (just past `]`): the destination and the index after `)`, or null. */
  private destination(at: number): { href: string; end: number } | null {
    const s = this.s;
    if (s[at] !== '(') return null;
    let i = at + 1;
    while (s[i] === ' ' || s[i] === '\n') i++;
    let href: string;
    if (s[i] === '<') {
      const close = this.next('>\n', i + 1);
      if (s[close] !== '>') return null;
      href = s.slice(i + 1, close);
      i = close + 1;
    } else {
      // Balanced parentheses may be part of it (at most 32 deep, so a scan is bounded).
      let j = i;
      let depth = 0;
      for (let hops = 0; hops < 32; hops++) {
        j = this.next(' \t\n()', j);
        if (s[j] === '(') depth++;
        else if (s[j] === ')' && depth > 0) depth--;
        else break;
        j++;
      }
      href = s.slice(i, j);
      i = j;
    }
    while (s[i] === ' ' || s[i] === '\n') i++;
    if (s[i] === '"' || s[i] === "'") {
      const close = this.next(s[i], i + 1);
      if (close >= s.length) return null;
      i = close + 1;
      while (s[i] === ' ' || s[i] === '\n') i++;
    }
    return s[i] === ')' ? { href: href.replace(/\\(.)/g, '$1'), end: i + 1 } : null;
  }

  /** Renders `s[from, to)`; `links`: whether links are made (not inside a link's text). */
  run(from: number, to: number, links: boolean): Html {
    const s = this.s;
    const out: Node[] = [];
    const stacks: Record<string, Delim[]> = { '*': [], _: [] };
    let text = '';
    const flush = () => { if (text) { out.push(text); text = ''; } };
    let i = from;
    while (i < to) {
      const c = s[i];
      if (!SPECIAL.has(c)) {
        let j = i + 1;
        while (j < to && !SPECIAL.has(s[j])) j++;
        text += s.slice(i, j);
        i = j;
        continue;
      }
      if (c === '\\') {
        const n = s[i + 1];
        if (n === '\n') { flush(); out.push(html`<br>`); i += 2; continue; }
        if (isPunct(n) && i + 1 < to) { text += n; i += 2; continue; }
        text += c; i++; continue;
      }
      if (c === '\n') {
        // The text since the last flush is this line's at most, so trimming it is O(line).
        const hard = text.endsWith('  ');
        text = text.trimEnd();
        flush();
        out.push(hard ? html`<br>` : '\n');
        i++;
        while (s[i] === ' ' && i < to) i++;
        continue;
      }
      if (c === '`') {
        const span = this.code.get(i);
        if (span && span[2] <= to) {
          let body = s.slice(span[0], span[1]).replace(/\n/g, ' ');
          const padded = body.length > 2 && body.startsWith(' ') && body.endsWith(' ');
          if (padded && body.trim() !== '') body = body.slice(1, -1);
          flush();
          out.push(html`<code>${body}</code>`);
          i = span[2];
          continue;
        }
        let j = i;
        while (j < to && s[j] === '`') j++;
        text += s.slice(i, j);
        i = j;
        continue;
      }
      if (c === '*' || c === '_') {
        let j = i;
        while (j < to && s[j] === c) j++;
        const before = i > from ? s[i - 1] : undefined;
        const after = j < to ? s[j] : undefined;
        const left = !isSpace(after) && (!isPunct(after) || isSpace(before) || isPunct(before));
        const right = !isSpace(before) && (!isPunct(before) || isSpace(after) || isPunct(after));
        const canOpen = c === '*' ? left : left && (!right || isPunct(before));
        const canClose = c === '*' ? right : right && (!left || isPunct(after));
        flush();
        const d: Delim = { ch: c, count: j - i, pos: out.length, open: [], close: [] };
        if (canClose) this.closeWith(d, stacks);
        if (canOpen && d.count > 0) stacks[c].push(d);
        out.push(d);
        i = j;
        continue;
      }
      if ((c === '[' || (c === '!' && s[i + 1] === '[')) && links) {
        const open = c === '!' ? i + 1 : i;
        const close = this.bracket.get(open);
        const dest = close !== undefined && close < to ? this.destination(close + 1) : null;
        if (close !== undefined && dest && dest.end <= to) {
          const inner = this.run(open + 1, close, false);
          flush();
          out.push(safeHref(dest.href) ? html`<a href="${dest.href.trim()}" rel="nofollow">${inner}</a>` : inner);
          i = dest.end;
          continue;
        }
        text += c; i++; continue;
      }
      if (c === '<' && links) {
        const close = this.next('> \n<', i + 1);
        const href = s.slice(i + 1, close);
        if (close < to && s[close] === '>' && safeHref(href)) {
          flush();
          out.push(html`<a href="${href}" rel="nofollow">${href}</a>`);
          i = close + 1;
          continue;
        }
      }
      text += c;
      i++;
    }
    flush();
    return html`${out.map((n) => (typeof n === 'object' && 'ch' in n
      ? html`${n.close}${n.ch.repeat(n.count)}${n.open}` : n))}`;
  }

  /** Matches closer `d` with the nearest openers of its character (strong when both have 2), innermost first. */
  private closeWith(d: Delim, stacks: Record<string, Delim[]>): void {
    const own = stacks[d.ch];
    const other = stacks[d.ch === '*' ? '_' : '*'];
    while (d.count > 0 && own.length) {
      const o = own[own.length - 1];
      // Openers of the other character between the two can no longer close or be closed.
      while (other.length && other[other.length - 1].pos > o.pos) other.pop();
      const use = o.count >= 2 && d.count >= 2 ? 2 : 1;
      o.count -= use;
      d.count -= use;
      o.open.unshift(OPEN[`${d.ch}${use}`]);
      d.close.push(CLOSE[use]);
      if (o.count === 0) own.pop();
    }
  }
}
