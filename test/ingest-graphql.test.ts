import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { parseGraphql, parseGraphqlIntrospection } from '../src/ingest/parsers/graphql.js';
import type { ParsedSource } from '../src/ingest/types.js';
import { CORPUS, expectedJson, throwsIngest, readCorpus } from './helpers/corpus.js';

const EXPECTED = expectedJson<{ endpoints: number | null; root_fields?: Record<string, number> }>();
const read = readCorpus;

const docText = (r: ParsedSource, title: string): string => {
  const d = r.documents.find((x) => x.title === title);
  assert.ok(d, `no document ${title}`);
  return d.text;
};

test('graphql: default root names, extend type fields, documents per named type', () => {
  const r = parseGraphql(`
# A comment, and commas, are ignored.
"The root."
type Query { me: User, user(id: ID!, first: Int = 10,): User }
extend type Query { viewer: User }
type Mutation { like(id: ID!): Boolean! }
type Subscription { liked: ID }
"""
A user.
"""
type User implements Node & Entity @key(fields: "id") { id: ID! name: String @deprecated(reason: "Use fullName.") }
interface Node { id: ID! }
interface Entity implements Node { id: ID! }
`);
  assert.deepEqual(r.endpoints.map((e) => `${e.method} ${e.path} ${e.documentIndex}`), [
    'QUERY me 0', 'QUERY user 0', 'QUERY viewer 0', 'MUTATION like 1', 'SUBSCRIPTION liked 2',
  ]);
  assert.deepEqual(r.documents.map((d) => `${d.kind}:${d.title}`), [
    'type:Query', 'type:Mutation', 'type:Subscription', 'type:User', 'type:Node', 'type:Entity',
  ]);
  assert.equal(docText(r, 'Query'), [
    'type Query',
    'Root query type: each field is a query operation.',
    'The root.',
    '',
    'Fields:',
    '- me: User',
    '- user(id: ID!, first: Int = 10): User',
    '- viewer: User',
  ].join('\n'));
  assert.equal(docText(r, 'User'), 'type User implements Node & Entity\nA user.\n\nFields:\n- id: ID!\n- name: String (deprecated: Use fullName.)');
  assert.equal(docText(r, 'Entity'), 'interface Entity implements Node\n\nFields:\n- id: ID!');
  assert.equal(r.title, undefined);
});

test('graphql: schema {} renames roots, a decoy Query is not a root, extend schema adds roots', () => {
  const r = parseGraphql(`
schema @dir { query: Q }
type Query { decoy: Int }
type Q { a: Int }
type M { b: Int }
type S { c: Int }
extend schema { mutation: M }
`);
  assert.deepEqual(r.endpoints.map((e) => `${e.method} ${e.path}`), ['QUERY a', 'MUTATION b']);
  assert.match(docText(r, 'M'), /Root mutation type/);
  assert.doesNotMatch(docText(r, 'Query'), /Root/);
});

test('graphql: unions, enums, inputs, scalars, directives and descriptions', () => {
  const r = parseGraphql(`
union SearchResult @u = | Photo | Person
extend union SearchResult = Video
enum Color { "Red." RED @x GREEN BLUE @deprecated }
input Filter { "Match this." q: String = "x\\u0041\\u{1F600}" limit: [Int!]! = [1, 2] where: Filter = {q: "a", nested: {b: null}} }
scalar Date @specifiedBy(url: "https://example.com")
"A directive." directive @auth(requires: Role = ADMIN) repeatable on | FIELD_DEFINITION | OBJECT
`);
  assert.equal(docText(r, 'SearchResult'), 'union SearchResult = Photo | Person | Video');
  assert.equal(docText(r, 'Color'), 'enum Color\n\nValues:\n- RED — Red.\n- GREEN\n- BLUE (deprecated: No longer supported)');
  assert.equal(docText(r, 'Filter'), [
    'input Filter',
    '',
    'Input fields:',
    '- q: String = "x\\u0041\\u{1F600}" — Match this.',
    '- limit: [Int!]! = [1, 2]',
    '- where: Filter = {q: "a", nested: {b: null}}',
  ].join('\n'));
  assert.equal(docText(r, 'Date'), 'scalar Date');
  assert.equal(r.documents.length, 4, 'directive definitions are not named types');
  assert.deepEqual(r.endpoints, []);
});

test('graphql: block strings follow BlockStringValue() and strings decode escapes', () => {
  const r = parseGraphql('"""\n    Hello,\n      World!\n\n    Yours,\n      GraphQL \\""" quote.\n  """\nscalar X\n"tab\\there \\u00e9 \\u{1F600} \\"q\\" \\\\ \\/" scalar Y');
  assert.equal(docText(r, 'X'), 'scalar X\nHello,\n  World!\n\nYours,\n  GraphQL """ quote.');
  assert.equal(docText(r, 'Y'), 'scalar Y\ntab\there é 😀 "q" \\ /');
});

