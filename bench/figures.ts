/**
 * Figures and their formatting, shared by bench/run.ts and the scenarios in their own modules
 * (bench/reads.ts): a run's figures, medians over rounds, same-round ratios, run lines.
 */
import type { GroupResult } from './load.js';

export const median = (xs: number[]) => { const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b); return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN; };
export const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
export const ms = (n: number) => (!Number.isFinite(n) ? 'n/a' : n >= 100 ? `${Math.round(n)} ms` : n >= 10 ? `${n.toFixed(1)} ms` : `${n.toFixed(2)} ms`);
export const secs = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)} s` : 'n/a');
/** Memory and file sizes in MiB; document sizes in (decimal) MB, as the issue gives them. */
export const mb = (bytes: number) => (Number.isFinite(bytes) ? `${(bytes / 1048576).toFixed(0)} MiB` : 'n/a');
export const mb1 = (bytes: number) => (Number.isFinite(bytes) ? `${(bytes / 1e6).toFixed(1)} MB` : 'n/a');
export const ratio = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : 'n/a');
export const pct = (x: number) => (Number.isFinite(x) ? `${Math.round(x * 100)}%` : 'n/a');
export const verdict = (ok: boolean | undefined) => (ok === undefined ? '' : ok ? '**met**' : '**not met**');
export const log = (s: string) => process.stdout.write(`${s}\n`);

/** A run's figures: one group of a job, with the target's CPU share over the window. */
export interface Run {
  rps: number; p50: number; p90: number; p99: number; max: number; mean: number; errors: number; requests: number; serverCpu: number; clientCpu: number; otherCpu: number; group: GroupResult;
  /** The server's minor page faults (all threads) over the window, per request: new memory touched (bench/README.md). */
  faultsPerRequest?: number;
}

/** A window where other processes took more than this many cores measured the machine, not the server. */
export const DISTURBED = 0.25;

/**
 * The median of the same-round ratios a[r] / b[r] — each pair ran back to back — over the
 * rounds where neither side was disturbed by outside load, or over all rounds when none was quiet.
 */
export function paired(a: Run[], b: Run[]): number {
  return median(roundRatios(a, b));
}
/** The same-round ratios {@link paired} takes the median of (the undisturbed rounds', or all when none was). */
function roundRatios(a: Run[], b: Run[]): number[] {
  const all = a.map((x, i) => [x, b[i]] as const);
  const quiet = all.filter(([x, y]) => x.otherCpu <= DISTURBED && y.otherCpu <= DISTURBED);
  return (quiet.length ? quiet : all).map(([x, y]) => x.rps / y.rps);
}
/**
 * " (rounds 0.71–1.02)", " (rounds 0.71–1.02; 2/3 undisturbed rounds)" or " (rounds 0.71–1.02;
 * every round disturbed by outside load)": the spread of the same-round ratios the median of
 * {@link paired} is over, so a reader sees when a verdict sits inside the host's noise
 * (bench/README.md, the paragraph "Reading the figures"); nothing with one round.
 */
export function spreadNote(a: Run[], b: Run[]): string {
  const q = a.filter((x, i) => x.otherCpu <= DISTURBED && b[i].otherCpu <= DISTURBED).length;
  const quiet = q === a.length ? '' : q ? `${q}/${a.length} undisturbed rounds` : 'every round disturbed by outside load';
  const rs = roundRatios(a, b).filter((x) => Number.isFinite(x));
  const range = rs.length > 1 ? `rounds ${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)}` : '';
  const parts = [range, quiet].filter((x) => x !== '');
  return parts.length ? ` (${parts.join('; ')})` : '';
}

export const runLine = (label: string, r: Run) =>
  `    ${label.padEnd(34)} ${int(r.rps).padStart(7)} req/s   p50 ${ms(r.p50).padStart(8)}   p99 ${ms(r.p99).padStart(8)}   cpu server ${pct(r.serverCpu).padStart(4)} client ${pct(r.clientCpu).padStart(4)} other ${r.otherCpu.toFixed(2)}${r.faultsPerRequest === undefined || !Number.isFinite(r.faultsPerRequest) ? '' : `   faults/req ${r.faultsPerRequest.toFixed(3)}`}${r.errors ? `   errors ${r.errors}` : ''}`;

/** Median figures of several runs. */
export function summarize(all: Run[]): { rps: number; p50: number; p99: number; serverCpu: number; clientCpu: number; errors: number } {
  const quiet = all.filter((r) => r.otherCpu <= DISTURBED);
  const runs = quiet.length ? quiet : all;
  return {
    rps: median(runs.map((r) => r.rps)), p50: median(runs.map((r) => r.p50)), p99: median(runs.map((r) => r.p99)),
    serverCpu: median(runs.map((r) => r.serverCpu)), clientCpu: median(runs.map((r) => r.clientCpu)), errors: all.reduce((a, r) => a + r.errors, 0),
  };
}
