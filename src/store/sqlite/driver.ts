import type Database from 'better-sqlite3';
import { StoreDriverMissingError } from '../store.js';

/** better-sqlite3's constructor: how the SQLite store opens a connection. */
export type SqliteDriver = typeof Database;

/** The package the SQLite store runs on; an optional peer dependency, so only users of SQLite install it. */
export const SQLITE_DRIVER_PACKAGE = 'better-sqlite3';

let driver: Promise<SqliteDriver> | undefined;

/**
 * Loads better-sqlite3 on first use, so that importing coven-automata (the memory and JSON stores) neither
 * needs the native module installed nor pays for loading it. Fails with {@link StoreDriverMissingError}
 * when the package is not installed; any other load failure (a broken native build, say) is passed on as
 * it is, since reinstalling is not then the whole answer.
 */
export function loadSqliteDriver(): Promise<SqliteDriver> {
  driver ??= import('better-sqlite3').then(
    (module) => module.default,
    (error: unknown) => {
      // Not kept: a later call after installing the package may succeed.
      driver = undefined;
      if (isMissingPackage(error)) throw new StoreDriverMissingError(SQLITE_DRIVER_PACKAGE, (error as Error).message);
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
    message.includes(`'${SQLITE_DRIVER_PACKAGE}'`)
  );
}
