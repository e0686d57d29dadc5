import type { StoreFs } from '../../src/store/log/fs.js';

/**
 * `fs` without `openSynced`: a store's log then writes through a plain descriptor and fdatasyncs
 * each batch, as where the platform has no O_DSYNC (docs/decisions.md#durable-writes-in-one-system-call).
 * For tests that hold or fail a batch's `fdatasync` — the moment a transaction becomes durable.
 */
export function viaFdatasync(fs: StoreFs): StoreFs {
  const { openSynced: _, ...rest } = fs;
  return rest;
}

/**
 * The bytes a `StoreFs.write` is given, as one buffer (a vectored write's buffers joined): for
 * test file systems that look into or cut what is written.
 */
export function bytesOf(data: Buffer | readonly Buffer[]): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.concat(data);
}

/** The buffers a `StoreFs.write` is given, as a list (one for a plain write). */
export function buffersOf(data: Buffer | readonly Buffer[]): readonly Buffer[] {
  return Buffer.isBuffer(data) ? [data] : data;
}
