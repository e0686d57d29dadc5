/**
 * Structure of a YAML 1.2.2 stream (documents, block and flow collections, anchors and aliases), composed straight into
 * JSON-shaped values by recursive descent over the {@link Scanner}. `n` is always the indentation of the enclosing
 * block collection (-1 at the top level); content must be indented more than `n`, except a block sequence that is a
 * mapping entry's value.
 */
import { scanBlockScalar } from './block-scalar.js';
import { readDirective, type Directives } from './directives.js';
import { NodeReader, type Props } from './flow.js';
import {
  AMP, BACKSLASH, BANG, COLON, DASH, DQUOTE, GT, HASH, LBRACE, LBRACKET, LF, PERCENT, PIPE, QMARK,
  RBRACE, RBRACKET, SQUOTE, STAR, TAB, isBlank, isWsOrEnd,
} from './scanner.js';
import { keyString, resolvePlain, setKey } from './schema.js';

/** Parser for one YAML text; `parseStream` may be called once. */
export class YamlParser extends NodeReader {
  /** Parses the whole stream (§9.2): each document's value and start. @throws IngestError on malformed input. */
  parseStream(): { values: unknown[]; starts: number[] } {
    const values: unknown[] = [];
    const starts: number[] = [];
    let directives = -1;
    let directivesAllowed = true;
    let declared: Directives = { yaml: false, handles: new Map() };
    for (;;) {
      const ind = this.nextContent();
      const p = this.pos;
      if (p >= this.len) {
        if (directives >= 0) this.fail('a directive must be followed by a document', directives);
        break;
      }
      if (ind === 0 && directivesAllowed && this.code(p) === PERCENT && this.colOf(p) === 0) {
        if (directives < 0) directives = p;
        readDirective(this, declared);
        continue;
      }
      if (ind < 0 && this.code(p) !== DASH) {
        if (directives >= 0) this.fail("directives must be followed by '---'", p);
        this.pos += 3;
        this.endOfLine();
        directivesAllowed = true;
        continue;
      }
      this.anchors.clear();
      // Tag handles hold for the one document their directives precede (§6.8.2).
      this.tagHandles = declared.handles;
      declared = { yaml: false, handles: new Map() };
      let value: unknown;
      if (ind < 0) {
        this.pos += 3;
        value = this.afterDocStart();
      } else {
        if (directives >= 0) this.fail("directives must be followed by '---'", p);
        value = this.blockNodeAt(ind, -1, false, null);
      }
      values.push(value);
      starts.push(p);
      directives = -1;
      directivesAllowed = false;
      if (this.nextContent() >= 0) this.fail('unexpected content after the end of the document');
    }
    return { values, starts };
  }

  /** Does a block sequence (`- `) or mapping (`? `, `key:`) start at `p`? */
  private collectionAt(p: number): boolean {
    return this.isSeqEntry(p) || (this.code(p) === QMARK && isWsOrEnd(this.code(p + 1))) || this.keyAhead(p);
  }

  /** Throws when the line {@link nextContent} stopped at, starting a block collection entry, is tab-indented (§6.1). */
  private noTabIndent(): void {
    if (this.indentTab >= 0) this.fail('tabs cannot be used for indentation', this.indentTab);
  }

  /** The node after `---` on its line (§9.1.3); a block collection cannot start there. */
  private afterDocStart(): unknown {
    this.skipInline();
    const p = this.pos;
    if (this.collectionAt(p)) this.fail(
      `a block ${this.isSeqEntry(p) ? 'sequence' : 'mapping'} cannot start on the '---' line`, p);
    return this.withProps(-1, false, null);
  }

  /**
   * Node after an indicator (`-`, `?`, `:`). `compact` lets a block collection start on this line (`- - a`, `- k: v`),
   * after spaces only; `seqAtN` lets a block sequence follow at indentation `n` (a mapping value).
   */
  private blockValue(n: number, compact: boolean, seqAtN: boolean): unknown {
    const from = this.pos;
    this.skipInline();
    const p = this.pos;
    if (compact && this.collectionAt(p)) {
      for (let q = from; q < p; q++) if (this.code(q) === TAB) this.fail('tabs cannot be used for indentation', q);
      return this.isSeqEntry(p) ? this.blockSeq(this.colOf(p)) : this.blockMap(this.colOf(p));
    }
    return this.withProps(n, seqAtN, null);
  }

  /** Node starting on the current content line, indented `ind` (> n); `props` were read on an earlier line for it. */
  private blockNodeAt(ind: number, n: number, seqAtN: boolean, props: Props | null): unknown {
    const p = this.pos;
    if (this.collectionAt(p)) {
      this.noTabIndent();
      return this.isSeqEntry(p) ? this.blockSeq(ind) : this.blockMap(ind);
    }
    return this.withProps(n, seqAtN, props);
  }

  /** Optional properties (joining `outer`, read earlier for the same node), then the node's content. */
  private withProps(n: number, seqAtN: boolean, outer: Props | null): unknown {
    const before = this.nodes;
    const c = this.code(this.pos);
    const props = c === AMP || c === BANG ? this.readProps(false, outer) : outer;
    const value = this.blockRest(n, seqAtN, props);
    // An anchor read by the caller's line is registered there.
    if (props !== null && props.anchor !== null && props.anchor !== outer?.anchor) this.register(props.anchor, value,
      before);
    return value;
  }

  private blockRest(n: number, seqAtN: boolean, props: Props | null): unknown {
    const c = this.code(this.pos);
    if (c === LF || c !== c || c === HASH) {
      this.endOfLine();
      const ind = this.nextContent();
      if (ind > n) return this.blockNodeAt(ind, n, seqAtN, props);
      if (ind === n && seqAtN && this.isSeqEntry(this.pos)) {
        this.noTabIndent();
        return this.blockSeq(n);
      }
      return this.empty(props !== null && props.str);
    }
    if (c === PIPE || c === GT) {
      this.nodes++;
      return scanBlockScalar(this, n);
    }
    const value = this.flowInBlock(n + 1, props);
    this.endOfLine();
    return value;
  }

