import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { parseProto } from '../src/ingest/parsers/proto.js';
import { CORPUS, expectedJson, throwsIngest } from './helpers/corpus.js';

const EXPECTED = expectedJson<{ endpoints: number | null; services?: number; rpc_kinds?: Record<string, number> }>();

const doc = (r: ReturnType<typeof parseProto>, title: string): string => {
  const d = r.documents.find((x) => x.title === title);
  assert.ok(d, `no document ${title}; have ${r.documents.map((x) => x.title).join(', ')}`);
  return d.text;
};

test('proto: rpc paths, streaming kinds, service documents and comments', () => {
  const r = parseProto(`// License header, detached by the blank line below.

syntax = "proto3";
package demo.v1;
import public "other.proto";
import "google/api/annotations.proto";

/* The chat service.
 * Second line. */
service Chat {
  option (svc.opt) = "x";
  // Says hello.
  rpc Hello(HelloRequest) returns (HelloReply); // trailing note
  rpc Listen(.demo.v1.HelloRequest) returns (stream HelloReply) {}
  rpc Upload(stream Chunk) returns (Summary) {
    option (google.api.http) = {
      post: "/v1/upload"
      additional_bindings { post: "/v1/upload:alt" body: "*" }
    };
    option deprecated = true;
  }
  rpc Talk(stream Note) returns (stream Note);
  ;
}
`);
  assert.equal(r.title, 'demo.v1');
  assert.deepEqual(r.endpoints, [
    { method: 'RPC', path: '/demo.v1.Chat/Hello', documentIndex: 0 },
    { method: 'RPC', path: '/demo.v1.Chat/Listen', documentIndex: 0 },
    { method: 'RPC', path: '/demo.v1.Chat/Upload', documentIndex: 0 },
    { method: 'RPC', path: '/demo.v1.Chat/Talk', documentIndex: 0 },
  ]);
  assert.equal(r.documents.length, 1);
  assert.equal(r.documents[0].kind, 'service');
  assert.equal(r.documents[0].title, 'Chat');
  assert.equal(r.documents[0].text, [
    'service demo.v1.Chat',
    'The chat service. Second line.',
    'option (svc.opt) = "x"',
    '',
    'RPCs:',
    '- rpc Hello(HelloRequest) returns (HelloReply) — unary',
    '  Says hello. trailing note',
    '- rpc Listen(.demo.v1.HelloRequest) returns (stream HelloReply) — server streaming',
    '- rpc Upload(stream Chunk) returns (Summary) — client streaming',
    '  option (google.api.http) = { post: "/v1/upload" additional_bindings { post: "/v1/upload:alt" body: "*" } }',
    '  option deprecated = true',
    '- rpc Talk(stream Note) returns (stream Note) — bidirectional streaming',
  ].join('\n'));
  assert.ok(!r.documents[0].text.includes('License'), 'detached comments are not descriptions');
});

test('proto: no package → /Service/Method and the first service is the title', () => {
  const r = parseProto('service A { rpc X(M) returns (M); }\nservice B { rpc Y(M) returns (M); }\nmessage M {}');
  assert.equal(r.title, 'A');
  assert.deepEqual(r.endpoints.map((e) => [e.path, e.documentIndex]), [['/A/X', 0], ['/B/Y', 1]]);
  assert.equal(doc(r, 'M'), 'message M\n\nNo fields.');
});

