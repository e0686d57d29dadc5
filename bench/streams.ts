/**
 * `npm run bench -- --only streams` (docs/api.md#event-stream): one server (SYNC=always) with Server-Sent Events
 * streams opened by a forked client (bench/streams-client.ts): a message fanned out to 1,000 streams of one
 * workspace (p99 from the write's answer to the last stream's receipt), 10,000 open streams (the server's RSS), and
 * durable writes (`POST` a message) with 10,000 idle streams open against none, rounds alternating on one server.
 * Targets (DESIGN §11): fan-out p99 ≤ 1 s; writes ≥ 0.9× with the streams open.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './seed.js';
import { int, ms, mb, ratio, verdict, log, paired, summarize, runLine, type Run } from './figures.js';
import type { Ctx } from './run.js';
import type { WritesKit } from './writes.js';

const FANOUT_STREAMS = 1000;
const IDLE_STREAMS = 10_000;
const FANOUT_MESSAGES = 100;
const now = () => performance.timeOrigin + performance.now();

/** The stream client: one request over IPC at a time, answered in order. */
class StreamClient {
  private readonly child: ChildProcess = fork(join(ROOT, 'bench', 'streams-client.ts'), [], {
    cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  private queue: Array<(m: unknown) => void> = [];
  constructor() { this.child.on('message', (m) => this.queue.shift()?.(m)); }
  ask<T>(m: unknown): Promise<T> {
    return new Promise((resolve) => { this.queue.push(resolve as (m: unknown) => void); this.child.send(m as never); });
  }
  kill(): void { this.child.kill(); }
}

/** Runs the scenarios; rows and details go to `kit`. */
export async function streams(c: Ctx, kit: WritesKit): Promise<void> {
  log('\n## Streams (SYNC=always)');
  const env = { MAX_CONNECTIONS: '20000', MAX_CONNECTIONS_PER_ADDRESS: '20000', SSE_MAX_STREAMS: String(IDLE_STREAMS) };
  const server = await kit.startServer('streams', kit.copyDir(c.seedDir, join(c.tmp, 'streams')), 'always', false, env)
    .ready();
  const base = `http://127.0.0.1:${server.port}`;
  const client = new StreamClient();
  const open = async (n: number, type: string) => {
    const r = await client.ask<{ opened: number; failed: number }>({ op: 'open', port: server.port, n, headers: c.auth,
      type });
    if (r.failed) throw new Error(`${r.failed} of ${n} streams could not be opened`);
  };
  try {
    // Fan-out: one message at a time, each timed from its answer to its receipt on the last of 1,000 streams.
    await open(FANOUT_STREAMS, 'message.created');
    const lags: number[] = [];
    for (let i = 0; i < FANOUT_MESSAGES; i++) {
      const conv = c.convIds[i % c.convIds.length];
      const res = await fetch(`${base}/api/v1/conversations/${conv}/messages`, {
        method: 'POST', headers: { ...c.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ role: 'user', body: `fan-out ${i}` }),
      });
      const answered = now();
      if (res.status !== 201) throw new Error(`POST message: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      const list = await (await fetch(`${base}/api/v1/events?type=message.created&limit=1`, { headers: c.auth })).json() as
        { events: Array<{ id: string }> };
      const id = list.events[0].id;
      const times: number[] = [];
      for (let tries = 0; times.length < FANOUT_STREAMS && tries < 500; tries++) {
        times.push(...(await client.ask<{ times: number[] }>({ op: 'receipts', id })).times);
        if (times.length < FANOUT_STREAMS) await new Promise((r) => setTimeout(r, 10));
      }
      if (times.length < FANOUT_STREAMS) throw new Error(`event ${id} reached ${times.length} of ${FANOUT_STREAMS} streams`);
      lags.push(Math.max(0, Math.max(...times) - answered));
    }
    lags.sort((a, b) => a - b);
    const p = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))];
    kit.rows.push({
      scenario: `a message fanned out to ${int(FANOUT_STREAMS)} streams of one workspace: from the write's answer to `
        + `the last stream's receipt (${FANOUT_MESSAGES} messages, one at a time)`,
      figure: `p50 ${ms(p(0.5))}, p99 ${ms(p(0.99))}, max ${ms(lags[lags.length - 1])}`, target: 'p99 ≤ 1 s',
      status: verdict(p(0.99) <= 1000),
    });
    await client.ask({ op: 'close' });

    // Durable writes with 10,000 idle streams (a type nothing writes) against none, on the same server.
    const request = { method: 'POST' as const, paths: c.convIds.map((id) => `/api/v1/conversations/${id}/messages`),
      headers: c.auth, body: 'message' as const };
    const got: Record<'none' | 'open', Run[]> = { none: [], open: [] };
    let rssOpen = 0;
    const rssNone = server.memory().rss;
    for (let r = 0; r < kit.opts.rounds; r++) {
      for (const side of (r % 2 === 0 ? ['none', 'open'] : ['open', 'none']) as Array<'none' | 'open'>) {
        if (side === 'open') {
          await open(IDLE_STREAMS, 'source.deleted');
          rssOpen = Math.max(rssOpen, server.memory().rss);
        }
        const runs = await kit.abRun(c.load, server, [{ name: 'write', connections: kit.opts.connections, request }],
          'write');
        got[side].push(runs.write);
        kit.detail(runLine(`[streams] round ${r + 1} ${side === 'open' ? `${int(IDLE_STREAMS)} streams open` : 'none'}`,
          runs.write));
        if (side === 'open') await client.ask({ op: 'close' });
      }
    }
    const o = summarize(got.open);
    const n = summarize(got.none);
    const ab = paired(got.open, got.none);
    kit.rows.push({
      scenario: `${int(IDLE_STREAMS)} open streams on one server: its RSS`,
      figure: `${mb(rssOpen)} (${mb(rssNone)} before they opened; ${((rssOpen - rssNone) / IDLE_STREAMS / 1024)
        .toFixed(1)} KiB a stream)`, target: 'printed', status: '—',
    });
    kit.rows.push({
      scenario: `POST a message, ${kit.opts.connections} conns, SYNC=always, with ${int(IDLE_STREAMS)} idle streams open`,
      figure: `${int(o.rps)} writes/s, p50 ${ms(o.p50)}, p99 ${ms(o.p99)}`, target: '≥ 0.9× of none open',
      status: `${ratio(ab)} ${verdict(ab >= 0.9)}`,
    });
    kit.rows.push({ scenario: '↳ same, no stream open', figure: `${int(n.rps)} writes/s, p50 ${ms(n.p50)}, p99 ${ms(n.p99)}`,
      target: 'reference', status: '1.00×' });
  } finally {
    client.kill();
    await server.stop();
  }
}