  /** A flow collection, scalar or alias in block context; continuation lines indented at least `minIndent`. */
  private flowInBlock(minIndent: number, props: Props | null): unknown {
    const c = this.code(this.pos);
    const str = props !== null && props.str;
    if (c === LBRACKET || c === LBRACE) {
      this.flowMin = minIndent;
      return c === LBRACKET ? this.flowSeq() : this.flowMap();
    }
    if (c === STAR) return this.alias(props);
    this.nodes++;
    if (c === DQUOTE) return this.scanDouble(minIndent);
    if (c === SQUOTE) return this.scanSingle(minIndent);
    this.checkPlainStart(false);
    const text = this.scanPlain(minIndent, false);
    return str ? text : resolvePlain(text);
  }

  /** Block sequence (§8.2.1) whose `-` indicators are in column `ind`; `pos` is on the first. */
  private blockSeq(ind: number): unknown[] {
    this.enter();
    this.nodes++;
    const items: unknown[] = [];
    for (;;) {
      this.pos++;
      items.push(this.blockValue(ind, true, false));
      const i = this.nextContent();
      if (i === ind && this.isSeqEntry(this.pos)) {
        this.noTabIndent();
        continue;
      }
      if (i > ind) this.fail('bad indentation of a sequence entry');
      break;
    }
    this.depth--;
    return items;
  }

  /** Block mapping (§8.2.2) whose keys are in column `ind`; `pos` is on the first key. */
  private blockMap(ind: number): Record<string, unknown> {
    this.enter();
    this.nodes++;
    const map: Record<string, unknown> = {};
    for (;;) {
      const p = this.pos;
      const c = this.code(p);
      let key: unknown = null;
      let value: unknown = null;
      if (c === QMARK && isWsOrEnd(this.code(p + 1))) {
        this.pos++;
        key = this.blockValue(ind, true, true);
        if (this.nextContent() === ind && this.code(this.pos) === COLON && isWsOrEnd(this.code(this.pos + 1))) {
          this.noTabIndent();
          this.pos++;
          value = this.blockValue(ind, true, true);
        }
      } else {
        if (!this.keyAhead(p)) this.fail("expected a mapping entry 'key: value' at this indentation");
        if (c !== COLON || !isWsOrEnd(this.code(p + 1))) key = this.blockKey();
        this.skipInline();
        this.pos++;
        value = this.blockValue(ind, false, true);
      }
      setKey(map, keyString(key), value);
      const i = this.nextContent();
      if (i === ind) {
        this.noTabIndent();
        continue;
      }
      if (i > ind) this.fail('bad indentation of a mapping entry');
      break;
    }
    this.depth--;
    return map;
  }

  /** Implicit key of a block mapping entry: properties and a single-line node. */
  private blockKey(): unknown {
    const before = this.nodes;
    const c = this.code(this.pos);
    const props = c === AMP || c === BANG ? this.readProps(false) : null;
    const empty = this.code(this.pos) === COLON && isWsOrEnd(this.code(this.pos + 1));
    const key = empty ? this.empty(props !== null && props.str) : this.flowInBlock(0, props);
    if (props !== null && props.anchor !== null) this.register(props.anchor, key, before);
    return key;
  }

  /** Lookahead: does the line from `p` hold an implicit key (properties, a one-line node) and `:` + white space? */
  private keyAhead(p: number): boolean {
    const s = this.src;
    const len = this.len;
    let c = s.charCodeAt(p);
    while (c === AMP || c === BANG) {
      while (p < len && !isWsOrEnd(s.charCodeAt(p))) p++;
      while (isBlank(s.charCodeAt(p))) p++;
      c = s.charCodeAt(p);
    }
    if (c === DQUOTE || c === SQUOTE) {
      for (p++; ; p++) {
        const d = s.charCodeAt(p);
        if (d === LF || p >= len) return false;
        if (d === BACKSLASH && c === DQUOTE) {
          if (s.charCodeAt(p + 1) === LF) return false;
          p++;
        } else if (d === c) {
          if (c === SQUOTE && s.charCodeAt(p + 1) === SQUOTE) p++;
          else break;
        }
      }
      p++;
    } else if (c === LBRACKET || c === LBRACE) {
      let depth = 0;
      for (; ; p++) {
        const d = s.charCodeAt(p);
        if (d === LF || p >= len) return false;
        if (d === DQUOTE || d === SQUOTE) {
          // Skip a quoted scalar so brackets inside it do not count.
          for (p++; p < len && s.charCodeAt(p) !== d && s.charCodeAt(p) !== LF; p++) if (d === DQUOTE &&
            s.charCodeAt(p) === BACKSLASH) p++;
        } else if (d === LBRACKET || d === LBRACE) depth++;
        else if ((d === RBRACKET || d === RBRACE) && --depth === 0) break;
      }
      p++;
    } else if (c === STAR) {
      while (p < len && !isWsOrEnd(s.charCodeAt(p))) p++;
    } else {
      if (c === HASH) return false;
      for (; ; p++) {
        const d = s.charCodeAt(p);
        if (d === LF || p >= len) return false;
        if (d === COLON && isWsOrEnd(s.charCodeAt(p + 1))) return true;
        if (d === HASH && isBlank(s.charCodeAt(p - 1))) return false;
      }
    }
    while (isBlank(s.charCodeAt(p))) p++;
    return s.charCodeAt(p) === COLON && isWsOrEnd(s.charCodeAt(p + 1));
  }
}