test('proto: messages — nested names, oneof, map, reserved, extensions, enums, options and comments', () => {
  const r = parseProto(`syntax = "proto3";
package p;
// An outer message.
message Outer {
  option (my.opt).sub = { a: 1 b { c: "}" } };
  reserved 2, 15, 9 to 11;
  reserved "foo", "bar";
  // The id.
  string id = 1 [json_name = "ID", (v.rules).string = { min_len: 1 }];
  map<string, Inner> items = 3; // Items by key.
  repeated int64 nums = 4 [packed = true];
  oneof choice {
    option (o) = true;
    // A text choice.
    string text = 5;
    Inner inner = 6;
  }
  message Inner {
    /* Deeper doc. */
    message Deeper { bool ok = 1; }
    double value = 1;
  }
  enum Kind {
    option allow_alias = true;
    KIND_UNSPECIFIED = 0;
    NEG = -1; // Negative.
    HEX = 0x1F [deprecated = true];
  }
}
`);
  assert.deepEqual(r.documents.map((d) => `${d.kind}:${d.title}`), ['message:Outer', 'message:Outer.Inner', 'message:Outer.Inner.Deeper']);
  assert.equal(doc(r, 'Outer'), [
    'message p.Outer',
    'An outer message.',
    '',
    'Fields:',
    '- string id = 1 [json_name = "ID", (v.rules).string = { min_len: 1 }] — The id.',
    '- map<string, Inner> items = 3 — Items by key.',
    '- repeated int64 nums = 4 [packed = true]',
    '- oneof choice (at most one of)',
    '  - string text = 5 — A text choice.',
    '  - Inner inner = 6',
    '',
    '- option (my.opt).sub = { a: 1 b { c: "}" } }',
    '- reserved 2, 15, 9 to 11',
    '- reserved "foo", "bar"',
    '- enum Kind',
    '  - KIND_UNSPECIFIED = 0',
    '  - NEG = -1 — Negative.',
    '  - HEX = 0x1F [deprecated = true]',
  ].join('\n'));
  assert.equal(doc(r, 'Outer.Inner.Deeper'), 'message p.Outer.Inner.Deeper\nDeeper doc.\n\nFields:\n- bool ok = 1');
  assert.match(doc(r, 'Outer.Inner'), /^message p\.Outer\.Inner\n\nFields:\n- double value = 1$/);
  assert.deepEqual(r.endpoints, []);
  assert.equal(r.title, 'p');
});

test('proto: proto2 labels, groups, extensions and extend blocks', () => {
  const r = parseProto(`syntax = "proto2";
message SearchResponse {
  extensions 100 to max [verification = UNVERIFIED];
  repeated group Result = 1 {
    required string url = 2;
    optional string title = 3 [default = "none"];
  }
  optional .pkg.Other other = 4;
  extend Base { optional int32 ext_field = 101; }
}
extend google.protobuf.MessageOptions {
  optional string my_option = 51234;
}
enum Top { A = 0; }
`);
  assert.deepEqual(r.documents.map((d) => d.title), ['SearchResponse', 'SearchResponse.Result']);
  const outer = doc(r, 'SearchResponse');
  assert.ok(outer.includes('- repeated group Result = 1'));
  assert.ok(outer.includes('- optional .pkg.Other other = 4'));
  assert.ok(outer.includes('- extensions 100 to max [verification = UNVERIFIED]'));
  assert.ok(outer.includes('- extend Base:\n  - optional int32 ext_field = 101'));
  assert.equal(doc(r, 'SearchResponse.Result'), 'message SearchResponse.Result\n\nFields:\n- required string url = 2\n- optional string title = 3 [default = "none"]');
  assert.equal(r.title, undefined);
});

test('proto: editions syntax, string escapes and adjacent string literals', () => {
  const r = parseProto(`edition = "2023";
option features.field_presence = IMPLICIT;
option (x) = "a\\x41\\101\\n" 'b\\'c';
option (y) = -inf;
option (z) = -1.5e3;
package e;
message M { string s = 1 [features.field_presence = EXPLICIT]; }
`);
  assert.equal(r.title, 'e');
  assert.equal(doc(r, 'M'), 'message e.M\n\nFields:\n- string s = 1 [features.field_presence = EXPLICIT]');
});

