import { ContractError } from '../contract/errors.js';

/** A compare-and-set failed: the record or stream moved since the caller read it. Nothing was written. */
export class StoreConflictError extends ContractError {
  constructor(message: string, details: Record<string, unknown>) {
    super('REVISION_CONFLICT', message, details);
    this.name = 'StoreConflictError';
  }

  /** A compare-and-set that found `currentVersion` (null: no record) where it expected `expectedVersion`. */
  static forVersion(
    kind: string,
    id: string,
    expectedVersion: number | null,
    currentVersion: number | null,
  ): StoreConflictError {
    return new StoreConflictError(
      currentVersion === null
        ? `${kind} ${id} does not exist (expected version ${String(expectedVersion)})`
        : `${kind} ${id} is at version ${currentVersion}, not ${String(expectedVersion)}`,
      { kind, id, expectedVersion, currentVersion },
    );
  }
}

/** An append named a sequence other than the stream head. Nothing was written. */
export class StreamSequenceError extends ContractError {
  constructor(stream: string, expected: number, head: number) {
    super('STREAM_OUT_OF_ORDER', `stream ${stream} is at sequence ${head}, not ${expected}`, {
      stream,
      expected,
      head,
    });
    this.name = 'StreamSequenceError';
  }
}

/** A trim would have dropped a stream's newest entry, which keeps its head. Nothing was written. */
export class LogTrimError extends ContractError {
  constructor(stream: string, before: number, head: number) {
    super(
      'INTERNAL',
      `stream ${stream} cannot be trimmed below ${before}: its newest entry is ${head - 1} and always stays`,
      { stream, before, head },
    );
    this.name = 'LogTrimError';
  }
}

/** A stream holding the feed's newest entry cannot be retired (see {@link StoreTransaction.retireLog}). */
export class LogRetireError extends ContractError {
  constructor(stream: string) {
    super('INTERNAL', `stream ${stream} holds the feed's newest entry and cannot be retired yet`, { stream });
    this.name = 'LogRetireError';
  }
}

/** A write touched a sealed terminal record. Nothing was written. */
export class TerminalRecordError extends ContractError {
  constructor(kind: string, id: string) {
    super('ILLEGAL_TRANSITION', `${kind} ${id} is terminal and immutable`, { kind, id });
    this.name = 'TerminalRecordError';
  }
}

/** The store file is unreadable, truncated, of another format, or of an unknown version. It was left untouched. */
export class StoreCorruptError extends ContractError {
  /** `offset`: where in `file` the damage was found, when a byte position names it (a journal group's line). */
  constructor(file: string, reason: string, offset?: number) {
    super(
      'INTERNAL',
      `store file ${file} cannot be used: ${reason}. It was left untouched.`,
      offset === undefined ? { file, reason } : { file, reason, offset },
    );
    this.name = 'StoreCorruptError';
  }
}

/**
 * A store file (or its folder) is not writable by this process — e.g. an operator made it read-only to keep
 * it as it is. The store is not opened, so nothing replaces the file; make it writable to use it as a store.
 */
export class StoreReadOnlyError extends ContractError {
  constructor(file: string, cause: string) {
    super(
      'AUTHORITY_REQUIRED',
      `store file ${file} is not writable (${cause}); ` +
        'a store is only opened on files it may write, so it was left untouched',
      { file, cause },
    );
    this.name = 'StoreReadOnlyError';
  }
}

/** Another process holds the store file. */
export class StoreLockedError extends ContractError {
  constructor(file: string, holder: string) {
    super('CONCURRENCY_LIMIT', `store file ${file} is in use by ${holder}`, { file, holder }, { retryable: true });
    this.name = 'StoreLockedError';
  }
}

/** The store was closed, or its lock was lost; no further commits are possible. */
export class StoreClosedError extends ContractError {
  constructor(reason: string) {
    super('INTERNAL', `store is not writable: ${reason}`, { reason });
    this.name = 'StoreClosedError';
  }
}

/**
 * A store's driver package is not installed: the SQLite store runs on better-sqlite3, an optional peer
 * dependency that only projects using SQLite install (`npm install better-sqlite3`).
 */
export class StoreDriverMissingError extends ContractError {
  constructor(driver: string, cause: string) {
    super(
      'CAPABILITY_UNSUPPORTED',
      `this store needs the package ${driver}, which is not installed; run \`npm install ${driver}\` and open it again`,
      { driver, cause },
    );
    this.name = 'StoreDriverMissingError';
  }
}
