// Host name resolution for outgoing requests (docs/sources.md#name-resolution): DNS first, its
// answers kept for their TTL, the system resolver one name at a time, and no threadpool thread
// held by a name whose servers never answer.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import dns from 'node:dns';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostResolver, MAX_KEEP_MS, MAX_NAMES, MAX_SYSTEM_WAITING, MIN_KEEP_MS, NO_ADDRESS_KEEP_MS, SYSTEM_KEEP_MS, type DnsQueries } from '../src/ingest/fetch/hosts.js';
import { reachableKnown, resolveReachable } from '../src/ingest/fetch/addresses.js';
import { sendAttempt } from '../src/areas/webhooks/send.js';

type Answer = Array<{ address: string; ttl: number }>;
const dnsError = (code: string): NodeJS.ErrnoException => Object.assign(new Error(code), { code });

/** DNS queries answered from `table` (name → A and AAAA answers, or an error code), counting them. */
function fakeDns(table: Record<string, { a?: Answer | string; aaaa?: Answer | string }>): DnsQueries & { asked: string[] } {
  const answer = (v: Answer | string | undefined): Promise<Answer> =>
    (typeof v === 'string' ? Promise.reject(dnsError(v)) : v === undefined ? Promise.reject(dnsError(dns.NODATA)) : Promise.resolve(v));
  const asked: string[] = [];
  return {
    asked,
    resolve4: (h) => { asked.push(`A ${h}`); return answer(table[h]?.a ?? (table[h] ? undefined : dns.NOTFOUND)); },
    resolve6: (h) => { asked.push(`AAAA ${h}`); return answer(table[h]?.aaaa ?? (table[h] ? undefined : dns.NOTFOUND)); },
  };
}

test('a name DNS answers: A then AAAA, kept for the shortest TTL, the system resolver not asked', async () => {
  let now = 0;
  const system: string[] = [];
  const q = fakeDns({ 'api.example.com': { a: [{ address: '93.184.215.14', ttl: 40 }], aaaa: [{ address: '2606:2800:21f:cb07::1', ttl: 30 }] } });
  const r = new HostResolver({ dns: q, system: async (h) => { system.push(h); return []; }, now: () => now });
  const want = [{ address: '93.184.215.14', family: 4 }, { address: '2606:2800:21f:cb07::1', family: 6 }];
  assert.deepEqual(await r.resolve('api.example.com'), want);
  now = 29_999;
  assert.deepEqual(await r.resolve('API.Example.com'), want, 'names are kept without regard to case');
  assert.equal(q.asked.length, 2, 'asked once while the TTL lasts');
  now = 30_000;
  await r.resolve('api.example.com');
  assert.deepEqual(q.asked, ['A api.example.com', 'AAAA api.example.com', 'A api.example.com', 'AAAA api.example.com'], 'asked again once the shortest TTL is over');
  assert.deepEqual(system, []);
});

test('TTLs are clamped: 0 keeps an answer 1 s, a day keeps it 60 s', async () => {
  let now = 0;
  const q = fakeDns({ 'zero.test': { a: [{ address: '93.184.215.14', ttl: 0 }] }, 'day.test': { a: [{ address: '93.184.215.15', ttl: 86_400 }] } });
  const r = new HostResolver({ dns: q, system: async () => [], now: () => now });
  await r.resolve('zero.test');
  await r.resolve('day.test');
  for (const [name, keep] of [['zero.test', MIN_KEEP_MS], ['day.test', MAX_KEEP_MS]] as const) {
    const before = q.asked.length;
    now = keep - 1;
    await r.resolve(name);
    assert.equal(q.asked.length, before, `${name} kept until ${keep} ms`);
    now = keep;
    await r.resolve(name);
    assert.equal(q.asked.length, before + 2, `${name} asked again at ${keep} ms`);
  }
});

test('a name DNS does not know goes to the system resolver (hosts file, search domains), kept 5 s', async () => {
  let now = 0;
  const system: string[] = [];
  const r = new HostResolver({ dns: fakeDns({}), system: async (h) => { system.push(h); return [{ address: '127.0.0.1', family: 4 }]; }, now: () => now });
  assert.deepEqual(await r.resolve('localhost'), [{ address: '127.0.0.1', family: 4 }]);
  now = SYSTEM_KEEP_MS - 1;
  await r.resolve('localhost');
  assert.deepEqual(system, ['localhost']);
  now = SYSTEM_KEEP_MS;
  await r.resolve('localhost');
  assert.deepEqual(system, ['localhost', 'localhost']);
});

