/**
 * Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: the
 * browser reads commands on fd 3 and writes answers and events on fd 4, each a JSON message
 * ended by a NUL byte), with nothing but node:child_process. One page per browser: navigate,
 * fill and submit forms, read the DOM, take screenshots. `findChromium()` says where the
 * browser is, or why there is none, so a test can skip with a clear reason.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { within as withinMs } from './poll.js';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** The Chromium executable (`CHROMIUM` overrides), or the reason none can be used. */
export function findChromium(): { path: string } | { reason: string } {
  const given = process.env.CHROMIUM;
  if (given) return existsSync(given) ? { path: given } : { reason: `CHROMIUM=${given} does not exist` };
  const found = CANDIDATES.find((p) => existsSync(p));
  return found ? { path: found } : { reason: `no Chromium at ${CANDIDATES.join(', ')} (install Debian's: apt-get install -y chromium; .ci/run does)` };
}

/**
 * `findChromium()` for a browser test's `skip` option, and when there is no browser, a banner
 * on stderr that no one reading the run can miss: the suite is skipped, not passed.
 */
export function browserOrLoudSkip(): { path: string } | { reason: string } {
  const found = findChromium();
  if ('reason' in found) {
    const line = '!'.repeat(78);
    process.stderr.write(`\n${line}\n!! BROWSER SUITE SKIPPED: ${found.reason}\n!! The settings area and public docs were NOT tested in a browser.\n${line}\n\n`);
  }
  return found;
}

/**
 * Where the browser tests save their screenshots, with a trailing slash: `test/artifacts/`
 * (git-ignored), or `docs/screenshots/` (the README's pictures) when UPDATE_SCREENSHOTS=1.
 */
