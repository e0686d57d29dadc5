// Host name resolution for outgoing requests (docs/sources.md#name-resolution): the system's resolver
// order (`dns.lookup`: /etc/hosts applies), every address checked, answers kept briefly, lookups on
// a bounded queue of their own so they never hold more than one threadpool thread per resolver.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  BUSY, HostResolver, KEEP_MS, MAX_NAMES, MAX_RUNNING, MAX_WAITING, NO_ADDRESS_KEEP_MS, type SystemLookup,
} from '../src/ingest/fetch/hosts.js';
import { busyMessage, reachableKnown, resolveReachable } from '../src/ingest/fetch/addresses.js';
import { FetchError, fetchDocument } from '../src/ingest/fetch/fetch.js';
import { sendAttempt } from '../src/areas/webhooks/send.js';

type Addresses = Array<{ address: string; family: number }>;
const enotfound = (): NodeJS.ErrnoException => Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
const turns = async (n = 10): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((go) => setImmediate(go));
};

/** A lookup answering from `table` (as a hosts file would), counting the names asked; others: ENOTFOUND. */
function fakeLookup(table: Record<string, Addresses>): SystemLookup & { asked: string[] } {
  const asked: string[] = [];
  const f = async (h: string): Promise<Addresses> => {
    asked.push(h);
    const a = table[h];
    if (a === undefined) throw enotfound();
    return a;
  };
  return Object.assign(f, { asked });
}

/** A lookup whose answers the test gives: `started` lists the names asked, `finish(name, addresses)` answers one. */
function heldLookup() {
  const started: string[] = [];
  const answers = new Map<string, (a: Addresses) => void>();
  const lookup: SystemLookup = (h) => new Promise<Addresses>((resolve) => {
    started.push(h);
    answers.set(h, resolve);
  });
  const finish = (h: string, a: Addresses = []): void => { answers.get(h)!(a); };
  return { lookup, started, finish };
}

test('a name the system resolver knows (a hosts-file entry) is resolved by it, every address, IPv4 first', async () => {
  const v4 = { address: '10.0.0.7', family: 4 };
  const v6 = { address: 'fd00::7', family: 6 };
  const lookup = fakeLookup({ 'receiver.internal': [v6, v4, v4] });
  const r = new HostResolver({ lookup, now: () => 0 });
  assert.deepEqual(await r.resolve('receiver.internal'), [v4, v6]);
  assert.deepEqual(lookup.asked, ['receiver.internal']);
  assert.deepEqual(await resolveReachable('receiver.internal', true, r), [v4, v6]);
  assert.equal(await resolveReachable('receiver.internal', false, r), undefined, 'private ones refused');
});

test('localhost is resolved through the system resolver (dns.lookup), no DNS query made', async () => {
  const lookups: string[] = [];
  const real = dns.promises.lookup;
  const spy = mock.method(dns.promises, 'lookup', (h: string, o: dns.LookupAllOptions) => {
    lookups.push(h);
    return real(h, o);
  });
  const resolver = dns.promises.Resolver.prototype;
  const queries = (['resolve4', 'resolve6', 'resolve'] as const).map((m) => mock.method(resolver, m));
  try {
    const r = new HostResolver();
    const found = await r.resolve('localhost');
    assert.ok(found.some((a) => a.address === '127.0.0.1' || a.address === '::1'), JSON.stringify(found));
    assert.deepEqual(lookups, ['localhost']);
    assert.deepEqual(spy.mock.calls[0].arguments[1], { all: true, verbatim: true });
    assert.deepEqual(queries.map((q) => q.mock.callCount()), [0, 0, 0], 'the network resolver is not asked directly');
    assert.equal(await resolveReachable('localhost', false, r), undefined, 'loopback is refused without allowPrivate');
  } finally { mock.restoreAll(); }
});

