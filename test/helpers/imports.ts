/**
 * The value-import graph of `src/`: which module loads which at run time. Each file is parsed
 * with the TypeScript parser (a devDependency) and its top-level `import … from`, side-effect
 * `import '…'` and `export … from` of a relative path are read, except `import type` /
 * `export type` and declarations whose every name is marked `type` (TypeScript erases those).
 * An import not marked `type` counts even when only its types are used (mark it `type` then).
 * Dynamic `import()` is left out: it loads later, so it closes no load-time cycle.
 * Used by test/imports.test.ts; a layer rule can be checked on the same graph.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository's `src/` folder. */
export const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

/** Module name → the modules it imports as values; names are paths under `src/` with `/` (`areas/issues.ts`). */
export type ImportGraph = Map<string, Set<string>>;

/** Every `.ts` file under `dir`, as names relative to {@link SRC}. */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(p));
    else if (e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(relative(SRC, p).split(sep).join('/'));
  }
  return out.sort();
}

/** Whether an import declaration loads its module at run time. */
function loadsValue(decl: ts.ImportDeclaration): boolean {
  const clause = decl.importClause;
  if (!clause) return true; // import './x.js' — run for its effects
  if (clause.isTypeOnly) return false;
  if (clause.name) return true; // a default import
  const bindings = clause.namedBindings;
  if (!bindings || ts.isNamespaceImport(bindings)) return true;
  // `import {} from` loads the module; `import { type A, type B } from` is erased.
  return bindings.elements.length === 0 || bindings.elements.some((e) => !e.isTypeOnly);
}

/** Whether an export declaration (`export … from`) loads its module at run time. */
function reExportsValue(decl: ts.ExportDeclaration): boolean {
  if (decl.isTypeOnly) return false;
  const clause = decl.exportClause;
  if (!clause || ts.isNamespaceExport(clause)) return true;
  return clause.elements.length === 0 || clause.elements.some((e) => !e.isTypeOnly);
}

/**
 * The relative modules `text` (the source of `file`, a name under `src/`) imports as values, as
 * names under `src/`; with `types: true`, its type-only imports as well (for the layer rule,
 * which a type import breaks as much as a value one: it still ties the lower layer to the upper).
 */
export function valueImportsOf(file: string, text: string, types = false): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: string[] = [];
  for (const stmt of source.statements) {
    let spec: ts.Expression | undefined;
    if (ts.isImportDeclaration(stmt) && (types || loadsValue(stmt))) spec = stmt.moduleSpecifier;
    else if (ts.isExportDeclaration(stmt) && stmt.moduleSpecifier && (types || reExportsValue(stmt))) spec = stmt.moduleSpecifier;
    if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue;
    out.push(posix.join(posix.dirname(file), spec.text).replace(/\.js$/, '.ts'));
  }
  return out;
}

/** The value-import graph of every module under `src/` (with `types: true`, every import). */
export function readImportGraph(types = false): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of tsFiles(SRC)) graph.set(file, new Set(valueImportsOf(file, readFileSync(join(SRC, file), 'utf8'), types)));
  return graph;
}

/**
 * The strongly connected components of `graph` that hold a cycle — more than one module, or
 * one module that imports itself (Tarjan's algorithm): modules that all reach each other.
 * Each is sorted, and the list by each one's first module.
 */
export function importCycles(graph: ImportGraph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)!.has(v)) out.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out.sort((a, b) => a[0].localeCompare(b[0]));
}

/**
 * One shortest import chain around a cycle through `component`'s first module, for a failure
 * message: `a.ts → b.ts → a.ts`.
 */
export function cyclePath(graph: ImportGraph, component: string[]): string {
  const members = new Set(component);
  const start = component[0];
  const prev = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i];
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const chain = [start];
        for (let x = v; x !== start; x = prev.get(x)!) chain.unshift(x);
        return [start, ...chain].join(' → ');
      }
      if (!prev.has(w)) { prev.set(w, v); queue.push(w); }
    }
  }
  return component.join(', ');
}