test('DNS servers that time out, fail or refuse: the system resolver is not asked (it would ask them again, holding a thread); "no address" is kept 2 s', async () => {
  for (const [a, aaaa] of [[dns.TIMEOUT, dns.TIMEOUT], [dns.SERVFAIL, dns.SERVFAIL], [dns.REFUSED, dns.REFUSED], [dns.TIMEOUT, dns.NODATA], [dns.NOTFOUND, dns.SERVFAIL]]) {
    let now = 0;
    const system: string[] = [];
    const q = fakeDns({ 'hostile.test': { a, aaaa } });
    const r = new HostResolver({ dns: q, system: async (h) => { system.push(h); return [{ address: '10.0.0.1', family: 4 }]; }, now: () => now });
    assert.deepEqual(await r.resolve('hostile.test'), [], `${a}/${aaaa}`);
    now = NO_ADDRESS_KEEP_MS - 1;
    assert.deepEqual(await r.resolve('hostile.test'), []);
    assert.equal(q.asked.length, 2, `${a}/${aaaa}: asked once while "no address" is kept`);
    now = NO_ADDRESS_KEEP_MS;
    await r.resolve('hostile.test');
    assert.equal(q.asked.length, 4, `${a}/${aaaa}: asked again after 2 s`);
    assert.equal(system.length, 0, `${a}/${aaaa}: the system resolver is not asked`);
  }
});

test('not in DNS, or no DNS server to connect to: the system resolver is asked', async () => {
  for (const [a, aaaa] of [[dns.NOTFOUND, dns.NOTFOUND], [dns.NODATA, dns.NODATA], [dns.CONNREFUSED, dns.CONNREFUSED], [dns.NOTFOUND, dns.NODATA]]) {
    const system: string[] = [];
    const r = new HostResolver({ dns: fakeDns({ 'box.internal': { a, aaaa } }), system: async (h) => { system.push(h); return [{ address: '10.0.0.1', family: 4 }]; }, now: () => 0 });
    assert.deepEqual(await r.resolve('box.internal'), [{ address: '10.0.0.1', family: 4 }], `${a}/${aaaa}`);
    assert.deepEqual(system, ['box.internal']);
  }
});

test('a failing system resolver gives no address, kept 2 s; it never throws', async () => {
  let now = 0;
  let calls = 0;
  const r = new HostResolver({ dns: fakeDns({}), system: async () => { calls++; throw dnsError('ENOTFOUND'); }, now: () => now });
  assert.deepEqual(await r.resolve('nowhere.test'), []);
  assert.deepEqual(await r.resolve('nowhere.test'), []);
  assert.equal(calls, 1);
  now = NO_ADDRESS_KEEP_MS;
  assert.deepEqual(await r.resolve('nowhere.test'), []);
  assert.equal(calls, 2);
});

test(`at most ${MAX_SYSTEM_WAITING} names wait for the system resolver; one more gets no address without waiting`, async () => {
  const started: string[] = [];
  let release: () => void = () => {};
  const system = (h: string) => new Promise<Array<{ address: string; family: number }>>((resolve) => { started.push(h); release = () => resolve([]); });
  const r = new HostResolver({ dns: fakeDns({}), system, now: () => 0 });
  const waiting = Array.from({ length: MAX_SYSTEM_WAITING + 1 }, (_, i) => r.resolve(`n${i}.internal`));
  for (let i = 0; i < 10; i++) await new Promise((go) => setImmediate(go));
  assert.deepEqual(started, ['n0.internal']);
  assert.deepEqual(await r.resolve('one-more.internal'), [], 'refused at once: the queue is full');
  for (let i = 0; i <= MAX_SYSTEM_WAITING; i++) {
    while (started.length <= i) await new Promise((go) => setImmediate(go));
    release();
  }
  assert.equal((await Promise.all(waiting)).length, MAX_SYSTEM_WAITING + 1);
  assert.equal(started.includes('one-more.internal'), false);
});

