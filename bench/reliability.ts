/**
 * `node --import tsx bench/reliability.ts` — the heavier versions of the reliability
 * tests (README "Reliability") (test/faults.test.ts, test/shutdown.test.ts, test/hostile.test.ts, test/crash.test.ts),
 * each repeated, printing a Markdown table (fault or attack, runs, result) for the README's
 * "Reliability" section.
 *
 * What runs:
 *  - crash      `CRASH_ROUNDS=50 node --import tsx --test test/crash.test.ts` (SIGKILL during writes)
 *  - faults     ENOSPC / EIO / a partial write / an fdatasync failure injected through the
 *               store's StoreFs seam into an in-process server, one doomed write among 20
 *               concurrent ones, then a restart on the same data dir
 *  - storage    a corrupt line in one workspace's log and its repair; a LOCK naming a reused
 *               pid; a real full disk (tmpfs) — see bench/storageRows.ts
 *  - shutdown   SIGTERM under load, and a second SIGTERM while a request never finishes
 *               (the real `node dist/server.js`)
 *  - slow       1,000 slow-header (slowloris) and 1,000 slow-body connections at once
 *  - idle       10,000 idle keep-alive connections; a 10,000-connection flood against MAX_CONNECTIONS=1000
 *  - output     45 connections pipelining 1,000 requests for 100 KB answers each and never reading
 *  - peraddr    250 idle connections from one address against MAX_CONNECTIONS=200; another address's requests
 *  - bodies     a 1 GB chunked body (→ 413, and unauthenticated → 401) with the server's peak RSS
 *  - malformed  oversized headers (431), Content-Encoding (415), invalid UTF-8 (400), exact bodies
 *  - fetch      a source URL answering 2,000 stacked gzip layers (the server's CPU per fetch);
 *               live checks against an upstream echoing the secret in every form in a 1 MiB body
 *  - ingest     10 ingestions of ~1.8 MB documents at once, then each pathological paste alone,
 *               while a separate process polls /healthz every ~10 ms (the longest wait is the
 *               longest main-thread stall a request saw)
 *
 * Servers that are measured run as child processes (their RSS and descriptors are read from
 * /proc), so the client side never counts. Linux only.
 *
 * Options: --quick (fewer runs, smaller floods: a smoke test), --only crash,faults,… ,
 * --out FILE (also write the table there), --no-build (use dist/ as it is).
 * Exit code 1 when any row failed.
 */
import { spawn, execFileSync } from 'node:child_process';
import * as http from 'node:http';
import * as zlib from 'node:zlib';
import * as net from 'node:net';
import { once } from 'node:events';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { nodeFs, type StoreFs } from '../src/store/log/fs.js';
import { startTestServer, type TestServer } from '../test/helpers/server.js';
import { bytesOf, viaFdatasync } from '../test/helpers/storeFs.js';
import { call, startServer as startChild, tempDir, type HttpResult, type RunningChild } from '../test/helpers/child.js';
import { parseRawResponse, within, type RawResponse } from '../test/helpers/raw.js';
import { storageRows } from './storageRows.js';
import { fork } from 'node:child_process';
import { h2Page, headings, htmlDoc, markdownDoc, openApiDoc, openApiPaths, wsdlOperations } from '../test/helpers/ingest-inputs.js';
import type { ConversationAnswer, ConversationList, ErrorAnswer, Ingestion, LiveCheck, SourceList } from '../test/helpers/answers.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MiB = 1024 * 1024;

const { values: argv } = parseArgs({ options: { quick: { type: 'boolean' }, only: { type: 'string' }, out: { type: 'string' }, 'no-build': { type: 'boolean' } } });
const quick = argv.quick ?? false;
const ALL = ['crash', 'faults', 'storage', 'shutdown', 'slow', 'idle', 'bodies', 'malformed', 'fetch', 'ingest', 'output', 'peraddr'];
const only = new Set((argv.only ?? ALL.join(',')).split(','));
for (const o of only) if (!ALL.includes(o)) { console.error(`--only takes ${ALL.join(',')}`); process.exit(2); }
const N = {
  crashRounds: quick ? 6 : 50,
  faultRuns: quick ? 10 : 100,
  shutdownRuns: quick ? 3 : 20,
  secondSignalRuns: quick ? 2 : 10,
  slowConns: quick ? 100 : 1000,
  idleConns: quick ? 1000 : 10_000,
  floodConns: quick ? 1000 : 10_000,
  floodCap: quick ? 100 : 1000,
  outputConns: quick ? 10 : 45,
  bodyBytes: quick ? 100 * MiB : 1024 * MiB,
  malformedRuns: quick ? 10 : 100,
  stackedRuns: quick ? 3 : 20,
  echoChecks: quick ? 10 : 100,
};

interface Row { id: string; what: string; runs: string; result: string; ok: boolean }
const rows: Row[] = [];
const fmt = (n: number) => n.toLocaleString('en-US');
const mb = (bytes: number) => `${(bytes / MiB).toFixed(1)} MB`;
function log(msg: string): void { process.stderr.write(`[reliability] ${msg}\n`); }

