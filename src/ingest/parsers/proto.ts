/**
 * Protocol Buffers parser for proto2, proto3 and editions (docs/sources.md#what-ingestion-extracts): one `RPC` endpoint
 * per rpc, `service` and `message` documents. Comments attach as protoc attaches them: the block directly above a
 * declaration leads it, one after it on the same line trails it.
 */
import { tokenize, type Token } from './proto/tokenizer.js';
import { IngestError, type ParsedDocument, type ParsedEndpoint, type ParsedSource } from '../types.js';
import { oneLine } from './values.js';

const MAX_DEPTH = 100;

class ProtoParser {
  private p = 0;
  private pkg = '';
  private firstService = '';
  readonly documents: ParsedDocument[] = [];
  readonly endpoints: ParsedEndpoint[] = [];

  constructor(private readonly src: string, private readonly toks: Token[]) {}

  private get tok(): Token { return this.toks[this.p]; }

  private fail(message: string, t: Token = this.tok): never {
    throw new IngestError(`Proto: ${message}`, t.line, t.column);
  }

  private found(what: string): never {
    const t = this.tok;
    return this.fail(`expected ${what}, found ` +
      `${t.kind === 'eof' ? 'end of input' : t.kind === 'string' ? 'a string' : `'${t.value}'`}`);
  }

  private next(): Token {
    const t = this.tok;
    if (t.kind !== 'eof') this.p++;
    return t;
  }

  private is(value: string, offset = 0): boolean {
    const t = this.toks[Math.min(this.p + offset, this.toks.length - 1)];
    return (t.kind === 'sym' || t.kind === 'ident') && t.value === value;
  }

  private expect(value: string): Token {
    return this.is(value) ? this.next() : this.found(`'${value}'`);
  }

  private eat(value: string): boolean {
    if (!this.is(value)) return false;
    this.next();
    return true;
  }

  /** Loop condition inside `{ … }`: false once the closing `}` is consumed; skips empty `;` statements. */
  private inBody(what: string): boolean {
    while (this.eat(';'));
    if (this.tok.kind === 'eof') this.fail(`unexpected end of input, expected '}' to close ${what}`);
    return !this.eat('}');
  }

  private ident(what = 'an identifier'): string {
    return this.tok.kind === 'ident' ? this.next().value : this.found(what);
  }

  /** `a.b.c`, optionally with a leading `.` (fully-qualified type reference). */
  private fullIdent(what = 'a name'): string {
    let name = this.eat('.') ? '.' : '';
    name += this.ident(what);
    while (this.eat('.')) name += `.${this.ident(what)}`;
    return name;
  }

  /** One string literal or several adjacent ones (concatenated). */
  private string(): string {
    if (this.tok.kind !== 'string') this.found('a string');
    let s = '';
    while (this.tok.kind === 'string') s += this.next().value;
    return s;
  }

  private number(what: string): string {
    return this.tok.kind === 'number' ? this.next().value : this.found(what);
  }

  /** Option name: `foo`, `foo.bar`, `(my.ext).field`. */
  private optionName(): string {
    let name = '';
    do {
      if (name) name += '.';
      if (this.eat('(')) {
        name += `(${this.fullIdent('an option name')})`;
        this.expect(')');
      } else name += this.ident('an option name');
    } while (this.eat('.'));
    return name;
  }

  /** A constant or an aggregate `{ … }` value, returned as (whitespace-collapsed) source text. */
  private constant(): string {
    const t = this.tok;
    if (this.is('{')) {
      let depth = 0;
      do {
        if (this.tok.kind === 'eof') this.fail('unterminated aggregate option value', t);
        if (this.is('{')) depth++;
        else if (this.is('}')) depth--;
        this.next();
      } while (depth > 0);
      return oneLine(this.src.slice(t.start, this.toks[this.p - 1].end));
    }
    if (t.kind === 'string') return JSON.stringify(this.string());
    if (this.eat('-') || this.eat('+')) {
      return t.value + (this.is('inf') || this.is('nan') ? this.next().value : this.number('a number'));
    }
    if (t.kind === 'number') return this.next().value;
    return t.kind === 'ident' ? this.fullIdent() : this.found('an option value');
  }

  /** `option name = value;` → `name = value`. */
  private optionStatement(): string {
    this.expect('option');
    const name = this.optionName();
    this.expect('=');
    const value = this.constant();
    this.expect(';');
    return `${name} = ${value}`;
  }

  /** Optional `[a = 1, (b).c = { … }]` after a field or enum value. */
  private fieldOptions(): string {
    if (!this.eat('[')) return '';
    const opts: string[] = [];
    do {
      const name = this.optionName();
      this.expect('=');
      opts.push(`${name} = ${this.constant()}`);
    } while (this.eat(','));
    this.expect(']');
    return ` [${opts.join(', ')}]`;
  }

