/**
 * Website crawl and GitHub sources (docs/sources.md#website-crawl, docs/sources.md#github): a local 6-page site with cycles, other-origin and
 * non-HTML links, depth and page bounds; a local fake of the GitHub REST API.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { crawlWebsite, type CrawlOptions } from '../src/ingest/fetch/crawl.js';
import { FetchError, type FetchOptions } from '../src/ingest/fetch/fetch.js';
import { fetchGithubDocs, parseGithubRepoUrl } from '../src/ingest/fetch/github.js';
import { IngestError } from '../src/ingest/types.js';
import { inlineAnalyzer, analyzeJob } from '../src/ingest/analyze.js';

interface Local {
  origin: string;
  hits: Map<string, number>;
  requests: Array<{ url: string; accept: string }>;
  close(): Promise<void>;
}

const servers: Local[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function serve(handler: (req: http.IncomingMessage, res: http.ServerResponse, origin: string) => void): Promise<Local> {
  const server = http.createServer();
  const local: Local = {
    origin: '',
    hits: new Map(),
    requests: [],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('request', (req, res) => {
    const path = req.url ?? '/';
    local.hits.set(path, (local.hits.get(path) ?? 0) + 1);
    local.requests.push({ url: path, accept: String(req.headers.accept ?? '') });
    handler(req, res, local.origin);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  local.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  servers.push(local);
  return local;
}

const base: FetchOptions & { links: CrawlOptions['links'] } = { timeoutMs: 5000, maxBytes: 1024 * 1024, allowPrivate: true, links: (job) => inlineAnalyzer.links(job, 'test') };

// ---------------------------------------------------------------------------------------------
// Website

const external = await serve((_req, res) => res.end('<title>External</title>'));

const page = (title: string, links: string[]): string =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1><p>About ${title}.</p>` +
  links.map((l) => `<a href="${l}">${l}</a>`).join(' ') + '</body></html>';

/** Depths: / 0; /a /b 1; /c /d 2; /e 3. Cycles back to / and /a; fragments; other origin; PDF; JSON; 404. */
const PAGES: Record<string, string[]> = {
  '/': ['/a', 'b', '/#top', 'mailto:x@example.com'],
  '/a': ['/', '/c', `${external.origin}/ext`, '/manual.pdf', '/data'],
  '/b': ['/d', '/a#part', '/missing', '/old'],
  '/c': ['/e', '/b'],
  '/d': ['/e', '/c#x'],
  '/e': ['/', '/f'],
  '/f': [],
};

const site = await serve((req, res) => {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  if (path === '/manual.pdf') {
    res.writeHead(200, { 'content-type': 'application/pdf' });
    res.end('%PDF-1.4');
  } else if (path === '/data') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"not":"html"}');
  } else if (path === '/old') {
    res.writeHead(301, { location: '/d' }); // redirects to a page also linked directly
    res.end();
  } else if (PAGES[path]) {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(page(`Page ${path}`, PAGES[path]));
  } else {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<title>Not found</title>');
  }
});

test('crawls same-origin HTML pages breadth-first, each once, skipping non-HTML and failures', async () => {
  site.hits.clear();
  const r = await crawlWebsite(`${site.origin}/`, { ...base, maxPages: 50, maxDepth: 3 });
  assert.deepEqual(r.pages.map((p) => new URL(p.url).pathname), ['/', '/a', '/b', '/c', '/d', '/e']);
  // Pages come back as bytes; the analyzer parses them (on a worker in the server).
  const analysis = analyzeJob({ op: 'site', pages: r.pages });
  assert.equal(analysis.title, 'Page /');
  assert.equal(analysis.record.documents[0].kind, 'page');
  assert.match(analysis.prepared.texts[0], /About Page \/\./);
  // Each URL is fetched once; /d twice only because /old redirects to it (the copy is dropped).
  for (const [path, n] of site.hits) assert.equal(n, path === '/d' ? 2 : 1, `${path} fetches`);
  assert.equal(r.pages.filter((p) => p.url.endsWith('/d')).length, 1);
  assert.equal(site.hits.get('/manual.pdf'), undefined, 'a .pdf link is not fetched');
  assert.equal(site.hits.get('/f'), undefined, 'depth 4 is beyond maxDepth 3');
  assert.equal(external.hits.size, 0, 'other origins are not followed');
  assert.deepEqual(new Set(r.skipped), new Set([`${site.origin}/manual.pdf`, `${site.origin}/data`, `${site.origin}/missing`]));
});