/** Runs `fn` as one table row; an exception makes the row a failure naming it. */
async function row(id: string, what: string, fn: () => Promise<{ runs: string; result: string; ok?: boolean }>): Promise<void> {
  if (!only.has(id)) return;
  log(`${what}…`);
  const t0 = performance.now();
  try {
    const r = await fn();
    rows.push({ id, what, runs: r.runs, result: r.result, ok: r.ok ?? true });
  } catch (e) {
    rows.push({ id, what, runs: '—', result: `**FAILED**: ${((e as Error).message ?? String(e)).split('\n')[0]}`, ok: false });
  }
  log(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${rows[rows.length - 1].result}`);
}

function check(cond: unknown, msg: string): asserts cond { if (!cond) throw new Error(msg); }

// ------------------------------------------------------------------------------------------
// Process and socket helpers

/** A child's resident and peak memory and open descriptors, from /proc. */
function procStats(pid: number): { rss: number; hwm: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM'), fds: readdirSync(`/proc/${pid}/fd`).length };
}

const parseResponse = (data: Buffer): RawResponse | undefined => parseRawResponse(data)?.response;

/** A raw client connection recording what comes back and when it closes. */
class Conn {
  data: Buffer = Buffer.alloc(0);
  closed = false;
  closedAt = 0;
  readonly ended: Promise<void>;
  private waiters: Array<() => void> = [];
  constructor(readonly sock: net.Socket) {
    sock.on('data', (d: Buffer) => { this.data = this.data.length ? Buffer.concat([this.data, d]) : d; this.poke(); });
    sock.on('error', () => {});
    this.ended = new Promise((r) => sock.once('close', () => { this.closed = true; this.closedAt = performance.now(); this.poke(); r(); }));
  }
  static async open(port: number, localAddress?: string): Promise<Conn> {
    const c = new Conn(net.connect({ port, host: '127.0.0.1', localAddress }));
    await within(Promise.race([once(c.sock, 'connect'), c.ended]), 10_000, 'a connection');
    return c;
  }
  private poke(): void { const w = this.waiters; this.waiters = []; for (const f of w) f(); }
  write(d: string | Buffer): boolean { return this.closed ? false : this.sock.write(d); }
  /** The first response, or undefined when the server closed without one. */
  response(timeoutMs = 15_000): Promise<RawResponse | undefined> {
    return within(new Promise((resolve) => {
      const check = () => { const r = parseResponse(this.data); if (r) resolve(r); else if (this.closed) resolve(undefined); else this.waiters.push(check); };
      check();
    }), timeoutMs, 'a response');
  }
  destroy(): void { this.sock.destroy(); }
}

/** Opens `n` connections, `batch` at a time. */
async function openMany(port: number, n: number, batch = 500): Promise<Conn[]> {
  const out: Conn[] = [];
  for (let i = 0; i < n; i += batch) out.push(...await Promise.all(Array.from({ length: Math.min(batch, n - i) }, () => Conn.open(port))));
  return out;
}

async function healthLatency(url: string, localAddress?: string): Promise<number> {
  const t0 = performance.now();
  const r = await new Promise<number>((resolve, reject) => {
    const req = http.get(`${url}/healthz`, { agent: false, timeout: 10_000, localAddress }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode!)); });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
  check(r === 200, `/healthz answered ${r}`);
  return performance.now() - t0;
}

type Outcome = { kind: 'answer'; status: number; headers: http.IncomingHttpHeaders; body: any } | { kind: 'error'; code: string };
function post(agent: http.Agent, port: number, path: string, key: string, body: unknown): Promise<Outcome> {
  const data = JSON.stringify(body);
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, timeout: 15_000, headers: {
      Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data),
    } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => { text += d; });
      res.on('end', () => { let b: unknown; try { b = text ? JSON.parse(text) : undefined; } catch { b = text; } resolve({ kind: 'answer', status: res.statusCode!, headers: res.headers, body: b }); });
      res.on('error', (e: NodeJS.ErrnoException) => resolve({ kind: 'error', code: e.code ?? e.message }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })));
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ kind: 'error', code: e.code ?? e.message }));
    req.end(data);
  });
}

async function allConversations(url: string, key: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 10_000; page++) {
    const r: HttpResult<ConversationList> = await call<ConversationList>(url, 'GET', `/api/v1/conversations?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
    check(r.status === 200, `list answered ${r.status}`);
    out.push(...r.body.conversations);
    if (!r.body.hasMore) return out;
    cursor = r.body.nextCursor;
  }
  throw new Error('pagination did not end');
}

