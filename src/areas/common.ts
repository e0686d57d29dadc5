/**
 * What every API area shares: list query parameters and responses (docs/api.md#lists), the priority enumeration
 * (docs/api.md#priorities), text helpers.
 */
import type { EventStreams } from './events/stream.js';
import { s, type TSchema } from '../http/schema.js';
import { invalid } from '../http/errors.js';
import { NotFoundError } from '../core/errors.js';
import { SortedIndex } from '../store/memory/sorted.js';
import type { Ctx } from '../domain/route.js';
import type { Store } from '../store/store.js';
import type { Config } from '../core/config.js';
import type { SecretBox } from '../core/secrets.js';
import type { Logger } from '../core/logger.js';
import type { Clock } from '../core/clock.js';
import type { ClientAddresses } from '../http/clientAddress.js';
import type { Analyzer } from '../ingest/analyze.js';
import type { UsageCounter } from './usage/counter.js';
import type { SourceIndexRec } from '../ingest/types.js';

/** What the areas' routes are built with (src/server/routes.ts builds the table from these). */
export interface RouteDeps {
  store: Store; config: Config; secrets: SecretBox; logger: Logger; analyzer: Analyzer; usage: UsageCounter;
  /** `PUBLIC_URL` (or `http://HOST:PORT` with the bound port), without a trailing slash. */
  publicUrl: string;
  /** The open event streams (docs/api.md#event-stream). */
  streams: EventStreams;
  /** The clock (the widget's sessions and limits); client addresses (`TRUST_PROXY`) for per-address limits. */
  clock: Clock; clients: ClientAddresses;
  /**
   * Where each document's section is on a source's public docs pages (src/web/docsModel.ts `links`), given by the
   * server so that answers' citations link there; without it citations carry no url.
   */
  docsLinks?: (src: { name: string; publicDocs: { slug: string | null } }, idx: SourceIndexRec) =>
    ReadonlyMap<string, { anchor: string; page: number }>;
}

export const PRIORITIES = ['urgent', 'high', 'medium', 'low'] as const;
export type Priority = (typeof PRIORITIES)[number];
export const priority = s.named('PriorityLevel', s.enum(PRIORITIES, {
  description: 'urgent (rank 1) … low (rank 4); default medium' }));

/** `limit` and `cursor` (docs/api.md#lists). */
export const pageParams = {
  limit: s.optional(s.integer({ minimum: 1, maximum: 100, description: 'Page size, 1–100 (default 20).' })),
  cursor: s.optional(s.string({ maxLength: 2048, description: 'Opaque `nextCursor` of the previous page.' })),
};
export const DEFAULT_LIMIT = 20;

/**
 * The schema of a list response holding `items` under `name`. Of a named item `X` it is the component `XList`
 * (docs/api.md#openapi-document).
 */
export function listSchema(name: string, item: TSchema): TSchema {
  const list = s.object({
    object: s.enum(['list'] as const),
    hasMore: s.boolean({ description: 'More items follow: ask again with `cursor` = `nextCursor`.' }),
    nextCursor: s.nullable(s.string({ description: 'The cursor of the next page; null on the last page.' })),
    [name]: s.array(item),
  });
  return item.kind === 'ref' ? s.named(`${item.name}List`, list) : list;
}

export interface Page<R> { items: R[]; hasMore: boolean; nextCursor: string | null }

/** The 200 answer of a list (docs/api.md#lists): `page`'s `hasMore` and `nextCursor`, and `items` under `name`. */
export const listAnswer = (name: string, page: Page<unknown>, items: unknown[]) => ({
  status: 200 as const, body: { object: 'list', hasMore: page.hasMore, nextCursor: page.nextCursor, [name]: items },
});

/**
 * Keyset pagination over `index` (docs/api.md#lists): decodes `cursor` (bound to the workspace and `list`), walks
 * `order`, keeps up to `limit` records passing `keep`, and ends at the first for which `stop` is true.
 * @throws ApiError 400 for a cursor of another list or workspace.
 */
export function paginate<R>(
  ctx: Ctx<unknown, unknown>, list: string, index: SortedIndex, order: 'asc' | 'desc',
  q: { limit?: number; cursor?: string }, get: (id: string) => R | undefined, keep: (r: R) => boolean = () => true,
  stop?: (r: R) => boolean,
): Page<R> {
  const limit = q.limit ?? DEFAULT_LIMIT;
  const from = q.cursor === undefined ? undefined : ctx.cursors.decode(ctx.ws.id, list, q.cursor);
  const items: R[] = [];
  // The position of the last item kept: its key (the cursor) is made once, for the next page only.
  let last = -1;
  let hasMore = false;
  for (const at of order === 'desc' ? index.desc(from) : index.asc(from)) {
    const r = get(index.idAt(at));
    if (r === undefined) continue;
    if (stop !== undefined && stop(r)) break;
    if (!keep(r)) continue;
    if (items.length === limit) { hasMore = true; break; }
    items.push(r);
    last = at;
  }
  return { items, hasMore, nextCursor: hasMore ? ctx.cursors.encode(ctx.ws.id, list, index.keyAt(last)) : null };
}

/** A record that is missing or belongs to another workspace: answered 404 (docs/security.md#tenant-isolation). */
export const notFound = (): NotFoundError => new NotFoundError();

/** Collapses whitespace and cuts to `max` UTF-16 units without splitting a surrogate pair. */
export function preview(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  let cut = flat.slice(0, max);
  const last = cut.charCodeAt(max - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return cut;
}

/** Copies `o` without its undefined properties (a field without a value is omitted,
 * docs/decisions.md#absent-values-are-omitted). */
export function compact<O extends Record<string, unknown>>(o: O): O {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/**
 * Cursor pagination over a fixed, ordered array (statuses…): the cursor is the signed position of the last item.
 * @throws ApiError 400 for a cursor of another list or workspace.
 */
export function paginateArray<R>(ctx: Ctx<unknown, unknown>, list: string, items: readonly R[],
  q: { limit?: number; cursor?: string }): Page<R> {
  const limit = q.limit ?? DEFAULT_LIMIT;
  let from = 0;
  if (q.cursor !== undefined) {
    const pos = Number(ctx.cursors.decode(ctx.ws.id, list, q.cursor));
    if (!Number.isSafeInteger(pos) || pos < 0) throw invalid('cursor is invalid', 'query');
    from = pos;
  }
  const page = items.slice(from, from + limit);
  const hasMore = from + limit < items.length;
  return { items: page, hasMore, nextCursor: hasMore ? ctx.cursors.encode(ctx.ws.id, list, String(
    from + limit)) : null };
}
