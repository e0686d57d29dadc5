/**
 * What client generators rely on in the OpenAPI document (docs/api.md#openapi-document), checked
 * without the network: every request and success body is a `$ref` to a named component, the
 * resources have their names (`Conversation`, `Issue`, `SourceSummary`, … `ErrorResponse`),
 * names are PascalCase identifiers that shadow no global type of TypeScript's ES and DOM
 * libraries, only real scopes are named, 431 is on every operation, and every body carries an
 * example that its schema and the server's validator accept. `scripts/client-typecheck.mjs`
 * runs a real generator (openapi-typescript) over the same document.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { startTestServer, type TestServer } from './helpers/server.js';
import { contractDocument, type OpenApiDocument } from './helpers/contract.js';
import { buildOpenApiDocument, ERROR_SCHEMA } from '../src/openapi/document.js';
import { resolveRef, schemaErrors, type JsonSchema } from './helpers/openapiValidate.js';
import { assertValid } from '../src/http/schema.js';
import { SCOPES } from '../src/auth/keys.js';
import type { Route } from '../src/http/route.js';
import type { ConversationAnswer } from './helpers/answers.js';

let srv: TestServer;
let doc: OpenApiDocument;
before(async () => {
  srv = await startTestServer();
  doc = contractDocument(srv.routes);
});
after(async () => { await srv.close(); });

const op = (id: string): any => {
  for (const item of Object.values<any>(doc.paths)) for (const o of Object.values<any>(item)) if (o.operationId === id) return o;
  throw new Error(`no operation ${id}`);
};
const refName = (schema: any): string | undefined => /^#\/components\/schemas\/(\w+)$/.exec(schema?.$ref ?? '')?.[1];
const successOf = (o: any) => Object.entries<any>(o.responses).find(([st]) => Number(st) < 300)![1];
const bodySchema = (o: any) => o.requestBody?.content['application/json'].schema;
/** The success body's media: JSON, or the event stream's text. */
const successMedia = (o: any) => successOf(o).content['application/json'] ?? successOf(o).content['text/event-stream'];
const responseSchema = (o: any) => successMedia(o).schema;
const component = (name: string): any => doc.components.schemas[name];

