/** A small tmpfs for the tests that need a real file system to fill up or remount read-only. */
import { execFileSync } from 'node:child_process';
import { tempDir } from './server.js';

/** Mounts a tmpfs of `size` at a new temp dir; null when this machine does not allow mounting. */
export function tryMountTmpfs(size = '16m'): string | null {
  const dir = tempDir('sw-ro-');
  try { execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0755`, 'tmpfs', dir], { stdio: 'ignore' }); return dir; } catch { return null; }
}