test('the system resolver runs one name at a time; one name asked twice at once is one question', async () => {
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  const system = (h: string) => new Promise<Array<{ address: string; family: number }>>((resolve) => {
    started.push(h);
    finish.set(h, () => resolve([{ address: '10.0.0.9', family: 4 }]));
  });
  const q = fakeDns({});
  const r = new HostResolver({ dns: q, system, now: () => 0 });
  const a = r.resolve('a.internal');
  const a2 = r.resolve('A.internal');
  const b = r.resolve('b.internal');
  const c = r.resolve('c.internal');
  for (let i = 0; i < 10; i++) await new Promise((go) => setImmediate(go));
  assert.deepEqual(started, ['a.internal'], 'one system lookup at a time');
  assert.deepEqual(q.asked.filter((x) => x.includes('a.internal')), ['A a.internal', 'AAAA a.internal'], 'one question for both callers');
  finish.get('a.internal')!();
  assert.deepEqual(await a, await a2);
  for (let i = 0; i < 10; i++) await new Promise((go) => setImmediate(go));
  assert.deepEqual(started, ['a.internal', 'b.internal']);
  finish.get('b.internal')!();
  await b;
  for (let i = 0; i < 10; i++) await new Promise((go) => setImmediate(go));
  finish.get('c.internal')!();
  await c;
  assert.deepEqual(started, ['a.internal', 'b.internal', 'c.internal']);
});

test(`at most ${MAX_NAMES} names are kept; the oldest answer goes first`, async () => {
  const table: Record<string, { a: Answer }> = {};
  for (let i = 0; i <= MAX_NAMES; i++) table[`h${i}.test`] = { a: [{ address: '93.184.215.14', ttl: 60 }] };
  const q = fakeDns(table);
  const r = new HostResolver({ dns: q, system: async () => [], now: () => 0 });
  for (let i = 0; i <= MAX_NAMES; i++) await r.resolve(`h${i}.test`);
  assert.equal(r.size, MAX_NAMES);
  const before = q.asked.length;
  await r.resolve(`h${MAX_NAMES}.test`);
  await r.resolve('h1.test');
  assert.equal(q.asked.length, before, 'the newer ones are kept');
  await r.resolve('h0.test');
  assert.equal(q.asked.length, before + 2, 'the oldest was let go');
});

test('resolveReachable applies the address rule to names answered by DNS; IP addresses are taken as they are', async () => {
  const r = new HostResolver({ dns: fakeDns({ 'inside.test': { a: [{ address: '10.1.2.3', ttl: 60 }] }, 'both.test': { a: [{ address: '93.184.215.14', ttl: 60 }, { address: '127.0.0.1', ttl: 60 }] } }), system: async () => [], now: () => 0 });
  assert.equal(await resolveReachable('inside.test', false, r), undefined);
  assert.deepEqual(await resolveReachable('inside.test', true, r), [{ address: '10.1.2.3', family: 4 }]);
  assert.equal(await resolveReachable('both.test', false, r), undefined, 'every address must be public');
  assert.equal(await resolveReachable('unknown.test', true, r), undefined);
  assert.deepEqual(reachableKnown('INSIDE.test', true, r), [{ address: '10.1.2.3', family: 4 }], 'a kept answer is found at once, whatever the case');
  assert.equal(reachableKnown('INSIDE.test', false, r), undefined);
  assert.equal(reachableKnown('other.test', true, r), null, 'not kept: a question is needed');
  assert.deepEqual(await resolveReachable('[::1]', true, r), [{ address: '::1', family: 6 }]);
  assert.equal(await resolveReachable('[::1]', false, r), undefined);
});

/** The byte offset just past a DNS query's question (12-byte header, the name's labels, type and class). */
function questionEnd(msg: Buffer): number {
  let at = 12;
  while (msg[at] !== 0) at += msg[at] + 1;
  return at + 5;
}

/**
 * A DNS server on UDP: `answer(name, type)` gives the A record's address (type 1), null for no
 * record, or `'servfail'` for a server failure; `silent` never answers.
 */
