/**
 * After the fuzzing (test/fuzz/fuzzer.ts): the server is still healthy, still serves a normal
 * request, and a restart on the same data dir gives back exactly the state that was in memory.
 */
import type { Fuzzer } from './fuzzer.js';
import { type HttpResponse, readBody } from './transport.js';
import type { Rec } from '../../src/store/db.js';
import { createHash } from 'node:crypto';
import * as http from 'node:http';
import { indexSizes } from './oracle.js';
import { safeJson } from './util.js';
import { startTestServer } from '../helpers/server.js';

/** After the fuzzing: `GET /healthz` is 200, a normal create works, and a restart on the same data dir yields exactly the state that was in memory (failures are `post_run`). */
export async function postRun(f: Fuzzer): Promise<void> {
  f.phase = 'post';
  const health = await plainCall(f, f.srv.url, 'GET', '/healthz');
  if (health.status !== 200 || safeJson(health.text)?.status !== 'ok') f.fail('post_run', undefined, health, `GET /healthz answered ${health.status} ${health.text.slice(0, 200)}`);
  await normalCreate(f, f.srv.url, f.srv.key, 'before restart');
  // What is in memory must be exactly what a restart reads back from the logs.
  const before = dumpState(f);
  await f.srv.close();
  f.agent.destroy();
  f.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const key = f.srv.key;
  f.srv = await startTestServer({ env: f.env, clock: f.clock, dataDir: f.dataDir });
  const after = dumpState(f);
  const diffs: string[] = [];
  for (const [k, v] of before) if (after.get(k) !== v) diffs.push(`${k} ${after.has(k) ? 'differs' : 'missing'} after restart`);
  for (const k of after.keys()) if (!before.has(k)) diffs.push(`${k} appeared after restart`);
  if (diffs.length) f.fail('post_run', undefined, undefined, `state after restart differs from memory before it (${diffs.length}): ${diffs.slice(0, 8).join('; ')}`);
  const h2 = await plainCall(f, f.srv.url, 'GET', '/healthz');
  if (h2.status !== 200) f.fail('post_run', undefined, h2, `GET /healthz after restart answered ${h2.status}`);
  await normalCreate(f, f.srv.url, key, 'after restart');
}

/** Every record (usage counters aside) and every index size of both workspaces. */
export function dumpState(f: Fuzzer): Map<string, string> {
  const out = new Map<string, string>();
  for (const tag of ['A', 'B'] as const) {
    const tables = (f.workspace(tag).db as unknown as { tables: Map<string, { entries(): Iterable<[string, Rec]> }> }).tables;
    for (const [type, t] of tables) {
      if (type === 'usage') continue;
      for (const [id, r] of t.entries()) out.set(`${tag}:${type}/${id}`, createHash('sha256').update(JSON.stringify(r)).digest('hex'));
    }
  }
  for (const part of indexSizes(f).split(' ')) { const i = part.indexOf('='); out.set(`index ${part.slice(0, i)}`, part.slice(i + 1)); }
  return out;
}

/** Creates a conversation the ordinary way with `key`; a failure is a `post_run` failure naming `when`. */
export async function normalCreate(f: Fuzzer, url: string, key: string, when: string): Promise<void> {
  const body = JSON.stringify({ subject: `Health check ${when}`, customer: { email: 'after.fuzz@example.com', name: 'After Fuzz' } });
  const c = await plainCall(f, url, 'POST', '/api/v1/conversations', { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body);
  const id = safeJson(c.text)?.conversation?.id;
  if (c.status !== 201 || typeof id !== 'string') { f.fail('post_run', undefined, c, `a normal create ${when} answered ${c.status}`); return; }
  const g = await plainCall(f, url, 'GET', `/api/v1/conversations/${id}`, { Authorization: `Bearer ${key}` });
  if (g.status !== 200 || safeJson(g.text)?.conversation?.subject !== `Health check ${when}`) f.fail('post_run', undefined, g, `reading the conversation created ${when} answered ${g.status}`);
}

/** One plain HTTP request (no fuzzing, no checks) with a fresh connection; a failed request resolves as status 0. */
export function plainCall(f: Fuzzer, url: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<HttpResponse> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers: body ? { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } : headers, agent: false }, (res) => {
      readBody(res).then(({ text, bytes }) => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, bytes }), () => resolve({ status: 0, headers: {}, text: '', bytes: 0 }));
    });
    req.setTimeout(f.timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: 0, headers: {}, text: `request failed: ${e.message}`, bytes: 0 }));
    req.end(body);
  });
}
