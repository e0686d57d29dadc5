/**
 * The load generator: a child process (forked by bench/run.ts, so it never shares a CPU
 * queue or an event loop with the server it measures) that drives closed-loop HTTP/1.1
 * load over `node:http` keep-alive agents and reports throughput and latency over IPC.
 *
 * One job = several groups run concurrently for the same warm-up and measurement window
 * (e.g. readers + one ingesting connection + one /healthz prober). Each group has its own
 * agent with `connections` sockets; each socket is one closed-loop "user": send, wait for
 * the whole answer, send again. Bounded: only 127.0.0.1, at most 120 s and
 * `maxRequests` requests per group.
 *
 * `client: 'raw'` replaces the agent by a minimal HTTP/1.1 client on `node:net` (requests
 * pre-built as bytes, answers framed by Content-Length): several times cheaper per request
 * than `node:http`'s client, for when the generator, not the server, would saturate a core.
 */
import * as http from 'node:http';
import * as net from 'node:net';

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PATCH';
  /** One path, or one of these chosen at random per request. */
  paths: string[];
  headers?: Record<string, string>;
  /**
   * `none`; `static` (the same `body` every time); `patchSubject` (a new subject every time,
   * so every PATCH really changes the record); `message` (a new user/agent message body).
   */
  body?: 'none' | 'static' | 'patchSubject' | 'message';
  staticBody?: string;
  /** Record the value of this dotted JSON path of each answer (e.g. `source.status`). */
  capture?: string;
}

export interface GroupSpec {
  name: string;
  connections: number;
  request: RequestSpec;
  /** Stop this group after this many requests (default 5,000,000). */
  maxRequests?: number;
  /** Only count requests after the first `skip` (e.g. a cold first ingestion). */
  skip?: number;
  /** The job ends as soon as every `primary` group is done (its `maxRequests` made). */
  primary?: boolean;
  /** Another port than the job's for this group (a server of its own, as the cells benchmark's direct runs). */
  port?: number;
}

export interface Job {
  port: number;
  host?: string;
  /** `http` (default): node:http keep-alive agents; `raw`: bench's own node:net client. */
  client?: 'http' | 'raw';
  warmupMs: number;
  durationMs: number;
  groups: GroupSpec[];
}

export interface GroupResult {
  name: string;
  requests: number;
  errors: number;
  statuses: Record<string, number>;
  captured: Record<string, number>;
  seconds: number;
  rps: number;
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number; min: number };
  /** Every latency (ms) of the window when the group made few requests (≤ 200), in order. */
  samples?: number[];
  bytesReceived: number;
  firstError?: string;
}

export interface JobResult {
  groups: GroupResult[];
  /** CPU time of this load-generator process over the window, as a share of one core. */
  clientCpu: number;
}

const MAX_DURATION_MS = 120_000;
const DEFAULT_MAX_REQUESTS = 5_000_000;
const LOREM = 'Thanks for the quick reply. The export still fails for the March invoices; the dashboard shows a spinner and then a 502. We tried another browser and a different network with the same result.';

function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