const LOAD_ENV = { SYNC: 'always', RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000' };
/** The floods come from one address (127.0.0.1): rows that measure something else lift the per-address cap. */
const ONE_ADDRESS = { MAX_CONNECTIONS_PER_ADDRESS: '1000000' };
const STORAGE_FAILED = { code: 'service_unavailable', error: 'The server is shutting down or cannot accept writes right now: writes are refused after a storage failure; see the server log.' };
const INTERNAL = { code: 'internal_error', error: 'The API request could not be completed.' };
const STORAGE_FULL = { code: 'storage_full', error: 'The server is out of disk space and saved nothing; try again later.' };
const SHUTTING_DOWN = { code: 'service_unavailable', error: 'The server is shutting down or cannot accept writes right now: the server is shutting down.' };
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

// ------------------------------------------------------------------------------------------
// SIGKILL during writes (test/crash.test.ts)

await (async () => {
  if (!argv['no-build']) {
    log('npm run build…');
    execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  }
})();

await row('crash', 'SIGKILL at a random moment during 220 concurrent writes (creates, messages, updates, idempotent retries), then a restart', async () => {
  const out = await new Promise<{ code: number | null; text: string }>((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', '--test', 'test/crash.test.ts'], { cwd: ROOT, env: { ...process.env, CRASH_ROUNDS: String(N.crashRounds) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => { text += d; });
    p.stderr.setEncoding('utf8').on('data', (d: string) => { text += d; });
    p.once('close', (code) => resolve({ code, text }));
  });
  const rounds = [...out.text.matchAll(/# round (\d+): killed after (\d+) acks; (\d+) of (\d+) writes unanswered/g)];
  const acked = rounds.reduce((s, m) => s + Number(m[2]) + 12, 0);
  const cut = rounds.reduce((s, m) => s + Number(m[3]), 0);
  const torn = /# torn tails set aside: (\d+); unanswered writes found written \(and replayed\): (\d+)/.exec(out.text);
  const compactRounds = [...out.text.matchAll(/# round \d+: killed after \d+ updates; the log has \d+ lines/g)].length;
  const failed = /^# fail (\d+)/m.exec(out.text)?.[1];
  if (out.code !== 0 || failed !== '0') {
    const saved = join(tempDir('sw-rel-crash-'), 'crash.tap');
    writeFileSync(saved, out.text);
    const firstFailure = /^not ok \d+ - (.*)$/m.exec(out.text)?.[1] ?? `exit ${out.code}`;
    const why = /^\s+error: [|>]?-?\s*\n?\s*(.*)$/m.exec(out.text.slice(out.text.search(/^not ok/m)))?.[1] ?? '';
    return { runs: `${rounds.length}/${N.crashRounds}`, result: `**FAILED**: ${firstFailure} — ${why} (output: ${saved})`, ok: false };
  }
  return {
    runs: `${rounds.length}/${N.crashRounds} rounds`,
    result: `0 of ${fmt(acked)} acknowledged writes lost, none duplicated, idempotent retries replayed; ${fmt(cut)} writes cut off by the kill, ` +
      `${torn?.[2] ?? '?'} of them found written; torn tails set aside: ${torn?.[1] ?? '?'}; plus ${compactRounds}/3 kills during compaction, each record its last acknowledged or in-flight value`,
  };
});

// ------------------------------------------------------------------------------------------
// I/O faults through the StoreFs seam (test/faults.test.ts)

/**
 * A StoreFs whose writes containing `marker` fail (optionally after writing part), or whose next
 * fdatasync does. `synced`: the log writes through an O_DSYNC descriptor (as on Linux, the
 * default), so a write is its own sync; without it the log fdatasyncs each batch
 * (docs/decisions.md#durable-writes-in-one-system-call).
 */
function faultFs(synced: boolean) {
  const state = { writeFault: null as null | { marker: string; code: string; portion: number }, syncFault: null as null | { marker: string; code: string } };
  const doomed = new Set<number>();
  const fs: StoreFs = {
    ...nodeFs,
    write: async (fd, data, pos) => {
      const buf = bytesOf(data);
      const f = state.writeFault;
      if (f && buf.includes(f.marker)) {
        const part = Math.floor(buf.length * f.portion);
        if (part > 0) await nodeFs.write(fd, buf.subarray(0, part), pos);
        throw Object.assign(new Error(`${f.code}: injected, write`), { code: f.code });
      }
      if (state.syncFault && buf.includes(state.syncFault.marker)) doomed.add(fd);
      return nodeFs.write(fd, data, pos);
    },
    fdatasync: async (fd) => {
      if (state.syncFault && doomed.delete(fd)) throw Object.assign(new Error(`${state.syncFault.code}: injected, fdatasync`), { code: state.syncFault.code });
      return nodeFs.fdatasync(fd);
    },
  };
  return { fs: synced ? fs : viaFdatasync(fs), state, clear: () => { state.writeFault = null; state.syncFault = null; doomed.clear(); } };
}

async function ids(srv: TestServer, key = srv.key): Promise<string[]> {
  const r = await srv.call<ConversationAnswer & ConversationList>('GET', '/api/v1/conversations?limit=100', { key });
  return r.body.conversations.map((c: { id: string }) => c.id).sort();
}

/** One run: 20 concurrent creates, one of them doomed; then a restart. Returns counts. */
type FaultKind = 'ENOSPC' | 'EIO' | 'EIO-plain' | 'partial' | 'fdatasync';
/** Whether a fault of `kind` refuses every later write (a failed sync: of an O_DSYNC write, or an fdatasync). */
const isFinal = (kind: FaultKind) => kind === 'EIO' || kind === 'fdatasync';

async function faultRun(kind: FaultKind, seed: number): Promise<{ acked: number; failed: number; lost: number }> {
  const f = faultFs(kind !== 'fdatasync' && kind !== 'EIO-plain');
  const srv = await startTestServer({ fs: f.fs, env: { SYNC: 'always' } });
  const doomedAt = seed % 20;
  let acked: string[] = [];
  let failedCount = 0;
  try {
    const before = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: { subject: 'before', customer: { email: 'a@example.com' } } });
    check(before.status === 201, `setup write ${before.status}`);
    const marker = `DOOMED-${seed}`;
    if (kind === 'fdatasync') f.state.syncFault = { marker, code: 'EIO' };
    else f.state.writeFault = { marker, code: kind === 'partial' ? 'ENOSPC' : kind === 'EIO-plain' ? 'EIO' : kind, portion: kind === 'partial' ? 0.5 : 0 };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: { subject: i === doomedAt ? marker : `w${i}`, customer: { email: 'a@example.com' }, externalId: `x${i}` } })));
    f.clear();
    // Out of space (ENOSPC, also after a partial write) is a 503 to retry; EIO on a plain
    // descriptor a 500; a failed sync (EIO on the O_DSYNC descriptor, a failed fdatasync) a 503 for good.
    const expectFail = isFinal(kind) ? STORAGE_FAILED : kind === 'EIO-plain' ? INTERNAL : STORAGE_FULL;
    check(answers[doomedAt].status !== 201, 'the doomed write was acknowledged');
    for (const r of answers) {
      if (r.status === 201) continue;
      check(same(r.body, expectFail), `a failed write answered ${r.status} ${r.text}`);
      if (expectFail === STORAGE_FULL) check(r.headers.get('retry-after') === '30', `storage_full without Retry-After: 30 (${r.headers.get('retry-after')})`);
      failedCount++;
    }
    acked = [before.body.conversation.id, ...answers.filter((r) => r.status === 201).map((r) => r.body.conversation.id)].sort();
    check(same(await ids(srv), acked), 'memory differs from the acknowledged writes');
    const next = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: { subject: 'next', customer: { email: 'a@example.com' } } });
    if (isFinal(kind)) {
      check(next.status === 503 && same(next.body, STORAGE_FAILED), `a write after the ${kind} failure answered ${next.status}`);
      const h = await srv.call('GET', '/healthz', { key: null });
      check(h.status === 503, `/healthz answered ${h.status} after the ${kind} failure`);
    } else {
      check(next.status === 201, `the write after the fault answered ${next.status}`);
      acked = [...acked, next.body.conversation.id].sort();
    }
  } finally { await srv.close(); }
  const again = await startTestServer({ dataDir: srv.dataDir, env: { SYNC: 'always' } });
  try {
    check(again.store.workspace(srv.workspaceId)!.db.replay.tornTailSavedTo === undefined, 'a torn tail at restart');
    const stored = await ids(again, srv.key);
    const lost = acked.filter((id) => !stored.includes(id)).length;
    check(stored.length === acked.length, `after the restart: ${stored.length} stored, ${acked.length} acknowledged`);
    return { acked: acked.length, failed: failedCount, lost };
  } finally { await again.close(); }
}

for (const [kind, what] of [
  ['ENOSPC', '`ENOSPC` on a log write (one of 20 concurrent writes)'],
  ['EIO', '`EIO` on a log write through its `O_DSYNC` descriptor (one of 20 concurrent writes): a failed sync'],
  ['EIO-plain', '`EIO` on a log write, where the log fdatasyncs its batches (no `O_DSYNC`)'],
  ['partial', 'A partial write (half the bytes, then `ENOSPC`)'],
  ['fdatasync', '`fdatasync` failure (`EIO`), where the log fdatasyncs its batches (no `O_DSYNC`)'],
] as const) {
  await row('faults', what, async () => {
    let acked = 0, failed = 0, lost = 0;
    for (let i = 0; i < N.faultRuns; i++) {
      const r = await faultRun(kind, i * 7919 + 13);
      acked += r.acked; failed += r.failed; lost += r.lost;
    }
    const after = isFinal(kind)
      ? 'every later write 503 `service_unavailable`, `/healthz` 503, reads 200; after a restart'
      : 'reads served throughout, the next write 201; after a restart';
    return {
      runs: `${N.faultRuns}/${N.faultRuns}`,
      result: `${fmt(failed)} writes of the failed batch answered ${isFinal(kind) ? '503' : kind === 'EIO-plain' ? '500 `internal_error`' : '503 `storage_full` with `Retry-After: 30`'} and undone, ${after} the log replays with no torn tail and ${lost} of ${fmt(acked)} acknowledged writes lost`,
      ok: lost === 0,
    };
  });
}

// ------------------------------------------------------------------------------------------
// Damaged logs, a reused pid in the lock, a real full disk (bench/storageRows.ts)

