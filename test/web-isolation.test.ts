/**
 * Tenant isolation of the settings area and the public docs (docs/security.md#tenant-isolation,
 * docs/web.md), generated from the page table `PAGE_ROUTES` of src/web/app.ts like the API's
 * sweep (test/isolation.test.ts) is from the route table: two workspaces, each with a signed-in
 * user, keys, sources (one published under a slug, one with a slug but not published) and
 * webhook endpoints, all named distinctly. For every page route with a path parameter and every
 * method it takes, workspace B's value used by A's user answers exactly like a random one (the
 * same status, headers and page, byte for byte, but for its request id), and changes nothing;
 * B's unpublished slug answers like a random slug to anyone; no page of one workspace shows the
 * other's keys, sources or webhook endpoints; and the table's `public` flag is what the pages
 * do without a session. A page route with a path parameter this file does not know fails it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PAGE_ROUTES } from '../src/web/app.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { WebClient, csrfOf, owner, userOf, type WebPage } from './helpers/web.js';
import type { Ingestion } from './helpers/answers.js';

/** What one workspace is seeded with: its user, and the values that name its records. */
interface Seeded {
  client: WebClient;
  workspaceId: string;
  keyId: string;
  sourceId: string;
  webhookId: string;
  conversationId: string;
  agentId: string;
  /** A user of the workspace besides the signed-in one (an invited member). */
  userId: string;
  /** A slug of one of its sources that is not published (docs/web.md#public-docs). */
  hiddenSlug: string;
  publicSlug: string;
  /** Every name, id, prefix and URL of its records: none may appear on the other workspace's pages. */
  marks: string[];
}

/**
 * The seeded value of each path parameter, by the page route's name up to that parameter (the
 * record kind it names). A page route with a parameter not listed here fails the sweep.
 */
const PARAMS: Record<string, 'keyId' | 'sourceId' | 'webhookId' | 'userId' | 'hiddenSlug' | 'conversationId' | 'agentId'> = {
  '/settings/inbox/{id}': 'conversationId',
  '/settings/agents/{id}': 'agentId',
  '/settings/keys/{id}': 'keyId',
  '/settings/sources/{id}': 'sourceId',
  '/settings/webhooks/{id}': 'webhookId',
  '/settings/users/{id}': 'userId',
  '/docs/{slug}': 'hiddenSlug',
};

/** Form fields a POST needs besides `csrf` to get past its own checks to the id lookup. */
const FIELDS: Record<string, Record<string, string>> = { '/settings/sources/{id}/publish': { slug: 'sweep-slug' } };

const RANDOM = { id: '01a20000-0000-7000-8000-000000000000', slug: 'no-such-slug-0' };

const spec = (title: string) => JSON.stringify({ openapi: '3.0.3', info: { title, version: '1' }, paths: { [`/${title}`]: { get: { summary: `Read ${title}`, responses: { 200: { description: 'OK' } } } } } });

/** Seeds workspace `tag` (its API key `key`) and signs its user in. */
async function seed(srv: TestServer, tag: 'a' | 'b', workspaceId: string, key: string, client: WebClient): Promise<Seeded> {
  const marks: string[] = [];
  let keyId = '', sourceId = '', webhookId = '';
  for (let i = 0; i < 2; i++) {
    const k = await srv.admin.createKey({ workspace: workspaceId, name: `key-of-${tag}-${i}`, scopes: '*' });
    srv.watch(k.key);
    keyId = k.id;
    marks.push(`key-of-${tag}-${i}`, k.id, k.key.slice(0, 12));
    const s = await srv.call<Ingestion>('POST', '/api/v1/sources', { key, body: { content: spec(`spec-of-${tag}-${i}`), name: `source-of-${tag}-${i}` } });
    assert.equal(s.status, 201, s.text);
    sourceId = s.body.source.id;
    marks.push(`source-of-${tag}-${i}`, sourceId, `spec-of-${tag}-${i}`);
    const slug = `${tag}-${i === 0 ? 'public' : 'hidden'}`;
    const pd = await srv.call('PATCH', `/api/v1/sources/${sourceId}`, { key, body: { publicDocs: { enabled: true, published: i === 0, slug } } });
    assert.equal(pd.status, 200, pd.text);
    const h = await srv.call<{ webhookEndpoint: { id: string } }>('POST', '/api/v1/webhook-endpoints', { key, body: { url: `http://127.0.0.1:9/hook-of-${tag}-${i}`, events: ['*'], description: `webhook-of-${tag}-${i}` } });
    assert.equal(h.status, 201, h.text);
    webhookId = h.body.webhookEndpoint.id;
    marks.push(`hook-of-${tag}-${i}`, `webhook-of-${tag}-${i}`, webhookId);
  }
  const conv = await srv.call<{ conversation: { id: string } }>('POST', '/api/v1/conversations', { key, body: { subject: `conversation-of-${tag}`, customer: { email: `customer-of-${tag}@example.com` } } });
  assert.equal(conv.status, 201, conv.text);
  const agent = await srv.call<{ agent: { id: string; widgetKey: string } }>('POST', '/api/v1/agents', { key, body: { name: `agent-of-${tag}` } });
  assert.equal(agent.status, 201, agent.text);
  marks.push(`conversation-of-${tag}`, `customer-of-${tag}@example.com`, conv.body.conversation.id, `agent-of-${tag}`, agent.body.agent.id, agent.body.agent.widgetKey);
  const member = `member-of-${tag}@example.com`;
  const u = await srv.admin.execute('user.create', { workspace: workspaceId, email: member }) as { id: string; activationUrl: string };
  srv.watch(new URL(u.activationUrl).searchParams.get('token')!);
  marks.push(member, u.id);
  // The hidden slug is the second source's: its id is `sourceId`, and it is not published.
  return { client, workspaceId, keyId, sourceId, webhookId, conversationId: conv.body.conversation.id, agentId: agent.body.agent.id, userId: u.id, hiddenSlug: `${tag}-hidden`, publicSlug: `${tag}-public`, marks };
}