function pick(obj: unknown, path: string): string {
  let v: unknown = obj;
  for (const k of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return String(v);
}

class Group {
  private readonly agent: http.Agent;
  private lat: Float64Array = new Float64Array(1 << 16);
  private n = 0;
  private errors = 0;
  private seq = 0;
  private started = 0;
  private bytes = 0;
  private firstError?: string;
  readonly statuses: Record<string, number> = {};
  readonly captured: Record<string, number> = {};
  private readonly staticBody?: Buffer;

  private readonly raw: RawConnection[] = [];
  private readonly rawHead: Map<string, Buffer> = new Map();

  constructor(readonly spec: GroupSpec, private readonly port: number, private readonly host: string, private readonly client: 'http' | 'raw') {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections, maxFreeSockets: spec.connections, scheduling: 'fifo' });
    if (spec.request.staticBody !== undefined) this.staticBody = Buffer.from(spec.request.staticBody, 'utf8');
  }

  /** The request's bytes for the raw client (head cached per path when there is no body). */
  private rawRequest(path: string, body: Buffer | undefined): Buffer {
    const r = this.spec.request;
    if (!body) {
      let b = this.rawHead.get(path);
      if (!b) {
        b = Buffer.from(`${r.method} ${path} HTTP/1.1\r\nHost: ${this.host}:${this.port}\r\n${Object.entries(r.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`, 'latin1');
        if (this.rawHead.size < 100_000) this.rawHead.set(path, b);
      }
      return b;
    }
    const head = Buffer.from(`${r.method} ${path} HTTP/1.1\r\nHost: ${this.host}:${this.port}\r\n${Object.entries(r.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join('')}content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`, 'latin1');
    return Buffer.concat([head, body]);
  }

  private body(): Buffer | undefined {
    const r = this.spec.request;
    switch (r.body ?? 'none') {
      case 'none': return undefined;
      case 'static': return this.staticBody;
      case 'patchSubject': return Buffer.from(JSON.stringify({ subject: `Export fails for March invoices (bench ${this.seq})` }));
      case 'message': return Buffer.from(JSON.stringify({ role: this.seq % 3 === 0 ? 'agent' : 'user', body: `${LOREM} (#${this.seq})` }));
    }
  }

  private once(conn: number): Promise<{ status: number; text?: string; err?: string }> {
    const r = this.spec.request;
    const path = r.paths.length === 1 ? r.paths[0] : r.paths[(Math.random() * r.paths.length) | 0];
    this.seq++;
    const body = this.body();
    if (this.client === 'raw') {
      const c = (this.raw[conn] ??= new RawConnection(this.host, this.port));
      return c.request(this.rawRequest(path, body), r.capture !== undefined).then((res) => { this.bytes += res.bytes; return res; });
    }
    const headers: Record<string, string | number> = { ...r.headers };
    if (body) { headers['content-type'] = 'application/json'; headers['content-length'] = body.length; }
    return new Promise((resolve) => {
      const req = http.request({ host: this.host, port: this.port, method: r.method, path, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => { this.bytes += c.length; if (r.capture) chunks.push(c); });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: r.capture ? Buffer.concat(chunks).toString('utf8') : undefined }));
        res.on('error', (e) => resolve({ status: 0, err: e.message }));
      });
      req.on('error', (e) => resolve({ status: 0, err: e.message }));
      req.end(body);
    });
  }

  /** One closed-loop user until `w.end`; records what completes inside [measureFrom, end]. */
  private async user(conn: number, measureFrom: number, w: { end: number }): Promise<void> {
    const max = this.spec.maxRequests ?? DEFAULT_MAX_REQUESTS;
    const skip = this.spec.skip ?? 0;
    while (performance.now() < w.end && this.started < max + skip) {
      this.started++;
      const t0 = performance.now();
      const res = await this.once(conn);
      const t1 = performance.now();
      if (t0 < measureFrom || t1 > w.end) continue;
      if (this.started <= skip) continue;
      const key = String(res.status);
      this.statuses[key] = (this.statuses[key] ?? 0) + 1;
      if (res.status < 200 || res.status >= 300) {
        this.errors++;
        this.firstError ??= res.err ?? `HTTP ${res.status}${res.text ? `: ${res.text.slice(0, 300)}` : ''}`;
      }
      if (this.spec.request.capture && res.text) {
        let v = 'unparsed';
        try { v = pick(JSON.parse(res.text), this.spec.request.capture); } catch { /* counted as unparsed */ }
        this.captured[v] = (this.captured[v] ?? 0) + 1;
      }
      if (this.n === this.lat.length) { const bigger = new Float64Array(this.lat.length * 2); bigger.set(this.lat); this.lat = bigger; }
      this.lat[this.n++] = t1 - t0;
    }
  }

  async run(measureFrom: number, w: { end: number }): Promise<void> {
    const users = [];
    for (let i = 0; i < this.spec.connections; i++) users.push(this.user(i, measureFrom, w));
    await Promise.all(users);
    this.agent.destroy();
    for (const c of this.raw) c?.close();
  }

  result(seconds: number): GroupResult {
    const raw = this.lat.slice(0, this.n);
    const sorted = raw.slice().sort();
    let sum = 0;
    for (let i = 0; i < sorted.length; i++) sum += sorted[i];
    return {
      name: this.spec.name, requests: this.n, errors: this.errors, statuses: this.statuses, captured: this.captured,
      seconds, rps: this.n / seconds, bytesReceived: this.bytes, firstError: this.firstError,
      latencyMs: {
        mean: sum / (this.n || 1), p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), p99: quantile(sorted, 0.99),
        max: sorted.length ? sorted[sorted.length - 1] : NaN, min: sorted.length ? sorted[0] : NaN,
      },
      samples: this.n <= 200 ? Array.from(raw) : undefined,
    };
  }
}

