import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { parseYaml, parseYamlAll } from '../src/ingest/parsers/yaml.js';
import { CORPUS, readCorpus } from './helpers/corpus.js';
import { parseJsonStream } from './helpers/yamlSuite.js';

const read = readCorpus;
const expected = JSON.parse(read('expected.json')) as Record<string, Record<string, unknown>>;

/** Asserts that parsing throws an IngestError with exactly this message. */
function throwsYaml(text: string, message: string, parse: (t: string) => unknown = parseYamlAll): void {
  assert.throws(() => parse(text), (e: unknown) => {
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'IngestError');
    assert.equal(e.message, message);
    return true;
  });
}

describe('YAML block collections', () => {
  it('nested mappings and sequences, sequence at the mapping indentation', () => {
    assert.deepEqual(parseYaml('a:\n  b:\n    c: d\n  e: [1]\nlist:\n- x\n-   y\nafter: 1\n'), {
      a: { b: { c: 'd' }, e: [1] }, list: ['x', 'y'], after: 1,
    });
  });
  it('compact nested forms `- - a` and `- key: v`', () => {
    assert.deepEqual(parseYaml('- - a\n  - b\n- key: v\n  k2: v2\n- ? x\n  : y\n-\n- c'), [
      ['a', 'b'], { key: 'v', k2: 'v2' }, { x: 'y' }, null, 'c',
    ]);
  });
  it('empty values and values on the following line', () => {
    assert.deepEqual(parseYaml('a:\nb:\n  c\nd:   # comment\n  - 1\n'), { a: null, b: 'c', d: [1] });
  });
  it('tabs as separators, CRLF line breaks, a BOM', () => {
    assert.deepEqual(parseYaml('\uFEFFa:\tb\r\nc:\r\n  -\td\r\n'), { a: 'b', c: ['d'] });
  });
});

describe('YAML flow collections', () => {
  it('nested, multi-line, trailing commas, comments', () => {
    assert.deepEqual(parseYaml('k: [a, [b, c], {d: [e]}, ]\nm: {\n  x: 1, # c\n  y: [\n    2 ],\n}\n'), {
      k: ['a', ['b', 'c'], { d: ['e'] }], m: { x: 1, y: [2] },
    });
  });
  it('implicit, explicit, JSON-like and empty-key pairs in a flow sequence', () => {
    assert.deepEqual(parseYaml('[a, b: c, ? k : v, "q":w, : z, {x: y}]'), [
      'a', { b: 'c' }, { k: 'v' }, { q: 'w' }, { null: 'z' }, { x: 'y' },
    ]);
  });
  it('flow mapping entries without values, colons inside plain scalars', () => {
    assert.deepEqual(parseYaml('{ a, b: , "c":d, e:f, url: http://x/y, ? g }'), {
      a: null, b: null, c: 'd', 'e:f': null, url: 'http://x/y', g: null,
    });
  });
});

describe('YAML scalars', () => {
  it('multi-line plain scalars fold lines into spaces, empty lines into line feeds', () => {
    assert.deepEqual(parseYaml('a: b\n  c\n\n  d\ne: f # comment\ng: h#i'), { a: 'b c\nd', e: 'f', g: 'h#i' });
  });
  it("single-quoted: '' escape, folding, trailing spaces kept before the quote", () => {
    assert.deepEqual(parseYaml("a: 'it''s'\nb: 'x  \n  y\n\n  z  '\nc: 'back\\slash'"), { a: "it's", b: 'x y\nz  ', c: 'back\\slash' });
  });
  it('double-quoted: every escape', () => {
    const v = parseYaml(String.raw`"\n\t\\\"\/\0\a\b\e\f\r\v\N\_\L\P\x41\u00e9\U0001F600\ "`);
    assert.equal(v, '\n\t\\"/\0\x07\b\x1b\f\r\v\x85\xa0\u2028\u2029A\u00e9\u{1F600} ');
  });
  it('double-quoted: escaped line breaks and folding', () => {
    assert.deepEqual(parseYaml('a: "x \\\n  y"\nb: "p  \n   q\n\n   r"\nc: "t\\\n\n  u"'), { a: 'x y', b: 'p q\nr', c: 't\nu' });
  });
  it('quoted scalars are always strings', () => {
    assert.deepEqual(parseYaml(`["true", '12', "null", '']`), ['true', '12', 'null', '']);
  });
  it('literal block scalars with clip, strip and keep chomping', () => {
    assert.deepEqual(parseYaml('a: |\n  l1\n   l2\n\n\nb: |-\n  s\n\nc: |+\n  k\n\n\nd: |\ne: x\n'), {
      a: 'l1\n l2\n', b: 's', c: 'k\n\n\n', d: '', e: 'x',
    });
  });
  it('folded block scalars keep more-indented lines and empty lines', () => {
    assert.deepEqual(parseYaml('d: >\n\n  f1\n  f2\n\n  f3\n    more\n  f4\n'), { d: '\nf1 f2\nf3\n  more\nf4\n' });
  });
  it('explicit indentation indicators, with chomping in either order', () => {
    assert.deepEqual(parseYaml('- |1\n  x\n- >2-\n    y\n- |-2\n   z\n'), [' x\n', '  y', ' z']);
  });
  it('the end of input ends a block scalar\'s last line as a line break would', () => {
    assert.deepEqual(parseYaml('k: |+\n  keep'), { k: 'keep\n' });
    assert.deepEqual(parseYamlAll('- |\n  clip\n- |-\n  strip\n- >\n  x\n   '), [['clip\n', 'strip', 'x\n \n']]);
    assert.deepEqual(parseYaml('- |+\n   '), ['\n']);
  });
});

