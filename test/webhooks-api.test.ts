/**
 * Webhook endpoints over HTTP (docs/api.md#webhooks): create, list, retrieve, update, delete,
 * the secret shown only at create and rotation (never in a GET, a replay, a log, a file or the
 * CLI), every refusal with its exact body, the cap of 16, scopes, and the WEBHOOK_* settings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { runCli, runServerToExit } from './helpers/child.js';
import { loadConfig, ConfigError } from '../src/core/config.js';

interface Endpoint {
  object: string; id: string; url: string; events: string[]; description: string; enabled: boolean;
  status: string; disabledReason: string | null; createdAt: string; updatedAt: string; secret?: string | null;
}
interface EndpointAnswer { webhookEndpoint: Endpoint }
interface EndpointList { object: string; hasMore: boolean; nextCursor: string | null; webhookEndpoints: Endpoint[] }

const HOOKS = '/api/v1/webhook-endpoints';
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const invalid = (detail: string) => ({ code: 'invalid_request', error: `Request body is invalid: ${detail}.` });

async function withServer(env: Record<string, string>, fn: (srv: TestServer) => Promise<void>): Promise<void> {
  const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000', ...env } });
  try { await fn(srv); } finally { await srv.close(); }
}

test('create shows the secret once; GET, list, PATCH and DELETE never do', () => withServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, async (srv) => {
  const created = await srv.call<EndpointAnswer>('POST', HOOKS, { body: { url: 'http://127.0.0.1:9/hooks#frag', events: ['issue.created', 'conversation.created', 'issue.created'], description: 'CRM' } });
  assert.equal(created.status, 201, created.text);
  const e = created.body.webhookEndpoint;
  assert.match(e.secret!, SECRET);
  assert.equal(Buffer.from(e.secret!.slice(6), 'base64').length, 32);
  const { secret: _s, ...shown } = e;
  assert.deepEqual(shown, {
    object: 'webhook_endpoint', id: e.id, url: 'http://127.0.0.1:9/hooks', events: ['issue.created', 'conversation.created'], description: 'CRM',
    enabled: true, status: 'enabled', disabledReason: null, createdAt: '2026-06-29T12:00:00.000Z', updatedAt: '2026-06-29T12:00:00.000Z',
  });
  const got = await srv.call<EndpointAnswer>('GET', `${HOOKS}/${e.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.body.webhookEndpoint, shown);
  const list = await srv.call<EndpointList>('GET', HOOKS);
  assert.deepEqual(list.body, { object: 'list', hasMore: false, nextCursor: null, webhookEndpoints: [shown] });

  srv.clock.advance(1000);
  const patched = await srv.call<EndpointAnswer>('PATCH', `${HOOKS}/${e.id}`, { body: { events: ['*'], description: '', url: 'http://127.0.0.1:9/v2' } });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual(patched.body.webhookEndpoint, { ...shown, events: ['*'], description: '', url: 'http://127.0.0.1:9/v2', updatedAt: '2026-06-29T12:00:01.000Z' });
  const same = await srv.call<EndpointAnswer>('PATCH', `${HOOKS}/${e.id}`, { body: {} });
  assert.equal(same.body.webhookEndpoint.updatedAt, '2026-06-29T12:00:01.000Z', 'an empty PATCH changes nothing');
  const off = await srv.call<EndpointAnswer>('PATCH', `${HOOKS}/${e.id}`, { body: { enabled: false } });
  assert.deepEqual([off.body.webhookEndpoint.enabled, off.body.webhookEndpoint.status, off.body.webhookEndpoint.disabledReason], [false, 'disabled', null]);

  const del = await srv.call('DELETE', `${HOOKS}/${e.id}`);
  assert.deepEqual([del.status, del.body], [200, { object: 'webhook_endpoint', id: e.id, deleted: true }]);
  assert.equal((await srv.call('GET', `${HOOKS}/${e.id}`)).status, 404);
  assert.equal((await srv.call('GET', `${HOOKS}/${e.id}/deliveries`)).status, 404);
  assert.deepEqual((await srv.call('DELETE', `${HOOKS}/${e.id}`)).body, { code: 'not_found', error: 'Record not found.' });
  // Existence before the body's url: an unknown endpoint with a bad url is a 404, not a 400.
  const gone = await srv.call('PATCH', `${HOOKS}/${e.id}`, { body: { url: 'gopher://127.0.0.1/' } });
  assert.deepEqual([gone.status, gone.body], [404, { code: 'not_found', error: 'Record not found.' }]);
}));

test('an idempotent replay of create answers the same endpoint with secret null: the secret is never stored', () => withServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, async (srv) => {
  const body = { url: 'http://127.0.0.1:9/replay', events: ['*'] };
  const first = await srv.call<EndpointAnswer>('POST', HOOKS, { body, headers: { 'Idempotency-Key': 'hook-1' } });
  assert.equal(first.status, 201);
  const again = await srv.call<EndpointAnswer>('POST', HOOKS, { body, headers: { 'Idempotency-Key': 'hook-1' } });
  assert.equal(again.status, 201);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(again.body, { webhookEndpoint: { ...first.body.webhookEndpoint, secret: null } });
  assert.equal((await srv.call<EndpointList>('GET', HOOKS)).body.webhookEndpoints.length, 1);
  const rotated = await srv.call<EndpointAnswer>('POST', `${HOOKS}/${first.body.webhookEndpoint.id}/rotate-secret`, { headers: { 'Idempotency-Key': 'rot-1' } });
  assert.match(rotated.body.webhookEndpoint.secret!, SECRET);
  assert.notEqual(rotated.body.webhookEndpoint.secret, first.body.webhookEndpoint.secret);
  const rotAgain = await srv.call<EndpointAnswer>('POST', `${HOOKS}/${first.body.webhookEndpoint.id}/rotate-secret`, { headers: { 'Idempotency-Key': 'rot-1' } });
  assert.equal(rotAgain.body.webhookEndpoint.secret, null);
  // close() scans every answer since, every log line and every file of the data dir for both secrets and for "whsec_".
}));

test('every refusal of a create or update, with its exact body', () => withServer({}, async (srv) => {
  const refusals: Array<[unknown, unknown]> = [
    [{ url: 'not a url', events: ['*'] }, invalid('url must be an absolute http or https URL')],
    [{ url: 'ftp://example.com/hook', events: ['*'] }, invalid('url must use http or https, not ftp')],
    [{ url: 'https://user:pw@example.com/hook', events: ['*'] }, invalid('url must not contain a user name or password')],
    [{ url: 'http://127.0.0.1:8080/hook', events: ['*'] }, invalid('the host of http://127.0.0.1:8080/hook cannot be reached from this server')],
    [{ url: 'http://[::1]/hook', events: ['*'] }, invalid('the host of http://[::1]/hook cannot be reached from this server')],
    [{ url: 'http://169.254.169.254/latest', events: ['*'] }, invalid('the host of http://169.254.169.254/latest cannot be reached from this server')],
    [{ url: 'http://10.0.0.7/hook', events: ['*'] }, invalid('the host of http://10.0.0.7/hook cannot be reached from this server')],
    [{ url: 'http://no-such-host.invalid/hook', events: ['*'] }, invalid('the host of http://no-such-host.invalid/hook cannot be reached from this server')],
    [{ url: 'http://127.0.0.1/hook', events: ['conversation.deleted'] },
      invalid('events[0] must be one of conversation.created, conversation.updated, conversation.handoff_requested, message.created, issue.created, issue.updated, source.created, source.updated, source.deleted, answer.created, *')],
    [{ url: 'http://127.0.0.1/hook', events: [] }, invalid('events must have at least 1 item')],
    [{ url: 'http://127.0.0.1/hook' }, invalid('events is required')],
    [{ events: ['*'] }, invalid('url is required')],
    [{ url: 'http://127.0.0.1/hook', events: ['*'], secret: 'whsec_mine' }, invalid('secret is not an allowed property')],
    [{ url: 'x'.repeat(2001), events: ['*'] }, invalid('url must be 1 to 2000 characters')],
  ];
  for (const [body, expected] of refusals) {
    const r = await srv.call('POST', HOOKS, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
    assert.deepEqual(r.body, expected, JSON.stringify(body).slice(0, 80));
  }
  assert.equal(srv.store.workspace(srv.workspaceId)!.webhooks.size, 0, 'nothing was created');
  // An update checks the url by the same rules.
  const allowed = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  try {
    const e = (await allowed.call<EndpointAnswer>('POST', HOOKS, { body: { url: 'http://127.0.0.1:9/a', events: ['*'] } })).body.webhookEndpoint;
    const r = await allowed.call('PATCH', `${HOOKS}/${e.id}`, { body: { url: 'gopher://127.0.0.1/' } });
    assert.deepEqual([r.status, r.body], [400, invalid('url must use http or https, not gopher')]);
    const t = await allowed.call('PATCH', `${HOOKS}/${e.id}`, { body: { events: ['*', 'nope'] } });
    assert.equal(t.status, 400);
  } finally { await allowed.close(); }
}));

test('at most 16 endpoints per workspace: the 17th is a 409, and deleting one makes room', () => withServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, async (srv) => {
  const ids: string[] = [];
  for (let i = 0; i < 16; i++) {
    const r = await srv.call<EndpointAnswer>('POST', HOOKS, { body: { url: `http://127.0.0.1:9/h${i}`, events: ['*'] } });
    assert.equal(r.status, 201, r.text);
    ids.push(r.body.webhookEndpoint.id);
  }
  const over = await srv.call('POST', HOOKS, { body: { url: 'http://127.0.0.1:9/h16', events: ['*'] } });
  assert.equal(over.status, 409);
  assert.deepEqual(over.body, { code: 'conflict', error: 'A record with this identifier already exists: this workspace already has 16 webhook endpoints, the most allowed; delete one before creating another.' });
  // Another workspace has its own 16.
  const other = await srv.space();
  assert.equal((await other.call('POST', HOOKS, { body: { url: 'http://127.0.0.1:9/o', events: ['*'] } })).status, 201);
  // Pages, oldest first.
  const page = await srv.call<EndpointList>('GET', `${HOOKS}?limit=10`);
  assert.deepEqual(page.body.webhookEndpoints.map((e) => e.id), ids.slice(0, 10));
  const rest = await srv.call<EndpointList>('GET', `${HOOKS}?limit=10&cursor=${encodeURIComponent(page.body.nextCursor!)}`);
  assert.deepEqual(rest.body.webhookEndpoints.map((e) => e.id), ids.slice(10));
  assert.equal((await srv.call('DELETE', `${HOOKS}/${ids[3]}`)).status, 200);
  assert.equal((await srv.call('POST', HOOKS, { body: { url: 'http://127.0.0.1:9/h16', events: ['*'] } })).status, 201);
}));

test('scopes: webhooks:read lists and reads, webhooks:write is needed to change; other scopes get 403', () => withServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, async (srv) => {
  const e = (await srv.call<EndpointAnswer>('POST', HOOKS, { body: { url: 'http://127.0.0.1:9/s', events: ['*'] } })).body.webhookEndpoint;
  const reader = await srv.newKey({ scopes: 'webhooks:read' });
  const writer = await srv.newKey({ scopes: 'webhooks:write' });
  const stranger = await srv.newKey({ scopes: 'events:read' });
  assert.equal((await srv.call('GET', HOOKS, { key: reader })).status, 200);
  assert.equal((await srv.call('GET', `${HOOKS}/${e.id}/deliveries`, { key: reader })).status, 200);
  assert.equal((await srv.call('GET', `${HOOKS}/${e.id}`, { key: writer })).status, 200, 'write implies read');
  for (const [method, path] of [['POST', HOOKS], ['PATCH', `${HOOKS}/${e.id}`], ['DELETE', `${HOOKS}/${e.id}`], ['POST', `${HOOKS}/${e.id}/rotate-secret`]] as const) {
    const r = await srv.call(method, path, { key: reader, body: method === 'DELETE' || path.endsWith('secret') ? undefined : { url: 'http://127.0.0.1:9/x', events: ['*'] } });
    assert.equal(r.status, 403, `${method} ${path}`);
  }
  assert.equal((await srv.call('GET', HOOKS, { key: stranger })).status, 403);
}));

test('cli webhook list prints the endpoints without any secret, through the running server', () => withServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, async (srv) => {
  const made = (await srv.call<EndpointAnswer>('POST', HOOKS, { body: { url: 'http://127.0.0.1:9/cli', events: ['issue.updated'], description: 'from the CLI test' } })).body.webhookEndpoint;
  await srv.call('POST', `${HOOKS}/${made.id}/rotate-secret`);
  const out = await runCli<{ object: string; webhookEndpoints: Endpoint[] }>(srv.dataDir, ['webhook', 'list', '--workspace', srv.workspaceId]);
  assert.equal(out.code, 0, out.stderr);
  assert.ok(!out.stdout.includes('whsec_') && !out.stdout.includes(made.secret!), 'no secret in the CLI output');
  const { secret: _s, ...shown } = made;
  assert.deepEqual(out.json.webhookEndpoints.map((e) => e.id), [shown.id]);
  assert.equal(out.json.webhookEndpoints[0].description, 'from the CLI test');
  const missing = await runCli(srv.dataDir, ['webhook', 'list', '--workspace', 'nope']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^error: no workspace "nope"/);
  const usage = await runCli(srv.dataDir, ['webhook', 'list']);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /^--workspace is required/);
}));

test('settings: WEBHOOK_* defaults, units of the retry schedule, and every invalid value refused with one line', async () => {
  const c = loadConfig({});
  assert.equal(c.webhookAllowPrivate, false);
  assert.equal(c.webhookTimeoutMs, 15000);
  assert.deepEqual(c.webhookRetrySchedule, [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 504e5, 72e6, 864e5]);
  assert.deepEqual([c.webhookConcurrency, c.webhookConcurrencyPerEndpoint], [64, 16]);
  assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '250ms, 2s,1m,3h' }).webhookRetrySchedule, [250, 2000, 60000, 10800000]);
  const lead = 'WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of 1 to 20 durations such as 5s,5m,2h (units ms, s, m, h; each from 1 ms to 7 days), got';
  const bad: Array<[Record<string, string>, string]> = [
    [{ WEBHOOK_RETRY_SCHEDULE: '5' }, `${lead} "5": "5" is not a number followed by ms, s, m or h`],
    [{ WEBHOOK_RETRY_SCHEDULE: '5s,,5m' }, `${lead} "5s,,5m": "" is not a number followed by ms, s, m or h`],
    [{ WEBHOOK_RETRY_SCHEDULE: '1d' }, `${lead} "1d": "1d" is not a number followed by ms, s, m or h`],
    [{ WEBHOOK_RETRY_SCHEDULE: '0s' }, `${lead} "0s": "0s" is not from 1 ms to 7 days`],
    [{ WEBHOOK_RETRY_SCHEDULE: '169h' }, `${lead} "169h": "169h" is not from 1 ms to 7 days`],
    [{ WEBHOOK_RETRY_SCHEDULE: Array(21).fill('1s').join(',') }, `${lead} "${Array(21).fill('1s').join(',')}": it has 21 steps`],
    [{ WEBHOOK_TIMEOUT_MS: '50' }, 'WEBHOOK_TIMEOUT_MS must be an integer from 100 to 600000, got "50"'],
    [{ WEBHOOK_ALLOW_PRIVATE: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE must be true or false, got "yes"'],
    [{ WEBHOOK_CONCURRENCY: '0' }, 'WEBHOOK_CONCURRENCY must be an integer from 1 to 10000, got "0"'],
    [{ WEBHOOK_CONCURRENCY_PER_ENDPOINT: 'x' }, 'WEBHOOK_CONCURRENCY_PER_ENDPOINT must be an integer from 1 to 1000, got "x"'],
  ];
  for (const [env, message] of bad) {
    assert.throws(() => loadConfig(env), (e: unknown) => e instanceof ConfigError && e.message === message, JSON.stringify(env));
  }
  // The real server: exit 2 with that one line, before anything is written.
  const run = await runServerToExit({ env: { WEBHOOK_RETRY_SCHEDULE: '5s,soon' } });
  assert.equal(run.code, 2);
  assert.equal(run.stderr, `support-workspace: invalid configuration: ${lead} "5s,soon": "soon" is not a number followed by ms, s, m or h\n`);
});
