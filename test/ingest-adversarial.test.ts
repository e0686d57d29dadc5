/**
 * Every detection and parse step on adversarial inputs of ~100 KB (repetitive prefixes, unclosed
 * comments, strings and tags, deep nesting, one-character lines, `<!---->` runs…) finishes within
 * 100 ms of CPU: a generous bound against catastrophic (super-linear) behaviour, not a speed
 * target. Each step runs once to warm up, then the best of three runs is measured. Throwing an IngestError is a fine
 * outcome.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { detectContent, parseStructured } from '../src/ingest/detect/detect.js';
import { MAX_DOCUMENTS, parseContent } from '../src/ingest/analyze.js';
import { parseJsonText, parseJsonDocuments } from '../src/ingest/parsers/json.js';
import { parseYaml } from '../src/ingest/parsers/yaml.js';
import { parseOpenApi } from '../src/ingest/parsers/openapi.js';
import { parseAsyncApi } from '../src/ingest/parsers/asyncapi.js';
import { parsePostman } from '../src/ingest/parsers/postman.js';
import { parseGraphql, parseGraphqlIntrospection } from '../src/ingest/parsers/graphql.js';
import { parseProto } from '../src/ingest/parsers/proto.js';
import { parseWsdl } from '../src/ingest/parsers/wsdl.js';
import { parseXml } from '../src/ingest/parsers/xml.js';
import { parseMarkdown } from '../src/ingest/parsers/markdown.js';
import { extractLinks, parseHtml } from '../src/ingest/parsers/html.js';
import { chunkDocuments } from '../src/ingest/chunk.js';
import { tokenize } from '../src/search/tokenize.js';
import { IngestError } from '../src/ingest/types.js';

const SIZE = 100_000;
const rep = (unit: string, size = SIZE): string => unit.repeat(Math.ceil(size / unit.length));
// Linear parsers take 1–10 ms here; a quadratic one takes seconds. The margin absorbs a loaded
// machine (other threads of this process, cold caches), which once put a 10 ms step at 55 ms.
const LIMIT_MS = 100;

/**
 * Runs `fn` once to warm up, then measures it; an IngestError counts as an answer. The measure
 * is the process's CPU time, not the wall clock: on a machine shared with other work the wall
 * clock also counts the time the test was not scheduled, which says nothing about the parser.
 */
function bounded(name: string, fn: () => unknown): number {
  const run = (): number => {
    const c0 = process.cpuUsage();
    try { fn(); } catch (e) { if (!(e instanceof IngestError)) throw e; }
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1000;
  };
  run();
  // The best of three: a garbage collection of earlier steps' leftovers can land in any one run.
  const ms = Math.min(run(), run(), run());
  assert.ok(ms < LIMIT_MS, `${name} took ${ms.toFixed(1)} ms on ~100 KB (bound ${LIMIT_MS} ms)`);
  return ms;
}

/** Inputs every text step sees, besides its own. */
const COMMON: Record<string, string> = {
  'one char': rep('a'),
  'one-char lines': rep('a\n'),
  'blank lines': rep('\n'),
  'spaces': rep(' '),
  'empty comments then x': rep('<!---->') + 'x',
  // 287 bytes that once kept the ingestion worker busy for a minute (exponential backtracking).
  '40 empty comments then x': '<!---->'.repeat(40) + 'x',
  'unclosed comment': '<!--' + rep('a'),
  'comment openers': rep('<!--'),
  'unclosed tag': '<a ' + rep('b'),
  'tag openers': rep('<'),
  'unclosed string': '"' + rep('a'),
  'quotes': rep('"'),
  'backslashes': rep('\\'),
  'deep brackets': rep('['),
  'deep braces': rep('{'),
  'deep nesting closed': rep('[', SIZE / 2) + rep(']', SIZE / 2),
  'digits': rep('1'),
  'digits then letter': rep('1') + 'a',
  'hashes': rep('#'),
  'heading lines': rep('# h\n'),
  'image openers': rep('!['),
  'link openers': rep('[a]'),
  'dashes': rep('-'),
  'star-space': rep('* '),
  'colons': rep('a: '),
  'yaml indents': rep('- ') + 'x',
  'type keyword': 'type ' + rep('a'),
  'schema words': rep('schema '),
  'message words': rep('message '),
  'definitions': rep('<definitions '),
  'mixed unicode': rep('é’\u2028\u00a0'),
};