/**
 * What an answer says, with the values that differ between any two requests set aside: the
 * `X-Request-Id` header (and `Date`, when a second passes between them). The body is compared
 * byte for byte: within a session the `csrf` field does not change, and nothing else on a page
 * is per request.
 */
function normalized(p: WebPage): { status: number; headers: Array<[string, string]>; text: string } {
  return { status: p.status, headers: [...p.headers].filter(([k]) => k !== 'x-request-id' && k !== 'date'), text: p.text };
}

/** B's records as stored: the sweep's POSTs must leave them exactly so. */
function snapshot(srv: TestServer, workspaceId: string): string {
  const ws = srv.store.workspace(workspaceId)!;
  const keys = [...srv.store.system.table('key').values()].filter((k) => k.workspaceId === workspaceId);
  return JSON.stringify([keys, [...ws.db.table('source').values()], [...ws.db.table('webhook_endpoint').values()], [...ws.db.table('conversation').values()], [...ws.db.table('message').values()], [...ws.db.table('agent').values()]]);
}

/** The route's path with each parameter taken from `values` by the record kind it names. */
function fill(name: string, pick: (param: string, prefix: string) => string): string {
  return name.replace(/\{(\w+)\}/g, (m, p: string, at: number) => pick(p, name.slice(0, at + m.length)));
}

