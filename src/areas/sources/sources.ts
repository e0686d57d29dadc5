/**
 * The sources area (docs/api.md#sources, docs/sources.md#credentials, docs/sources.md#search): create (ingested
 * synchronously), list, inspect, update, delete, rescan, and BM25 search over the workspace's chunks. A source is
 * `processing` (and visible as such) while it is ingested.
 */
import { s } from '../../http/schema.js';
import { ApiError, invalid } from '../../http/errors.js';
import { MiB } from '../../http/route.js';
import { route, type Ctx } from '../../domain/route.js';
import { newId } from '../../core/ids.js';
import { iso } from '../../core/clock.js';
import { nextTurn } from '../../core/turns.js';
import type { JsonText } from '../../store/log/log.js';
import type { SecretBox } from '../../core/secrets.js';
import type { IngestRequest } from '../../ingest/ingest.js';
import { CREATE_TYPES, SOURCE_TYPES, isFetchedType, provisionalType } from '../../ingest/kinds.js';
import { listAnswer, listSchema, notFound, pageParams, paginate } from '../common.js';
import {
  AUTH_TYPES, DEFAULT_AUTH, DEFAULT_PUBLIC_DOCS, SOURCE_STATUSES, ingestionResult, ingestionResultSchema, normalizeUrl,
  sourceSummarySchema, sourceView, type Source,
} from './model.js';
import { CLEARED_URL_CHANGED, clearCredential, credentialOrigins, RESERVED_HEADERS } from './credentials.js';
import { SourceScans, UNTITLED, defaultName, type ScanDeps } from './scans.js';
import { SOURCE_DOCS } from './docs.js';
import { SLUG_PATTERN, patchPublicDocs, publishRefusal, publishRefusalText } from './publicDocs.js';
import type { Store } from '../../store/store.js';
import type { Workspace } from '../../domain/workspace.js';


/** A name left out (at creation) or empty is derived from the document (docs/sources.md#naming). */
const DERIVED = 'the document\'s own title, else the URL\'s host, else `Untitled source`';
const createBody = s.named('CreateSourceRequest', s.object({
  type: s.optional(s.enum(CREATE_TYPES, { default: 'auto', description: SOURCE_DOCS.type })),
  name: s.optional(s.string({ maxLength: 200, description: `Kept by rescans. Left out or empty: ${DERIVED}.` })),
  url: s.optional(s.string({ maxLength: 2000, format: 'uri', description: SOURCE_DOCS.url })),
  content: s.optional(s.string({ maxLength: 2_000_000, description: SOURCE_DOCS.content })),
}, {
  requireAnyOf: ['url', 'content'], description: SOURCE_DOCS.create,
  cases: { by: 'type', list: [
    {
      when: CREATE_TYPES.filter(isFetchedType), require: ['url'], forbid: ['content'],
      forbidden: (t) => `cannot be given with type ${t}: a ${t} source is fetched from its url`,
    },
    { when: CREATE_TYPES.filter((t) => !isFetchedType(t)) },
  ] },
}));
const updateBody = s.named('UpdateSourceRequest', s.object({
  name: s.optional(s.string({ maxLength: 200,
    description: `A given name is kept by rescans. Empty: back to the derived name, ${DERIVED}.` })),
  url: s.optional(s.string({ maxLength: 2000, format: 'uri', description: SOURCE_DOCS.updateUrl })),
  auth: s.optional(s.nullable(s.named('SourceAuthRequest', s.object({
    type: s.enum(AUTH_TYPES),
    secret: s.string({ minLength: 1, maxLength: 4096 }),
    headerName: s.optional(s.string({
      minLength: 1, maxLength: 100, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
      description: 'The header that carries the secret; type `header` only.',
    })),
    username: s.optional(s.string({ minLength: 1, maxLength: 200, description: 'Type `basic` only.' })),
  }, {
    description: SOURCE_DOCS.auth,
    cases: { by: 'type', list: [
      { when: ['bearer'], forbid: ['headerName', 'username'] },
      { when: ['header'], require: ['headerName'], forbid: ['username'] },
      { when: ['basic'], require: ['username'], forbid: ['headerName'] },
    ] },
  })))),
  publicDocs: s.optional(s.object({
    enabled: s.optional(s.boolean()), published: s.optional(s.boolean({
      description: 'Served at `/docs/{slug}` without auth when `enabled`, `published` and `slug` are all set.' })),
    slug: s.optional(s.nullable(s.string({ minLength: 2, maxLength: 63, pattern: SLUG_PATTERN,
      description: SOURCE_DOCS.slug }))),
  }, { description: SOURCE_DOCS.publicDocs })),
}));
const listQuery = s.object({ status: s.optional(s.enum(SOURCE_STATUSES)), type: s.optional(s.enum(SOURCE_TYPES)),
  ...pageParams });