test('maxDepth and maxPages bound the crawl', async () => {
  const shallow = await crawlWebsite(`${site.origin}/`, { ...base, maxPages: 50, maxDepth: 1 });
  assert.deepEqual(shallow.pages.map((p) => new URL(p.url).pathname), ['/', '/a', '/b']);
  const only = await crawlWebsite(`${site.origin}/`, { ...base, maxPages: 50, maxDepth: 0 });
  assert.deepEqual(only.pages.map((p) => new URL(p.url).pathname), ['/']);
  site.hits.clear();
  const few = await crawlWebsite(`${site.origin}/`, { ...base, maxPages: 2 });
  assert.deepEqual(few.pages.map((p) => new URL(p.url).pathname), ['/', '/a']);
  assert.equal([...site.hits.values()].reduce((a, b) => a + b, 0), 2);
  const deep = await crawlWebsite(`${site.origin}/`, { ...base, maxPages: 50, maxDepth: 4 });
  assert.equal(deep.pages.length, 7);
});

test('the start page failing throws its FetchError; SSRF rules apply to the crawl', async () => {
  await assert.rejects(crawlWebsite(`${site.origin}/missing`, { ...base, maxPages: 5 }), (e: unknown) => e instanceof FetchError && e.code === 'http_status');
  await assert.rejects(crawlWebsite(`${site.origin}/`, { ...base, allowPrivate: false, maxPages: 5 }), (e: unknown) => e instanceof FetchError && e.code === 'unreachable');
  await assert.rejects(crawlWebsite('ftp://example.com/', { ...base, maxPages: 5 }), (e: unknown) => e instanceof FetchError && e.code === 'scheme');
  await assert.rejects(crawlWebsite(`${site.origin}/data`, { ...base, maxPages: 5 }), (e: unknown) => e instanceof IngestError && /not an HTML page/.test(e.message));
});

// ---------------------------------------------------------------------------------------------
// GitHub

const README = '# Widgets\n\nThe widgets library.\n';
const FILES: Record<string, string> = {
  'docs/intro.md': '# Intro\n\nStart here.\n',
  'docs/guides/setup.md': '# Setup\n\nInstall it.\n',
  'docs/guides/deep/advanced.markdown': '# Advanced\n\nDeep stuff.\n',
  'docs/guides/notes.txt': 'not markdown',
  'docs/logo.png': 'PNG',
};
const DIRS: Record<string, Array<{ type: string; name: string; path: string }>> = {
  docs: [
    { type: 'file', name: 'logo.png', path: 'docs/logo.png' },
    { type: 'dir', name: 'guides', path: 'docs/guides' },
    { type: 'file', name: 'intro.md', path: 'docs/intro.md' },
  ],
  'docs/guides': [
    { type: 'file', name: 'setup.md', path: 'docs/guides/setup.md' },
    { type: 'file', name: 'notes.txt', path: 'docs/guides/notes.txt' },
    { type: 'dir', name: 'deep', path: 'docs/guides/deep' },
  ],
  'docs/guides/deep': [{ type: 'file', name: 'advanced.markdown', path: 'docs/guides/deep/advanced.markdown' }],
};

const json = (res: http.ServerResponse, status: number, v: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(v));
};

