/**
 * SSRF-safe fetcher (docs/sources.md#fetching): address rules (one text for a private and an unknown
 * host), schemes, redirects, deadline, byte cap after decoding (gzip bomb with bounded memory),
 * decoding (at most 2 Content-Encoding layers). Local servers on 127.0.0.1 only.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { FetchError, fetchDocument, isPrivateAddress, MAX_ENCODINGS, type FetchOptions } from '../src/ingest/fetch/fetch.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

interface Local {
  origin: string;
  port: number;
  connections: number;
  requests: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders }>;
  close(): Promise<void>;
}

const servers: Local[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function serve(handler: Handler): Promise<Local> {
  const server = http.createServer();
  const local: Local = {
    origin: '',
    port: 0,
    connections: 0,
    requests: [],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', () => local.connections++);
  server.on('request', (req, res) => {
    local.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  local.port = (server.address() as AddressInfo).port;
  local.origin = `http://127.0.0.1:${local.port}`;
  servers.push(local);
  return local;
}

const base: FetchOptions = { timeoutMs: 5000, maxBytes: 1024 * 1024, allowPrivate: true };
const strict: FetchOptions = { ...base, allowPrivate: false };

async function fetchError(p: Promise<unknown>): Promise<FetchError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof FetchError, `expected a FetchError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected the fetch to fail');
}

const TEXT = 'Hello, fetcher! '.repeat(500);
/** `stacked` gzipped n times, by n. */
const STACKED = new Map<number, Buffer>();
function stacked(n: number): void {
  let body = Buffer.from('stacked');
  for (let i = 0; i < n; i++) body = zlib.gzipSync(body, { level: 1 });
  STACKED.set(n, body);
}

const site = await serve((req, res) => {
  const u = new URL(req.url ?? '/', 'http://x');
  const enc = u.searchParams.get('enc');
  if (u.pathname === '/ok') {
    res.writeHead(200, { 'content-type': 'text/HTML; charset=utf-8', 'x-extra': 'yes' });
    res.end('<h1>ok</h1>');
  } else if (u.pathname === '/echo') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ method: req.method, host: req.headers.host, auth: req.headers.authorization ?? null }));
  } else if (u.pathname === '/text') {
    const body = Buffer.from(TEXT);
    const encoded =
      enc === 'gzip' ? zlib.gzipSync(body)
      : enc === 'deflate' ? zlib.deflateSync(body)
      : enc === 'rawdeflate' ? zlib.deflateRawSync(body)
      : enc === 'br' ? zlib.brotliCompressSync(body)
      : enc === 'gzip-br' ? zlib.brotliCompressSync(zlib.gzipSync(body))
      : body;
    const header = enc === 'rawdeflate' ? 'deflate' : enc === 'gzip-br' ? 'gzip, br' : enc;
    res.writeHead(200, { 'content-type': 'text/plain', ...(header ? { 'content-encoding': header } : {}) });
    res.end(encoded);
  } else if (u.pathname === '/stacked') {
    // n real gzip layers (built beforehand by stacked()), the header naming each one (`gzip, gzip, …`).
    const n = Number(u.searchParams.get('n'));
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': new Array(n).fill('gzip').join(', ') });
    res.end(STACKED.get(n));
  } else if (u.pathname === '/big') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(Buffer.alloc(2 * 1024 * 1024, 'a'));
  } else if (u.pathname === '/big-chunked') {
    res.writeHead(200, { 'content-type': 'text/plain' }); // no Content-Length: counted while streaming
    for (let i = 0; i < 40; i++) res.write(Buffer.alloc(64 * 1024, 'b'));
    res.end();
  } else if (u.pathname === '/br-big') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'br' });
    res.end(zlib.brotliCompressSync(Buffer.alloc(8 * 1024 * 1024)));
  } else if (u.pathname === '/bad-gzip') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
    res.end('this is not gzip');
  } else if (u.pathname === '/missing') {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('nope');
  } else if (u.pathname === '/loop') {
    res.writeHead(302, { location: '/loop' });
    res.end();
  } else if (u.pathname === '/hop') {
    const n = Number(u.searchParams.get('n'));
    res.writeHead(n > 0 ? 301 : 200, n > 0 ? { location: `/hop?n=${n - 1}` } : { 'content-type': 'text/plain' });
    res.end(n > 0 ? '' : 'landed');
  } else if (u.pathname === '/see-other') {
    res.writeHead(303, { location: '/echo' });
    res.end();
  } else if (u.pathname === '/to') {
    res.writeHead(307, { location: u.searchParams.get('target') ?? '/' });
    res.end();
  } else if (u.pathname === '/hang') {
    // never answers
  } else if (u.pathname === '/drip') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const t = setInterval(() => res.write('.'), 20);
    res.on('close', () => clearInterval(t));
  } else {
    res.writeHead(404);
    res.end();
  }
});

