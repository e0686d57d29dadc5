/**
 * Entry point: `node dist/server.js`. Reads the configuration, starts the server, stops it gracefully on
 * SIGTERM/SIGINT (a second signal exits at once). A start that cannot proceed prints one line and exits 2 before
 * answering: invalid settings first, an unlistenable HOST or PORT before the data dir is touched.
 */
import { loadConfig, ConfigError } from './core/config.js';
import { createLogger } from './core/logger.js';
import { systemClock } from './core/clock.js';
import { startServer, type RunningServer } from './server/start.js';

async function main(): Promise<void> {
  let config;
  try { config = loadConfig(); } catch (e) {
    if (e instanceof ConfigError) { process.stderr.write(
      `support-workspace: invalid configuration: ${e.message}\n`); process.exit(2); }
    throw e;
  }
  const logger = createLogger(config.logLevel);
  // Signal handlers go in first, so a SIGTERM during or right after the start is a graceful stop.
  let running: RunningServer | undefined;
  let stopping = false;
  let signals = 0;
  const shutdown = (r: RunningServer) => {
    r.close().then(() => process.exit(0), (e) => { logger.error('shutdown failed', { error: (
      e as Error).message }); process.exit(1); });
  };
  const stop = (sig: string) => {
    if (++signals > 1) { process.stderr.write(`support-workspace: ${sig} again, exiting now\n`); process.exit(1); }
    logger.info('shutting down', { signal: sig });
    stopping = true;
    if (running) shutdown(running);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    running = await startServer(config, { clock: systemClock, logger });
  } catch (e) {
    process.stderr.write(`support-workspace: cannot start: ${(e as Error).message}\n`);
    process.exit(2);
  }
  if (stopping) shutdown(running);
}

main().catch((e) => {
  process.stderr.write(`support-workspace: ${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
