/**
 * Client addresses (README "Limits"): the counting key of an address (IPv4 as is, IPv4-mapped
 * IPv6 as IPv4, other IPv6 per /64), `TRUST_PROXY` entries, and the client named by
 * `X-Forwarded-For` behind trusted proxies — as units, then over HTTP through the
 * failed-authentication limit (30 failures a minute per client address). The per-address
 * connection cap is in test/connections.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { addressKey, ClientAddresses, ipv6Groups } from '../src/http/clientAddress.js';
import { parseCidr } from '../src/core/config.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const UNAUTHORIZED = { code: 'unauthorized', error: 'A valid workspace API key is required.' };
async function withServer(fn: (srv: TestServer) => Promise<void>, env?: Record<string, string>): Promise<void> {
  const srv = await startTestServer({ env });
  try { await fn(srv); } finally { await srv.close(); }
}

test('addressKey: IPv4 as is; IPv4-mapped IPv6 (dotted or hex) as the IPv4 address; other IPv6 as its /64', () => {
  assert.equal(addressKey('203.0.113.7'), '203.0.113.7');
  assert.equal(addressKey('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(addressKey('::ffff:cb00:7107'), '203.0.113.7');
  assert.equal(addressKey('0:0:0:0:0:ffff:cb00:7107'), '203.0.113.7');
  assert.equal(addressKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  assert.equal(addressKey('2001:0DB8:0001:0002::1'), '2001:db8:1:2::/64', 'leading zeros and case do not matter');
  assert.equal(addressKey('2001:db8:1:2:ffff::1'), '2001:db8:1:2::/64');
  assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(addressKey('::1'), '0:0:0:0::/64');
  assert.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64', 'a zone id is dropped');
  assert.equal(addressKey('64:ff9b::192.0.2.1'), '64:ff9b:0:0::/64', 'an embedded IPv4 tail is not a mapped address');
  assert.equal(addressKey(undefined), 'unknown');
  assert.equal(addressKey('not an address'), 'unknown');
});

test('ipv6Groups expands :: and embedded IPv4 into eight groups', () => {
  assert.deepEqual(ipv6Groups('1::8'), [1, 0, 0, 0, 0, 0, 0, 8]);
  assert.deepEqual(ipv6Groups('::'), [0, 0, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(ipv6Groups('1:2:3:4:5:6:7::'), [1, 2, 3, 4, 5, 6, 7, 0]);
  assert.deepEqual(ipv6Groups('::ffff:1.2.3.4'), [0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]);
});

test('parseCidr: addresses and ranges of either family; anything else is refused', () => {
  assert.deepEqual(parseCidr('10.0.0.1'), { address: '10.0.0.1', family: 'ipv4', prefix: 32 });
  assert.deepEqual(parseCidr('10.0.0.0/8'), { address: '10.0.0.0', family: 'ipv4', prefix: 8 });
  assert.deepEqual(parseCidr('fd00::/8'), { address: 'fd00::', family: 'ipv6', prefix: 8 });
  assert.deepEqual(parseCidr('::1'), { address: '::1', family: 'ipv6', prefix: 128 });
  for (const bad of ['', 'proxy.internal', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/', '10.0.0.0/8/8', '10.0.0.0/-1', '10.0.0.0/ 8', '10.0.0.256', '1.2.3.4:80', 'fe80::1%eth0']) {
    assert.equal(parseCidr(bad), undefined, bad);
  }
});

const req = (peer: string, xff?: string) => ({ socket: { remoteAddress: peer }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as unknown as IncomingMessage;

test('ClientAddresses.clientIp: the peer unless it is a trusted proxy; then the rightmost untrusted X-Forwarded-For entry', () => {
  const none = new ClientAddresses([]);
  assert.equal(none.clientIp(req('127.0.0.1', '203.0.113.7')), '127.0.0.1', 'no TRUST_PROXY: the header is ignored');
  const c = new ClientAddresses(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
  assert.equal(c.clientIp(req('192.0.2.1', '203.0.113.7')), '192.0.2.1', 'an untrusted peer');
  assert.equal(c.clientIp(req('127.0.0.1')), '127.0.0.1', 'no header');
  assert.equal(c.clientIp(req('127.0.0.1', '')), '127.0.0.1', 'an empty header');
  assert.equal(c.clientIp(req('127.0.0.1', '203.0.113.7')), '203.0.113.7');
  assert.equal(c.clientIp(req('::ffff:127.0.0.1', '203.0.113.7')), '203.0.113.7', 'a trusted IPv4 proxy seen on a dual-stack listener');
  assert.equal(c.clientIp(req('fd00::5', '2001:db8::9')), '2001:db8::9');
  assert.equal(c.clientIp(req('127.0.0.1', 'garbage, 192.0.2.5 , 10.9.9.9')), '192.0.2.5', 'entries left of the client are not read');
  assert.equal(c.clientIp(req('127.0.0.1', '192.0.2.5, garbage')), '127.0.0.1', 'a malformed hop: the peer');
  assert.equal(c.clientIp(req('127.0.0.1', '192.0.2.5:443')), '127.0.0.1', 'a port: the peer');
  assert.equal(c.clientIp(req('127.0.0.1', '10.0.0.2, 10.0.0.3')), '10.0.0.2', 'all trusted: the leftmost');
  assert.equal(c.clientKey(req('127.0.0.1', '2001:db8:1:2::7')), '2001:db8:1:2::/64');
});

// ---------------------------------------------------------------- over HTTP: the failed-authentication limit

const LOCKED_OUT = { code: 'rate_limited', error: 'Too many API requests. Slow down and try again shortly: too many failed authentications from this address.' };
/** Fails authentication 30 times as `xff` (an X-Forwarded-For value), locking out that client. */
async function lockOut(srv: TestServer, xff: string): Promise<void> {
  for (let i = 0; i < 30; i++) assert.equal((await srv.call('GET', '/api/v1/issues', { key: null, headers: { 'X-Forwarded-For': xff } })).status, 401, `failure ${i + 1} as ${xff}`);
}
/** The status of one more failure sent as `xff` (401 while the client may fail, 429 once locked out). */
async function failAs(srv: TestServer, xff: string | null): Promise<number> {
  const r = await srv.call('GET', '/api/v1/issues', { key: null, headers: xff === null ? {} : { 'X-Forwarded-For': xff } });
  if (r.status === 429) assert.deepEqual(r.body, LOCKED_OUT);
  else assert.deepEqual([r.status, r.body], [401, UNAUTHORIZED]);
  return r.status;
}

