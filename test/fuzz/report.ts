/**
 * The fuzzer's summary for people: per route, statuses, mutations, and the failures with their
 * reproducers.
 */
import type { FuzzReport } from './types.js';
import { asciiJson } from './util.js';

/** A readable summary: per route, statuses, mutations, failures with reproducers. */
export function formatReport(r: FuzzReport, opts: { mutations?: boolean } = {}): string {
  const lines: string[] = [];
  const st = (m: Map<number, number>) => [...m.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s === 0 ? 'none' : s}×${n}`).join(' ');
  lines.push(`fuzz seed ${r.seed}, ${r.iterations} iterations${r.routeFilter ? `, routes matching ${JSON.stringify(r.routeFilter)}` : ''}: `
    + `${r.requests} requests (${r.seedRequests} seeding), ${(r.durationMs / 1000).toFixed(1)} s `
    + `(seed ${((r.phases.seed ?? 0) / 1000).toFixed(1)} s, fuzz ${((r.phases.fuzz ?? 0) / 1000).toFixed(1)} s, after ${((r.phases.post ?? 0) / 1000).toFixed(1)} s)`);
  lines.push(`statuses: ${st(r.statuses)}`);
  lines.push(`expectations checked: ${r.expectationsChecked}; upstream requests: ${r.upstreamRequests}; keep-alive retries: ${r.retries}; rss ${r.memory.rssStartMb}→${r.memory.rssEndMb} MB, heap ${r.memory.heapEndMb} MB`);
  lines.push('requests per route (valid) statuses:');
  const w = Math.max(...[...r.perRoute.keys()].map((k) => k.length));
  for (const [k, s] of [...r.perRoute.entries()].sort((a, b) => a[0].localeCompare(b[0]))) lines.push(`  ${k.padEnd(w)} ${String(s.requests).padStart(6)} (${s.valid}) ${st(s.statuses)}`);
  if (opts.mutations) {
    lines.push('mutations:');
    for (const [k, n] of [...r.mutations.entries()].map(([k, n]) => [k.startsWith('(') ? k : k.replace(/\(.*$/, ''), n] as const).reduce((m, [k, n]) => m.set(k, (m.get(k) ?? 0) + n), new Map<string, number>()).entries()) lines.push(`  ${k} ${n}`);
  }
  if (r.validRejected.size) {
    lines.push('valid requests answered 4xx (semantics, not failures):');
    for (const [k, n] of [...r.validRejected.entries()].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`  ${k} ×${n}`);
  }
  lines.push(`FAILURES: ${r.failureCount}${r.failureCount ? ` (${[...r.failuresByKind.entries()].map(([k, n]) => `${k}×${n}`).join(', ')}; ${r.failures.length} shown)` : ''}`);
  for (const f of r.failures) {
    lines.push(`- [${f.kind}] seed ${f.seed} iteration ${f.iteration} (${f.phase}) ${f.route} [${f.mutations.join(' + ')}]: ${f.message}`);
    if (f.request) {
      if (f.request.raw) lines.push(`    raw request: ${f.request.raw}`);
      else {
        lines.push(`    ${f.request.method} ${asciiJson(f.request.target).slice(1, -1)}`);
        lines.push(`    headers: ${asciiJson(f.request.headers)}`);
        lines.push(`    body (${f.request.bodyBytes} bytes): ${f.request.bodyPreview}`);
      }
    }
    if (f.response) lines.push(`    → ${f.response.status} ${asciiJson(f.response.body).slice(1, -1)}`);
  }
  if (r.dataDir) lines.push(`data dir kept: ${r.dataDir}`);
  if (r.failures.length) lines.push(`reproduce: npm run fuzz -- --seed ${r.seed} --iterations ${r.iterations}${r.routeFilter ? ` --route ${JSON.stringify(r.routeFilter)}` : ''}`);
  return lines.join('\n');
}
