/**
 * Structured text (JSON, YAML) for detection (docs/sources.md#type-detection): a parsed document is classified by its
 * top-level keys; linear scans of the text (no regular expressions) find those keys, to decide whether a YAML text is
 * worth parsing and what a document that does not parse claimed to be.
 */
import { parseJsonText } from '../parsers/json.js';
import { parseYaml } from '../parsers/yaml.js';
import { IngestError } from '../types.js';
import { isObj, type Obj } from '../parsers/values.js';
import { isSpace } from './sniff.js';
import { DETECTED_KINDS, type ContentType, type SourceType } from '../kinds.js';

/** The kinds recognised by a parsed value, by rank, each with its marker keys and test. */
const VALUE_KINDS: ReadonlyArray<{ type: ContentType; markers: readonly string[]; test?: (v: Obj) => boolean }> =
  DETECTED_KINDS.flatMap((k) => (k.detect.value ? [{ type: k.name, markers: k.detect.value.markers ?? [],
    test: k.detect.value.test }] : []));

/** Marker key → the kind it names (`swagger` → openapi); of two kinds sharing a key, the lower rank keeps it. */
const MARKERS: ReadonlyMap<string, ContentType> = (() => {
  const map = new Map<string, ContentType>();
  for (const k of VALUE_KINDS) for (const m of k.markers) if (!map.has(m)) map.set(m, k.type);
  return map;
})();
/** The longest marker key: a longer key is skipped at once by {@link jsonMarker}. */
const MAX_MARKER_LENGTH = Math.max(0, ...[...MARKERS.keys()].map((m) => m.length));

/** The top-level keys {@link classifyValue} looks at: a mapping without any of them is plain data. */
const CLASSIFYING_KEYS: ReadonlySet<string> = new Set(DETECTED_KINDS.flatMap((k) => [...(k.detect.value?.markers ??
  []), ...(k.detect.value?.keys ?? [])]));

/** A parsed JSON/YAML value's type: the first kind (by rank) a marker key names or whose test passes; else `json`. */
export function classifyValue(v: unknown): ContentType {
  if (!isObj(v)) return 'json';
  for (const k of VALUE_KINDS) {
    for (const m of k.markers) if (m in v) return k.type;
    if (k.test?.(v)) return k.type;
  }
  return 'json';
}

/** Parses text that is JSON (leading `{`/`[`) or else YAML. @throws IngestError with line and column. */
export function parseStructured(text: string): unknown {
  const t = text.replace(/^\uFEFF/, '');
  const first = t.trimStart()[0];
  return first === '{' || first === '[' ? parseJsonText(t) : parseYaml(t);
}

/** `e` with the type the content was detected as (kept by the failed source), when it has none yet. */
export function detectedAs<E>(e: E, type: SourceType | undefined): E {
  if (e instanceof IngestError && e.sourceType === undefined && type !== undefined) e.sourceType = type;
  return e;
}

/** True at the end of `text` or at a white-space character. */
const endsAt = (text: string, k: number): boolean => k >= text.length || isSpace(text.charCodeAt(k));
/** The offset after the spaces and tabs from `k`. */
function afterBlanks(text: string, k: number): number {
  while (text.charCodeAt(k) === 32 || text.charCodeAt(k) === 9) k++;
  return k;
}
/** Characters that cannot start a plain YAML scalar (`-`, `?`, `:` can, when not followed by a blank). */
const INDICATORS = ',[]{}#&*!|>%@`';

/**
 * The key of the YAML mapping entry starting at `j` (`key:`, `"key":`, `'key':` or `? key`, after any anchor and tag,
 * then `:` and white space or the end), else undefined; quoted keys keep escapes as written. Reads one line at most.
 */
function yamlLineKey(text: string, j: number): string | undefined {
  let explicit = false;
  if (text.charCodeAt(j) === 63 /* ? */ && endsAt(text, j + 1)) { explicit = true; j = afterBlanks(text, j + 1); }
  // Node properties: `&anchor` and `!tag` before the key.
  while ((text.charCodeAt(j) === 38 /* & */ || text.charCodeAt(j) === 33 /* ! */) && !endsAt(text, j + 1)) {
    while (!endsAt(text, j)) j++;
    j = afterBlanks(text, j);
  }
  const q = text.charCodeAt(j);
  if (q === 34 /* " */ || q === 39 /* ' */) {
    let k = j + 1;
    for (; k < text.length && text.charCodeAt(k) !== q && text.charCodeAt(k) !== 10; k++) if (q === 34 &&
      text.charCodeAt(k) === 92) k++;
    if (text.charCodeAt(k) !== q) return undefined;
    const key = text.slice(j + 1, k);
    k = afterBlanks(text, k + 1);
    return explicit || (text.charCodeAt(k) === 58 /* : */ && endsAt(text, k + 1)) ? key : undefined;
  }
  if (j >= text.length || INDICATORS.includes(text[j]) || ((q === 45 || q === 63 || q === 58) && endsAt(text,
    j + 1))) return undefined;
  let k = j;
  for (; k < text.length; k++) {
    const c = text.charCodeAt(k);
    if (c === 10 || (c === 35 /* # */ && isSpace(text.charCodeAt(k - 1)))) break;
    if (c === 58 /* : */ && endsAt(text, k + 1)) return text.slice(j, k).trimEnd();
  }
  return explicit ? text.slice(j, k).trimEnd() : undefined;
}

