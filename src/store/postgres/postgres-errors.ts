import { ContractError } from '../../contract/errors.js';
import { StoreConflictError } from '../store.js';

/**
 * The schema a PostgreSQL store was pointed at is not one this build may use: it holds tables of something
 * else, a store of a newer schema version, or a store missing tables it needs. Nothing was created, migrated
 * or changed.
 */
export class PostgresSchemaError extends ContractError {
  constructor(location: string, schema: string, reason: string) {
    super(
      'INTERNAL',
      `PostgreSQL store ${location} (schema ${schema}) cannot be used: ${reason}. It was left untouched.`,
      { location, schema, reason },
    );
    this.name = 'PostgresSchemaError';
  }
}

/**
 * The database could not be reached, or the connection broke mid-transaction. What the transaction wrote was
 * rolled back by the server (a transaction is committed whole or not at all); retrying may succeed once the
 * database is back.
 */
export class StoreUnavailableError extends ContractError {
  constructor(location: string, cause: unknown) {
    super(
      'INTERNAL',
      `PostgreSQL store ${location} is unreachable: ${(cause as Error).message}`,
      { location, cause: (cause as Error).message },
      { retryable: true, cause },
    );
    this.name = 'StoreUnavailableError';
  }
}

/** SQLSTATE classes and codes that mean the connection, not the statement, failed. */
const CONNECTION_FAILURE = /^(08|57P0[1-3]|53300)/;
/** Socket-level failures node-postgres passes on without an SQLSTATE. */
const SOCKET_FAILURE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

const sqlState = (error: unknown) => (error as { code?: unknown }).code;

/** A serialization failure or deadlock: another transaction got there first; this one was rolled back. */
export const isConcurrencyFailure = (error: unknown) => sqlState(error) === '40001' || sqlState(error) === '40P01';

/** The connection is gone (its client must not go back to the pool). */
export function isConnectionFailure(error: unknown): boolean {
  const code = sqlState(error);
  if (typeof code === 'string' && (CONNECTION_FAILURE.test(code) || SOCKET_FAILURE.has(code))) return true;
  const message = (error as { message?: unknown }).message;
  return typeof message === 'string' && /Connection terminated|connection (was )?closed|not queryable/i.test(message);
}

/**
 * The error a transaction or read hands on: contract errors as they are, a lost race with another writer as
 * {@link StoreConflictError} (nothing was written), a lost connection as {@link StoreUnavailableError}.
 */
export function asStoreError(location: string, error: unknown): unknown {
  if (error instanceof ContractError) return error;
  if (isConcurrencyFailure(error)) {
    return new StoreConflictError(
      `a concurrent transaction on the same data committed first (${(error as Error).message}); nothing was written`,
      { sqlState: sqlState(error) },
    );
  }
  if (sqlState(error) === '23505') {
    return new StoreConflictError(`the write would break a uniqueness rule: ${(error as Error).message}`, {
      sqlState: '23505',
      constraint: (error as { constraint?: unknown }).constraint,
    });
  }
  if (isConnectionFailure(error)) return new StoreUnavailableError(location, error);
  return error;
}

/** The connection string without its password, for messages and `file`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@');
  }
}
