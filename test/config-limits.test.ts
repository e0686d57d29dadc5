/**
 * The client-address settings (README "Configuration"): `TRUST_PROXY` (IP addresses and CIDR
 * ranges of reverse proxies, default none) and `MAX_CONNECTIONS_PER_ADDRESS` (default 256).
 * An invalid value stops the real server before it listens: exit 2, one exact line on stderr,
 * the data dir untouched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { loadConfig, ConfigError } from '../src/core/config.js';
import { runServerToExit, tempDir } from './helpers/child.js';

const PREFIX = 'support-workspace: invalid configuration: ';
const trustProxyLine = (raw: string, entry: string) =>
  `TRUST_PROXY must be a comma-separated list of IP addresses or CIDR ranges (10.0.0.0/8, fd00::/8), got ${JSON.stringify(raw)}: ${JSON.stringify(entry)} is neither`;

const invalid: Array<[string, string, string]> = [
  ['TRUST_PROXY', 'proxy.internal', trustProxyLine('proxy.internal', 'proxy.internal')],
  ['TRUST_PROXY', '10.0.0.0/33', trustProxyLine('10.0.0.0/33', '10.0.0.0/33')],
  ['TRUST_PROXY', '10.0.0.1,,fd00::/8', trustProxyLine('10.0.0.1,,fd00::/8', '')],
  ['TRUST_PROXY', '10.0.0.1:8080', trustProxyLine('10.0.0.1:8080', '10.0.0.1:8080')],
  ['MAX_CONNECTIONS_PER_ADDRESS', '0', 'MAX_CONNECTIONS_PER_ADDRESS must be an integer from 1 to 1000000, got "0"'],
  ['MAX_CONNECTIONS_PER_ADDRESS', 'many', 'MAX_CONNECTIONS_PER_ADDRESS must be an integer from 1 to 1000000, got "many"'],
];

for (const [name, value, line] of invalid) {
  test(`${name}=${value} → exit 2 with exactly "${line}" on stderr, never listening, data dir untouched`, async () => {
    const dataDir = tempDir();
    const r = await runServerToExit({ dataDir, env: { [name]: value } });
    assert.deepEqual({ code: r.code, signal: r.signal }, { code: 2, signal: null });
    assert.equal(r.stderr, `${PREFIX}${line}\n`);
    assert.equal(r.stdout, '');
    assert.deepEqual(readdirSync(dataDir), []);
    assert.throws(() => loadConfig({ [name]: value }), (e: unknown) => e instanceof ConfigError && e.message === line);
  });
}

test('defaults: no trusted proxy, 256 connections per address; TRUST_PROXY entries are trimmed and kept in order', () => {
  const d = loadConfig({});
  assert.deepEqual([d.trustProxy, d.maxConnectionsPerAddress], [[], 256]);
  assert.deepEqual(loadConfig({ TRUST_PROXY: '' }).trustProxy, []);
  const c = loadConfig({ TRUST_PROXY: ' 10.0.0.1 , fd00::/8,192.168.0.0/16 ', MAX_CONNECTIONS_PER_ADDRESS: '1000' });
  assert.deepEqual([c.trustProxy, c.maxConnectionsPerAddress], [['10.0.0.1', 'fd00::/8', '192.168.0.0/16'], 1000]);
});

test('HOST: IP addresses (IPv6 without brackets) and host names are accepted as written; anything else is a ConfigError quoting it', () => {
  assert.equal(loadConfig({}).host, '127.0.0.1');
  for (const host of ['0.0.0.0', '::', '::1', '192.168.1.20', 'fe80::1', 'localhost', 'api-1.internal', 'host.example.com.', `${'a'.repeat(63)}.example`]) {
    assert.equal(loadConfig({ HOST: host }).host, host);
  }
  const line = (raw: string) => `HOST must be an IP address (127.0.0.1, 0.0.0.0, ::) or a host name, got ${JSON.stringify(raw)}`;
  for (const host of ['', ' ', '[::1]', 'http://localhost', 'localhost:3000', 'under_score', '-lead.example', 'trail-.example', 'a..b', `${'a'.repeat(64)}.example`, `${'a.'.repeat(127)}ab`, '999.1.1.1.1 x']) {
    assert.throws(() => loadConfig({ HOST: host }), (e: unknown) => e instanceof ConfigError && e.message === line(host), JSON.stringify(host));
  }
});
