/**
 * Errors as data (docs/api.md#errors): the validator throws a field path and a reason, the
 * message is made from them in one place; domain errors (src/core/errors.ts) carry no HTTP
 * knowledge and are mapped to `{code, error}` by one table (`domainAnswer`), to the CLI's
 * words by another (`cliMessage`); a refusal crosses the admin socket as data.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError, InvalidInputError, NotFoundError, domainErrorFromData, formatPath } from '../src/core/errors.js';
import { ApiError, domainAnswer } from '../src/http/errors.js';
import { s, validate, validateInput } from '../src/http/schema.js';
import { parseQuery } from '../src/http/pipeline.js';
import { cliMessage } from '../src/admin/cliMessages.js';
import { callAdminSocket } from '../src/admin/socket.js';
import { startTestServer } from './helpers/server.js';

const body = s.object({
  subject: s.string({ minLength: 1, maxLength: 200 }),
  customer: s.object({ email: s.string({ format: 'email' }) }),
  items: s.optional(s.array(s.object({ name: s.string() }))),
  text: s.optional(s.string()), links: s.optional(s.array(s.string())),
}, { requireAnyOf: ['text', 'links'] });

/** The error `fn` throws. */
function thrown(fn: () => unknown): unknown {
  try { fn(); } catch (e) { return e; }
  return assert.fail('expected a throw');
}

test('validateInput throws an InvalidInputError with the JSON path as data and the reason', () => {
  const cases: Array<[unknown, (string | number)[], string, string]> = [
    [{ subject: 'x', customer: { email: 'nope' }, text: 't' }, ['customer', 'email'], 'must be a valid email address', 'customer.email must be a valid email address'],
    [{ subject: 'x', customer: { email: 'a@b.co' }, items: [{ name: 'a' }, { name: 1 }], text: 't' }, ['items', 1, 'name'], 'must be a string', 'items[1].name must be a string'],
    [{ subject: 'x', customer: { email: 'a@b.co', extra: 1 }, text: 't' }, ['customer', 'extra'], 'is not an allowed property', 'customer.extra is not an allowed property'],
    [{ customer: { email: 'a@b.co' }, text: 't' }, ['subject'], 'is required', 'subject is required'],
    [[], [], 'must be a JSON object', 'the file must be a JSON object'],
  ];
  for (const [value, path, reason, sentence] of cases) {
    const e = thrown(() => validateInput(body, value));
    assert.ok(e instanceof InvalidInputError, String(e));
    assert.deepEqual({ path: e.path, reason: e.reason }, { path, reason });
    assert.equal(e.describe('the file'), sentence);
  }
  // "One of these is required": the alternatives are data too, and name the subject.
  const e = thrown(() => validateInput(body, { subject: 'x', customer: { email: 'a@b.co' } }));
  assert.ok(e instanceof InvalidInputError);
  assert.deepEqual({ path: e.path, reason: e.reason, alternatives: e.alternatives }, { path: [], reason: 'is required', alternatives: [['text'], ['links']] });
  assert.equal(e.describe('the body'), 'text or links is required');
});

test('a request\'s validation error is an ApiError made from the InvalidInputError it keeps as cause', () => {
  const e = thrown(() => validate(body, { subject: 'x', customer: { email: 'nope' }, text: 't' }));
  assert.ok(e instanceof ApiError);
  assert.deepEqual(e.body(), { code: 'invalid_request', error: 'Request body is invalid: customer.email must be a valid email address.' });
  assert.ok(e.cause instanceof InvalidInputError);
  assert.deepEqual(e.cause.path, ['customer', 'email']);
  // The whole body is "the body" in an answer, as before.
  assert.deepEqual((thrown(() => validate(body, 'x')) as ApiError).body(), { code: 'invalid_request', error: 'Request body is invalid: the body must be a JSON object.' });
});

