/**
 * GET /api/v1/analytics?from&to (docs/api.md#analytics): counts, breakdowns,
 * median first-response and resolution times and a daily series, computed from events kept as
 * they happen (daily counters written with each change), surviving compaction and restarts,
 * and sanitized — no name, email, company, subject or body ever appears in the answer.
 *
 * Decisions pinned here: `conversations.solved` / `issues.closed` and the daily series count
 * events in the range (a conversation solved, reopened and solved again counts twice, on the
 * days it happened); breakdowns and medians cover the conversations / issues created in the
 * range, as they are now. Medians are in whole seconds (rounded).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, tempDir, type CallOptions, type CallResult, type TestServer } from './helpers/server.js';
import type { Analytics } from './helpers/answers.js';

const ENV = { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' };
const AN = '/api/v1/analytics';
const DAY = 86_400_000;

interface Space { workspaceId: string; key: string; srv: TestServer; call<B = unknown>(method: string, path: string, opts?: CallOptions): Promise<CallResult<B>> }

/**
 * A fresh server per test: tests move the clock to their own dates, and a clock moved
 * backwards on a shared server would drain the rate limiter's buckets.
 */
async function withSpace(fn: (w: Space) => Promise<void>, opts: { dataDir?: string; compactionSlack?: number; as?: { key: string; workspaceId: string } } = {}): Promise<void> {
  const { as, ...serverOpts } = opts;
  const srv = await startTestServer({ env: ENV, ...serverOpts });
  const key = as?.key ?? srv.key;
  try {
    await fn({ workspaceId: as?.workspaceId ?? srv.workspaceId, key, srv, call: <B,>(m: string, p: string, o: CallOptions = {}) => srv.call<B>(m, p, { key, ...o }) });
  } finally {
    await srv.close();
  }
}

const invalid = (detail: string) => ({ code: 'invalid_request', error: `Request body is invalid: ${detail}.` });
const invalidQuery = (detail: string) => ({ code: 'invalid_request', error: `Query parameter ${detail}.` });
const STATUS0 = { open: 0, waiting: 0, solved: 0 };
const CHANNEL0 = { api: 0, 'live-chat': 0, email: 0, discord: 0 };
const STATE0 = { new: 0, on_you: 0, on_customer: 0, on_hold: 0, closed: 0 };
const PRIORITY0 = { urgent: 0, high: 0, medium: 0, low: 0 };

/** Every date from..to inclusive (UTC). */
function dates(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += DAY) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}
type Day = { conversationsCreated?: number; conversationsSolved?: number; issuesCreated?: number; issuesClosed?: number; answersCreated?: number; handoffsRequested?: number };
/** The daily series from..to with zeroes except the days given. */
function daily(from: string, to: string, days: Record<string, Day> = {}) {
  return dates(from, to).map((date) => ({ date, conversationsCreated: 0, conversationsSolved: 0, issuesCreated: 0, issuesClosed: 0, answersCreated: 0, handoffsRequested: 0, ...days[date] }));
}
interface Expect {
  from: string; to: string;
  conversations?: { created?: number; solved?: number; byStatus?: object; byChannel?: object; medianFirstResponseSeconds?: number | null; medianResolutionSeconds?: number | null };
  issues?: { created?: number; closed?: number; byState?: object; byPriority?: object };
  days?: Record<string, Day>;
  answers?: object;
}
/** The answers section of a workspace whose agents never answered. */
const ANSWERS0 = { created: 0, byOutcome: { answered: 0, uncertain: 0, no_sources: 0 }, feedback: { helpful: 0, unhelpful: 0 }, handoffs: { customer: 0, uncertain: 0, api: 0 }, byAgent: [], bySource: [] };
/** The whole expected body: zeroes and nulls unless given. */
function analytics(e: Expect) {
  const c = e.conversations ?? {};
  const i = e.issues ?? {};
  return {
    object: 'analytics', from: e.from, to: e.to,
    conversations: {
      created: c.created ?? 0, solved: c.solved ?? 0,
      byStatus: { ...STATUS0, ...c.byStatus }, byChannel: { ...CHANNEL0, ...c.byChannel },
      medianFirstResponseSeconds: c.medianFirstResponseSeconds ?? null, medianResolutionSeconds: c.medianResolutionSeconds ?? null,
    },
    issues: { created: i.created ?? 0, closed: i.closed ?? 0, byState: { ...STATE0, ...i.byState }, byPriority: { ...PRIORITY0, ...i.byPriority } },
    answers: e.answers ?? ANSWERS0,
    daily: daily(e.from, e.to, e.days),
  };
}

