/**
 * The contract's twenty typed error codes and their frozen HTTP statuses.
 * A response's `httpStatus` must always equal the mapping here; nothing else decides it.
 */
export const ERROR_HTTP_STATUS = {
  SCHEMA_VERSION_UNSUPPORTED: 400,
  VALIDATION_FAILED: 400,
  ADOPTION_REPLAY_MISMATCH: 409,
  REVISION_CONFLICT: 409,
  NOT_FOUND: 404,
  GONE_TOMBSTONED: 410,
  CAPABILITY_UNSUPPORTED: 422,
  ILLEGAL_TRANSITION: 422,
  AUTHORITY_REQUIRED: 403,
  APPROVAL_REQUIRED: 403,
  CANCEL_PENDING: 409,
  OVERLAP_FORBIDDEN: 409,
  RETRY_DISPOSITION_INVALID: 422,
  AMBIGUOUS_RETRY_FORBIDDEN: 422,
  CURSOR_EXPIRED: 410,
  STREAM_OUT_OF_ORDER: 409,
  PAYLOAD_TOO_LARGE: 413,
  DEADLINE_EXCEEDED: 504,
  CONCURRENCY_LIMIT: 429,
  INTERNAL: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_HTTP_STATUS;

/** The contract's error envelope, as returned to callers. */
export interface ErrorEnvelope {
  code: ErrorCode;
  httpStatus: number;
  message: string;
  retryable: boolean;
  details?: Record<string, unknown>;
  currentRevision?: number;
}

/**
 * A typed failure carrying the contract's code. Engine code throws these; boundaries turn them into
 * {@link ErrorEnvelope}s with {@link ContractError.toEnvelope}.
 *
 * @example
 * ```ts
 * throw new ContractError('NOT_FOUND', 'no definition with id nightly-report', { automationId: 'nightly-report' });
 * ```
 */
export class ContractError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;
  readonly currentRevision: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    details?: Record<string, unknown>,
    options: { retryable?: boolean; currentRevision?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ContractError';
    this.code = code;
    this.httpStatus = ERROR_HTTP_STATUS[code];
    this.retryable = options.retryable ?? false;
    this.details = details;
    this.currentRevision = options.currentRevision;
  }

  toEnvelope(): ErrorEnvelope {
    const envelope: ErrorEnvelope = {
      code: this.code,
      httpStatus: this.httpStatus,
      message: this.message,
      retryable: this.retryable,
    };
    if (this.details !== undefined) envelope.details = this.details;
    if (this.currentRevision !== undefined) envelope.currentRevision = this.currentRevision;
    return envelope;
  }
}

export function isContractError(value: unknown): value is ContractError {
  return value instanceof ContractError;
}