test('proto: syntax errors report exact messages with line and column', () => {
  throwsIngest(() => parseProto('syntax = "proto3";\nservice S {\n  rpc A(B) returns (C)\n}'), "Proto: expected ';', found '}' at line 4, column 1", 4, 1);
  throwsIngest(() => parseProto('message A {\n  string s = "x";\n}'), 'Proto: expected a field number, found a string at line 2, column 14', 2, 14);
  throwsIngest(() => parseProto('message A {'), "Proto: unexpected end of input, expected '}' to close message A at line 1, column 12");
  throwsIngest(() => parseProto('syntax = "proto4";'), 'Proto: unknown syntax "proto4" at line 1, column 1');
  throwsIngest(() => parseProto('foo bar;'),
    "Proto: expected a top-level declaration (syntax, package, import, option, message, enum, extend, service), found 'foo' at line 1, column 1");
  throwsIngest(() => parseProto('option (a) = { x: { y: 1 }'), 'Proto: unterminated aggregate option value at line 1, column 14');
  throwsIngest(() => parseProto('enum E { A = -; }'), "Proto: expected an enum value number, found ';' at line 1, column 15");
  throwsIngest(() => parseProto('service S { rpc A(B) returns C; }'), "Proto: expected '(', found 'C' at line 1, column 30");
  throwsIngest(() => parseProto('service S { rpc A(stream .) returns (C); }'), "Proto: expected a message type, found ')' at line 1, column 27");
});

test('proto: lexical errors report exact messages with line and column', () => {
  throwsIngest(() => parseProto('message A {\n  string s = 1 [default = "abc];\n}'), 'Proto: unterminated string at line 2, column 27', 2, 27);
  throwsIngest(() => parseProto('message A { int32 a = 1; }\n  #'), "Proto: unexpected character '#' at line 2, column 3", 2, 3);
  throwsIngest(() => parseProto('\n/* abc'), 'Proto: unterminated /* comment at line 2, column 1', 2, 1);
  throwsIngest(() => parseProto('message A { int32 a = 0x; }'), 'Proto: invalid number at line 1, column 23');
  throwsIngest(() => parseProto('option x = "a\\q";'), 'Proto: invalid escape sequence in string at line 1, column 12');
});

test('proto: `stream` can still be a message type name', () => {
  const r = parseProto('service S { rpc A(stream) returns (stream stream); }\nmessage stream {}');
  assert.match(r.documents[0].text, /rpc A\(stream\) returns \(stream stream\) — server streaming/);
});

for (const file of readdirSync(new URL('grpc/', CORPUS)).filter((f) => f.endsWith('.proto')).sort()) {
  test(`proto corpus: grpc/${file}`, () => {
    const expected = EXPECTED[`grpc/${file}`];
    assert.ok(expected, `no expected.json entry for grpc/${file}`);
    const r = parseProto(readFileSync(new URL(`grpc/${file}`, CORPUS), 'utf8'));
    assert.equal(r.endpoints.length, expected.endpoints);
    assert.ok(r.documents.length > 0);
    for (const d of r.documents) {
      assert.ok(d.kind === 'service' || d.kind === 'message');
      assert.ok(d.title.length > 0 && d.text.trim().length > 0);
    }
    if (expected.services !== undefined) assert.equal(r.documents.filter((d) => d.kind === 'service').length, expected.services);
    for (const e of r.endpoints) {
      assert.equal(e.method, 'RPC');
      assert.match(e.path, /^\/[\w.]+\/\w+$/);
      const d = r.documents[e.documentIndex!];
      assert.equal(d.kind, 'service');
      assert.ok(d.text.includes(`rpc ${e.path.split('/')[2]}(`));
    }
    if (expected.rpc_kinds) {
      const text = r.documents.filter((d) => d.kind === 'service').map((d) => d.text).join('\n');
      const count = (k: string): number => text.split(`) — ${k}\n`).length - 1 + (text.endsWith(`) — ${k}`) ? 1 : 0);
      assert.deepEqual(
        { unary: count('unary'), server_streaming: count('server streaming'), client_streaming: count('client streaming'), bidi_streaming: count('bidirectional streaming') },
        expected.rpc_kinds,
      );
    }
    assert.ok(r.title);
  });
}
