/**
 * GraphQL schema parsers (docs/sources.md#what-ingestion-extracts): one `QUERY`/`MUTATION`/ `SUBSCRIPTION` endpoint per
 * root field, one `type` document per named type. {@link parseGraphql} reads SDL (https://spec.graphql.org/October2021/
 * §2, §3) with a hand-written lexer and recursive descent; {@link parseGraphqlIntrospection} reads an introspection
 * result (§4).
 */
import { SdlLexer } from './graphql/lexer.js';
import { IngestError, type ParsedDocument, type ParsedEndpoint, type ParsedSource } from '../types.js';
import { isObj, oneLine, stringOrEmpty, type Obj } from './values.js';

interface FieldDef { name: string; description: string; type: string; args: FieldDef[]; defaultValue?: string;
  deprecated?: string }
type TypeKind = 'type' | 'interface' | 'union' | 'enum' | 'input' | 'scalar';
interface TypeDef { kind: TypeKind; name: string; description: string; interfaces: string[]; fields: FieldDef[];
  members: string[] }
type RootOp = 'query' | 'mutation' | 'subscription';
type Roots = Partial<Record<RootOp, string>>;

const ROOT_OPS: Array<[RootOp, string, string]> = [
  ['query', 'QUERY', 'Query'], ['mutation', 'MUTATION', 'Mutation'], ['subscription', 'SUBSCRIPTION', 'Subscription'],
];
const TYPE_KEYWORDS = new Set(['scalar', 'type', 'interface', 'union', 'enum', 'input']);
const MAX_DEPTH = 64;

/** The recursive-descent parser over {@link SdlLexer}'s tokens. */
class SdlParser extends SdlLexer {
  private depth = 0;
  readonly types = new Map<string, TypeDef>();
  readonly roots: Roots = {};
  rootsDeclared = false;

  private isP(p: string): boolean { return this.kind === 'P' && this.value === p; }
  private isName(n: string): boolean { return this.kind === 'Name' && this.value === n; }

  private eat(p: string): boolean {
    if (!this.isP(p)) return false;
    this.advance();
    return true;
  }

  private expectP(p: string): void {
    if (!this.eat(p)) this.fail(`expected '${p}', found ${this.describe()}`);
  }

  private take(): string {
    const v = this.value;
    this.advance();
    return v;
  }

  private name(): string {
    if (this.kind !== 'Name') this.fail(`expected a name, found ${this.describe()}`);
    return this.take();
  }

  private description(): string {
    return this.kind === 'String' || this.kind === 'BlockString' ? this.take() : '';
  }

