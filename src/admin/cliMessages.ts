/**
 * How the admin CLI words a refused operation (docs/configuration.md#admin-cli): the one line it prints after `error:
 * `. The admin operations refuse with domain errors that hold their parts (src/core/errors.ts); this module alone turns
 * them into the CLI's text — a field by the command-line flag that gave it, a place in an import file by its JSON path.
 */
import { ConflictError, DomainError, InvalidInputError } from '../core/errors.js';

/** For each operation, the flag that gives each of its arguments (`expiresAt` ← `--expires-at`). */
const ARG_FLAGS: Record<string, Record<string, string>> = {
  'workspace.create': { name: '--name' },
  'key.create': { workspace: '--workspace', name: '--name', scopes: '--scopes', expiresAt: '--expires-at' },
  'key.list': { workspace: '--workspace' },
  'user.create': { workspace: '--workspace', email: '--email' },
};

/**
 * The CLI's sentence for `e`, a refusal of the admin operation `op` (`import`, `key.create`…):
 * - an invalid input of `import` → `import file is invalid: <path in the file> <reason>.`;
 * - an invalid argument given by a flag → `<flag> <reason>` (`--expires-at must be …`);
 * - another invalid input (a definition's fields) → `<field path> <reason>`;
 * - a conflict met by `import` → `import refused: <detail>.`;
 * - any other error (a record not found, an `AdminError`) → its message.
 */
export function cliMessage(op: string, e: unknown): string {
  if (e instanceof InvalidInputError) {
    if (op === 'import') return `import file is invalid: ${e.describe('the file')}.`;
    const flag = e.path.length === 1 && !e.alternatives ? ARG_FLAGS[op]?.[String(e.path[0])] : undefined;
    return flag ? `${flag} ${e.reason}` : e.describe('the input');
  }
  if (e instanceof ConflictError && op === 'import') return `import refused: ${e.detail}.`;
  if (e instanceof DomainError) return e.message;
  return e instanceof Error ? e.message : String(e);
}
