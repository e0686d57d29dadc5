/**
 * What the repository ships for deployment (docs/deployment.md): the systemd unit passes `systemd-analyze verify`
 * with no warning; the container image builds and serves when a container engine that can pull the base image is
 * here (a banner says so when not); the start-up warns when HOST is not loopback and PUBLIC_URL is unset; the
 * README shows the commands this test runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDir } from './helpers/child.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const IMAGE = 'support-workspace';
/** The README's container commands, run as written (the port and volume names aside, see below). */
const BUILD = `docker build -t ${IMAGE} .`;
const RUN = `docker run -d --name support-workspace -p 8080:8080 -v sw-data:/data -e PUBLIC_URL=https://support.example.com ${
  IMAGE}`;

function banner(text: string): void {
  const line = '!'.repeat(78);
  process.stderr.write(`\n${line}\n!!! SKIPPED: ${text}\n${line}\n\n`);
}

const run = (cmd: string, args: string[], timeout = 600_000) =>
  spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', timeout });

test('the README shows the deployment commands this test runs', () => {
  for (const cmd of [BUILD, RUN, 'systemd-analyze verify deploy/support-workspace.service']) {
    assert.ok(README.includes(cmd), `README.md shows \`${cmd}\``);
  }
});

test('deploy/support-workspace.service passes systemd-analyze verify without a warning', (t) => {
  if (run('systemd-analyze', ['--version']).status !== 0) {
    banner('systemd-analyze is not installed: the systemd unit was NOT verified (apt-get install systemd)');
    t.skip('systemd-analyze is not installed');
    return;
  }
  let unit = readFileSync(join(ROOT, 'deploy/support-workspace.service'), 'utf8');
  // The unit names /usr/bin/node (Debian's); where node is elsewhere, verify with this machine's.
  unit = unit.replace('ExecStart=/usr/bin/node ', `ExecStart=${process.execPath} `);
  for (const hardening of ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'ReadWritePaths=/var/lib/support-workspace',
    'DynamicUser=yes', 'StateDirectoryMode=0700']) assert.ok(unit.includes(`\n${hardening}\n`), hardening);
  const file = join(tempDir(), 'support-workspace.service');
  writeFileSync(file, unit);
  const r = run('systemd-analyze', ['verify', file]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr.trim(), '', 'no warning');
});

/** The first container engine here that answers and can pull the image's base, or why there is none. */
function engine(): { cmd: string } | { none: string } {
  const base = /^FROM (\S+)/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))![1];
  const why: string[] = [];
  for (const cmd of ['docker', 'podman']) {
    if (run(cmd, ['info'], 30_000).status !== 0) { why.push(`${cmd}: no engine answers`); continue; }
    const pull = run(cmd, ['pull', base]);
    if (pull.status === 0) return { cmd };
    why.push(`${cmd}: cannot pull ${base} (${pull.stderr.trim().split('\n').at(-1)})`);
  }
  return { none: why.join('; ') };
}

test('the container image builds, runs as a non-root user on /data, and passes its health check', async (t) => {
  const e = engine();
  if ('none' in e) {
    banner(`no container engine can build the image here: ${e.none}. The Dockerfile was NOT built.`);
    t.skip(e.none);
    return;
  }
  const [, ...buildArgs] = BUILD.split(' ');
  const b = run(e.cmd, buildArgs);
  assert.equal(b.status, 0, b.stderr);
  // As the README runs it, on a port and a volume of the test's own.
  const runArgs = RUN.split(' ').slice(1).map((a) => a === '8080:8080' ? '127.0.0.1::8080'
    : a === 'sw-data:/data' ? 'sw-test-data:/data' : a === 'support-workspace' ? 'sw-test' : a);
  runArgs[runArgs.length - 1] = IMAGE;
  const c = run(e.cmd, runArgs);
  assert.equal(c.status, 0, c.stderr);
  try {
    const user = run(e.cmd, ['exec', 'sw-test', 'id', '-u']).stdout.trim();
    assert.notEqual(user, '0', 'not root');
    const port = /:(\d+)\s*$/.exec(run(e.cmd, ['port', 'sw-test', '8080']).stdout.trim())![1];
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0);
      if (status !== 200) await new Promise((r) => setTimeout(r, 100)); // waits for the container's start
    }
    assert.equal(status, 200);
    const stop = run(e.cmd, ['stop', '-t', '30', 'sw-test']);
    assert.equal(stop.status, 0, stop.stderr);
    assert.equal(run(e.cmd, ['inspect', '-f', '{{.State.ExitCode}}', 'sw-test']).stdout.trim(), '0');
  } finally {
    run(e.cmd, ['rm', '-f', 'sw-test']);
    run(e.cmd, ['volume', 'rm', '-f', 'sw-test-data']);
  }
});

test('HOST=0.0.0.0 without PUBLIC_URL: the start-up warns; with PUBLIC_URL, or on loopback, it does not', async () => {
  const cases = [
    { env: { HOST: '0.0.0.0' }, warns: true },
    { env: { HOST: '0.0.0.0', PUBLIC_URL: 'https://support.example.com' }, warns: false },
    { env: { HOST: '127.0.0.1' }, warns: false },
  ];
  for (const c of cases) {
    const srv = await startServer({ env: c.env });
    try {
      const warn = srv.logLines().find((l) => l.msg === 'PUBLIC_URL is not set');
      if (!c.warns) { assert.equal(warn, undefined, JSON.stringify(c.env)); continue; }
      assert.deepEqual({ ...warn, time: undefined, links: undefined }, { time: undefined, level: 'warn',
        msg: 'PUBLIC_URL is not set', host: '0.0.0.0', links: undefined,
        fix: 'set PUBLIC_URL to the address people open, such as https://support.example.com' });
      assert.equal(warn!.links, `http://0.0.0.0:${srv.port}`);
    } finally { await srv.stop(); }
  }
});
