/**
 * Record ids: UUID version 7 (RFC 9562 §5.7) — a millisecond timestamp, a 12-bit counter
 * that keeps ids made in the same millisecond in creation order, and 62 random bits. Lists
 * sort by (createdAt, id), so records created in the same millisecond keep their order.
 */
import { randomFillSync } from 'node:crypto';

let lastMs = 0;
let seq = 0;
/** Random bytes drawn 4 KiB at a time (one getrandom call per 512 ids, not one per id). */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

/** A new, strictly increasing (within this process) UUIDv7 string. */
export function newId(now: number = Date.now()): string {
  if (now > lastMs) { lastMs = now; seq = 0; }
  else if (++seq > 0xfff) { lastMs++; seq = 0; }
  if (poolAt + 8 > pool.length) { randomFillSync(pool); poolAt = 0; }
  const rnd = pool.subarray(poolAt, poolAt + 8);
  poolAt += 8;
  const b = Buffer.allocUnsafe(16);
  b.writeUIntBE(lastMs, 0, 6);
  b[6] = 0x70 | (seq >> 8);
  b[7] = seq & 0xff;
  b[8] = 0x80 | (rnd[0] & 0x3f);
  rnd.copy(b, 9, 1, 8);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
