/**
 * Real webhook receivers for test/webhooks-receivers.test.ts, each a child process: Python's
 * http.server, gunicorn with threads, and nginx proxying to the Python receiver
 * (./webhook_receiver.py prints one JSON line per request). `installed` says whether a tool is
 * there; tests skip loudly when it is not.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** One request as the receiver saw it. */
export interface Got { path: string; id: string; timestamp: string; signature: string; body: string; at: number }

export interface RealReceiver {
  /** Where to point endpoints (no trailing slash). */
  url: string;
  got: Got[];
  /** Resolves once `n` requests came; rejects after `timeoutMs` saying how many did. */
  waitFor(n: number, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

const HELPERS = import.meta.dirname;

/** Whether `tool` runs here (`tool --version`, or `-v` for nginx). */
export function installed(tool: string): boolean {
  const r = spawnSync(tool, [tool === 'nginx' ? '-v' : '--version'], { stdio: 'ignore' });
  return r.error === undefined && r.status === 0;
}

/** Prints a banner that cannot be missed: a real-receiver test is skipped because `tool` is missing. */
export function skipBanner(tool: string, why: string): void {
  const line = '!'.repeat(78);
  const text = `!!! SKIPPED: ${why}: ${tool} is not installed (apt-get install ${tool})`;
  process.stderr.write(`\n${line}\n${text}\n${line}\n\n`);
}

/** Records the JSON lines of `child`'s stdout; `onPort` gets a `{"port":…}` line. */
function receiverOf(child: ChildProcess, onPort?: (port: number) => void): Omit<RealReceiver, 'url'> {
  const got: Got[] = [];
  const waiters: Array<() => void> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const v = JSON.parse(line) as Got | { port: number };
    if ('port' in v) { onPort?.(v.port); return; }
    got.push(v);
    for (const w of waiters.splice(0)) w();
  });
  return {
    got,
    waitFor(n, timeoutMs) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the receiver got ${got.length} requests, not ${n}`)),
          timeoutMs);
        const check = (): void => {
          if (got.length < n) { waiters.push(check); return; }
          clearTimeout(timer);
          resolve();
        };
        check();
      });
    },
    close: () => stop(child),
  };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((ok) => { child.once('exit', () => ok()); child.kill('SIGTERM'); });
}

/** Resolves with the first match of `re` in `child`'s stderr, or rejects after `ms` with what it said. */
function fromStderr(child: ChildProcess, re: RegExp, ms: number): Promise<RegExpExecArray> {
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${re} in:\n${err}`)), ms);
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = re.exec(err);
      if (m) { clearTimeout(timer); resolve(m); }
    });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}:\n${err}`)); });
  });
}

/** Python's http.server (HTTP/1.0: a connection per request), on a free port. */
export async function startPythonReceiver(): Promise<RealReceiver> {
  const child = spawn('python3', [join(HELPERS, 'webhook_receiver.py')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let setPort!: (p: number) => void;
  const port = new Promise<number>((ok) => { setPort = ok; });
  const rx = receiverOf(child, setPort);
  const p = await Promise.race([port, fromStderr(child, /Traceback[\s\S]*\n\S[^\n]*\n/,
    10_000).then((m) => { throw new Error(m[0]); })]);
  return { ...rx, url: `http://127.0.0.1:${p}` };
}

/** gunicorn (one worker, `threads` threads: the gthread worker, keep-alive on), on a free port. */
export async function startGunicorn(threads = 4): Promise<RealReceiver> {
  const child = spawn('gunicorn', ['--chdir', HELPERS, '-b', '127.0.0.1:0', '-w', '1', '--threads', String(threads),
    'webhook_receiver:app'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PYTHONUNBUFFERED: '1' } });
  const rx = receiverOf(child);
  const m = await fromStderr(child, /Listening at: http:\/\/127\.0\.0\.1:(\d+)/, 15_000);
  await fromStderr(child, /Booting worker/, 15_000).catch(() => undefined);
  return { ...rx, url: `http://127.0.0.1:${m[1]}` };
}

/** A free loopback port (listened on once, then closed). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((ok) => s.close(ok));
  return port;
}

/** nginx proxying to a Python receiver (keep-alive between nginx and it is off, as nginx's default is). */
export async function startNginx(): Promise<RealReceiver> {
  const behind = await startPythonReceiver();
  const dir = mkdtempSync(join(tmpdir(), 'sw-nginx-'));
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d));
  const port = await freePort();
  const upstream = new URL(behind.url);
  const asRoot = process.getuid?.() === 0 ? 'user root;\n' : '';
  writeFileSync(join(dir, 'nginx.conf'), `${asRoot}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    location / { proxy_pass http://127.0.0.1:${upstream.port}; }
  }
}
`);
  const child = spawn('nginx', ['-e', 'stderr', '-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore',
    'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  // Ready once it accepts connections (tried again as each try fails, for at most 10 s).
  const deadline = Date.now() + 10_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
      c.on('error', () => resolve(false));
    });
    if (ok) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      await behind.close();
      throw new Error(`nginx did not start:\n${err}`);
    }
    await new Promise((r) => setImmediate(r));
  }
  return {
    url: `http://127.0.0.1:${port}`, got: behind.got, waitFor: behind.waitFor,
    async close() { await stop(child); await behind.close(); rmSync(dir, { recursive: true, force: true }); },
  };
}