await storageRows(row, check, quick);

// ------------------------------------------------------------------------------------------
// Graceful shutdown (test/shutdown.test.ts)

await row('shutdown', '`SIGTERM` under a steady load of writes (8 keep-alive clients, SYNC=always, SHUTDOWN_TIMEOUT_MS=3000)', async () => {
  let acked = 0, refused = 0, socketErrors = 0, lost = 0, stored503 = 0, maxExitMs = 0;
  for (let run = 0; run < N.shutdownRuns; run++) {
    const dataDir = tempDir('sw-rel-shutdown-');
    const srv = await startChild({ dataDir, env: { ...LOAD_ENV, SHUTDOWN_TIMEOUT_MS: '3000' } });
    try {
      const key = await srv.waitForKey();
      const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
      const sent = new Map<string, Outcome | null>();
      let n = 0;
      let stop = false;
      const writers = Array.from({ length: 8 }, async () => {
        while (!stop) {
          const externalId = `load-${n++}`;
          sent.set(externalId, null);
          const o = await post(agent, srv.port, '/api/v1/conversations', key, { subject: externalId, customer: { email: 'a@example.com' }, externalId });
          sent.set(externalId, o);
          if (o.kind === 'error' || o.status !== 201) return;
        }
      });
      const target = 20 + (run * 37) % 200;
      await within(new Promise<void>((resolve) => {
        const tick = () => ([...sent.values()].filter((o) => o?.kind === 'answer' && o.status === 201).length >= target ? resolve() : setImmediate(tick));
        tick();
      }), 30_000, `${target} acknowledged writes`);
      const t0 = performance.now();
      srv.proc.kill('SIGTERM');
      const exit = await within(srv.exited, 10_000, 'the exit');
      const ms = performance.now() - t0;
      stop = true;
      await within(Promise.all(writers), 20_000, 'the writers');
      agent.destroy();
      check(exit.code === 0 && exit.signal === null, `exit ${JSON.stringify(exit)}`);
      check(ms < 3000, `exit took ${Math.round(ms)} ms`);
      maxExitMs = Math.max(maxExitMs, ms);
      const ackedIds = new Map<string, string>();
      const refusedIds = new Set<string>();
      for (const [externalId, o] of sent) {
        check(o, `${externalId} got no outcome`);
        if (o.kind === 'error') { socketErrors++; continue; }
        if (o.status === 201) { ackedIds.set(externalId, o.body.conversation.id); continue; }
        check(o.status === 503 && same(o.body, SHUTTING_DOWN) && o.headers.connection === 'close', `${externalId}: ${o.status} ${JSON.stringify(o.body)} connection=${o.headers.connection}`);
        refusedIds.add(externalId);
      }
      acked += ackedIds.size;
      refused += refusedIds.size;
      const again = await startChild({ dataDir, env: LOAD_ENV });
      try {
        const stored = new Map((await allConversations(again.url, key)).map((c) => [c.externalId, c.id]));
        for (const [externalId, id] of ackedIds) if (stored.get(externalId) !== id) lost++;
        for (const externalId of refusedIds) if (stored.has(externalId)) stored503++;
      } finally { await again.stop(); }
    } finally { await srv.stop('SIGKILL'); }
  }
  return {
    runs: `${N.shutdownRuns}/${N.shutdownRuns}`,
    result: `exit 0 every time, at most ${Math.round(maxExitMs)} ms after the signal; ${fmt(acked)} writes acknowledged (${lost} lost after the restart), ` +
      `${fmt(refused)} answered 503 \`service_unavailable\` + \`Connection: close\` (${stored503} of them stored), ${socketErrors} refused or reset connections`,
    ok: lost === 0 && stored503 === 0,
  };
});

await row('shutdown', 'A second `SIGTERM` while a request never finishes (a source fetch from an upstream that never answers)', async () => {
  let maxMs = 0;
  for (let run = 0; run < N.secondSignalRuns; run++) {
    let onRequest!: () => void;
    const requested = new Promise<void>((r) => { onRequest = r; });
    const upstream = http.createServer(() => onRequest());
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as net.AddressInfo).port}/openapi.json`;
    const dataDir = tempDir('sw-rel-signal-');
    const env = { ...LOAD_ENV, SOURCE_FETCH_ALLOW_PRIVATE: 'true', SOURCE_FETCH_TIMEOUT_MS: '600000', SHUTDOWN_TIMEOUT_MS: '600000' };
    const srv = await startChild({ dataDir, env });
    try {
      const key = await srv.waitForKey();
      const conv = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: { subject: 'kept', customer: { email: 'a@example.com' } } });
      check(conv.status === 201, `setup ${conv.status}`);
      const slow = await Conn.open(srv.port);
      const body = JSON.stringify({ url: upstreamUrl, type: 'openapi' });
      slow.write(`POST /api/v1/sources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await within(requested, 10_000, 'the upstream to be asked');
      srv.proc.kill('SIGTERM');
      await srv.waitFor('"shutting down"', () => (srv.logLines().some((l) => l.msg === 'shutting down') ? true : undefined), 5000);
      check(srv.exit === null, 'the first signal did not wait for the slow request');
      const t0 = performance.now();
      srv.proc.kill('SIGTERM');
      const exit = await within(srv.exited, 5000, 'the exit');
      maxMs = Math.max(maxMs, performance.now() - t0);
      check(exit.code === 1, `exit ${JSON.stringify(exit)}`);
      slow.destroy();
      const again = await startChild({ dataDir, env });
      try {
        const list = await call<SourceList>(again.url, 'GET', '/api/v1/sources', { key });
        check(list.body.sources.length === 1 && list.body.sources[0].status === 'failed' && /interrupted/.test(String(list.body.sources[0].error)), `sources after the restart: ${list.text}`);
        const g = await call<ConversationAnswer>(again.url, 'GET', `/api/v1/conversations/${conv.body.conversation.id}`, { key });
        check(g.status === 200 && g.body.conversation.subject === 'kept', 'the conversation is missing after the restart');
      } finally { await again.stop(); }
    } finally { await srv.stop('SIGKILL'); upstream.closeAllConnections(); upstream.close(); }
  }
  return {
    runs: `${N.secondSignalRuns}/${N.secondSignalRuns}`,
    result: `exit 1 at most ${Math.round(maxMs)} ms after the second signal; the next start marks the source \`failed\` ("interrupted…"), data intact`,
  };
});

// ------------------------------------------------------------------------------------------
// Slow clients (test/hostile.test.ts)

