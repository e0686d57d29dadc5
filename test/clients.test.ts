/**
 * GET /api/v1/clients, /api/v1/clients/{id} (docs/api.md#client-object): read-only
 * aggregates of conversations grouped by customer company (trimmed, case-insensitive), else
 * by email domain, with issues joining the group of their own customer, else of their
 * conversation. The aggregates are kept incrementally; a property test compares them with the
 * same aggregates computed from scratch from the conversation and issue lists.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, tempDir, type CallOptions, type CallResult, type TestServer } from './helpers/server.js';
import { mulberry32 as prng } from './helpers/prng.js';
import { walkList } from './helpers/lists.js';

let srv: TestServer;
before(async () => { srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } }); });
after(async () => { await srv.close(); });

interface Space { workspaceId: string; key: string; call<B = unknown>(method: string, path: string, opts?: CallOptions): Promise<CallResult<B>> }

async function space(on: TestServer = srv): Promise<Space> {
  const { workspaceId, key } = await on.newWorkspace();
  return { workspaceId, key, call: <B,>(m: string, p: string, o: CallOptions = {}) => on.call<B>(m, p, { key, ...o }) };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const NOT_FOUND = { code: 'not_found', error: 'Record not found.' };
const iso = (ms: number) => new Date(ms).toISOString();
const CL = '/api/v1/clients';

async function ok(w: Space, method: string, path: string, body?: unknown, status = 200): Promise<any> {
  const r = await w.call(method, path, body === undefined ? {} : { body });
  assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
  return r.body;
}
const conversation = async (w: Space, customer: Record<string, string>, subject = 'Help') =>
  (await ok(w, 'POST', '/api/v1/conversations', { subject, customer }, 201)).conversation;
const message = (w: Space, id: string, role: 'user' | 'agent', body = 'text') => ok(w, 'POST', `/api/v1/conversations/${id}/messages`, { role, body }, 201);
const patchConv = (w: Space, id: string, body: unknown) => ok(w, 'PATCH', `/api/v1/conversations/${id}`, body);

/** Every item of a list, walking the pages with `limit`. */
async function listAll(w: Space, path: string, items: string, limit = 100): Promise<any[]> {
  return (await walkList<any>((p) => w.call('GET', p), path, items, limit)).items;
}
const clients = (w: Space) => listAll(w, CL, 'clients');
const byName = (list: any[], name: string) => list.find((c) => c.name === name);

/** A client body in the documented key order: zero counts unless given. */
function client(fields: Partial<Record<string, unknown>> & { id: string; name: string }): Record<string, unknown> {
  const { id, name, ...rest } = fields;
  return {
    object: 'client', id, name, domain: null, conversationCount: 0, openCount: 0, waitingCount: 0,
    solvedCount: 0, customerCount: 0, issueCount: 0, firstSeenAt: undefined, lastActivityAt: undefined, ...rest,
  };
}

