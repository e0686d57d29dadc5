/**
 * Instructions per webhook delivery attempt on the dispatcher's code path (node:http's agents,
 * docs/decisions.md#webhook-delivery-on-nodehttps-agent), counted by valgrind's
 * callgrind (bench/README.md, "Instruction counts"): the attempts are made by
 * bench/attempt-child.mjs under callgrind — plain `node`, the built modules — to
 * bench/receiver.ts in this process, 10 at once over keep-alive agents; instrumentation is on
 * for `--attempts` after `--warmup`, and the total is divided by them. Kernel time (the socket's
 * write and read) is not counted, nor the receiver.
 *
 *   node --import tsx bench/attempt-instructions.ts [--dist DIR] [--attempts N] [--warmup N]
 *     [--times K] [--sign]
 *
 * `--dist`: the build to count (default this checkout's dist/; build another with `npx tsc -p
 * tsconfig.build.json` in its worktree). `--sign`: each attempt signed as the dispatcher signs it
 * (HMAC-SHA256; under valgrind SHA runs without the CPU's SHA instructions, so signing counts far
 * more than it costs).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from './seed.js';
import { startReceiver } from './receiver.js';

const { values: a } = parseArgs({ options: {
  dist: { type: 'string' }, attempts: { type: 'string' }, warmup: { type: 'string' }, times: { type: 'string' }, sign: { type: 'boolean' },
} });
const dist = a.dist ?? join(ROOT, 'dist');
const attempts = Number(a.attempts ?? 5000);
const warmup = Number(a.warmup ?? 4000);
const times = Number(a.times ?? 2);

/** One count: instructions per attempt. */
async function once(): Promise<number> {
  const work = fs.mkdtempSync(join(os.tmpdir(), 'sw-attempts-'));
  const out = join(work, 'callgrind.out');
  const receiver = await startReceiver(() => null);
  try {
    // vgdb names its pipes after HOST (and USER): callgrind_control must see the same values.
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', USER: 'bench', LOGNAME: 'bench', DIST: dist, PORT: String(receiver.port), WARMUP: String(warmup), ATTEMPTS: String(attempts), SIGN: a.sign ? '1' : '0' };
    const child = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file', `--callgrind-out-file=${out}`, process.execPath, join(ROOT, 'bench', 'attempt-child.mjs')], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-4000); });
    const code = await new Promise<number | null>((ok, fail) => { child.once('exit', ok); child.once('error', fail); });
    if (code !== 0) throw new Error(`the attempts under valgrind failed (exit ${code}):\n${err}`);
    const total = Number(/^totals: (\d+)/m.exec(fs.readFileSync(out, 'utf8'))?.[1]);
    if (!(total > 0)) throw new Error(`no instructions counted (callgrind_control could not reach the process?)\n${err}`);
    return total / attempts;
  } finally {
    await receiver.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

const got: number[] = [];
for (let i = 0; i < times; i++) got.push(await once());
console.log(`delivery attempts (${dist}${a.sign ? ', signed' : ''}): ${got.map((g) => Math.round(g).toLocaleString('en-US')).join(', ')} instructions an attempt (${attempts.toLocaleString('en-US')} after ${warmup.toLocaleString('en-US')}, 10 at once; ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version})`);