test(`an answer is kept ${KEEP_MS} ms, "no address" ${NO_ADDRESS_KEEP_MS} ms; any case`, async () => {
  let now = 0;
  const lookup = fakeLookup({ 'api.example.com': [{ address: '93.184.215.14', family: 4 }] });
  const r = new HostResolver({ lookup, now: () => now });
  await r.resolve('api.example.com');
  assert.deepEqual(await r.resolve('nowhere.test'), []);
  now = NO_ADDRESS_KEEP_MS - 1;
  assert.deepEqual(await r.resolve('API.Example.com'), [{ address: '93.184.215.14', family: 4 }]);
  await r.resolve('nowhere.test');
  assert.deepEqual(lookup.asked, ['api.example.com', 'nowhere.test']);
  now = NO_ADDRESS_KEEP_MS;
  await r.resolve('nowhere.test');
  assert.deepEqual(lookup.asked, ['api.example.com', 'nowhere.test', 'nowhere.test']);
  now = KEEP_MS - 1;
  await r.resolve('api.example.com');
  assert.equal(lookup.asked.length, 3);
  now = KEEP_MS;
  await r.resolve('api.example.com');
  assert.deepEqual(lookup.asked.slice(3), ['api.example.com'], 'asked again once its time is over');
});

test(`lookups run ${MAX_RUNNING} at a time, in order; one name asked twice at once is one lookup`, async () => {
  const { lookup, started, finish } = heldLookup();
  const r = new HostResolver({ lookup, now: () => 0 });
  const names = Array.from({ length: 12 }, (_, i) => `n${i}.internal`);
  const pending = names.map((n) => r.resolve(n));
  const twice = r.resolve('N0.internal');
  await turns();
  assert.deepEqual(started, names.slice(0, MAX_RUNNING), 'the others wait: no more threadpool threads held');
  for (let i = 0; i < names.length; i++) {
    finish(names[i], [{ address: `10.0.0.${i}`, family: 4 }]);
    await turns();
    assert.deepEqual(started, names.slice(0, Math.min(names.length, i + 1 + MAX_RUNNING)));
  }
  assert.deepEqual((await Promise.all(pending)).map((a) => a[0].address), names.map((_, i) => `10.0.0.${i}`));
  assert.deepEqual(await twice, [{ address: '10.0.0.0', family: 4 }]);
});

test(`at most ${MAX_WAITING} lookups wait; one more is refused at once without being asked`, async () => {
  const { lookup, started, finish } = heldLookup();
  let now = 0;
  const r = new HostResolver({ lookup, now: () => now });
  const waiting = Array.from({ length: MAX_RUNNING + MAX_WAITING }, (_, i) => r.resolve(`w${i}.internal`));
  await turns();
  assert.equal(await r.lookup('one-more.internal'), BUSY);
  assert.deepEqual(await r.resolve('one-more.internal'), [], 'resolve: no address');
  assert.equal(await resolveReachable('one-more.internal', true, r), undefined);
  assert.notEqual(r.lookup('w3.internal'), BUSY, 'a name already waiting is joined, not refused');
  for (let i = 0; i < MAX_RUNNING + MAX_WAITING; i++) {
    while (started.length <= i) await turns(1);
    finish(`w${i}.internal`, [{ address: '10.9.9.9', family: 4 }]);
  }
  assert.equal((await Promise.all(waiting)).length, MAX_RUNNING + MAX_WAITING);
  assert.equal(started.includes('one-more.internal'), false, 'the refused name was never given to the resolver');
  assert.deepEqual(await r.resolve('w0.internal'), [{ address: '10.9.9.9', family: 4 }]);
  now = NO_ADDRESS_KEEP_MS;
  const after = r.resolve('one-more.internal');
  await turns();
  assert.equal(started.at(-1), 'one-more.internal', 'the refusal was not kept: with room, the name is asked');
  finish('one-more.internal');
  assert.deepEqual(await after, []);
});