describe('YAML core schema (plain scalars)', () => {
  const table: Array<[string, unknown]> = [
    ['null', null], ['Null', null], ['NULL', null], ['~', null], ['', null],
    ['true', true], ['True', true], ['TRUE', true], ['false', false], ['False', false], ['FALSE', false],
    ['12', 12], ['-3', -3], ['+4', 4], ['0o17', 15], ['0x1F', 31],
    ['1.5', 1.5], ['-.5', -0.5], ['1e3', 1000], ['2.5E-2', 0.025], ['1.', 1],
    ['.inf', Infinity], ['-.Inf', -Infinity], ['+.INF', Infinity], ['.nan', NaN],
    ['1_000', '1_000'], ['0b11', '0b11'], ['yes', 'yes'], ['on', 'on'], ['3.0.1', '3.0.1'], ['nULL', 'nULL'], ['~x', '~x'],
  ];
  for (const [text, value] of table) {
    it(`'${text}' → ${String(value)}`, () => assert.deepEqual(parseYaml(`k: ${text}`), { k: value }));
  }
});

describe('YAML comments, anchors, tags, keys', () => {
  it('comments after nodes, on their own lines, and before the first line', () => {
    assert.deepEqual(parseYaml('# head\nk: v # c\n   # indented\nk2: "v2" # c3\n# end'), { k: 'v', k2: 'v2' });
  });
  it('aliases share the anchored value; anchors on empty nodes and on keys', () => {
    const v = parseYaml('a: &x {k: 1}\nb: *x\nc: &e\nd: *e\n&k key: 1\ne: *k\nf: &r x\ng: *r\nf2: &r y\ng2: *r') as Record<string, unknown>;
    assert.equal(v.a, v.b);
    assert.deepEqual(v, { a: { k: 1 }, b: { k: 1 }, c: null, d: null, key: 1, e: 'key', f: 'x', g: 'x', f2: 'y', g2: 'y' });
  });
  it('rejects a billion-laughs alias bomb', () => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (const [prev, cur] of [['a', 'b'], ['b', 'c'], ['c', 'd'], ['d', 'e'], ['e', 'f'], ['f', 'g'], ['g', 'h'], ['h', 'i']]) {
      lines.push(`${cur}: &${cur} [${Array(10).fill(`*${prev}`).join(', ')}]`);
    }
    throwsYaml(lines.join('\n'), 'YAML: the document expands to more than 1000000 nodes through aliases at line 6, column 36');
  });
  it('tags are ignored except !!str, which keeps a plain scalar a string', () => {
    assert.deepEqual(parseYaml('a: !foo bar\nb: !!str 42\nc: !!int 42\nd: !<tag:yaml.org,2002:str> 7\ne: !!str\nf: !!map {x: 1}'), {
      a: 'bar', b: '42', c: 42, d: '7', e: '', f: { x: 1 },
    });
  });
  it('explicit keys, including collections as keys', () => {
    assert.deepEqual(parseYaml('? a\n: 1\n? [b, c]\n: 2\n? |\n  block\n: - 3\n? alone\n'), {
      a: 1, '["b","c"]': 2, 'block\n': [3], alone: null,
    });
  });
  it('non-string keys become strings; a duplicate key keeps the last value', () => {
    assert.deepEqual(parseYaml('1: a\ntrue: b\n~: c\n0x10: d\n2.50: e\nk: 1\nk: 2'), { 1: 'a', true: 'b', null: 'c', 16: 'd', 2.5: 'e', k: 2 });
  });
  it('`__proto__` becomes an own property and never sets the prototype', () => {
    const v = parseYaml('__proto__: {polluted: 1}\nx: {__proto__: 2}') as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.deepEqual(Object.keys(v), ['__proto__', 'x']);
    assert.deepEqual(Object.getOwnPropertyDescriptor(v, '__proto__')?.value, { polluted: 1 });
    assert.equal((v as { polluted?: unknown }).polluted, undefined);
  });
});

