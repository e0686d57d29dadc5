/**
 * The cells' configuration (docs/deployment.md#several-machines), unit tests: `--cells` parsing and its refusals,
 * the CELL_* settings and theirs, the map files' lines, and the HAProxy configuration's routing rules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { haproxyConfig, mapFiles, parseCells } from '../src/admin/cells.js';
import { loadConfig } from '../src/core/config.js';

test('--cells: name=host:port entries; each refusal names the entry', () => {
  assert.deepEqual(parseCells('a=10.0.0.1:3000,b-2=cell-b.internal:80,c=[::1]:3000'), [
    { name: 'a', address: '10.0.0.1:3000' }, { name: 'b-2', address: 'cell-b.internal:80' },
    { name: 'c', address: '[::1]:3000' }]);
  const refused = (text: string, message: string) => assert.throws(() => parseCells(text), { message });
  refused('', 'no cell given (--cells name=host:port,…)');
  refused('A=1.2.3.4:1', 'cell "A=1.2.3.4:1": the name must match [a-z0-9-]{1,32}');
  refused('=1.2.3.4:1', 'cell "=1.2.3.4:1": the name must match [a-z0-9-]{1,32}');
  refused('a=1.2.3.4', 'cell "a=1.2.3.4": the address must be host:port');
  refused('a=1.2.3.4:1 ; rm', 'cell "a=1.2.3.4:1 ; rm": the address must be host:port');
  refused('a=1.2.3.4:1,a=1.2.3.5:1', 'cell "a" is named twice');
});

test('CELL_NAME, CELL_HAPROXY_RUNTIME, CELL_MAPS_DIR: read, defaulted, and each refusal exact', () => {
  assert.equal(loadConfig({}).cell, null);
  assert.deepEqual(loadConfig({ CELL_NAME: 'b' }).cell,
    { name: 'b', haproxyRuntime: [], mapsDir: '/etc/haproxy/support-workspace' });
  assert.deepEqual(loadConfig({ CELL_NAME: 'b', CELL_HAPROXY_RUNTIME: '10.0.0.1:9999,lb2:9999',
    CELL_MAPS_DIR: '/srv/maps' }).cell, { name: 'b', haproxyRuntime: ['10.0.0.1:9999', 'lb2:9999'], mapsDir: '/srv/maps' });
  const refused = (env: Record<string, string>, message: string) => assert.throws(() => loadConfig(env), { message });
  refused({ CELL_HAPROXY_RUNTIME: '1.2.3.4:9' }, 'CELL_HAPROXY_RUNTIME is set but CELL_NAME is not');
  refused({ CELL_NAME: 'Cell A' }, 'CELL_NAME must match [a-z0-9-]{1,32}, got "Cell A"');
  refused({ CELL_NAME: 'a', CELL_HAPROXY_RUNTIME: '1.2.3.4' },
    'CELL_HAPROXY_RUNTIME must be host:port entries, got "1.2.3.4"');
  refused({ CELL_NAME: 'a', CELL_MAPS_DIR: 'maps' }, 'CELL_MAPS_DIR must be an absolute path, got "maps"');
});

test('map files: one "key backend" line per entry, every kind in its own file', () => {
  const files = mapFiles(new Map([
    ['a', { tokens: ['ab12'], widgetKeys: ['svcw_x'], emails: ['ada@example.com'], slugs: ['pets'], workspaces: ['w1'] }],
    ['b', { tokens: ['cd34', 'ef56'], widgetKeys: [], emails: [], slugs: [], workspaces: ['w2'] }]]));
  assert.deepEqual(files, {
    'tokens.map': 'ab12 cell_a\ncd34 cell_b\nef56 cell_b\n', 'widget-keys.map': 'svcw_x cell_a\n',
    'emails.map': 'ada@example.com cell_a\n', 'slugs.map': 'pets cell_a\n', 'workspaces.map': 'w1 cell_a\nw2 cell_b\n',
  });
});

test('haproxy.cfg: the runtime API, the routing rules in order, a checked backend per cell', () => {
  const cfg = haproxyConfig({ cells: parseCells('a=10.0.0.1:3000,b=10.0.0.2:3000'), mapsDir: '/m',
    bind: '0.0.0.0:80', runtime: '127.0.0.1:9999' });
  assert.match(cfg, /^ {2}stats socket ipv4@127\.0\.0\.1:9999 level admin$/m);
  assert.match(cfg, /^ {2}bind 0\.0\.0\.0:80$/m);
  const rules = cfg.split('\n').filter((l) => l.includes('set-var(txn.cell)')).map((l) => /map\(\/m\/([a-z-]+)\.map\)/
    .exec(l)?.[1]);
  assert.deepEqual(rules, ['tokens', 'widget-keys', 'workspaces', 'tokens', undefined, 'tokens', 'emails', 'slugs']);
  // A session too new for the maps goes to the cell its sw_cell cookie names, one of the cells only.
  assert.match(cfg, /set-var\(txn\.cell\) req\.cook\(sw_cell\) if !\{ var\(txn\.cell\) -m found \} \{ req\.cook\(sw_cell\) -m str cell_a cell_b \}/);
  // The cells' own API is not reachable through the proxy.
  assert.match(cfg, /http-request deny deny_status 404 if \{ path_beg \/cell\/ \}/);
  assert.match(cfg, /use_backend %\[var\(txn\.cell\)\] if \{ var\(txn\.cell\) -m found \}\n {2}default_backend cell_a/);
  assert.match(cfg, /backend cell_b\n {2}option httpchk GET \/healthz\n {2}server b 10\.0\.0\.2:3000 check/);
});
