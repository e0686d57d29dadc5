/**
 * Checks for refused admin operations called in-process (`srv.admin.importData(…)`): the error
 * is a refusal (a domain error or an AdminError, not a bug) and the admin CLI words it exactly as
 * expected — the same text `cli.js` prints after `error: `.
 */
import assert from 'node:assert/strict';
import { AdminError } from '../../src/admin/operations.js';
import { cliMessage } from '../../src/admin/cliMessages.js';
import { DomainError } from '../../src/core/errors.js';

/**
 * A validator for `assert.rejects`: the rejection of admin operation `op` (`import`,
 * `key.create`…) is a refusal that the CLI prints as `message`.
 */
export function refusedWith(op: string, message: string): (e: unknown) => true {
  return (e: unknown) => {
    assert.ok(e instanceof DomainError || e instanceof AdminError, `not a refusal: ${(e as Error)?.stack ?? String(e)}`);
    assert.equal(cliMessage(op, e), message);
    return true;
  };
}

/** A validator for `assert.rejects`: any refusal of an admin operation (a domain error or an AdminError). */
export function refused(e: unknown): true {
  assert.ok(e instanceof DomainError || e instanceof AdminError, `not a refusal: ${(e as Error)?.stack ?? String(e)}`);
  return true;
}
