/**
 * The running server's local admin socket (docs/storage.md#admin-socket): a Unix socket `DATA_DIR/admin.sock` (mode
 * 0600) that takes `{op, args}` and runs {@link Admin.run}, so the CLI's change takes effect at once while the server
 * stays the only writer of its files. A refusal crosses it as data — `{error, refusal}` with a domain error's parts
 * (src/core/errors.ts) — so the CLI words it exactly as when it runs the operation itself.
 */
import * as http from 'node:http';
import { chmodSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_SOCKET, MAX_SOCKET_PATH, socketPathIn } from '../store/log/adminPath.js';
import { Admin, AdminError } from './operations.js';
import { DomainError, domainErrorFromData } from '../core/errors.js';
import type { Logger } from '../core/logger.js';

export { ADMIN_SOCKET };
const MAX_BODY = 512 * 1024 * 1024;

/**
 * The path to bind or connect to for `<dataDir>/admin.sock`: absolute, or relative to the working directory when the
 * absolute one is too long for a Unix socket.
 * @throws AdminError when neither fits (the data dir's path is too long).
 */
export function adminSocketPath(dataDir: string): string {
  const path = socketPathIn(dataDir);
  if (path !== null) return path;
  throw new AdminError(
    `the admin socket path ${join(dataDir, ADMIN_SOCKET)} is longer than the ${MAX_SOCKET_PATH} bytes a Unix socket ` +
      `allows; use a shorter DATA_DIR (or start from a folder near it)`);
}

/** Listens on `<dataDir>/admin.sock`; resolves with the server once listening. */
export function listenAdminSocket(dataDir: string, admin: Admin, logger: Logger): Promise<http.Server> {
  const path = adminSocketPath(dataDir);
  try { unlinkSync(path); } catch { /* none left over */ }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => { size += c.length; if (size <= MAX_BODY) chunks.push(c); });
    req.on('end', async () => {
      let status = 200;
      let out: unknown;
      try {
        if (size > MAX_BODY) throw new AdminError('request too large');
        const { op, args } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { op: string; args: Record<string,
          unknown> };
        out = await admin.execute(op, args ?? {});
      } catch (e) {
        const refused = e instanceof AdminError || e instanceof DomainError;
        status = refused ? 400 : 500;
        out = e instanceof DomainError ? { error: e.message, refusal: e.toData() } : {
          error: refused ? (e as Error).message : 'the admin operation failed' };
        if (status === 500) logger.error('admin operation failed', { error: (e as Error).stack });
      }
      const json = JSON.stringify(out);
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json) });
      res.end(json);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      // Listening: a failed accept is logged, not thrown (an 'error' event nobody listens for ends the process).
      server.on('error', (e: NodeJS.ErrnoException) => logger.error('the admin socket failed to accept a connection', {
        error: e.message, code: e.code }));
      try { chmodSync(path, 0o600); } catch (e) { server.close(); reject(e); return; }
      resolve(server);
    });
  });
}

/**
 * Sends one admin operation to the server listening on `<dataDir>/admin.sock`.
 * @throws the domain error the server refused it with (InvalidInputError, NotFoundError, ConflictError), or AdminError
 *   with the server's message for another refusal.
 */
export function callAdminSocket(dataDir: string, op: string, args: Record<string, unknown>): Promise<unknown> {
  const body = JSON.stringify({ op, args });
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: adminSocketPath(dataDir), method: 'POST', path: '/', headers: {
      'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let parsed: unknown;
        try { parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch {
          return reject(new AdminError('the server answered the admin socket with garbage')); }
        if (res.statusCode === 200) return resolve(parsed);
        const answer = parsed as { error?: string; refusal?: unknown } | null;
        reject(domainErrorFromData(answer?.refusal) ?? new AdminError(answer?.error ??
          `admin socket answered ${res.statusCode}`));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
