import type { StoreFs } from '../../src/store/fs.js';

/**
 * `fs` without `openSynced`: a store's log then writes through a plain descriptor and fdatasyncs
 * each batch, as where the platform has no O_DSYNC (docs/decisions.md#durable-writes-in-one-system-call).
 * For tests that hold or fail a batch's `fdatasync` — the moment a transaction becomes durable.
 */
export function viaFdatasync(fs: StoreFs): StoreFs {
  const { openSynced: _, ...rest } = fs;
  return rest;
}