describe('grouping', () => {
  test('companies "Acme", " acme ", "ACME" → one client named as first seen; without a company → grouped by email domain', async () => {
    const w = await space();
    const t0 = srv.clock.now();
    await conversation(w, { email: 'ada@acme.com', company: 'Acme' });
    srv.clock.advance(1000);
    await conversation(w, { email: 'bob@acme.io', company: ' acme ' });
    srv.clock.advance(1000);
    await conversation(w, { email: 'cy@elsewhere.org', company: 'ACME' });
    srv.clock.advance(1000);
    await conversation(w, { email: 'dan@Globex.COM' });
    srv.clock.advance(1000);
    await conversation(w, { email: 'eve@globex.com', company: '   ' }); // a blank company is no company
    const list = await clients(w);
    assert.equal(list.length, 2);
    const acme = byName(list, 'Acme');
    const globex = byName(list, 'globex.com');
    assert.match(acme.id, UUID);
    assert.match(globex.id, UUID);
    assert.deepEqual(list, [
      client({ id: globex.id, name: 'globex.com', domain: 'globex.com', conversationCount: 2, openCount: 2, customerCount: 2, firstSeenAt: iso(t0 + 3000), lastActivityAt: iso(t0 + 4000) }),
      client({ id: acme.id, name: 'Acme', domain: 'acme.com', conversationCount: 3, openCount: 3, customerCount: 3, firstSeenAt: iso(t0), lastActivityAt: iso(t0 + 2000) }),
    ]);
    assert.deepEqual(await ok(w, 'GET', `${CL}/${acme.id}`), { client: list[1] });
    assert.deepEqual(await ok(w, 'GET', `${CL}/${globex.id}`), { client: list[0] });
  });

  test('a company differing only by case or spaces in another conversation later keeps the client and its name', async () => {
    const w = await space();
    await conversation(w, { email: 'a@x.com', company: '  Initech Ltd ' });
    const before = (await clients(w))[0];
    await conversation(w, { email: 'b@y.com', company: 'INITECH LTD' });
    const after = await clients(w);
    assert.equal(after.length, 1);
    assert.equal(after[0].id, before.id);
    assert.equal(after[0].name, 'Initech Ltd');
    assert.equal(after[0].conversationCount, 2);
    // A different company with the same domain is a different client.
    await conversation(w, { email: 'c@x.com', company: 'Initrode' });
    assert.equal((await clients(w)).length, 2);
  });
});