test('fetches with allowPrivate: final URL, status, media type, headers, body', async () => {
  const doc = await fetchDocument(`${site.origin}/ok`, base);
  assert.equal(doc.url, `${site.origin}/ok`);
  assert.equal(doc.status, 200);
  assert.equal(doc.contentType, 'text/html');
  assert.equal(doc.headers['x-extra'], 'yes');
  assert.equal(doc.body.toString(), '<h1>ok</h1>');
});

test('localhost keeps its Host header while connecting to the checked address', async () => {
  const doc = await fetchDocument(`http://localhost:${site.port}/echo`, base);
  assert.equal(JSON.parse(doc.body.toString()).host, `localhost:${site.port}`);
});

test('private, loopback, link-local and encoded forms are refused without opening a connection', async () => {
  const before = site.connections;
  const hosts = ['127.0.0.1', 'localhost', '[::1]', '[::ffff:127.0.0.1]', '169.254.169.254', '2130706433', '0x7f.1', '0.0.0.0', '10.1.2.3', '[fe80::1]', '100.64.0.1'];
  for (const h of hosts) {
    const url = new URL(`http://${h}:${site.port}/ok`).href; // 2130706433 → 127.0.0.1, as the message names it
    const e = await fetchError(fetchDocument(url, strict));
    assert.equal(e.code, 'unreachable', `${h}: ${e.message}`);
    assert.equal(e.message, `the host of ${url} cannot be reached from this server`);
  }
  assert.equal(site.connections, before, 'no TCP connection may reach the server');
});

test('an unknown host and a private one fail with the same text: errors do not tell whether an internal name exists', async () => {
  const unknown = await fetchError(fetchDocument('http://no-such-host.invalid/x', strict));
  const internal = await fetchError(fetchDocument(`http://localhost:${site.port}/x`, strict));
  assert.deepEqual([unknown.code, unknown.message], ['unreachable', 'the host of http://no-such-host.invalid/x cannot be reached from this server']);
  assert.deepEqual([internal.code, internal.message], ['unreachable', `the host of http://localhost:${site.port}/x cannot be reached from this server`]);
  // The same with private addresses allowed: an unknown host does not name the DNS error either.
  const open = await fetchError(fetchDocument('http://no-such-host.invalid/x', base));
  assert.deepEqual([open.code, open.message], ['unreachable', 'the host of http://no-such-host.invalid/x cannot be reached from this server']);
});

test('a trusted origin is exempt, but its redirect to a private address is refused at that hop', async () => {
  const other = await serve((_req, res) => res.end('secret'));
  const opts = { ...strict, trustedOrigins: [site.origin] };
  const ok = await fetchDocument(`${site.origin}/ok`, opts);
  assert.equal(ok.status, 200);
  const before = site.requests.length;
  const e = await fetchError(fetchDocument(`${site.origin}/to?target=${encodeURIComponent(`${other.origin}/meta`)}`, opts));
  assert.equal(e.code, 'unreachable');
  assert.equal(e.message, `the host of ${other.origin}/meta cannot be reached from this server`);
  assert.equal(site.requests.length, before + 1, 'the trusted hop was fetched');
  assert.equal(other.connections, 0, 'the private redirect target was never connected to');
});

test('only http and https: file:, ftp:, data: are refused, also as redirect targets', async () => {
  for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'data:text/plain,hi', 'gopher://example.com/']) {
    assert.equal((await fetchError(fetchDocument(url, base))).code, 'scheme', url);
  }
  const e = await fetchError(fetchDocument(`${site.origin}/to?target=${encodeURIComponent('file:///etc/passwd')}`, base));
  assert.equal(e.code, 'scheme');
  assert.equal((await fetchError(fetchDocument('not a url', base))).code, 'invalid_url');
});

test('redirects: followed up to the limit, a loop is too_many_redirects', async () => {
  const doc = await fetchDocument(`${site.origin}/hop?n=5`, base);
  assert.equal(doc.body.toString(), 'landed');
  assert.equal(doc.url, `${site.origin}/hop?n=0`);
  assert.equal((await fetchError(fetchDocument(`${site.origin}/hop?n=6`, base))).code, 'too_many_redirects');
  const before = site.requests.length;
  const e = await fetchError(fetchDocument(`${site.origin}/loop`, base));
  assert.equal(e.code, 'too_many_redirects');
  assert.equal(site.requests.length - before, 6, 'the first request plus 5 redirects');
  assert.equal((await fetchError(fetchDocument(`${site.origin}/hop?n=2`, { ...base, maxRedirects: 1 }))).code, 'too_many_redirects');
});

