/**
 * The module structure of `src/`: no value-import cycle. A cycle makes load order decide which
 * module sees the other's exports as still undefined, and ties modules that should change
 * apart. The graph is read from the source (test/helpers/imports.ts); the layer rule (no
 * module imports a layer above its own, docs/decisions.md#layers) is checked on the same graph
 * with type-only imports included, from the layer map {@link LAYERS}.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cyclePath, importCycles, readImportGraph, valueImportsOf } from './helpers/imports.js';

/**
 * Cycles tolerated while being removed, each as its sorted set of modules: none today (the
 * workspace hub's cycle went with the typed record map and areas owning their derived state).
 * A cycle listed here that no longer exists fails the test too, so the list cannot go stale.
 */
const KNOWN_CYCLES: string[][] = [];

test('no value-import cycle among the modules of src/ (beyond the known one being removed)', () => {
  const graph = readImportGraph();
  assert.ok(graph.size > 50, `read ${graph.size} modules`);
  const cycles = importCycles(graph);
  const key = (c: string[]) => c.join(' ');
  const known = new Set(KNOWN_CYCLES.map(key));
  const unexpected = cycles.filter((c) => !known.has(key(c)));
  assert.deepEqual(unexpected.map((c) => `${cyclePath(graph, c)} (modules: ${c.join(', ')})`), [], 'value-import cycles');
  const gone = KNOWN_CYCLES.filter((c) => !cycles.some((x) => key(x) === key(c)));
  assert.deepEqual(gone, [], 'a known cycle is gone: remove it from KNOWN_CYCLES');
});

test('the import reader counts value imports and re-exports, not type-only ones', () => {
  const src = [
    "import { a } from './a.js';",
    "import type { B } from './b.js';",
    "import { type C, type D } from './c.js';",
    "import { type E, e } from './e.js';",
    "import * as f from '../f.js';",
    "import g from './g.js';",
    "import './h.js';",
    "export { i } from './i.js';",
    "export type { J } from './j.js';",
    "export * from './k.js';",
    "import { readFileSync } from 'node:fs';",
    "// import { l } from './l.js';",
    "const m = await import('./m.js');",
    "export const n = './n.js';",
  ].join('\n');
  assert.deepEqual(valueImportsOf('area/x.ts', src), ['area/a.ts', 'area/e.ts', 'f.ts', 'area/g.ts', 'area/h.ts', 'area/i.ts', 'area/k.ts']);
});

test('a cycle is found and shown as an import chain', () => {
  const graph = new Map([
    ['a.ts', new Set(['b.ts'])], ['b.ts', new Set(['c.ts'])], ['c.ts', new Set(['a.ts', 'd.ts'])],
    ['d.ts', new Set<string>()], ['e.ts', new Set(['e.ts'])],
  ]);
  const cycles = importCycles(graph);
  assert.deepEqual(cycles, [['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
  assert.equal(cyclePath(graph, cycles[0]), 'a.ts → b.ts → c.ts → a.ts');
  assert.equal(cyclePath(graph, cycles[1]), 'e.ts → e.ts');
});

/**
 * The layers of `src/`, lowest first (docs/decisions.md#layers): a module may import its own layer and
 * the ones below it, never one above — type-only imports included. Each entry is a folder (or
 * a top-level file) under `src/`; every module must belong to exactly one layer.
 */
export const LAYERS: { name: string; paths: string[] }[] = [
  { name: 'core', paths: ['core/'] },
  { name: 'metrics', paths: ['metrics/'] },
  { name: 'store', paths: ['store/'] },
  { name: 'search', paths: ['search/'] },
  { name: 'ingest', paths: ['ingest/'] },
  { name: 'http', paths: ['http/', 'auth/'] },
  { name: 'domain', paths: ['domain/', 'areas/'] },
  { name: 'openapi', paths: ['openapi/'] },
  { name: 'web', paths: ['web/'] },
  { name: 'admin', paths: ['admin/'] },
  { name: 'server', paths: ['server/', 'server.ts', 'cli.ts'] },
];

/** The index in {@link LAYERS} of the layer holding `module` (a name under `src/`), or -1. */
export function layerOf(module: string): number {
  return LAYERS.findIndex((l) => l.paths.some((p) => (p.endsWith('/') ? module.startsWith(p) : module === p)));
}

test('every module of src/ belongs to a layer, and none imports a layer above its own', () => {
  const graph = readImportGraph(true);
  const unplaced = [...graph.keys()].filter((m) => layerOf(m) < 0);
  assert.deepEqual(unplaced, [], 'modules in no layer (add their folder to LAYERS)');
  const upward: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      if (layerOf(to) > layerOf(from)) upward.push(`${from} (${LAYERS[layerOf(from)].name}) imports ${to} (${LAYERS[layerOf(to)].name})`);
    }
  }
  assert.deepEqual(upward, [], 'imports of a layer above');
});

test('the layer rule reads type-only imports too, and places files by folder', () => {
  assert.deepEqual(valueImportsOf('http/x.ts', "import type { W } from '../domain/w.js';", true), ['domain/w.ts']);
  assert.equal(LAYERS[layerOf('ingest/parsers/yaml/parser.ts')].name, 'ingest');
  assert.equal(LAYERS[layerOf('server.ts')].name, 'server');
  assert.equal(layerOf('stray.ts'), -1);
});
