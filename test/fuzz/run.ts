/**
 * `npm run fuzz -- --seed N --iterations N [--route substring] [--timeout ms] [--max-failures N] [--light] [--mutations]`
 *
 * Runs the seeded fuzzer (test/fuzz/) against a fresh server and prints a summary:
 * requests and statuses per route, failures with their reproducers, and the seed. Exit code 1
 * when any invariant failed, 2 for bad arguments.
 */
import { parseArgs } from 'node:util';
import { runFuzz } from './fuzzer.js';
import { formatReport } from './report.js';

function int(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    process.stderr.write(`--${name} must be an integer ≥ ${min}, not ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return Number(raw);
}

let args;
try {
  args = parseArgs({
    options: {
      seed: { type: 'string' },
      iterations: { type: 'string' },
      route: { type: 'string' },
      timeout: { type: 'string' },
      'max-failures': { type: 'string' },
      light: { type: 'boolean', default: false },
      mutations: { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  }).values;
} catch (e) {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exit(2);
}

if (args.help) {
  process.stdout.write('usage: npm run fuzz -- [--seed N] [--iterations N] [--route TEXT] [--timeout MS] [--max-failures N] [--light] [--mutations] [--quiet]\n'
    + '  --seed          PRNG seed (default: 1)\n'
    + '  --iterations    fuzz iterations after seeding (default: 2000)\n'
    + '  --route         only routes whose "METHOD /path" contains TEXT\n'
    + '  --timeout       per-request timeout in ms (default: 10000)\n'
    + '  --max-failures  failures shown in detail (default: 100; all are counted)\n'
    + '  --light         no multi-MiB bodies\n'
    + '  --mutations     also print how often each mutation ran\n');
  process.exit(0);
}

const seed = int('seed', args.seed, 1, 0);
const iterations = int('iterations', args.iterations, 2000, 0);
const report = await runFuzz({
  seed, iterations, route: args.route,
  timeoutMs: int('timeout', args.timeout, 10_000, 100),
  maxFailures: int('max-failures', args['max-failures'], 100, 1),
  heavy: args.light ? 0 : 1,
  log: args.quiet ? undefined : (l) => process.stderr.write(`[fuzz] ${l}\n`),
});
process.stdout.write(`${formatReport(report, { mutations: args.mutations })}\n`);
process.exitCode = report.failureCount ? 1 : 0;