  /** `reserved …;` / `extensions …;`: the whole statement as text. */
  private restOfStatement(): string {
    const start = this.tok;
    while (!this.is(';')) {
      if (this.tok.kind === 'eof') this.found("';'");
      if (this.is('[')) this.fieldOptions();
      else this.next();
    }
    const text = oneLine(this.src.slice(start.start, this.tok.start));
    this.next();
    return text;
  }

  /** Leading comment of `first` plus trailing comment of `end`, on one line. */
  private static commentOf(first: Token, end?: Token): string {
    return oneLine(`${first.leading} ${end?.trailing ?? ''}`);
  }

  private static withComment(line: string, comment: string): string {
    return comment ? `${line} — ${comment}` : line;
  }

  /** A field (label, type, `map<K, V>` or proto2 `group`) of a message, oneof or extend. */
  private field(scope: string, lines: string[], indent: string, depth: number): void {
    const first = this.tok;
    let label = '';
    if (this.is('optional') || this.is('required') || this.is('repeated')) label = `${this.next().value} `;
    if (this.is('group') && this.toks[this.p + 1].kind === 'ident' && this.is('=', 2)) {
      this.next();
      const name = this.ident();
      this.expect('=');
      const line = `${indent}- ${label}group ${name} = ${this.number('a field number')}${this.fieldOptions()}`;
      lines.push(ProtoParser.withComment(line, ProtoParser.commentOf(first)));
      this.messageBody(scope ? `${scope}.${name}` : name, first, depth + 1);
      return;
    }
    let type: string;
    if (this.is('map') && this.is('<', 1)) {
      this.p += 2;
      const key = this.fullIdent('a map key type');
      this.expect(',');
      type = `map<${key}, ${this.fullIdent('a map value type')}>`;
      this.expect('>');
    } else type = this.fullIdent('a field type');
    const name = this.ident('a field name');
    this.expect('=');
    const line = `${indent}- ${label}${type} ${name} = ${this.number('a field number')}${this.fieldOptions()}`;
    lines.push(ProtoParser.withComment(line, ProtoParser.commentOf(first, this.expect(';'))));
  }

  /** `enum Name { … }` → description lines. */
  private enumDef(lines: string[]): void {
    const first = this.expect('enum');
    const name = this.ident('an enum name');
    lines.push(ProtoParser.withComment(`- enum ${name}`, ProtoParser.commentOf(first, this.expect('{'))));
    while (this.inBody(`enum ${name}`)) {
      if (this.is('option')) this.optionStatement();
      else if (this.is('reserved')) lines.push(`  - ${this.restOfStatement()}`);
      else {
        const v = this.tok;
        const value = this.ident('an enum value name');
        this.expect('=');
        const num = (this.eat('-') ? '-' : '') + this.number('an enum value number');
        const line = `  - ${value} = ${num}${this.fieldOptions()}`;
        lines.push(ProtoParser.withComment(line, ProtoParser.commentOf(v, this.expect(';'))));
      }
    }
  }

  /** `extend Type { fields }` → description lines. */
  private extendDef(scope: string, lines: string[], depth: number): void {
    this.expect('extend');
    const target = this.fullIdent('an extended type');
    lines.push(`- extend ${target}:`);
    this.expect('{');
    while (this.inBody(`extend ${target}`)) this.field(scope, lines, '  ', depth);
  }

  /** `message Name { … }`; `scope` is the enclosing message's name. */
  private message(scope: string, depth: number): void {
    const first = this.expect('message');
    const name = this.ident('a message name');
    this.messageBody(scope ? `${scope}.${name}` : name, first, depth + 1);
  }

  /** A message body `{ … }`; emits one `message` document (before its nested messages'). */
  private messageBody(name: string, first: Token, depth: number): void {
    if (depth > MAX_DEPTH) this.fail(`messages nested deeper than ${MAX_DEPTH}`);
    const index = this.documents.length;
    this.documents.push({ kind: 'message', title: name, text: '' });
    const head = [`message ${this.pkg ? `${this.pkg}.` : ''}${name}`];
    const comment = ProtoParser.commentOf(first, this.expect('{'));
    if (comment) head.push(comment);
    const fields: string[] = [];
    const other: string[] = [];
    while (this.inBody(`message ${name}`)) {
      const t = this.tok;
      if (this.is('message')) this.message(name, depth);
      else if (this.is('enum')) this.enumDef(other);
      else if (this.is('option')) other.push(`- option ${this.optionStatement()}`);
      else if (this.is('reserved') || this.is('extensions')) other.push(`- ${this.restOfStatement()}`);
      else if (this.is('extend')) this.extendDef(name, other, depth);
      else if (this.is('oneof') && this.toks[this.p + 1].kind === 'ident' && this.is('{', 2)) {
        this.next();
        const oneof = this.ident();
        this.next();
        fields.push(ProtoParser.withComment(`- oneof ${oneof} (at most one of)`, ProtoParser.commentOf(t)));
        while (this.inBody(`oneof ${oneof}`)) {
          if (this.is('option')) this.optionStatement();
          else this.field(name, fields, '  ', depth);
        }
      } else this.field(name, fields, '', depth);
    }
    const text = [...head, '', fields.length ? 'Fields:' : 'No fields.', ...fields];
    if (other.length) text.push('', ...other);
    this.documents[index].text = text.join('\n');
  }

