// Writes the OpenAPI document the built server publishes (GET /api/v1/openapi.json) to the
// file named by the first argument, or to stdout. Needs `npm run build` first: it starts
// dist/ on port 0 over a temporary data directory, fetches the document, stops, and removes
// the directory.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../dist/core/config.js';
import { startServer } from '../dist/server/start.js';
import { systemClock } from '../dist/core/clock.js';
import { silentLogger } from '../dist/core/logger.js';

const dataDir = mkdtempSync(join(tmpdir(), 'sw-openapi-'));
try {
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, SYNC: 'none' });
  const server = await startServer(config, { clock: systemClock, logger: silentLogger, announce: () => {} });
  try {
    const res = await fetch(`${server.url}/api/v1/openapi.json`);
    if (res.status !== 200) throw new Error(`GET /api/v1/openapi.json answered ${res.status}`);
    const text = JSON.stringify(await res.json(), null, 2) + '\n';
    if (process.argv[2]) writeFileSync(process.argv[2], text); else process.stdout.write(text);
  } finally {
    await server.close();
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