async function dnsServer(answer: (name: string, type: number) => string | null, silent = false) {
  const sock = dgram.createSocket('udp4');
  const queries: string[] = [];
  sock.on('message', (msg, rinfo) => {
    const end = questionEnd(msg);
    const labels: string[] = [];
    for (let at = 12; msg[at] !== 0; at += msg[at] + 1) labels.push(msg.toString('latin1', at + 1, at + 1 + msg[at]));
    const name = labels.join('.');
    const type = msg.readUInt16BE(end - 4);
    queries.push(`${type} ${name}`);
    if (silent) return;
    let address = answer(name, type);
    const servfail = address === 'servfail';
    if (servfail) address = null;
    const head = Buffer.alloc(12);
    msg.copy(head, 0, 0, 2);
    head.writeUInt16BE(servfail ? 0x8182 : 0x8180, 2); // a response, recursion desired and available; no error, or SERVFAIL
    head.writeUInt16BE(1, 4);
    head.writeUInt16BE(address === null ? 0 : 1, 6);
    const parts = [head, msg.subarray(12, end)];
    if (address !== null) {
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0); // the question's name
      rr.writeUInt16BE(1, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(30, 6);
      rr.writeUInt16BE(4, 10);
      address.split('.').forEach((x, i) => { rr[12 + i] = Number(x); });
      parts.push(rr);
    }
    sock.send(Buffer.concat(parts), rinfo.port, rinfo.address);
  });
  await new Promise<void>((go) => sock.bind(0, '127.0.0.1', go));
  return { port: sock.address().port, queries, close: () => new Promise<void>((go) => sock.close(() => go())) };
}

test('real DNS over UDP: an A record is used, a name with no AAAA is still answered, the system resolver not asked', async () => {
  const server = await dnsServer((name, type) => (name === 'broken.test' ? 'servfail' : name === 'hook.test' && type === 1 ? '127.0.0.1' : null));
  try {
    const q = new dns.promises.Resolver({ timeout: 2000, tries: 1 });
    q.setServers([`127.0.0.1:${server.port}`]);
    const system: string[] = [];
    const r = new HostResolver({ dns: q, system: async (h) => { system.push(h); return []; } });
    assert.deepEqual(await resolveReachable('hook.test', true, r), [{ address: '127.0.0.1', family: 4 }]);
    assert.equal(await resolveReachable('hook.test', false, r), undefined);
    assert.deepEqual(server.queries.sort(), ['1 hook.test', '28 hook.test'], 'A and AAAA asked once; the second call used the kept answer');
    assert.deepEqual(system, []);
    // A server failure, as c-ares reports it, is not given to the system resolver.
    assert.equal(await resolveReachable('broken.test', true, r), undefined);
    assert.deepEqual(system, []);
    // A name the server has no records for is (the hosts file may know it).
    assert.equal(await resolveReachable('nothere.test', true, r), undefined);
    assert.deepEqual(system, ['nothere.test']);
  } finally { await server.close(); }
});

test('names whose servers never answer hold no threadpool thread: file system work goes on meanwhile', async () => {
  const server = await dnsServer(() => null, true);
  const dir = mkdtempSync(join(tmpdir(), 'sw-hosts-'));
  const q = new dns.promises.Resolver({ timeout: 60_000, tries: 1 });
  q.setServers([`127.0.0.1:${server.port}`]);
  try {
    const r = new HostResolver({ dns: q, system: async () => [] });
    // More names than libuv has threads (4): with getaddrinfo each would hold one.
    let settled = 0;
    const pending = Array.from({ length: 12 }, (_, i) => r.resolve(`never${i}.test`).then((x) => { settled++; return x; }));
    for (let turns = 0; server.queries.length < 24; turns++) {
      assert.ok(turns < 100_000, `the DNS server got ${server.queries.length} of 24 queries`);
      await new Promise((go) => setImmediate(go));
    }
    // Threadpool work — writes and fdatasyncs, what the logs do — completes while every name waits.
    const file = join(dir, 'f');
    writeFileSync(file, '');
    const fh = await open(file, 'a');
    for (let i = 0; i < 16; i++) { await fh.write(`line ${i}\n`); await fh.datasync(); }
    await fh.close();
    assert.equal(settled, 0, 'every name is still waiting for its servers');
    q.cancel();
    assert.deepEqual(await Promise.all(pending), Array.from({ length: 12 }, () => []), 'cancelled: no address, nothing thrown');
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a delivery attempt whose host name gets no DNS answer fails when its time limit is up', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const never: DnsQueries = { resolve4: () => new Promise(() => {}), resolve6: () => new Promise(() => {}) };
    const hosts = new HostResolver({ dns: never, system: async () => [] });
    const out = sendAttempt('http://hook.never.test/x', '{}', {}, { timeoutMs: 5000, allowPrivate: true, hosts });
    mock.timers.tick(5000);
    const o = await out;
    assert.deepEqual([o.ok, o.status, o.error], [false, null, 'no answer within 5000 ms']);
  } finally { mock.timers.reset(); }
});
