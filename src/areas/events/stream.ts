/**
 * The events stream (docs/api.md#event-stream): a workspace's events as Server-Sent Events, in the order of the events
 * list (time, then id), each sent once it is on disk and never before an earlier one, resumable with `Last-Event-ID`
 * within the events' retention. A comment line every 25 s keeps proxies open. A stream holds at most
 * {@link STREAM_HIGH_WATER} unsent bytes and waits for 'drain' past them, so a client that never reads costs a bound
 * (and the connection guard closes it once its output has not moved for 30 s, docs/security.md#connections).
 * A commit's events are read and framed once per filter, then written to every caught-up stream of that filter.
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

/** An event as a stream sees it: its id, type and the API view's JSON text. */
export interface StreamedEvent { readonly id: string; readonly type: string; readonly json: string }

/**
 * Which events a stream gets and what of them: `pick` answers the `data:` text of an event, or undefined to leave it
 * out. Streams whose filters have the same `key` share one framing of each commit's events, so `pick` must depend on
 * the key alone (e.g. `message.created`, `*`, or a visitor's id).
 */
export interface StreamFilter { readonly key: string; pick(e: StreamedEvent): string | undefined }

/** The filter of the API stream: every type, one type, or every type of one resource (`conversation.*`). */
export function typeFilter(type: string | undefined): StreamFilter {
  if (type === undefined) return { key: '*', pick: (e) => e.json };
  if (type.endsWith('.*')) {
    const resource = resourceOf(type);
    return { key: type, pick: (e) => (resourceOf(e.type) === resource ? e.json : undefined) };
  }
  return { key: type, pick: (e) => (e.type === type ? e.json : undefined) };
}

interface Stream {
  readonly res: ServerResponse;
  readonly filter: StreamFilter;
  /** Behind the feed (resuming, or waiting for 'drain'): the composite key (time, id) of the last event it passed. */
  cursor: string | undefined;
  /** Past the high-water mark: waiting for 'drain'. */
  waiting: boolean;
}

/**
 * Per workspace: its caught-up streams by filter key, the streams behind, the key of the last event on disk that the
 * caught-up streams have had, and the ids of its events put by transactions not yet on disk.
 */
