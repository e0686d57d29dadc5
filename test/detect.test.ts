import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectContent } from '../src/ingest/detect/detect.js';
import { IngestError } from '../src/ingest/types.js';
import { SecretBox } from '../src/core/secrets.js';

// Every corpus file's detected type, and the corpus's invalid JSON, are checked by the contract
// over the registry of kinds (test/source-kinds.test.ts).
const corpus = new URL('./fixtures/corpus/', import.meta.url);

test('auto detection uses the media type of a fetched document', () => {
  assert.equal(detectContent('openapi: 3.0.0\ninfo: {title: x, version: "1"}\npaths: {}\n', 'application/yaml').type, 'openapi');
  assert.equal(detectContent('<p>Hello</p>', 'text/html').html, true);
  assert.equal(detectContent('# Title\n\nSome text: with a colon\n').type, 'text');
  assert.equal(detectContent('type Query { a: Int }').type, 'graphql');
  assert.equal(detectContent('# a comment\nschema { query: Root }\ntype Root { a: Int }').type, 'graphql');
  assert.equal(detectContent('type the command below\n').type, 'text');
  assert.equal(detectContent('syntax = "proto3";\nmessage A { int32 x = 1; }').type, 'grpc');
});

test('auto detection reads the top-level keys of the whole document: after 8 KB, quoted, indented under ---, any API type', () => {
  const twilio = readFileSync(new URL('openapi/twilio-knowledge-v1.yaml', corpus), 'utf8');
  assert.ok(twilio.indexOf('\nopenapi: ') > 8192, 'the real file has its openapi key after the first 8 KB');
  assert.equal(detectContent(twilio).type, 'openapi');
  const filler = 'components:\n  schemas:\n' + Array.from({ length: 400 }, (_, i) => `    S${i}:\n      type: string\n`).join('');
  // Keys written quoted, as some generators do, after 8 KB.
  const quoted = filler.replace(/^(\s*)([A-Za-z0-9]+):/gm, '$1"$2":') + '"openapi": "3.0.0"\n"info": {"title": "Q", "version": "1"}\n"paths": {}\n';
  assert.ok(quoted.length > 8192);
  assert.equal(detectContent(quoted).type, 'openapi');
  assert.equal(detectContent(filler + "'swagger': '2.0'\ninfo: {title: S, version: '1'}\npaths: {}\n").type, 'openapi');
  assert.equal(detectContent('%YAML 1.2\n---\n  # c\n  asyncapi: 2.6.0\n  info: {title: A, version: "1"}\n  channels: {}\n').type, 'asyncapi');
  // The other API descriptions classifyValue knows, written in YAML.
  assert.equal(detectContent('info:\n  name: C\n  schema: https://schema.getpostman.com/json/collection/v2.1.0/collection.json\nitem: []\n').type, 'postman');
  assert.equal(detectContent('data:\n  __schema:\n    queryType: {name: Q}\n    types: []\n').type, 'graphql');
  // YAML flow style is no JSON but still YAML.
  assert.equal(detectContent("{openapi: 3.0.0, info: {title: F, version: '1'}, paths: {}}").type, 'openapi');
});

test('auto detection: the content decides before the media type of a fetched document', () => {
  const yaml = readFileSync(new URL('openapi/oai-v2.0-petstore-minimal.yaml', corpus), 'utf8');
  for (const mt of ['text/html', 'application/json', 'text/plain', 'application/octet-stream']) assert.equal(detectContent(yaml, mt).type, 'openapi', mt);
  const wsdl = readFileSync(new URL('soap/cxf-cxf1662-import-only.wsdl', corpus), 'utf8');
  assert.equal(detectContent(wsdl, 'text/html').type, 'soap');
  assert.equal(detectContent(wsdl, 'application/xml').type, 'soap');
  // A media type still settles what the content leaves open.
  assert.equal(detectContent('Hello: world\n', 'application/yaml').type, 'json');
  assert.equal(detectContent('Hello: world\n', 'text/html').html, true);
  assert.equal(detectContent('42', 'application/json').type, 'json');
});