  /** One rpc side: `( [stream] Type )`. */
  private rpcType(): [string, boolean] {
    this.expect('(');
    const streaming = this.is('stream') && !this.is(')', 1) && !this.is('.', 1) && this.eat('stream');
    const type = this.fullIdent('a message type');
    this.expect(')');
    return [type, streaming];
  }

  private service(): void {
    const first = this.expect('service');
    const name = this.ident('a service name');
    if (!this.firstService) this.firstService = name;
    const fullName = this.pkg ? `${this.pkg}.${name}` : name;
    const lines = [`service ${fullName}`];
    const comment = ProtoParser.commentOf(first, this.expect('{'));
    if (comment) lines.push(comment);
    const index = this.documents.length;
    const rpcs: string[] = [];
    while (this.inBody(`service ${name}`)) {
      if (this.is('option')) {
        lines.push(`option ${this.optionStatement()}`);
        continue;
      }
      const start = this.expect('rpc');
      const rpc = this.ident('an rpc name');
      const [input, clientStreaming] = this.rpcType();
      this.expect('returns');
      const [output, serverStreaming] = this.rpcType();
      const options: string[] = [];
      let end = this.tok;
      if (this.eat('{')) {
        while (this.inBody(`rpc ${rpc}`)) options.push(`  option ${this.optionStatement()}`);
        end = this.toks[this.p - 1];
      } else this.expect(';');
      const kind = clientStreaming && serverStreaming ? 'bidirectional streaming'
        : clientStreaming ? 'client streaming' : serverStreaming ? 'server streaming' : 'unary';
      rpcs.push(`- rpc ${rpc}(${clientStreaming ? 'stream ' : ''}${input}) returns ` +
        `(${serverStreaming ? 'stream ' : ''}${output}) — ${kind}`);
      const rpcComment = ProtoParser.commentOf(start, end);
      if (rpcComment) rpcs.push(`  ${rpcComment}`);
      rpcs.push(...options);
      this.endpoints.push({ method: 'RPC', path: `/${fullName}/${rpc}`, documentIndex: index });
    }
    lines.push('', rpcs.length ? 'RPCs:' : 'No RPCs.', ...rpcs);
    this.documents.push({ kind: 'service', title: name, text: lines.join('\n') });
  }

  parseFile(): ParsedSource {
    while (this.tok.kind !== 'eof') {
      const t = this.tok;
      if (this.eat(';')) continue;
      if (this.eat('syntax') || this.eat('edition')) {
        this.expect('=');
        const v = this.string();
        if (t.value === 'syntax' && v !== 'proto2' && v !== 'proto3') this.fail(`unknown syntax "${v}"`, t);
        this.expect(';');
      } else if (this.eat('package')) {
        this.pkg = this.fullIdent('a package name');
        this.expect(';');
      } else if (this.eat('import')) {
        if (!this.eat('weak')) this.eat('public');
        this.string();
        this.expect(';');
      } else if (this.is('option')) this.optionStatement();
      else if (this.is('message')) this.message('', 0);
      else if (this.is('enum')) this.enumDef([]);
      else if (this.is('extend')) this.extendDef('', [], 0);
      else if (this.is('service')) this.service();
      else this.found('a top-level declaration (syntax, package, import, option, message, enum, extend, service)');
    }
    const title = this.pkg || this.firstService;
    return { ...(title ? { title } : {}), documents: this.documents, endpoints: this.endpoints };
  }
}

/**
 * Parses a `.proto` file into one `RPC` endpoint `/package.Service/Method` per rpc, one `service` document per service
 * and one `message` document per message, nested included (docs/sources.md#what-ingestion-extracts); `title` is the
 * package name, else the first service name.
 * @throws {IngestError} `Proto: …` with line and column for lexical and syntax errors.
 */
export function parseProto(text: string): ParsedSource {
  return new ProtoParser(text, tokenize(text)).parseFile();
}

