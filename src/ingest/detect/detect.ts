/**
 * Source type detection for `type: "auto"`, from the content and a fetched document's media type: structured text
 * (JSON or YAML) by its top-level keys, anything else by its first significant lines. The steps are fixed here; which
 * kinds each step recognises, in what order, is the kinds' own detection (src/ingest/kinds.ts).
 */
import { parseJsonText } from '../parsers/json.js';
import { parseYaml } from '../parsers/yaml.js';
import { IngestError } from '../types.js';
import { classifyValue, detectedAs, jsonMarker, yamlApi, yamlDocument, yamlMarker } from './structured.js';
import { HEAD_CHARS, htmlStart, htmlTag, isHtmlType } from './sniff.js';
import { DETECTED_KINDS, type ContentType } from '../kinds.js';

export { classifyValue, detectedAs, parseStructured } from './structured.js';

/** What detection found: the type, for `text` whether it is HTML, for structured content its value (parsed once). */
export interface Detected { type: ContentType; html?: boolean; value?: unknown }

/** The kinds recognised by an XML root element, and by a test on other text, by rank. */
const XML_KINDS = DETECTED_KINDS.flatMap((k) => (k.detect.xmlRoot ? [{ type: k.name, test: k.detect.xmlRoot }] : []));
const TEXT_KINDS = DETECTED_KINDS.flatMap((k) => (k.detect.text ? [{ type: k.name, test: k.detect.text }] : []));

const isJsonType = (m: string | undefined): boolean => m === 'application/json' || m?.endsWith('+json') === true;

const YAML_TYPES = new Set(['application/yaml', 'text/yaml', 'application/x-yaml', 'text/x-yaml']);

/**
 * Detects the type of `text` (docs/sources.md#type-detection); `mediaType`, a fetched document's lower-cased media
 * type, settles only what the content leaves open. Linear in the text.
 * @throws IngestError when the content claims to be JSON (or YAML by its media type or by an API key at its top level)
 *   but does not parse; its `sourceType` says what it claimed to be.
 */
export function detectContent(text: string, mediaType?: string): Detected {
  const t = text.replace(/^\uFEFF/, '');
  const start = t.trimStart();
  const h = start.slice(0, HEAD_CHARS);
  if (start[0] === '{' || start[0] === '[') {
    let value: unknown;
    try {
      value = parseJsonText(t);
    } catch (e) {
      // YAML flow style (`{openapi: 3.0.0, …}`) is no JSON but may still be an API description.
      const yaml = yamlApi(t);
      if (yaml && !(yaml instanceof IngestError)) return yaml;
      throw detectedAs(e, jsonMarker(t) ?? 'json');
    }
    return { type: classifyValue(value), value };
  }
  if (start[0] === '"') {
    // A lone JSON string (RFC 8259 allows any value at the top): JSON when it parses whole.
    try { const value: unknown = JSON.parse(t); return { type: 'json', value }; } catch {
      /* prose that starts with a quote */ }
  }
  if (htmlStart(h)) return { type: 'text', html: true };
  if (start[0] === '<') {
    for (const k of XML_KINDS) if (k.test(start)) return { type: k.type };
    return { type: 'text', html: isHtmlType(mediaType) || htmlTag(h) };
  }
  if (mediaType !== undefined && YAML_TYPES.has(mediaType)) return classified(() => parseYaml(t), () => yamlMarker(t));
  const yaml = yamlDocument(t);
  if (yaml) return yaml;
  if (isJsonType(mediaType)) return classified(() => parseJsonText(t), () => 'json');
  if (isHtmlType(mediaType)) return { type: 'text', html: true };
  for (const k of TEXT_KINDS) if (k.test(start, h)) return { type: k.type };
  return { type: 'text', html: false };
}

/** `parse()`'s value, classified; a parse error typed as `claimed()`. */
function classified(parse: () => unknown, claimed: () => ContentType | undefined): Detected {
  let value: unknown;
  try { value = parse(); } catch (e) { throw detectedAs(e, claimed()); }
  return { type: classifyValue(value), value };
}