/** `n` connections each sending one byte every `everyMs` after `head`, against a child server; how long until all are cut. */
async function slowAttack(env: Record<string, string>, head: (key: string) => string, dripText: string, n: number): Promise<{ maxMs: number; cut: number; answered: number; stored: number; healthMs: number }> {
  const srv = await startChild({ env: { ...LOAD_ENV, ...ONE_ADDRESS, ...env } });
  try {
    const key = await srv.waitForKey();
    const conns = await openMany(srv.port, n);
    const t0 = performance.now();
    for (const c of conns) c.write(head(key));
    let i = 0;
    const timer = setInterval(() => { const ch = dripText[i++ % dripText.length]; for (const c of conns) c.write(ch); }, 250);
    try {
      const healthMs = await healthLatency(srv.url);
      await within(Promise.all(conns.map((c) => c.ended)), 60_000, 'every slow connection to be cut');
      const maxMs = Math.max(...conns.map((c) => c.closedAt - t0));
      const stored = (await allConversations(srv.url, key)).length;
      return { maxMs, cut: conns.filter((c) => c.closed).length, answered: conns.filter((c) => c.data.length > 0).length, stored, healthMs };
    } finally { clearInterval(timer); for (const c of conns) c.destroy(); }
  } finally { await srv.stop('SIGKILL'); }
}

