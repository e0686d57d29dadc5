/**
 * The contract every registered source kind fulfils (src/ingest/kinds.ts; docs/sources.md#source-types),
 * checked over the registry itself, so that a kind added to it is held to the same rules:
 *
 * - every content kind has real documents in `test/fixtures/corpus/` (the folders named in
 *   {@link CONTRACT}); each one, analyzed with `type: auto` and with the kind's own type, is
 *   that kind and yields the endpoints `expected.json` counts, with documents and chunks;
 * - malformed content of the kind fails with an IngestError carrying a line and a column, under
 *   its own type and under `auto` (then typed as what detection found);
 * - the enums, the unions and the documented table of types are the registry's.
 *
 * Facts particular to one kind (root fields, channels, services…) stay in its own test file.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { CREATE_TYPES, SOURCE_KINDS, SOURCE_TYPES, isContentType, type ContentType, type SourceType } from '../src/ingest/kinds.js';
import { parseContent, analyzeJob } from '../src/ingest/analyze.js';
import { detectContent } from '../src/ingest/detect/detect.js';
import { IngestError } from '../src/ingest/types.js';
import { CORPUS, PENDING_AUTO, expectedJson, readCorpus } from './helpers/corpus.js';

/** Malformed content of a kind and the exact error it gives. */
interface Malformed {
  content: string;
  message: string;
  line: number;
  column: number;
  /** The type a failure under `auto` is stored with (docs/sources.md#failed-sources). */
  autoType: SourceType;
}

/**
 * Per content kind: the corpus folders holding its documents, and one malformed input (or why
 * the kind has none). Typed over every content kind, so a new kind does not compile until it
 * names its corpus and its malformed input here.
 */
const CONTRACT: { readonly [K in ContentType]: { folders: readonly string[]; malformed: Malformed | { none: string } } } = {
  openapi: {
    folders: ['openapi'],
    malformed: { content: 'openapi: 3.0.0\ninfo:\n  title: "unterminated\n', message: 'YAML: unterminated double-quoted scalar at line 3, column 10', line: 3, column: 10, autoType: 'openapi' },
  },
  json: {
    folders: ['json'],
    malformed: { content: '{"id":0,}', message: 'JSON: Expected double-quoted property name at line 1, column 9', line: 1, column: 9, autoType: 'json' },
  },
  text: { folders: ['text', 'html'], malformed: { none: 'Markdown, plain text and HTML have no syntax errors: every text is read' } },
  graphql: {
    folders: ['graphql'],
    malformed: { content: 'type Query {\n  a: Int\n  b(x: Int: String\n}', message: "GraphQL: expected a name, found ':' at line 3, column 11", line: 3, column: 11, autoType: 'graphql' },
  },
  postman: {
    folders: ['postman'],
    // A collection names itself by no marker key: broken JSON of one is typed `json` under auto.
    malformed: {
      content: '{\n  "info": {"name": "C", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},\n  "item": [] "variable": []\n}\n',
      message: "JSON: Expected ',' or '}' after property value at line 3, column 14", line: 3, column: 14, autoType: 'json',
    },
  },
  asyncapi: {
    folders: ['asyncapi'],
    malformed: { content: 'asyncapi: 2.6.0\ninfo:\n  title: [unclosed\n', message: 'YAML: unterminated flow sequence at line 3, column 10', line: 3, column: 10, autoType: 'asyncapi' },
  },
  grpc: {
    folders: ['grpc'],
    malformed: { content: 'syntax = "proto3";\nservice S {\n  rpc A(B) returns (C)\n', message: "Proto: expected ';', found end of input at line 4, column 1", line: 4, column: 1, autoType: 'grpc' },
  },
  soap: {
    folders: ['soap'],
    malformed: {
      content: '<definitions xmlns="http://schemas.xmlsoap.org/wsdl/">\n<portType name="x">\n</definitions>',
      message: 'XML: mismatched closing tag </definitions>, expected </portType> at line 3, column 1', line: 3, column: 1, autoType: 'soap',
    },
  },
};

const EXPECTED = expectedJson<{ endpoints: number | null; valid_json?: boolean }>();
const CONTENT_KINDS = SOURCE_KINDS.filter((k) => k.input === 'content').map((k) => k.name as ContentType);

/** Asserts that `fn` throws an IngestError with exactly `m`'s message, line and column; returns it. */
function throwsMalformed(fn: () => unknown, m: { message: string; line: number; column: number }): IngestError {
  let caught: unknown;
  try { fn(); } catch (e) { caught = e; }
  assert.ok(caught instanceof IngestError, `expected an IngestError, got ${String(caught)}`);
  assert.deepEqual({ message: caught.message, line: caught.line, column: caught.column }, { message: m.message, line: m.line, column: m.column });
  return caught;
}

