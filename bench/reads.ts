/**
 * The reads scenario of `npm run bench` (bench/README.md, "Reads" and "Peers"):
 * `GET /api/v1/issues/{id}` and the list page `GET /api/v1/conversations?limit=20&status=open`
 * on our server and on its peers, all in the same rounds, alternating (the order rotates each
 * round), each doing the same work per request — the bearer key hashed with SHA-256 and looked
 * up, a request id, the key's token bucket and a usage count (bench/peerAuth.ts), the same record
 * answered as JSON with the same bytes, `Content-Type` and header set:
 *
 *  - ours (`node dist/server.js`, SYNC=always, access log at the bench's LOG_LEVEL), and for
 *    GET issue also ours without the access log (LOG_LEVEL=warn) when the log is on;
 *  - fastify 5 (bench/fastify-server.ts), when bench/peers.ts could install it;
 *  - bare node:http with `JSON.stringify` per request (bench/baseline.ts, the 1.00× reference);
 *  - bare node:http writing a ready Buffer (the ceiling: no serialization at all).
 *
 * With pinning on, every server runs on CPU 0 and the load generator on CPU 1.
 * Before measuring, each peer's answers are compared with ours: bytes and header names.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import { join } from 'node:path';
import { int, ms, mb, pct, ratio, verdict, log, median, paired, spreadNote, runLine, summarize, type Run } from './figures.js';
import { pin, type PeerInstall, type PinPlan } from './peers.js';
import type { GroupSpec, Job } from './load.js';
import type { Ctx, LoadClient, Proc, Row } from './run.js';

/** What bench/run.ts lends the scenario. */
export interface ReadsKit {
  opts: { connections: number; rounds: number; logRounds: number; seconds: number; warmup: number; only: Set<string>; readClients: Array<'http' | 'raw'>; logLevel: string; fresh: boolean };
  pin: PinPlan;
  peer: PeerInstall;
  rows: Row[];
  notes: string[];
  abRun(load: LoadClient, target: Proc, groups: GroupSpec[], name: string, timing?: { client?: 'http' | 'raw' }): Promise<Record<string, Run>>;
  copyDir(from: string, to: string): string;
  detail(line: string): void;
  /**
   * Our server (SYNC=always) on `dataDir`; its standard output to a file or a FIFO this process
   * reads when given, else to `stdio: 'pipe'` (a Unix socket pair this process reads).
   */
  startServer(label: string, dataDir: string, env?: Record<string, string>, stdout?: { file: string } | { fifo: string }): Proc;
  /** A second load generator (the log's cost at once drives two servers at a time); the caller closes it. */
  newLoadClient(): LoadClient;
  /** `node --import tsx bench/<script>` with `env` (PORT=0 added). */
  spawnPeer(label: string, script: string, env: Record<string, string>): Proc;
  /** `--against DIR`: another build of our server, started on `dataDir` (SYNC=always). */
  against?: { label: string; start(label: string, dataDir: string): Proc };
}

/** Targets of the comparison: the rows' keys. */
const OURS = 'ours';
const OURS_NOLOG = 'ours, no access log';
const OURS_FILELOG = 'ours, access log to a file';
const OURS_FIFOLOG = 'ours, access log to a FIFO';
const OURS_NOLOG2 = 'ours, no access log (a second server)';
const OURS_AGAINST = 'ours, other build';
const FASTIFY = 'fastify';
const BARE = 'bare JSON.stringify';
const CEILING = 'bare ready Buffer';

/**
 * A server measured: `p` its process now; `start` makes a new one on the same data (each round
 * then measures a fresh process, `--fresh on`).
 */
interface Target { key: string; p: Proc; start: () => Proc }

const LIST = '/api/v1/conversations?limit=20&status=open';
const TARGETS = { fastify: '≥ 1.15×', bare: '≥ 0.95×' } as const;

