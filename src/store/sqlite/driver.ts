import type Database from 'better-sqlite3';
import { optionalDriver } from '../optional-driver.js';

/** better-sqlite3's constructor: how the SQLite store opens a connection. */
export type SqliteDriver = typeof Database;

/** The package the SQLite store runs on; an optional peer dependency, so only users of SQLite install it. */
export const SQLITE_DRIVER_PACKAGE = 'better-sqlite3';

/** Loads better-sqlite3 on first use (see {@link optionalDriver}). */
export const loadSqliteDriver: () => Promise<SqliteDriver> = optionalDriver<SqliteDriver>(
  SQLITE_DRIVER_PACKAGE,
  () => import('better-sqlite3'),
);
