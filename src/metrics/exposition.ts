/**
 * The Prometheus text exposition format 0.0.4 (docs/deployment.md#monitoring), by hand: HELP and TYPE lines, escaped
 * label values, and a histogram with fixed buckets. No dependency: the format is a few lines of text.
 */

/** The Content-Type of a scrape's answer. */
export const EXPOSITION_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A label value escaped for the format: backslash, double quote and line feed (the three it escapes). */
export function escapeLabel(value: string): string {
  return /[\\"\n]/.test(value) ? value.replace(/[\\"\n]/g, (c) => (c === '\\' ? '\\\\' : c === '"' ? '\\"' : '\\n'))
    : value;
}

/** A HELP text escaped for the format: backslash and line feed. */
function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => (c === '\\' ? '\\\\' : '\\n'));
}

/** A sample value: a finite number as JavaScript prints it (Go's ParseFloat reads it), else `+Inf`, `-Inf`, `NaN`. */
export function sampleValue(v: number): string {
  if (Number.isFinite(v)) return String(v);
  return Number.isNaN(v) ? 'NaN' : v > 0 ? '+Inf' : '-Inf';
}

/** `{a="x",b="y"}` for the labels given as name/value pairs; empty for none. */
export function labelSet(pairs: ReadonlyArray<readonly [string, string]>): string {
  if (pairs.length === 0) return '';
  let s = '{';
  for (let i = 0; i < pairs.length; i++) s += `${i ? ',' : ''}${pairs[i][0]}="${escapeLabel(pairs[i][1])}"`;
  return s + '}';
}

/** Appends a family's HELP and TYPE lines to `out`. */
export function header(out: string[], name: string, type: 'counter' | 'gauge' | 'histogram', help: string): void {
  out.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
}

/** One sample line: `name{labels} value`. */
export function sample(out: string[], name: string, pairs: ReadonlyArray<readonly [string, string]>, v: number): void {
  out.push(`${name}${labelSet(pairs)} ${sampleValue(v)}`);
}

/** Request durations, seconds: from 1 ms (a cached read) to 10 s (a request timing out). */
export const REQUEST_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/** Commit and fsync durations, seconds: from 50 µs (a page-cache write) to 2.5 s (a stalled disk). */
export const DISK_BUCKETS: readonly number[] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
  0.05, 0.1, 0.25, 1, 2.5];

/** One histogram series: counts per bucket (each observation in one bucket; cumulated when written), sum, count. */
export class Histogram {
  private readonly counts: Float64Array;
  sum = 0;
  count = 0;

  /** `buckets`: upper bounds, ascending, without +Inf. */
  constructor(private readonly buckets: readonly number[]) { this.counts = new Float64Array(buckets.length); }

  /** Adds one observation `v` (seconds). */
  observe(v: number): void {
    const b = this.buckets;
    let i = 0;
    while (i < b.length && v > b[i]) i++;
    if (i < b.length) this.counts[i]++;
    this.sum += v;
    this.count++;
  }

  /** Appends the `_bucket` (cumulative, `le` last), `_sum` and `_count` lines of this series to `out`. */
  write(out: string[], name: string, pairs: ReadonlyArray<readonly [string, string]>): void {
    let running = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      running += this.counts[i];
      sample(out, `${name}_bucket`, [...pairs, ['le', sampleValue(this.buckets[i])]], running);
    }
    sample(out, `${name}_bucket`, [...pairs, ['le', '+Inf']], this.count);
    sample(out, `${name}_sum`, pairs, this.sum);
    sample(out, `${name}_count`, pairs, this.count);
  }
}