await row('slow', `${fmt(N.slowConns)} slow-header connections at once (slowloris: a header byte every 250 ms), HEADERS_TIMEOUT_MS=2000`, async () => {
  const r = await slowAttack({ HEADERS_TIMEOUT_MS: '2000' }, () => 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ', 'a'.repeat(64), N.slowConns);
  check(r.maxMs < 5000, `the last one was cut after ${Math.round(r.maxMs)} ms`);
  check(r.answered === 0, `${r.answered} answered`);
  return { runs: `${fmt(N.slowConns)} connections`, result: `all ${fmt(r.cut)} cut off, the last ${(r.maxMs / 1000).toFixed(1)} s after it started; \`/healthz\` answered in ${Math.round(r.healthMs)} ms during the attack` };
});

await row('slow', `${fmt(N.slowConns)} slow-body connections at once (headers, then a body byte every 250 ms), REQUEST_TIMEOUT_MS=3000`, async () => {
  const body = JSON.stringify({ subject: 'x'.repeat(200), customer: { email: 'a@example.com' } });
  const r = await slowAttack({ REQUEST_TIMEOUT_MS: '3000' },
    (key) => `POST /api/v1/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n{"subject":"`,
    'x'.repeat(64), N.slowConns);
  check(r.maxMs < 6000, `the last one was cut after ${Math.round(r.maxMs)} ms`);
  check(r.answered === 0 && r.stored === 0, `${r.answered} answered, ${r.stored} stored`);
  return { runs: `${fmt(N.slowConns)} connections`, result: `all ${fmt(r.cut)} cut off, the last ${(r.maxMs / 1000).toFixed(1)} s after it started, none answered or stored; \`/healthz\` answered in ${Math.round(r.healthMs)} ms during the attack` };
});

// ------------------------------------------------------------------------------------------
// Idle connections and the connection cap

await row('idle', `${fmt(N.idleConns)} idle keep-alive connections (default MAX_CONNECTIONS=10000)`, async () => {
  const srv = await startChild({ env: { ...LOAD_ENV, ...ONE_ADDRESS, KEEP_ALIVE_TIMEOUT_MS: '600000', HEADERS_TIMEOUT_MS: '600000', REQUEST_TIMEOUT_MS: '600000' } });
  try {
    await healthLatency(srv.url);
    const before = procStats(srv.pid);
    const conns = await openMany(srv.port, N.idleConns);
    try {
      for (const c of conns) c.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
      const answers = await Promise.all(conns.map((c) => c.response(60_000)));
      const answered = answers.filter((r) => r?.status === 200).length;
      const during = procStats(srv.pid);
      check(answered === N.idleConns, `${answered} of ${N.idleConns} answered`);
      const grow = during.rss - before.rss;
      for (const c of conns) c.destroy();
      await within(Promise.all(conns.map((c) => c.ended)), 30_000, 'the clients to close');
      let after = procStats(srv.pid);
      for (let i = 0; i < 200 && after.fds > before.fds + 2; i++) { await new Promise((r) => setImmediate(r)); await healthLatency(srv.url); after = procStats(srv.pid); }
      const ms = await healthLatency(srv.url);
      return {
        runs: `${fmt(N.idleConns)} connections`,
        result: `all answered and held; server RSS +${mb(grow)} (${(grow / N.idleConns / 1024).toFixed(1)} KB each), +${fmt(during.fds - before.fds)} descriptors; ` +
          `all released on close (${after.fds - before.fds >= 0 ? '+' : ''}${after.fds - before.fds} descriptors after), next request ${Math.round(ms)} ms`,
        ok: after.fds <= before.fds + 2,
      };
    } finally { for (const c of conns) c.destroy(); }
  } finally { await srv.stop('SIGKILL'); }
});

await row('idle', `${fmt(N.floodConns)} keep-alive connections against MAX_CONNECTIONS=${fmt(N.floodCap)}, KEEP_ALIVE_TIMEOUT_MS=2000`, async () => {
  const srv = await startChild({ env: { ...LOAD_ENV, ...ONE_ADDRESS, MAX_CONNECTIONS: String(N.floodCap), KEEP_ALIVE_TIMEOUT_MS: '2000' } });
  try {
    const before = procStats(srv.pid);
    const conns = await openMany(srv.port, N.floodConns);
    try {
      for (const c of conns) c.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
      const answers = await Promise.all(conns.map((c) => c.response(60_000)));
      const served = answers.filter((r) => r?.status === 200).length;
      const during = procStats(srv.pid);
      const held = during.fds - before.fds;
      check(served <= N.floodCap, `${served} served above the cap`);
      check(held <= N.floodCap + 5, `${held} descriptors held`);
      const kept = conns.filter((_, i) => answers[i]);
      await within(Promise.all(kept.map((c) => c.ended)), 15_000, 'the idle keep-alive connections to be cut');
      const ms = await healthLatency(srv.url);
      return {
        runs: `${fmt(N.floodConns)} connections`,
        result: `${fmt(served)} served and held (+${held} descriptors), ${fmt(N.floodConns - served)} closed at once without an answer; ` +
          `the idle ones cut after KEEP_ALIVE_TIMEOUT_MS, then a new request answered in ${Math.round(ms)} ms`,
      };
    } finally { for (const c of conns) c.destroy(); }
  } finally { await srv.stop('SIGKILL'); }
});

// ------------------------------------------------------------------------------------------
// Clients that never read their answers; one address holding connections (test/connections.test.ts)

await row('output', `${N.outputConns} connections each pipelining 1,000 \`GET /api/v1/openapi.json\` (100 KB answers) and never reading`, async () => {
  const srv = await startChild({ env: LOAD_ENV });
  const socks: net.Socket[] = [];
  try {
    await healthLatency(srv.url);
    const before = procStats(srv.pid);
    const request = 'GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(1000);
    const t0 = performance.now();
    for (let i = 0; i < N.outputConns; i++) {
      const s = net.connect(srv.port, '127.0.0.1');
      s.on('error', () => {});
      s.pause();
      s.write(request);
      socks.push(s);
    }
    // Probe /healthz through the attack until the server has closed every stalled connection
    // (30 s without progress), or 60 s.
    let worst = 0;
    let probes = 0;
    let maxFds = before.fds;
    let closedMs = 0;
    while (performance.now() - t0 < 60_000) {
      worst = Math.max(worst, await healthLatency(srv.url));
      probes++;
      const { fds } = procStats(srv.pid);
      maxFds = Math.max(maxFds, fds);
      if (maxFds >= before.fds + N.outputConns && fds <= before.fds) { closedMs = performance.now() - t0; break; }
      await new Promise((r) => setTimeout(r, 100));
    }
    const after = procStats(srv.pid);
    check(maxFds >= before.fds + N.outputConns, `only ${maxFds - before.fds} of the connections were seen open`);
    check(closedMs > 0, 'the stalled connections were still open after 60 s');
    const ms = await healthLatency(srv.url);
    return {
      runs: `${N.outputConns} connections, ${fmt(N.outputConns * 1000)} requests`,
      result: `server RSS ${mb(before.rss)} before, peak ${mb(after.hwm)} (the process's high-water mark); the longest of ${probes} \`/healthz\` probes ` +
        `during the attack took ${Math.round(worst)} ms; every connection closed ${(closedMs / 1000).toFixed(1)} s after the attack began (no output taken for 30 s); next request ${Math.round(ms)} ms`,
      ok: after.hwm < before.rss + 200 * MiB && worst < 1000,
    };
  } finally { for (const s of socks) s.destroy(); await srv.stop('SIGKILL'); }
});

await row('peraddr', '250 idle keep-alive connections from one address (127.0.0.1) against MAX_CONNECTIONS=200, MAX_CONNECTIONS_PER_ADDRESS=150; then 99 requests from another address (127.0.0.2)', async () => {
  const srv = await startChild({ env: { ...LOAD_ENV, MAX_CONNECTIONS: '200', MAX_CONNECTIONS_PER_ADDRESS: '150', KEEP_ALIVE_TIMEOUT_MS: '600000' } });
  let conns: Conn[] = [];
  try {
    conns = await openMany(srv.port, 250, 50);
    for (const c of conns) c.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    const answers = await Promise.all(conns.map((c) => c.response(15_000)));
    const held = answers.filter((r) => r?.status === 200).length;
    const refused = conns.filter((c, i) => answers[i] === undefined && c.closed && c.data.length === 0).length;
    let served = 0;
    let worst = 0;
    for (let i = 0; i < 99; i++) {
      try { worst = Math.max(worst, await healthLatency(srv.url, '127.0.0.2')); served++; } catch { /* counted as not served */ }
    }
    check(held === 150 && refused === 100, `${held} held, ${refused} refused`);
    return {
      runs: '250 + 99 connections',
      result: `127.0.0.1: ${held} served and held, ${refused} closed at once without an answer; 127.0.0.2: ${served} of 99 requests served, the slowest in ${Math.round(worst)} ms`,
      ok: served === 99,
    };
  } finally { for (const c of conns) c.destroy(); await srv.stop('SIGKILL'); }
});

// ------------------------------------------------------------------------------------------
// Huge bodies

/** Streams a chunked body of `total` bytes (one reused 64 KiB chunk) until the server answers or hangs up. */
async function chunkedUpload(port: number, head: string, total: number): Promise<{ response: RawResponse | undefined; sent: number; ms: number }> {
  const c = await Conn.open(port);
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
  const t0 = performance.now();
  c.write(head);
  let sent = 0;
  const answered = () => c.closed || parseResponse(c.data) !== undefined;
  while (sent < total && !answered()) {
    sent += chunk.length;
    if (!c.write(frame)) await new Promise<void>((r) => { c.sock.once('drain', r); void c.ended.then(r); });
  }
  if (!answered()) c.write('0\r\n\r\n');
  const response = await c.response(120_000);
  const ms = performance.now() - t0;
  c.destroy();
  return { response, sent, ms };
}

for (const variant of ['413', '401', 'sources'] as const) {
  const what = {
    '413': `A ${N.bodyBytes / MiB >= 1024 ? `${N.bodyBytes / 1024 / MiB} GB` : mb(N.bodyBytes)} chunked body to \`POST /api/v1/conversations\` (1 MiB limit)`,
    '401': `The same body without an API key (answered before the body is read)`,
    'sources': `The same body to \`POST /api/v1/sources\` (16 MiB limit)`,
  }[variant];
  await row('bodies', what, async () => {
    const srv = await startChild({ env: LOAD_ENV });
    try {
      const key = await srv.waitForKey();
      await healthLatency(srv.url);
      const before = procStats(srv.pid);
      const path = variant === 'sources' ? '/api/v1/sources' : '/api/v1/conversations';
      const auth = variant === '401' ? '' : `Authorization: Bearer ${key}\r\n`;
      const head = `POST ${path} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
      const { response, sent, ms } = await chunkedUpload(srv.port, head, N.bodyBytes);
      const after = procStats(srv.pid);
      const expected = variant === '401' ? 401 : 413;
      check(response?.status === expected, `answered ${response?.status ?? 'nothing'}`);
      check(response!.headers.connection === 'close', 'no Connection: close');
      const peak = after.hwm - before.rss;
      await healthLatency(srv.url);
      return {
        runs: '1',
        result: `${expected} \`${(response!.body as ErrorAnswer).code}\` after ${mb(sent)} of ${mb(N.bodyBytes)} were sent, in ${Math.round(ms)} ms, connection closed; server peak RSS +${mb(Math.max(0, peak))}`,
        ok: variant === 'sources' || peak < 20 * MiB,
      };
    } finally { await srv.stop('SIGKILL'); }
  });
}

// ------------------------------------------------------------------------------------------
// Malformed requests