const gh = await serve((req, res) => {
  const u = new URL(req.url ?? '/', 'http://x');
  const path = decodeURIComponent(u.pathname.replace(/^\/api\/v3/, ''));
  const raw = req.headers.accept === 'application/vnd.github.raw';
  if (path === '/repos/acme/widgets') return json(res, 200, { full_name: 'acme/widgets', description: 'Widgets for all', default_branch: 'main' });
  if (path === '/repos/acme/bare') return json(res, 200, { full_name: 'acme/bare', description: null });
  if (path === '/repos/acme/widgets/readme') {
    if (raw) {
      res.writeHead(200, { 'content-type': 'application/vnd.github.raw; charset=utf-8' });
      return res.end(README);
    }
    return json(res, 200, { path: 'README.md', encoding: 'base64', content: Buffer.from(README).toString('base64') });
  }
  if (path === '/repos/acme/b64/readme' || path === '/repos/acme/b64') {
    if (path.endsWith('/b64')) return json(res, 200, { full_name: 'acme/b64' });
    return json(res, 200, { path: 'docs/README.rst', encoding: 'base64', content: Buffer.from('Encoded readme').toString('base64') });
  }
  const m = /^\/repos\/acme\/widgets\/contents\/(.+)$/.exec(path);
  if (m && DIRS[m[1]]) return json(res, 200, DIRS[m[1]]);
  if (m && FILES[m[1]] !== undefined && raw) {
    res.writeHead(200, { 'content-type': 'application/vnd.github.raw' });
    return res.end(FILES[m[1]]);
  }
  json(res, 404, { message: 'Not Found' });
});

const ghOpts = { ...base, allowPrivate: false, apiUrl: gh.origin };

test('github: README and docs Markdown (nested dirs, non-md skipped) through the API, apiUrl trusted', async () => {
  gh.requests.length = 0;
  const r = await fetchGithubDocs('https://github.com/acme/widgets', ghOpts);
  assert.equal(r.title, 'acme/widgets');
  assert.equal(r.description, 'Widgets for all');
  assert.deepEqual(r.documents.map((d) => d.title), ['README.md', 'docs/guides/deep/advanced.markdown', 'docs/guides/setup.md', 'docs/intro.md']);
  assert.ok(r.documents.every((d) => d.kind === 'file'));
  assert.equal(r.documents[0].text, README);
  assert.equal(r.documents[3].text, FILES['docs/intro.md']);
  const readmeReq = gh.requests.find((q) => q.url.endsWith('/readme'));
  assert.equal(readmeReq?.accept, 'application/vnd.github.raw');
  assert.ok(!gh.requests.some((q) => q.url.includes('logo.png') || q.url.includes('notes.txt')), 'non-Markdown files are not fetched');
});

test('github: URL forms, ref, maxFiles, an API base path, base64 README, no docs dir', async () => {
  gh.requests.length = 0;
  const r = await fetchGithubDocs('https://github.com/acme/widgets.git', { ...ghOpts, maxFiles: 1 });
  assert.equal(r.documents.length, 2); // README + one docs file
  await fetchGithubDocs('https://github.com/acme/widgets/tree/dev/docs', { ...ghOpts, maxFiles: 1 });
  assert.ok(gh.requests.some((q) => q.url === '/repos/acme/widgets/readme?ref=dev'));
  const prefixed = await fetchGithubDocs('https://www.github.com/acme/widgets/', { ...ghOpts, apiUrl: `${gh.origin}/api/v3/` });
  assert.equal(prefixed.documents.length, 4);
  const b64 = await fetchGithubDocs('https://github.com/acme/b64', ghOpts);
  assert.deepEqual(b64.documents, [{ kind: 'file', title: 'docs/README.rst', text: 'Encoded readme' }]);
  const bare = await fetchGithubDocs('https://github.com/acme/bare', ghOpts);
  assert.deepEqual(bare, { title: 'acme/bare', documents: [] });
  assert.deepEqual(parseGithubRepoUrl('http://github.com/a-b/c.d.git'), { owner: 'a-b', repo: 'c.d' });
});

test('github: a missing repository is http_status 404; not a repository URL is an IngestError', async () => {
  await assert.rejects(fetchGithubDocs('https://github.com/acme/nope', ghOpts), (e: unknown) => e instanceof FetchError && e.code === 'http_status' && e.status === 404);
  for (const url of ['https://gitlab.com/acme/widgets', 'https://github.com/acme', 'https://github.com/acme/widgets/issues', 'not a url', 'ftp://github.com/a/b']) {
    await assert.rejects(fetchGithubDocs(url, ghOpts), IngestError, url);
  }
});
