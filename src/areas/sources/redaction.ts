/**
 * Redaction of a credential from what a live check returns (docs/sources.md#live-checks): an upstream may echo the
 * secret in any form (raw, JSON-escaped, URL-encoded, base64, any case), so each form is searched for in the text and
 * its decodings and replaced by `[redacted]`. The search is an Aho-Corasick automaton over case-folded UTF-16 code
 * units: no regular expression is built from the secret, and the time is linear in the text's length whatever the
 * secret holds.
 */

/** What replaces each redacted range. */
export const REDACTED = '[redacted]';
/** Forms shorter than this are not searched for: they would garble ordinary text. */
export const MIN_FORM_LENGTH = 4;

// Case folding: one code unit to one code unit, so positions never shift.

const FOLD = new Uint16Array(65536);
let folded = false;
function buildFold(): void {
  for (let c = 0; c < 65536; c++) {
    const lower = String.fromCharCode(c).toLowerCase();
    FOLD[c] = lower.length === 1 ? lower.charCodeAt(0) : c;
  }
  folded = true;
}

// Views: a text as one decoding sees it — code units, each with the source range it came from.

interface View {
  units: Uint16Array;
  /** Source range [start, end) of each unit, in code units of the original text. */
  start: Int32Array;
  end: Int32Array;
  length: number;
}

function identityView(text: string): View {
  const n = text.length;
  const v: View = { units: new Uint16Array(n), start: new Int32Array(n), end: new Int32Array(n), length: n };
  for (let i = 0; i < n; i++) { v.units[i] = text.charCodeAt(i); v.start[i] = i; v.end[i] = i + 1; }
  return v;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const l = c | 0x20;
  return l >= 97 && l <= 102 ? l - 87 : -1;
}

const JSON_SIMPLE: Record<number, number> = { 34: 34, 92: 92, 47: 47, 98: 8, 102: 12, 110: 10, 114: 13, 116: 9 };

/** JSON string escapes decoded: `\"`, `\\`, `\/`, `\b\f\n\r\t`, `\uXXXX` (any hex case). */
function jsonView(v: View): View {
  const out: View = { units: new Uint16Array(v.length), start: new Int32Array(v.length), end: new Int32Array(v.length),
    length: 0 };
  const u = v.units;
  for (let i = 0; i < v.length;) {
    let unit = u[i];
    let next = i + 1;
    if (unit === 92 && i + 1 < v.length) {
      const e = u[i + 1];
      if (JSON_SIMPLE[e] !== undefined) { unit = JSON_SIMPLE[e]; next = i + 2; }
      else if (e === 117 && i + 5 < v.length) {
        const h = (hexValue(u[i + 2]) << 12) | (hexValue(u[i + 3]) << 8) | (hexValue(u[i + 4]) << 4) | hexValue(
          u[i + 5]);
        if (h >= 0) { unit = h; next = i + 6; } // a bad digit (-1) makes the whole value negative
      }
    }
    out.units[out.length] = unit;
    out.start[out.length] = v.start[i];
    out.end[out.length] = v.end[next - 1];
    out.length++;
    i = next;
  }
  return out;
}