/** One GET: status, Content-Type and the body's bytes. */
function get(port: number, path: string, authorization?: string): Promise<{ status: number; type: string; body: Buffer; names: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'GET', path, headers: authorization ? { authorization } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      // The header names but the ones node:http and fastify add by themselves (Date, Connection, Keep-Alive).
      const names = Object.keys(res.headers).filter((n) => !['date', 'connection', 'keep-alive'].includes(n)).sort().join(', ');
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body: Buffer.concat(chunks), names }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Every issue of the workspace as our server answers it, page by page. */
async function allIssues(port: number, authorization: string): Promise<Record<string, unknown>> {
  const issues: Record<string, unknown> = {};
  let cursor: string | null = null;
  do {
    const r = await get(port, `/api/v1/issues?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, authorization);
    if (r.status !== 200) throw new Error(`listing issues: ${r.status} ${r.body.toString()}`);
    const page = JSON.parse(r.body.toString('utf8')) as { issues: Array<{ id: string }>; nextCursor: string | null };
    for (const i of page.issues) issues[i.id] = i;
    cursor = page.nextCursor;
  } while (cursor);
  return issues;
}

/**
 * Checks that `peer` answers like `ours`: the same status, Content-Type and bytes for a few
 * issues, the list page, an unknown key and no key at all. Throws on the first difference —
 * a comparison of different work would mean nothing.
 */
async function sameAnswers(ours: Proc, peer: Proc, label: string, issueIds: string[], authorization: string): Promise<void> {
  const wrongKey = `Bearer svck_${'0'.repeat(43)}`;
  const probes: Array<[string, string | undefined]> = [
    ...[0, Math.floor(issueIds.length / 2), issueIds.length - 1].map((i): [string, string] => [`/api/v1/issues/${issueIds[i]}`, authorization]),
    [LIST, authorization], [`/api/v1/issues/${issueIds[0]}`, wrongKey], [`/api/v1/issues/${issueIds[0]}`, undefined],
  ];
  for (const [path, auth] of probes) {
    const [a, b] = await Promise.all([get(ours.port, path, auth), get(peer.port, path, auth)]);
    const what = `${path} (${auth === authorization ? 'the bench key' : auth ? 'an unknown key' : 'no key'})`;
    if (a.names !== b.names) throw new Error(`${label} does not answer ${what} with our server's headers: ${b.names} against ${a.names}`);
    if (a.status !== b.status || a.type !== b.type || !a.body.equals(b.body)) {
      throw new Error(`${label} does not answer ${what} like our server: ${b.status} ${b.type} ${b.body.length} bytes against ${a.status} ${a.type} ${a.body.length} bytes\n  ours: ${a.body.toString().slice(0, 300)}\n  peer: ${b.body.toString().slice(0, 300)}`);
    }
  }
}

/**
 * Reads each of `paths` once (`connections` at a time, keep-alive) and returns the ms it took: the pass that brings a
 * fresh server to its steady state before a round is measured — ours loads a record on its first read
 * (docs/storage.md#memory), the peers load every record before they listen. Throws on an answer that is not 200.
 */
async function firstPass(port: number, paths: string[], authorization: string, connections: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const t0 = performance.now();
  let next = 0;
  const one = (path: string) => new Promise<void>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent, headers: { authorization } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`first pass: ${path} ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
  const worker = async (): Promise<void> => { while (next < paths.length) await one(paths[next++]); };
  try { await Promise.all(Array.from({ length: connections }, worker)); } finally { agent.destroy(); }
  return performance.now() - t0;
}

/**
 * The rounds: every target once per round, the order rotated each round. With `--fresh on`
 * each target runs in a new process every round, started the same way for all (spawned by
 * this process once it is pinned, then pinned itself): one Node process may run up to ~1.7×
 * faster or slower than the next one started the same way, for its whole life — the fastify
 * peer's first process, started with the others before the rounds, measured ~23,000 req/s
 * round after round in every run, and each one started again ~40,000 (bench/README.md) — so
 * the median over the rounds is a median over process starts too. `renew` stops a target and
 * starts it again.
 */
async function rounds(c: Ctx, k: ReadsKit, targets: Target[], group: GroupSpec, tag: string, renew: (t: Target) => Promise<void>, client?: 'http' | 'raw', warm?: (t: Target) => Promise<void>): Promise<Record<string, Run[]>> {
  const got: Record<string, Run[]> = {};
  for (let r = 0; r < k.opts.rounds; r++) {
    for (let i = 0; i < targets.length; i++) {
      const t = targets[(i + r) % targets.length];
      if (k.opts.fresh) await renew(t);
      if (warm && (k.opts.fresh || r === 0)) await warm(t);
      const { key, p } = t;
      const runs = await k.abRun(c.load, p, [group], group.name, client ? { client } : undefined);
      (got[key] ??= []).push(runs[group.name]);
      k.detail(runLine(`[${tag}] round ${r + 1} ${key}`, runs[group.name]));
    }
  }
  return got;
}

/** What {@link atOnce} measured for one pair, per round: each side's req/s and CPU share, and their ratio. */
interface AtOnce { a: number[]; b: number[]; cpuA: number[]; cpuB: number[]; ratios: number[] }

/**
 * The access log's cost measured at once (bench/README.md "The log's cost, measured at once"):
 * each pair `[a, b]` runs in the same window, both servers pinned to the same CPU (CPU 0) and
 * each driven by its own load generator (raw node:net client; `second` and the context's,
 * swapped every round). The scheduler shares a CPU equally between two busy processes, so the
 * ratio of their throughputs is the inverse ratio of their CPU per request — what the
 * difference costs a server that has the core to itself — and both see the same machine in the
 * same seconds. Run one after the other, a server's throughput moves by ±10 % from one 5 s
 * window to the next on this machine, twice the 5 % to be seen. With `--fresh on` each round
 * starts both servers again (a process's speed varies for its whole life); the warm-up is at
 * least 3 s (a fresh server loads records on first use).
 */
async function atOnce(c: Ctx, k: ReadsKit, second: LoadClient, pairs: Array<[Target, Target]>, group: GroupSpec, renew: (t: Target) => Promise<void>): Promise<AtOnce[]> {
  const out: AtOnce[] = pairs.map(() => ({ a: [], b: [], cpuA: [], cpuB: [], ratios: [] }));
  const warmupMs = Math.max(3000, k.opts.warmup * 1000);
  for (let r = 0; r < k.opts.logRounds; r++) {
    for (let i = 0; i < pairs.length; i++) {
      const [a, b] = pairs[(i + r) % pairs.length];
      const got = out[(i + r) % pairs.length];
      if (k.opts.fresh) { await renew(a); await renew(b); }
      const [loadA, loadB] = r % 2 === 0 ? [c.load, second] : [second, c.load];
      const job = (p: Proc): Job => ({ port: p.port, client: 'raw', warmupMs, durationMs: k.opts.seconds * 1000, groups: [group] });
      const cpu0 = [NaN, NaN];
      let t0 = NaN;
      let started = 0;
      // Both windows open together: the CPU is read when the second one starts measuring.
      const onMeasuring = (): void => { if (++started === 2) { cpu0[0] = a.p.cpuSeconds(); cpu0[1] = b.p.cpuSeconds(); t0 = performance.now(); } };
      const [ra, rb] = await Promise.all([loadA.run(job(a.p), onMeasuring), loadB.run(job(b.p), onMeasuring)]);
      const seconds = (performance.now() - t0) / 1000;
      const ga = ra.groups[0];
      const gb = rb.groups[0];
      if (ga.errors || gb.errors) throw new Error(`the log's cost at once: errors (${a.key} ${ga.errors}, ${b.key} ${gb.errors}); first: ${ga.firstError ?? gb.firstError}`);
      const fifo = a.p.fifoFailed ?? b.p.fifoFailed;
      if (fifo !== undefined) throw new Error(`the log's cost at once: a server's FIFO was not read to the end (${fifo})`);
      const cpuA = (a.p.cpuSeconds() - cpu0[0]) / seconds;
      const cpuB = (b.p.cpuSeconds() - cpu0[1]) / seconds;
      got.a.push(ga.rps); got.b.push(gb.rps); got.cpuA.push(cpuA); got.cpuB.push(cpuB); got.ratios.push(ga.rps / gb.rps);
      k.detail(`    [log cost at once] round ${r + 1} ${a.key} ${int(ga.rps)} req/s (cpu ${pct(cpuA)}) beside ${b.key} ${int(gb.rps)} req/s (cpu ${pct(cpuB)}): ${ratio(ga.rps / gb.rps)}`);
    }
  }
  return out;
}

