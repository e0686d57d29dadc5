/**
 * YAML 1.2 reader (https://yaml.org/spec/1.2.2/) producing JSON-shaped values, with no
 * dependencies. Used for OpenAPI and AsyncAPI documents written in YAML.
 *
 * Supported: block and flow collections (compact `- - a` / `- k: v`, explicit `? k`, flow pairs
 * and trailing commas), all scalar styles with line folding, block chomping and indentation
 * indicators, comments, anchors and aliases, document markers, `%YAML` and `%TAG` directives,
 * and the core schema (§10.3.2) for plain scalars. It passes the whole yaml-test-suite
 * (test/yaml-suite.test.ts; docs/sources.md §What ingestion extracts lists what is rejected).
 *
 * Choices where the spec leaves room or goes beyond JSON:
 * - Tags are checked (a `!name!` handle must be declared for the document) and ignored, except
 *   `!!str` and the non-specific `!`, which keep a plain scalar a string (`!!str 42` → `"42"`);
 *   `!!binary`, `!!set` etc. yield the plain string / mapping.
 * - The end of the input ends its last line as a line break would (as the yaml-test-suite
 *   reads it), so `k: |\n  x` gives `"x\n"`.
 * - Mapping keys become strings: null → `"null"`, numbers and booleans via `String`,
 *   collections via `JSON.stringify`. A duplicate key replaces the earlier value (last wins,
 *   as in `JSON.parse`). `__proto__` is stored as an own property.
 * - An alias returns the anchored value itself (shared, not copied). A stream that would
 *   expand to more than 1,000,000 nodes counting aliases as copies is rejected, as is nesting
 *   deeper than 1,000 collections. Merge keys (`<<`) are plain keys (they are YAML 1.1).
 * - A flow collection's lines must be indented more than the block collection around it, except
 *   that its closing bracket may sit at that block's indentation (`k: [\n  a\n]`), a common
 *   JSON-like layout.
 */

import { IngestError } from '../types.js';
import { YamlParser } from './yaml/parser.js';

/**
 * Parses every document of a YAML stream (§9.2), in order. An empty stream (or one holding only
 * comments, directives-free markers like `...`) gives `[]`; an empty document gives `null`.
 *
 * @throws IngestError `YAML: <reason> at line L, column C` for malformed input.
 */
export function parseYamlAll(text: string): unknown[] {
  return new YamlParser(text).parseStream().values;
}

/**
 * Parses a YAML text holding one document and returns its value (`null` for an empty text).
 *
 * @throws IngestError as {@link parseYamlAll}, and
 *   `YAML: expected a single document but the stream holds N at line L, column C` (pointing at
 *   the second document) when there are several.
 */
export function parseYaml(text: string): unknown {
  const parser = new YamlParser(text);
  const { values, starts } = parser.parseStream();
  if (values.length > 1) {
    const { line, column } = parser.lineCol(starts[1]);
    throw new IngestError(`YAML: expected a single document but the stream holds ${values.length}`, line, column);
  }
  return values.length === 0 ? null : values[0];
}
