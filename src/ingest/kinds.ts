/**
 * The registry of source kinds (docs/sources.md#source-types): every `type`, how its input arrives, how `auto`
 * recognises it and how it is parsed. The `type` enums, unions and every dispatch on a type derive from
 * {@link SOURCE_KINDS}: a new kind is its parser plus one entry here. Pure data, read by the worker threads too.
 */
import { MAX_DOCUMENTS, type ParsedSource } from './types.js';
import type { Obj } from './parsers/values.js';
import { isHtml, isWsdlRoot, looksLikeGraphqlSdl, looksLikeProto } from './detect/sniff.js';
import { parseOpenApi } from './parsers/openapi.js';
import { parseAsyncApi } from './parsers/asyncapi.js';
import { isPostmanCollection, parsePostman } from './parsers/postman.js';
import { isIntrospection, parseGraphql, parseGraphqlIntrospection } from './parsers/graphql.js';
import { parseProto } from './parsers/proto.js';
import { parseWsdl } from './parsers/wsdl.js';
import { parseJsonDocuments } from './parsers/json.js';
import { parseMarkdown } from './parsers/markdown.js';
import { parseHtml } from './parsers/html.js';

/**
 * Content as detection (or an explicit type) hands it to a kind's `parse`: the text as given (BOM included), the parsed
 * JSON/YAML value when one was parsed, for `text` whether it is HTML (undefined: not decided, see {@link isHtml}), and
 * a fetched document's lower-cased media type.
 */
export interface Content { text: string; value?: unknown; html?: boolean; mediaType?: string }

/**
 * How `auto` recognises a kind (docs/sources.md#type-detection). Detection runs in fixed steps (structured text, XML,
 * other text); in each, the kinds taking part are tried by `rank` (lowest first, ties in registry order).
 */
export interface KindDetection {
  rank: number;
  /**
   * A parsed JSON or YAML value, by its top-level keys: `markers` name the kind by their presence alone (a document
   * that names a kind so but does not parse fails typed as it, docs/sources.md#failed-sources); `test` decides beyond
   * them and needs the top-level `keys` (a YAML text with no classifying key at its top is not parsed for detection).
   */
  value?: { markers?: readonly string[]; keys?: readonly string[]; test?: (value: Obj) => boolean };
  /** For a text that starts with `<`: true when its root element makes it this kind. */
  xmlRoot?: (text: string) => boolean;
  /** For a text no earlier step claimed (`text` without BOM and leading white space, `head` its first 8 KiB). */
  text?: (text: string, head: string) => boolean;
}

/** `name`: the stored `type`; `label`: what messages call it (`the content is not an OpenAPI document`). */
interface KindBase { readonly name: string; readonly label: string }

/** A kind parsed from text, pasted or fetched from a URL. */
export interface ContentKind extends KindBase {
  readonly input: 'content';
  /**
   * With the type given explicitly, how the text is read before it is parsed (docs/sources.md#explicit-types):
   * `classified` — as JSON or YAML that must classify as this kind; `value` — as any JSON or YAML value;
   * `value-if-object` — as JSON or YAML when it starts with `{`, else as text. Absent: the text as it is.
   */
  readonly explicit?: 'classified' | 'value' | 'value-if-object';
  /** How `auto` recognises it; absent for the kinds detection falls back to (`json`, `text`). */
  readonly detect?: KindDetection;
  /** @throws IngestError, with line and column where the syntax is at fault. */
  readonly parse: (content: Content) => ParsedSource;
}

/** A kind made by fetching its URL (src/ingest/ingest.ts has its fetcher); `url`: true for a URL `auto` takes as it. */
export interface FetchedKind extends KindBase { readonly input: 'fetched'; readonly url?: (url: string) => boolean }

/** A value of the stored enum that no source can be created with yet. */
export interface ReservedKind extends KindBase { readonly input: 'reserved' }

/** One source kind. */
export type KindSpec = ContentKind | FetchedKind | ReservedKind;

/** True for `https://github.com/owner/repo…` URLs, which `auto` ingests as `github`. */
const isGithubRepoUrl = (url: string): boolean => /^https?:\/\/(www\.)?github\.com\/[^/]+\/[^/]+/i.test(url);

