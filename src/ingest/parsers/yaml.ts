/**
 * YAML 1.2 reader producing JSON-shaped values, for OpenAPI and AsyncAPI documents in YAML. It passes the whole
 * yaml-test-suite (test/yaml-suite.test.ts). What it accepts, rejects and chooses where the spec leaves room (tags,
 * keys, aliases, limits) is docs/sources.md#what-ingestion-extracts.
 */
import { IngestError } from '../types.js';
import { YamlParser } from './yaml/parser.js';

/**
 * Parses every document of a YAML stream (§9.2), in order: `[]` for an empty stream (only comments or `...`), `null`
 * for an empty document.
 * @throws IngestError `YAML: <reason> at line L, column C` for malformed input.
 */
export function parseYamlAll(text: string): unknown[] {
  return new YamlParser(text).parseStream().values;
}

/**
 * Parses a YAML text holding one document and returns its value (`null` for an empty text).
 * @throws IngestError as {@link parseYamlAll}, and `YAML: expected a single document but the stream holds N at line L,
 *   column C` (pointing at the second document) when there are several.
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
