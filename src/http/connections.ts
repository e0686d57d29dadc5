/**
 * What one connection may hold (docs/security.md#connections): a request reaches the application only while the
 * connection's unsent output is at most `maxUnsentBytes`, else it waits and the socket stops reading, so a client that
 * never reads cannot make the server hold gigabytes. A connection stalled `stallMs` is closed; one over `maxPerAddress`
 * from its peer address (IPv6: a /64) is closed at once, unanswered.
 */
import type { IncomingMessage, ServerResponse, Server } from 'node:http';
import type { Socket } from 'node:net';
import { addressKey } from './clientAddress.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';

export interface ConnectionLimits {
  /** Unsent bytes above which further requests wait; at least 16 KiB (the write high-water mark, for 'drain'). */
  maxUnsentBytes: number;
  /** A connection whose pending output does not progress for this long (ms, on the clock) is closed. */
  stallMs: number;
  /** Open connections allowed per client address. */
  maxPerAddress: number;
  /** How often connections are checked for stalled output (ms, real time). */
  sweepMs: number;
}

/** The request handler the guard feeds; a promise when the answer comes later (see App.handle). */
export type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | undefined;

/** Per-connection state, kept by socket in {@link ConnectionGuard}'s map. */
interface Conn {
  readonly sock: Socket;
  readonly address: string;
  /** Requests handed over whose answer is being produced asynchronously. */
  busy: number;
  /** Answered responses still waiting for their turn on the socket, each followed by its size. */
  waiting: Array<ServerResponse | number> | null;
  waitingBytes: number;
  /** Requests that arrived while the connection was over its bound: req, res, req, res… from `head`. */
  queue: Array<IncomingMessage | ServerResponse> | null;
  head: number;
  /** Reading stopped by us (not by node:http's own backpressure). */
  paused: boolean;
  /** Our 'resume' listener is on the socket (added the first time reading is stopped). */
  hooked: boolean;
  /** A wake-up is registered (the last answer's 'finish' or the socket's 'drain'). */
  armed: boolean;
  /** Runs pump() again; made the first time the connection waits for its output. */
  wake: (() => void) | null;
  /** Bytes the kernel had taken when output was last seen moving, and when (clock ms). */
  sent: number;
  since: number;
}

/** node:net's default write high-water mark. */
const MIN_UNSENT_BYTES = 16 * 1024;

/** Admission control per connection: the output bound, stalled-output closing and the per-address cap. */
export class ConnectionGuard {
  /** Every open connection's state, by its socket. */
  private readonly conns = new Map<Socket, Conn>();
  private readonly perAddress = new Map<string, number>();
  private readonly timer: NodeJS.Timeout | null;
  /** Connections refused by the per-address cap since the start. */
  refused = 0;
  /** Connections closed for stalled output since the start. */
  stalled = 0;
  /** The 'close' listener of every socket (called with the socket as `this`). */
  private readonly onClose: (this: Socket) => void;

  constructor(private readonly handler: Handler, private readonly limits: ConnectionLimits,
    private readonly clock: Clock, private readonly logger: Logger) {
    if (limits.maxUnsentBytes < MIN_UNSENT_BYTES) throw new RangeError(
      `maxUnsentBytes must be at least ${MIN_UNSENT_BYTES}`);
    const guard = this;
    this.onClose = function (this: Socket) { guard.disconnected(this); };
    this.timer = limits.sweepMs > 0 ? setInterval(() => this.sweep(), limits.sweepMs) : null;
    this.timer?.unref();
  }

  /** Attaches to `server`'s connections; `handle` must be its request listener. */
  attach(server: Server): void {
    // First of the listeners: a connection refused here is never read by the others.
    server.prependListener('connection', (sock: Socket) => this.connected(sock));
  }

  /** Stops the stall sweep (server shutdown). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private connected(sock: Socket): void {
    const address = addressKey(sock.remoteAddress);
    const open = this.perAddress.get(address) ?? 0;
    if (open >= this.limits.maxPerAddress) {
      this.refused++;
      this.logger.debug('connection refused: too many from one address', { address, open });
      sock.destroy();
      return;
    }
    this.perAddress.set(address, open + 1);
    const c: Conn = {
      sock, address, busy: 0, waiting: null, waitingBytes: 0, queue: null, head: 0, paused: false, hooked: false,
        armed: false,
      wake: null, sent: 0, since: -1,
    };
    this.conns.set(sock, c);
    // One listener function for every socket: an idle connection costs as little as it can.
    sock.on('close', this.onClose);
  }

  private disconnected(sock: Socket): void {
    const c = this.conns.get(sock);
    if (c === undefined) return;
    this.conns.delete(sock);
    const n = (this.perAddress.get(c.address) ?? 1) - 1;
    if (n === 0) this.perAddress.delete(c.address); else this.perAddress.set(c.address, n);
    c.queue = null; // node:http aborts those requests itself; drop our references
    c.waiting = null;
  }

  /** The request listener: hands the request over now, or queues it while the connection is over its bound. */
  handle = (req: IncomingMessage, res: ServerResponse): void => {
    const c = this.conns.get(req.socket);
    if (c === undefined) { void this.handler(req, res); return; }
    if (c.queue === null && c.busy === 0 && this.fits(c)) { this.admit(c, req, res); return; }
    if (c.queue === null) {
      c.queue = [];
      c.head = 0;
      this.stopReading(c);
      this.arm(c);
    }
    c.queue.push(req, res);
  };

