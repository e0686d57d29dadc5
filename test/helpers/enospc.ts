/**
 * A store file system (`StoreFs`) over the real one whose writes can be made to fail with
 * ENOSPC, as a full disk does (docs/storage.md#faults: the log cuts the write back and stays
 * writable): the next `failNext` writes, or only those whose bytes hold `failMarker`. `failed`
 * counts the writes failed so far.
 */
import { nodeFs, type StoreFs } from '../../src/store/log/fs.js';
import { bytesOf } from './storeFs.js';

export interface EnospcFs extends StoreFs { failNext: number; failMarker: string | null; failed: number }

/** A new {@link EnospcFs}, failing nothing until told. */
export function enospcFs(): EnospcFs {
  const f: EnospcFs = {
    ...nodeFs,
    failNext: 0,
    failMarker: null,
    failed: 0,
    write: async (fd, data, pos) => {
      if (f.failNext > 0 && (f.failMarker === null || bytesOf(data).includes(f.failMarker))) {
        f.failNext--;
        f.failed++;
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      }
      return nodeFs.write(fd, data, pos);
    },
  };
  return f;
}