describe('YAML documents', () => {
  it('several documents, markers, directives', () => {
    assert.deepEqual(parseYamlAll('%YAML 1.2\n%TAG ! tag:example.com,2000:\n---\na: 1\n...\n--- b\n---\n--- |\n  t\n'), [{ a: 1 }, 'b', null, 't\n']);
  });
  it('an empty stream has no documents; parseYaml gives null', () => {
    assert.deepEqual(parseYamlAll('# only a comment\n'), []);
    assert.deepEqual(parseYamlAll('...\n'), []);
    assert.equal(parseYaml(''), null);
  });
  it('parseYaml rejects a stream with several documents', () => {
    throwsYaml('a: 1\n---\nb: 2\n', 'YAML: expected a single document but the stream holds 2 at line 2, column 1', parseYaml);
  });
});

describe('YAML 1.2 rules checked by the yaml-test-suite', () => {
  const rejected: Array<[string, string, string]> = [
    ['a tab as indentation', 'a:\n\tb: 1', 'tabs cannot be used for indentation at line 2, column 1'],
    ['a tab before a nested mapping entry', 'foo:\n  a: 1\n  \tb: 2', 'tabs cannot be used for indentation at line 3, column 3'],
    ['a tab before a compact sequence', '- \t- a', 'tabs cannot be used for indentation at line 1, column 3'],
    ['a tab before a compact mapping after ?', '?\tk: v', 'tabs cannot be used for indentation at line 1, column 2'],
    ['a tab-only line in a block scalar', 'a: |\n\t\nb: 1', 'tabs cannot be used for indentation at line 2, column 1'],
    ['a mapping on the --- line', '--- a: b', "a block mapping cannot start on the '---' line at line 1, column 5"],
    ['an anchored mapping on the --- line', '--- &x a: b', "a block mapping cannot start on the '---' line at line 1, column 5"],
    ['a sequence on the --- line', '--- - a', "a block sequence cannot start on the '---' line at line 1, column 5"],
    ['an anchor on an alias', 'a: &x 1\nb: &y *x', 'an alias cannot have an anchor or a tag at line 2, column 7'],
    ['an anchor on an alias used as a key', 'a: &x 1\n&y *x : 2', 'an alias cannot have an anchor or a tag at line 2, column 4'],
    ['a second anchor on the next line', 'a: &x\n  &y b', 'a node can have only one anchor at line 2, column 3'],
    ['a second tag on the next line', 'a: !!str\n  !!int 1', 'a node can have only one tag at line 2, column 3'],
    ['extra words after the %YAML version', '%YAML 1.2 foo\n---\n', "unexpected 'foo' after the %YAML version at line 1, column 11"],
    ['two %YAML directives', '%YAML 1.2\n%YAML 1.2\n---\n', 'a document can have only one %YAML directive at line 2, column 1'],
    ['a comment run into the %YAML version', '%YAML 1.1#x\n---\n', "invalid YAML version '1.1#x' at line 1, column 7"],
    ['a %YAML 2.0 directive', '%YAML 2.0\n---\n', "unsupported YAML version '2.0' at line 1, column 7"],
    ['a %YAML directive without a version', '%YAML\n---\n', "the %YAML directive needs a version such as '1.2' at line 1, column 6"],
    ['a directive without a name', '% x\n---\n', 'a directive needs a name at line 1, column 2'],
    ['a %TAG directive without a prefix', '%TAG !x\n---\n', 'the %TAG directive needs a tag handle and a prefix at line 1, column 6'],
    ['an invalid tag handle', '%TAG !bad x\n---\n', "invalid tag handle '!bad' at line 1, column 6"],
    ['a tag handle declared twice', '%TAG !e! a\n%TAG !e! b\n---\n', "the tag handle '!e!' is declared twice at line 2, column 6"],
    ['a tag handle declared for an earlier document only', '%TAG !e! tag:e,2000:\n--- !e!x a\n--- !e!y b', "undefined tag handle '!e!' at line 3, column 5"],
    ['a tag run into its content', '- !!str,x', "unexpected ',' after a node property at line 1, column 8"],
    ['an invalid verbatim tag', '- !<$:?> x', "invalid verbatim tag '!<$:?>' at line 1, column 3"],
    ['a flow sequence line indented as its parent', 'k: [a,\nb]', 'bad indentation of a flow collection entry at line 2, column 1'],
    ['a flow line indented by a tab only', '- [\n\tfoo,\n foo\n ]', 'bad indentation of a flow collection entry at line 2, column 2'],
    ['an implicit key in a flow sequence over two lines', '[ a\n : b ]', "an implicit key in a flow sequence must be on one line with its ':' at line 2, column 2"],
  ];
  for (const [what, text, message] of rejected) it(`rejects ${what}`, () => throwsYaml(text, `YAML: ${message}`));

  it('tabs still separate tokens, and indent nothing but flow content and scalar continuations', () => {
    assert.deepEqual(parseYamlAll('- foo:\t bar\n-\tbaz\n-\t-1\n- x:\n   \ty\n- a\n  \tb\n- [\n  \tc ]\n'), [
      [{ foo: 'bar' }, 'baz', -1, { x: 'y' }, 'a b', ['c']],
    ]);
    assert.deepEqual(parseYamlAll('\t{}\n'), [{}]);
    assert.deepEqual(parseYamlAll('a: 1\n\t\nb: 2'), [{ a: 1, b: 2 }]);
  });
  it('plain keys may start with `:`, `?` or `-` followed by a non-space', () => {
    assert.deepEqual(parseYaml(':foo: a\n::\n?b: c\n-d: e'), { ':foo': 'a', ':': null, '?b': 'c', '-d': 'e' });
  });
  it('the non-specific tag `!` and the string tag keep a plain scalar a string; other tags are ignored', () => {
    assert.deepEqual(parseYaml('- ! 12\n- !!str 12\n- !<tag:yaml.org,2002:str> 12\n- !x 12\n- !<!x> 12'), ['12', '12', '12', 12, 12]);
  });
  it('%TAG handles expand tags for the document that follows', () => {
    assert.deepEqual(parseYamlAll('%TAG !e! tag:e,2000:\n--- !e!x a\n...\n%TAG !! tag:e:\n---\n- !!str 12\n'), ['a', [12]]);
    assert.deepEqual(parseYamlAll('%TAG !yaml! tag:yaml.org,2002:\n---\n!yaml!str 12\n'), ['12']);
  });
  it('properties may be split over lines, an anchor on one and a tag on the next', () => {
    assert.deepEqual(parseYaml('a: &x\n  !!str 12\nb: *x'), { a: '12', b: '12' });
  });
  it('in a flow mapping a key and its `:` may be on different lines', () => {
    assert.deepEqual(parseYaml('{ a\n : b }'), { a: 'b' });
  });
  it('a closing bracket may sit at the indentation of the block around it', () => {
    assert.deepEqual(parseYaml('k: [\n  a,\n]\nm: {\n  b: 1\n}'), { k: ['a'], m: { b: 1 } });
  });
});