test('graphql: kitchen sink parses with extensions merged and declared-but-undefined roots', () => {
  const r = parseGraphql(read('graphql/graphql-js-schema-kitchen-sink.graphql'));
  assert.equal(r.endpoints.length, 0);
  assert.match(docText(r, 'Foo'), /- seven\(argument: Int = null\): Type\n- seven\(argument: \[String\]\): Type/);
  assert.match(docText(r, 'Feed'), /union Feed = Story \| Article \| Advert \| Photo \| Video/);
  assert.match(docText(r, 'Site'), /- VR/);
  assert.match(docText(r, 'InputType'), /- other: Float = 1.23e4/);
  assert.match(docText(r, 'Bar'), /interface Bar implements Two/);
});

test('graphql: syntax errors report exact messages with line and column', () => {
  throwsIngest(() => parseGraphql('type Query {\n  a: Int\n  b(x: Int: String\n}'), "GraphQL: expected a name, found ':' at line 3, column 11", 3, 11);
  throwsIngest(() => parseGraphql('query { a }'), "GraphQL: executable definition 'query' is not allowed in a schema at line 1, column 1");
  throwsIngest(() => parseGraphql('{ a }'), 'GraphQL: executable definitions (operations, fragments) are not allowed in a schema at line 1, column 1');
  throwsIngest(() => parseGraphql('type Q { a: [Int }'), "GraphQL: expected ']', found '}' at line 1, column 18");
  throwsIngest(() => parseGraphql('schema { foo: Q }'), "GraphQL: unknown root operation 'foo' at line 1, column 10");
  throwsIngest(() => parseGraphql('"d" extend type Q { a: Int }'), 'GraphQL: extensions cannot have descriptions at line 1, column 1');
  throwsIngest(() => parseGraphql('type Q {'), "GraphQL: expected '}', found end of input at line 1, column 9");
  throwsIngest(() => parseGraphql('type Q { a: Int } foo'), "GraphQL: expected a definition, found name 'foo' at line 1, column 19");
  throwsIngest(() => parseGraphql('directive @a on'), 'GraphQL: expected a name, found end of input at line 1, column 16');
  throwsIngest(() => parseGraphql('type Q { a: String = "x" }'), "GraphQL: expected a name, found '=' at line 1, column 20");
});

test('graphql: lexical errors report exact messages with line and column', () => {
  throwsIngest(() => parseGraphql('type Query { a: "x }'), 'GraphQL: unterminated string at line 1, column 17');
  throwsIngest(() => parseGraphql('type Q { a: Int }\r\n\r\n  %'), 'GraphQL: unexpected character "%" at line 3, column 3', 3, 3);
  throwsIngest(() => parseGraphql('type Q { a(x: Int = 01): Int }'), 'GraphQL: invalid number, unexpected digit after 0 at line 1, column 22');
  throwsIngest(() => parseGraphql('type Q { a(x: Int = 1.): Int }'), 'GraphQL: invalid number, expected a digit at line 1, column 23');
  throwsIngest(() => parseGraphql('type Q { a(x: Int = 1x): Int }'), 'GraphQL: invalid number, unexpected "x" at line 1, column 22');
  throwsIngest(() => parseGraphql('\n"""abc'), 'GraphQL: unterminated block string at line 2, column 1', 2, 1);
  throwsIngest(() => parseGraphql('type Q { a(x: String = "\\q"): Int }'), 'GraphQL: invalid escape sequence \\q at line 1, column 25');
  throwsIngest(() => parseGraphql('type Q { a(x: String = "\\u12"): Int }'), 'GraphQL: invalid Unicode escape sequence at line 1, column 25');
  throwsIngest(() => parseGraphql('type Q { a: Int } ..'), 'GraphQL: unexpected character "." at line 1, column 19');
});

test('graphql: nesting of list types and values is bounded', () => {
  throwsIngest(() => parseGraphql(`type Q { a: ${'['.repeat(100)}Int${']'.repeat(100)} }`), 'GraphQL: nesting deeper than 64 at line 1, column 77');
});

