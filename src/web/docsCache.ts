/**
 * The rendered public docs, kept per slug and source version (docs/web.md#docs-page-cache): a
 * page is built once per version of its source, whoever asks, and every visitor is sent the same
 * buffer. Bounded by bytes (least recently used dropped); a version is the ingestion output's
 * record and the source's name and id, so a rescan, a rename or a slug moving renders anew.
 */
import type { SourceIndexRec } from '../ingest/types.js';
import type { Rendered } from './docsRender.js';

/** An answer of one cached docs page: the shared buffer itself, written to every client as is. */
export interface SharedPage { kind: 'shared'; body: Buffer; etag: string }

/** Bytes of rendered pages kept by default: beyond, the least recently asked-for source is dropped. */
export const DOCS_CACHE_BYTES = 64 * 1024 * 1024;

/** What the cache needs of a source record. */
export interface CachedSource { id: string; name: string; publicDocs: { slug: string | null } }

/** A number per ingestion-output record (records are replaced on every change, never edited), held weakly. */
const stamps = new WeakMap<object, number>();
let nextStamp = 1;
function stampOf(o: object): number {
  let s = stamps.get(o);
  if (s === undefined) { s = nextStamp++; stamps.set(o, s); }
  return s;
}

interface Entry { version: string; rendered: Rendered }

export class DocsCache {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, { version: string; promise: Promise<Rendered>; turn: Promise<void> }>();
  private bytes = 0;

  /**
   * @param render builds every page of a source version (off the main thread when large).
   * @param maxBytes the bound on {@link Rendered.bytes} kept; a single larger source is still kept, alone.
   */
  constructor(private readonly render: (src: CachedSource, idx: SourceIndexRec | undefined) => Promise<Rendered>,
    private readonly maxBytes = DOCS_CACHE_BYTES) {}

  /**
   * The rendered docs of `slug`'s source at this version: from the cache, or the render already
   * under way for it (concurrent visitors share one), or a new render.
   * @throws Error when the render failed (the next request tries again)
   */
  rendered(slug: string, src: CachedSource, idx: SourceIndexRec | undefined): Promise<Rendered> {
    const version = `${idx ? stampOf(idx) : 0}\u0000${src.id}\u0000${src.name}`;
    const hit = this.entries.get(slug);
    if (hit?.version === version) {
      this.entries.delete(slug);
      this.entries.set(slug, hit);
      return Promise.resolve(hit.rendered);
    }
    const under = this.pending.get(slug);
    if (under?.version === version) {
      // Each visitor who waited goes on in a turn of the event loop of its own, one after the
      // other: 40 of them sending a large page in one turn would hold the loop for all 40.
      const turn = under.turn.then(() => new Promise<void>((r) => setImmediate(r)));
      under.turn = turn;
      return turn.then(() => under.promise);
    }
    const promise = this.render(src, idx).then((r) => {
      this.store(slug, version, r);
      return r;
    }).finally(() => {
      if (this.pending.get(slug)?.promise === promise) this.pending.delete(slug);
    });
    this.pending.set(slug, { version, promise, turn: promise.then(() => undefined, () => undefined) });
    return promise;
  }

  /** Forgets `slug`'s pages (its source is no longer served: unpublished, disabled, deleted). */
  drop(slug: string): void {
    const e = this.entries.get(slug);
    if (!e) return;
    this.entries.delete(slug);
    this.bytes -= e.rendered.bytes;
  }

  /** Bytes held now (for tests and the docs' figures). */
  get size(): number { return this.bytes; }

  private store(slug: string, version: string, rendered: Rendered): void {
    this.drop(slug);
    this.entries.set(slug, { version, rendered });
    this.bytes += rendered.bytes;
    for (const [k, e] of this.entries) {
      if (this.bytes <= this.maxBytes || k === slug) break;
      this.entries.delete(k);
      this.bytes -= e.rendered.bytes;
    }
  }
}
