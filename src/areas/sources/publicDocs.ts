/**
 * Public docs of a source (docs/web.md#public-docs, docs/api.md#update-source): the slug rule, the server-wide
 * uniqueness of slugs, the derived `publicDocs.url`, and finding the published source of a slug for the `/docs/{slug}`
 * pages.
 */
import { ApiError } from '../../http/errors.js';
import type { Workspace } from '../../domain/workspace.js';
import type { SourceIndexRec } from '../../ingest/types.js';
import type { PublicDocs, Source } from './model.js';

/** A slug: 2–63 characters, lower-case letters, digits and `-`, not starting with `-`. */
export const SLUG_PATTERN = '^[a-z0-9][a-z0-9-]{1,62}$';
const SLUG = new RegExp(SLUG_PATTERN);

/** Whether `text` is a well-formed slug. */
export const isSlug = (text: string): boolean => SLUG.test(text);

/** `publicUrl` (no trailing slash) + `/docs/{slug}`, or null without a slug. */
export function docsUrl(publicUrl: string, slug: string | null): string | null {
  return slug === null ? null : `${publicUrl}/docs/${slug}`;
}

/** The workspaces being served (what `Store.workspaces` holds); only their `sources` table is read. */
export type Workspaces = Iterable<Workspace>;

/**
 * The source holding `slug`, in any workspace of the server, published or not: O(sources on the server), which is small
 * next to the write that follows.
 */
export function slugHolder(workspaces: Workspaces, slug: string): { ws: Workspace; src: Source } | undefined {
  for (const ws of workspaces) {
    for (const src of ws.db.table('source').values()) if (src.publicDocs.slug === slug) return { ws, src };
  }
  return undefined;
}

/** The fields of a PATCH's `publicDocs` (docs/api.md#update-source); `url` is never taken from the client. */
export interface PublicDocsPatch { enabled?: boolean; published?: boolean; slug?: string | null }

/**
 * The source's `publicDocs` after a PATCH: given fields merged, `url` derived from the slug. Checked synchronously,
 * before the write is queued, so two requests cannot both take a slug.
 * @throws ApiError 409 `conflict` when another source of the server (any workspace) has the slug.
 */
export function patchPublicDocs(workspaces: Workspaces, publicUrl: string, src: Source,
  p: PublicDocsPatch): PublicDocs {
  const next: PublicDocs = { ...src.publicDocs };
  if (p.enabled !== undefined) next.enabled = p.enabled;
  if (p.published !== undefined) next.published = p.published;
  if (p.slug !== undefined) next.slug = p.slug;
  if (next.slug !== null && next.slug !== src.publicDocs.slug) {
    const holder = slugHolder(workspaces, next.slug);
    if (holder && holder.src.id !== src.id) throw new ApiError('conflict',
      'publicDocs.slug is taken by another source on this server');
  }
  next.url = docsUrl(publicUrl, next.slug);
  return next;
}

/**
 * Why `src` may not start being served with `next` as its `publicDocs` (docs/web.md#public-docs): a source that is
 * not served yet is published only when it is `ready` with at least one document. `not_ready` names its status,
 * `empty` says it has no documents; null when it may (or stays as served or unserved as it was).
 */
export function publishRefusal(src: Source, next: PublicDocs, idx: SourceIndexRec | undefined):
  { why: 'not_ready'; status: Source['status'] } | { why: 'empty' } | null {
  const served = next.enabled && next.published && next.slug !== null;
  if (!served || isServed(src)) return null;
  if (src.status !== 'ready') return { why: 'not_ready', status: src.status };
  if ((idx?.documents.length ?? 0) === 0) return { why: 'empty' };
  return null;
}

/** The API's sentence for a {@link publishRefusal} (the detail of its 409 `conflict`). */
export function publishRefusalText(r: NonNullable<ReturnType<typeof publishRefusal>>): string {
  return r.why === 'empty' ? 'publicDocs cannot be published: the source has no documents'
    : `publicDocs cannot be published: the source is ${r.status}, not ready`;
}

/** Whether `src` is served at `/docs/{slug}`: enabled, published, with a slug. */
export const isServed = (src: Source): boolean => src.publicDocs.enabled && src.publicDocs.published &&
  src.publicDocs.slug !== null;

/** The published source of `slug` and its ingestion output; undefined when unknown, unpublished or disabled. */
export function publishedSource(workspaces: Workspaces, slug: string): {
  ws: Workspace; src: Source; idx: SourceIndexRec | undefined } | undefined {
  if (!isSlug(slug)) return undefined;
  const h = slugHolder(workspaces, slug);
  if (!h || !isServed(h.src)) return undefined;
  return { ...h, idx: h.ws.db.get('source_index', h.src.id) };
}
