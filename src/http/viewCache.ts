/**
 * Serialized views kept per record (issue #6 "a record's serialized form can be kept and
 * written without re-serializing"). Records are immutable — every change puts a new object —
 * so a WeakMap keyed by the record can never serve a stale view, and a replaced record's
 * entry goes away with it. A view that also depends on another record (an issue's
 * `lastActivityAt` on its conversation) passes that record as `dep`: the entry is reused only
 * while `dep` is the same object.
 */
export class ViewCache<R extends object> {
  private readonly cache = new WeakMap<R, { dep: object | undefined; json: string }>();

  constructor(private readonly view: (r: R) => unknown) {}

  /** The JSON text of `view(r)`. */
  json(r: R, dep?: object): string {
    const hit = this.cache.get(r);
    if (hit && hit.dep === dep) return hit.json;
    const json = JSON.stringify(this.view(r));
    this.cache.set(r, { dep, json });
    return json;
  }
}

/** `{"object":"list","hasMore":…,"nextCursor":…,"<name>":[…]}` from items' JSON texts. */
export function listJson(name: string, hasMore: boolean, nextCursor: string | null, items: string[]): string {
  return `{"object":"list","hasMore":${hasMore},"nextCursor":${nextCursor === null ? 'null' : JSON.stringify(nextCursor)},"${name}":[${items.join(',')}]}`;
}