async function get(w: Space, query = ''): Promise<any> {
  const r = await w.call('GET', `${AN}${query}`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}
async function ok(w: Space, method: string, path: string, body?: unknown, status = 200): Promise<any> {
  const r = await w.call(method, path, body === undefined ? {} : { body });
  assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
  return r.body;
}
const newConv = async (w: Space, extra: Record<string, unknown> = {}) =>
  (await ok(w, 'POST', '/api/v1/conversations', { subject: 'Help', customer: { email: 'a@example.com' }, ...extra }, 201)).conversation;
const msg = (w: Space, id: string, role: 'user' | 'agent', body = 'text') => ok(w, 'POST', `/api/v1/conversations/${id}/messages`, { role, body }, 201);
const patchConv = (w: Space, id: string, body: unknown) => ok(w, 'PATCH', `/api/v1/conversations/${id}`, body);
const newIssue = async (w: Space, body: Record<string, unknown> = {}) => (await ok(w, 'POST', '/api/v1/issues', { subject: 'Bug', ...body }, 201)).issue;
const patchIssue = (w: Space, id: string, body: unknown) => ok(w, 'PATCH', `/api/v1/issues/${id}`, body);

describe('range', () => {
  test('GET /analytics without from/to → the last 30 days ending on the clock\'s day (UTC), all zero in a new workspace', async () => {
    await withSpace(async (w) => {
      w.srv.clock.set(Date.parse('2026-06-29T23:59:59.999Z'));
      assert.deepEqual(await get(w), analytics({ from: '2026-05-31', to: '2026-06-29' }));
      w.srv.clock.advance(1); // the next UTC day
      const next = await get(w);
      assert.equal(next.from, '2026-06-01');
      assert.equal(next.to, '2026-06-30');
      assert.equal(next.daily.length, 30);
      assert.deepEqual(Object.keys(next), ['object', 'from', 'to', 'conversations', 'issues', 'answers', 'daily']);
    });
  });

  test('explicit from and to → that range inclusive; only from → to is today; only to → the 30 days ending on it', async () => {
    await withSpace(async (w) => {
      w.srv.clock.set(Date.parse('2026-06-29T12:00:00Z'));
      assert.deepEqual(await get(w, '?from=2026-02-27&to=2026-03-02'), analytics({ from: '2026-02-27', to: '2026-03-02' }));
      assert.deepEqual((await get(w, '?from=2026-02-27&to=2026-03-02')).daily.map((d: any) => d.date), ['2026-02-27', '2026-02-28', '2026-03-01', '2026-03-02']);
      assert.deepEqual(await get(w, '?from=2026-06-29&to=2026-06-29'), analytics({ from: '2026-06-29', to: '2026-06-29' }));
      assert.deepEqual(await get(w, '?from=2026-06-20'), analytics({ from: '2026-06-20', to: '2026-06-29' }));
      assert.deepEqual(await get(w, '?to=2026-03-30'), analytics({ from: '2026-03-01', to: '2026-03-30' }));
      assert.deepEqual(await get(w, '?from=2028-02-28&to=2028-03-01'), analytics({ from: '2028-02-28', to: '2028-03-01' })); // 2028-02-29 exists
      assert.equal((await get(w, '?from=2028-02-28&to=2028-03-01')).daily.length, 3);
    });
  });

  for (const [query, detail] of [
    ['?from=2026-02-30', 'from must be a date such as 2026-06-29'],
    ['?from=2026-02-29', 'from must be a date such as 2026-06-29'],
    ['?from=2026-6-1', 'from must be a date such as 2026-06-29'],
    ['?from=x', 'from must be a date such as 2026-06-29'],
    ['?from=', 'from must be a date such as 2026-06-29'],
    ['?from=2026-13-01', 'from must be a date such as 2026-06-29'],
    ['?to=2026-02-30', 'to must be a date such as 2026-06-29'],
    ['?to=2026-6-1', 'to must be a date such as 2026-06-29'],
    ['?to=x', 'to must be a date such as 2026-06-29'],
    ['?from=2026-06-01&to=2026-06-31', 'to must be a date such as 2026-06-29'],
    ['?from=2026-06-02&to=2026-06-01', 'from must not be after to'],
    ['?from=2026-07-01', 'from must not be after to'],
    ['?from=2025-06-28&to=2026-06-29', 'to must be at most 365 days after from (a range of at most 366 days)'],
    ['?from=2020-01-01&to=2026-06-29', 'to must be at most 365 days after from (a range of at most 366 days)'],
    ['?days=7', 'days is not supported'],
    ['?from=2026-06-01&from=2026-06-02', 'from must be given once'],
  ] as const) {
    test(`GET /analytics${query} → 400 "${detail}"`, async () => {
      await withSpace(async (w) => {
        const r = await w.call('GET', `${AN}${query}`);
        assert.equal(r.status, 400, r.text);
        assert.deepEqual(r.body, invalidQuery(detail));
      });
    });
  }

  test('a range of exactly 366 days → 200 with 366 days', async () => {
    await withSpace(async (w) => {
      const body = await get(w, '?from=2025-06-29&to=2026-06-29');
      assert.deepEqual(body, analytics({ from: '2025-06-29', to: '2026-06-29' }));
      assert.equal(body.daily.length, 366);
      assert.equal((await get(w, '?from=2027-01-01&to=2028-01-01')).daily.length, 366);
    });
  });

  test('GET /analytics needs analytics:read: another scope → 403; analytics:read alone → 200', async () => {
    await withSpace(async (w) => {
      const wrong = await w.srv.newKey({ scopes: 'conversations:write,issues:write,usage:read,clients:read' });
      const r = await w.call('GET', AN, { key: wrong });
      assert.equal(r.status, 403, r.text);
      assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs analytics:read.' });
      const right = await w.srv.newKey({ scopes: 'analytics:read' });
      assert.equal((await w.call('GET', AN, { key: right })).status, 200);
    });
  });
});

describe('counts and the daily series', () => {
  test('conversations created, solved, reopened and solved again across days, and issues created and closed → exact counts per day', async () => {
    await withSpace(async (w) => {
      const clock = w.srv.clock;
      clock.set(Date.parse('2026-03-02T09:00:00Z'));
      const c1 = await newConv(w);
      clock.set(Date.parse('2026-03-02T10:00:00Z'));
      await newConv(w);
      const i1 = await newIssue(w, { priority: 'high' });
      clock.set(Date.parse('2026-03-02T10:30:00Z'));
      await msg(w, c1.id, 'agent'); // first response after 1.5 h
      clock.set(Date.parse('2026-03-03T08:00:00Z'));
      await patchConv(w, c1.id, { status: 'solved' });
      await newIssue(w, { state: 'on_you' });
      clock.set(Date.parse('2026-03-04T12:00:00Z'));
      await msg(w, c1.id, 'user'); // reopens
      await patchIssue(w, i1.id, { state: 'closed' });
      clock.set(Date.parse('2026-03-06T12:00:00Z'));
      await patchConv(w, c1.id, { status: 'solved' }); // solved again: resolution = 4 days 3 h after creation
      await newConv(w, { priority: 'urgent' });
      await newIssue(w, { state: 'closed', priority: 'low' });
      clock.set(Date.parse('2026-03-08T00:00:00Z'));

      const days = {
        '2026-03-02': { conversationsCreated: 2, issuesCreated: 1 },
        '2026-03-03': { conversationsSolved: 1, issuesCreated: 1 },
        '2026-03-04': { issuesClosed: 1 },
        '2026-03-06': { conversationsCreated: 1, conversationsSolved: 1, issuesCreated: 1, issuesClosed: 1 },
      };
      const whole = analytics({
        from: '2026-03-01', to: '2026-03-07', days,
        conversations: {
          created: 3, solved: 2, byStatus: { open: 2, solved: 1 }, byChannel: { api: 3 },
          medianFirstResponseSeconds: 5400, medianResolutionSeconds: 4 * 86400 + 3 * 3600,
        },
        issues: { created: 3, closed: 2, byState: { on_you: 1, closed: 2 }, byPriority: { high: 1, medium: 1, low: 1 } },
      });
      assert.deepEqual(await get(w, '?from=2026-03-01&to=2026-03-07'), whole);

      // One day without creations: its events, but no breakdowns and no medians.
      assert.deepEqual(await get(w, '?from=2026-03-03&to=2026-03-04'), analytics({
        from: '2026-03-03', to: '2026-03-04', days,
        conversations: { solved: 1 }, issues: { created: 1, closed: 1, byState: { on_you: 1 }, byPriority: { medium: 1 } },
      }));
      // The default range (the 30 days up to 2026-03-08) holds all of it.
      const dflt = await get(w);
      assert.equal(dflt.from, '2026-02-07');
      assert.equal(dflt.to, '2026-03-08');
      assert.deepEqual(dflt.conversations, whole.conversations);
      assert.deepEqual(dflt.issues, whole.issues);
      assert.deepEqual(dflt.daily, daily('2026-02-07', '2026-03-08', days));
    });
  });

  test('UTC day boundaries: created at 23:59:59.999 counts that day, at 00:00:00.000 the next', async () => {
    await withSpace(async (w) => {
      w.srv.clock.set(Date.parse('2026-04-10T23:59:59.999Z'));
      await newConv(w);
      w.srv.clock.advance(1);
      await newConv(w);
      await newIssue(w);
      const body = await get(w, '?from=2026-04-10&to=2026-04-11');
      assert.deepEqual(body.daily, daily('2026-04-10', '2026-04-11', {
        '2026-04-10': { conversationsCreated: 1 }, '2026-04-11': { conversationsCreated: 1, issuesCreated: 1 },
      }));
      assert.deepEqual((await get(w, '?from=2026-04-11&to=2026-04-11')).conversations.byStatus, { open: 1, waiting: 0, solved: 0 });
    });
  });

  test('byStatus, byChannel (from import), byState and byPriority cover every value, zero included', async () => {
    await withSpace(async (w) => {
      w.srv.clock.set(Date.parse('2026-05-20T12:00:00Z'));
      const at = '2026-05-10T10:00:00.000Z';
      await w.srv.admin.importData(w.workspaceId, {
        conversations: [
          { subject: 's', customer: { email: 'a@x.com' }, channel: 'email', createdAt: at },
          { subject: 's', customer: { email: 'a@x.com' }, channel: 'email', status: 'waiting', createdAt: at },
          { subject: 's', customer: { email: 'a@x.com' }, channel: 'discord', status: 'solved', createdAt: at },
          { subject: 's', customer: { email: 'a@x.com' }, channel: 'live-chat', createdAt: at },
        ],
        issues: ['new', 'on_you', 'on_customer', 'on_hold', 'closed', 'on_hold'].map((state, n) => ({
          subject: 's', state, priority: (['urgent', 'high', 'medium', 'low', 'low', 'low'] as const)[n], createdAt: at,
        })),
      });
      await newConv(w);
      const body = await get(w, '?from=2026-05-01&to=2026-05-31');
      assert.deepEqual(body.conversations.byStatus, { open: 3, waiting: 1, solved: 1 });
      assert.deepEqual(body.conversations.byChannel, { api: 1, 'live-chat': 1, email: 2, discord: 1 });
      assert.deepEqual(body.issues.byState, { new: 1, on_you: 1, on_customer: 1, on_hold: 2, closed: 1 });
      assert.deepEqual(body.issues.byPriority, { urgent: 1, high: 1, medium: 1, low: 3 });
      assert.equal(body.conversations.created, 5);
      assert.equal(body.conversations.solved, 1);
      assert.equal(body.issues.created, 6);
      assert.equal(body.issues.closed, 1);
    });
  });

  test('another workspace\'s activity is not counted', async () => {
    await withSpace(async (w) => {
      const other = await w.srv.newWorkspace();
      const o: Space = { ...w, workspaceId: other.workspaceId, key: other.key, call: <B,>(m: string, p: string, opts: CallOptions = {}) => w.srv.call<B>(m, p, { key: other.key, ...opts }) };
      await newConv(o);
      await newIssue(o, { state: 'closed' });
      const today = new Date(w.srv.clock.now()).toISOString().slice(0, 10);
      assert.deepEqual(await get(w, `?from=${today}&to=${today}`), analytics({ from: today, to: today }));
      assert.equal((await get(o, `?from=${today}&to=${today}`)).conversations.created, 1);
    });
  });
});

describe('medians', () => {
  test('first response = the first agent message (exact seconds); odd count → the middle, even count → the mean of the two middle, rounded', async () => {
    await withSpace(async (w) => {
      const clock = w.srv.clock;
      const t0 = Date.parse('2026-05-04T08:00:00Z');
      const q = '?from=2026-05-04&to=2026-05-04';
      const median = async () => (await get(w, q)).conversations.medianFirstResponseSeconds;
      clock.set(t0);
      const convs = [];
      for (let i = 0; i < 7; i++) convs.push(await newConv(w)); // the 7th is never answered
      clock.set(t0 + 5_000);
      for (const c of convs) await msg(w, c.id, 'user'); // a user message is not a response
      assert.equal(await median(), null);
      // Agent replies 10, 20, 21, 22, 30 and 3600 s after creation (clock order).
      const steps: Array<[number, number]> = [
        [10, 10], [20, 15], [21, 20], [22, 21 /* 20.5 rounds up */], [30, 21], [3600, 22 /* 21.5 */],
      ];
      for (const [n, [seconds, expected]] of steps.entries()) {
        clock.set(t0 + seconds * 1000);
        await msg(w, convs[n].id, 'agent');
        assert.equal(await median(), expected, `after the reply at ${seconds} s`);
      }
      // A later agent message does not change a first response.
      clock.set(t0 + 7200_000);
      await msg(w, convs[0].id, 'agent');
      await msg(w, convs[5].id, 'user');
      await msg(w, convs[5].id, 'agent');
      assert.equal(await median(), 22);
      assert.equal((await get(w, q)).conversations.medianResolutionSeconds, null);
      // Milliseconds count: a reply 1.4 s after creation is 1 s.
      clock.set(Date.parse('2026-05-09T00:00:00Z'));
      const c = await newConv(w);
      clock.advance(1_400);
      await msg(w, c.id, 'agent');
      assert.equal((await get(w, '?from=2026-05-09&to=2026-05-09')).conversations.medianFirstResponseSeconds, 1);
    });
  });

  test('resolution = solved time − creation time, for the conversations solved now; reopened ones drop out; null when none', async () => {
    await withSpace(async (w) => {
      const clock = w.srv.clock;
      const t0 = Date.parse('2026-05-05T00:00:00Z');
      const q = '?from=2026-05-05&to=2026-05-05';
      const median = async () => (await get(w, q)).conversations.medianResolutionSeconds;
      clock.set(t0);
      const [a, b, c] = [await newConv(w), await newConv(w), await newConv(w), await newConv(w)]; // the 4th stays open
      assert.equal(await median(), null);
      clock.set(t0 + 100_000);
      await patchConv(w, a.id, { status: 'solved' });
      assert.equal(await median(), 100);
      clock.set(t0 + 300_000);
      await patchConv(w, b.id, { status: 'solved' });
      assert.equal(await median(), 200);
      clock.set(t0 + 7200_000);
      await patchConv(w, c.id, { status: 'solved' });
      assert.equal(await median(), 300);
      // Reopening `a` (a user message) removes it from the resolved ones.
      clock.set(t0 + 10_000_000);
      await msg(w, a.id, 'user');
      assert.equal(await median(), 3750); // (300 + 7200) / 2
      // Solved again: measured to the new solved time.
      clock.set(t0 + 86_400_000);
      await patchConv(w, a.id, { status: 'solved' });
      assert.equal(await median(), 7200); // 300, 7200, 86400
      const body = await get(w, '?from=2026-05-05&to=2026-05-06');
      assert.equal(body.conversations.solved, 4, 'four solve events');
      assert.deepEqual(body.daily.map((d: any) => d.conversationsSolved), [3, 1]);
      // A range with no conversation created → null medians.
      assert.deepEqual((await get(w, '?from=2026-05-06&to=2026-05-06')).conversations, {
        created: 0, solved: 1, byStatus: STATUS0, byChannel: CHANNEL0, medianFirstResponseSeconds: null, medianResolutionSeconds: null,
      });
    });
  });
});

describe('history, compaction and restarts', () => {
  test('an import with history (createdAt in the past) → counted on the days it happened, with its medians', async () => {
    await withSpace(async (w) => {
      w.srv.clock.set(Date.parse('2026-06-29T12:00:00Z'));
      await w.srv.admin.importData(w.workspaceId, {
        conversations: [
          {
            externalId: 'h1', subject: 's', customer: { email: 'a@x.com' }, channel: 'email', status: 'solved', createdAt: '2026-01-10T10:00:00Z',
            messages: [{ role: 'user', body: 'b', createdAt: '2026-01-10T10:00:00Z' }, { role: 'agent', body: 'b', createdAt: '2026-01-10T10:05:00Z' }, { role: 'user', body: 'b', createdAt: '2026-01-12T09:00:00Z' }],
          },
          {
            externalId: 'h2', subject: 's', customer: { email: 'b@x.com' }, status: 'solved', createdAt: '2026-01-11T00:00:00Z',
            messages: [{ role: 'agent', body: 'b', createdAt: '2026-01-11T00:15:00Z' }],
          },
          { subject: 's', customer: { email: 'c@x.com' }, channel: 'discord', createdAt: '2026-01-31T23:59:59Z' },
          { subject: 'recent', customer: { email: 'd@x.com' } }, // no createdAt: now
        ],
        issues: [
          { subject: 's', createdAt: '2026-01-10T11:00:00Z', conversationExternalId: 'h1' },
          { subject: 's', createdAt: '2026-01-15T11:00:00Z', state: 'closed', priority: 'urgent' },
        ],
      });
      const resolutionH1 = (Date.parse('2026-01-12T09:00:00Z') - Date.parse('2026-01-10T10:00:00Z')) / 1000; // 169200
      assert.deepEqual(await get(w, '?from=2026-01-01&to=2026-01-31'), analytics({
        from: '2026-01-01', to: '2026-01-31',
        days: {
          '2026-01-10': { conversationsCreated: 1, issuesCreated: 1 },
          '2026-01-11': { conversationsCreated: 1, conversationsSolved: 1 },
          '2026-01-12': { conversationsSolved: 1 },
          '2026-01-15': { issuesCreated: 1, issuesClosed: 1 },
          '2026-01-31': { conversationsCreated: 1 },
        },
        conversations: {
          created: 3, solved: 2, byStatus: { open: 1, solved: 2 }, byChannel: { email: 1, api: 1, discord: 1 },
          medianFirstResponseSeconds: (300 + 900) / 2, medianResolutionSeconds: (resolutionH1 + 900) / 2,
        },
        issues: { created: 2, closed: 1, byState: { new: 1, closed: 1 }, byPriority: { medium: 1, urgent: 1 } },
      }));
      const today = await get(w, '?from=2026-06-29&to=2026-06-29');
      assert.equal(today.conversations.created, 1);
      assert.deepEqual(today.daily, daily('2026-06-29', '2026-06-29', { '2026-06-29': { conversationsCreated: 1 } }));
    });
  });

  test('the counts survive compaction (forced and automatic) and a restart: the same answer', async () => {
    const dataDir = tempDir();
    const q = '?from=2026-03-01&to=2026-03-10';
    let before1: any;
    let as = { key: '', workspaceId: '' };
    await withSpace(async (w) => {
      as = { key: w.key, workspaceId: w.workspaceId };
      const clock = w.srv.clock;
      clock.set(Date.parse('2026-03-02T09:00:00Z'));
      const convs = [];
      for (let i = 0; i < 5; i++) convs.push(await newConv(w));
      const issue = await newIssue(w);
      clock.set(Date.parse('2026-03-03T09:00:00Z'));
      await msg(w, convs[0].id, 'agent');
      await patchConv(w, convs[1].id, { status: 'solved' });
      await patchIssue(w, issue.id, { state: 'closed' });
      clock.set(Date.parse('2026-03-04T09:00:00Z'));
      // Many updates of the same records: dead lines for compaction to drop.
      for (let i = 0; i < 30; i++) await patchConv(w, convs[2].id, { subject: `s${i}` });
      await patchConv(w, convs[2].id, { status: 'solved' });
      before1 = await get(w, q);
      assert.equal(before1.conversations.created, 5);
      assert.equal(before1.conversations.solved, 2);
      assert.equal(before1.issues.closed, 1);
      const db = w.srv.store.workspace(w.workspaceId)!.db;
      await db.compact();
      assert.ok(db.stats().ops <= db.stats().live + 1, 'the log was rewritten to its live records');
      assert.deepEqual(await get(w, q), before1);
    }, { dataDir, compactionSlack: 1 });
    // A restart replays the compacted log.
    await withSpace(async (w) => {
      w.srv.clock.set(Date.parse('2026-03-10T00:00:00Z'));
      assert.deepEqual(await get(w, q), before1);
      // Automatic compaction (slack 1) on further writes keeps them too.
      const c = await newConv(w);
      for (let i = 0; i < 10; i++) await patchConv(w, c.id, { subject: `t${i}` });
      const after1 = await get(w, q);
      assert.equal(after1.conversations.created, 6);
      assert.deepEqual(after1.daily.slice(0, 8), before1.daily.slice(0, 8));
    }, { dataDir, compactionSlack: 1, as });
  });
});

describe('sanitized', () => {
  test('the JSON text of the answer holds no customer name, email, company, subject, message body, description or tag used', async () => {
    await withSpace(async (w) => {
      const clock = w.srv.clock;
      clock.set(Date.parse('2026-06-10T10:00:00Z'));
      const M = {
        name: 'Zanzibar Quixotic', email: 'quixotic.zanzibar@marker-domain.example', company: 'Marker Company Xyzzy',
        subject: 'Subject marker plugh', body1: 'Body marker frobozz', body2: 'Agent body marker grue', issueSubject: 'Issue marker zork',
        description: 'Description marker yoho', tag: 'tagmarkerfnord', externalId: 'extmarker-42', importName: 'Imported Marker Name',
        importSubject: 'Imported subject marker', importBody: 'Imported body marker',
      };
      const c = await newConv(w, { subject: M.subject, externalId: M.externalId, customer: { name: M.name, email: M.email, company: M.company } });
      clock.advance(61_000);
      await msg(w, c.id, 'user', M.body1);
      await msg(w, c.id, 'agent', M.body2);
      clock.advance(61_000);
      await patchConv(w, c.id, { status: 'solved' });
      await newIssue(w, { subject: M.issueSubject, description: M.description, tags: [M.tag], conversationId: c.id });
      await w.srv.admin.importData(w.workspaceId, {
        conversations: [{ subject: M.importSubject, customer: { name: M.importName, email: 'imp@marker-domain.example' }, createdAt: '2026-06-09T10:00:00Z', messages: [{ role: 'agent', body: M.importBody, createdAt: '2026-06-09T10:01:00Z' }] }],
      });
      const r = await w.call<Analytics>('GET', `${AN}?from=2026-06-01&to=2026-06-30`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.conversations.created, 2);
      assert.equal(r.body.conversations.medianFirstResponseSeconds, 61); // 61 s and 60 s → 60.5 → 61
      const text = r.text.toLowerCase();
      for (const [what, marker] of Object.entries({ ...M, emailLocal: 'quixotic.zanzibar', domain: 'marker-domain', conversationId: c.id, customerId: c.customer.id })) {
        assert.ok(!text.includes(marker.toLowerCase()), `the answer contains the ${what} ${JSON.stringify(marker)}`);
      }
      // Only the documented keys, numbers and dates.
      assert.match(r.text, /^[{}[\]":,a-zA-Z0-9_\-. ]*$/);
      const keys = new Set<string>();
      JSON.parse(r.text, (k, v) => { if (k && Number.isNaN(Number(k))) keys.add(k); return v; });
      assert.deepEqual([...keys].sort(), [
        'answered', 'answers', 'answersCreated', 'api', 'byAgent', 'byChannel', 'byOutcome', 'byPriority', 'bySource', 'byState', 'byStatus',
        'closed', 'conversations', 'conversationsCreated', 'conversationsSolved', 'created', 'customer', 'daily', 'date', 'discord', 'email',
        'feedback', 'from', 'handoffs', 'handoffsRequested', 'helpful', 'high', 'issues', 'issuesClosed', 'issuesCreated', 'live-chat', 'low',
        'medianFirstResponseSeconds', 'medianResolutionSeconds', 'medium', 'new', 'no_sources', 'object', 'on_customer', 'on_hold', 'on_you',
        'open', 'solved', 'to', 'uncertain', 'unhelpful', 'urgent', 'waiting',
      ]);
    });
  });
});