const figure = (s: ReturnType<typeof summarize>, p: Proc) =>
  `${int(s.rps)} req/s, p50 ${ms(s.p50)}, p99 ${ms(s.p99)}; peak RSS ${mb(p.memory().hwm)}; cpu server ${pct(s.serverCpu)} / client ${pct(s.clientCpu)}`;

/** "1.21× **met**" for ours / that peer against a target like "≥ 1.15×". */
function against(got: Record<string, Run[]>, mine: string, theirs: string, target?: string): string {
  const x = paired(got[mine], got[theirs]);
  const min = target ? Number(/[\d.]+/.exec(target)![0]) : undefined;
  return `${ratio(x)}${spreadNote(got[mine], got[theirs])}${min === undefined ? '' : ` ${verdict(x >= min)}`}`;
}

export async function reads(c: Ctx, k: ReadsKit): Promise<void> {
  log('\n## Reads');
  const { opts, rows } = k;
  const auth = c.auth.authorization;
  const started: Proc[] = [];
  // Pinned once listening: every thread it has by then (taskset -a), and the threads it makes
  // later inherit the main thread's CPU.
  const ready = async (p: Proc): Promise<Proc> => { await p.ready(); if (k.pin.on) pin(p.pid, k.pin.server); return p; };
  const spawned = (p: Proc): Proc => { started.push(p); return p; };
  try {
    const oursDir = k.copyDir(c.seedDir, join(c.tmp, 'reads'));
    const ours: Target = { key: OURS, p: await ready(spawned(k.startServer(OURS, oursDir))), start: () => k.startServer(OURS, oursDir) };
    const renew = async (t: Target): Promise<void> => { await t.p.stop(); t.p = await ready(spawned(t.start())); };
    // The peers serve our server's own answers: every issue as the API shows it, and the list page.
    const issues = await allIssues(ours.p.port, auth);
    const page = await get(ours.p.port, LIST, auth);
    if (page.status !== 200) throw new Error(`the list page: ${page.status} ${page.body.toString()}`);
    const sizes = Object.values(issues).map((i) => Buffer.byteLength(JSON.stringify({ issue: i })));
    const avg = sizes.reduce((a, b) => a + b, 0) / sizes.length;
    log(`  ${sizes.length} issues, answer ${Math.round(avg)} bytes on average; list page ${page.body.length} bytes`);
    const dataFile = join(c.tmp, 'peer-data.json');
    // The bench key was made with scopes `*` (bench/seed.ts makeBase).
    fs.writeFileSync(dataFile, JSON.stringify({ key: c.key, workspaceId: c.workspaceId, scopes: ['*'], issues, conversationsPage: JSON.parse(page.body.toString('utf8')) }));

    const peers: Target[] = [];
    const peer = (key: string, script: string, env: Record<string, string>): Target => {
      const start = () => k.spawnPeer(key, script, env);
      return { key, p: spawned(start()), start };
    };
    if (k.peer.ok) peers.push(peer(FASTIFY, 'fastify-server.ts', { PEER_DATA: dataFile, PEER_DIR: k.peer.dir }));
    peers.push(peer(BARE, 'baseline.ts', { PEER_DATA: dataFile, BASELINE_MODE: 'stringify' }));
    peers.push(peer(CEILING, 'baseline.ts', { PEER_DATA: dataFile, BASELINE_MODE: 'buffer' }));
    // Ours without the access log, when the run's level writes it: the log's own cost, and
    // what compares with fastify's logger left off.
    const logged = opts.logLevel === 'info' || opts.logLevel === 'debug';
    const ourServer = (key: string, dir: string, env?: Record<string, string>, stdout?: { file: string } | { fifo: string }): Target => {
      const start = () => k.startServer(key, dir, env, stdout);
      return { key, p: spawned(start()), start };
    };
    const nolog = logged && opts.only.has('reads') ? ourServer(OURS_NOLOG, k.copyDir(c.seedDir, join(c.tmp, 'reads-nolog')), { LOG_LEVEL: 'warn' }) : undefined;
    // And with the access log written to a file on the data's disk (`node dist/server.js >>
    // server.log`) rather than to this process's pipe: the log's cost wherever it is written.
    const logFile = join(c.tmp, 'reads-filelog.log');
    const filelog = nolog ? ourServer(OURS_FILELOG, k.copyDir(c.seedDir, join(c.tmp, 'reads-filelog')), {}, { file: logFile }) : undefined;
    const otherDir = k.against ? k.copyDir(c.seedDir, join(c.tmp, 'reads-against')) : '';
    const other: Target | undefined = k.against ? { key: OURS_AGAINST, p: spawned(k.against.start(OURS_AGAINST, otherDir)), start: () => k.against!.start(OURS_AGAINST, otherDir) } : undefined;
    for (const t of [...peers, nolog, filelog, other]) if (t) await ready(t.p);
    const otherTarget: Target[] = other ? [other] : [];
    const otherRow = (got: Record<string, Run[]>): void => {
      if (other) rows.push({ scenario: `↳ ours, the other build (--against ${k.against!.label})`, figure: figure(summarize(got[OURS_AGAINST]), other.p), target: '(new/old)', status: `${against(got, OURS, OURS_AGAINST)} of it` });
    };
    for (const t of peers) await sameAnswers(ours.p, t.p, t.key, c.issueIds, auth);
    log(`  same answers: ${peers.map((t) => t.key).join(', ')} answer three issues, the list page, an unknown key and no key with our server's status, Content-Type, header names and bytes`);
    // This process (the orchestrator, which also reads every server's access log off its
    // pipe) goes with the load generator: on CPU 0 it would take time from the server measured,
    // and only from servers that log.
    if (k.pin.on) { pin(c.load.pid, k.pin.load); pin(process.pid, k.pin.load); }

    const issuePaths = c.issueIds.map((id) => `/api/v1/issues/${id}`);
    const readGroup = (name: string, paths: string[]): GroupSpec => ({ name, connections: opts.connections, request: { method: 'GET', paths, headers: c.auth } });
    const proc = (key: string) => peers.find((t) => t.key === key)!.p;
    const fastifyLabel = k.peer.ok ? `fastify ${k.peer.version}` : 'fastify 5';
    const fastifyMissing = (target: string) => { if (!k.peer.ok) rows.push({ scenario: `↳ ${k.peer.line}`, figure: '—', target, status: 'not measured' }); };

    if (opts.only.has('reads')) {
      for (const client of opts.readClients) {
        const via = client === 'raw' ? 'raw node:net client' : 'node:http client';
        log(`  GET /api/v1/issues/{id}, random over ${issuePaths.length} ids, ${opts.connections} connections, ${via}`);
        const targets: Target[] = [ours, ...otherTarget, ...(nolog ? [nolog] : []), ...(filelog ? [filelog] : []), ...peers];
        // Each (fresh) server reads every issue once before its round: the rounds measure the steady state, the pass
        // what a fresh process pays on first reads (bench/README.md "Reads").
        const passes: Record<string, number[]> = {};
        const warm = async (t: Target): Promise<void> => {
          (passes[t.key] ??= []).push(await firstPass(t.p.port, issuePaths, auth, opts.connections));
        };
        const got = await rounds(c, k, targets, readGroup('read', issuePaths), `GET issue, ${client}`, renew, client, warm);
        const s = summarize(got[OURS]);
        rows.push({ scenario: `GET /api/v1/issues/{id} (random over ${int(issuePaths.length)} issues, ${Math.round(avg)}-byte answer, ${opts.connections} conns, ${via}): ours, LOG_LEVEL=${opts.logLevel}`,
          figure: figure(s, ours.p), target: `ours/fastify ${TARGETS.fastify}, ours/bare ${TARGETS.bare}`, status: 'ours / each peer below:' });
        otherRow(got);
        if (nolog) rows.push({ scenario: '↳ ours without the access log (LOG_LEVEL=warn)', figure: `${figure(summarize(got[OURS_NOLOG]), nolog.p)}${k.peer.ok ? `; ${against(got, OURS_NOLOG, FASTIFY)} of fastify (both without a log)` : ''}`, target: '(the log\'s cost)', status: `${against(got, OURS, OURS_NOLOG)} of it` });
        if (filelog && nolog) {
          const bytes = fs.statSync(logFile).size;
          rows.push({ scenario: '↳ ours with the access log written to a file (standard output appended to a file on the data\'s disk, not a pipe)', figure: `${figure(summarize(got[OURS_FILELOG]), filelog.p)}; the file ${int(bytes / 1048576)} MiB so far`, target: '(the log\'s cost: ≥ 0.95× of no log)', status: `${against(got, OURS_FILELOG, OURS_NOLOG, '≥ 0.95×')} of no log` });
        }
        if (k.peer.ok) rows.push({ scenario: `↳ ${fastifyLabel}, same work (key check, bucket, usage, request id in onRequest; reply.send of the object: JSON.stringify), logger off`, figure: figure(summarize(got[FASTIFY]), proc(FASTIFY)), target: TARGETS.fastify, status: against(got, OURS, FASTIFY, TARGETS.fastify) });
        else fastifyMissing(TARGETS.fastify);
        rows.push({ scenario: '↳ bare node:http, same key check and bookkeeping, JSON.stringify per request', figure: figure(summarize(got[BARE]), proc(BARE)), target: TARGETS.bare, status: against(got, OURS, BARE, TARGETS.bare) });
        rows.push({ scenario: '↳ bare node:http, same key check and bookkeeping, ready Buffer (the ceiling)', figure: `${figure(summarize(got[CEILING]), proc(CEILING))}; ${against(got, CEILING, BARE)} of bare JSON.stringify`, target: 'ceiling', status: against(got, OURS, CEILING) });
        rows.push({ scenario: `↳ before each round, a pass reading every issue once (${opts.connections} conns, node:http client): a fresh process's first reads`,
          figure: targets.map((t) => `${t.key} ${ms(median(passes[t.key]))}`).join(', '), target: 'printed', status: '—' });
        const b = summarize(got[BARE]);
        if (b.clientCpu > 0.9) k.notes.push(`With the ${via}, the load generator used ${pct(b.clientCpu)} of a core against the bare JSON.stringify server: the generator, not the server, is the limit there, so the ratios to it are compressed towards 1${k.pin.on ? ' (the generator has CPU 1 to itself, the servers CPU 0)' : ' (on 2 cores the generator and the server share the machine)'}.`);
      }
    }

    if (opts.only.has('reads') && nolog && filelog) {
      if (!k.pin.on) rows.push({ scenario: '↳ the access log\'s cost, measured at once', figure: '—', target: '≥ 0.95× of no log', status: 'not measured (needs pinning: two servers on CPU 0)' });
      else {
        // Two more of ours for these pairs only: logging to a FIFO, and a second one without the log.
        const fifolog = ourServer(OURS_FIFOLOG, k.copyDir(c.seedDir, join(c.tmp, 'reads-fifolog')), {}, { fifo: join(c.tmp, 'reads-fifolog.fifo') });
        const nolog2 = ourServer(OURS_NOLOG2, k.copyDir(c.seedDir, join(c.tmp, 'reads-nolog2')), { LOG_LEVEL: 'warn' });
        await ready(fifolog.p);
        await ready(nolog2.p);
        const second = k.newLoadClient();
        try {
          pin(second.pid, k.pin.load);
          const pairs: Array<[Target, Target, string, string]> = [
            [ours, nolog, 'the log written to a Unix socket pair (Node\'s `stdio: \'pipe\'`, as in the rounds above; this process reads it)', '≥ 0.95× of no log'],
            [fifolog, nolog, 'the log written to a pipe (a FIFO this process reads, as when a shell pipes `node dist/server.js` into another program)', '≥ 0.95× of no log'],
            [filelog, nolog, 'the log written to a file on the data\'s disk', '≥ 0.95× of no log'],
            [nolog2, nolog, 'neither logs: a second server without the log (the method\'s own spread)', '(≈ 1.00×)'],
            // With --against: the other build beside ours, both logging to their socket pairs — a
            // change to the log's cost measured old/new in the same windows.
            ...(other ? [[ours, other, `ours beside the other build (--against ${k.against!.label}), both logging to their socket pairs (new/old)`, '(new/old)'] as [Target, Target, string, string]] : []),
          ];
          const got = await atOnce(c, k, second, pairs.map(([a, b]) => [a, b]), readGroup('read', issuePaths), renew);
          pairs.forEach(([, , what, target], i) => {
            const g = got[i];
            const x = median(g.ratios);
            const min = target.startsWith('≥') ? 0.95 : undefined;
            const of = target === '(new/old)' ? 'of the other build' : 'of no log';
            rows.push({ scenario: `${i === 0 ? `↳ **the access log's cost, measured at once** (bench/README.md "The log's cost, measured at once"): ours beside ours without the log, both on CPU 0 in the same ${opts.seconds} s windows, each driven by its own raw node:net load generator on CPU 1${opts.fresh ? ', a new pair of processes each round' : ''}; ` : '↳ same, '}${what}`,
              figure: `${int(median(g.a))} against ${int(median(g.b))} req/s (medians); CPU ${pct(median(g.cpuA))} against ${pct(median(g.cpuB))} of a core; CPU a request ${median(g.cpuA.map((c, r) => (c / g.a[r]) * 1e6)).toFixed(1)} against ${median(g.cpuB.map((c, r) => (c / g.b[r]) * 1e6)).toFixed(1)} µs`,
              target, status: `${ratio(x)} ${of} (rounds ${ratio(Math.min(...g.ratios))}–${ratio(Math.max(...g.ratios))})${min === undefined ? '' : ` ${verdict(x >= min)}`}` });
          });
        } finally {
          second.close();
          await Promise.all([fifolog.p.stop(), nolog2.p.stop()]);
        }
      }
    }

    // With each client, as GET issue: a 13 KB page costs node:http's client enough that it, not
    // the server, is the limit with that client (its ratios are then compressed towards 1).
    if (opts.only.has('list')) for (const client of opts.readClients) {
      const via = client === 'raw' ? 'raw node:net client' : 'node:http client';
      log(`  GET ${LIST}, ${opts.connections} connections, ${via}`);
      const targets: Target[] = [ours, ...otherTarget, ...peers];
      const got = await rounds(c, k, targets, readGroup('list', [LIST]), `list, ${client}`, renew, client);
      rows.push({ scenario: `GET ${LIST} (10,000 conversations, a third open; ${int(page.body.length)}-byte page, ${via}): ours, LOG_LEVEL=${opts.logLevel}`, figure: figure(summarize(got[OURS]), ours.p), target: '—', status: 'ours / each peer below:' });
      otherRow(got);
      if (k.peer.ok) rows.push({ scenario: `↳ ${fastifyLabel}, same page, same work`, figure: figure(summarize(got[FASTIFY]), proc(FASTIFY)), target: '—', status: against(got, OURS, FASTIFY) });
      else fastifyMissing('—');
      rows.push({ scenario: '↳ bare node:http, JSON.stringify of the same page', figure: figure(summarize(got[BARE]), proc(BARE)), target: '—', status: against(got, OURS, BARE) });
      rows.push({ scenario: '↳ bare node:http, the page as a ready Buffer (the ceiling)', figure: figure(summarize(got[CEILING]), proc(CEILING)), target: 'ceiling', status: against(got, OURS, CEILING) });
    }
  } finally {
    if (k.pin.on) { try { pin(c.load.pid, k.pin.all); } catch { /* the generator is gone */ } pin(process.pid, k.pin.all); }
    await Promise.all(started.map((p) => p.stop()));
  }
}
