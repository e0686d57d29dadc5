/**
 * Source records and their API views (docs/api.md#source-object, docs/api.md#ingestion-result). The stored record holds
 * the public summary plus internal fields (the sealed credential, the API's server URL); views copy only the spec's
 * fields.
 */
import { s } from '../../http/schema.js';
import { invalid } from '../../http/errors.js';
import type { Sealed } from '../../core/secrets.js';
import type { SourceIndexRec } from '../../domain/workspace.js';
import { SOURCE_TYPES, type SourceType } from '../../ingest/kinds.js';

export const SOURCE_STATUSES = ['pending', 'processing', 'ready', 'failed'] as const;
export const AUTH_STATUSES = ['not_configured', 'unverified', 'valid', 'invalid'] as const;
export const AUTH_TYPES = ['bearer', 'header', 'basic'] as const;

export interface SourceAuth {
  configured: boolean; hasSecret: boolean; lastError: string | null; lastVerifiedAt: string | null;
  status: (typeof AUTH_STATUSES)[number]; type: (typeof AUTH_TYPES)[number] | null;
}
export interface PublicDocs { enabled: boolean; published: boolean; slug: string | null; url: string | null; [
  k: string]: unknown }
export interface Credential {
  type: (typeof AUTH_TYPES)[number]; headerName?: string; username?: string; sealed: Sealed;
  /** The origins the credential may be sent to, fixed when it was set (see credentials.ts); absent in records stored
   * before origins were recorded, which allow none. */
  origins?: string[];
}

export interface Source {
  id: string; name: string; type: SourceType; status: (typeof SOURCE_STATUSES)[number];
  inputUrl: string | null; error: string | null; auth: SourceAuth; publicDocs: PublicDocs;
  createdAt: string; updatedAt: string | null;
  /** Internal: the encrypted credential for live API checks. */
  credential?: Credential;
  /** Internal: whether `name` was given (a rescan keeps it) or derived from the document. */
  nameGiven?: boolean;
  /**
   * Internal: the name derived from the last ingestion (the document's title, else the URL's host), which an empty
   * `name` returns to; absent in records stored before it was kept.
   */
  derivedName?: string;
  /** Internal: the type asked for at creation (`auto` included), which a rescan asks for again. */
  requestedType?: string;
}

export const DEFAULT_AUTH: SourceAuth = { configured: false, hasSecret: false, lastError: null, lastVerifiedAt: null,
  status: 'not_configured', type: null };
export const DEFAULT_PUBLIC_DOCS: PublicDocs = { enabled: false, published: false, slug: null, url: null };

const isoOrNull = s.nullable(s.string({ format: 'date-time' }));
/** Ids of documents and endpoints are made anew by every ingestion. */
const RESCAN_IDS = 'A rescan replaces every document and endpoint of the source, with new ids: read them again after '
  + 'one.';
export const sourceSummarySchema = s.named('SourceSummary', s.object({
  object: s.enum(['source'] as const),
  id: s.string({ format: 'uuid' }),
  name: s.string(),
  type: s.enum(SOURCE_TYPES, { description: 'The stored type: the detected one when `auto` was asked for.' }),
  status: s.enum(SOURCE_STATUSES, {
    description: '`processing` while it is ingested, then `ready`, or `failed` with `error`.' }),
  inputUrl: s.optional(s.nullable(s.string({ format: 'uri',
    description: 'The normalized URL; null for pasted content.' }))),
  error: s.optional(s.nullable(s.string({ description: 'Why the last ingestion failed; null otherwise.' }))),
  auth: s.optional(s.named('SourceAuth', s.object({
    configured: s.boolean(), hasSecret: s.boolean(), lastError: s.nullable(s.string()),
    lastVerifiedAt: isoOrNull, status: s.enum(AUTH_STATUSES), type: s.nullable(s.enum(AUTH_TYPES)),
  }, { description: 'The state of the credential used by live checks; the secret itself is never returned.' }))),
  publicDocs: s.named('PublicDocsMetadata', s.object({ enabled: s.boolean(), published: s.boolean(), slug: s.nullable(
    s.string()), url: s.nullable(s.string()) }, { additionalProperties: true })),
  createdAt: s.string({ format: 'date-time' }),
  updatedAt: isoOrNull,
}));
export const ingestionResultSchema = s.named('IngestionResult', s.object({
  source: sourceSummarySchema,
  counts: s.named('IngestionCounts', s.object({ chunks: s.integer({ minimum: 0 }), documents: s.integer({
    minimum: 0 }), endpoints: s.integer({ minimum: 0 }) }, {
    description: 'The totals, even where `documents` and `endpoints` list only the first 1,000.',
  })),
  documents: s.array(s.named('SourceDocument', s.object({
    id: s.string({ description: `The document's id. ${RESCAN_IDS}` }), kind: s.nullable(s.string()),
      title: s.nullable(s.string()),
  })), { description: 'The first 1,000 documents.' }),
  endpoints: s.array(s.named('SourceEndpoint', s.object({
    id: s.string({ description: `The endpoint's id, for live checks (\`endpointId\`). ${RESCAN_IDS}` }),
      method: s.nullable(s.string()), path: s.nullable(s.string()),
  })), { description: 'The first 1,000 endpoints.' }),
}, { description: 'A source and what its last successful ingestion produced.' }));

/** The SourceSummary view: the spec's fields, nothing internal. */
export function sourceView(src: Source): Record<string, unknown> {
  return {
    object: 'source', id: src.id, name: src.name, type: src.type, status: src.status, inputUrl: src.inputUrl,
      error: src.error,
    auth: { ...src.auth }, publicDocs: { ...src.publicDocs }, createdAt: src.createdAt, updatedAt: src.updatedAt,
  };
}

/** Items listed in full by the ingestion result; `counts` always give the totals (README "Sources"). */
export const MAX_LISTED = 1000;

/** The Ingestion result view (docs/api.md#ingestion-result): summary, counts, documents and endpoints (first {@link
 * MAX_LISTED} each). */
export function ingestionResult(src: Source, idx: SourceIndexRec | undefined): Record<string, unknown> {
  return {
    source: sourceView(src),
    counts: { chunks: idx?.chunks.length ?? 0, documents: idx?.documents.length ?? 0,
      endpoints: idx?.endpoints.length ?? 0 },
    documents: (idx?.documents ?? []).slice(0, MAX_LISTED).map((d) => ({ id: d.id, kind: d.kind, title: d.title })),
    endpoints: (idx?.endpoints ?? []).slice(0, MAX_LISTED).map((e) => ({ id: e.id, method: e.method, path: e.path })),
  };
}

/**
 * Normalizes a source URL for storage and duplicate detection: WHATWG parsing (lower-case host, default port dropped,
 * IP forms canonical), fragment removed.
 * @throws ApiError 400 for anything but an absolute http(s) URL.
 */
export function normalizeUrl(raw: string, field = 'url'): string {
  let u: URL;
  try { u = new URL(raw); } catch { throw invalid(`${field} must be an absolute http or https URL`); }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalid(
    `${field} must use http or https, not ${u.protocol.replace(/:$/, '')}`);
  if (u.username || u.password) throw invalid(`${field} must not contain credentials; configure them with auth`);
  u.hash = '';
  return u.href;
}