test('pages: another workspace\'s id or unpublished slug answers exactly like a random one; no page shows another workspace\'s records', { timeout: 120_000 }, async () => {
  const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000', WEBHOOK_ALLOW_PRIVATE: 'true' }, captureLogs: true });
  try {
    // No delivery is sent: a failed attempt would update an endpoint's record (its failure
    // counts) while the sweep checks that B's records stay exactly as they were.
    await srv.webhooks.close();
    const other = await srv.newWorkspace('Other tenant');
    const a = await seed(srv, 'a', srv.workspaceId, srv.key, await owner(srv));
    const b = await seed(srv, 'b', other.workspaceId, other.key, await userOf(srv, other.workspaceId, 'b@example.com'));
    const anon = new WebClient(srv);
    const before = snapshot(srv, b.workspaceId);
    const csrf = csrfOf((await a.client.get('/settings/keys')).text);
    let checks = 0;
    for (const r of PAGE_ROUTES) {
      const params = [...r.name.matchAll(/\{(\w+)\}/g)];
      if (params.length === 0) continue;
      for (const m of params) {
        const prefix = r.name.slice(0, m.index! + m[0].length);
        assert.ok(prefix in PARAMS, `the page sweep does not know the path parameter {${m[1]}} of ${r.name}: add it to PARAMS and seed()`);
      }
      for (const method of r.methods) {
        // Each parameter in turn is B's (the others A's own).
        for (const m of params) {
          const target = r.name.slice(0, m.index! + m[0].length);
          const path = (value: string) => fill(r.name, (p, prefix) => (prefix === target ? value : a[PARAMS[prefix]]));
          const randomValue = m[1] === 'slug' ? RANDOM.slug : RANDOM.id;
          const send = (to: WebClient, value: string) => method === 'GET' ? to.get(path(value)) : to.post(path(value), { csrf, ...FIELDS[r.name] });
          const foreign = await send(a.client, b[PARAMS[target]]);
          const random = await send(a.client, randomValue);
          assert.equal(foreign.status, 404, `${method} ${r.name} with B's ${m[1]}: ${foreign.text.slice(0, 300)}`);
          assert.deepEqual(normalized(foreign), normalized(random), `${method} ${r.name}: B's ${m[1]} answers exactly like a random one`);
          if (r.public) {
            // Anyone else (no session) gets the same answer too.
            assert.deepEqual(normalized(await send(anon, b[PARAMS[target]])), normalized(await send(anon, randomValue)), `${method} ${r.name} without a session`);
          }
          checks++;
        }
      }
    }
    assert.ok(checks >= 9, `only ${checks} page checks`);
    assert.equal(snapshot(srv, b.workspaceId), before, 'the POSTs with B\'s ids changed none of B\'s records');
    // The sweep reached real pages: A's own ids and B's published slug are served.
    assert.equal((await a.client.get(`/settings/keys/${a.keyId}/revoke`)).status, 200);
    assert.equal((await anon.get(`/docs/${b.publicSlug}`)).status, 200, 'a published slug is public by design');
    assert.equal((await anon.get(`/docs/${a.hiddenSlug}`)).status, 404);

    // No page of one workspace shows the other's keys, sources or webhooks — not even when its
    // id is in the query (`?revoked=`, `?published=`, `?unpublished=`).
    for (const [me, them] of [[a, b], [b, a]] as const) {
      const query = `?revoked=${them.keyId}&published=${them.sourceId}&unpublished=${them.sourceId}&deleted=1`;
      let pages = 0;
      for (const r of PAGE_ROUTES.filter((x) => x.methods.includes('GET'))) {
        const path = fill(r.name, (p, prefix) => (p === 'slug' ? me.publicSlug : me[PARAMS[prefix]]));
        for (const target of [path, path + query]) {
          const page = await me.client.get(target);
          assert.ok(page.status < 500, `${target}: ${page.status}`);
          // `/docs` lists every workspace's published docs by design (their name and overview), never an unpublished one's.
          const listed = (mark: string) => r.name === '/docs' && /^(source|spec)-of-[ab]-0$/.test(mark);
          for (const mark of them.marks) {
            if (!listed(mark)) assert.ok(!page.text.includes(mark), `GET ${target} of ${me.workspaceId} shows ${mark} of the other workspace`);
          }
          if (r.name === '/docs') {
            assert.ok(page.text.includes(`/docs/${them.publicSlug}`) && !page.text.includes(them.hiddenSlug), '/docs: published only');
          }
          pages++;
        }
      }
      assert.ok(pages >= 16, `${pages} pages`);
      // And the lists do show the workspace's own records (the check above is not vacuous).
      const own = (await me.client.get('/settings/keys')).text + (await me.client.get('/settings/sources')).text + (await me.client.get('/settings/webhooks')).text
        + (await me.client.get('/settings/users')).text + (await me.client.get('/settings/inbox')).text + (await me.client.get('/settings/agents')).text;
      for (const mark of me.marks.filter((x) => /-of-/.test(x) && !x.startsWith('spec-'))) assert.ok(own.includes(mark), `${mark} is listed for its own workspace`);
    }

    // The table's `public` flag is what a page does without a session: a page that needs one
    // answers 303 to the sign-in page (a POST too, changing nothing), a public one does not.
    const keysBefore = srv.store.system.table('key').size;
    for (const r of PAGE_ROUTES) {
      for (const method of r.methods) {
        const path = fill(r.name, (p, prefix) => (p === 'slug' ? a.publicSlug : a[PARAMS[prefix]]));
        const page = method === 'GET' ? await anon.get(path) : await anon.post(path, { name: 'anonymous', scopes: '*', slug: 'anon-slug', url: 'http://127.0.0.1:9/anon', events: '*' });
        const toSignIn = page.status === 303 && page.location === '/settings/login';
        assert.equal(toSignIn, !r.public, `${method} ${r.name} without a session: ${page.status} ${page.location ?? ''} (public: ${r.public})`);
      }
    }
    assert.equal(srv.store.system.table('key').size, keysBefore, 'no key was made without a session');
    assert.equal(snapshot(srv, a.workspaceId).includes('anon'), false, 'nothing was changed without a session');
  } finally { await srv.close(); }
});