const TEXT_STEPS: Record<string, (s: string) => unknown> = {
  detect: (s) => detectContent(s),
  'detect (YAML media type)': (s) => detectContent(s, 'application/yaml'),
  'detect (HTML media type)': (s) => detectContent(s, 'text/html'),
  'parse auto': (s) => parseContent('auto', s),
  'structured (JSON/YAML)': (s) => parseStructured(s),
  json: (s) => parseJsonText(s),
  yaml: (s) => parseYaml(s),
  'graphql SDL': (s) => parseGraphql(s),
  proto: (s) => parseProto(s),
  wsdl: (s) => parseWsdl(s),
  xml: (s) => parseXml(s),
  // As ingestion runs them: with the per-source document cap, counted before sections are built.
  markdown: (s) => parseMarkdown(s, MAX_DOCUMENTS),
  html: (s) => parseHtml(s, MAX_DOCUMENTS),
  links: (s) => extractLinks(s, 'https://example.com/a/'),
  chunk: (s) => chunkDocuments([{ kind: 'section', title: 't', text: s }]),
  tokenize: (s) => tokenize(s),
};

/** Inputs aimed at one step each. */
const DETECT_OWN = [
  rep('"openapi": '), 'k: v\n' + rep('"openapi\\": 1\n'), 'k: v\n' + rep('x\n'), 'k: v\n' + rep('openapi: [\n'), '---\n' + rep('  k: v\n'), rep('--- '),
  '<?xml version="1.0"?>' + rep('<!-- c -->') + '<definitions', '<!DOCTYPE a [' + rep('<!ENTITY a "b">'), '<x:definitions ' + rep('a="b" '), '<definitions a="' + rep('>'),
  '{' + rep('"openapi":1,'), '{' + rep('"a":{"b":"c"},'), '{' + rep('{a: '), '[' + rep('"swagger":'),
];
const OWN: Record<string, string[]> = {
  detect: DETECT_OWN, 'detect (YAML media type)': DETECT_OWN, 'detect (HTML media type)': DETECT_OWN, 'parse auto': DETECT_OWN,
  json: [rep('[', SIZE / 2) + rep(']', SIZE / 2), '{"a":' + rep('"\\u00e9'), rep('{"a":1,'), '[' + rep('1e1,') + '1]'],
  yaml: [
    rep('a:\n  '), rep('- [') , rep('? '), rep('&a '), rep('*a '), rep('!!str '), "'" + rep("''"), rep('key: |\n'), rep('{a: '), rep('a: b\n') + 'c',
    // Properties on lines of their own once recursed per line until the stack overflowed.
    'a: ' + rep('&a\n  '), 'a: ' + rep('!t\n  ') + 'x',
    // Pairs in one flow sequence, on one line and on many; tabs after indicators; tag directives.
    '[' + rep('a: b, ') + ']', '[' + rep('a: b,\n ') + ']', rep('- \t'), rep('%TAG !a! x\n'), 'k: [\n' + rep(' a,\n'),
  ],
  'graphql SDL': [rep('type A { a: B } '), 'type A { ' + rep('a: [') , '"""' + rep('a'), rep('# c\n'), rep('directive @a on '), rep('union U = A | ')],
  proto: [rep('message A { '), 'syntax = "proto3"; message A { string a = ' + rep('1'), rep('/* '), '/*' + rep('*'), rep('"\\x'), rep('option (a).b = ')],
  wsdl: [rep('<definitions xmlns="http://schemas.xmlsoap.org/wsdl/">'), '<definitions xmlns="http://schemas.xmlsoap.org/wsdl/">' + rep('<portType name="p">'), rep('<![CDATA['), rep('<?a '), rep('<!DOCTYPE a [')],
  xml: [rep('<a>'), rep('<a b="c" '), rep('&#'), rep('<a:'), '<' + rep('a')],
  markdown: [rep('```\n'), rep('~~~ a\n'), rep('a\n=\n'), rep('> '), rep('    code\n'), rep('![a](b'), rep('[a](b'), rep('# ![' ), '# ' + rep('[x]')],
  html: [rep('<h1>'), rep('<a href="'), rep('<p>'), rep('<li>x'), rep('&nbsp;'), rep('<script>'), rep('<table><tr><td>'), '<title>' + rep('a')],
  chunk: [rep('a. '), rep('a '), rep('.'), rep('\n\n'), rep('\ud83d\ude00')],
  tokenize: [rep('aB'), rep('a_'), rep("a's "), rep('A'), rep('1.2.3 ')],
};

