/**
 * Waiting on a real component's state (a proxy routing, a page showing a message): re-checked every 20 ms up to a
 * bound, never a sleep standing in for time that must pass.
 */
import assert from 'node:assert/strict';

/** Retries `check` every 20 ms until it holds and resolves with the ms it took. @throws AssertionError after `ms` */
export async function within(ms: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return performance.now() - t0;
    if (performance.now() - t0 > ms) assert.fail(`${what} not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
