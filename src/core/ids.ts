/**
 * Record ids: UUID version 7 (RFC 9562 §5.7): a millisecond timestamp, a 12-bit counter keeping ids of the same
 * millisecond in creation order, and 62 random bits; lists sort by (createdAt, id).
 */
import { randomFillSync } from 'node:crypto';

let lastMs = 0;
let seq = 0;
/** Random bytes drawn 4 KiB at a time (one getrandom call per 512 ids, not one per id). */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

/** Two lower-case hex digits of each byte value. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A new UUIDv7 string, strictly increasing within this process; written from hex pairs, no Buffer per id. */
export function newId(now: number = Date.now()): string {
  if (now > lastMs) { lastMs = now; seq = 0; }
  else if (++seq > 0xfff) { lastMs++; seq = 0; }
  if (poolAt + 8 > pool.length) { randomFillSync(pool); poolAt = 0; }
  const r = poolAt;
  poolAt += 8;
  // The 48-bit time as two 24-bit halves (bitwise operators work on 32 bits).
  const hi = Math.floor(lastMs / 0x1000000);
  const lo = lastMs % 0x1000000;
  return HEX[(hi >>> 16) & 0xff] + HEX[(hi >>> 8) & 0xff] + HEX[hi & 0xff] + HEX[lo >>> 16]
    + '-' + HEX[(lo >>> 8) & 0xff] + HEX[lo & 0xff]
    + '-' + HEX[0x70 | (seq >> 8)] + HEX[seq & 0xff]
    + '-' + HEX[0x80 | (pool[r] & 0x3f)] + HEX[pool[r + 1]]
    + '-' + HEX[pool[r + 2]] + HEX[pool[r + 3]] + HEX[pool[r + 4]] + HEX[pool[r + 5]] + HEX[pool[r + 6]] + HEX[
      pool[r + 7]];
}