describe('YAML errors carry the line and column', () => {
  const cases: Array<[string, string]> = [
    ['a: "unterminated', 'unterminated double-quoted scalar at line 1, column 4'],
    ["a: 'x\n", 'unterminated single-quoted scalar at line 1, column 4'],
    ['a:\n  b: 1\n c: 2', 'bad indentation of a mapping entry at line 3, column 2'],
    ['- a\n- [b]\n   - c', 'bad indentation of a sequence entry at line 3, column 4'],
    ['a: *nope', "unknown alias '*nope' at line 1, column 4"],
    ['a: b: c', 'mapping values are not allowed here at line 1, column 5'],
    ['a: 1\n- b', "expected a mapping entry 'key: value' at this indentation at line 2, column 1"],
    ['x: - a', 'block sequence entries are not allowed here at line 1, column 4'],
    ['[a, b', 'unterminated flow sequence at line 1, column 1'],
    ['{a: 1 b: 2}', "expected ',' or '}' in a flow mapping at line 1, column 8"],
    ['[a, , b]', "unexpected ',' in a flow sequence at line 1, column 5"],
    ['a: "\\q"', "invalid escape sequence '\\q' at line 1, column 5"],
    ['a: |x\n  t', 'invalid block scalar header at line 1, column 5'],
    ['key: "value"# c', 'a comment must be separated from the content before it by white space at line 1, column 13'],
    ['q: "a\nb"', 'bad indentation of a multi-line double-quoted scalar at line 2, column 1'],
    ['k: >\n \n  \n x', 'a leading empty line of a block scalar is indented more than its first content line at line 2, column 1'],
    ['%YAML 1.2\n...\n', "directives must be followed by '---' at line 2, column 1"],
    ['- a\nb: 1', 'unexpected content after the end of the document at line 2, column 1'],
    ['a: &x &y b', 'a node can have only one anchor at line 1, column 7'],
    ['a: @b', "unexpected '@' at line 1, column 4"],
    ['['.repeat(2000), 'collections nested deeper than 1000 levels at line 1, column 1001'],
  ];
  for (const [text, message] of cases) {
    it(JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text), () => throwsYaml(text, `YAML: ${message}`));
  }
  it('the error exposes line and column', () => {
    assert.throws(() => parseYaml('a:\n  b: 1\n c: 2'), { line: 3, column: 2 });
  });
});