test('query errors are InvalidInputErrors about the parameter, answered as query problems', () => {
  const query = s.object({ limit: s.optional(s.integer({ minimum: 1, maximum: 100 })), q: s.string({ minLength: 1 }), all: s.optional(s.boolean()) });
  const cases: Array<[string, string[], string]> = [
    ['q=x&limit=abc', ['limit'], 'Query parameter limit must be an integer from 1 to 100.'],
    ['q=x&limit=0', ['limit'], 'Query parameter limit must be an integer from 1 to 100.'],
    ['q=x&q=y', ['q'], 'Query parameter q must be given once.'],
    ['q=x&nope=1', ['nope'], 'Query parameter nope is not supported.'],
    ['q=x&all=yes', ['all'], 'Query parameter all must be true or false.'],
    ['limit=5', ['q'], 'Query parameter q is required.'],
  ];
  for (const [qs, path, message] of cases) {
    const e = thrown(() => parseQuery(query, qs));
    assert.ok(e instanceof ApiError, String(e));
    assert.deepEqual({ body: e.body(), part: e.part }, { body: { code: 'invalid_request', error: message }, part: 'query' });
    assert.ok(e.cause instanceof InvalidInputError);
    assert.deepEqual(e.cause.path, path);
  }
});

test('domainAnswer: one table from domain errors to {code, error}; a not-found answer never names the record', () => {
  assert.deepEqual(domainAnswer(new NotFoundError()).body(), { code: 'not_found', error: 'Record not found.' });
  assert.deepEqual(domainAnswer(new NotFoundError({ entity: 'workspace', id: 'w-1' })).body(), { code: 'not_found', error: 'Record not found.' });
  assert.deepEqual(domainAnswer(new ConflictError('externalId "d" is already used by another conversation')).body(),
    { code: 'conflict', error: 'A record with this identifier already exists: externalId "d" is already used by another conversation.' });
  assert.deepEqual(domainAnswer(new InvalidInputError(['conversationId'], 'does not match a conversation in this workspace')).body(),
    { code: 'invalid_request', error: 'Request body is invalid: conversationId does not match a conversation in this workspace.' });
  assert.deepEqual(domainAnswer(new InvalidInputError(['limit'], 'must be given once'), 'query').body(),
    { code: 'invalid_request', error: 'Query parameter limit must be given once.' });
  const e = new ConflictError('x');
  assert.equal(domainAnswer(e).cause, e, 'the domain error is kept as the cause');
  assert.equal(domainAnswer(e).status, 409);
});

test('the CLI words each refusal from its parts: flags for arguments, JSON paths for an import file', () => {
  assert.equal(cliMessage('key.create', new InvalidInputError(['expiresAt'], 'must be an ISO 8601 date-time such as 2027-01-01T00:00:00Z')),
    '--expires-at must be an ISO 8601 date-time such as 2027-01-01T00:00:00Z');
  assert.equal(cliMessage('workspace.create', new InvalidInputError(['name'], 'is required (1 to 200 characters)')), '--name is required (1 to 200 characters)');
  assert.equal(cliMessage('customField.create', new InvalidInputError(['label'], 'must be 1 to 200 characters')), 'label must be 1 to 200 characters');
  assert.equal(cliMessage('import', new InvalidInputError(['options'], 'must not repeat an option').within(['customFields', 2])),
    'import file is invalid: customFields[2].options must not repeat an option.');
  assert.equal(cliMessage('import', new InvalidInputError([], 'must be a JSON object')), 'import file is invalid: the file must be a JSON object.');
  assert.equal(cliMessage('import', new ConflictError('externalId "d" is already used by another conversation')),
    'import refused: externalId "d" is already used by another conversation.');
  assert.equal(cliMessage('tag.create', new ConflictError('a tag named "x" already exists')), 'a tag named "x" already exists');
  assert.equal(cliMessage('tag.disable', new NotFoundError({ entity: 'tag', id: 't', inWorkspace: true })), 'no tag "t" in this workspace');
  assert.equal(cliMessage('key.revoke', new NotFoundError({ entity: 'key', id: 'k' })), 'no key "k"');
});

