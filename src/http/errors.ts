/**
 * The error contract (docs/api.md#errors): every error code, its HTTP status and message text live in this one table,
 * and {@link ApiError} is the only error the HTTP layer turns into a `{code, error}` body. Domain errors
 * (src/core/errors.ts) become one through {@link domainAnswer}.
 */
import { ConflictError, InvalidInputError, type DomainError, type DomainErrorKind } from '../core/errors.js';

/** Code → status and the spec's message text (docs/api.md#error-codes). */
export const ERRORS = {
  invalid_request: { status: 400, message: 'Request body is invalid.' },
  unauthorized: { status: 401, message: 'A valid workspace API key is required.' },
  key_expired: { status: 401, message: 'This API key has expired.' },
  widget_unauthorized: { status: 401, message: 'A valid widget key or widget session is required.' },
  invalid_identity: { status: 401, message: 'The identity token could not be verified.' },
  origin_not_allowed: { status: 403, message: 'This origin is not allowed to use this widget.' },
  insufficient_scope: { status: 403, message: 'This API key is missing the required scope.' },
  not_found: { status: 404, message: 'Record not found.' },
  method_not_allowed: { status: 405, message: 'This method is not allowed on this path.' },
  conflict: { status: 409, message: 'A record with this identifier already exists.' },
  idempotency_in_progress: { status: 409, message: 'A request with this Idempotency-Key is still being processed.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  unsupported_media_type: { status: 415, message: 'The request body must be application/json.' },
  idempotency_key_reused: { status: 422, message: 'This Idempotency-Key was already used with a different request.' },
  rate_limited: { status: 429, message: 'Too many API requests. Slow down and try again shortly.' },
  request_header_fields_too_large: { status: 431, message: 'The request headers are too large.' },
  internal_error: { status: 500, message: 'The API request could not be completed.' },
  service_unavailable: { status: 503, message: 'The server is shutting down or cannot accept writes right now.' },
  storage_failed: { status: 503, message: "This workspace's data could not be read; see the server log." },
  moving: { status: 503, message: 'This workspace is being moved to another machine; try again shortly.' },
  moved: { status: 503, message: 'This workspace has moved to another machine; try again shortly.' },
  storage_full: { status: 503, message: 'The server is out of disk space and saved nothing; try again later.' },
} as const;

/** `Retry-After` (seconds) of a `storage_full` answer: not hammering a full disk, back soon once freed. */
export const STORAGE_FULL_RETRY_AFTER_SECONDS = 30;

/** `Retry-After` (seconds) while a workspace moves between cells (docs/deployment.md#moving-a-workspace). */
export const MOVE_RETRY_AFTER_SECONDS = 1;

export type ErrorCode = keyof typeof ERRORS;

/** The `{code, error}` body of every error response (docs/api.md#errors). */
export interface ErrorBody {
  code: ErrorCode;
  error: string;
}

/**
 * The part of a request an `invalid_request` is about (docs/api.md#errors): the body's problems follow the spec's text,
 * a query parameter's or a header's say so (`Query parameter limit must be …`, `Header Idempotency-Key …`).
 */
export type RequestPart = 'body' | 'query' | 'header';

/** How the message of an `invalid_request` about a query parameter or a header begins. */
const PART_LEAD: Record<Exclude<RequestPart, 'body'>, string> = { query: 'Query parameter', header: 'Header' };

/**
 * An error answering with `ERRORS[code].status` and a `{code, error}` body (docs/api.md#errors). `detail`, one sentence
 * naming the field or cause, is appended to the spec's text (`Request body is invalid: name must be …`); for `part`
 * `query` or `header` the message is `Query parameter <detail>.` or `Header <detail>.`.
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The sentence naming the field or cause, as given; undefined when there is none. */
  readonly detail: string | undefined;
  /** The part of the request the error is about. */
  readonly part: RequestPart;
  /** @param cause the error this one answers for, kept as `cause` for the log; never shown to the client. */
  constructor(code: ErrorCode, detail?: string, headers: Record<string, string> = {}, part: RequestPart = 'body',
    cause?: unknown) {
    super(part === 'body' || !detail ? errorMessage(code, detail) : `${PART_LEAD[part]} ${sentence(detail)}`,
      cause === undefined ? undefined : { cause });
    this.name = 'ApiError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.headers = headers;
    this.detail = detail;
    this.part = part;
  }
  /** The response body: exactly `{code, error}`. */
  body(): ErrorBody {
    return { code: this.code, error: this.message };
  }
}

/** `detail` ending with exactly one period. */
const sentence = (detail: string): string => (detail.endsWith('.') ? detail : `${detail}.`);

/** Builds the message for `code`: the table's text, or `text-without-period: detail.` */
export function errorMessage(code: ErrorCode, detail?: string): string {
  const base: string = ERRORS[code].message;
  if (!detail) return base;
  return `${base.slice(0, -1)}: ${sentence(detail)}`;
}

/** A 400 `invalid_request` naming what is wrong in `part` of the request; `cause` is kept, never shown. */
export function invalid(detail: string, part: RequestPart = 'body', cause?: unknown): ApiError {
  return new ApiError('invalid_request', detail, {}, part, cause);
}

/** The code each kind of domain error answers with (docs/api.md#errors). */
const DOMAIN_CODES: Record<DomainErrorKind, ErrorCode> = {
  invalid_input: 'invalid_request',
  not_found: 'not_found',
  conflict: 'conflict',
};

/** How the whole of each part is named when a problem's path is empty (`the body must be a JSON object`). */
const WHOLE: Record<RequestPart, string> = { body: 'the body', query: 'the query string', header: 'the headers' };

/**
 * The answer to a domain error: its code from the table above, and as detail an invalid input's field path and reason
 * or a conflict's detail. A not-found names nothing: another workspace's id must answer exactly like an id that never
 * existed (docs/security.md#tenant-isolation).
 */
export function domainAnswer(e: DomainError, part: RequestPart = 'body'): ApiError {
  const detail = e instanceof InvalidInputError ? e.describe(
    WHOLE[part]) : e instanceof ConflictError ? e.detail : undefined;
  return new ApiError(DOMAIN_CODES[e.kind], detail, {}, part, e);
}