const searchQuery = s.object({ q: s.string({ minLength: 1, maxLength: 500,
  description: 'Search text; its first 32 distinct terms are used (words after tokenizing: stop words dropped, repeats '
    + 'counted once).' }), limit: s.optional(s.integer({ minimum: 1, maximum: 50 })) });
const searchResult = s.named('SearchResult', s.object({
  object: s.enum(['search_result'] as const), sourceId: s.string(), documentId: s.string(),
    title: s.nullable(s.string()),
  score: s.number({ description: 'BM25 score, higher is better' }), text: s.string(),
}));

export interface SourceDeps extends ScanDeps {
  secrets: SecretBox;
  /** The served workspaces, for the server-wide uniqueness of public-docs slugs (docs/web.md#public-docs). */
  store: Store;
  /** `PUBLIC_URL` (or `http://HOST:PORT`), without a trailing slash: the base of `publicDocs.url`. */
  publicUrl: string;
}

export function sourceRoutes(deps: SourceDeps) {
  const scans = new SourceScans(deps);
  const load = (ctx: Ctx<unknown, unknown>): Source => {
    const src = ctx.ws.get('source', ctx.params.sourceId);
    if (!src) throw notFound();
    return src;
  };
  const base = '/api/v1/sources';
  return [
    route({
      method: 'POST', path: base, operationId: 'createSource', tag: 'Sources', scope: 'sources:write',
        bodyLimit: 16 * MiB,
      summary: 'Create a source from a URL, pasted content, or both, and ingest it synchronously (status ready, or '
        + 'failed with error). '
        + 'With both, the content is ingested and the URL kept as inputUrl (fetched by rescans, not now). '
        + '409 when the URL is another source\'s, or when the source is deleted while it is being ingested.',
      body: createBody, errors: [409],
      success: { status: 201, schema: ingestionResultSchema, description: 'The created source and what was ingested.' },
      handler: async (ctx) => {
        const b = ctx.body;
        const type = b.type ?? 'auto';
        // Pasted content is kept for rescans only when there is no url: a source with a url is fetched by its rescans
        // (docs/sources.md#url-and-content).
        const keepContent = b.url === undefined;
        // Serializing a large pasted content and committing it are main-thread steps of their own (the url check and
        // the reservation stay one); a body parsed off the main thread brings its JSON text (src/http/largeBody.ts).
        const member = keepContent ? ctx.bodyJson.get('content') : undefined;
        let contentJson: JsonText | undefined = member && ['{"content":', member, '}'];
        if (keepContent && !contentJson && b.content !== undefined && b.content.length > 64 * 1024) {
          await nextTurn();
          contentJson = JSON.stringify({ content: b.content });
          await nextTurn();
        }
        const inputUrl = b.url === undefined ? null : normalizeUrl(b.url);
        if (inputUrl && ctx.ws.sources.byUrl.has(inputUrl)) throw new ApiError('conflict',
          'a source with this url already exists');
        const now = iso(ctx.now);
        const nameGiven = b.name !== undefined && b.name !== '';
        const src: Source = {
          id: newId(), name: nameGiven ? b.name! : UNTITLED, type: provisionalType(type, inputUrl, b.content),
            status: 'processing',
          inputUrl, error: null, auth: { ...DEFAULT_AUTH }, publicDocs: { ...DEFAULT_PUBLIC_DOCS }, createdAt: now,
            updatedAt: now,
          nameGiven, requestedType: type,
        };
        // The processing state is durable and visible (and reserves the url) while ingestion runs: the scan commits it
        // first (src/areas/sources/scans.ts).
        const tx = ctx.tx();
        tx.put('source', src.id, src);
        if (keepContent) tx.put('source_content', src.id, { content: b.content! }, contentJson);
        // What is ingested now: the pasted content when there is some (nothing is fetched), else the url.
        const done = await scans.scan(ctx, src, b.content !== undefined ? { type, content: b.content } : { type,
          url: inputUrl! });
        return { status: 201, body: ingestionResult(done.src, done.idx) };
      },
    }),
    route({
      method: 'GET', path: base, operationId: 'listSources', tag: 'Sources', scope: 'sources:read',
      summary: 'List sources, newest first, filtered by status or type.',
      query: listQuery,
      success: { status: 200, schema: listSchema('sources', sourceSummarySchema), description: 'A page of sources.' },
      handler: (ctx) => {
        const q = ctx.query;
        const page = paginate(ctx, 'sources', ctx.ws.sources.order, 'desc', q, (id) => ctx.ws.get('source', id),
          (x) => (q.status === undefined || x.status === q.status) && (q.type === undefined || x.type === q.type));
        return listAnswer('sources', page, page.items.map(sourceView));
      },
    }),
    route({
      method: 'GET', path: `${base}/search`, operationId: 'searchSources', tag: 'Sources', scope: 'sources:read',
      summary: 'BM25 search over the chunks of every source of the workspace; best chunks first.',
      query: searchQuery,
      success: { status: 200, schema: s.named('SearchResultList', s.object({ object: s.enum(['list'] as const),
        hasMore: s.boolean(), nextCursor: s.nullable(s.string()), results: s.array(searchResult) })),
        description: 'The best chunks.' },
      handler: (ctx) => {
        const hits = ctx.ws.sources.search.index.search(ctx.query.q, ctx.query.limit ?? 10);
        const results = hits.map((h) => ({ object: 'search_result', sourceId: h.sourceId, documentId: h.documentId,
          title: h.title, score: h.score, text: h.text }));
        return { status: 200, body: { object: 'list', hasMore: false, nextCursor: null, results } };
      },
    }),
    route({
      method: 'GET', path: `${base}/{sourceId}`, operationId: 'retrieveSource', tag: 'Sources', scope: 'sources:read',
      summary: 'Inspect a source: its summary, counts, documents and endpoints (first 1,000 of each).',
      success: { status: 200, schema: ingestionResultSchema, description: 'The source and what was ingested.' },
      handler: (ctx) => {
        const src = load(ctx);
        return { status: 200, body: ingestionResult(src, ctx.ws.get('source_index', src.id)) };
      },
    }),
    route({
      method: 'PATCH', path: `${base}/{sourceId}`, operationId: 'updateSource', tag: 'Sources', scope: 'sources:write',
      summary: 'Update name (empty: back to the name derived from the document), url, auth (secret encrypted, never '
        + 'returned) or publicDocs '
        + '(a slug unique on the server, 409 when another source has it; publicDocs.url is derived from it; 409 when '
        + 'it would start serving a source that is not ready or has no documents). '
        + 'A new url is fetched by the next rescan; set on a source made from pasted content, it replaces the content '
        + 'as what rescans ingest. '
        + 'A credential is bound to the origin of the source\'s server URL when it is set: changing url (without '
        + 'setting auth again) clears it, '
        + 'with auth.lastError saying why.',
      body: updateBody, errors: [409],
      success: { status: 200, schema: s.named('SourceResponse', s.object({ source: sourceSummarySchema })),
        description: 'The updated source.' },
      handler: (ctx) => {
        const src = load(ctx);
        const b = ctx.body;
        let next: Source = { ...src, updatedAt: iso(ctx.now) };
        if (b.name !== undefined) {
          next.nameGiven = b.name !== '';
          next.name = next.nameGiven ? b.name : defaultName(src);
        }
        if (b.url !== undefined) {
          const u = normalizeUrl(b.url);
          const other = ctx.ws.sources.byUrl.get(u);
          if (other !== undefined && other !== src.id) throw new ApiError('conflict',
            'a source with this url already exists');
          // From now on rescans fetch the url: pasted content kept for them is no longer used.
          if (src.inputUrl === null) ctx.tx().del('source_content', src.id);
          next.inputUrl = u;
          // The credential was bound to where the old url led; it does not follow the source elsewhere.
          if (u !== src.inputUrl && next.credential && b.auth === undefined) next =
            clearCredential(next, CLEARED_URL_CHANGED);
        }
        if (b.auth === null) { next.auth = { ...DEFAULT_AUTH }; delete next.credential; }
        else if (b.auth !== undefined) {
          const a = b.auth;
          // Which of headerName and username each type needs is the body schema's (`cases`).
          if (a.headerName !== undefined && RESERVED_HEADERS.has(a.headerName.toLowerCase())) throw invalid(
            `auth.headerName ${a.headerName} cannot carry a credential`);
          const origins = credentialOrigins(next.inputUrl, ctx.ws.get('source_index', src.id)?.serverUrl);
          next.credential = { type: a.type, headerName: a.headerName, username: a.username,
            sealed: deps.secrets.seal(a.secret, `${ctx.ws.id}/${src.id}`), origins };
          next.auth = { configured: true, hasSecret: true, lastError: null, lastVerifiedAt: null, status: 'unverified',
            type: a.type };
        }
        if (b.publicDocs !== undefined) {
          const workspaces = (deps.store as Store<Workspace>).workspaces.values();
          next.publicDocs = patchPublicDocs(workspaces, deps.publicUrl, src, b.publicDocs);
          const refused = publishRefusal(src, next.publicDocs, ctx.ws.get('source_index', src.id));
          if (refused) throw new ApiError('conflict', publishRefusalText(refused));
        }
        ctx.tx().put('source', src.id, next);
        return { status: 200, body: { source: sourceView(next) } };
      },
    }),
    route({
      method: 'DELETE', path: `${base}/{sourceId}`, operationId: 'deleteSource', tag: 'Sources', scope: 'sources:write',
      summary: 'Delete a source with its documents, endpoints, chunks and credential.',
      success: { status: 200, schema: s.named('DeletedSource', s.object({ object: s.enum(['source'] as const),
        id: s.string(), deleted: s.boolean() })), description: 'The deleted source\'s id.' },
      handler: (ctx) => {
        const src = load(ctx);
        const tx = ctx.tx();
        tx.del('source', src.id); tx.del('source_content', src.id); tx.del('source_index', src.id);
        return { status: 200, body: { object: 'source', id: src.id, deleted: true } };
      },
    }),
    route({
      method: 'POST', path: `${base}/{sourceId}/rescan`, operationId: 'rescanSource', tag: 'Sources',
        scope: 'sources:write',
      summary: 'Fetch the url (a source made from pasted content and a url included), or re-parse the pasted content '
        + 'of a source without a url, '
        + 'and replace what was ingested; 409 while one runs, or when the source is deleted meanwhile.',
      body: s.object({}), bodyOptional: true, errors: [409],
      success: { status: 200, schema: ingestionResultSchema, description: 'The source and what was ingested.' },
      handler: async (ctx) => {
        const src = load(ctx);
        if (scans.isRunning(ctx.ws, src.id)) throw new ApiError('conflict', 'a scan of this source is already running');
        const content = ctx.ws.get('source_content', src.id)?.content;
        const processing: Source = { ...src, status: 'processing', updatedAt: iso(ctx.now) };
        ctx.tx().put('source', src.id, processing);
        const type = (src.requestedType ?? src.type) as IngestRequest['type'];
        // A source with a url is fetched; only one without a url re-parses its pasted content.
        const done = await scans.scan(ctx, processing, src.inputUrl !== null ? { type, url: src.inputUrl } : { type,
          content });
        return { status: 200, body: ingestionResult(done.src, done.idx) };
      },
    }),
  ];
}