describe('counts', () => {
  test('openCount / waitingCount / solvedCount follow messages and PATCH; lastActivityAt follows the clock', async () => {
    const w = await space();
    const t0 = srv.clock.now();
    const a = await conversation(w, { email: 'a@acme.com', company: 'Acme' });
    const b = await conversation(w, { email: 'b@acme.com', company: 'Acme' });
    const c = await conversation(w, { email: 'c@acme.com', company: 'Acme' });
    const id = (await clients(w))[0].id;
    const get = async () => (await ok(w, 'GET', `${CL}/${id}`)).client;
    const base = { id, name: 'Acme', domain: 'acme.com', conversationCount: 3, customerCount: 3, firstSeenAt: iso(t0) };
    assert.deepEqual(await get(), client({ ...base, openCount: 3, lastActivityAt: iso(t0) }));

    srv.clock.advance(10_000); // an agent reply: open → waiting
    await message(w, a.id, 'agent');
    assert.deepEqual(await get(), client({ ...base, openCount: 2, waitingCount: 1, lastActivityAt: iso(t0 + 10_000) }));

    srv.clock.advance(10_000); // PATCH solved
    await patchConv(w, b.id, { status: 'solved' });
    assert.deepEqual(await get(), client({ ...base, openCount: 1, waitingCount: 1, solvedCount: 1, lastActivityAt: iso(t0 + 20_000) }));

    srv.clock.advance(10_000); // a user message reopens the solved one
    await message(w, b.id, 'user');
    assert.deepEqual(await get(), client({ ...base, openCount: 2, waitingCount: 1, lastActivityAt: iso(t0 + 30_000) }));

    srv.clock.advance(10_000); // a user message on the waiting one reopens it too
    await message(w, a.id, 'user');
    assert.deepEqual(await get(), client({ ...base, openCount: 3, lastActivityAt: iso(t0 + 40_000) }));

    srv.clock.advance(10_000); // PATCH waiting, then solved, all three
    for (const conv of [a, b, c]) await patchConv(w, conv.id, { status: 'waiting' });
    assert.deepEqual(await get(), client({ ...base, waitingCount: 3, lastActivityAt: iso(t0 + 50_000) }));
    srv.clock.advance(10_000);
    for (const conv of [a, b, c]) await patchConv(w, conv.id, { status: 'solved' });
    assert.deepEqual(await get(), client({ ...base, solvedCount: 3, lastActivityAt: iso(t0 + 60_000) }));

    // A PATCH that changes nothing does not move the activity.
    srv.clock.advance(10_000);
    await patchConv(w, a.id, { status: 'solved' });
    assert.deepEqual(await get(), client({ ...base, solvedCount: 3, lastActivityAt: iso(t0 + 60_000) }));
    // A priority change is activity.
    await patchConv(w, a.id, { priority: 'high' });
    assert.deepEqual(await get(), client({ ...base, solvedCount: 3, lastActivityAt: iso(t0 + 70_000) }));
  });

  test('customerCount counts distinct customers: the same email (any case) is one customer', async () => {
    const w = await space();
    await conversation(w, { email: 'ada@acme.com', company: 'Acme' });
    await conversation(w, { email: 'ADA@acme.com', company: 'acme' });
    await conversation(w, { email: 'ada@acme.com', company: 'Acme' });
    let c = (await clients(w))[0];
    assert.equal(c.conversationCount, 3);
    assert.equal(c.customerCount, 1);
    await conversation(w, { email: 'bob@acme.com', company: 'Acme' });
    c = (await clients(w))[0];
    assert.equal(c.conversationCount, 4);
    assert.equal(c.customerCount, 2);
  });

  test('issueCount: issues with their own customer and issues opened from a conversation; activity and firstSeenAt include issues', async () => {
    const w = await space();
    const t0 = srv.clock.now();
    const conv = await conversation(w, { email: 'a@acme.com', company: 'Acme' });
    const acmeId = (await clients(w))[0].id;
    srv.clock.advance(1000);
    // Linked to the conversation (customer defaults to the conversation's).
    await ok(w, 'POST', '/api/v1/issues', { subject: 'From conv', conversationId: conv.id }, 201);
    srv.clock.advance(1000);
    // Own customer of the same company, other spelling.
    const own = (await ok(w, 'POST', '/api/v1/issues', { subject: 'Own', customer: { company: ' ACME', name: 'Zed' } }, 201)).issue;
    srv.clock.advance(1000);
    // No customer and no conversation: no client.
    await ok(w, 'POST', '/api/v1/issues', { subject: 'Nobody' }, 201);
    // An issue of a new domain only: a client with no conversations.
    srv.clock.advance(1000);
    const lone = (await ok(w, 'POST', '/api/v1/issues', { subject: 'Lone', customer: { email: 'x@Umbrella.example' } }, 201)).issue;
    const list = await clients(w);
    assert.equal(list.length, 2);
    const umbrella = byName(list, 'umbrella.example');
    assert.deepEqual(list, [
      client({ id: umbrella.id, name: 'umbrella.example', domain: 'umbrella.example', issueCount: 1, firstSeenAt: iso(t0 + 4000), lastActivityAt: iso(t0 + 4000) }),
      client({ id: acmeId, name: 'Acme', domain: 'acme.com', conversationCount: 1, openCount: 1, customerCount: 1, issueCount: 2, firstSeenAt: iso(t0), lastActivityAt: iso(t0 + 2000) }),
    ]);
    // Updating an issue is activity of its client.
    srv.clock.advance(1000);
    await ok(w, 'PATCH', `/api/v1/issues/${own.id}`, { state: 'on_you' });
    assert.equal((await ok(w, 'GET', `${CL}/${acmeId}`)).client.lastActivityAt, iso(t0 + 5000));
    // Moving an issue to another customer's company moves its count.
    srv.clock.advance(1000);
    await ok(w, 'PATCH', `/api/v1/issues/${lone.id}`, { customer: { company: 'acme' } });
    const moved = await clients(w);
    assert.deepEqual(moved, [client({ id: acmeId, name: 'Acme', domain: 'acme.com', conversationCount: 1, openCount: 1, customerCount: 1, issueCount: 3, firstSeenAt: iso(t0), lastActivityAt: iso(t0 + 6000) })]);
    const gone = await w.call('GET', `${CL}/${umbrella.id}`);
    assert.equal(gone.status, 404);
    assert.deepEqual(gone.body, NOT_FOUND);
  });
});