await row('malformed', 'Oversized headers (one 20 KiB header; 1,000 small ones), `Content-Encoding: gzip|deflate|br`, invalid UTF-8 (6 kinds)', async () => {
  const srv = await startChild({ env: LOAD_ENV });
  let checked = 0;
  try {
    const key = await srv.waitForKey();
    const body = (bytes: Buffer) => Buffer.concat([Buffer.from('{"subject":"'), bytes, Buffer.from('","customer":{"email":"a@example.com"}}')]);
    const postReq = (extra: string, b: Buffer) => Buffer.concat([Buffer.from(`POST /api/v1/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${extra}Content-Length: ${b.length}\r\n\r\n`), b]);
    const cases: Array<{ req: Buffer; status: number; body: object }> = [
      { req: Buffer.from(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`), status: 431, body: { code: 'request_header_fields_too_large', error: 'The request headers are too large.' } },
      { req: Buffer.from(`GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 1000 }, (_, i) => `X-H${i}: vvvvvvvvvvvvvvvv\r\n`).join('')}\r\n`), status: 431, body: { code: 'request_header_fields_too_large', error: 'The request headers are too large.' } },
      ...['gzip', 'deflate', 'br'].map((enc) => ({ req: postReq(`Content-Encoding: ${enc}\r\n`, body(Buffer.from('x'))), status: 415,
        body: { code: 'unsupported_media_type', error: 'The request body must be application/json: Content-Encoding is not supported; send the body uncompressed.' } })),
      ...[[0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0xff]].map((bytes) => ({ req: postReq('', body(Buffer.from(bytes))), status: 400,
        body: { code: 'invalid_request', error: 'Request body is invalid: the body is not valid UTF-8.' } })),
    ];
    for (let run = 0; run < N.malformedRuns; run++) {
      await Promise.all(cases.map(async (k) => {
        const c = await Conn.open(srv.port);
        c.write(k.req);
        const r = await c.response();
        c.destroy();
        check(r && r.status === k.status && same(r.body, k.body), `expected ${k.status}, got ${r?.status} ${r?.text}`);
        checked++;
      }));
    }
    const list = await call<ConversationList>(srv.url, 'GET', '/api/v1/conversations', { key });
    check(list.body.conversations.length === 0, 'a malformed request was stored');
  } finally { await srv.stop('SIGKILL'); }
  return { runs: `${fmt(checked)} requests`, result: `every one answered 431 / 415 / 400 with the exact \`{code, error}\` body; nothing stored` };
});

// ------------------------------------------------------------------------------------------
// Fetching and live checks (test/fetch.test.ts, test/redaction.test.ts, test/checks.test.ts)