/** URL encoding decoded: `+` is a space, `%XX` runs are UTF-8 (a stray byte stands for itself as U+0080–U+00FF). */
function urlView(v: View): View {
  const out: View = { units: new Uint16Array(v.length), start: new Int32Array(v.length), end: new Int32Array(v.length),
    length: 0 };
  const u = v.units;
  const push = (unit: number, from: number, to: number): void => {
    out.units[out.length] = unit; out.start[out.length] = v.start[from]; out.end[out.length] =
      v.end[to - 1]; out.length++;
  };
  /** The byte of a `%XX` at i, or -1. */
  const byteAt = (i: number): number => {
    if (u[i] !== 37 || i + 2 >= v.length) return -1;
    const a = hexValue(u[i + 1]); const b = hexValue(u[i + 2]);
    return a < 0 || b < 0 ? -1 : (a << 4) | b;
  };
  for (let i = 0; i < v.length;) {
    const b0 = byteAt(i);
    if (b0 < 0) { push(u[i] === 43 ? 32 : u[i], i, i + 1); i++; continue; }
    // One UTF-8 sequence: its length from the lead byte, continuation bytes as %XX too.
    const len = b0 < 0x80 ? 1 : b0 >= 0xc2 && b0 <= 0xdf ? 2 : b0 >= 0xe0 && b0 <= 0xef ? 3 : b0 >= 0xf0 &&
      b0 <= 0xf4 ? 4 : 0;
    let cp = len === 1 ? b0 : len === 2 ? b0 & 0x1f : len === 3 ? b0 & 0x0f : b0 & 0x07;
    let j = i + 3;
    let ok = len > 0;
    for (let k = 1; ok && k < len; k++, j += 3) {
      const b = byteAt(j);
      if (b < 0 || (b & 0xc0) !== 0x80) ok = false;
      else cp = (cp << 6) | (b & 0x3f);
    }
    if (ok && ((len === 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
      (len === 4 && (cp < 0x10000 || cp > 0x10ffff)))) ok = false;
    if (!ok) { push(b0, i, i + 3); i += 3; continue; }
    if (cp > 0xffff) {
      const c = cp - 0x10000;
      push(0xd800 + (c >> 10), i, j);
      push(0xdc00 + (c & 0x3ff), i, j);
    } else push(cp, i, j);
    i = j;
  }
  return out;
}

// Aho-Corasick over folded code units.

/** The automaton: the root's children in a dense 65,536-entry table, others one inline (tries of few forms are mostly
 * chains) and more in a Map. */
class Automaton {
  private readonly root = new Int32Array(65536).fill(-1);
  private childUnit: Int32Array;
  private childNode: Int32Array;
  private readonly more = new Map<number, Map<number, number>>();
  private readonly fail: Int32Array;
  /** The longest form ending at each node (itself or through its failure chain); 0 = none. */
  private readonly longest: Int32Array;

  constructor(forms: string[]) {
    const size = forms.reduce((n, f) => n + f.length, 1);
    this.childUnit = new Int32Array(size).fill(-1);
    this.childNode = new Int32Array(size).fill(-1);
    this.longest = new Int32Array(size);
    this.fail = new Int32Array(size);
    let nodes = 1;
    for (const form of forms) {
      let node = 0;
      for (let i = 0; i < form.length; i++) {
        const unit = FOLD[form.charCodeAt(i)];
        let next = this.child(node, unit);
        if (next < 0) {
          next = nodes++;
          if (node === 0) this.root[unit] = next;
          else if (this.childUnit[node] === -1) { this.childUnit[node] = unit; this.childNode[node] = next; }
          else {
            let m = this.more.get(node);
            if (!m) this.more.set(node, (m = new Map()));
            m.set(unit, next);
          }
        }
        node = next;
      }
      this.longest[node] = Math.max(this.longest[node], form.length);
    }
    this.link();
  }

  private child(node: number, unit: number): number {
    if (node === 0) return this.root[unit];
    if (this.childUnit[node] === unit) return this.childNode[node];
    return this.more.get(node)?.get(unit) ?? -1;
  }

  /** Failure links, and `longest` taken over along them, breadth first. */
  private link(): void {
    const queue: number[] = [];
    for (let c = 0; c < 65536; c++) if (this.root[c] >= 0) queue.push(this.root[c]); // their failure link is the root
    for (let q = 0; q < queue.length; q++) {
      const node = queue[q];
      const kids: Array<[number, number]> = this.childUnit[node] === -1 ? [] : [[this.childUnit[node], this.childNode[
        node]]];
      for (const e of this.more.get(node) ?? []) kids.push(e);
      for (const [unit, next] of kids) {
        let f = this.fail[node];
        let g = this.child(f, unit);
        while (g < 0 && f !== 0) { f = this.fail[f]; g = this.child(f, unit); }
        this.fail[next] = g < 0 ? 0 : g;
        this.longest[next] = Math.max(this.longest[next], this.longest[this.fail[next]]);
        queue.push(next);
      }
    }
  }

  /** One step: the state after `node` reads `unit` (folded). */
  private step(node: number, unit: number): number {
    for (;;) {
      const next = node === 0 ? this.root[unit] : this.childUnit[node] === unit ? this.childNode[node] : this.more.get(
        node)?.get(unit) ?? -1;
      if (next >= 0) return next;
      if (node === 0) return 0;
      node = this.fail[node];
    }
  }

  /** Adds +1/−1 to `cover` at the start/end of every match in `text`. */
  scanText(text: string, cover: Int32Array): void {
    const { longest } = this;
    let node = 0;
    for (let i = 0; i < text.length; i++) {
      node = this.step(node, FOLD[text.charCodeAt(i)]);
      const len = longest[node];
      if (len > 0) { cover[i - len + 1]++; cover[i + 1]--; }
    }
  }

  /** Adds +1/−1 to `cover` at the source start/end of every match in `v`. */
  scanView(v: View, cover: Int32Array): void {
    const { longest } = this;
    const { units, start, end } = v;
    let node = 0;
    for (let i = 0; i < v.length; i++) {
      node = this.step(node, FOLD[units[i]]);
      const len = longest[node];
      if (len > 0) { cover[start[i - len + 1]]++; cover[end[i]]--; }
    }
  }
}

// The forms of a secret

const urlSafe = (b64: string): string => b64.replaceAll('+', '-').replaceAll('/', '_');

/** The base64 forms of `bytes`, standard and URL-safe: whole (padded or not), and at each byte alignment inside a
 * longer encoded string the characters that depend on `bytes` alone. */
function base64Forms(bytes: Buffer): string[] {
  const std: string[] = [];
  const whole = bytes.toString('base64');
  std.push(whole, whole.replace(/=+$/, ''));
  for (let k = 0; k < 3; k++) {
    const enc = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    std.push(enc.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6)));
  }
  return [...std, ...std.map(urlSafe)];
}

