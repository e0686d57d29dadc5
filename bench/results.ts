/**
 * bench/RESULTS.md: one section per benchmark, each stamped with the date, commit and machine of
 * the run it came from. A run rewrites the sections of the benchmarks it ran and keeps the others
 * as they were, so `--only webhooks` leaves the reads figures and their stamp alone
 * (bench/README.md, "Results").
 */
import * as fs from 'node:fs';

/** The benchmarks, in the order `npm run bench` runs them and RESULTS.md lists them. */
export const BENCHMARKS = ['reads', 'list', 'writes', 'sources', 'webhooks', 'startup', 'search', 'hostile', 'docs', 'streams', 'backup', 'cells'] as const;
export type Benchmark = (typeof BENCHMARKS)[number];

/** What each section measures, one line under its heading. */
const ABOUT: Record<Benchmark, string> = {
  reads: '`GET /api/v1/issues/{id}` beside fastify and two bare `node:http` servers, and the access log\'s cost.',
  list: '`GET /api/v1/conversations?limit=20&status=open` beside the same peers.',
  writes: '`PATCH` a conversation and `POST` a message with `SYNC=always` against `SYNC=none`.',
  sources: 'Ingestion of three real API descriptions, the event loop seen from outside meanwhile, reads during it.',
  webhooks: '`PATCH` with one subscribed webhook endpoint against none, and the deliveries\' rate.',
  startup: 'Start-up from an empty data dir and from a log of a million records; compaction of a churned log.',
  search: 'BM25 search over a 1,000,000-chunk index, the pruned scan against the exhaustive one.',
  docs: 'Public docs pages: the largest corpus document\'s first render and cached serve, a 1,000-endpoint source\'s pages.',
  streams: 'Server-Sent Events: a message fanned out to 1,000 streams, 10,000 open streams, writes with them open.',
  backup: '`cli backup --to DIR` of a 1,000,000-record data dir while 1,000 durable writes a second go on.',
  cells: 'Reads through HAProxy to 1 and 3 cells against the cells directly, and the write pause of workspace moves.',
  hostile: 'API reads and durable writes while one address loops over a large docs page, one floods the sign-in and one key bursts analytics on 100,000 records.',
};

export interface Row { scenario: string; figure: string; target: string; status: string }

/** Where and on what a section's figures were measured. */
export interface Stamp {
  /** ISO 8601, UTC. */
  date: string;
  /** Short commit hash, with a note when src/ had uncommitted changes. */
  commit: string;
  /** CPU model, cores, memory, OS and Node version. */
  machine: string;
  /** The command line and how long the section took. */
  command: string;
}

/** One benchmark's figures from one run. `key` is the benchmark, with a variant when a run measured another size. */
export interface Section { key: string; stamp: Stamp; rows: Row[]; notes: string[]; runs: string[] }

/** The machine line of a stamp: `AMD EPYC, 2 cores, 23.5 GiB RAM, Linux 6.18.44, Node v20.20.2`. */
export function machineLine(cpu: string, cores: number, memBytes: number, os: string, node: string): string {
  return `${cpu}, ${cores} cores, ${(memBytes / 2 ** 30).toFixed(1)} GiB RAM, ${os}, Node ${node}`;
}

/** A section as Markdown, from its `## key` heading to its last line. */
export function renderSection(s: Section): string {
  const bench = s.key.split(' ')[0] as Benchmark;
  return [
    `## ${s.key}`, '',
    ...(ABOUT[bench] ? [ABOUT[bench], ''] : []),
    `- Run: ${s.stamp.date}, commit ${s.stamp.commit}`,
    `- Machine: ${s.stamp.machine}`,
    `- Command: ${s.stamp.command}`, '',
    '| scenario | figure (median of the undisturbed rounds) | target | ratio (median of same-round ratios) / status |',
    '|---|---|---|---|',
    ...s.rows.map((r) => `| ${r.scenario} | ${r.figure} | ${r.target} | ${r.status} |`), '',
    ...(s.notes.length ? [...s.notes.map((n) => `- ${n}`), ''] : []),
    ...(s.runs.length
      ? ['<details><summary>Every measured run</summary>', '', '```', ...s.runs, '```', '', '</details>', '']
      : []),
  ].join('\n');
}

/** The sections of a RESULTS.md, by key, each as its Markdown text (heading included). */
export function parseSections(md: string): Map<string, string> {
  const out = new Map<string, string>();
  let key: string | undefined;
  let lines: string[] = [];
  let fence = false;
  const flush = () => { if (key !== undefined) out.set(key, `${lines.join('\n').trimEnd()}\n`); };
  for (const line of md.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const m = fence ? null : /^## (.+)$/.exec(line);
    if (m) { flush(); key = m[1].trim(); lines = []; }
    if (key !== undefined) lines.push(line);
  }
  flush();
  return out;
}

const rank = (key: string) => {
  const i = BENCHMARKS.indexOf(key.split(' ')[0] as Benchmark);
  return i < 0 ? BENCHMARKS.length : i;
};

/**
 * Rewrites `file` with `fresh` sections in place of those of the same key; every other section
 * already in the file is kept byte for byte. A missing file is started empty.
 */
export function writeResults(file: string, fresh: Section[]): void {
  const old = fs.existsSync(file) ? parseSections(fs.readFileSync(file, 'utf8')) : new Map<string, string>();
  for (const s of fresh) old.set(s.key, `${renderSection(s).trimEnd()}\n`);
  const keys = [...old.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const md = [
    '# Benchmark results', '',
    'Written by `npm run bench` (bench/run.ts, bench/results.ts). A run rewrites the sections of the benchmarks it',
    'ran and keeps the others, each with the date, commit and machine of its own run. How to run them, what each',
    'measures and how to read the figures: [README.md](README.md).', '',
    ...keys.map((k) => old.get(k)!),
  ].join('\n');
  fs.writeFileSync(file, md);
}