describe('named components', () => {
  test('every request body and every success body is a $ref to a named component', () => {
    for (const r of srv.routes) {
      const o = op(r.operationId);
      assert.ok(refName(responseSchema(o)), `${r.operationId}: success body ${JSON.stringify(responseSchema(o)).slice(0, 80)}`);
      if (r.body) assert.ok(refName(bodySchema(o)), `${r.operationId}: request body`);
      for (const [st, res] of Object.entries<any>(o.responses)) {
        if (Number(st) < 400) continue;
        const resolved = resolveRef(doc, res.$ref) as any;
        assert.deepEqual(resolved.content['application/json'].schema, { $ref: `#/components/schemas/${ERROR_SCHEMA}` }, `${r.operationId} ${st}`);
      }
    }
  });

  test('the resources have the names the spec and clients use, and are used where they belong', () => {
    const answer = (id: string) => refName(responseSchema(op(id)));
    const request = (id: string) => refName(bodySchema(op(id)));
    const prop = (name: string, key: string) => refName(component(name).properties[key]);
    const items = (name: string, key: string) => refName(component(name).properties[key].items);
    assert.equal(ERROR_SCHEMA, 'ErrorResponse');
    assert.equal(component('Error'), undefined);

    assert.deepEqual([answer('createConversation'), answer('retrieveConversation'), answer('updateConversation')], ['ConversationResponse', 'ConversationResponse', 'ConversationResponse']);
    assert.equal(prop('ConversationResponse', 'conversation'), 'Conversation');
    assert.deepEqual([answer('listConversations'), items('ConversationList', 'conversations')], ['ConversationList', 'Conversation']);
    assert.deepEqual([request('createConversation'), request('updateConversation'), request('addMessage')], ['CreateConversationRequest', 'UpdateConversationRequest', 'CreateMessageRequest']);
    assert.deepEqual([answer('addMessage'), prop('MessageResponse', 'message'), items('MessageList', 'messages')], ['MessageResponse', 'Message', 'Message']);

    assert.deepEqual([answer('retrieveIssue'), prop('IssueResponse', 'issue'), items('IssueList', 'issues')], ['IssueResponse', 'Issue', 'Issue']);
    assert.deepEqual([request('createIssue'), request('updateIssue')], ['CreateIssueRequest', 'UpdateIssueRequest']);

    assert.deepEqual([request('createSource'), answer('createSource'), answer('retrieveSource'), answer('rescanSource')], ['CreateSourceRequest', 'IngestionResult', 'IngestionResult', 'IngestionResult']);
    assert.deepEqual([prop('IngestionResult', 'source'), prop('IngestionResult', 'counts'), items('IngestionResult', 'documents'), items('IngestionResult', 'endpoints')],
      ['SourceSummary', 'IngestionCounts', 'SourceDocument', 'SourceEndpoint']);
    assert.deepEqual([answer('listSources'), items('SourceSummaryList', 'sources'), answer('updateSource'), prop('SourceResponse', 'source')], ['SourceSummaryList', 'SourceSummary', 'SourceResponse', 'SourceSummary']);
    assert.deepEqual([prop('SourceSummary', 'auth'), prop('SourceSummary', 'publicDocs')], ['SourceAuth', 'PublicDocsMetadata']);
    assert.deepEqual([answer('searchSources'), items('SearchResultList', 'results'), answer('deleteSource')], ['SearchResultList', 'SearchResult', 'DeletedSource']);
    assert.deepEqual([request('createLiveCheck'), answer('createLiveCheck')], ['LiveCheckRequest', 'LiveCheck']);

    for (const [id, list, key, item] of [
      ['listCustomFields', 'CustomFieldList', 'customFields', 'CustomField'], ['listTags', 'TagList', 'tags', 'Tag'],
      ['listStatuses', 'StatusList', 'statuses', 'Status'], ['listPriorities', 'PriorityList', 'priorities', 'Priority'],
      ['listAgents', 'AgentList', 'agents', 'Agent'], ['listClients', 'ClientList', 'clients', 'Client'],
    ]) assert.deepEqual([answer(id), items(list, key)], [list, item], id);
    assert.deepEqual([answer('retrieveAgent'), answer('retrieveClient'), answer('retrieveUsage'), answer('retrieveAnalytics')], ['AgentResponse', 'ClientResponse', 'Usage', 'Analytics']);
  });

  test('component names are PascalCase identifiers that shadow no global of TypeScript\'s ES and DOM libraries', () => {
    // Every top-level declaration of the libraries a browser or Node client compiles with.
    const dir = join('node_modules', 'typescript', 'lib');
    const globals = new Set<string>();
    for (const f of readdirSync(dir).filter((x) => /^lib\.(es\w*|dom|dom\.\w+|decorators|decorators\.legacy)(\.[\w.]+)?\.d\.ts$/.test(x))) {
      const sf = ts.createSourceFile(f, readFileSync(join(dir, f), 'utf8'), ts.ScriptTarget.Latest);
      for (const st of sf.statements) {
        if (ts.isVariableStatement(st)) for (const d of st.declarationList.declarations) globals.add(d.name.getText(sf));
        else if ('name' in st && st.name && ts.isIdentifier(st.name as ts.Node)) globals.add((st.name as ts.Identifier).text);
      }
    }
    assert.ok(globals.has('Error') && globals.has('Document') && globals.has('Response') && globals.size > 1000, `read ${globals.size} globals`);
    for (const kind of ['schemas', 'responses', 'parameters']) {
      for (const name of Object.keys(doc.components[kind])) {
        assert.match(name, /^[A-Z][A-Za-z0-9]*$/, `${kind}.${name}`);
        assert.ok(!globals.has(name), `${kind}.${name} shadows a global type`);
      }
    }
  });

  test('a body without a name of its own is named after its operation; reserved and clashing names are refused', () => {
    const base = (id: string, extra: Partial<Route> = {}): Route => ({
      method: 'POST', path: `/x/${id}`, operationId: id, summary: 's', tag: 'Meta', scope: null, handler: () => ({ status: 200, body: {} }),
      success: { status: 200, schema: { kind: 'object', properties: {} }, description: 'd' }, body: { kind: 'object', properties: {} }, ...extra,
    });
    const built = buildOpenApiDocument([base('doThing')]) as any;
    assert.equal(built.paths['/x/doThing'].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/DoThingRequest');
    assert.equal(built.paths['/x/doThing'].post.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/DoThingResponse');
    const named = (name: string, props = {}) => ({ kind: 'ref' as const, name, target: () => ({ kind: 'object' as const, properties: props }) });
    for (const bad of ['Error', 'Document', 'Response', 'lowerCase', 'With-Dash']) {
      assert.throws(() => buildOpenApiDocument([base('a', { success: { status: 200, schema: named(bad), description: 'd' } })]), /reserved or not a PascalCase identifier/, bad);
    }
    const one = named('Thing');
    assert.doesNotThrow(() => buildOpenApiDocument([base('a', { success: { status: 200, schema: one, description: 'd' } }), base('b', { success: { status: 200, schema: named('Thing'), description: 'd' } })]));
    assert.throws(() => buildOpenApiDocument([base('a', { success: { status: 200, schema: one, description: 'd' } }),
      base('b', { success: { status: 200, schema: named('Thing', { x: { kind: 'string' } }), description: 'd' } })]), /two different schemas are named Thing/);
  });
});

describe('what the descriptions and shapes say', () => {
  test('no text names a scope that does not exist; every required scope is a real one', () => {
    const named: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === 'string') for (const m of v.matchAll(/`([a-z]+:(?:read|write))`/g)) named.push(m[1]);
      else if (v && typeof v === 'object') Object.values(v).forEach(walk);
    };
    walk(doc);
    assert.ok(named.length > 30);
    assert.deepEqual([...new Set(named.filter((x) => !(SCOPES as readonly string[]).includes(x)))], []);
    for (const r of srv.routes) if (r.scope !== null && !r.auth) assert.ok((SCOPES as readonly string[]).includes(r.scope), r.operationId);
    assert.match(op('listTags').description, /Requires an API key with scope `definitions:read`, or `\*`\./);
    assert.match(op('listConversations').description, /`conversations:read` \(or `conversations:write`, which implies it\)/);
  });

  test('431 is documented on every operation, as the answer the HTTP parser gives before routing', async () => {
    for (const r of srv.routes) assert.deepEqual(op(r.operationId).responses['431'], { $ref: '#/components/responses/RequestHeaderFieldsTooLarge' }, r.operationId);
    // call() checks the answer against the document: headers, body, code.
    const r = await srv.call('POST', '/api/v1/conversations', { headers: { 'X-Big': 'a'.repeat(17 * 1024) }, body: {} });
    assert.equal(r.status, 431);
    assert.deepEqual(r.body, { code: 'request_header_fields_too_large', error: 'The request headers are too large.' });
  });

  test('create source: url or content (anyOf), type defaults to auto, URLs are format uri; the validator enforces the same rule', async () => {
    const body = component('CreateSourceRequest');
    // One alternative for the fetched types (url required, no content), one for the others (url or content).
    const [fetched, pasted] = body.oneOf;
    assert.deepEqual([fetched.properties.type.enum, fetched.required, fetched.properties.content],
      [['url', 'website', 'github'], ['type', 'url'], undefined]);
    assert.deepEqual(pasted.anyOf.map((b: any) => b.required), [['url'], ['content']]);
    for (const b of [fetched, ...pasted.anyOf]) {
      assert.equal(b.properties.url.format, 'uri');
      assert.equal(b.additionalProperties, false);
    }
    for (const b of pasted.anyOf) assert.equal(b.properties.type.default, 'auto');
    assert.match(body.description, /At least one of `url` and `content`/);
    assert.equal(component('UpdateSourceRequest').properties.url.format, 'uri');
    assert.equal(component('SourceSummary').properties.inputUrl.format, 'uri');
    for (const b of [{}, { name: 'x', type: 'text' }]) {
      const r = await srv.call('POST', '/api/v1/sources', { body: b });
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, { code: 'invalid_request', error: 'Request body is invalid: url or content is required.' });
    }
    const none = '(root): must match exactly one schema in oneOf (matched none)';
    assert.deepEqual(schemaErrors(body, { name: 'x' }, doc), [none]);
    assert.deepEqual(schemaErrors(body, { url: 'https://a.example/x', content: 'x' }, doc), []);
  });

  test('analytics from/to are format date with their rules; create issue and live checks state theirs', () => {
    const params = op('retrieveAnalytics').parameters as any[];
    const from = params.find((p) => p.name === 'from');
    const to = params.find((p) => p.name === 'to');
    assert.equal(from.schema.format, 'date');
    assert.equal(to.schema.format, 'date');
    assert.match(from.description, /Must not be after `to`, and the range from\.\.to is at most 366 days/);
    assert.equal(component('Analytics').properties.from.format, 'date');
    assert.match(component('CreateIssueRequest').properties.conversationId.description, /a conversation in the key's workspace.*matches no conversation of the workspace → 400/);
    assert.match(component('SourceEndpoint').properties.id.description, /A rescan replaces every document and endpoint of the source, with new ids/);
    assert.match(component('LiveCheckRequest').properties.endpointId.description, /Ids change when the source is rescanned/);
  });

  test('every tag has a description', () => {
    for (const t of doc.tags) assert.ok(typeof t.description === 'string' && t.description.length > 10, t.name);
  });
});