test('a fetch refused by a full queue says so (not "cannot be reached"); with room again it goes on', async () => {
  const site = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((go) => site.listen(0, '127.0.0.1', go));
  const port = (site.address() as AddressInfo).port;
  const held = new Map<string, () => void>();
  const real = dns.promises.lookup;
  const hold = (h: string) => new Promise((go) => held.set(h, () => go([{ address: '127.0.0.1', family: 4 }])));
  mock.method(dns.promises, 'lookup', (h: string, o: dns.LookupAllOptions) =>
    (h.endsWith('.held.test') ? hold(h) : real(h, o)));
  try {
    const opts = { timeoutMs: 60_000, maxBytes: 1000, allowPrivate: true };
    const fetches = Array.from({ length: MAX_RUNNING + MAX_WAITING }, (_, i) =>
      fetchDocument(`http://h${i}.held.test:${port}/`, opts));
    await turns();
    const url = `http://one-more.held.test:${port}/`;
    await assert.rejects(fetchDocument(url, opts), (e: unknown) => {
      assert.ok(e instanceof FetchError);
      assert.deepEqual([e.code, e.message], ['resolver_busy', busyMessage(url)]);
      assert.equal(e.message, `the host name of ${url} was not resolved: `
        + `more than ${MAX_WAITING} host names are waiting to be resolved; try again later`);
      return true;
    });
    for (let i = 0; i < MAX_RUNNING + MAX_WAITING; i++) {
      while (!held.has(`h${i}.held.test`)) await turns(1);
      held.get(`h${i}.held.test`)!();
    }
    assert.deepEqual((await Promise.all(fetches)).map((d) => d.body.toString()), fetches.map(() => 'ok'));
  } finally {
    mock.restoreAll();
    await new Promise((go) => site.close(go));
  }
});

test('a failing lookup gives no address; it never throws', async () => {
  let calls = 0;
  const r = new HostResolver({ lookup: async () => { calls++; throw enotfound(); }, now: () => 0 });
  assert.deepEqual(await r.resolve('nowhere.test'), []);
  assert.deepEqual(await r.resolve('nowhere.test'), []);
  assert.equal(calls, 1);
});

test(`at most ${MAX_NAMES} names are kept; the oldest answer goes first`, async () => {
  const table: Record<string, Addresses> = {};
  for (let i = 0; i <= MAX_NAMES; i++) table[`h${i}.test`] = [{ address: '93.184.215.14', family: 4 }];
  const lookup = fakeLookup(table);
  const r = new HostResolver({ lookup, now: () => 0 });
  for (let i = 0; i <= MAX_NAMES; i++) await r.resolve(`h${i}.test`);
  assert.equal(r.size, MAX_NAMES);
  const before = lookup.asked.length;
  await r.resolve(`h${MAX_NAMES}.test`);
  await r.resolve('h1.test');
  assert.equal(lookup.asked.length, before, 'the newer ones are kept');
  await r.resolve('h0.test');
  assert.equal(lookup.asked.length, before + 1, 'the oldest was let go');
});

test('resolveReachable applies the address rule to every address; IP addresses are taken as they are', async () => {
  const r = new HostResolver({ lookup: fakeLookup({ 'inside.test': [{ address: '10.1.2.3', family: 4 }],
    'both.test': [{ address: '93.184.215.14', family: 4 }, { address: '127.0.0.1', family: 4 }] }), now: () => 0 });
  assert.equal(await resolveReachable('inside.test', false, r), undefined);
  assert.deepEqual(await resolveReachable('inside.test', true, r), [{ address: '10.1.2.3', family: 4 }]);
  assert.equal(await resolveReachable('both.test', false, r), undefined, 'every address must be public');
  assert.equal(await resolveReachable('unknown.test', true, r), undefined);
  assert.deepEqual(reachableKnown('INSIDE.test', true, r), [{ address: '10.1.2.3', family: 4 }], 'kept, any case');
  assert.equal(reachableKnown('INSIDE.test', false, r), undefined);
  assert.equal(reachableKnown('other.test', true, r), null, 'not kept: a question is needed');
  assert.deepEqual(await resolveReachable('[::1]', true, r), [{ address: '::1', family: 6 }]);
  assert.equal(await resolveReachable('[::1]', false, r), undefined);
});

test('a delivery attempt whose host name gets no answer fails when its time limit is up', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const hosts = new HostResolver({ lookup: () => new Promise(() => {}) });
    const out = sendAttempt('http://hook.never.test/x', '{}', {}, { timeoutMs: 5000, allowPrivate: true, hosts });
    mock.timers.tick(5000);
    const o = await out;
    assert.deepEqual([o.ok, o.status, o.error], [false, null, 'no answer within 5000 ms']);
  } finally { mock.timers.reset(); }
});