test('auto detection: a WSDL by its root element, however long the prolog; not by a definitions element elsewhere', () => {
  const wsdl = readFileSync(new URL('soap/cxf-hello-world-rpclit.wsdl', corpus), 'utf8');
  const license = `<!--\n${'  Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file.\n'.repeat(120)}-->\n`;
  assert.ok(license.length > 8192);
  assert.equal(detectContent(wsdl.replace(/<wsdl:definitions/, `${license}<wsdl:definitions`)).type, 'soap');
  assert.equal(detectContent(`<?xml version="1.0"?>\n<!DOCTYPE definitions [\n<!ENTITY x "<y>">\n]>\n${wsdl.slice(wsdl.indexOf('<wsdl:definitions'))}`).type, 'soap');
  assert.equal(detectContent('<root><definitions xmlns="http://schemas.xmlsoap.org/wsdl/"/></root>').type, 'text');
  assert.equal(detectContent('<definitions name="glossary"><term>a</term></definitions>').type, 'text');
});

test('auto detection: prose with a colon on its first line is text, YAML data without an API key is not an API', () => {
  assert.equal(detectContent('Note: refunds take five days.\n\nAsk support if it takes longer.\n').type, 'text');
  assert.equal(detectContent('Subject: hello\nFrom: a@example.com\n\nBody text here.\n').type, 'text');
  assert.equal(detectContent('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n').type, 'text');
  assert.equal(detectContent('title: a\nnested:\n  openapi: 3.0.0\n').type, 'text', 'a nested openapi key names nothing');
});

test('auto detection: content that names an API description but does not parse fails with the parse error, typed as what it claimed', () => {
  const typeOf = (text: string): unknown => {
    try { detectContent(text); } catch (e) { assert.ok(e instanceof IngestError, String(e)); return [e.sourceType, e.message]; }
    return 'no error';
  };
  const [type, message] = typeOf('components:\n  schemas: {}\nopenapi: 3.0.0\ninfo: [\n') as [string, string];
  assert.equal(type, 'openapi');
  assert.match(message, /^YAML: .* at line \d+, column \d+$/);
  assert.equal((typeOf('asyncapi: 2.6.0\ninfo: {title: "unterminated\n') as string[])[0], 'asyncapi');
  // A truncated JSON download: its top-level key says what it was.
  const petstore = readFileSync(new URL('openapi/oai-v2.0-petstore.json', corpus), 'utf8');
  assert.equal((typeOf(petstore.slice(0, 2000)) as string[])[0], 'openapi');
  assert.equal((typeOf('{"data": {"openapi": "3.0.0"}, ') as string[])[0], 'json', 'a nested key names nothing');
  assert.equal((typeOf('{"id":0,}') as string[])[0], 'json');
});

test('secret box: round trip, bound to its context, tamper-evident, rotatable', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sw-secrets-'));
  const box = SecretBox.load(dir);
  const sealed = box.seal('s3cret-token', 'ws1/src1');
  assert.equal(box.open(sealed, 'ws1/src1'), 's3cret-token');
  assert.ok(!JSON.stringify(sealed).includes('s3cret'));
  assert.throws(() => box.open(sealed, 'ws1/src2'), /altered or belongs to another source/);
  assert.throws(() => box.open(sealed, 'ws2/src1'), /altered or belongs to another source/);
  const flipped = { ...sealed, ct: Buffer.from(Buffer.from(sealed.ct, 'base64').map((b, i) => (i === 0 ? b ^ 1 : b))).toString('base64') };
  assert.throws(() => box.open(flipped, 'ws1/src1'), /altered/);
  const kid = SecretBox.addKey(dir);
  const box2 = SecretBox.load(dir);
  assert.equal(box2.activeKid, kid);
  assert.equal(box2.open(sealed, 'ws1/src1'), 's3cret-token', 'old key ids still open');
  assert.equal(box2.seal('x', 'c').kid, kid);
});
