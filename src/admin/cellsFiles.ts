/**
 * `cli cells haproxy` (docs/deployment.md#several-machines): on the proxy's machine, from each cell's `cli cells
 * routes` output, writes `haproxy.cfg` and the map files (src/admin/cells.ts) into one folder, each file written to a
 * temporary name, fsync'd and renamed, so HAProxy reloading meanwhile reads a whole old or a whole new file.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { AdminError } from './operations.js';
import { haproxyConfig, mapFiles, parseCells, type CellRoutes } from './cells.js';

function writeWhole(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w', 0o644);
  try { writeSync(fd, text); fsyncSync(fd); } finally { closeSync(fd); }
  renameSync(tmp, path);
}

/**
 * Writes the files; `routes`: paths of `cells routes` outputs (`{cell, routes}`), one per declared cell.
 * @returns what was written: the folder, the files and the number of entries per cell.
 * @throws AdminError for a bad `cells` list, an unreadable routes file, or a routes file of an undeclared cell.
 */
export function writeHaproxy(o: { cells: string; routes: string[]; out: string; bind: string; runtime: string;
  mapsDir: string }): { object: 'cells_haproxy'; dir: string; files: string[]; entries: Record<string, number> } {
  let cells;
  try { cells = parseCells(o.cells); } catch (e) { throw new AdminError((e as Error).message); }
  const byCell = new Map<string, CellRoutes>();
  for (const file of o.routes) {
    let parsed: { cell?: unknown; routes?: CellRoutes };
    try { parsed = JSON.parse(readFileSync(file, 'utf8')); } catch (e) {
      throw new AdminError(`cannot read ${file}: ${(e as Error).message}`, { cause: e });
    }
    const cell = String(parsed.cell ?? '');
    if (!cells.some((c) => c.name === cell)) throw new AdminError(`${file} is the routes of cell "${cell}", which `
      + '--cells does not declare');
    byCell.set(cell, parsed.routes!);
  }
  mkdirSync(o.out, { recursive: true });
  const files = { 'haproxy.cfg': haproxyConfig({ cells, mapsDir: o.mapsDir, bind: o.bind, runtime: o.runtime }),
    ...mapFiles(byCell) };
  for (const [name, text] of Object.entries(files)) writeWhole(join(o.out, name), text);
  const entries: Record<string, number> = {};
  for (const [cell, r] of byCell) entries[cell] = Object.values(r).reduce((n, list) => n + list.length, 0);
  return { object: 'cells_haproxy', dir: o.out, files: Object.keys(files), entries };
}