test('a domain error survives its data form (the admin socket\'s), and formatPath spells paths as the messages do', () => {
  const errors = [
    new InvalidInputError(['a', 0, 'b'], 'must be a string'),
    new InvalidInputError([], 'is required', [['text'], ['links']]),
    new NotFoundError({ entity: 'custom field', id: 'x', inWorkspace: true }),
    new NotFoundError(),
    new ConflictError('taken'),
  ];
  for (const e of errors) {
    const back = domainErrorFromData(JSON.parse(JSON.stringify(e.toData())));
    assert.ok(back, e.message);
    assert.equal(back.constructor, e.constructor);
    assert.deepEqual(back.toData(), e.toData());
    assert.equal(back.message, e.message);
  }
  for (const junk of [null, 'x', { kind: 'nope' }, { kind: 'invalid_input', path: [{}], reason: 'r' }, { kind: 'conflict' }]) assert.equal(domainErrorFromData(junk), undefined);
  assert.equal(formatPath([], 'the body'), 'the body');
  assert.equal(formatPath([0, 'name'], 'the body'), '[0].name');
  assert.equal(formatPath(['conversations', 1, 'messages', 0, 'role'], 'the file'), 'conversations[1].messages[0].role');
});

test('admin operations refuse with domain errors, and the admin socket hands the same errors to the CLI', async () => {
  const srv = await startTestServer();
  try {
    const ws = srv.workspaceId;
    // In-process: the operations throw domain errors, with the path in the import file.
    const inFile = await srv.admin.importData(ws, { customFields: [{ label: 'ok', type: 'text' }, { label: 'P', type: 'select' }] }).catch((e: unknown) => e);
    assert.ok(inFile instanceof InvalidInputError, String(inFile));
    assert.deepEqual({ path: inFile.path, reason: inFile.reason }, { path: ['customFields', 1, 'options'], reason: 'must list at least one option for a select field' });
    const dup = await srv.admin.importData(ws, { conversations: [{ externalId: 'd', subject: 'a', customer: { email: 'a@b.co' } }, { externalId: 'd', subject: 'b', customer: { email: 'c@d.co' } }] }).catch((e: unknown) => e);
    assert.ok(dup instanceof ConflictError, String(dup));
    assert.ok((await srv.admin.revokeKey('nope').catch((e: unknown) => e)) instanceof NotFoundError);

    // Through the running server's admin socket: the same errors arrive, as data.
    const cases: Array<[string, Record<string, unknown>, object]> = [
      ['key.create', { workspace: ws, expiresAt: 'tomorrow' }, new InvalidInputError(['expiresAt'], 'must be an ISO 8601 date-time such as 2027-01-01T00:00:00Z')],
      ['key.revoke', { id: 'nope' }, new NotFoundError({ entity: 'key', id: 'nope' })],
      ['tag.disable', { workspace: ws, id: 'nope' }, new NotFoundError({ entity: 'tag', id: 'nope', inWorkspace: true })],
      ['import', { workspace: ws, data: { tags: [{ name: '' }] } }, new InvalidInputError(['tags', 0, 'name'], 'must be 1 to 64 characters')],
    ];
    for (const [op, args, expected] of cases) {
      const e = await callAdminSocket(srv.dataDir, op, args).then(() => assert.fail(`${op} was not refused`), (x: unknown) => x);
      assert.equal((e as object).constructor, expected.constructor, `${op}: ${String(e)}`);
      assert.deepEqual((e as InvalidInputError).toData(), (expected as InvalidInputError).toData());
    }
    await srv.admin.createDefinition('tag', ws, { name: 'vip' });
    const taken = await callAdminSocket(srv.dataDir, 'tag.create', { workspace: ws, input: { name: 'VIP' } }).catch((e: unknown) => e);
    assert.ok(taken instanceof ConflictError);
    assert.equal(cliMessage('tag.create', taken), 'a tag named "VIP" already exists');
  } finally { await srv.close(); }
});