  /** Stops reading the socket until pump() resumes it (node:http resumes it on its own, so each resume is undone). */
  private stopReading(c: Conn): void {
    if (c.paused) return;
    c.paused = true;
    c.sock.pause();
    if (!c.hooked) {
      c.hooked = true;
      c.sock.on('resume', () => { if (c.paused) c.sock.pause(); });
    }
  }

  /** Whether the connection's unsent output is within the bound. */
  private fits(c: Conn): boolean {
    const w = c.waiting;
    if (w !== null) {
      // Answers are given the socket in order; those that had it are counted by the socket.
      while (w.length > 0 && hadTurn(w[0] as ServerResponse)) { w.shift(); c.waitingBytes -= w.shift() as number; }
      if (w.length === 0) { c.waiting = null; c.waitingBytes = 0; }
    }
    return c.sock.writableLength + c.waitingBytes <= this.limits.maxUnsentBytes;
  }

  private admit(c: Conn, req: IncomingMessage, res: ServerResponse): void {
    const pending = this.handler(req, res);
    if (pending === undefined) { this.answered(c, res); return; }
    c.busy++;
    void pending.then(() => { c.busy--; this.answered(c, res); this.pump(c); });
  }

  /** Counts an answer that is still waiting for its turn (pipelined behind another). */
  private answered(c: Conn, res: ServerResponse): void {
    if (hadTurn(res)) return;
    (c.waiting ??= []).push(res, res.writableLength);
    c.waitingBytes += res.writableLength;
  }

  /** Registers one wake-up for when the output has drained; called right after fits(). */
  private arm(c: Conn): void {
    if (c.armed || c.busy > 0) return;
    c.armed = true;
    c.wake ??= () => { c.armed = false; this.pump(c); };
    const w = c.waiting;
    // The last waiting answer finishes after every earlier one. With none waiting, the socket is over its high-water
    // mark (see ConnectionLimits), so the write that put it there asked for a 'drain'.
    if (w !== null) (w[w.length - 2] as ServerResponse).once('finish', c.wake);
    else c.sock.once('drain', c.wake);
  }

  /** Answers queued requests while the connection is within its bound, then resumes reading. */
  private pump(c: Conn): void {
    while (c.queue !== null) {
      if (c.sock.destroyed) { c.queue = null; return; }
      if (c.busy > 0) return;
      if (!this.fits(c)) { this.arm(c); return; }
      const q = c.queue;
      const req = q[c.head] as IncomingMessage;
      const res = q[c.head + 1] as ServerResponse;
      c.head += 2;
      if (c.head === q.length) c.queue = null;
      this.admit(c, req, res);
    }
    if (c.paused && c.busy === 0 && !this.fits(c)) { this.arm(c); return; }
    if (c.paused) { c.paused = false; c.sock.resume(); }
  }

  /** Closes connections whose pending output has not moved for `stallMs`; run every `sweepMs`, and by tests. */
  sweep(): void {
    const now = this.clock.now();
    for (const c of this.conns.values()) {
      const sock = c.sock;
      const unsent = sock.writableLength;
      if (unsent === 0) { c.since = -1; continue; }
      const sent = kernelTaken(sock);
      if (c.since === -1 || sent !== c.sent) { c.sent = sent; c.since = now; continue; }
      if (now - c.since >= this.limits.stallMs) {
        this.stalled++;
        this.logger.info('connection closed: its client took no output',
          { address: c.address, unsentBytes: unsent, stalledMs: now - c.since });
        sock.destroy();
      }
    }
  }

  /**
   * For tests and benchmarks: open connections, their unsent bytes (total and largest), requests waiting over the bound
   * and connections holding them, bytes the kernel took, and connections the stall check is timing.
   */
  stats(): { connections: number; unsentBytes: number; maxUnsentBytes: number; queuedRequests: number; holding: number;
    sentBytes: number; watched: number } {
    const out = { connections: this.conns.size, unsentBytes: 0, maxUnsentBytes: 0, queuedRequests: 0, holding: 0,
      sentBytes: 0, watched: 0 };
    for (const c of this.conns.values()) {
      this.fits(c);
      const u = c.sock.writableLength + c.waitingBytes;
      out.unsentBytes += u;
      out.maxUnsentBytes = Math.max(out.maxUnsentBytes, u);
      if (c.queue !== null) { out.holding++; out.queuedRequests += (c.queue.length - c.head) / 2; }
      out.sentBytes += kernelTaken(c.sock);
      if (c.since !== -1) out.watched++;
    }
    return out;
  }
}

/** Whether a response was given the socket (it is writing there, or has finished), or is gone. */
function hadTurn(res: ServerResponse): boolean {
  // node:http clears `res.socket` again once the answer finished.
  return res.socket !== null || res.writableFinished || res.destroyed;
}

/**
 * Bytes of this connection's output the kernel took (`bytesWritten` less `writableLength`): a write counts once all
 * of it is taken, so a client must take one whole write within `stallMs`.
 */
function kernelTaken(sock: Socket): number {
  return sock.bytesWritten - sock.writableLength;
}