test('303 continues as GET; credentials are not forwarded to another origin', async () => {
  const doc = await fetchDocument(`${site.origin}/see-other`, { ...base, method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
  assert.equal(JSON.parse(doc.body.toString()).method, 'GET');
  const other = await serve((req, res) => res.end(JSON.stringify({ auth: req.headers.authorization ?? null })));
  const headers = { authorization: 'Bearer s3cret' };
  const same = await fetchDocument(`${site.origin}/to?target=/echo`, { ...base, headers });
  assert.equal(JSON.parse(same.body.toString()).auth, 'Bearer s3cret');
  const cross = await fetchDocument(`${site.origin}/to?target=${encodeURIComponent(`${other.origin}/`)}`, { ...base, headers });
  assert.equal(JSON.parse(cross.body.toString()).auth, null);
});

test('a server that never answers is aborted at the deadline', async () => {
  const t0 = performance.now();
  const e = await fetchError(fetchDocument(`${site.origin}/hang`, { ...base, timeoutMs: 300 }));
  assert.equal(e.code, 'timeout');
  assert.ok(performance.now() - t0 < 3000);
});

test('a server that drips bytes forever is aborted at the deadline', async () => {
  const t0 = performance.now();
  const e = await fetchError(fetchDocument(`${site.origin}/drip`, { ...base, timeoutMs: 300 }));
  assert.equal(e.code, 'timeout');
  assert.match(e.message, /took longer than 300 ms/);
  assert.ok(performance.now() - t0 < 3000);
});

test('a silent TCP peer (no HTTP at all) is aborted at the deadline', async () => {
  const net = await import('node:net');
  const sockets: import('node:net').Socket[] = [];
  const server = net.createServer((s) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  try {
    assert.equal((await fetchError(fetchDocument(`http://127.0.0.1:${port}/`, { ...base, timeoutMs: 300 }))).code, 'timeout');
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('gzip, deflate (zlib and raw), br and stacked encodings are decoded', async () => {
  for (const enc of ['gzip', 'deflate', 'rawdeflate', 'br', 'gzip-br', '']) {
    const doc = await fetchDocument(`${site.origin}/text?enc=${enc}`, base);
    assert.equal(doc.body.toString(), TEXT, enc);
  }
  assert.equal((await fetchError(fetchDocument(`${site.origin}/bad-gzip`, base))).code, 'decode');
});

test(`at most ${MAX_ENCODINGS} Content-Encoding layers: 3 or 2,000 stacked gzip layers fail at once, before decoding`, async () => {
  assert.equal(MAX_ENCODINGS, 2);
  for (const n of [3, 2000]) {
    stacked(n); // before measuring: the server runs in this process
    const cpu0 = process.cpuUsage();
    const e = await fetchError(fetchDocument(`${site.origin}/stacked?n=${n}`, base));
    const cpu = process.cpuUsage(cpu0);
    assert.equal(e.code, 'decode');
    assert.equal(e.message, `could not decode ${site.origin}/stacked?n=${n}: it has ${n} Content-Encoding layers, more than the 2 accepted`);
    // Generous: the unbounded decoder spent about 15 CPU-seconds on 2,000 layers.
    assert.ok((cpu.user + cpu.system) / 1000 < 1000, `${n} layers took ${Math.round((cpu.user + cpu.system) / 1000)} ms of CPU`);
  }
  stacked(2);
  const two = await fetchDocument(`${site.origin}/stacked?n=2`, base);
  assert.equal(two.body.toString(), 'stacked');
});

test('bodies over maxBytes are too_large: Content-Length, chunked, br after decoding', async () => {
  for (const path of ['/big', '/big-chunked', '/br-big']) {
    const e = await fetchError(fetchDocument(`${site.origin}${path}`, base));
    assert.equal(e.code, 'too_large', path);
    assert.match(e.message, /larger than the limit of 1048576 bytes/);
  }
  const exact = await fetchDocument(`${site.origin}/text`, { ...base, maxBytes: TEXT.length });
  assert.equal(exact.body.length, TEXT.length);
  assert.equal((await fetchError(fetchDocument(`${site.origin}/text?enc=gzip`, { ...base, maxBytes: TEXT.length - 1 }))).code, 'too_large');
});

test('a 1 GB gzip bomb aborts early with memory bounded', async () => {
  let fed = 0;
  const bomb = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
    const gz = zlib.createGzip({ level: 1 });
    gz.pipe(res);
    const zeros = Buffer.alloc(1024 * 1024);
    let stopped = false;
    res.on('close', () => {
      stopped = true;
      gz.destroy();
    });
    const pump = (): void => {
      while (!stopped && fed < 1024 * 1024 * 1024) {
        fed += zeros.length;
        if (!gz.write(zeros)) {
          gz.once('drain', pump);
          return;
        }
      }
      if (!stopped) gz.end();
    };
    pump();
  });
  global.gc?.();
  const rss0 = process.memoryUsage().rss;
  const e = await fetchError(fetchDocument(`${bomb.origin}/`, { ...base, maxBytes: 4 * 1024 * 1024 }));
  const grown = process.memoryUsage().rss - rss0;
  assert.equal(e.code, 'too_large');
  assert.ok(grown < 96 * 1024 * 1024, `RSS grew by ${Math.round(grown / 1048576)} MB`);
  assert.ok(fed < 256 * 1024 * 1024, `the server had to produce ${Math.round(fed / 1048576)} MB before the client stopped`);
});

test('a non-2xx final status is http_status with the status in the message', async () => {
  const e = await fetchError(fetchDocument(`${site.origin}/missing`, base));
  assert.equal(e.code, 'http_status');
  assert.equal(e.status, 404);
  assert.match(e.message, /404/);
});

test('a refused connection is a network error', async () => {
  const gone = await serve((_req, res) => res.end());
  await gone.close();
  assert.equal((await fetchError(fetchDocument(`${gone.origin}/`, base))).code, 'network');
});

test('isPrivateAddress', () => {
  const cases: Array<[string, boolean]> = [
    ['127.0.0.1', true], ['127.255.255.254', true], ['10.0.0.1', true], ['172.16.0.1', true], ['172.31.255.255', true],
    ['172.32.0.1', false], ['192.168.1.1', true], ['169.254.169.254', true], ['100.64.0.1', true], ['100.127.255.255', true],
    ['100.128.0.1', false], ['224.0.0.1', true], ['239.255.255.250', true], ['0.0.0.0', true], ['0.1.2.3', true],
    ['255.255.255.255', true], ['240.0.0.1', true], ['192.0.0.8', true], ['192.0.2.1', true], ['198.18.0.1', true],
    ['198.19.255.255', true], ['198.51.100.7', true], ['203.0.113.9', true], ['8.8.8.8', false], ['1.1.1.1', false],
    ['93.184.216.34', false],
    ['::1', true], ['::', true], ['[::1]', true], ['fe80::1', true], ['fe80::1%eth0', true], ['fc00::1', true], ['fd12:3456::1', true],
    ['ff02::1', true], ['2001:db8::1', true],
    ['::ffff:127.0.0.1', true], ['::ffff:7f00:1', true], ['::ffff:10.0.0.1', true], ['::ffff:169.254.169.254', true], ['::ffff:8.8.8.8', false],
    ['64:ff9b::7f00:1', true], ['64:ff9b::10.1.2.3', true], ['64:ff9b::808:808', false],
    ['2002:7f00:1::', true], ['2002:c0a8:101::1', true], ['2002:808:808::1', false],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', true], // Teredo, client 127.0.0.1 inverted
    ['2606:4700::1', false], ['2001:4860:4860::8888', false],
    ['not an ip', true], ['', true], ['1.2.3', true],
  ];
  for (const [ip, expected] of cases) assert.equal(isPrivateAddress(ip), expected, ip);
});

test('a Content-Encoding we cannot decode is refused and its connection closed at once, not left to the source server', { timeout: 10_000 }, async () => {
  let closed!: () => void;
  const gone = new Promise<void>((ok) => { closed = ok; });
  const srv = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'bogus' });
    res.write('partial'); // never ends: only the fetcher can end this connection
  });
  srv.on('connection', (s) => s.on('close', () => closed()));
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  try {
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/doc`;
    const e = await fetchDocument(url, { timeoutMs: 60_000, maxBytes: 1 << 20, allowPrivate: true }).then(() => null, (err: unknown) => err);
    assert.ok(e instanceof FetchError);
    assert.equal(e.code, 'decode');
    await gone; // never comes (the test fails at its timeout) while the fetcher keeps the connection
  } finally {
    srv.closeAllConnections();
    srv.close();
  }
});
