/**
 * YAML 1.2 conformance over the whole yaml-test-suite (test/fixtures/yaml-test-suite, MIT, see
 * its README.md): every valid case's documents deep-equal its `in.json` (one JSON value per
 * document, compared with what `parseYamlAll` returns), and every error case is rejected with
 * an IngestError that names a line and column inside the input.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseYamlAll } from '../src/ingest/parsers/yaml.js';
import { IngestError } from '../src/ingest/types.js';
import { parseJsonStream, suiteCases } from './helpers/yamlSuite.js';

const ROOT = new URL('fixtures/yaml-test-suite/', import.meta.url);

/**
 * Cases the parser does not pass, with the reason; each is skipped. Empty: every case passes.
 * (Cases without `in.json` are skipped on their own, see below.)
 */
const SKIPS: Record<string, string> = {};

/** Why a valid case without `in.json` is not compared. */
const NO_JSON = 'no in.json: the suite gives no JSON form for this value (a null, a collection or an alias as a mapping key, a tagged empty node)';

const cases = suiteCases(ROOT);
const valid = cases.filter((c) => !c.error && c.json !== null);
const noJson = cases.filter((c) => !c.error && c.json === null);
const errors = cases.filter((c) => c.error);

describe('yaml-test-suite', () => {
  it('holds the data branch: 402 cases, 308 valid (279 with in.json), 94 errors', () => {
    assert.deepEqual([cases.length, valid.length + noJson.length, valid.length, errors.length], [402, 308, 279, 94]);
  });

  let validPassed = 0;
  let errorPassed = 0;
  describe('valid cases: the documents deep-equal in.json', () => {
    for (const c of valid) {
      it(`${c.id} ${c.title}`, { skip: SKIPS[c.id] }, () => {
        assert.deepEqual(parseYamlAll(c.input), parseJsonStream(c.json ?? ''));
        validPassed++;
      });
    }
    for (const c of noJson) it(`${c.id} ${c.title}`, { skip: NO_JSON }, () => {});
  });

  describe('error cases: an IngestError with the line and column', () => {
    for (const c of errors) {
      it(`${c.id} ${c.title}`, { skip: SKIPS[c.id] }, () => {
        const lines = c.input.split('\n').length;
        assert.throws(() => parseYamlAll(c.input), (e: unknown) => {
          assert.ok(e instanceof IngestError, `expected an IngestError, got ${String(e)}`);
          assert.match(e.message, /^YAML: .+ at line \d+, column \d+$/);
          assert.ok(e.line !== undefined && e.line >= 1 && e.line <= lines, `line ${e.line} of ${lines}`);
          assert.ok(e.column !== undefined && e.column >= 1, `column ${e.column}`);
          return true;
        });
        errorPassed++;
      });
    }
  });

  it('valid cases without in.json are accepted all the same', () => {
    for (const c of noJson) assert.doesNotThrow(() => parseYamlAll(c.input), c.id);
  });

  it('summary: every case not on the skip list passed', (t) => {
    t.diagnostic(`valid ${validPassed}/${valid.length}, error ${errorPassed}/${errors.length}, `
      + `${noJson.length} valid cases without in.json skipped, ${Object.keys(SKIPS).length} on the skip list`);
    const skipped = (list: typeof cases) => list.filter((c) => SKIPS[c.id] !== undefined).length;
    assert.equal(validPassed, valid.length - skipped(valid));
    assert.equal(errorPassed, errors.length - skipped(errors));
  });
});
