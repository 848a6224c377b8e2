import type pg from 'pg';
import { StoreDriverMissingError } from '../store.js';

/** node-postgres's module: how the PostgreSQL store makes its pool. */
export type PostgresDriver = typeof pg;

/** The package the PostgreSQL store runs on; an optional peer dependency, so only users of PostgreSQL install it. */
export const POSTGRES_DRIVER_PACKAGE = 'pg';

let driver: Promise<PostgresDriver> | undefined;

/**
 * Loads node-postgres on first use, so that importing coven-automata neither needs it installed nor pays for
 * loading it. Fails with {@link StoreDriverMissingError} when the package is not installed; any other load
 * failure is passed on as it is.
 */
export function loadPostgresDriver(): Promise<PostgresDriver> {
  driver ??= import('pg').then(
    (module) => module.default,
    (error: unknown) => {
      // Not kept: a later call after installing the package may succeed.
      driver = undefined;
      if (isMissingPackage(error)) throw new StoreDriverMissingError(POSTGRES_DRIVER_PACKAGE, (error as Error).message);
      throw error;
    },
  );
  return driver;
}

/** The import failed because the package itself cannot be found (not because something inside it failed). */
function isMissingPackage(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    typeof message === 'string' &&
    message.includes(`'${POSTGRES_DRIVER_PACKAGE}'`)
  );
}
