/**
 * The client generator of docs/api.md#generating-a-client, without the network:
 * `scripts/generate-client.mjs` turns the server's OpenAPI document (built here from the route
 * table) into one TypeScript file; the project's TypeScript (compiler API, strict) type-checks
 * it with `scripts/client/walkthrough-generated.ts`, each `@ts-expect-error` there is shown to
 * mark a real error, and the walk-through then runs (via tsx) against a server on port 0.
 * A small synthetic document checks the schema translation keyword by keyword and the runtime
 * (URL, query, headers, key, statuses) through an injected `fetch`; documents with keywords
 * or features the generator does not handle are refused with a message naming the place.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { startTestServer, tempDir, type TestServer } from './helpers/server.js';
import { buildOpenApiDocument } from '../src/openapi/document.js';
import { SYNTHETIC, SYNTHETIC_USE } from './helpers/client-synthetic.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const GENERATOR = join(REPO, 'scripts', 'generate-client.mjs');
const run = promisify(execFile);

let srv: TestServer;
let dir: string;
/** The generator's runs over the served document and the synthetic one, which the tests below use. */
let generated: Awaited<ReturnType<typeof generate>>;
let syntheticGenerated: Awaited<ReturnType<typeof generate>>;
before(async () => {
  srv = await startTestServer();
  dir = tempDir('sw-client-gen-');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify(buildOpenApiDocument(srv.routes), null, 2));
  copyFileSync(join(REPO, 'scripts', 'client', 'walkthrough-generated.ts'), join(dir, 'walkthrough.ts'));
  mkdirSync(join(dir, 'synthetic'));
  writeFileSync(join(dir, 'synthetic', 'openapi.json'), JSON.stringify(SYNTHETIC));
  writeFileSync(join(dir, 'synthetic', 'use.ts'), SYNTHETIC_USE);
  generated = await generate(['openapi.json', '-o', 'client.ts']);
  syntheticGenerated = await generate([join('synthetic', 'openapi.json'), '-o', join('synthetic', 'client.ts')]);
});
after(async () => {
  await srv.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the generator (asynchronously: the test server answers from this process). */
async function generate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [GENERATOR, ...args], { cwd: dir });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: err.code ?? -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

/** Type-checks `files` (relative to the temp dir) strictly, with @types/node or with the DOM library; diagnostics as "file:line: message". */
function typecheck(files: string[], lib: 'node' | 'dom' = 'node'): string[] {
  const options: ts.CompilerOptions = {
    strict: true, noEmit: true, skipLibCheck: true, target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: lib === 'node' ? ['lib.es2023.d.ts'] : ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: lib === 'node' ? ['node'] : [], typeRoots: [join(REPO, 'node_modules', '@types')],
  };
  const program = ts.createProgram(files.map((f) => join(dir, f)), options);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? `${d.file.fileName.slice(dir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}` : '-';
    return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

/**
 * Copies `file` to `copy` with each `// @ts-expect-error` turned into a plain comment, and
 * returns the 1-based lines that followed one (which must now be errors).
 */
function withoutDirectives(file: string, copy: string): number[] {
  const lines = readFileSync(join(dir, file), 'utf8').split('\n');
  const marked: number[] = [];
  const out = lines.map((l, i) => {
    if (!/^\s*\/\/ @ts-expect-error\b/.test(l)) return l;
    marked.push(i + 2);
    return l.replace('@ts-expect-error', '(expected error)');
  });
  writeFileSync(join(dir, copy), out.join('\n'));
  return marked;
}

describe('generating the client from the served document', () => {
  test('one TypeScript file: every component schema a named export, one method per operationId', () => {
    assert.deepEqual([generated.code, generated.stderr, generated.stdout], [0, '', '']);
    const doc = JSON.parse(readFileSync(join(dir, 'openapi.json'), 'utf8'));
    const client = readFileSync(join(dir, 'client.ts'), 'utf8');
    for (const name of Object.keys(doc.components.schemas)) {
      assert.match(client, new RegExp(`^export (interface ${name} \\{|type ${name} = )`, 'm'), `component ${name}`);
    }
    const methods = [...client.matchAll(/^ {2}(\w+)\(init\??: /gm)].map((m) => m[1]);
    const ids = Object.values<Record<string, { operationId: string }>>(doc.paths).flatMap((item) => Object.values(item).map((o) => o.operationId));
    assert.deepEqual(methods, ids);
    // A few translations, exactly: an enum, a nullable property, a closed object, the anyOf.
    assert.match(client, /^export type ConversationStatus = "open" \| "waiting" \| "solved";$/m);
    assert.match(client, /^ {2}nextCursor: string \| null;$/m);
    assert.match(client, /^export interface CreateMessageRequest \{\n {2}\/\*\* `user`: from the customer; `agent`: from support\. \*\/\n {2}role: "user" \| "agent";\n {2}body: string;\n\}$/m);
    assert.match(client, /^export type CreateSourceRequest = \{[^]*?url: string;[^]*?\} \| \{[^]*?content: string;[^]*?\};$/m);
    assert.match(client, /^ {2}addMessage\(init: \{\n {4}path: \{[^]*?"Idempotency-Key"\?: string;[^]*?body: CreateMessageRequest;\n {2}\}\): Promise<\n {4}\| \{ ok: true; status: 201; data: MessageResponse; headers: Headers \}\n {4}\| \{ ok: false; status: 400 \| 401 \| 403 \| 404 \| 409 \| 413 \| 415 \| 422 \| 429 \| 431 \| 500 \| 503; data: ErrorResponse; headers: Headers \}\n {2}>;$/m);
  });

  test('read from the server\'s URL, the document gives the same file', async () => {
    const r = await generate([`${srv.url}/api/v1/openapi.json`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, readFileSync(join(dir, 'client.ts'), 'utf8'));
  });

  test('the client and the walk-through type-check (strict, @types/node); the client alone with the DOM library', () => {
    assert.deepEqual(typecheck(['client.ts', 'walkthrough.ts']), []);
    assert.deepEqual(typecheck(['client.ts'], 'dom'), []);
  });

  test('each @ts-expect-error of the walk-through marks a real error: without the directive tsc reports that line', () => {
    const text = readFileSync(join(dir, 'walkthrough.ts'), 'utf8');
    for (const kind of ['wrong field name', 'missing required field', 'wrong enum value', 'wrong parameter type']) assert.ok(text.includes(`@ts-expect-error ${kind}`), kind);
    const marked = withoutDirectives('walkthrough.ts', 'walkthrough-bare.ts');
    assert.ok(marked.length >= 10, `${marked.length} directives`);
    const errors = typecheck(['client.ts', 'walkthrough-bare.ts']);
    const lines = new Set(errors.map((e) => /^walkthrough-bare\.ts:(\d+):/.exec(e)?.[1]).map(Number));
    assert.deepEqual(marked.filter((l) => !lines.has(l)), [], `lines accepted once their directive is gone\n${errors.join('\n')}`);
    assert.deepEqual(errors.filter((e) => !/^walkthrough-bare\.ts:/.test(e) || !marked.includes(Number(e.split(':')[1]))), [], 'no other error');
  });

  test('the walk-through runs to the end against a server on port 0', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', join(dir, 'walkthrough.ts')], {
      cwd: REPO, env: { ...process.env, BASE_URL: srv.url, API_KEY: srv.key },
    });
    const lines = stdout.trim().split('\n');
    assert.equal(lines.length, 4, stdout);
    assert.match(lines[0], /^conversation [0-9a-f-]{36}: open → waiting → solved; message [0-9a-f-]{36} replayed$/);
    assert.match(lines[1], /^messages: 2; issue #1 from conversation [0-9a-f-]{36}$/);
    assert.match(lines[2], /^source [0-9a-f-]{36} ready: GET \/pets, POST \/pets, DELETE \/pets\/\{petId\}$/);
    assert.match(lines[3], /^search "delete pet": [1-3] results; unknown issue → 404 not_found; empty query → 400 invalid_request$/);
  });
});

describe('the schema translation and the runtime, on a synthetic document', () => {
  test('every keyword gives the type it means: the valid values type-check, each wrong one is an error', () => {
    assert.deepEqual([syntheticGenerated.code, syntheticGenerated.stderr], [0, '']);
    assert.deepEqual(typecheck(['synthetic/client.ts', 'synthetic/use.ts']), []);
    const marked = withoutDirectives('synthetic/use.ts', 'synthetic/bare.ts');
    const errors = typecheck(['synthetic/client.ts', 'synthetic/bare.ts']);
    const lines = new Set(errors.map((e) => Number(/^synthetic\/bare\.ts:(\d+):/.exec(e)?.[1])));
    assert.ok(marked.length >= 10);
    assert.deepEqual(marked.filter((l) => !lines.has(l)), [], errors.join('\n'));
  });

  test('the client sends the documented request and returns every documented status; an undocumented one rejects', async () => {
    const sent: Array<{ url: string; method?: string; headers: Record<string, string>; body?: unknown }> = [];
    const answers: Array<[number, string, string | null]> = [];
    const fake: typeof fetch = async (url, init) => {
      sent.push({ url: String(url), method: init?.method, headers: { ...(init?.headers as Record<string, string>) }, body: init?.body });
      const [status, type, body] = answers.shift()!;
      return new Response(body, { status, headers: type ? { 'content-type': type } : {} });
    };
    const mod = await import(pathToFileURL(join(dir, 'synthetic', 'client.ts')).href);
    const api = mod.createClient({ baseUrl: 'http://api.test/', apiKey: 'k1', fetch: fake });
    const pet = { id: 7, kind: 'cat', 'weird-key': 7 };

    answers.push([200, 'application/json; charset=utf-8', JSON.stringify(pet)]);
    const got = await api.getPet({ path: { petId: 7 }, query: { tags: ['a', 'b c'], skip: undefined }, headers: { 'X-Trace': 't1' } });
    assert.deepEqual({ ok: got.ok, status: got.status, data: got.data }, { ok: true, status: 200, data: pet });
    assert.deepEqual(sent.pop(), { url: 'http://api.test/v2/pets/7?tags=a&tags=b+c', method: 'GET', headers: { Accept: 'application/json', 'X-Trace': 't1', Authorization: 'Bearer k1' }, body: undefined });

    answers.push([404, 'application/problem+json', '{"title":"no pet"}']);
    const missing = await api.getPet({ path: { petId: 'a/b' } });
    assert.deepEqual([missing.ok, missing.status, missing.data], [false, 404, { title: 'no pet' }]);
    assert.equal(sent.pop()!.url, 'http://api.test/v2/pets/a%2Fb');
    answers.push([404, 'application/problem+json', '{"title":"no pet"}']);
    await assert.rejects(mod.unwrap(api.getPet({ path: { petId: 1 } })), (e: any) => e instanceof mod.ApiError && e.status === 404 && e.data.title === 'no pet');

    answers.push([204, '', null]);
    const pong = await api.ping();
    assert.deepEqual([pong.ok, pong.status, pong.data], [true, 204, undefined]);
    assert.equal(sent.pop()!.headers.Authorization, undefined, 'an operation with `security: []` is sent without the key');

    answers.push([500, 'application/json', '{"title":"down"}']);
    const failed = await api.createPet({ body: pet });
    assert.deepEqual([failed.ok, failed.status, failed.data], [false, 500, { title: 'down' }], '`default` answers any other status');
    assert.deepEqual(sent.pop(), { url: 'http://api.test/v2/pets', method: 'POST', headers: { Accept: 'application/json', Authorization: 'Bearer k1', 'Content-Type': 'application/json' }, body: JSON.stringify(pet) });

    answers.push([418, 'text/plain', 'teapot']);
    await assert.rejects(api.getPet({ path: { petId: 1 } }), { message: 'GET /pets/{petId} answered 418, a status the document does not list for it' });
    await assert.rejects(async () => api.getPet({ path: {} }), { name: 'TypeError', message: 'GET /pets/{petId}: path parameter petId is missing' });
  });
});

describe('what the generator refuses', () => {
  const base = () => structuredClone(SYNTHETIC) as any;
  const refuse = async (doc: unknown, message: string) => {
    const file = join('synthetic', 'refused.json');
    writeFileSync(join(dir, file), JSON.stringify(doc));
    rmSync(join(dir, 'synthetic', 'refused.ts'), { force: true });
    const r = await generate([file, '-o', join('synthetic', 'refused.ts')]);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stderr.split('\n')[0].split(' (the generator understands')[0], `generate-client: unsupported document: ${message}`);
    assert.equal(existsSync(join(dir, 'synthetic', 'refused.ts')), false, 'nothing written');
  };

  test('a schema keyword it does not understand, wherever it is, rather than emitting `unknown`', async () => {
    const cases: Array<[string, (d: any) => void, string]> = [
      ['not', (d) => { d.components.schemas.Pet.properties.nick.not = { const: '' }; }, '#/components/schemas/Pet/properties/nick'],
      ['patternProperties', (d) => { d.components.schemas.Scores.patternProperties = { '^x': { type: 'string' } }; }, '#/components/schemas/Scores'],
      ['prefixItems', (d) => { d.components.schemas.Pet.properties.tags.prefixItems = [{ type: 'string' }]; }, '#/components/schemas/Pet/properties/tags'],
      ['readOnly', (d) => { d.components.schemas.Person.properties.name.readOnly = true; }, '#/components/schemas/Person/properties/name'],
      ['if', (d) => { d.paths['/pets/{petId}'].get.parameters[0].schema.items.if = {}; }, '#/paths/~1pets~1{petId}/get/parameters/0/schema/items'],
      ['unevaluatedProperties', (d) => { d.paths['/pets'].post.responses.default.content['application/json'].schema = { type: 'object', unevaluatedProperties: false }; }, '#/paths/~1pets/post/responses/default/content/application~1json/schema'],
    ];
    for (const [keyword, edit, where] of cases) {
      const doc = base();
      edit(doc);
      await refuse(doc, `${where}: unsupported schema keyword "${keyword}"`);
    }
  });

  test('features the runtime could not honour, and names that would break the file', async () => {
    const cases: Array<[(d: any) => void, string]> = [
      [(d) => { d.paths['/ping'].get.parameters = [{ name: 'session', in: 'cookie', schema: { type: 'string' } }]; }, '#/paths/~1ping/get/parameters/0: parameters in cookie are not supported'],
      [(d) => { d.paths['/ping'].get.parameters = [{ name: 'f', in: 'query', schema: { type: 'object' } }]; }, '#/paths/~1ping/get/parameters/0: an object-valued query parameter is not supported'],
      [(d) => { d.paths['/ping'].get.parameters = [{ name: 'f', in: 'query', style: 'pipeDelimited', schema: { type: 'array' } }]; }, '#/paths/~1ping/get/parameters/0: parameter style pipeDelimited is not supported'],
      [(d) => { delete d.paths['/ping'].get.operationId; }, '#/paths/~1ping/get: operationId undefined is not an identifier (every operation needs one: it names the client\'s method)'],
      [(d) => { d.paths['/pets'].post.requestBody.content = { 'application/xml': {} }; }, '#/paths/~1pets/post/requestBody: request body media types application/xml are not supported (only JSON)'],
      [(d) => { d.components.securitySchemes.bearer = { type: 'apiKey', in: 'header', name: 'X-Key' }; }, '#/paths/~1pets~1{petId}/get/security: scheme bearer is not HTTP bearer, the only one the client sends (apiKey as a bearer token)'],
      [(d) => { d.components.schemas.Pet.properties.owner = { $ref: 'other.json#/Owner' }; }, '#/components/schemas/Pet/properties/owner/$ref: $ref other.json#/Owner is not a schema under #/components/schemas'],
      [(d) => { d.components.schemas.ApiError = { type: 'string' }; }, '#/components/schemas/ApiError: the component name collides with the generated client\'s own ApiError'],
      [(d) => { d.components.schemas.Headers = { type: 'string' }; }, '#/components/schemas/Headers: the component name would shadow the global Headers the generated client uses'],
      [(d) => { d.openapi = '2.0'; }, '#/openapi: not an OpenAPI 3.0 or 3.1 document (openapi: "2.0")'],
    ];
    for (const [edit, message] of cases) {
      const doc = base();
      edit(doc);
      await refuse(doc, message);
    }
  });

  test('bad usage exits 2; an unreadable document exits 1', async () => {
    assert.equal((await generate([])).code, 2);
    assert.equal((await generate(['a.json', 'b.json'])).code, 2);
    const r = await generate(['no-such.json']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^generate-client: ENOENT: no such file or directory, open 'no-such\.json'\n$/);
  });
});