for (const [step, fn] of Object.entries(TEXT_STEPS)) {
  test(`${step}: every adversarial ~100 KB input within ${LIMIT_MS} ms`, () => {
    const inputs = { ...COMMON, ...Object.fromEntries((OWN[step] ?? []).map((s, i) => [`own ${i}: ${JSON.stringify(s.slice(0, 16))}`, s])) };
    const slow: string[] = [];
    for (const [name, input] of Object.entries(inputs)) {
      try { bounded(`${step} / ${name}`, () => fn(input)); } catch (e) { slow.push((e as Error).message); }
    }
    assert.deepEqual(slow, []);
  });
}

test(`value parsers (OpenAPI, AsyncAPI, Postman, GraphQL introspection, JSON documents) on wide and deep values within ${LIMIT_MS} ms`, () => {
  let deep: unknown = {};
  for (let i = 0; i < 2000; i++) deep = { a: deep, $ref: '#/a' };
  const wide = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, { $ref: `#/k${(i + 1) % 5000}` }]));
  const values: Record<string, unknown> = {
    'openapi refs cycle': { openapi: '3.0.0', info: { title: 't', version: '1' }, paths: { '/a': { get: { responses: { 200: { $ref: '#/paths/~1a/get/responses/200' } } } } }, components: { schemas: wide } },
    'openapi deep': { openapi: '3.0.0', info: { title: 't', version: '1' }, paths: {}, components: { schemas: { A: deep } } },
    'asyncapi deep': { asyncapi: '2.6.0', info: { title: 't', version: '1' }, channels: { a: { subscribe: { message: { payload: deep } } } } },
    'postman deep folders': (() => { let item: unknown = [{ name: 'r', request: { method: 'GET', url: 'https://e.com/a' } }]; for (let i = 0; i < 2000; i++) item = [{ name: `f${i}`, item }]; return { info: { name: 'c', schema: 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json' }, item }; })(),
    'introspection deep type refs': { __schema: { queryType: { name: 'Q' }, types: [{ kind: 'OBJECT', name: 'Q', fields: [{ name: 'a', args: [], type: (() => { let t: unknown = { kind: 'SCALAR', name: 'Int' }; for (let i = 0; i < 2000; i++) t = { kind: 'LIST', ofType: t }; return t; })() }] }] } },
    'json wide': wide,
  };
  const slow: string[] = [];
  for (const [name, v] of Object.entries(values)) {
    for (const [p, fn] of Object.entries({ openapi: parseOpenApi, asyncapi: parseAsyncApi, postman: parsePostman, introspection: parseGraphqlIntrospection, json: parseJsonDocuments })) {
      try { bounded(`${p} / ${name}`, () => fn(v)); } catch (e) { slow.push((e as Error).message.split('\n')[0]); }
    }
  }
  assert.deepEqual(slow, []);
});