  private enter(): void { if (++this.depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH}`); }

  /** A (const) value; the parsed form is not needed, only its extent. */
  private skipValue(): void {
    this.enter();
    if (this.eat('$')) this.name();
    else if (this.isP('[') || this.isP('{')) {
      const object = this.isP('{');
      const close = object ? '}' : ']';
      this.advance();
      while (!this.eat(close)) {
        if (this.kind === 'EOF') this.fail(`expected '${close}', found end of input`);
        if (object) {
          this.name();
          this.expectP(':');
        }
        this.skipValue();
      }
    } else if (this.kind === 'P' || this.kind === 'EOF') this.fail(`expected a value, found ${this.describe()}`);
    else this.advance();
    this.depth--;
  }

  /** `@name(args)`…; returns the deprecation reason when `@deprecated` is among them. */
  private directives(): string | undefined {
    let deprecated: string | undefined;
    while (this.eat('@')) {
      const name = this.name();
      if (name === 'deprecated') deprecated = 'No longer supported';
      if (!this.eat('(')) continue;
      do {
        const arg = this.name();
        this.expectP(':');
        if (name === 'deprecated' && arg === 'reason' && this.kind === 'String') deprecated = this.value;
        this.skipValue();
      } while (!this.isP(')'));
      this.advance();
    }
    return deprecated;
  }

  /** `Name`, `[Type]`, `Type!` as written. */
  private typeRef(): string {
    this.enter();
    let t = this.isP('[') ? '' : this.name();
    if (!t && this.eat('[')) {
      t = `[${this.typeRef()}]`;
      this.expectP(']');
    }
    if (this.eat('!')) t += '!';
    this.depth--;
    return t;
  }

  /** InputValueDefinition: `"desc" name: Type = default @dir`. */
  private inputValue(): FieldDef {
    const description = this.description();
    const name = this.name();
    this.expectP(':');
    const f: FieldDef = { name, description, type: this.typeRef(), args: [] };
    if (this.eat('=')) {
      const start = this.start;
      this.skipValue();
      f.defaultValue = oneLine(this.src.slice(start, this.prevEnd));
    }
    f.deprecated = this.directives();
    return f;
  }

  private argumentDefs(): FieldDef[] {
    const args: FieldDef[] = [];
    if (!this.eat('(')) return args;
    do args.push(this.inputValue());
    while (!this.eat(')'));
    return args;
  }

  /** `{ … }` of fields (objects, interfaces), input fields or enum values. */
  private block(kind: TypeKind, into: FieldDef[]): void {
    this.expectP('{');
    while (!this.eat('}')) {
      if (this.kind === 'EOF') this.fail("expected '}', found end of input");
      if (kind === 'input') into.push(this.inputValue());
      else if (kind === 'enum') {
        const description = this.description();
        into.push({ name: this.name(), description, type: '', args: [], deprecated: this.directives() });
      } else {
        const description = this.description();
        const name = this.name();
        const args = this.argumentDefs();
        this.expectP(':');
        into.push({ name, description, args, type: this.typeRef(), deprecated: this.directives() });
      }
    }
  }

  /** A type definition or extension; the keyword is the current token. */
  private typeDefinition(description: string): void {
    const kind = (this.value === 'type' ? 'type' : this.value) as TypeKind;
    this.advance();
    const name = this.name();
    let t = this.types.get(name);
    if (!t) this.types.set(name, (t = { kind, name, description, interfaces: [], fields: [], members: [] }));
    else if (!t.description) t.description = description;
    if ((kind === 'type' || kind === 'interface') && this.isName('implements')) {
      this.advance();
      this.eat('&');
      do t.interfaces.push(this.name());
      while (this.eat('&'));
    }
    this.directives();
    if (kind === 'union' && this.eat('=')) {
      this.eat('|');
      do t.members.push(this.name());
      while (this.eat('|'));
    } else if (kind !== 'union' && kind !== 'scalar' && this.isP('{')) this.block(kind, t.fields);
  }

  /** `{ query: A mutation: B }` of a schema definition or extension. */
  private rootOperations(): void {
    this.expectP('{');
    while (!this.eat('}')) {
      const op = this.name();
      if (op !== 'query' && op !== 'mutation' && op !== 'subscription') this.fail(`unknown root operation '${op}'`,
        this.prevEnd - op.length);
      this.expectP(':');
      this.roots[op] = this.name();
      this.rootsDeclared = true;
    }
  }

  parseDocument(): void {
    while (this.kind !== 'EOF') {
      const descStart = this.start;
      const description = this.description();
      if (this.kind !== 'Name') {
        this.fail(this.isP('{') ? 'executable definitions (operations, fragments) are not allowed in a ' +
          'schema' : `expected a definition, found ${this.describe()}`);
      }
      const kw = this.value;
      if (kw === 'schema') {
        this.advance();
        this.directives();
        this.rootOperations();
      } else if (TYPE_KEYWORDS.has(kw)) {
        this.typeDefinition(description);
      } else if (kw === 'directive') {
        this.advance();
        this.expectP('@');
        this.name();
        this.argumentDefs();
        if (this.isName('repeatable')) this.advance();
        if (!this.isName('on')) this.fail(`expected 'on', found ${this.describe()}`);
        this.advance();
        this.eat('|');
        do this.name();
        while (this.eat('|'));
      } else if (kw === 'extend') {
        if (description) this.fail('extensions cannot have descriptions', descStart);
        this.advance();
        if (this.isName('schema')) {
          this.advance();
          this.directives();
          if (this.isP('{')) this.rootOperations();
        } else if (this.kind === 'Name' && TYPE_KEYWORDS.has(this.value)) {
          this.typeDefinition('');
        } else this.fail(`expected a type system extension, found ${this.describe()}`);
      } else if (kw === 'query' || kw === 'mutation' || kw === 'subscription' || kw === 'fragment') {
        this.fail(`executable definition '${kw}' is not allowed in a schema`);
      } else {
        this.fail(`expected a definition, found ${this.describe()}`);
      }
    }
  }
}

function fieldLine(f: FieldDef): string[] {
  const args = f.args.length
    ? `(${f.args.map((a) => `${a.name}: ${a.type}${
      a.defaultValue !== undefined ? ` = ${a.defaultValue}` : ''}`).join(', ')})`
    : '';
  const type = f.type ? `: ${f.type}` : '';
  const def = f.defaultValue !== undefined ? ` = ${f.defaultValue}` : '';
  const dep = f.deprecated !== undefined ? ` (deprecated: ${oneLine(f.deprecated)})` : '';
  const desc = f.description ? ` — ${oneLine(f.description)}` : '';
  const lines = [`- ${f.name}${args}${type}${def}${dep}${desc}`];
  for (const a of f.args) if (a.description) lines.push(`    ${a.name}: ${oneLine(a.description)}`);
  return lines;
}

/** Documents and endpoints for a schema (shared by SDL and introspection). */
function buildSource(types: TypeDef[], roots: Roots): ParsedSource {
  const documents: ParsedDocument[] = [];
  const docIndex = new Map<string, number>();
  const rootOf = new Map<string, RootOp>();
  for (const [op] of ROOT_OPS) if (roots[op]) rootOf.set(roots[op]!, op);
  for (const t of types) {
    let line = `${t.kind} ${t.name}`;
    if (t.interfaces.length) line += ` implements ${t.interfaces.join(' & ')}`;
    if (t.members.length) line += ` = ${t.members.join(' | ')}`;
    const lines = [line];
    const op = rootOf.get(t.name);
    if (op) lines.push(`Root ${op} type: each field is a ${op} operation.`);
    if (t.description) lines.push(t.description);
    if (t.fields.length) {
      lines.push('', t.kind === 'enum' ? 'Values:' : t.kind === 'input' ? 'Input fields:' : 'Fields:');
      for (const f of t.fields) lines.push(...fieldLine(f));
    }
    docIndex.set(t.name, documents.length);
    documents.push({ kind: 'type', title: t.name, text: lines.join('\n') });
  }
  const byName = new Map(types.map((t) => [t.name, t] as const));
  const endpoints: ParsedEndpoint[] = [];
  for (const [op, method] of ROOT_OPS) {
    const t = roots[op] ? byName.get(roots[op]!) : undefined;
    if (!t) continue;
    for (const f of t.fields) endpoints.push({ method, path: f.name, documentIndex: docIndex.get(t.name) });
  }
  return { documents, endpoints };
}

/**
 * Parses GraphQL SDL into one `type` document per named type (extensions merged) and one endpoint per field of the
 * root types, named by `schema { … }` or by default (docs/sources.md#what-ingestion-extracts).
 * @throws {IngestError} `GraphQL: …` with line and column for lexical and syntax errors, and for executable
 *   definitions (queries, fragments) found in the schema.
 */
export function parseGraphql(text: string): ParsedSource {
  const p = new SdlParser(text);
  p.parseDocument();
  const roots: Roots = p.rootsDeclared ? p.roots : Object.fromEntries(ROOT_OPS.map(([op, , name]) => [op, name]));
  return buildSource([...p.types.values()], roots);
}

const BUILTIN_SCALARS = new Set(['String', 'Int', 'Float', 'Boolean', 'ID']);
const KINDS: Record<string, TypeKind> = { OBJECT: 'type', INTERFACE: 'interface', UNION: 'union', ENUM: 'enum',
  INPUT_OBJECT: 'input', SCALAR: 'scalar' };

/** `{kind: 'NON_NULL', ofType: {kind: 'LIST', ofType: {name: 'X'}}}` → `[X]!`. */
function typeRefText(ref: unknown, depth = 0): string {
  if (!isObj(ref) || depth > MAX_DEPTH) throw new IngestError('GraphQL introspection: invalid type reference');
  if (ref.kind === 'NON_NULL') return `${typeRefText(ref.ofType, depth + 1)}!`;
  if (ref.kind === 'LIST') return `[${typeRefText(ref.ofType, depth + 1)}]`;
  if (typeof ref.name !== 'string') throw new IngestError('GraphQL introspection: type reference without a name');
  return ref.name;
}

function introspectionField(f: unknown): FieldDef {
  if (!isObj(f) || typeof f.name !== 'string') throw new IngestError(
    'GraphQL introspection: field or value without a name');
  return {
    name: f.name,
    description: stringOrEmpty(f.description),
    type: f.type === undefined ? '' : typeRefText(f.type),
    args: Array.isArray(f.args) ? f.args.map(introspectionField) : [],
    ...(typeof f.defaultValue === 'string' ? { defaultValue: f.defaultValue } : {}),
    ...(f.isDeprecated === true ? { deprecated: stringOrEmpty(f.deprecationReason) || 'No longer supported' } : {}),
  };
}

/**
 * Reads a GraphQL introspection result (`{data: {__schema}}` or `{__schema}`, already parsed) into the shape of
 * {@link parseGraphql}, `__*` types and built-in scalars skipped.
 * @throws {IngestError} `GraphQL introspection: …` when there is no `__schema` object, `types` is not an array, or a
 *   type, field or type reference is malformed.
 */
export function parseGraphqlIntrospection(doc: unknown): ParsedSource {
  const schema = isObj(doc) ? (isObj(doc.data) ? doc.data.__schema : doc.__schema) : undefined;
  if (!isObj(schema)) throw new IngestError(
    'GraphQL introspection: expected an object with "__schema" or "data.__schema"');
  if (!Array.isArray(schema.types)) throw new IngestError('GraphQL introspection: "__schema.types" must be an array');
  const types: TypeDef[] = [];
  for (const t of schema.types) {
    if (!isObj(t) || typeof t.name !== 'string') throw new IngestError('GraphQL introspection: type without a name');
    if (t.name.startsWith('__') || (t.kind === 'SCALAR' && BUILTIN_SCALARS.has(t.name))) continue;
    const kind = KINDS[stringOrEmpty(t.kind)];
    if (!kind) throw new IngestError(
      `GraphQL introspection: type ${t.name} has unknown kind ${JSON.stringify(t.kind)}`);
    const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
    types.push({
      kind,
      name: t.name,
      description: stringOrEmpty(t.description),
      interfaces: list(t.interfaces).map((i) => typeRefText(i)),
      members: list(t.possibleTypes).map((i) => (kind === 'union' ? typeRefText(i) : '')).filter(Boolean),
      fields: [...list(t.fields), ...list(t.inputFields), ...list(t.enumValues)].map(introspectionField),
    });
  }
  const roots: Roots = {};
  for (const [op] of ROOT_OPS) {
    const r = schema[`${op}Type`];
    if (isObj(r) && typeof r.name === 'string') roots[op] = r.name;
  }
  return buildSource(types, roots);
}

/** Detects an introspection result (docs/sources.md#type-detection): a `__schema` member, at the top or in `data`. */
export function isIntrospection(v: Obj): boolean {
  return '__schema' in v || (isObj(v.data) && '__schema' in v.data);
}