/**
 * Calls `visit` with the start of every top-level content line of a YAML stream (indented as its first content line),
 * skipping blank and comment lines, directives and document markers (content after `--- ` counts), until it says true.
 */
function yamlTopLines(text: string, visit: (j: number) => boolean): void {
  let indent = -1;
  for (let i = 0; i <= text.length;) {
    let j = i;
    while (text.charCodeAt(j) === 32) j++;
    const nl = text.indexOf('\n', j);
    const end = nl < 0 ? text.length : nl;
    if (j === i && (text.startsWith('---', j) || text.startsWith('...', j)) &&
      (j + 3 >= end || isSpace(text.charCodeAt(j + 3)))) {
      if (text[j] === '.') j = end; // a document end: nothing on its line is content
      else for (j += 3; text.charCodeAt(j) === 32 || text.charCodeAt(
        j) === 9;) j++; // `--- `: what follows on its line is
    }
    const c = text.charCodeAt(j);
    const blank = j >= end || c === 13 || c === 35 /* # */ || (j === i && c === 37 /* % */);
    if (!blank) {
      if (indent < 0) indent = j - i;
      if (j - i === indent && visit(j)) return;
    }
    if (nl < 0) return;
    i = nl + 1;
  }
}

/**
 * One pass over a YAML text's top level: whether its first content line is a mapping entry, whether a classifying key
 * stands at the top level, and the kind a marker key among them names. Stops at the first classifying key (with
 * `marker`: at the first marker key).
 */
function yamlTop(text: string, marker = false): { mapping: boolean; classifying: boolean; marker?: ContentType } {
  let first = true;
  const out: { mapping: boolean; classifying: boolean; marker?: ContentType } = { mapping: false, classifying: false };
  yamlTopLines(text, (j) => {
    const key = yamlLineKey(text, j);
    if (first) { first = false; out.mapping = key !== undefined; if (!out.mapping) return true; }
    if (key === undefined || !CLASSIFYING_KEYS.has(key)) return false;
    out.classifying = true;
    out.marker = MARKERS.get(key);
    return !marker || out.marker !== undefined;
  });
  return out;
}

/**
 * The kind a JSON text names by a top-level marker member (`openapi`, `asyncapi`…), found by one pass that tracks
 * nesting, so it works on text that does not parse (a truncated download): what broken JSON claimed to be.
 */
export function jsonMarker(text: string): ContentType | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      const from = i + 1;
      for (i++; i < text.length && text.charCodeAt(i) !== 34; i++) if (text.charCodeAt(i) === 92) i++;
      if (depth !== 1 || i - from > MAX_MARKER_LENGTH) continue;
      let k = i + 1;
      while (isSpace(text.charCodeAt(k))) k++;
      const type = text[k] === ':' ? MARKERS.get(text.slice(from, i)) : undefined;
      if (type) return type;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (depth === 0 && c === 91) return undefined; // a top-level array names nothing
      depth++;
    } else if (c === 125 || c === 93) depth--;
  }
  return undefined;
}

/** The kind a YAML text names by a top-level marker key: what a YAML text that does not parse claimed to be. */
export const yamlMarker = (text: string): ContentType | undefined => yamlTop(text, true).marker;

/** `text` parsed as YAML and classified: the API description it is, undefined for plain data, or the parse error. */
export function yamlApi(text: string): { type: ContentType; value: unknown } | IngestError | undefined {
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (e) {
    if (e instanceof IngestError) return e;
    throw e;
  }
  const type = classifyValue(value);
  return type === 'json' ? undefined : { type, value };
}

/**
 * A YAML mapping with a classifying key at its top level, parsed and classified; undefined when it is none, names no
 * API description, or does not parse and names none by a marker key (prose with a colon on its first line).
 * @throws IngestError the YAML error, typed as what it claimed to be, for a text that does not parse but names an API
 *   description by a top-level marker key.
 */
export function yamlDocument(text: string): { type: ContentType; value: unknown } | undefined {
  const top = yamlTop(text);
  if (!top.mapping || !top.classifying) return undefined;
  const r = yamlApi(text);
  if (!(r instanceof IngestError)) return r;
  const claimed = yamlMarker(text);
  if (claimed) throw detectedAs(r, claimed);
  return undefined;
}