export function screenshotDir(): string {
  const dir = fileURLToPath(new URL(process.env.UPDATE_SCREENSHOTS === '1' ? '../../docs/screenshots/' : '../artifacts/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  return dir;
}

interface Pending { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void; method: string }

export class Browser {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly waiters: Array<{ method: string; resolve: (params: Record<string, unknown>) => void }> = [];
  private buffer = '';
  private sessionId = '';
  private width = 1200;
  stderr = '';

  private constructor(private readonly proc: ChildProcess, private readonly dir: string) {
    const out = proc.stdio[4] as Readable;
    out.setEncoding('utf8');
    out.on('data', (chunk: string) => {
      this.buffer += chunk;
      let end: number;
      while ((end = this.buffer.indexOf('\0')) >= 0) {
        const text = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 1);
        this.receive(JSON.parse(text) as Record<string, unknown>);
      }
    });
    proc.stderr!.setEncoding('utf8').on('data', (d: string) => { this.stderr = (this.stderr + d).slice(-4000); });
    proc.once('exit', () => {
      for (const p of this.pending.values()) p.reject(new Error(`chromium exited during ${p.method}: ${this.stderr.slice(-500)}`));
      this.pending.clear();
    });
  }

  /** Starts headless Chromium at `path` with a fresh profile and opens one page of `width`×`height` CSS pixels. */
  static async launch(path: string, o: { width?: number; height?: number } = {}): Promise<Browser> {
    const dir = mkdtempSync(join(tmpdir(), 'sw-chromium-'));
    const proc = spawn(path, [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--disable-dev-shm-usage', '--remote-debugging-pipe', `--user-data-dir=${dir}`, 'about:blank',
    ], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
    const b = new Browser(proc, dir);
    try {
      const { targetId } = await b.send('Target.createTarget', { url: 'about:blank' }, false) as { targetId: string };
      const { sessionId } = await b.send('Target.attachToTarget', { targetId, flatten: true }, false) as { sessionId: string };
      b.sessionId = sessionId;
      b.width = o.width ?? 1200;
      await b.send('Page.enable');
      await b.send('Runtime.enable');
      await b.send('Emulation.setDeviceMetricsOverride', { width: o.width ?? 1200, height: o.height ?? 800, deviceScaleFactor: 1, mobile: false });
    } catch (e) {
      await b.close();
      throw e;
    }
    return b;
  }

  private receive(msg: Record<string, unknown>): void {
    if (typeof msg.id === 'number') {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(`${p.method}: ${JSON.stringify(msg.error)}`));
      else p.resolve((msg.result ?? {}) as Record<string, unknown>);
      return;
    }
    const i = this.waiters.findIndex((w) => w.method === msg.method);
    if (i >= 0) this.waiters.splice(i, 1)[0].resolve((msg.params ?? {}) as Record<string, unknown>);
  }

  /** Sends one protocol command (to the page's session unless `toPage` is false); resolves with its result. */
  send(method: string, params: Record<string, unknown> = {}, toPage = true, timeoutMs = 15_000): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    const msg = { id, method, params, ...(toPage ? { sessionId: this.sessionId } : {}) };
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => { this.pending.delete(id); reject(new Error(`${method} timed out; chromium stderr: ${this.stderr.slice(-500)}`)); }, timeoutMs);
      this.pending.set(id, { method, resolve: (v) => { clearTimeout(timer); resolve(v); }, reject: (e) => { clearTimeout(timer); reject(e); } });
      (this.proc.stdio[3] as Writable).write(JSON.stringify(msg) + '\0');
    });
  }

  /** Resolves on the next event `method` of the page. */
  private next(method: string, timeoutMs = 15_000): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const w = { method, resolve: (p: Record<string, unknown>) => { clearTimeout(timer); resolve(p); } };
      const timer = setTimeout(() => { this.waiters.splice(this.waiters.indexOf(w), 1); reject(new Error(`no ${method} within ${timeoutMs} ms`)); }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** Loads `url` and waits for its load event. */
  async goto(url: string): Promise<void> {
    const loaded = this.next('Page.loadEventFired');
    const r = await this.send('Page.navigate', { url }) as { errorText?: string };
    if (r.errorText) throw new Error(`navigating to ${url}: ${r.errorText}`);
    await loaded;
  }

  /** Evaluates `expression` in the page; returns its value (JSON-serializable). */
  async eval<T = unknown>(expression: string): Promise<T> {
    const r = await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }) as { result: { value?: unknown }; exceptionDetails?: { text: string; exception?: { description?: string } } };
    if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value as T;
  }

  /** Types `value` into the field matched by `selector` (as a person would set it; `input` event fired). */
  async fill(selector: string, value: string): Promise<void> {
    await this.eval(`(() => { const e = document.querySelector(${JSON.stringify(selector)}); if (!e) throw new Error('no ' + ${JSON.stringify(selector)}); e.focus(); e.value = ${JSON.stringify(value)}; e.dispatchEvent(new Event('input', { bubbles: true })); })()`);
  }

  /** Checks (or unchecks) the checkbox matched by `selector`. */
  async check(selector: string, on = true): Promise<void> {
    await this.eval(`(() => { const e = document.querySelector(${JSON.stringify(selector)}); if (!e) throw new Error('no ' + ${JSON.stringify(selector)}); e.checked = ${on}; })()`);
  }

  /** Clicks the element matched by `selector` and waits for the page it leads to. */
  async clickAndWait(selector: string): Promise<void> {
    const loaded = this.next('Page.loadEventFired');
    await this.eval(`(() => { const e = document.querySelector(${JSON.stringify(selector)}); if (!e) throw new Error('no ' + ${JSON.stringify(selector)}); e.click(); })()`);
    await loaded;
  }

  /** The page's URL, title and visible text. */
  async state(): Promise<{ url: string; title: string; text: string }> {
    return this.eval('({ url: location.href, title: document.title, text: document.body.innerText })');
  }

  /** Saves a PNG of the whole page to `file` (at most `maxHeight` CSS pixels of it, from the top). */
  async screenshot(file: string, maxHeight = Infinity): Promise<void> {
    const metrics = await this.send('Page.getLayoutMetrics') as { cssContentSize?: { width: number; height: number } };
    const h = Math.min(maxHeight, Math.ceil(metrics.cssContentSize?.height ?? 800));
    const r = await this.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true, clip: { x: 0, y: 0, width: this.width, height: Math.max(h, 400), scale: 1 } }) as { data: string };
    writeFileSync(file, Buffer.from(r.data, 'base64'));
  }

  /** Sets the page's viewport to `width`×`height` CSS pixels (a phone's, with `mobile`, below 800 px wide). */
  async resize(width: number, height = 800): Promise<void> {
    this.width = width;
    await this.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: width < 800 });
  }

  /** Whether the page fits its viewport's width: `document.documentElement.scrollWidth <= innerWidth`. */
  async fitsWidth(): Promise<{ fits: boolean; scrollWidth: number; innerWidth: number; widest: string }> {
    return this.eval(`(() => {
      const scrollWidth = document.documentElement.scrollWidth, innerWidth = window.innerWidth;
      let widest = '';
      if (scrollWidth > innerWidth) {
        for (const e of document.body.querySelectorAll('*')) {
          const r = e.getBoundingClientRect();
          if (r.right > innerWidth + 0.5) { widest = e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' right=' + Math.round(r.right); }
        }
      }
      return { fits: scrollWidth <= innerWidth, scrollWidth, innerWidth, widest };
    })()`);
  }

  /** Closes the browser and removes its profile. */
  async close(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r));
      this.send('Browser.close', {}, false, 3000).catch(() => {});
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A host site on its own loopback origin: `/` embeds `snippet` under a strict CSP allowing only `api`. */
export async function hostSite(snippet: string, api: string): Promise<{ origin: string; server: Server }> {
  const server = createServer((req, res) => {
    if (req.url !== '/') { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': `default-src 'none'; script-src ${api}; connect-src ${api}; style-src 'self'` });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title></head>
<body><h1>A shop</h1><p>Products and prices.</p>${snippet}</body></html>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** Polls `probe` in the page every 20 ms until it is truthy; the ms it took. @throws AssertionError after `limitMs` */
export function within(b: Browser, probe: string, limitMs: number, what: string): Promise<number> {
  return withinMs(limitMs, what, () => b.eval<boolean>(probe));
}

/** Activates the bootstrap owner with `password` from `ownerLink`, then signs in as owner@localhost. */
export async function signInOwner(b: Browser, ownerLink: string, password: string): Promise<void> {
  await b.goto(ownerLink);
  await b.fill('#password', password);
  await b.clickAndWait('button[type=submit]');
  await b.fill('#email', 'owner@localhost');
  await b.fill('#password', password);
  await b.clickAndWait('button[type=submit]');
}