describe('listing', () => {
  test('GET /clients → most recent activity first; activity on an old client moves it to the top; pages with limit/cursor', async () => {
    const w = await space();
    const convs: any[] = [];
    for (let i = 0; i < 5; i++) {
      convs.push(await conversation(w, { email: `p@c${i}.example` }));
      srv.clock.advance(1000);
    }
    let names = (await clients(w)).map((c) => c.name);
    assert.deepEqual(names, ['c4.example', 'c3.example', 'c2.example', 'c1.example', 'c0.example']);
    await message(w, convs[1].id, 'user', 'ping');
    names = (await clients(w)).map((c) => c.name);
    assert.deepEqual(names, ['c1.example', 'c4.example', 'c3.example', 'c2.example', 'c0.example']);
    // Pages of 2 give the same order.
    const paged = await listAll(w, CL, 'clients', 2);
    assert.deepEqual(paged.map((c) => c.name), names);
    const first = await ok(w, 'GET', `${CL}?limit=2`);
    assert.deepEqual(Object.keys(first), ['object', 'hasMore', 'nextCursor', 'clients']);
    assert.equal(first.hasMore, true);
  });

  test('GET /clients in a new workspace → an empty list', async () => {
    const w = await space();
    assert.deepEqual(await ok(w, 'GET', CL), { object: 'list', hasMore: false, nextCursor: null, clients: [] });
  });

  test('GET /clients/{id}: unknown id → 404; another workspace\'s client → 404; lists are per workspace', async () => {
    const a = await space();
    const b = await space();
    await conversation(a, { email: 'x@shared.example', company: 'Shared' });
    await conversation(b, { email: 'x@shared.example', company: 'Shared' });
    const ca = (await clients(a))[0];
    const cb = (await clients(b))[0];
    assert.notEqual(ca.id, cb.id, 'the same company in two workspaces is two clients');
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope', cb.id]) {
      const r = await a.call('GET', `${CL}/${id}`);
      assert.equal(r.status, 404, r.text);
      assert.deepEqual(r.body, NOT_FOUND);
    }
    assert.equal((await clients(a)).length, 1);
    assert.equal((await clients(b)).length, 1);
  });

  test('GET /clients and /clients/{id} need clients:read: another scope → 403', async () => {
    const w = await space();
    await conversation(w, { email: 'x@y.example' });
    const id = (await clients(w))[0].id;
    const wrong = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'conversations:write,agents:read' });
    const right = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'clients:read' });
    for (const path of [CL, `${CL}/${id}`]) {
      const r = await w.call('GET', path, { key: wrong });
      assert.equal(r.status, 403, r.text);
      assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs clients:read.' });
      assert.equal((await w.call('GET', path, { key: right })).status, 200);
    }
  });

  test('a client keeps its id, name and counts across a server restart on the same data dir', async () => {
    const dataDir = tempDir();
    const s1 = await startTestServer({ dataDir });
    const key = s1.key;
    const w: Space = { workspaceId: s1.workspaceId, key, call: <B,>(m: string, p: string, o: CallOptions = {}) => s1.call<B>(m, p, { key, ...o }) };
    const c = await conversation(w, { email: 'a@acme.com', company: 'Acme' });
    s1.clock.advance(5000);
    await message(w, c.id, 'agent');
    await conversation(w, { email: 'b@globex.example' });
    await ok(w, 'POST', '/api/v1/issues', { subject: 'x', conversationId: c.id }, 201);
    const before1 = await clients(w);
    assert.equal(before1.length, 2);
    await s1.close();

    const s2 = await startTestServer({ dataDir });
    try {
      const w2: Space = { workspaceId: s1.workspaceId, key, call: <B,>(m: string, p: string, o: CallOptions = {}) => s2.call<B>(m, p, { key, ...o }) };
      assert.deepEqual(await clients(w2), before1);
      for (const cl of before1) assert.deepEqual(await ok(w2, 'GET', `${CL}/${cl.id}`), { client: cl });
    } finally {
      await s2.close();
    }
  });
});