describe('examples', () => {
  test('every request body and success body has an example that its schema accepts', () => {
    for (const r of srv.routes) {
      const o = op(r.operationId);
      const res = successMedia(o);
      assert.ok(Object.hasOwn(res, 'example'), `${r.operationId}: no response example`);
      assert.deepEqual(schemaErrors(res.schema as JsonSchema, res.example, doc), [], `${r.operationId} response example`);
      if (!r.body) continue;
      const req = o.requestBody.content['application/json'];
      assert.ok(Object.hasOwn(req, 'example'), `${r.operationId}: no request example`);
      assert.deepEqual(schemaErrors(req.schema as JsonSchema, req.example, doc), [], `${r.operationId} request example`);
      // The server's own validator (the one that answers 400) accepts it too.
      assert.doesNotThrow(() => assertValid(r.body!, req.example), `${r.operationId}: the server refuses its request example`);
    }
  });

  test('the checker would catch a broken example (so the test above can fail)', () => {
    const o = op('createConversation');
    const req = o.requestBody.content['application/json'];
    assert.deepEqual(schemaErrors(req.schema, { ...req.example, subject: 5 }, doc), ['/subject: must be of type string (got integer)']);
    const res = successOf(op('retrieveUsage')).content['application/json'];
    assert.deepEqual(schemaErrors(res.schema, { ...res.example, extra: 1 }, doc), ['/extra: additional property not allowed']);
  });

  test('the create-conversation example, sent to the server, is created as its response example shows', async () => {
    const o = op('createConversation');
    const r = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: o.requestBody.content['application/json'].example });
    assert.equal(r.status, 201, r.text);
    const shown = successOf(o).content['application/json'].example.conversation;
    const strip = ({ id: _i, createdAt: _c, updatedAt: _u, customer: { id: _ci, ...customer }, ...rest }: any) => ({ ...rest, customer });
    assert.deepEqual(strip(r.body.conversation), strip(shown));
  });
});