/** yaml-test-suite cases this parser cannot pass, with the reason. None are needed today. */
const SUITE_SKIPS: Record<string, string> = {};

describe('yaml-test-suite (test/fixtures/corpus/yaml-suite)', () => {
  const suite = new URL('yaml-suite/', CORPUS);
  const ids = readdirSync(suite, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();
  it('holds the 50 cases described in SOURCES.md', () => assert.equal(ids.length, 50));
  let passed = 0;
  for (const id of ids) {
    const dir = new URL(`${id}/`, suite);
    const input = readFileSync(new URL('in.yaml', dir), 'utf8');
    const isError = existsSync(new URL('error', dir));
    it(`${id}${isError ? ' (error)' : ''}`, { skip: SUITE_SKIPS[id] }, () => {
      if (isError) {
        assert.throws(() => parseYamlAll(input), { name: 'IngestError' });
      } else {
        assert.deepEqual(parseYamlAll(input), parseJsonStream(readFileSync(new URL('in.json', dir), 'utf8')));
      }
      passed++;
    });
  }
  it('every case not on the skip list passed', () => assert.equal(passed, ids.length - Object.keys(SUITE_SKIPS).length));
});

describe('YAML corpus files', () => {
  const files = ['openapi', 'asyncapi'].flatMap((d) =>
    readdirSync(new URL(`${d}/`, CORPUS)).filter((f) => /\.ya?ml$/.test(f)).map((f) => `${d}/${f}`));
  it('finds the 17 YAML API descriptions', () => assert.equal(files.length, 17));
  for (const rel of files) {
    it(`${rel} parses; version, title and path/channel counts match expected.json`, () => {
      const doc = parseYaml(read(rel)) as Record<string, Record<string, unknown>>;
      const exp = expected[rel];
      if (rel.startsWith('openapi/')) {
        // Entries added for detection cases name only the version and the endpoint count.
        if (exp.title !== undefined) assert.equal(doc.info.title, exp.title);
        if (exp.paths !== undefined) assert.equal(Object.keys(doc.paths ?? {}).length, exp.paths);
        // expected.json writes Swagger versions as `swagger 2.0` or `2.0`.
        assert.equal(String(doc.openapi ?? doc.swagger), String(exp.spec_version).replace(/^swagger /, ''));
      } else {
        assert.equal(doc.asyncapi, exp.spec_version);
        assert.equal(Object.keys(doc.channels ?? {}).length, exp.channels);
      }
    });
  }
  it('openai-openapi-2024-01.yaml: aliases of anchored block scalars, in well under 300 ms', () => {
    const text = read('openapi/openai-openapi-2024-01.yaml');
    const started = performance.now();
    const doc = parseYaml(text) as { openapi: string; paths: Record<string, { get: { parameters: Array<{ name: string; description: string }> } }> };
    const elapsed = performance.now() - started;
    assert.equal(doc.openapi, '3.0.0');
    assert.equal(Object.keys(doc.paths).length, 36);
    const limit = 'A limit on the number of objects to be returned. Limit can range between 1 and 100, and the default is 20.\n';
    assert.equal(doc.paths['/assistants'].get.parameters[0].description, limit);
    assert.equal(doc.paths['/threads/{thread_id}/messages'].get.parameters.find((p) => p.name === 'limit')?.description, limit);
    assert.ok(elapsed < 300, `parse took ${elapsed.toFixed(1)} ms`);
  });
});