interface Feed {
  readonly live: Map<string, Set<Stream>>;
  readonly behind: Set<Stream>;
  head: string | undefined;
  readonly pending: Set<string>;
}

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
   * `now`: the clock (ms), for the retention; `type`: the API stream's filter ({@link typeFilter}), or `filter`.
   * The caller checked {@link full} before writing the head.
   */
  start(ws: StreamedWorkspace, res: ServerResponse,
    o: { lastEventId?: string; type?: string; filter?: StreamFilter; now: number }): void {
    const feed = this.feed(ws);
    const stream: Stream = { res, filter: o.filter ?? typeFilter(o.type), cursor: undefined, waiting: false };
    this.open++;
    res.on('close', () => {
      if (feed.behind.delete(stream) || feed.live.get(stream.filter.key)?.delete(stream)) this.open--;
    });
    // The client retries after 2 s when the connection drops (the EventSource default varies by browser).
    res.write('retry: 2000\n\n');
    if (o.lastEventId === undefined) { this.join(feed, stream); return; }
    const head = eventHead(ws.db, o.lastEventId);
    stream.cursor = head === undefined || Date.parse(head.createdAt) < o.now - EVENT_RETENTION_MS
      ? iso(o.now - EVENT_RETENTION_MS) : compositeKey(head.createdAt, o.lastEventId);
    feed.behind.add(stream);
    this.catchUp(ws, feed, stream);
  }

  /** Whether another stream would pass `SSE_MAX_STREAMS`. */
  get full(): boolean { return this.open >= this.maxStreams; }

  /** Writes a comment line to every open stream (run every {@link STREAM_HEARTBEAT_MS}; tests call it). */
  heartbeat(): void {
    for (const s of this.all()) if (!s.waiting) s.res.write(':\n\n');
  }

  /** Ends every stream (shutdown): clients reconnect and resume. */
  close(): void {
    clearInterval(this.timer);
    for (const s of [...this.all()]) s.res.end();
  }

  /** Ends the streams of `ws` (moved to another cell): its clients reconnect through the router and resume there. */
  closeWorkspace(ws: StreamedWorkspace): void {
    const feed = this.feeds.get(ws);
    if (feed === undefined) return;
    this.feeds.delete(ws);
    for (const s of [...feed.behind, ...[...feed.live.values()].flatMap((g) => [...g])]) s.res.end();
  }

  private *all(): Generator<Stream> {
    for (const feed of this.feeds.values()) {
      yield* feed.behind;
      for (const group of feed.live.values()) yield* group;
    }
  }

  /** The feed of `ws`, made (and hooked to its log) on its first stream. */
  private feed(ws: StreamedWorkspace): Feed {
    let feed = this.feeds.get(ws);
    if (feed !== undefined) return feed;
    const f: Feed = { live: new Map(), behind: new Set(), head: undefined, pending: new Set() };
    // From now on: after the last event on disk.
    const order = ws.events.order;
    for (const i of order.desc()) { f.head = order.keyAt(i); break; }
    this.feeds.set(ws, f);
    // An event put by a transaction is pending until the transaction is on disk; undone with it, it is gone.
    ws.db.on('event', (id, prev, next) => {
      if (prev === undefined && next !== undefined) f.pending.add(id);
      else if (next === undefined) f.pending.delete(id);
    });
    ws.db.afterCommit((tx) => {
      let any = false;
      for (const op of tx.ops) if (op[1] === 'event') { f.pending.delete(op[2]); any = true; }
      if (any) this.fanOut(ws, f);
    });
    return (feed = f);
  }

  /** A stream that has had every event up to the feed's head joins the caught-up streams of its filter. */
  private join(feed: Feed, s: Stream): void {
    s.cursor = undefined;
    feed.behind.delete(s);
    let group = feed.live.get(s.filter.key);
    if (group === undefined) feed.live.set(s.filter.key, group = new Set());
    group.add(s);
  }

  /**
   * The events on disk after the feed's head: read once, framed once per filter key that has caught-up streams, and
   * written to each of them. A stream past the high-water mark falls behind and waits for 'drain'.
   */
  private fanOut(ws: StreamedWorkspace, feed: Feed): void {
    const order = ws.events.order;
    const events: StreamedEvent[] = [];
    for (const i of order.asc(feed.head)) {
      const id = order.idAt(i);
      if (feed.pending.has(id)) break;
      feed.head = order.keyAt(i);
      const e = eventItem(ws.db, id);
      if (e !== undefined) events.push({ id, type: e.type, json: e.json });
    }
    if (events.length === 0) return;
    for (const group of feed.live.values()) {
      let out = '';
      for (const s of group) {
        if (out === '') out = frame(s.filter, events);
        if (out === '') break;
        if (s.res.destroyed) continue;
        s.res.write(out);
        if (s.res.writableLength > STREAM_HIGH_WATER) {
          group.delete(s);
          s.cursor = feed.head;
          feed.behind.add(s);
          this.wait(ws, feed, s);
        }
      }
    }
  }

  /** Sends `s` the events after its cursor up to the first one not yet on disk, while its socket keeps up. */
  private catchUp(ws: StreamedWorkspace, feed: Feed, s: Stream): void {
    if (s.waiting || s.res.destroyed) return;
    const order = ws.events.order;
    let out = '';
    for (const i of order.asc(s.cursor)) {
      const id = order.idAt(i);
      if (feed.pending.has(id)) break;
      s.cursor = order.keyAt(i);
      const e = eventItem(ws.db, id);
      const data = e === undefined ? undefined : s.filter.pick({ id, type: e.type, json: e.json });
      if (data === undefined) continue;
      out += `id: ${id}\nevent: ${e!.type}\ndata: ${data}\n\n`;
      if (out.length < 16 * 1024) continue;
      s.res.write(out);
      out = '';
      if (s.res.writableLength > STREAM_HIGH_WATER) return this.wait(ws, feed, s);
    }
    if (out !== '') s.res.write(out);
    if (s.res.writableLength > STREAM_HIGH_WATER) this.wait(ws, feed, s);
    else this.join(feed, s);
  }

  /** Writes nothing more to `s` until its socket has drained; then goes on from its cursor. */
  private wait(ws: StreamedWorkspace, feed: Feed, s: Stream): void {
    s.waiting = true;
    s.res.once('drain', () => { s.waiting = false; this.catchUp(ws, feed, s); });
  }
}

/** The Server-Sent Events text of `events` through `filter` ('' when it picks none). */
function frame(filter: StreamFilter, events: readonly StreamedEvent[]): string {
  let out = '';
  for (const e of events) {
    const data = filter.pick(e);
    if (data !== undefined) out += `id: ${e.id}\nevent: ${e.type}\ndata: ${data}\n\n`;
  }
  return out;
}
