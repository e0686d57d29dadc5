/**
 * The module graph of src/: no value-import cycle. A cycle makes a module's exports undefined
 * while the cycle is being loaded (the order depends on which module is imported first), and it
 * ties layers together that should depend one way. Type-only imports (`import type`,
 * `import { type A }`) are erased at compile time and do not count.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []);
}

/** The relative modules `file` imports for their values (static imports and re-exports). */
export function valueImports(text: string): string[] {
  const out: string[] = [];
  // `import … from '…'`, `export … from '…'`, `import '…'` — over several lines.
  const re = /^(import|export)\s+(type\s+)?([^'";]*?)\s*from\s+['"]([^'"]+)['"]|^import\s+['"]([^'"]+)['"]/gm;
  for (const m of text.matchAll(re)) {
    if (m[5]) { out.push(m[5]); continue; }
    if (m[2]) continue; // import type / export type
    const names = m[3].trim();
    // `{ type A, type B }` only: erased.
    const braces = /^\{([^}]*)\}$/.exec(names);
    if (braces && braces[1].split(',').map((s) => s.trim()).filter(Boolean).every((s) => s.startsWith('type '))) continue;
    out.push(m[4]);
  }
  return out.filter((p) => p.startsWith('.'));
}

/** Strongly connected components of size > 1 (or a module importing itself): the cycles. */
export function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do { w = stack.pop()!; on.delete(w); scc.push(w); } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

test('the import scanner sees value imports and skips type-only ones', () => {
  const text = [
    "import { a } from './a.js';",
    "import type { B } from './b.js';",
    "import { type C, type D } from './c.js';",
    "import { type E, f } from './e.js';",
    "import {\n  g,\n  h,\n} from './g.js';",
    "export { i } from './i.js';",
    "export type { J } from './j.js';",
    "import './side.js';",
    "import * as fs from 'node:fs';",
  ].join('\n');
  assert.deepEqual(valueImports(text), ['./a.js', './e.js', './g.js', './i.js', './side.js']);
  assert.deepEqual(cycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]])), [['a', 'b', 'c']]);
});

test('no value-import cycle among the modules of src/', () => {
  const graph = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const deps = valueImports(readFileSync(file, 'utf8')).map((p) => relative(SRC, resolve(dirname(file), p.replace(/\.js$/, '.ts'))));
    graph.set(relative(SRC, file), deps);
  }
  assert.ok(graph.size > 50, `read ${graph.size} modules`);
  assert.deepEqual(cycles(graph), []);
});
