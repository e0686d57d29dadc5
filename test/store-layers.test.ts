/**
 * The folders of src/store/ import one way (docs/storage.md#source-layout): log/ (the file,
 * its lines, recovery, the lock) below memory/ (tables, the byte arena, ids, sorted orders)
 * below snapshot/ (the block, compaction, loading a log) below the log's API at the top of
 * store/ (db, tx, store, indexes) — type-only imports included, read as test/imports.test.ts does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readImportGraph } from './helpers/imports.js';

const FOLDERS = ['store/log/', 'store/memory/', 'store/snapshot/', 'store/'];
/** The index in {@link FOLDERS} of a module of src/store/ (its folder, lowest first), or -1 outside. */
const levelOf = (m: string) => (m.startsWith('store/') ? FOLDERS.findIndex((f) => m.startsWith(f)) : -1);

test('no module of src/store/ imports a folder of the store above its own', () => {
  const graph = readImportGraph(true);
  const store = [...graph.keys()].filter((m) => levelOf(m) >= 0);
  assert.ok(store.length > 20, `read ${store.length} modules of the store`);
  const upward: string[] = [];
  for (const from of store) {
    for (const to of graph.get(from)!) if (levelOf(to) > levelOf(from)) upward.push(`${from} imports ${to}`);
  }
  assert.deepEqual(upward, []);
});
