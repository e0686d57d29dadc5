/**
 * Every relative link in the repository's own Markdown (README.md, CONTRIBUTING.md, docs/,
 * bench/) points to a file that exists and, with a `#fragment`, to a heading of that file, by
 * GitHub's anchor rule. Links in code blocks and inline code are not links.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const mdIn = (dir: string) => fs.readdirSync(join(ROOT, dir)).filter((f) => f.endsWith('.md')).map((f) => join(dir, f));
const FILES = ['README.md', 'CONTRIBUTING.md', ...mdIn('docs'), ...mdIn('bench')]
  .filter((f) => fs.existsSync(join(ROOT, f)));

/** The text outside fenced code blocks, with inline code blanked (so a link-like snippet is not a link). */
function prose(md: string): string[] {
  let fence = false;
  return md.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) { fence = !fence; return ''; }
    return fence ? '' : line.replace(/`[^`]*`/g, '``');
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence = false;
  for (const line of md.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) { fence = !fence; continue; }
    const m = fence ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

interface Link { file: string; line: number; target: string }

function linksOf(file: string): Link[] {
  // The whole text at once: a link's text may wrap onto the next line.
  const text = prose(fs.readFileSync(join(ROOT, file), 'utf8')).join('\n');
  return [...text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => ({
    file, line: text.slice(0, m.index).split('\n').length, target: m[1],
  }));
}

/** Why a link does not resolve, or undefined when it does. */
function broken(link: Link): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) return undefined; // https:, mailto:
  const [path, fragment] = link.target.split('#', 2) as [string, string | undefined];
  const target = path === ''
    ? join(ROOT, link.file)
    : resolve(join(ROOT, dirname(link.file)), decodeURIComponent(path));
  if (relative(ROOT, target).startsWith('..')) return 'points outside the repository';
  if (!fs.existsSync(target)) return 'no such file';
  if (fragment === undefined) return undefined;
  if (!target.endsWith('.md')) return 'a fragment on a file that is not Markdown';
  if (anchorsOf(fs.readFileSync(target, 'utf8')).has(fragment)) return undefined;
  return `no heading #${fragment} in ${relative(ROOT, target)}`;
}

describe('documentation links', () => {
  it('a heading\'s anchor drops punctuation, turns spaces to hyphens and numbers repeats, as GitHub does', () => {
    const md = "# The log's cost, measured at once\n## `GET` (10,000 records)\n## Runs\n## Runs\n";
    assert.deepEqual([...anchorsOf(md)],
      ['the-logs-cost-measured-at-once', 'get-10000-records', 'runs', 'runs-1']);
  });

  it('every relative link in README.md, CONTRIBUTING.md, docs/ and bench/ names an existing file and heading', () => {
    const links = FILES.flatMap(linksOf);
    assert.ok(links.length > 50, `only ${links.length} links found: the scan is broken`);
    const bad = links.map((l) => ({ l, why: broken(l) })).filter((x) => x.why !== undefined)
      .map(({ l, why }) => `${l.file}:${l.line} (${l.target}): ${why}`);
    assert.deepEqual(bad, []);
  });
});