/**
 * A test server on a fresh data dir, and a workspace handle (the bootstrap workspace and key)
 * that keeps working across `restart()`s of the server on that same dir.
 */
async function restartable(env?: Record<string, string>): Promise<{ w: Space; server(): TestServer; restart(): Promise<void>; close(): Promise<void> }> {
  const dataDir = tempDir();
  let on = await startTestServer({ dataDir, env });
  const key = on.key;
  const w: Space = { workspaceId: on.workspaceId, key, call: <B,>(m: string, p: string, o: CallOptions = {}) => on.call<B>(m, p, { key, ...o }) };
  return {
    w,
    server: () => on,
    restart: async () => { await on.close(); on = await startTestServer({ dataDir, env }); },
    close: () => on.close(),
  };
}

describe('issues that follow their conversation', () => {
  test('an issue with a name-only customer opened from a conversation counts for the conversation\'s client — and the server starts again on that data dir', async () => {
    const r = await restartable();
    const w = r.w;
    try {
      const conv = await conversation(w, { email: 'a@acme.com', company: 'Acme' });
      await ok(w, 'POST', '/api/v1/issues', { subject: 'x', conversationId: conv.id, customer: { name: 'Only a name' } }, 201);
      const before1 = await clients(w);
      assert.equal(before1.length, 1);
      assert.equal(before1[0].issueCount, 1);
      await r.restart(); // threw "Cannot read properties of undefined (reading 'get')" during replay
      assert.deepEqual(await clients(w), before1);
    } finally {
      await r.close();
    }
  });

  test('after compaction an issue may be replayed before its conversation: it is still counted', async () => {
    const r = await restartable();
    const w = r.w;
    try {
      // The first record of the workspace is an issue: the compacted log lists issues before conversations.
      await ok(w, 'POST', '/api/v1/issues', { subject: 'first, no customer' }, 201);
      const conv = await conversation(w, { email: 'a@globex.example' });
      await ok(w, 'POST', '/api/v1/issues', { subject: 'linked', conversationId: conv.id, customer: { name: 'N' } }, 201);
      const before1 = await clients(w);
      assert.equal(before1[0].issueCount, 1);
      await r.server().store.workspace(w.workspaceId)!.db.compact();
      await r.restart();
      assert.deepEqual(await clients(w), before1);
    } finally {
      await r.close();
    }
  });
});

/* ---------- property test: incremental aggregates equal aggregates computed from scratch ---------- */


const domainOf = (email: string | undefined): string | null => {
  const at = email?.lastIndexOf('@') ?? -1;
  return at >= 0 ? email!.slice(at + 1).trim().toLowerCase() || null : null;
};
const keyOf = (company: string | undefined, email: string | undefined): string | null => {
  const c = company?.trim();
  if (c) return `company:${c.toLowerCase()}`;
  const d = domainOf(email);
  return d ? `domain:${d}` : null;
};

interface Member { company?: string; email?: string }

/**
 * The clients computed from scratch from the full conversation and issue lists. `firstSeen`
 * gives, per group key, the member that created the group (import order), which names it.
 */
