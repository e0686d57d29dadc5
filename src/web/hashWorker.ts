/**
 * The hash worker's entry (src/web/hashLanes.ts): one scrypt at a time, synchronously on this
 * thread, so the hashing never takes a thread of libuv's pool (docs/security.md#sign-in-cost), and at the
 * lowest CPU priority, so request handling always wins a core over a sign-in.
 */
import { parentPort } from 'node:worker_threads';
import { scryptSync } from 'node:crypto';
import { setPriority, constants } from 'node:os';
import type { HashReply, HashTask } from './hashLanes.js';

// On Linux a nice value belongs to a thread: pid 0 is this worker's thread alone, not the process.
try { setPriority(constants.priority.PRIORITY_LOW); } catch { /* not allowed here: hash at normal priority */ }

parentPort?.on('message', ({ password, salt, keyLength, params }: HashTask) => {
  let reply: HashReply;
  try {
    reply = { ok: true, key: new Uint8Array(scryptSync(password.normalize('NFC'), salt, keyLength, params)) };
  } catch (e) {
    reply = { ok: false, message: (e as Error)?.message ?? String(e) };
  }
  parentPort!.postMessage(reply);
});
