/**
 * Source type detection for `type: "auto"` (issue #3 point 2): from the content itself and,
 * for fetched documents, the response's media type. Structured text (JSON or YAML) is
 * classified by its top-level keys; everything else by its first significant lines.
 */
import { parseJsonText } from './json.js';
import { parseYaml } from './yaml.js';

/** Types stored for sources (SPEC "Source" `type`). */
export const SOURCE_TYPES = ['openapi', 'json', 'url', 'website', 'text', 'graphql', 'postman', 'asyncapi', 'grpc', 'soap', 'github', 'notion', 'confluence', 'hubspot'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

/** Types that parse text content (as opposed to `url`, `website`, `github`, which fetch). */
export type ContentType = 'openapi' | 'json' | 'text' | 'graphql' | 'postman' | 'asyncapi' | 'grpc' | 'soap';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The type of an already-parsed JSON/YAML value: an API description by its marker keys, else `json`. */
export function classifyValue(v: unknown): ContentType {
  if (!isObj(v)) return 'json';
  if ('openapi' in v || 'swagger' in v) return 'openapi';
  if ('asyncapi' in v) return 'asyncapi';
  const info = v.info;
  if (isObj(info) && (Array.isArray(v.item) || (typeof info.schema === 'string' && info.schema.includes('getpostman.com')))) return 'postman';
  if ('__schema' in v || (isObj(v.data) && '__schema' in v.data)) return 'graphql';
  return 'json';
}

/** Parses text that is JSON (leading `{`/`[`) or else YAML. @throws IngestError with line and column. */
export function parseStructured(text: string): unknown {
  const t = text.replace(/^\uFEFF/, '');
  const first = t.trimStart()[0];
  return first === '{' || first === '[' ? parseJsonText(t) : parseYaml(t);
}

const head = (text: string, n = 8192) => text.slice(0, n);
const PROTO = /^\s*(syntax\s*=\s*["']proto[23]["']|edition\s*=\s*["']\d+["']|package\s+[\w.]+\s*;|service\s+\w+\s*\{|message\s+\w+\s*\{)/m;
const GRAPHQL = /^\s*(extend\s+)?((type|interface|input|enum)\s+[_A-Za-z]\w*[^\n{]*\{|schema\s*(@[^\n{]*)?\{|union\s+\w+[^\n]*=|scalar\s+[_A-Za-z]\w*\s*$|directive\s+@)/m;
const API_YAML = /^(openapi|swagger|asyncapi)\s*:/m;
const HTML = /^\s*(<!--[\s\S]*?-->\s*)*<(!doctype\s+html|html[\s>]|head[\s>]|body[\s>])/i;
const WSDL = /<([\w-]+:)?definitions[\s>][\s\S]*schemas\.xmlsoap\.org\/wsdl/;

/**
 * Detects the type of `text`; `mediaType` is a fetched document's lower-cased media type.
 * Returns the type and, for structured content, the parsed value (so it is parsed once).
 * @throws IngestError when the content claims to be JSON (or YAML by its media type) but does not parse.
 */
export function detectContent(text: string, mediaType?: string): { type: ContentType; html?: boolean; value?: unknown } {
  const t = text.replace(/^\uFEFF/, '');
  const start = t.trimStart();
  const h = head(start);
  if (mediaType === 'application/json' || mediaType?.endsWith('+json') || start[0] === '{' || start[0] === '[') {
    const value = parseJsonText(t);
    return { type: classifyValue(value), value };
  }
  if (start[0] === '"') {
    // A lone JSON string (RFC 8259 allows any value at the top): JSON when it parses whole.
    try { const value: unknown = JSON.parse(t); return { type: 'json', value }; } catch { /* prose that starts with a quote */ }
  }
  if (mediaType === 'text/html' || mediaType === 'application/xhtml+xml' || HTML.test(h)) return { type: 'text', html: true };
  if (start[0] === '<') return WSDL.test(h) ? { type: 'soap' } : { type: 'text', html: /<\/?(p|div|h[1-6]|a)\b/i.test(h) };
  if (API_YAML.test(h) || mediaType === 'application/yaml' || mediaType === 'text/yaml' || mediaType === 'application/x-yaml') {
    const value = parseYaml(t);
    return { type: classifyValue(value), value };
  }
  if (PROTO.test(h) && /\b(message|service|enum)\s+\w+\s*\{/.test(start)) return { type: 'grpc' };
  if (GRAPHQL.test(h)) return { type: 'graphql' };
  return { type: 'text' };
}
