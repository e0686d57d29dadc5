/**
 * Block scalars (YAML 1.2.2 §8.1, https://yaml.org/spec/1.2.2/#81-block-scalar-styles): literal `|` and folded `>`
 * styles, chomping indicators and indentation indicators.
 */
import { DASH, GT, LF, SPACE, TAB, isBlank, isWsOrEnd, type Scanner } from './scanner.js';

/**
 * Literal (`|`) or folded (`>`) block scalar (§8.1) at `pos`, in a block collection indented `n` (-1 at the top).
 * Chomping `-`/`+`/clip; content indentation max(n,0) + an explicit indicator, else the first non-empty line's (which
 * must exceed `n`). Leaves `pos` at the first line after the scalar.
 */
export function scanBlockScalar(sc: Scanner, n: number): string {
  const s = sc.src;
  const len = sc.len;
  const folded = s.charCodeAt(sc.pos) === GT;
  sc.pos++;
  let chomp = 0;
  let explicit = 0;
  for (let k = 0; k < 2; k++) {
    const c = s.charCodeAt(sc.pos);
    if ((c === 43 || c === DASH) && chomp === 0) chomp = c === 43 ? 1 : -1;
    else if (c >= 49 && c <= 57 && explicit === 0) explicit = c - 48;
    else break;
    sc.pos++;
  }
  if (!isWsOrEnd(s.charCodeAt(sc.pos))) sc.fail('invalid block scalar header');
  sc.endOfLine();

  const min = Math.max(n + 1, 0);
  let indent = explicit > 0 ? Math.max(n, 0) + explicit : -1;
  if (indent < 0) {
    let p = sc.pos;
    let maxEmpty = 0;
    let detected = -1;
    while (p < len) {
      const ls = p;
      while (s.charCodeAt(p) === SPACE) p++;
      const spaces = p - ls;
      while (isBlank(s.charCodeAt(p))) p++;
      if (s.charCodeAt(p) === LF || p >= len) {
        maxEmpty = Math.max(maxEmpty, spaces);
        p++;
        continue;
      }
      p = ls + spaces;
      detected = p - ls;
      break;
    }
    if (detected >= min) {
      if (maxEmpty > detected) sc.fail(
        'a leading empty line of a block scalar is indented more than its first content line');
      indent = detected;
    } else {
      indent = Math.max(min, maxEmpty);
    }
  }

  let out = '';
  let pending = 0;
  let hadContent = false;
  let prevMore = false;
  let lastEnded = false;
  let p = sc.pos;
  while (p < len) {
    const ls = p;
    while (p - ls < indent && s.charCodeAt(p) === SPACE) p++;
    const c = s.charCodeAt(p);
    // Indentation and the empty lines around a block scalar are spaces only (§8.1.1.2): a tab before the content
    // indentation is neither, and no enclosing node can take that line.
    if (c === TAB && p - ls < indent) sc.fail('tabs cannot be used for indentation', p);
    if (c === LF) {
      pending++;
      p++;
      continue;
    }
    if (p >= len || p - ls < indent || (indent === 0 && sc.isDocMarker(ls))) {
      p = ls;
      break;
    }
    let e = s.indexOf('\n', p);
    if (e < 0) e = len;
    const line = s.slice(p, e);
    const more = c === SPACE || c === TAB;
    if (!hadContent) out = '\n'.repeat(pending) + line;
    else if (!folded || more || prevMore) out += '\n'.repeat(pending + 1) + line;
    else out += (pending === 0 ? ' ' : '\n'.repeat(pending)) + line;
    hadContent = true;
    prevMore = more;
    pending = 0;
    lastEnded = e < len;
    p = lastEnded ? e + 1 : len;
  }
  sc.pos = Math.min(p, len);
  if (!hadContent) return chomp === 1 ? '\n'.repeat(pending) : '';
  if (chomp < 0) return out;
  const last = lastEnded ? '\n' : '';
  return chomp === 0 ? out + last : out + last + '\n'.repeat(pending);
}
