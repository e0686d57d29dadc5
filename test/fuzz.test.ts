/**
 * The seeded fuzzer in CI (README "Reliability"): a short fixed-seed pass over every route must
 * hold every invariant (test/fuzz/), and the fuzzer must catch bugs planted in a
 * server — a 500, a write before a 4xx, another workspace's id in an answer, a hung request.
 * Longer runs: `npm run fuzz -- --seed N --iterations N`.
 */
import { test } from 'node:test';
import { rmSync } from 'node:fs';
import assert from 'node:assert/strict';
import { runFuzz } from './fuzz/fuzzer.js';
import { formatReport } from './fuzz/report.js';
import { ApiError } from '../src/http/errors.js';
import type { Route } from '../src/http/route.js';
import type { TestServer } from './helpers/server.js';

test('fuzz: seed 1, about 1,500 requests over every route, no invariant broken', { timeout: 120_000 }, async () => {
  const report = await runFuzz({ seed: 1, iterations: 1350 });
  const summary = formatReport(report);
  assert.ok(report.requests >= 1400, `only ${report.requests} requests\n${summary}`);
  const routes = [...report.perRoute.entries()].filter(([k]) => k !== 'unmatched' && k !== 'protocol');
  assert.ok(routes.length >= 25, `only ${routes.length} routes were fuzzed\n${summary}`);
  for (const [k, st] of routes) {
    assert.ok(st.requests >= 20, `${k}: only ${st.requests} requests\n${summary}`);
    assert.ok([...st.statuses.keys()].some((s) => s >= 400), `${k}: no request was refused\n${summary}`);
  }
  assert.ok(report.expectationsChecked > report.requests / 2, `only ${report.expectationsChecked} answers had a decidable status\n${summary}`);
  assert.equal(report.failureCount, 0, summary);
});

/** Wraps a route's handler (the router holds the same route objects). */
function wrap(srv: TestServer, method: string, path: string, fn: (inner: Route['handler']) => Route['handler']): void {
  const r = srv.routes.find((x) => x.method === method && x.path === path);
  assert.ok(r, `no route ${method} ${path}`);
  r.handler = fn(r.handler);
}

test('fuzz: planted bugs are caught (500, write before a 4xx, tenant leak, hung request)', { timeout: 120_000 }, async () => {
  const report = await runFuzz({
    seed: 3, iterations: 400, route: 'conversations', timeoutMs: 1000, heavy: 0,
    plant(srv) {
      wrap(srv, 'PATCH', '/api/v1/conversations/{conversationId}', (inner) => (ctx) => {
        const subject = (ctx.body as unknown as { subject?: string }).subject;
        if (subject !== undefined && /[^\x20-\x7e]/.test(subject)) throw new TypeError('planted: non-ASCII subject');
        return inner(ctx);
      });
      wrap(srv, 'POST', '/api/v1/conversations/{conversationId}/messages', (inner) => async (ctx) => {
        if ((ctx.body as unknown as { role?: string }).role === 'agent') {
          const tx = ctx.ws.db.begin();
          tx.put('idem', `planted-${ctx.requestId}`, { keyId: 'planted', fingerprint: 'planted', status: 200, body: null, createdAt: new Date(ctx.now).toISOString() });
          await ctx.ws.db.commit(tx);
          throw new ApiError('invalid_request', 'planted: refused after writing');
        }
        return inner(ctx);
      });
      wrap(srv, 'GET', '/api/v1/conversations/{conversationId}', (inner) => async (ctx) => {
        const r = await inner(ctx);
        const other = [...srv.store.workspaces.values()].find((w) => w.id !== ctx.ws.id && w.db.table('conversation').size > 0);
        const leaked = other && [...other.db.table('conversation').keys()][0];
        // The route answers with pre-serialized JSON: plant the leak into that.
        return r.status === 200 && leaked ? { status: 200, body: { ...(r.json ? JSON.parse(r.json.toString()) : r.body), related: leaked } } : r;
      });
      let calls = 0;
      wrap(srv, 'GET', '/api/v1/conversations', (inner) => async (ctx) => {
        if (++calls === 8) await new Promise((r) => setTimeout(r, 2500));
        return inner(ctx);
      });
    },
  });
  const summary = formatReport(report);
  if (report.dataDir) rmSync(report.dataDir, { recursive: true, force: true }); // kept because of the planted failures
  for (const kind of ['server_error', 'state_changed', 'tenant_leak', 'hung']) {
    assert.ok(report.failuresByKind.get(kind), `the planted ${kind} was not caught\n${summary}`);
  }
  const failure = report.failures.find((f) => f.kind === 'server_error');
  assert.ok(failure?.request && failure.request.method === 'PATCH' && failure.seed === 3 && failure.iteration >= -1, `a failure names its request, seed and iteration\n${summary}`);
});