test('graphql introspection: wrapped and bare forms, type rendering, skipped built-ins', () => {
  const schema = {
    queryType: { name: 'Q' },
    mutationType: null,
    types: [
      {
        kind: 'OBJECT', name: 'Q', description: 'Root.', interfaces: [],
        fields: [{
          name: 'items', description: 'All items.', isDeprecated: true, deprecationReason: 'Old.',
          args: [{ name: 'first', description: 'Page size.', type: { kind: 'SCALAR', name: 'Int' }, defaultValue: '10' }],
          type: { kind: 'NON_NULL', ofType: { kind: 'LIST', ofType: { kind: 'NON_NULL', ofType: { kind: 'OBJECT', name: 'Item' } } } },
        }],
      },
      { kind: 'ENUM', name: 'E', enumValues: [{ name: 'A', description: 'First.' }] },
      { kind: 'UNION', name: 'U', possibleTypes: [{ kind: 'OBJECT', name: 'Q' }] },
      { kind: 'INPUT_OBJECT', name: 'In', inputFields: [{ name: 'x', type: { kind: 'SCALAR', name: 'String' }, defaultValue: '"d"' }] },
      { kind: 'SCALAR', name: 'String' },
      { kind: 'OBJECT', name: '__Schema', fields: [] },
    ],
  };
  for (const r of [parseGraphqlIntrospection({ data: { __schema: schema } }), parseGraphqlIntrospection({ __schema: schema })]) {
    assert.deepEqual(r.endpoints, [{ method: 'QUERY', path: 'items', documentIndex: 0 }]);
    assert.deepEqual(r.documents.map((d) => d.title), ['Q', 'E', 'U', 'In']);
    assert.equal(docText(r, 'Q'), [
      'type Q',
      'Root query type: each field is a query operation.',
      'Root.',
      '',
      'Fields:',
      '- items(first: Int = 10): [Item!]! (deprecated: Old.) — All items.',
      '    first: Page size.',
    ].join('\n'));
    assert.equal(docText(r, 'U'), 'union U = Q');
    assert.equal(docText(r, 'In'), 'input In\n\nInput fields:\n- x: String = "d"');
  }
});

test('graphql introspection: malformed input reports exact messages', () => {
  const msg = 'GraphQL introspection: expected an object with "__schema" or "data.__schema"';
  for (const bad of [null, 'text', [], {}, { data: {} }, { data: { __schema: [] } }]) throwsIngest(() => parseGraphqlIntrospection(bad), msg);
  throwsIngest(() => parseGraphqlIntrospection({ __schema: { types: 1 } }), 'GraphQL introspection: "__schema.types" must be an array');
  throwsIngest(() => parseGraphqlIntrospection({ __schema: { types: [{ kind: 'X', name: 'A' }] } }), 'GraphQL introspection: type A has unknown kind "X"');
  throwsIngest(() => parseGraphqlIntrospection({ __schema: { types: [{ kind: 'OBJECT' }] } }), 'GraphQL introspection: type without a name');
  throwsIngest(
    () => parseGraphqlIntrospection({ __schema: { types: [{ kind: 'OBJECT', name: 'A', fields: [{ name: 'f', type: { kind: 'LIST' } }] }] } }),
    'GraphQL introspection: invalid type reference',
  );
});

test('graphql: the 1.2 MB GitHub schema parses well under 300 ms', () => {
  const text = read('graphql/github-public-schema.graphql');
  parseGraphql(text); // warm-up
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    parseGraphql(text);
    times.push(performance.now() - t0);
  }
  const best = Math.min(...times);
  assert.ok(best < 300, `took ${best.toFixed(1)} ms`);
});

for (const file of readdirSync(new URL('graphql/', CORPUS)).sort()) {
  test(`graphql corpus: graphql/${file}`, () => {
    const expected = EXPECTED[`graphql/${file}`];
    assert.ok(expected, `no expected.json entry for graphql/${file}`);
    const text = read(`graphql/${file}`);
    const r = file.endsWith('.json') ? parseGraphqlIntrospection(JSON.parse(text)) : parseGraphql(text);
    assert.equal(r.endpoints.length, expected.endpoints);
    if (expected.root_fields) {
      const counts: Record<string, number> = {};
      for (const op of Object.keys(expected.root_fields)) counts[op] = r.endpoints.filter((e) => e.method === op.toUpperCase()).length;
      assert.deepEqual(counts, expected.root_fields);
    }
    assert.ok(r.documents.length > 0);
    for (const d of r.documents) {
      assert.equal(d.kind, 'type');
      assert.ok(d.title.length > 0 && d.text.trim().length > 0);
    }
    assert.equal(new Set(r.documents.map((d) => d.title)).size, r.documents.length, 'one document per named type');
    for (const e of r.endpoints) {
      assert.match(e.path, /^[_A-Za-z][_0-9A-Za-z]*$/);
      assert.ok(r.documents[e.documentIndex!].text.includes(`\n- ${e.path}`));
    }
  });
}
