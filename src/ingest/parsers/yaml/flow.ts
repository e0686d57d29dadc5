/**
 * Node properties, anchors and aliases (YAML 1.2.2 §6.9, §7.1) and flow collections (§7.4), shared by the block parser.
 * Values are composed straight into JSON-shaped data.
 */
import { STR_TAG, resolveTag } from './directives.js';
import {
  AMP, BANG, COLON, COMMA, DASH, DQUOTE, HASH, LBRACE, LBRACKET, LF, QMARK, RBRACE, RBRACKET, SPACE,
  SQUOTE, STAR, Scanner, isFlowIndicator, isWsOrEnd,
} from './scanner.js';
import { MAX_DEPTH, MAX_NODES, keyString, resolvePlain, setKey } from './schema.js';

/**
 * Node properties (§6.9) read so far for one node: `tag` resolved (`!` for the non-specific tag); `str` when tagged
 * `!!str` or `!`, so a plain scalar stays a string (§6.9.1, §10.3.2). Other tags are ignored.
 */
export interface Props { anchor: string | null; tag: string | null; str: boolean }

/** An anchored value and the nodes it expands to (aliases inside counted as copies). */
interface Anchored { value: unknown; size: number }

/** Characters that cannot start a plain scalar (c-indicator, §5.3) apart from `-?:`. */
const NOT_PLAIN_START = new Set([...',[]{}#&*!|>\'"%@`'].map((ch) => ch.charCodeAt(0)));

/** Reads flow nodes and node properties; {@link YamlParser} adds block structure. */
export class NodeReader extends Scanner {
  protected anchors = new Map<string, Anchored>();
  /** Nodes composed so far, aliases counted as full copies. */
  protected nodes = 0;
  protected depth = 0;
  /** Whether the last flow node was quoted or a flow collection (allows `"a":b`, §7.4.2). */
  protected lastJsonLike = false;
  /** Least indentation of a line in the current flow collection (§7.4); a closing bracket may sit one less. */
  protected flowMin = 0;
  /** `%TAG` handles of the current document (§6.8.2). */
  protected tagHandles = new Map<string, string>();

  protected enter(): void {
    if (++this.depth > MAX_DEPTH) this.fail(`collections nested deeper than ${MAX_DEPTH} levels`);
  }

  protected register(name: string, value: unknown, before: number): void {
    this.anchors.set(name, { value, size: Math.max(1, this.nodes - before) });
  }

  protected empty(str: boolean): unknown {
    this.nodes++;
    return str ? '' : null;
  }

  /** Anchor or alias name (ns-anchor-char+): up to white space or a flow indicator. */
  protected readName(what: string): string {
    const start = this.pos;
    let p = start;
    while (p < this.len) {
      const c = this.code(p);
      if (isWsOrEnd(c) || isFlowIndicator(c)) break;
      p++;
    }
    if (p === start) this.fail(`${what} name expected`);
    this.pos = p;
    return this.src.slice(start, p);
  }

  /**
   * Node properties (§6.9): an anchor and/or a tag, either order, added to a copy of `outer` (read on an earlier line
   * for the same node). Each is followed by white space or, in flow, by `,` `]` `}`.
   * @throws IngestError on a second anchor or tag, an undefined tag handle, or a property run into the content
   *   (`!!str,x`).
   */
  protected readProps(flow: boolean, outer: Props | null = null): Props {
    const props: Props = outer === null ? { anchor: null, tag: null, str: false } : { ...outer };
    for (;;) {
      const c = this.code(this.pos);
      if (c === AMP) {
        if (props.anchor !== null) this.fail('a node can have only one anchor');
        this.pos++;
        props.anchor = this.readName('anchor');
      } else if (c === BANG) {
        if (props.tag !== null) this.fail('a node can have only one tag');
        const start = this.pos;
        let p = start + 1;
        if (this.code(p) === 60) {
          const e = this.src.indexOf('>', p);
          if (e < 0 || this.src.indexOf('\n', p) < e) this.fail('unterminated verbatim tag', start);
          p = e + 1;
        } else {
          while (p < this.len && !isWsOrEnd(this.code(p)) && !isFlowIndicator(this.code(p))) p++;
        }
        props.tag = resolveTag(this, this.src.slice(start, p), start, this.tagHandles);
        props.str = props.tag === '!' || props.tag === STR_TAG;
        this.pos = p;
      } else {
        return props;
      }
      const d = this.code(this.pos);
      if (!isWsOrEnd(d) && !(flow && (d === COMMA || d === RBRACKET || d === RBRACE))) {
        this.fail(`unexpected '${this.src[this.pos]}' after a node property`);
      }
      if (flow) this.skipFlowSpace();
      else this.skipInline();
    }
  }