/** A credential as the live check sends it. */
export interface SecretParts {
  secret: string;
  /** Basic auth: `username:secret` is base64-encoded in the header. */
  username?: string;
  /** The header values that carry the secret (`Bearer …`, `Basic …`). */
  headerValues?: string[];
}

/** Every literal form searched for: header values, the secret, base64 of it and of `username:secret` (tests). */
export function secretForms(p: SecretParts): string[] {
  const forms = [...(p.headerValues ?? []), p.secret, ...base64Forms(Buffer.from(p.secret, 'utf8'))];
  if (p.username !== undefined) forms.push(...base64Forms(Buffer.from(`${p.username}:${p.secret}`, 'utf8')));
  return [...new Set(forms)].filter((f) => f.length >= MIN_FORM_LENGTH);
}

/** Source characters one decoded unit can come from at most: `%XX%XX%XX` with each character as `\uXXXX`. */
const MAX_SPAN_PER_UNIT = 54;

/** Replaces every form of one credential in texts; build once per check, use for body and headers. */
export class Redactor {
  private readonly automaton: Automaton | undefined;
  /** Source characters a match can span at most, plus the decoders' lookahead. */
  private readonly reach: number;
  /** Whether the secret holds a space: only then can a `+` of URL encoding stand for part of it. */
  private readonly spaced: boolean;

  /** @param p the credential; without one (undefined) texts are returned unchanged. */
  constructor(p: SecretParts | undefined) {
    if (!folded) buildFold();
    const forms = p ? secretForms(p) : [];
    this.automaton = forms.length > 0 ? new Automaton(forms) : undefined;
    this.reach = Math.max(0, ...forms.map((f) => f.length)) * MAX_SPAN_PER_UNIT + 16;
    this.spaced = p?.secret.includes(' ') ?? false;
  }

  /** `text` with every range that is or decodes to a form of the secret replaced by {@link REDACTED}; linear. */
  redact(text: string): string {
    return this.automaton ? render(text, this.cover(text), text.length) : text;
  }

  /**
   * `redact(text)` cut to its first `maxBytes` UTF-8 bytes, and whether it was cut: a growing prefix is redacted until
   * the part no later match can reach passes `maxBytes`, so a long answer is not redacted whole.
   */

  redactPrefix(text: string, maxBytes: number): { text: string; truncated: boolean } {
    for (let window = maxBytes + this.reach; ; window *= 2) {
      if (!this.automaton || window >= text.length) return cutBytes(this.redact(text), maxBytes);
      const prefix = text.slice(0, window);
      // Source positions before `settled` are covered exactly as in the whole text: a match reaching one of them lies
      // inside the prefix, decoded as in the whole text.
      const settled = window - this.reach;
      const out = render(prefix, this.cover(prefix), settled);
      if (Buffer.byteLength(out, 'utf8') > maxBytes) return cutBytes(out, maxBytes);
    }
  }

  /** The +1/−1 marks of every match in `text`'s forms and decodings (length + 1). */
  private cover(text: string): Int32Array {
    const a = this.automaton!;
    const cover = new Int32Array(text.length + 1);
    a.scanText(text, cover);
    // A decoding is only built and scanned when the text holds what it decodes.
    const escapes = text.includes('\\');
    const encoded = text.includes('%') || (this.spaced && text.includes('+'));
    if (escapes || encoded) {
      const plain = identityView(text);
      if (encoded) a.scanView(urlView(plain), cover);
      if (escapes) {
        const json = jsonView(plain);
        a.scanView(json, cover);
        // `%` (or `+`) may itself be escaped (`\u0025`), so the test is on the decoded units.
        const units = json.units.subarray(0, json.length);
        if (units.includes(37) || (this.spaced && units.includes(43))) a.scanView(urlView(json), cover);
      }
    }
    return cover;
  }
}

/** `text[0, upTo)` with each covered run replaced by {@link REDACTED} (a run reaching `upTo` included). */
function render(text: string, cover: Int32Array, upTo: number): string {
  const parts: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < upTo; i++) {
    const before = depth;
    depth += cover[i];
    if (before === 0 && depth > 0) parts.push(text.slice(from, i));
    else if (before > 0 && depth === 0) { parts.push(REDACTED); from = i; }
  }
  if (depth > 0) parts.push(REDACTED);
  else parts.push(text.slice(from, upTo));
  return parts.join('');
}

/** The first `maxBytes` bytes of `text`'s UTF-8, cut on a character boundary, and whether it was cut. */
export function cutBytes(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return { text: buf.subarray(0, end).toString('utf8'), truncated: true };
}