function fromScratch(conversations: any[], issues: any[], firstSeen: Map<string, Member>, ids: Map<string, string>): any[] {
  const groups = new Map<string, { conv: any[]; issues: any[] }>();
  const convById = new Map(conversations.map((c) => [c.id, c]));
  const at = (k: string) => { let g = groups.get(k); if (!g) { g = { conv: [], issues: [] }; groups.set(k, g); } return g; };
  for (const c of conversations) { const k = keyOf(c.customer.company, c.customer.email); if (k) at(k).conv.push(c); }
  for (const i of issues) {
    let k = keyOf(i.customer?.company, i.customer?.email);
    if (!k && i.source.conversationId) { const c = convById.get(i.source.conversationId); k = c ? keyOf(c.customer.company, c.customer.email) : null; }
    if (k) at(k).issues.push(i);
  }
  const out: any[] = [];
  for (const [k, g] of groups) {
    const first = firstSeen.get(k);
    assert.ok(first, `no first member recorded for ${k}`);
    const id = ids.get(k);
    assert.ok(id, `no client listed for ${k}`);
    const times = [...g.conv.map((c) => c.createdAt), ...g.issues.map((i) => i.createdAt)].sort();
    const activity = [
      ...g.conv.map((c) => (c.lastMessageAt && c.lastMessageAt > c.updatedAt ? c.lastMessageAt : c.updatedAt)),
      ...g.issues.map((i) => i.updatedAt),
    ].sort();
    out.push({
      object: 'client', id, name: first.company?.trim() || domainOf(first.email), domain: domainOf(first.email),
      conversationCount: g.conv.length,
      openCount: g.conv.filter((c) => c.status === 'open').length,
      waitingCount: g.conv.filter((c) => c.status === 'waiting').length,
      solvedCount: g.conv.filter((c) => c.status === 'solved').length,
      customerCount: new Set(g.conv.map((c) => c.customer.id)).size,
      issueCount: g.issues.length,
      firstSeenAt: times[0], lastActivityAt: activity[activity.length - 1],
    });
  }
  // Most recent activity first, then id (descending), as the list orders them.
  return out.sort((x, y) => (x.lastActivityAt !== y.lastActivityAt ? (x.lastActivityAt < y.lastActivityAt ? 1 : -1) : (x.id < y.id ? 1 : -1)));
}

