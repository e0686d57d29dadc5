/**
 * Where the running server's admin socket lives in a data dir. Kept beside the lock, which
 * probes it to tell a live holder from a stale lock, and used by the admin socket itself.
 */
import { join, relative } from 'node:path';

export const ADMIN_SOCKET = 'admin.sock';
/** Longest Unix socket path (`sun_path` less its NUL): a longer one is silently cut by the kernel. */
export const MAX_SOCKET_PATH = process.platform === 'linux' ? 107 : 103;

/**
 * The path to bind or connect to for `<dataDir>/admin.sock`: absolute, or relative to the
 * working directory when the absolute one is too long for a Unix socket; null when neither fits.
 */
export function socketPathIn(dataDir: string): string | null {
  const abs = join(dataDir, ADMIN_SOCKET);
  if (Buffer.byteLength(abs) <= MAX_SOCKET_PATH) return abs;
  const rel = relative(process.cwd(), abs);
  if (Buffer.byteLength(rel) <= MAX_SOCKET_PATH) return rel;
  return null;
}
