/**
 * Serialized views kept per record (README "Performance"). Records are immutable (every change puts a new object), so a
 * WeakMap keyed by the record never serves a stale view. A view that also depends on another record (an issue's
 * `lastActivityAt` on its conversation) passes it as `dep`: the entry is reused while `dep` is the same.
 */
export class ViewCache<R extends object> {
  private readonly cache = new WeakMap<R, Entry>();
  private readonly prefix: string;

  /** `view`: the record's API view; `name`: the property a single-record answer puts it under (`{"issue":…}`). */
  constructor(private readonly view: (r: R) => unknown, name: string) {
    this.prefix = `{${JSON.stringify(name)}:`;
  }

  private entry(r: R, dep: object | undefined): Entry {
    const hit = this.cache.get(r);
    if (hit && hit.dep === dep) return hit;
    const e: Entry = { dep, json: JSON.stringify(this.view(r)), answer: undefined };
    this.cache.set(r, e);
    return e;
  }

  /** Records `json` as the JSON text of `view(r)`; it must equal `JSON.stringify(view(r))`. */
  seed(r: R, json: string): void {
    this.cache.set(r, { dep: undefined, json, answer: undefined });
  }

  /** The JSON text of `view(r)` (an item of a list answer). */
  json(r: R, dep?: object): string {
    return this.entry(r, dep).json;
  }

  /** The single-record answer `{"<name>":<view>}` as UTF-8 bytes, made once per record. */
  answer(r: R, dep?: object): Buffer {
    const e = this.entry(r, dep);
    return (e.answer ??= Buffer.from(`${this.prefix}${e.json}}`));
  }

  /**
   * The same answer as text, for a record answered once as it is made (a write's answer): a small `Buffer` per answer
   * costs more than letting the socket encode the text.
   */
  answerText(r: R, dep?: object): string {
    const e = this.entry(r, dep);
    return `${this.prefix}${e.json}}`;
  }
}

interface Entry { dep: object | undefined; json: string; answer: Buffer | undefined }

/** `{"object":"list","hasMore":…,"nextCursor":…,"<name>":[…]}` from items' JSON texts. */
export function listJson(name: string, hasMore: boolean, nextCursor: string | null, items: string[]): string {
  return `{"object":"list","hasMore":${hasMore},` +
    `"nextCursor":${nextCursor === null ? 'null' : JSON.stringify(nextCursor)},"${name}":[${items.join(',')}]}`;
}