  /** Alias `*name` (§7.1): the anchored value, shared, counted as a full copy; `props` read before it must be null. */
  protected alias(props: Props | null): unknown {
    if (props !== null) this.fail('an alias cannot have an anchor or a tag');
    const start = this.pos;
    this.pos++;
    const name = this.readName('alias');
    const target = this.anchors.get(name);
    if (target === undefined) this.fail(`unknown alias '*${name}'`, start);
    this.nodes += target.size;
    if (this.nodes > MAX_NODES) this.fail(`the document expands to more than ${MAX_NODES} nodes through aliases`,
      start);
    return target.value;
  }

  protected checkPlainStart(flow: boolean): void {
    const c = this.code(this.pos);
    const n = this.code(this.pos + 1);
    if (c === DASH || c === QMARK || c === COLON) {
      if (!isWsOrEnd(n) && !(flow && isFlowIndicator(n))) return;
      if (c === DASH && !flow) this.fail('block sequence entries are not allowed here');
      if (c === COLON) this.fail('mapping values are not allowed here');
    } else if (!NOT_PLAIN_START.has(c)) {
      if (c === c) return;
      this.fail('unexpected end of input');
    }
    this.fail(`unexpected '${this.src[this.pos]}'`);
  }

  /** Skips white space, breaks and comments in a flow collection; content resumes indented at least {@link flowMin}. */
  protected skipFlowSpace(): void {
    const s = this.src;
    let p = this.pos;
    let lineStart = -1;
    for (;;) {
      const c = s.charCodeAt(p);
      if (c === 32 || c === 9) {
        p++;
      } else if (c === LF) {
        this.lastBreak = p;
        lineStart = ++p;
      } else if (c === HASH && (p === 0 || isWsOrEnd(s.charCodeAt(p - 1)))) {
        const e = s.indexOf('\n', p);
        p = e < 0 ? this.len : e;
      } else {
        break;
      }
    }
    if (p < this.len && this.isDocMarker(p)) this.fail('document marker inside a flow collection', p);
    if (p < this.len && lineStart >= 0) {
      let q = lineStart;
      while (s.charCodeAt(q) === SPACE) q++;
      const c = s.charCodeAt(p);
      if (q - lineStart < (c === RBRACKET || c === RBRACE ? this.flowMin - 1 : this.flowMin)) {
        this.fail('bad indentation of a flow collection entry', p);
      }
    }
    this.pos = p;
  }

  /** A node inside a flow collection (§7.4): may be empty before `,` `]` `}` `:`. */
  protected flowNode(): unknown {
    const before = this.nodes;
    let c = this.code(this.pos);
    let props: Props | null = null;
    if (c === AMP || c === BANG) {
      props = this.readProps(true);
      c = this.code(this.pos);
    }
    const str = props !== null && props.str;
    const n = this.code(this.pos + 1);
    let json = true;
    let value: unknown;
    if (c === LBRACKET) value = this.flowSeq();
    else if (c === LBRACE) value = this.flowMap();
    else if (c === DQUOTE || c === SQUOTE) {
      this.nodes++;
      value = c === DQUOTE ? this.scanDouble(this.flowMin) : this.scanSingle(this.flowMin);
    } else {
      json = false;
      if (c === STAR) value = this.alias(props);
      else if (c !== c || c === COMMA || c === RBRACKET || c === RBRACE ||
        (c === COLON && (isWsOrEnd(n) || isFlowIndicator(n)))) {
        value = this.empty(str);
      } else {
        this.checkPlainStart(true);
        this.nodes++;
        const text = this.scanPlain(this.flowMin, true);
        value = str ? text : resolvePlain(text);
      }
    }
    if (props !== null && props.anchor !== null) this.register(props.anchor, value, before);
    this.lastJsonLike = json;
    return value;
  }