describe('property: incremental aggregates = aggregates from scratch', () => {
  test('a seeded random import of 200 conversations and 100 issues, then random API changes and a restart → every client equals its from-scratch aggregate', async () => {
    const seed = 20260629;
    const rnd = prng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const companies = ['Acme', 'Globex', 'Initech', 'Umbrella Corp', 'Hooli'];
    const spell = (c: string) => pick([c, c.toUpperCase(), c.toLowerCase(), ` ${c} `, `${c}  `]);
    const domains = ['acme.com', 'globex.example', 'Initech.IO', 'mail.example', 'hooli.xyz', 'free.example'];
    const statuses = ['open', 'waiting', 'solved'] as const;
    const base = Date.parse('2026-03-01T00:00:00.000Z');
    const customerOf = (): { email: string; company?: string; name?: string } => {
      const email = `${pick(['ann', 'bo', 'cy', 'di', 'ed', 'fay', 'gus'])}@${pick(domains)}`;
      const r = rnd();
      return r < 0.5 ? { email, company: spell(pick(companies)) } : r < 0.6 ? { email, company: '  ' } : { email };
    };
    const conversations = Array.from({ length: 200 }, (_, i) => {
      const created = base + Math.floor(rnd() * 90 * 86_400_000);
      const msgs = Array.from({ length: Math.floor(rnd() * 4) }, () => ({
        role: pick(['user', 'agent'] as const), body: 'm', createdAt: iso(created + Math.floor(rnd() * 5 * 86_400_000)),
      }));
      return {
        externalId: `c-${i}`, subject: `S${i}`, customer: customerOf(), createdAt: iso(created),
        ...(rnd() < 0.8 ? { status: pick(statuses) } : {}), ...(msgs.length ? { messages: msgs } : {}),
      };
    });
    const issues = Array.from({ length: 100 }, (_, i) => {
      const r = rnd();
      const link = r < 0.5 ? { conversationExternalId: `c-${Math.floor(rnd() * 200)}` } : {};
      const own = r < 0.25 || r >= 0.5 ? (rnd() < 0.85 ? { customer: rnd() < 0.5 ? customerOf() : { name: 'Only a name' } } : {}) : {};
      return { subject: `I${i}`, createdAt: iso(base + Math.floor(rnd() * 90 * 86_400_000)), ...link, ...own };
    });

    // Which member first creates each group (import order: conversations, then issues).
    const firstSeen = new Map<string, Member>();
    const convCustomer = new Map(conversations.map((c) => [c.externalId, c.customer]));
    for (const c of conversations) { const k = keyOf(c.customer.company, c.customer.email); if (k && !firstSeen.has(k)) firstSeen.set(k, c.customer); }
    const noteIssue = (cust: Member | undefined, linked: Member | undefined) => {
      const own = cust ?? linked;
      let k = keyOf(own?.company, own?.email);
      let member = own;
      if (!k && linked) { k = keyOf(linked.company, linked.email); member = linked; }
      if (k && !firstSeen.has(k)) firstSeen.set(k, member!);
    };
    for (const i of issues) noteIssue((i as any).customer, (i as any).conversationExternalId ? convCustomer.get((i as any).conversationExternalId) : undefined);

    const rs = await restartable({ RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' });
    const w = rs.w;
    const s1 = rs.server();
    try {
      const imported = await s1.admin.importData(w.workspaceId, { conversations, issues });
      assert.deepEqual(imported.imported, { customFields: 0, tags: 0, agents: 0, conversations: 200, messages: conversations.reduce((n, c) => n + (c.messages?.length ?? 0), 0), issues: 100 });

      const compare = async (label: string) => {
        const listed = await clients(w);
        const ids = new Map<string, string>();
        for (const c of listed) {
          const k = companies.some((x) => x.toLowerCase() === c.name.toLowerCase()) ? `company:${c.name.toLowerCase()}` : `domain:${c.name}`;
          ids.set(k, c.id);
        }
        const expected = fromScratch(await listAll(w, '/api/v1/conversations', 'conversations'), await listAll(w, '/api/v1/issues', 'issues'), firstSeen, ids);
        assert.equal(listed.length, expected.length, `${label}: number of clients`);
        assert.deepEqual(listed, expected, `${label} (seed ${seed})`);
        for (const c of listed.slice(0, 5)) assert.deepEqual(await ok(w, 'GET', `${CL}/${c.id}`), { client: c });
      };
      await compare('after the import');

      // Random changes through the API, in clock order after the imported history.
      rs.server().clock.set(Date.parse('2026-07-01T00:00:00.000Z'));
      const convList = await listAll(w, '/api/v1/conversations', 'conversations');
      const issueList = await listAll(w, '/api/v1/issues', 'issues');
      for (let step = 0; step < 120; step++) {
        rs.server().clock.advance(Math.floor(rnd() * 3_600_000));
        const r = rnd();
        if (r < 0.3) await message(w, pick(convList).id, pick(['user', 'agent'] as const));
        else if (r < 0.55) await patchConv(w, pick(convList).id, { status: pick(statuses) });
        else if (r < 0.7) await ok(w, 'PATCH', `/api/v1/issues/${pick(issueList).id}`, { state: pick(['new', 'on_you', 'closed'] as const) });
        else if (r < 0.8) {
          const cust = customerOf();
          await ok(w, 'PATCH', `/api/v1/issues/${pick(issueList).id}`, { customer: cust });
          const k = keyOf(cust.company, cust.email);
          if (k && !firstSeen.has(k)) firstSeen.set(k, cust);
        } else if (r < 0.9) {
          const cust = customerOf();
          convList.push(await conversation(w, cust));
          const k = keyOf(cust.company, cust.email);
          if (k && !firstSeen.has(k)) firstSeen.set(k, cust);
        } else {
          const conv = pick(convList);
          issueList.push((await ok(w, 'POST', '/api/v1/issues', { subject: 'new', conversationId: conv.id }, 201)).issue);
        }
      }
      await compare('after random API changes');

      // The same after a restart (the aggregates are rebuilt from the log) and after compaction.
      await rs.restart();
      await compare('after a restart');
      await rs.server().store.workspace(w.workspaceId)!.db.compact();
      await rs.restart();
      await compare('after compaction and a restart');
    } finally {
      await rs.close();
    }
  });
});