/**
 * One keep-alive HTTP/1.1 connection, one request at a time. Answers are framed by
 * Content-Length (what the server and the baselines send); a closed or failed socket fails
 * the request in flight and is replaced by the next request.
 */
class RawConnection {
  private sock: net.Socket | null = null;
  private chunks: Buffer[] = [];
  private have = 0;
  private headerEnd = -1;
  private need = -1;
  private status = 0;
  private keepText = false;
  private done: ((r: { status: number; text?: string; err?: string; bytes: number }) => void) | null = null;

  constructor(private readonly host: string, private readonly port: number) {}

  private connect(): net.Socket {
    const sock = net.connect({ host: this.host, port: this.port, noDelay: true });
    sock.on('data', (d: Buffer) => this.onData(d));
    const fail = (msg: string) => {
      if (this.sock === sock) this.sock = null;
      this.finish({ status: 0, err: msg, bytes: 0 });
    };
    sock.on('error', (e) => fail(e.message));
    sock.on('close', () => fail('connection closed'));
    return sock;
  }

  request(bytes: Buffer, keepText: boolean): Promise<{ status: number; text?: string; err?: string; bytes: number }> {
    this.sock ??= this.connect();
    this.chunks = [];
    this.have = 0;
    this.headerEnd = -1;
    this.need = -1;
    this.keepText = keepText;
    return new Promise((resolve) => { this.done = resolve; this.sock!.write(bytes); });
  }

  private onData(d: Buffer): void {
    if (!this.done) return;
    this.chunks.push(d);
    this.have += d.length;
    if (this.headerEnd < 0) {
      const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
      this.chunks = [all];
      const end = all.indexOf('\r\n\r\n');
      if (end < 0) return;
      this.headerEnd = end + 4;
      const head = all.toString('latin1', 0, end);
      this.status = Number(head.slice(9, 12));
      const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      this.need = this.headerEnd + (m ? Number(m[1]) : 0);
    }
    if (this.have >= this.need) {
      let text: string | undefined;
      if (this.keepText) { const all = Buffer.concat(this.chunks); text = all.toString('utf8', this.headerEnd, this.need); }
      this.finish({ status: this.status, text, bytes: this.have });
    }
  }

  private finish(r: { status: number; text?: string; err?: string; bytes: number }): void {
    const done = this.done;
    this.done = null;
    done?.(r);
  }

  close(): void { this.sock?.destroy(); this.sock = null; }
}

export async function analyzeJob(job: Job, onMeasuring?: () => void): Promise<JobResult> {
  const host = job.host ?? '127.0.0.1';
  if (host !== '127.0.0.1') throw new Error('the load generator only targets 127.0.0.1');
  if (job.warmupMs + job.durationMs > MAX_DURATION_MS) throw new Error(`a job is limited to ${MAX_DURATION_MS} ms`);
  const groups = job.groups.map((g) => new Group(g, g.port ?? job.port, host, job.client ?? 'http'));
  const t0 = performance.now();
  const measureFrom = t0 + job.warmupMs;
  const w = { end: measureFrom + job.durationMs };
  let cpu0 = process.cpuUsage();
  const measuring = setTimeout(() => { cpu0 = process.cpuUsage(); onMeasuring?.(); }, job.warmupMs);
  const primaries = groups.filter((g) => g.spec.primary);
  const runs = groups.map((g) => g.run(measureFrom, w));
  if (primaries.length) {
    Promise.all(groups.map((g, i) => (g.spec.primary ? runs[i] : null))).then(() => { w.end = Math.min(w.end, performance.now()); });
  }
  await Promise.all(runs);
  clearTimeout(measuring);
  const cpu = process.cpuUsage(cpu0);
  const seconds = (Math.min(performance.now(), w.end) - measureFrom) / 1000;
  return {
    groups: groups.map((g) => g.result(seconds)),
    clientCpu: (cpu.user + cpu.system) / 1e6 / Math.max(seconds, 1e-3),
  };
}

// As a forked child: run the jobs the parent sends, answer with their results.
if (process.send) {
  process.on('message', (msg: { id: number; job: Job }) => {
    analyzeJob(msg.job, () => process.send!({ id: msg.id, measuring: true }))
      .then((result) => process.send!({ id: msg.id, result }))
      .catch((e: Error) => process.send!({ id: msg.id, error: e.stack ?? e.message }));
  });
  process.on('disconnect', () => process.exit(0));
}