  /**
   * One flow entry up to the next `,` or closing bracket: a node, or a pair (`? k : v`, `k: v`, `"k":v`, `: v`). In a
   * flow sequence (`inSeq`) an implicit key and its `:` must be on one line (§7.4.1).
   */
  protected flowEntry(inSeq: boolean): { key: unknown; value: unknown; pair: boolean } {
    const keyStart = this.pos;
    const c = this.code(this.pos);
    const n = this.code(this.pos + 1);
    const sep = (d: number) => isWsOrEnd(d) || isFlowIndicator(d);
    let explicit = false;
    let key: unknown = null;
    if (c === QMARK && sep(n)) {
      this.pos++;
      this.skipFlowSpace();
      explicit = true;
      this.lastJsonLike = false;
      if (this.code(this.pos) !== COLON || !sep(this.code(this.pos + 1))) key = this.flowNode();
    } else if (c === COLON && sep(n)) {
      explicit = true;
    } else {
      key = this.flowNode();
    }
    const json = this.lastJsonLike;
    this.skipFlowSpace();
    if (this.code(this.pos) === COLON && (explicit || json || sep(this.code(this.pos + 1)))) {
      if (inSeq && !explicit && this.lastBreak > keyStart) this.fail(
        "an implicit key in a flow sequence must be on one line with its ':'");
      this.pos++;
      this.skipFlowSpace();
      const d = this.code(this.pos);
      const value = d !== d || d === COMMA || d === RBRACKET || d === RBRACE ? this.empty(false) : this.flowNode();
      return { key, value, pair: true };
    }
    return { key, value: null, pair: explicit };
  }

  /** Walks a flow collection's entries up to `close`, calling `add` for each. */
  protected flowEntries(close: number, what: string, add: (e: { key: unknown; value: unknown; pair: boolean }) =>
    void): void {
    this.enter();
    this.nodes++;
    const start = this.pos;
    this.pos++;
    for (;;) {
      this.skipFlowSpace();
      const c = this.code(this.pos);
      if (c === close) break;
      if (c !== c) this.fail(`unterminated flow ${what}`, start);
      if (c === COMMA) this.fail(`unexpected ',' in a flow ${what}`);
      add(this.flowEntry(close === RBRACKET));
      this.skipFlowSpace();
      const d = this.code(this.pos);
      if (d === COMMA) this.pos++;
      else if (d === close) break;
      else if (d !== d) this.fail(`unterminated flow ${what}`, start);
      else this.fail(`expected ',' or '${String.fromCharCode(close)}' in a flow ${what}`);
    }
    this.pos++;
    this.depth--;
  }

  /** Flow sequence `[ … ]` (§7.4.1); `k: v` entries become single-pair mappings. */
  protected flowSeq(): unknown[] {
    const items: unknown[] = [];
    this.flowEntries(RBRACKET, 'sequence', (e) => {
      if (!e.pair) {
        items.push(e.key);
        return;
      }
      const pair: Record<string, unknown> = {};
      setKey(pair, keyString(e.key), e.value);
      this.nodes++;
      items.push(pair);
    });
    return items;
  }

  /** Flow mapping `{ … }` (§7.4.2); an entry without `:` has a null value. */
  protected flowMap(): Record<string, unknown> {
    const map: Record<string, unknown> = {};
    this.flowEntries(RBRACE, 'mapping', (e) => setKey(map, keyString(e.key), e.value));
    return map;
  }
}
