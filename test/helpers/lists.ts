/**
 * Lists (docs/api.md#lists) as the tests read them: {@link walkList} follows `nextCursor`
 * through every page of a list, checking the page contract on the way. The one list walker of
 * the suite; test/lists.test.ts checks every list route of the route table with it.
 */
import assert from 'node:assert/strict';

/** A GET returning the status and the parsed JSON body (`Space.call`, the child harness's `call`…). */
export type GetJson = (path: string) => Promise<{ status: number; body: unknown; text: string }>;

/** One page of a list answer. */
export interface ListPage { object: 'list'; hasMore: boolean; nextCursor: string | null; [items: string]: unknown }

/** Every item of a walk, in list order, and the size of each page. */
export interface ListWalk<T> { items: T[]; sizes: number[] }

/** Pages followed at most (a cursor that never ends the list fails the walk). */
const MAX_PAGES = 10_000;

/**
 * Walks every page of the list at `path` (which may hold a query string of its own) with page
 * size `limit`, following `nextCursor`. Each page must answer 200 with exactly `object: "list"`,
 * `hasMore`, `nextCursor` and the array `key`; `hasMore` true exactly when `nextCursor` is a
 * string; a page holds `limit` items unless it is the last.
 * @returns the items (typed by the caller, as `T`) and the page sizes.
 */
export async function walkList<T = Record<string, unknown>>(get: GetJson, path: string, key: string, limit: number): Promise<ListWalk<T>> {
  const items: T[] = [];
  const sizes: number[] = [];
  const sep = path.includes('?') ? '&' : '?';
  let cursor: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const url: string = `${path}${sep}limit=${limit}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const r = await get(url);
    assert.equal(r.status, 200, `${url}: ${r.text}`);
    const body = r.body as ListPage;
    assert.deepEqual(Object.keys(body).sort(), ['hasMore', key, 'nextCursor', 'object'].sort(), url);
    assert.equal(body.object, 'list', url);
    const got = body[key] as T[];
    assert.ok(Array.isArray(got), url);
    items.push(...got);
    sizes.push(got.length);
    if (!body.hasMore) {
      assert.equal(body.nextCursor, null, `${url}: the last page has no cursor`);
      return { items, sizes };
    }
    assert.equal(typeof body.nextCursor, 'string', `${url}: hasMore comes with a cursor`);
    assert.equal(got.length, limit, `${url}: a page before the last is full`);
    cursor = body.nextCursor;
  }
  throw new Error(`${path}: pagination did not end after ${MAX_PAGES} pages`);
}

/** The ids of `items`, in order. */
export const idsOf = (items: ReadonlyArray<{ id: string }>): string[] => items.map((x) => x.id);