/** Every source kind, in the order of the `type` enums (docs/api.md#source-object). */
export const SOURCE_KINDS = [
  { name: 'openapi', input: 'content', label: 'an OpenAPI document', explicit: 'classified',
    detect: { rank: 1, value: { markers: ['openapi', 'swagger'] } }, parse: (c) => parseOpenApi(c.value) },
  { name: 'json', input: 'content', label: 'JSON or YAML data', explicit: 'value', parse: (c) =>
    parseJsonDocuments(c.value) },
  { name: 'url', input: 'fetched', label: 'a fetched page' },
  { name: 'website', input: 'fetched', label: 'a crawled website' },
  { name: 'text', input: 'content', label: 'Markdown, text or HTML',
    // Sections are counted before they are built: a paste of 400,000 headings is refused early.
    parse: (c) => ((c.html ?? isHtml(c.text, c.mediaType)) ? parseHtml(c.text, MAX_DOCUMENTS) : parseMarkdown(c.text,
      MAX_DOCUMENTS)) },
  { name: 'graphql', input: 'content', label: 'a GraphQL schema', explicit: 'value-if-object',
    detect: { rank: 5, value: { keys: ['__schema', 'data'], test: isIntrospection }, text: looksLikeGraphqlSdl },
    parse: (c) => (c.value !== undefined ? parseGraphqlIntrospection(c.value) : parseGraphql(c.text)) },
  { name: 'postman', input: 'content', label: 'a Postman collection document', explicit: 'classified',
    detect: { rank: 3, value: { keys: ['info'], test: isPostmanCollection } }, parse: (c) => parsePostman(c.value) },
  { name: 'asyncapi', input: 'content', label: 'an AsyncAPI document', explicit: 'classified',
    detect: { rank: 2, value: { markers: ['asyncapi'] } }, parse: (c) => parseAsyncApi(c.value) },
  { name: 'grpc', input: 'content', label: 'a Protocol Buffers file', detect: { rank: 4, text: looksLikeProto },
    parse: (c) => parseProto(c.text) },
  { name: 'soap', input: 'content', label: 'a WSDL 1.1 document', detect: { rank: 6, xmlRoot: isWsdlRoot },
    parse: (c) => parseWsdl(c.text) },
  { name: 'github', input: 'fetched', label: 'a GitHub repository', url: isGithubRepoUrl },
  { name: 'notion', input: 'reserved', label: 'a Notion workspace' },
  { name: 'confluence', input: 'reserved', label: 'a Confluence space' },
  { name: 'hubspot', input: 'reserved', label: 'a HubSpot knowledge base' },
] as const satisfies readonly KindSpec[];

type Kind = (typeof SOURCE_KINDS)[number];
/** A stored source type (`type` in docs/api.md#source-object). */
export type SourceType = Kind['name'];
/** A type whose content is parsed from text. */
export type ContentType = Extract<Kind, { input: 'content' }>['name'];
/** A type made by fetching its URL. */
export type FetchedType = Extract<Kind, { input: 'fetched' }>['name'];
/** A type a source can be created with (`type` of docs/api.md#create-source). */
export type CreateType = 'auto' | Exclude<SourceType, Extract<Kind, { input: 'reserved' }>['name']>;

type Creatable = Extract<Kind, { input: 'content' | 'fetched' }>;

/** The stored `type` enum, in registry order. */
export const SOURCE_TYPES: readonly SourceType[] = SOURCE_KINDS.map((k) => k.name);
/** The create request's `type` enum: `auto`, then every kind but the reserved ones. */
export const CREATE_TYPES: readonly CreateType[] = ['auto', ...SOURCE_KINDS.filter((k): k is Creatable =>
  k.input !== 'reserved').map((k) => k.name)];

const BY_NAME: ReadonlyMap<string, KindSpec> = new Map(SOURCE_KINDS.map((k) => [k.name, k]));

/** The kind of a content type, with its parser and detection. */
export function contentKind(type: ContentType): ContentKind {
  return BY_NAME.get(type) as ContentKind;
}

/** True when `type` names a kind parsed from text. */
export function isContentType(type: string): type is ContentType {
  return BY_NAME.get(type)?.input === 'content';
}

/** True when `type` names a kind made by fetching its URL. */
export function isFetchedType(type: string): type is FetchedType {
  return BY_NAME.get(type)?.input === 'fetched';
}

/** The content kinds that take part in detection, by rank (ties in registry order). */
export const DETECTED_KINDS: ReadonlyArray<ContentKind & { name: ContentType; detect: KindDetection }> = SOURCE_KINDS
  .filter((k): k is Extract<Kind, { detect: KindDetection }> => 'detect' in k)
  .sort((a, b) => a.detect.rank - b.detect.rank);

/** The fetched kind `auto` ingests `url` as (`github` for a repository URL); undefined for any other URL. */
export function urlKind(url: string): FetchedType | undefined {
  for (const k of SOURCE_KINDS) if ('url' in k && k.url(url)) return k.name;
  return undefined;
}

/**
 * The type a new source has until its first ingestion ends (docs/sources.md#failed-sources): the one asked for, else a
 * guess from what will be ingested — pasted content when there is some (`json` when it looks like JSON, else `text`),
 * else the URL (its fetched kind, else `url`).
 */
export function provisionalType(type: CreateType, url: string | null, content: string | undefined): SourceType {
  if (type !== 'auto') return type;
  if (content !== undefined) return /^\s*[[{]/.test(content) ? 'json' : 'text';
  return urlKind(url!) ?? 'url';
}
