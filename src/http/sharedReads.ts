/**
 * Reads of accepted sockets into one shared buffer (docs/decisions.md#reads-into-one-shared-buffer).
 *
 * By default every read of a `net.Socket` is a new `Buffer`: Node allocates 64 KiB, shrinks it
 * to what was read, wraps it in a new `ArrayBuffer` (which the garbage collector then tracks and
 * sweeps at every young-generation collection) and pushes it through the readable stream to the
 * `'data'` listeners. node:http's own server skips all of that: its parser reads the socket in
 * C++. The fast path parses in JavaScript, so it asks for Node's other read mode, the one
 * `net.connect`'s documented `onread` option selects: each read goes into a buffer given once,
 * and a callback gets the byte count — no allocation per read and no stream machinery.
 *
 * `onread` is an option of sockets we create, not of the ones a server accepts. The same mode
 * is switched on here for an accepted socket by setting the two properties `onread` sets (found
 * by their symbols' descriptions on a socket made with `onread`) and calling its handle's
 * `useUserBuffer`, as `net.Socket`'s constructor does. These are Node's internals: where this
 * Node does not have them, {@link readIntoShared} changes nothing and returns false, and the
 * socket's `'data'` listeners get every read as before. The tests check that the mode is on for
 * the Node versions we run on (test/shared-reads.test.ts).
 */
import { Socket, type SocketConstructorOpts } from 'node:net';

/**
 * One read's bytes: a view of the shared buffer, valid only until the callback returns (the
 * next read of any socket overwrites it — keep a copy of whatever must outlive the call).
 * Returns false to stop reading, as `stream.push` returning false does.
 */
export type SharedRead = (bytes: Buffer) => boolean;

/** The size of every read (libuv asks for the same 64 KiB for a default read). */
const READ_BYTES = 64 * 1024;
let shared: Buffer | undefined;

/** The symbols `net.Socket` keeps the `onread` buffer and callback under, if this Node has them. */
const hooks = ((): { buffer: symbol; callback: symbol } | undefined => {
  const probe = new Socket({ onread: { buffer: Buffer.alloc(1), callback: () => true } } as SocketConstructorOpts);
  const symbols = Object.getOwnPropertySymbols(probe);
  const buffer = symbols.find((s) => s.description === 'kBuffer');
  const callback = symbols.find((s) => s.description === 'kBufferCb');
  const rec = probe as unknown as Record<symbol, unknown>;
  probe.destroy();
  return buffer && callback && Buffer.isBuffer(rec[buffer]) && typeof rec[callback] === 'function' ? { buffer, callback } : undefined;
})();

/**
 * Makes every later read of `sock` (an accepted, connected TCP socket) call `onRead` with a view
 * of one buffer shared by all sockets of the process, instead of a new Buffer emitted as
 * `'data'`. Resuming, the socket's timeout, `'end'` and errors work as with `'data'` (Node's own
 * code for `onread` sockets handles them). Pausing differs: it stops reading at the socket, as
 * node:http's own sockets do, so a FIN or a reset is seen only once reading resumes.
 * @returns false, with nothing changed, where this Node lacks the hooks or the socket has no
 *   stream handle (see the module comment).
 */
export function readIntoShared(sock: Socket, onRead: SharedRead): boolean {
  const handle = (sock as unknown as { _handle?: { useUserBuffer?: (buf: Buffer) => void } })._handle;
  if (hooks === undefined || typeof handle?.useUserBuffer !== 'function') return false;
  shared ??= Buffer.allocUnsafeSlow(READ_BYTES);
  const buf = shared;
  const rec = sock as unknown as Record<symbol, unknown>;
  rec[hooks.buffer] = buf;
  rec[hooks.callback] = (n: number) => onRead(buf.subarray(0, n));
  handle.useUserBuffer(buf);
  return true;
}

/** Whether {@link readIntoShared} can switch sockets to shared reads on this Node (the tests check it). */
export const sharedReadsAvailable = hooks !== undefined;