/** A process's CPU time (user + system, all threads) in ms, from /proc (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime (fields 14, 15 of stat)
}

/** A local HTTP server answering every request with `answer`; closed by the returned function. */
async function upstream(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http.createServer(answer);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

await row('fetch', 'A source URL answering 2,000 stacked `Content-Encoding: gzip` layers (a real 2,000-times gzipped body)', async () => {
  let body = Buffer.from('stacked');
  for (let i = 0; i < 2000; i++) body = zlib.gzipSync(body, { level: 1 });
  const up = await upstream((_req, res) => { res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': new Array(2000).fill('gzip').join(', ') }); res.end(body); });
  const srv = await startChild({ env: { ...LOAD_ENV, SOURCE_FETCH_ALLOW_PRIVATE: 'true' } });
  let worst = 0;
  let healthMs = 0;
  try {
    const key = await srv.waitForKey();
    for (let run = 0; run < N.stackedRuns; run++) {
      const url = `${up.origin}/stacked-${run}`;
      const cpu0 = cpuMs(srv.pid);
      const [r, h] = await Promise.all([call<Ingestion>(srv.url, 'POST', '/api/v1/sources', { key, body: { url } }), healthLatency(srv.url)]);
      worst = Math.max(worst, cpuMs(srv.pid) - cpu0);
      healthMs = Math.max(healthMs, h);
      const expected = `could not decode ${url}: it has 2000 Content-Encoding layers, more than the 2 accepted`;
      check(r.status === 201 && r.body.source.status === 'failed' && r.body.source.error === expected, `expected a failed source (${expected}), got ${r.status} ${JSON.stringify(r.body?.source?.error)}`);
    }
  } finally { await srv.stop('SIGKILL'); await up.close(); }
  return { runs: `${N.stackedRuns} sources`, result: `each \`failed\`: "could not decode …: it has 2000 Content-Encoding layers, more than the 2 accepted"; at most ${worst} ms of server CPU per create (the whole request, 10 ms resolution), /healthz meanwhile at most ${healthMs.toFixed(0)} ms (unbounded, one such fetch cost about 20 CPU-seconds)` };
});

await row('fetch', 'Live checks whose upstream echoes the bearer secret in 17 forms (raw, any case, JSON-escaped, URL-encoded, base64 alone / in `user:secret` / at each alignment…) inside a 1 MiB body', async () => {
  const secret = 'Se/cr+et "Q" x~1-bench';
  const b64 = (x: string) => Buffer.from(x).toString('base64');
  const forms = [
    secret, secret.toLowerCase(), secret.toUpperCase(), JSON.stringify(secret), JSON.stringify(secret).replaceAll('/', '\\/'),
    [...secret].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''), encodeURIComponent(secret),
    encodeURIComponent(secret).toLowerCase(), encodeURIComponent(secret).replaceAll('%20', '+'), b64(secret), b64(secret).replace(/=+$/, ''),
    Buffer.from(secret).toString('base64url'), b64(`user:${secret}`), b64(`x${secret}yz`), b64(`xy${secret}z`), encodeURIComponent(b64(secret)),
    JSON.stringify(encodeURIComponent(secret)),
  ];
  // The forms spread through 1 MiB of filler; the check fetches all of it and returns the first 16 KiB, redacted.
  const filler = 'lorem ipsum dolor sit amet, '.repeat(40);
  let text = '';
  for (let i = 0; text.length < 1024 * 1024 - 2048; i++) text += `${filler}${forms[i % forms.length]}\n`;
  const up = await upstream((_req, res) => { res.writeHead(200, { 'content-type': 'text/plain' }); res.end(text); });
  const srv = await startChild({ env: { ...LOAD_ENV, SOURCE_FETCH_ALLOW_PRIVATE: 'true' } });
  const times: number[] = [];
  try {
    const key = await srv.waitForKey();
    const spec = { openapi: '3.0.3', info: { title: 'Echo', version: '1' }, servers: [{ url: up.origin }], paths: { '/echo': { get: { responses: { 200: { description: 'ok' } } } } } };
    const made = await call<Ingestion>(srv.url, 'POST', '/api/v1/sources', { key, body: { content: JSON.stringify(spec) } });
    check(made.status === 201, `create answered ${made.status}`);
    const id = made.body.source.id as string;
    const endpointId = made.body.endpoints[0].id as string;
    check((await call(srv.url, 'PATCH', `/api/v1/sources/${id}`, { key, body: { auth: { type: 'bearer', secret } } })).status === 200, 'PATCH auth failed');
    for (let i = 0; i < N.echoChecks; i++) {
      const t0 = performance.now();
      const r = await call<LiveCheck>(srv.url, 'POST', `/api/v1/sources/${id}/checks`, { key, body: { endpointId } });
      times.push(performance.now() - t0);
      check(r.status === 200 && r.body.status === 200 && r.body.truncated === true, `check answered ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      const out = String(r.body.body).toLowerCase();
      for (const f of forms) check(!out.includes(f.toLowerCase()), `a form of the secret came back: ${f}`);
      check(out.includes('[redacted]'), 'nothing was redacted');
    }
  } finally { await srv.stop('SIGKILL'); await up.close(); }
  times.sort((a, b) => a - b);
  return { runs: `${N.echoChecks} checks`, result: `no form of the secret in any answer; a check (1 MiB fetched, redacted, 16 KiB returned) took ${times[Math.floor(times.length / 2)].toFixed(0)} ms median, ${times[times.length - 1].toFixed(0)} ms at most` };
});

// Ingestion never stalls the server

interface ProbeStats { count: number; p50: number; p99: number; max: number }
/** bench/healthz-probe.mjs in its own process; `report()` gives the window since the last report. */
async function startProbe(url: string): Promise<{ report(): Promise<ProbeStats>; exit(): void }> {
  const child = fork(join(ROOT, 'bench', 'healthz-probe.mjs'), [url], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await within(new Promise<void>((r) => child.once('message', () => r())), 10_000, 'the /healthz probe');
  return {
    report: () => within(new Promise<ProbeStats>((r) => { child.once('message', (m) => r(m as ProbeStats)); child.send('report'); }), 10_000, 'a probe report'),
    exit: () => { child.send('exit'); },
  };
}
const ms1 = (n: number) => `${n.toFixed(n < 10 ? 1 : 0)} ms`;

await row('ingest', `10 ingestions of ~1.8 MB documents at once (Markdown with a heading every ~400 chars, OpenAPI JSON, HTML with \`<h2>\` sections), /healthz polled every ~10 ms from another process`, async () => {
  const srv = await startChild({ env: LOAD_ENV });
  try {
    const key = await srv.waitForKey();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
    const docs = [markdownDoc(1_800_000), openApiDoc(1_800_000), htmlDoc(1_800_000)];
    // Warm-up (the workers' first parse is cold), then the measured round.
    for (const d of docs) check((await post(agent, srv.port, '/api/v1/sources', key, { content: d })).kind === 'answer', 'warm-up');
    const probe = await startProbe(srv.url);
    try {
      await probe.report();
      const t0 = performance.now();
      const outs = await Promise.all(Array.from({ length: 10 }, (_, i) => post(agent, srv.port, '/api/v1/sources', key, { content: docs[i % 3] })));
      const wall = performance.now() - t0;
      const h = await probe.report();
      const statuses = outs.map((o) => (o.kind === 'answer' ? `${o.status} ${o.body?.source?.status}` : o.code));
      check(statuses.every((x) => x === '201 ready'), `answers: ${statuses.join(', ')}`);
      const st = procStats(srv.pid);
      return { runs: '10 at once', ok: h.p99 <= 50 && h.max <= 100,
        result: `all 201 \`ready\` in ${(wall / 1000).toFixed(1)} s; /healthz (${fmt(h.count)} probes) p50 ${ms1(h.p50)}, p99 ${ms1(h.p99)}, max ${ms1(h.max)} (target p99 ≤ 50 ms, max ≤ 100 ms); server RSS ${mb(st.rss)}, peak ${mb(st.hwm)}` };
    } finally { probe.exit(); agent.destroy(); }
  } finally { await srv.stop('SIGKILL'); }
});

const PATHOLOGICAL: Array<[string, () => string]> = [
  ['400,000 `# h` headings (1.6 MB)', () => headings(400_000)],
  ['OpenAPI JSON with 20,000 paths (1.2 MB)', () => openApiPaths(20_000)],
  ['HTML with 190,000 `<h2>` (1.9 MB)', () => h2Page(190_000)],
  ['WSDL with 90,000 operations (1.9 MB)', () => wsdlOperations(90_000)],
];
for (const [name, make] of PATHOLOGICAL) {
  await row('ingest', `Pathological paste: ${name}, /healthz polled every ~10 ms from another process`, async () => {
    const srv = await startChild({ env: LOAD_ENV });
    try {
      const key = await srv.waitForKey();
      const agent = new http.Agent({ keepAlive: true });
      const content = make();
      const probe = await startProbe(srv.url);
      try {
        await probe.report();
        const t0 = performance.now();
        const o = await post(agent, srv.port, '/api/v1/sources', key, { content });
        const wall = performance.now() - t0;
        const h = await probe.report();
        check(o.kind === 'answer' && o.status === 201, `answered ${o.kind === 'answer' ? o.status : o.code}`);
        const body = (o as { body: any }).body;
        const st = procStats(srv.pid);
        const what = body.source.status === 'failed' ? `\`failed\`: "${body.source.error}"` : `\`ready\` (${fmt(body.counts.documents)} documents, ${fmt(body.counts.endpoints)} endpoints)`;
        return { runs: '1', ok: h.max <= 100,
          result: `201 ${what} in ${ms1(wall)}; longest /healthz wait ${ms1(h.max)} (${fmt(h.count)} probes); server RSS ${mb(st.rss)}, peak ${mb(st.hwm)}; data dir ${mb(dirBytes(srv.dataDir))}` };
      } finally { probe.exit(); agent.destroy(); }
    } finally { await srv.stop('SIGKILL'); }
  });
}

/** Bytes of the files under `dir` (the logs a paste left behind). */
function dirBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) n += statSync(join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).size;
  return n;
}

// ------------------------------------------------------------------------------------------
// The table

let commit = '';
try { commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(); } catch { /* not a checkout */ }
const table = [
  `Produced by \`node --import tsx bench/reliability.ts${quick ? ' --quick' : ''}\` on ${new Date().toISOString().slice(0, 10)}` +
    `${commit ? ` (commit ${commit})` : ''}, Node ${process.version}, ${process.platform}/${process.arch}.`,
  '',
  '| Fault or attack | Runs | Result |',
  '|---|---|---|',
  ...rows.map((r) => `| ${r.what.replace(/\|/g, '\\|')} | ${r.runs} | ${r.ok || r.result.startsWith('**FAILED**') ? '' : '**FAILED** '}${r.result.replace(/\|/g, '\\|')} |`),
  '',
].join('\n');
process.stdout.write(table);
if (argv.out) writeFileSync(argv.out, table);
process.exit(rows.every((r) => r.ok) ? 0 : 1);