test('TRUST_PROXY names the proxy: failures count per X-Forwarded-For client, so one client behind the proxy does not lock out the others', () => withServer(async (srv) => {
  await lockOut(srv, '203.0.113.7');
  assert.equal(await failAs(srv, '203.0.113.7'), 429);
  assert.equal(await failAs(srv, '203.0.113.8'), 401, 'another client behind the same proxy');
  assert.equal(await failAs(srv, null), 401, 'the proxy itself (no X-Forwarded-For)');
  // A valid key from the locked-out client is served.
  assert.equal((await srv.call('GET', '/api/v1/issues', { headers: { 'X-Forwarded-For': '203.0.113.7' } })).status, 200);
}, { TRUST_PROXY: '127.0.0.1' }));

test('X-Forwarded-For: the rightmost entry that is not a trusted proxy is the client; entries left of it (written by the client) change nothing', () => withServer(async (srv) => {
  await lockOut(srv, '198.51.100.1, 203.0.113.7, 10.1.2.3');
  assert.equal(await failAs(srv, '203.0.113.7'), 429);
  assert.equal(await failAs(srv, '192.0.2.99, 203.0.113.7'), 429, 'a forged leftmost entry does not escape');
  assert.equal(await failAs(srv, '203.0.113.7, 10.200.0.1'), 429, 'through another trusted proxy of 10.0.0.0/8');
  assert.equal(await failAs(srv, '203.0.113.7, 198.51.100.1'), 401, 'an untrusted hop is the client');
  assert.equal(await failAs(srv, '10.0.0.1, 10.0.0.2'), 401, 'all trusted: the leftmost is the client');
}, { TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' }));

test('X-Forwarded-For that is malformed counts against the proxy\'s own address; without TRUST_PROXY the header is ignored', async () => {
  await withServer(async (srv) => {
    await lockOut(srv, 'not-an-address');
    assert.equal(await failAs(srv, null), 429, 'the failures were counted against the peer (the proxy)');
    assert.equal(await failAs(srv, '203.0.113.7, 203.0.113.8:8080'), 429, 'an address with a port is not an address');
    assert.equal(await failAs(srv, '203.0.113.7'), 401, 'a well-formed client is counted on its own');
  }, { TRUST_PROXY: '127.0.0.1' });
  await withServer(async (srv) => {
    for (let i = 0; i < 30; i++) assert.equal(await failAs(srv, `203.0.113.${i}`), 401);
    assert.equal(await failAs(srv, '198.51.100.1'), 429, 'an untrusted peer cannot pick its address');
  });
});

test('IPv6 clients count per /64 and IPv4-mapped IPv6 as the IPv4 address (via X-Forwarded-For)', () => withServer(async (srv) => {
  for (let i = 0; i < 30; i++) assert.equal(await failAs(srv, `2001:db8:1:2::${(i + 1).toString(16)}`), 401);
  assert.equal(await failAs(srv, '2001:db8:1:2:ffff:ffff:ffff:ffff'), 429, 'the same /64');
  assert.equal(await failAs(srv, '2001:db8:1:3::1'), 401, 'the next /64');
  await lockOut(srv, '::ffff:203.0.113.9');
  assert.equal(await failAs(srv, '203.0.113.9'), 429);
  assert.equal(await failAs(srv, '::ffff:cb00:7109'), 429, 'the same mapped address in hex');
}, { TRUST_PROXY: '127.0.0.1' }));
