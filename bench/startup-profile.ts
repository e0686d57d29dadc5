// Writes a data dir with a 1,000,000-record all-live log (as `npm run bench` does) and prints its path.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateLog, makeBase, useCli } from './seed.js';
useCli(join(process.cwd(), 'dist', 'cli.js'));
const dir = mkdtempSync(join(tmpdir(), 'sw-startup-'));
const { workspaceId } = makeBase(dir);
generateLog(join(dir, 'workspaces', `${workspaceId}.log`), Number(process.argv[2] ?? 1_000_000), Number(process.argv[2] ?? 1_000_000));
console.log(dir);
