/**
 * The events stream (docs/api.md#event-stream): a workspace's events as Server-Sent Events, in the order of the events
 * list (time, then id), each sent once it is on disk and never before an earlier one, resumable with `Last-Event-ID`
 * within the events' retention. A comment line every 25 s keeps proxies open. A stream holds at most
 * {@link STREAM_HIGH_WATER} unsent bytes and waits for 'drain' past them, so a client that never reads costs a bound
 * (and the connection guard closes it once its output has not moved for 30 s, docs/security.md#connections).
 */
import type { ServerResponse } from 'node:http';
import { iso } from '../../core/clock.js';
import { compositeKey } from '../../store/memory/sorted.js';
import type { Db } from '../../store/db.js';
import { EVENT_RETENTION_MS, eventHead, eventItem, resourceOf, type EventRecords, type EventState } from './events.js';

/** A comment line goes to every open stream this often (ms, real time). */
export const STREAM_HEARTBEAT_MS = 25_000;
/** Unsent bytes past which a stream writes no more until its socket drains. */
export const STREAM_HIGH_WATER = 64 * 1024;

/** What a stream needs of a workspace. */
export interface StreamedWorkspace { readonly id: string; readonly db: Db<EventRecords>; readonly events: EventState }

interface Stream {
  readonly res: ServerResponse;
  /** Composite key (time, id) of the last event this stream has passed. */
  cursor: string | undefined;
  /** `conversation.updated`, `conversation.*`, or every type. */
  readonly type: string | undefined;
  /** Past the high-water mark: waiting for 'drain'. */
  waiting: boolean;
}

/** Per workspace: its open streams, and the ids of its events put by transactions not yet on disk. */
interface Feed { readonly streams: Set<Stream>; readonly pending: Set<string> }

export class EventStreams {
  private readonly feeds = new Map<StreamedWorkspace, Feed>();
  private readonly timer: NodeJS.Timeout;
  /** Streams open now. */
  open = 0;

  constructor(readonly maxStreams: number) {
    this.timer = setInterval(() => this.heartbeat(), STREAM_HEARTBEAT_MS);
    this.timer.unref();
  }

  /**
   * Starts a stream of `ws`'s events on `res` (its head already written): the events after `lastEventId` first
   * (every kept one when it names no kept event), then each event as its transaction reaches the disk.
   * `now`: the clock (ms), for the retention. The caller checked {@link full} before writing the head.
   */
  start(ws: StreamedWorkspace, res: ServerResponse, o: { lastEventId?: string; type?: string; now: number }): void {
    const feed = this.feed(ws);
    let cursor: string | undefined;
    if (o.lastEventId !== undefined) {
      const head = eventHead(ws.db, o.lastEventId);
      cursor = head === undefined || Date.parse(head.createdAt) < o.now - EVENT_RETENTION_MS
        ? iso(o.now - EVENT_RETENTION_MS) : compositeKey(head.createdAt, o.lastEventId);
    } else {
      // From now on: after the last event on disk.
      const order = ws.events.order;
      for (const i of order.desc()) if (!feed.pending.has(order.idAt(i))) { cursor = order.keyAt(i); break; }
    }
    const stream: Stream = { res, cursor, type: o.type, waiting: false };
    feed.streams.add(stream);
    this.open++;
    res.on('close', () => { if (feed.streams.delete(stream)) this.open--; });
    // The client retries after 2 s when the connection drops (the EventSource default varies by browser).
    res.write('retry: 2000\n\n');
    this.send(ws, feed, stream);
  }

  /** Whether another stream would pass `SSE_MAX_STREAMS`. */
  get full(): boolean { return this.open >= this.maxStreams; }

  /** Writes a comment line to every open stream (run every {@link STREAM_HEARTBEAT_MS}; tests call it). */
  heartbeat(): void {
    for (const feed of this.feeds.values()) for (const s of feed.streams) if (!s.waiting) s.res.write(':\n\n');
  }

  /** Ends every stream (shutdown): clients reconnect and resume. */
  close(): void {
    clearInterval(this.timer);
    for (const feed of this.feeds.values()) for (const s of feed.streams) s.res.end();
  }

  /** The feed of `ws`, made (and hooked to its log) on its first stream. */
  private feed(ws: StreamedWorkspace): Feed {
    let feed = this.feeds.get(ws);
    if (feed !== undefined) return feed;
    const f: Feed = { streams: new Set(), pending: new Set() };
    this.feeds.set(ws, f);
    // An event put by a transaction is pending until the transaction is on disk; undone with it, it is gone.
    ws.db.on('event', (id, prev, next) => {
      if (prev === undefined && next !== undefined) f.pending.add(id);
      else if (next === undefined) f.pending.delete(id);
    });
    ws.db.afterCommit((tx) => {
      let any = false;
      for (const op of tx.ops) if (op[1] === 'event') { f.pending.delete(op[2]); any = true; }
      if (any) for (const s of f.streams) this.send(ws, f, s);
    });
    return (feed = f);
  }

  /** Sends `s` the events after its cursor up to the first one not yet on disk, while its socket keeps up. */
  private send(ws: StreamedWorkspace, feed: Feed, s: Stream): void {
    if (s.waiting || s.res.destroyed) return;
    const order = ws.events.order;
    const exact = s.type === undefined || s.type.endsWith('.*') ? undefined : s.type;
    const resource = s.type === undefined ? undefined : resourceOf(s.type);
    let out = '';
    for (const i of order.asc(s.cursor)) {
      const id = order.idAt(i);
      if (feed.pending.has(id)) break;
      s.cursor = order.keyAt(i);
      const e = eventItem(ws.db, id);
      if (e === undefined || (exact !== undefined && e.type !== exact)
        || (resource !== undefined && resourceOf(e.type) !== resource)) continue;
      out += `id: ${id}\nevent: ${e.type}\ndata: ${e.json}\n\n`;
      if (out.length < 16 * 1024) continue;
      s.res.write(out);
      out = '';
      if (s.res.writableLength > STREAM_HIGH_WATER) return this.wait(ws, feed, s);
    }
    if (out !== '') s.res.write(out);
    if (s.res.writableLength > STREAM_HIGH_WATER) this.wait(ws, feed, s);
  }

  /** Writes nothing more to `s` until its socket has drained; then goes on from its cursor. */
  private wait(ws: StreamedWorkspace, feed: Feed, s: Stream): void {
    s.waiting = true;
    s.res.once('drain', () => { s.waiting = false; this.send(ws, feed, s); });
  }
}