describe('the registry', () => {
  test('the stored type enum, in the order the API documents it', () => {
    assert.deepEqual(SOURCE_TYPES, ['openapi', 'json', 'url', 'website', 'text', 'graphql', 'postman', 'asyncapi', 'grpc', 'soap', 'github', 'notion', 'confluence', 'hubspot']);
  });

  test('the create enum is auto and every kind but the reserved ones', () => {
    assert.deepEqual(CREATE_TYPES, ['auto', ...SOURCE_KINDS.filter((k) => k.input !== 'reserved').map((k) => k.name)]);
    assert.deepEqual(SOURCE_KINDS.filter((k) => k.input === 'reserved').map((k) => k.name), ['notion', 'confluence', 'hubspot']);
  });

  test('every content kind is in this contract, and only those', () => {
    assert.deepEqual(Object.keys(CONTRACT).sort(), [...CONTENT_KINDS].sort());
    for (const k of SOURCE_KINDS) assert.equal(isContentType(k.name), k.input === 'content', k.name);
  });

  test('docs/sources.md lists every kind: a row per creatable type, a sentence for the reserved ones', () => {
    const doc = readFileSync(new URL('../docs/sources.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Source types'), doc.indexOf('## What ingestion extracts'));
    const rows = [...section.matchAll(/^\| `([a-z]+)` \|/gm)].map((m) => m[1]);
    assert.deepEqual(rows.sort(), SOURCE_KINDS.filter((k) => k.input !== 'reserved').map((k) => k.name).sort());
    for (const k of SOURCE_KINDS.filter((x) => x.input === 'reserved')) assert.ok(section.includes(`\`${k.name}\``), k.name);
  });

  test('where two kinds match the same content, the lower detection rank wins', () => {
    // Both marker keys: openapi before asyncapi.
    assert.equal(detectContent('{"asyncapi": "2.6.0", "openapi": "3.0.0"}').type, 'openapi');
    // A collection that also holds an introspection result: postman before graphql.
    assert.equal(detectContent('{"info": {"name": "C"}, "item": [], "__schema": {}}').type, 'postman');
    // A .proto with an `enum X {` line (which GraphQL SDL also starts with): grpc before graphql.
    assert.equal(detectContent('syntax = "proto3";\nenum Color {\n  RED = 0;\n}\n').type, 'grpc');
  });
});

for (const type of CONTENT_KINDS) {
  const { folders, malformed } = CONTRACT[type];
  describe(`kind ${type}`, () => {
    const files = folders.flatMap((f) => readdirSync(new URL(`${f}/`, CORPUS)).map((name) => `${f}/${name}`)).sort();

    test(`has corpus documents in ${folders.join(', ')}, each with an expected.json entry`, () => {
      assert.ok(files.length > 0);
      for (const f of files) assert.ok(EXPECTED[f], `${f} has no expected.json entry`);
    });

    for (const file of files) {
      // The JSONTestSuite `n_` case is malformed on purpose: it must fail with its position.
      if (EXPECTED[file]?.valid_json === false) {
        test(`${file}: malformed, fails with line and column under auto and as ${type}`, () => {
          const text = readCorpus(file);
          const m = { message: 'JSON: Expected double-quoted property name at line 1, column 9', line: 1, column: 9 };
          assert.equal(throwsMalformed(() => analyzeJob({ op: 'text', type: 'auto', text }), m).sourceType, type);
          throwsMalformed(() => parseContent(type, text), m);
        });
        continue;
      }
      test(`${file}: auto detects ${type}; auto and explicit give ${EXPECTED[file]?.endpoints ?? 0} endpoints, documents and chunks`, { skip: PENDING_AUTO[file] }, () => {
        const text = readCorpus(file);
        const auto = analyzeJob({ op: 'text', type: 'auto', text });
        assert.equal(auto.type, type);
        assert.equal(auto.record.endpoints.length, EXPECTED[file].endpoints ?? 0);
        assert.ok(auto.record.documents.length > 0, 'documents');
        assert.ok(auto.record.chunks.length > 0, 'chunks');
        // HTML is read as HTML: its documents are pages.
        if (file.startsWith('html/')) assert.ok(auto.record.documents.every((d) => d.kind === 'page'), 'pages');
        const explicit = parseContent(type, text);
        assert.equal(explicit.type, type);
        assert.equal(explicit.parsed.endpoints.length, auto.record.endpoints.length);
        assert.equal(explicit.parsed.documents.length, auto.record.documents.length);
      });
    }

    if ('none' in malformed) {
      test(`has no malformed input: ${malformed.none}`, () => {
        const text = '<div><p>unclosed <b>tags\n# and ``` fences\n';
        assert.equal(analyzeJob({ op: 'text', type, text }).type, type);
      });
    } else {
      test('malformed content fails with an IngestError carrying line and column, as its type and under auto', () => {
        throwsMalformed(() => analyzeJob({ op: 'text', type, text: malformed.content }), malformed);
        assert.equal(throwsMalformed(() => analyzeJob({ op: 'text', type: 'auto', text: malformed.content }), malformed).sourceType, malformed.autoType);
      });
    }
  });
}
