/**
 * The test corpus (`test/fixtures/corpus`, copied from public repositories with their licences in its `SOURCES.md`: real API descriptions with
 * `expected.json`) for the parser tests, and the assertion they share on parse errors.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { IngestError } from '../../src/ingest/types.js';

export const CORPUS = new URL('../fixtures/corpus/', import.meta.url);

/**
 * Corpus files that `type: auto` does not yet ingest as expected.json says, with the reason.
 * The tests that cover them are skipped, and say so. None at present.
 */
export const PENDING_AUTO: Record<string, string> = {};

/** A corpus file's text (UTF-8), by its path inside the corpus. */
export const readCorpus = (rel: string): string => readFileSync(new URL(rel, CORPUS), 'utf8');

/** `expected.json`: the facts each corpus file must yield, typed by the test that reads them. */
export const expectedJson = <T>(): Record<string, T> => JSON.parse(readCorpus('expected.json')) as Record<string, T>;

/** Asserts that `fn` throws an IngestError with exactly `message` (which includes the position) and, when given, that line and column. */
export function throwsIngest(fn: () => unknown, message: string, line?: number, column?: number): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof IngestError, `expected IngestError, got ${String(e)}`);
    assert.equal(e.message, message);
    if (line !== undefined) {
      assert.equal(e.line, line);
      assert.equal(e.column, column);
    }
    return true;
  });
}
