/**
 * Domain errors: what went wrong, as data, for code that knows nothing of HTTP or the CLI. Each keeps its parts (a
 * field path and reason, the record not found, the conflict) and makes its sentence in one place; the HTTP layer maps
 * them in one table (src/http/errors.ts) and the admin CLI to messages and exit codes (src/admin/cliMessages.ts).
 * docs/api.md#errors describes the structure.
 */

/** Where in an input a problem is: property names and array indexes, outermost first. */
export type FieldPath = readonly (string | number)[];

/** The kinds of domain error; each has exactly one class below. */
export type DomainErrorKind = 'invalid_input' | 'not_found' | 'conflict';

/**
 * A path as messages spell it: `['items', 0, 'name']` → `items[0].name`, the empty path → `whole`. A property name that
 * is not an identifier is still written after a dot, as received.
 */
export function formatPath(path: FieldPath, whole: string): string {
  if (path.length === 0) return whole;
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out;
}

/** `a`, `a or b`, `a, b or c`. */
function orList(names: string[]): string {
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names[0];
}

/** The plain-JSON form of a domain error (it crosses the admin socket as this). */
export type DomainErrorData =
  | { kind: 'invalid_input'; path: FieldPath; reason: string; alternatives?: FieldPath[] }
  | { kind: 'not_found'; what?: NotFoundSubject }
  | { kind: 'conflict'; detail: string };

/** Base of the domain errors; `message` is the error's sentence, without a final period. */
export abstract class DomainError extends Error {
  abstract readonly kind: DomainErrorKind;
  /** This error as plain JSON data; {@link domainErrorFromData} makes it again. */
  abstract toData(): DomainErrorData;
}

/**
 * An input that breaks a rule: the field at `path` and the `reason` that follows its name (`must be a string`). For
 * "one of these fields is required", `alternatives` names them in place of the path.
 */
export class InvalidInputError extends DomainError {
  readonly kind = 'invalid_input';
  constructor(
    readonly path: FieldPath,
    readonly reason: string,
    readonly alternatives?: readonly FieldPath[],
    options?: ErrorOptions,
  ) {
    super('', options);
    this.name = 'InvalidInputError';
    this.message = this.describe('the input');
  }

  /** The sentence: `customer.email must be a valid email address`; `whole` names the input for an empty path. */
  describe(whole: string): string {
    const subject = this.alternatives?.length ? orList(this.alternatives.map((p) => formatPath(p, whole))) : formatPath(
      this.path, whole);
    return `${subject} ${this.reason}`;
  }

  /** The same problem seen from an input that holds this one at `prefix` (its cause is this error). */
  within(prefix: FieldPath): InvalidInputError {
    return new InvalidInputError([...prefix, ...this.path], this.reason,
      this.alternatives?.map((p) => [...prefix, ...p]), { cause: this });
  }

  toData(): DomainErrorData {
    return { kind: 'invalid_input', path: [...this.path], reason: this.reason,
      ...(this.alternatives ? { alternatives: this.alternatives.map((p) => [...p]) } : {}) };
  }
}

/** What was not found: `entity` (`workspace`, `custom field`…) and the `id` asked for. */
export interface NotFoundSubject {
  entity: string;
  id: string;
  /** The lookup was within one workspace (its records only). */
  inWorkspace?: boolean;
}

/** A record that does not exist (where it was looked for); without `what` the sentence is `record not found`. */
export class NotFoundError extends DomainError {
  readonly kind = 'not_found';
  constructor(readonly what?: NotFoundSubject, options?: ErrorOptions) {
    super(what ? `no ${what.entity} ` +
      `${JSON.stringify(what.id)}${what.inWorkspace ? ' in this workspace' : ''}` : 'record not found', options);
    this.name = 'NotFoundError';
  }

  toData(): DomainErrorData {
    return { kind: 'not_found', ...(this.what ? { what: { ...this.what } } : {}) };
  }
}

/** A change breaking a uniqueness rule; `detail` is the sentence naming it, without a final period. */
export class ConflictError extends DomainError {
  readonly kind = 'conflict';
  constructor(readonly detail: string, options?: ErrorOptions) {
    super(detail, options);
    this.name = 'ConflictError';
  }

  toData(): DomainErrorData {
    return { kind: 'conflict', detail: this.detail };
  }
}

const isPath = (v: unknown): v is FieldPath => Array.isArray(v) &&
  v.every((p) => typeof p === 'string' || typeof p === 'number');

/** The domain error whose {@link DomainError.toData} gave `data`; undefined when `data` is not such a form. */
export function domainErrorFromData(data: unknown): DomainError | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const d = data as Record<string, unknown>;
  switch (d.kind) {
    case 'invalid_input': {
      if (!isPath(d.path) || typeof d.reason !== 'string') return undefined;
      const alternatives = Array.isArray(d.alternatives) && d.alternatives.every(isPath) ? d.alternatives : undefined;
      return new InvalidInputError(d.path, d.reason, alternatives);
    }
    case 'not_found': {
      const w = d.what as Record<string, unknown> | undefined;
      if (w === undefined) return new NotFoundError();
      if (typeof w !== 'object' || w === null || typeof w.entity !== 'string' ||
        typeof w.id !== 'string') return undefined;
      return new NotFoundError({ entity: w.entity, id: w.id, ...(w.inWorkspace === true ? {
        inWorkspace: true } : {}) });
    }
    case 'conflict':
      return typeof d.detail === 'string' ? new ConflictError(d.detail) : undefined;
    default:
      return undefined;
  }
}
